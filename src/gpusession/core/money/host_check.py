"""The host check kept beside the order: ``<session>/host-check.toml`` (D8, S5).

Why it exists: seed 003 §6 asks the renter, once access is received, to note the GPU
recognised and any deviation from the request against the order number before building
on an assumption. The check compares the GPU NVML finds (model, count, memory) with the
order and keeps that, the board's settings and a probe's figures as evidence, one entry
per host and boot (hostname + boot id), so a second open on the same host does not check
again and a reboot (where GPUs may have been swapped) does. No "expected" probe figure
exists here: the figures are the renter's record, to compare rentals with.

Who calls it: ``gpusession check-host``, ``run`` (on the first open on a server), the
TUI, ``show``, the report's risks and ``compare``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpusession.core.events.actions import HostCheckedRecord
from gpusession.core.files.errors import BadInput
from gpusession.core.files.schema import BOOL, NUMBER, TEXT, WHOLE, Kind, ListOf, Table, check_types
from gpusession.core.files.units import format_bytes
from gpusession.core.folder.session import Session
from gpusession.core.gpu.hostfacts import (
    PROBE_STATUSES,
    GpuFacts,
    HostFacts,
    HostKey,
    ProbeGpu,
    ProbeResult,
    mask_facts,
    mask_host,
    mask_probe,
    read_host_facts,
    this_host,
)
from gpusession.core.money.order import compare_order, load_order, record_deviation
from gpusession.core.money.rates import form_factor_words, load_rates, model_matches

HOST_CHECK_TOML = "host-check.toml"

_AWARE = Kind("a date-time with its UTC offset such as 2026-11-29T14:00:00Z (without quotes)",
              lambda v: isinstance(v, datetime) and v.tzinfo is not None)
_TEXTS = ListOf(TEXT, "a list of text")
_GPU = Table({
    "index": WHOLE, "uuid": TEXT, "name": TEXT, "memory_total_bytes": WHOLE,
    "pcie_generation": WHOLE, "pcie_width": WHOLE, "pcie_max_generation": WHOLE,
    "pcie_max_width": WHOLE, "power_limit_w": NUMBER, "ecc_on": BOOL, "mig_on": BOOL,
    "processes": _TEXTS, "unread": TEXT, "pci_device_id": WHOLE})
_PROBE = Table({
    "status": TEXT, "words": TEXT, "seconds": NUMBER, "dtype": TEXT, "matrix_n": WHOLE,
    "copy_bytes": WHOLE, "torch_version": TEXT,
    "gpus": ListOf(Table({"uuid": TEXT, "name": TEXT, "matmul_tflops": NUMBER,
                          "h2d_gb_per_s": NUMBER, "d2h_gb_per_s": NUMBER}),
                   "a list of tables ([[hosts.\"<host>\".probe.gpus]])")})
#: ``host-check.toml``: one table per host and boot (D8). Its kinds are checked before any
#: value is used, so a hand edit is named by file and field, never read as "not done".
HOST_CHECK = Table({
    "schema": WHOLE,
    "hosts": Table(entries=Table({
        "hostname": TEXT, "boot_id": TEXT, "checked_at": _AWARE, "driver_version": TEXT,
        "order_number": TEXT, "deviation": TEXT, "order_words": TEXT, "masked": _TEXTS,
        "form_factor_checked": BOOL, "gpus": ListOf(_GPU, "a list of tables ([[hosts.\"<host>\".gpus]])"),
        "probe": _PROBE}, words='a table [hosts."<host> <boot id>"]'),
        words='[hosts."<host> <boot id>"] tables'),
})
#: What an entry cannot be without: its machine and when it was checked.
_REQUIRED = {"hostname": "the machine's name", "checked_at": "when it was checked"}


@dataclass(frozen=True)
class HostCheck:
    """One host's check (D8): the NVML facts, the probe and the comparison with the order.

    Attributes:
        facts: what NVML found.
        probe: the probe's figures; ``None`` when no probe ran yet (the TUI's check).
        order_number: the order compared with; ``None`` without a recorded order.
        deviation: the order deviation in words, ready to quote against the order
            number (G§6); ``None`` when the GPU matches.
        order_words: one line: the deviation, "matches the order …", or why nothing
            could be compared.
        masked: one phrase per reading kept masked because it looked like a secret
            (``"GPU 0 name (API key)"``); ``()`` when none.
        form_factor_unchecked: the order states SXM/PCIe/NVL and the card's name does not:
            the GPU is then never said to match (H-61).
    """

    facts: HostFacts
    probe: ProbeResult | None
    order_number: str | None
    deviation: str | None
    order_words: str
    masked: tuple[str, ...] = ()
    form_factor_unchecked: bool = False


def _model_to_compare(session: Session, facts: HostFacts) -> str | None:
    """The model seen, or on a host of mixed GPUs the first one that is not the ordered one.

    Why: every word of the ordered model is in ``"NVIDIA RTX A5000 + NVIDIA RTX A4000"``,
    so a joined name would hide the wrong card.
    """
    names = list(dict.fromkeys(g.name for g in facts.gpus if g.name))
    try:
        ordered = load_order(session).gpu_model or session.package.gpu_model
    except BadInput:
        ordered = session.package.gpu_model
    wrong = [n for n in names if ordered and (not model_matches(ordered, n)
                                              or form_factor_words(ordered, n)[0] is not None)]
    return wrong[0] if wrong else facts.gpu_model


def compare_facts(session: Session, facts: HostFacts, *,
                  record: bool = True) -> tuple[str | None, str, bool]:
    """Compare what NVML found with the order: model, count, memory (D8, S5).

    A figure that cannot be compared (the GPUs per lot of a model missing from the rates
    file) is said as such: no deviation, nothing recorded against the order.

    Args:
        session: the session (its ``order.toml``, else its package).
        facts: the NVML part of the check.
        record: record a deviation as an order event against the order number (S5).

    Returns:
        ``(deviation, words, form_factor_unchecked)``: the deviation (``None`` when
        matching), one line, and whether the order's form factor could not be told from
        the card's name (then the line never says "matches", H-61).
    """
    count = len(facts.gpus)
    model = _model_to_compare(session, facts)
    memory = facts.memory_total_bytes
    pci_id = next((g.pci_device_id for g in facts.gpus if g.name == model), None)
    try:
        state = load_order(session)
        if state.order is None and not session.package.gpu_model:
            return None, (f"not compared: no order recorded (record it with `gpusession order "
                          f"{session.name} set`)"), False
        rates = load_rates(session_folder=session.folder)
        result = compare_order(state, rates, model, count, package=session.package,
                               observed_memory_bytes=memory, observed_pci_device_id=pci_id)
        if record and result.deviation is not None:
            record_deviation(session, model, count, rates=rates, observed_memory_bytes=memory)
    except BadInput as exc:  # order.toml or rates.toml does not read: said, the facts still kept
        return None, f"not compared: {exc}", False
    notes = "".join(f"; {n}" for n in result.not_compared)
    if result.deviation is not None:
        return result.deviation, f"ORDER DEVIATION: {result.deviation}{notes}", False
    number = state.number
    ref = f"the order {number}" if number else "the session's package (no order number recorded yet)"
    seen = f"{count} × {model or 'GPU of unread model'}"
    if memory is not None:
        seen += f", {format_bytes(memory)} each"
    if result.form_factor_unchecked:  # never "matches": the card may be the other form factor
        return None, f"as ordered by model, count and memory ({ref}): {seen}{notes}", True
    as_far = " as far as compared" if notes else ""
    return None, f"matches {ref}{as_far}: {seen}{notes}", False


# -- host-check.toml ---------------------------------------------------------------------
def _gpu_doc(g: GpuFacts) -> dict[str, Any]:
    return {"index": g.index, "uuid": g.uuid, "name": g.name,
            "memory_total_bytes": g.memory_total_bytes, "pcie_generation": g.pcie_generation,
            "pcie_width": g.pcie_width, "pcie_max_generation": g.pcie_max_generation,
            "pcie_max_width": g.pcie_max_width, "power_limit_w": g.power_limit_w,
            "ecc_on": g.ecc_on, "mig_on": g.mig_on, "processes": list(g.processes),
            "unread": g.unread, "pci_device_id": g.pci_device_id}


def _probe_doc(p: ProbeResult) -> dict[str, Any]:
    return {"status": p.status, "words": p.words, "seconds": p.seconds, "dtype": p.dtype,
            "matrix_n": p.matrix_n, "copy_bytes": p.copy_bytes, "torch_version": p.torch_version,
            "gpus": [{"uuid": g.uuid, "name": g.name, "matmul_tflops": g.matmul_tflops,
                      "h2d_gb_per_s": g.h2d_gb_per_s, "d2h_gb_per_s": g.d2h_gb_per_s}
                     for g in p.gpus]}


def _entry_doc(c: HostCheck) -> dict[str, Any]:
    f = c.facts
    doc: dict[str, Any] = {
        "hostname": f.host.hostname, "boot_id": f.host.boot_id, "checked_at": f.checked_at,
        "driver_version": f.driver_version, "order_number": c.order_number,
        "deviation": c.deviation, "order_words": c.order_words, "masked": list(c.masked),
        "form_factor_checked": False if c.form_factor_unchecked else None,
        "gpus": [_gpu_doc(g) for g in f.gpus]}
    if c.probe is not None:
        doc["probe"] = _probe_doc(c.probe)
    return doc


def _of(d: Any, key: str, kind: type | tuple[type, ...]) -> Any:
    """``d[key]`` when it is of ``kind`` (a hand-edited file may hold anything), else ``None``."""
    v = d.get(key) if isinstance(d, dict) else None
    if isinstance(v, bool) and kind in (int, float, (int, float)):
        return None
    return v if isinstance(v, kind) else None


def _num(d: Any, key: str) -> float | None:
    v = _of(d, key, (int, float))
    return None if v is None else float(v)


def _gpu_from(d: Any) -> GpuFacts:
    return GpuFacts(
        _of(d, "index", int) or 0, _of(d, "uuid", str), _of(d, "name", str),
        _of(d, "memory_total_bytes", int), _of(d, "pcie_generation", int), _of(d, "pcie_width", int),
        _of(d, "pcie_max_generation", int), _of(d, "pcie_max_width", int), _num(d, "power_limit_w"),
        _of(d, "ecc_on", bool), _of(d, "mig_on", bool),
        tuple(str(p) for p in (_of(d, "processes", list) or ())), _of(d, "unread", str),
        _of(d, "pci_device_id", int))


def _probe_from(d: Any) -> ProbeResult | None:
    if not isinstance(d, dict) or not isinstance(d.get("status"), str):
        return None
    gpus = tuple(ProbeGpu(_of(g, "uuid", str), _of(g, "name", str), _num(g, "matmul_tflops"),
                          _num(g, "h2d_gb_per_s"), _num(g, "d2h_gb_per_s"))
                 for g in (_of(d, "gpus", list) or ()) if isinstance(g, dict))
    return ProbeResult(d["status"], _of(d, "words", str) or "", _num(d, "seconds"),
                       _of(d, "dtype", str), _of(d, "matrix_n", int), _of(d, "copy_bytes", int),
                       _of(d, "torch_version", str), gpus)


def _entry_from(d: dict[str, Any]) -> HostCheck | None:
    at = d.get("checked_at")
    if not isinstance(d.get("hostname"), str) or not isinstance(at, datetime):
        return None
    gpus = tuple(_gpu_from(g) for g in (_of(d, "gpus", list) or ()) if isinstance(g, dict))
    facts = HostFacts(HostKey(d["hostname"], _of(d, "boot_id", str)), at, None,
                      _of(d, "driver_version", str), gpus)
    masked = tuple(str(m) for m in (_of(d, "masked", list) or ()))
    return HostCheck(facts, _probe_from(d.get("probe")), _of(d, "order_number", str),
                     _of(d, "deviation", str), _of(d, "order_words", str) or "", masked,
                     _of(d, "form_factor_checked", bool) is False)


def _checked_doc(session: Session) -> dict[str, Any]:
    """``host-check.toml`` read and its kinds checked (D8); ``{"schema": 1}`` when absent.

    Raises:
        BadInput: unreadable, not TOML, a value of the wrong kind, an entry without its
            hostname or time, a probe without a known status; naming the file and field.
    """
    path = session.folder / HOST_CHECK_TOML
    doc = session.read_doc(HOST_CHECK_TOML)
    check_types(doc, HOST_CHECK, path=path)
    for key, entry in (doc.get("hosts") or {}).items():
        for name, what in _REQUIRED.items():
            if name not in entry:
                raise BadInput(f"missing: expected {what} here", path=path,
                               field=f"hosts.{key}.{name}")
        probe = entry.get("probe")
        if probe is not None and probe.get("status") not in PROBE_STATUSES:
            raise BadInput(f"expected one of {', '.join(PROBE_STATUSES)}", path=path,
                           field=f"hosts.{key}.probe.status")
    return doc


def load_host_checks(session: Session) -> dict[str, HostCheck]:
    """Every host's check in ``host-check.toml``, by :attr:`HostKey.key`, oldest first (D8).

    Raises:
        BadInput: the file is unreadable, not TOML, or a value is not of its kind (an
            entry without a hostname, ``checked_at = "yesterday"``), with file and field:
            said by ``show``, refused by ``check-host``, never read as "not done".
    """
    hosts = _checked_doc(session).get("hosts") or {}
    out: dict[str, HostCheck] = {}
    for key, entry in hosts.items():
        check = _entry_from(entry)
        if check is not None:
            out[str(key)] = check
    return out


def _refusing(session: Session) -> dict[str, Any]:
    """The checked document, or the refusal of a file that does not read (D8).

    Why: the file may hold a person's edit; it is never replaced by a check.

    Raises:
        BadInput: as :func:`_checked_doc`, saying nothing was written.
    """
    try:
        return _checked_doc(session)
    except BadInput as exc:
        raise _refusal(exc) from None


def checks_before_writing(session: Session) -> dict[str, HostCheck]:
    """:func:`load_host_checks`, refused in the words of a check that writes nothing (D8).

    ``check-host`` calls it before probing, so a file that does not read is said before
    the GPU is taken for the probe.

    Raises:
        BadInput: ``host-check.toml`` does not read; it is left as it is.
    """
    try:
        return load_host_checks(session)
    except BadInput as exc:
        raise _refusal(exc) from None


def _refusal(exc: BadInput) -> BadInput:
    return BadInput(f"{exc.message}; nothing checked, nothing written: fix the file or move "
                    "it away, then check again", path=exc.path, line=exc.line, field=exc.field)


def _order_number(session: Session) -> str | None:
    """The order number; ``None`` without one or when ``order.toml`` does not read.

    Why: the check's order words already say why nothing was compared.
    """
    try:
        return load_order(session).number
    except BadInput:
        return None


def record_host_check(session: Session, facts: HostFacts, probe: ProbeResult | None) -> HostCheck:
    """Compare ``facts`` with the order and keep them with ``probe`` for this host (D8, S5).

    The entry of ``facts.host`` in ``host-check.toml`` is replaced (atomic, 0600, under the
    session's lock); a deviation is an order event against the order number (S5); the
    journal gets a :class:`HostCheckedRecord`. A reading that looks like a secret (a GPU
    name holding a key) is kept masked and named in :attr:`HostCheck.masked` (H-24).

    Raises:
        BadInput: ``facts`` saw no GPU (nothing is recorded then), or ``host-check.toml``
            does not read (left as it is, nothing written).
    """
    if not facts.sees_gpu:
        raise BadInput(f"no GPU visible ({facts.nvml_reason or 'NVML counts none'}): nothing "
                       "checked, nothing recorded")
    facts = mask_facts(facts)
    masked = facts.masked
    if probe is not None:
        probe, in_probe = mask_probe(probe)
        masked = tuple(dict.fromkeys((*masked, *in_probe)))
    with session.locked(f"writing {HOST_CHECK_TOML}"):
        doc = _refusing(session)  # first: a file that does not read is never replaced
        deviation, words, form_unchecked = compare_facts(session, facts)
        check = HostCheck(facts, probe, _order_number(session), deviation, words, masked,
                          form_unchecked)
        hosts: dict[str, Any] = {k: v for k, v in (doc.get("hosts") or {}).items()
                                 if k != facts.host.key}
        hosts[facts.host.key] = _entry_doc(check)
        session.write_doc(HOST_CHECK_TOML, {"schema": 1, "hosts": hosts})
    session.journal(HostCheckedRecord(
        host=facts.host.key, gpu_model=facts.gpu_model, gpu_count=len(facts.gpus),
        memory_total_bytes=facts.memory_total_bytes, order_number=check.order_number,
        deviation=deviation, probe=probe.status if probe else None))
    return check


def due_on_open(session: Session, host: HostKey, *, probe: bool) -> bool:
    """Whether opening ``session`` on ``host`` checks the GPU (D8): the first open here.

    Due when this host and boot has no entry (or, with ``probe``, an entry without a
    probe), and the session was checked on no other machine, or on one of the same
    hostname (a reboot). A session checked only on other machines is a copy elsewhere
    (a pulled copy at home): never checked on open there; ``check-host`` still can.
    """
    host = mask_host(host)  # the key as it was written
    checks = load_host_checks(session)
    mine = checks.get(host.key)
    if mine is not None:
        return probe and mine.probe is None
    return not checks or any(c.facts.host.hostname == host.hostname for c in checks.values())


def check_on_open(session: Session, *, nvml: Any | None = None, host: HostKey | None = None,
                  probe: Any | None = None) -> HostCheck | None:
    """The host check of the first open on a server (D8); ``None`` when none is due.

    Args:
        session: the open session.
        nvml: a pynvml-like module (tests: the fake NVML).
        host: this machine (default :func:`this_host`).
        probe: ``() -> ProbeResult``, run when given (``run`` measures, the TUI does not);
            an entry of this host without a probe gets one.

    Returns:
        The check recorded, or ``None``: not due, or NVML sees no GPU (nothing recorded).
    """
    host = host or this_host()
    if not due_on_open(session, host, probe=probe is not None):
        return None
    facts = read_host_facts(nvml, host=host)
    if not facts.sees_gpu:
        return None
    earlier = load_host_checks(session).get(facts.host.key)
    result = probe() if probe is not None else (earlier.probe if earlier else None)
    return record_host_check(session, facts, result)


# -- words ---------------------------------------------------------------------------------
def _onoff(v: bool | None) -> str:
    return "unknown" if v is None else ("on" if v else "off")


def _gpu_line(g: GpuFacts) -> str:
    def gen(generation: int | None, width: int | None) -> str:
        if generation is None and width is None:
            return "unknown"
        return f"gen {generation if generation is not None else '?'} x{width if width is not None else '?'}"

    limit = f"{g.power_limit_w:.0f} W" if g.power_limit_w is not None else "unknown"
    line = (f"GPU {g.index} {g.name or '(model unread)'} ({g.uuid or 'UUID unread'}): "
            f"{format_bytes(g.memory_total_bytes, 'memory unknown')}; PCIe "
            f"{gen(g.pcie_generation, g.pcie_width)} now, at most "
            f"{gen(g.pcie_max_generation, g.pcie_max_width)}; power limit {limit}; "
            f"ECC {_onoff(g.ecc_on)}; MIG {_onoff(g.mig_on)}")
    return line + (f"; unread: {g.unread}" if g.unread else "")


def probe_words(p: ProbeResult | None) -> list[str]:
    """The probe in words: what ran and each GPU's figures, no judgement (D8)."""
    if p is None:
        return ["probe: not run here yet (it runs before the first `run`, or with `check-host`)"]
    if p.status != "measured":
        return [f"probe: {p.words}"]
    took = f"{p.seconds:.1f} s" if p.seconds is not None else "time not recorded"
    work = (f"{p.dtype} {p.matrix_n}×{p.matrix_n} matmul, {format_bytes(p.copy_bytes)} pinned "
            f"copies, torch {p.torch_version or '?'}")
    out = [f"probe: measured in {took} ({work}); figures for your records, no expected figure is implied"]
    for n, g in enumerate(p.gpus):
        def fig(v: float | None, unit: str) -> str:
            return f"{v:.1f} {unit}" if v is not None else "not measured"
        out.append(f"  GPU {n} {g.name or ''} ({g.uuid or 'UUID unread'}): matmul "
                   f"{fig(g.matmul_tflops, 'TFLOP/s')}, host→device {fig(g.h2d_gb_per_s, 'GB/s')}, "
                   f"device→host {fig(g.d2h_gb_per_s, 'GB/s')}")
    return out


def check_lines(check: HostCheck) -> list[str]:
    """A host's check in words, for ``check-host`` and ``show`` (D8): order, GPUs, probe."""
    f = check.facts
    out = [f"host {f.host.hostname} (boot {f.host.boot_id or 'unknown'}), checked "
           f"{f.checked_at.isoformat(timespec='seconds')}, driver {f.driver_version or 'unknown'}",
           f"order: {check.order_words}"]
    if check.masked:
        out.append("kept masked (they looked like a secret): " + "; ".join(check.masked))
    for g in f.gpus:
        out.append(_gpu_line(g))
        if g.processes:
            out.append("  other GPU processes: " + "; ".join(g.processes))
    return out + probe_words(check.probe)


def deviation_words(session: Session) -> list[str]:
    """Each host's order deviation in words, for the report's risks (D8); ``[]`` if none.

    An unreadable ``host-check.toml`` is said, never raised.
    """
    try:
        checks = load_host_checks(session)
    except (BadInput, OSError) as exc:
        return [f"host check unreadable ({exc})"]
    return [f"order deviation on {c.facts.host.hostname}: {c.deviation}"
            for c in checks.values() if c.deviation]


__all__ = [
    "HOST_CHECK", "HOST_CHECK_TOML", "HostCheck", "check_on_open", "compare_facts", "due_on_open",
    "check_lines", "checks_before_writing", "deviation_words", "load_host_checks", "probe_words",
    "record_host_check",
]
