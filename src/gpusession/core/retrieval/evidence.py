"""Automatic evidence beside the checklist items (S1, S5; seed 003 §2-§7, seed 000 §1).

Each probe reads what the tool can observe -- NVML, the results rows, the journal,
session.toml, the disk -- and returns one or a few lines in words. Evidence is shown
beside its item; it never ticks the item: the person decides (S1). A probe that has
nothing to look at yet says so ("not available yet: no run recorded") instead of
failing. The one side effect: an order deviation (S5) is recorded once as an order
event, through :func:`gpusession.core.money.order.record_deviation` when that module exists.

Who calls it: :func:`gpusession.core.retrieval.checklist.collect_evidence` (TUI Checklist pane,
``gpusession checklist NAME evidence``) and the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.copyhome.limit import session_limit
from gpusession.core.events import ExperimentStoppedRecord
from gpusession.core.events.actions import OrderDeviationObservedRecord
from gpusession.core.events.facts import ProtocolFold
from gpusession.core.experiment.placeholders import COMMAND_DEVICE
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.units import format_bytes
from gpusession.core.folder.journal_digest import journal_digest
from gpusession.core.folder.session import Session
from gpusession.core.gpu.nvml import GpuReading, NvmlSnapshot, read_nvml
from gpusession.core.money.cost import load_rates
from gpusession.core.money.order import load_order, record_deviation
from gpusession.core.money.rates import _model_words, form_factor_words, model_matches

GIB = 1024**3

#: GPUs per lot where a lot holds more than one GPU (seed: a B200 lot holds two GPUs).
_GPUS_PER_LOT_FALLBACK = {"b200": 2}


def fmt_bytes(n: int | float | None) -> str:
    """Bytes in words with binary units: ``24.0 GiB (25769803776 bytes)``, ``1 B`` (H-22).

    Args:
        n: a byte count; ``None`` when it could not be read.

    Returns:
        3 significant digits with a unit (:func:`gpusession.core.files.units.format_bytes`),
        the exact count in brackets from 1 KiB up; ``unknown`` for ``None``.
    """
    if n is None:
        return "unknown"
    text = format_bytes(n)
    return text if abs(n) < 1024 else f"{text} ({int(n)} bytes)"


def _fmt_td(td: timedelta) -> str:
    secs = int(abs(td.total_seconds()))
    d, rem = divmod(secs, 86400)
    h, rem = divmod(rem, 3600)
    m = rem // 60
    return f"{d}d {h:02d}h {m:02d}m"


def snapshot_of(nvml: Any | None) -> NvmlSnapshot:
    """An NVML snapshot: ``nvml`` itself when it already is one, else ``read_nvml(nvml)``."""
    if isinstance(nvml, NvmlSnapshot):
        return nvml
    return read_nvml(nvml)


# -- what the last run saw ------------------------------------------------------------
@dataclass(frozen=True)
class LastRun:
    """The environment recorded by the most recent experiment's rows (R10).

    Attributes:
        experiment_id: the experiment of the last row with a value.
        rows: that experiment's rows (a polars frame, 38 columns).
    """

    experiment_id: str | None
    rows: pl.DataFrame

    def distinct(self, column: str) -> list[Any]:
        """Distinct non-null values of ``column`` in file order."""
        if self.rows.height == 0:
            return []
        return self.rows.get_column(column).drop_nulls().unique(maintain_order=True).to_list()


def last_run(session: Session) -> LastRun | None:
    """Rows of the experiment of the last timed row in ``resultats-bruts.csv``.

    A standalone ``validate --session`` row (no phase) checked an output: it ran nothing,
    so it is never the last run that device, memory and order-match evidence come from.
    ``None`` when no timed row exists.
    """
    frame = session.results.read()
    frame = frame.filter(pl.col("phase").is_not_null()) if frame.height else frame
    if frame.height == 0:
        return None
    exp = frame.get_column("experiment_id")[-1]
    rows = frame.filter(pl.col("experiment_id") == exp) if exp is not None else frame.tail(1)
    return LastRun(exp, rows)


def _environment_table(session: Session, experiment_id: str | None = None) -> dict[str, Any]:
    """The environment the run engine stored (R10).

    Returns:
        ``[experiments.<id>.environment]`` of the given experiment when present, else
        the session's ``[environment]`` table.
    """
    exps = session.data.get("experiments")
    if experiment_id and isinstance(exps, dict):
        exp = exps.get(experiment_id)
        if isinstance(exp, dict) and isinstance(exp.get("environment"), dict):
            return exp["environment"]
    env = session.data.get("environment")
    return env if isinstance(env, dict) else {}


# -- probes --------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbeReading:
    """One probe's finding: its words, and what a reader may decide from, typed (S1).

    Why it exists: the report's summary lists the risks the probes found and its
    environment section leaves out what has nothing to say; both read these fields,
    never the probe's words.

    Attributes:
        text: the evidence in words, one or a few lines (what ``*_evidence`` returns).
        shown: there is something to say (``False``: nothing to look at yet, or nothing
            to compare with).
        risk: the risk found, in a few words for a summary; ``None`` when none.
        recorded_line: the index in ``text``'s lines of the line that repeats what the
            last run recorded (a table of the rows says it too); ``None`` when none.
    """

    text: str
    shown: bool = True
    risk: str | None = None
    recorded_line: int | None = None


def device_evidence(session: Session, snap: NvmlSnapshot) -> str:
    """GPU model(s), count, UUIDs, driver from NVML, and the last run's environment (G§6)."""
    return device_probe(session, snap).text


def device_probe(session: Session, snap: NvmlSnapshot) -> ProbeReading:
    """:func:`device_evidence` typed: not shown when NVML cannot be read now."""
    lines: list[str] = []
    if snap.available:
        if snap.gpus:
            names = ", ".join(_gpu_words(g) for g in snap.gpus)
            lines.append(f"NVML now: {len(snap.gpus)} GPU(s), driver {snap.driver_version or 'unknown'}: {names}")
        else:
            lines.append(f"NVML now: no GPU visible, driver {snap.driver_version or 'unknown'}")
    else:
        lines.append(f"NVML now: not available ({snap.reason})")
    line, of_run = _last_run_env_line(session)
    lines.append(line)
    return ProbeReading("\n".join(lines), shown=snap.available,
                        recorded_line=len(lines) - 1 if of_run else None)


def _gpu_words(g: GpuReading) -> str:
    """``GPU 1 NVIDIA H200 (GPU-…, 141.0 GiB (… bytes))``; unread fields say why (H-18)."""
    name = g.name or f"model unknown ({g.why_unread('name') or g.why_unread('handle')})"
    uuid = g.uuid or f"UUID unknown ({g.why_unread('uuid') or g.why_unread('handle')})"
    if g.memory_total_bytes is None:
        memory = f"memory unknown ({g.why_unread('memory') or g.why_unread('handle')})"
    else:
        memory = fmt_bytes(g.memory_total_bytes)
    return f"GPU {g.index} {name} ({uuid}, {memory})"


def _last_run_env_line(session: Session) -> tuple[str, bool]:
    """The last run's environment in one line, and whether it is read from its rows."""
    lr = last_run(session)
    env = _environment_table(session, lr.experiment_id if lr else None)
    if lr is None and not env:
        return "last run: not available yet: no run recorded", False
    parts: list[str] = []
    if lr is not None:
        for col, label in (
            ("gpu_model", "GPU"),
            ("gpu_count", "GPUs used"),
            ("device", "device"),
            ("driver_version", "driver"),
            ("runtime_version", "runtime"),
            ("torch_version", "PyTorch"),
        ):
            vals = lr.distinct(col)
            if not vals and env.get(col) is not None:
                vals = [env[col]]
            parts.append(f"{label} {', '.join(str(v) for v in vals) if vals else 'not recorded'}")
        head = f"last run (experiment {lr.experiment_id}): "
    else:
        head = "last run environment: "
        for key in ("gpu_model", "gpu_count", "device", "driver_version", "runtime_version"):
            if env.get(key) is not None:
                parts.append(f"{key} {env[key]}")
    uuids = env.get("gpu_uuids") or env.get("uuids") or env.get("gpu_uuid")
    if isinstance(uuids, str):
        uuids = [uuids]
    if isinstance(uuids, list) and uuids:
        parts.append("UUID " + ", ".join(str(u) for u in uuids))
    if env.get("cuda_visible_devices"):
        parts.append(f"CUDA_VISIBLE_DEVICES={env['cuda_visible_devices']}")
    return head + "; ".join(parts), lr is not None


def on_gpu_evidence(session: Session) -> str:
    """Whether the last run's tensors were on the GPU: the ``device`` column (G§6)."""
    return on_gpu_probe(session).text


def on_gpu_probe(session: Session) -> ProbeReading:
    """:func:`on_gpu_evidence` typed: its risk when the last run may not have used the GPU."""
    lr = last_run(session)
    if lr is None:
        return ProbeReading("not available yet: no run recorded", shown=False)
    devices = lr.distinct("device")
    n = lr.rows.height
    if not devices:
        return ProbeReading(f"last run (experiment {lr.experiment_id}): device not recorded in its {n} row(s)")
    if all(d == COMMAND_DEVICE for d in devices):  # a command workload defined without --device
        return ProbeReading(
            f"last run (experiment {lr.experiment_id}): the device was {COMMAND_DEVICE} in its "
            f"{n} row(s), not by gpusession; the rows cannot tell whether it used the GPU: "
            "NVML's per-process memory while it runs does")
    gpu = [d for d in devices if str(d).startswith(("cuda", "rocm", "hip"))]
    if gpu and len(gpu) == len(devices):
        text = f"on the GPU: the last run's {n} row(s) (experiment {lr.experiment_id}) ran on {', '.join(gpu)}"
        peaks = [int(v) for v in lr.distinct("peak_allocated_bytes")]
        if peaks and max(peaks) > 0:
            return ProbeReading(text + f"; the PyTorch allocator held up to {fmt_bytes(max(peaks))} there")
        risk = (f"{text}, but no allocation on the GPU was recorded (peak allocated "
                f"{'0' if peaks else 'not measured'}): check that model and data really live there")
        return ProbeReading(f"WARNING: {risk}", risk=risk)
    ran_on = f"ran on {', '.join(map(str, devices))}, not (only) on the GPU"
    return ProbeReading(
        f"WARNING: the last run (experiment {lr.experiment_id}) {ran_on}; a program that finishes "
        "does not prove the GPU was used", risk=ran_on)


@dataclass(frozen=True)
class Ordered:
    """What was ordered: from ``order.toml`` when an order is recorded, else the package.

    Attributes:
        gpu_model: ordered model, ``None`` when neither order nor package sets it.
        lots: lots ordered, ``None`` when unknown.
        gpus_per_lot: from the rates file (B200: 2), else the order, else 1 / 2 for B200.
        number: the order number, ``None`` when no order is recorded (package only).
    """

    gpu_model: str | None
    lots: int | None
    gpus_per_lot: int
    number: str | None

    @property
    def gpu_count(self) -> int | None:
        """GPUs ordered: lots × GPUs per lot (K1: a B200 lot is 2 GPUs); ``None`` if unknown."""
        return None if self.lots is None else self.lots * self.gpus_per_lot


def _fallback_per_lot(gpu_model: str) -> int:
    words = _model_words(gpu_model)
    return next((n for m, n in _GPUS_PER_LOT_FALLBACK.items() if m in words), 1)


def ordered_of(session: Session) -> Ordered:
    """The order (``core.order``) or, without one, the session's package (S5, K1)."""
    model: str | None = None
    lots: int | None = None
    number: str | None = None
    per_lot: int | None = None

    info = load_order(session).order
    if info is not None:
        model, lots, number, per_lot = info.gpu_model, info.lots, info.number, info.gpus_per_lot
    if model is None:
        pkg = session.package
        model, lots = pkg.gpu_model, pkg.lots
    if model:
        try:

            rate = load_rates(session_folder=session.folder).find(model)
            if rate is not None:
                per_lot = rate.gpus_per_lot
        except (BadInput, OSError):  # a broken rates file must not hide the evidence
            pass
    if not per_lot:
        per_lot = _fallback_per_lot(model) if model else 1
    return Ordered(model, lots, int(per_lot), number)


def _observed(session: Session, snap: NvmlSnapshot) -> tuple[list[str], int | None, str]:
    names = {g.name for g in snap.gpus if g.name} if snap.available else set()
    if names:  # a GPU whose name NVML could not read still counts (H-18)
        return sorted(names), len(snap.gpus), "NVML"
    lr = last_run(session)
    if lr is not None:
        models = [str(m) for m in lr.distinct("gpu_model")]
        counts = lr.distinct("gpu_count")
        if models:
            return models, (int(max(counts)) if counts else None), "last run"
    return [], None, ""


def _record(session: Session, model: str, count: int | None, ordered: Ordered) -> str:
    """Record the deviation as an order event (S5).

    Against the order number when an order is recorded, else against the package; the
    order module records one deviation once. Without that module, the journal keeps it
    (once per observation).
    """
    try:
        msg = record_deviation(session, model, count)
        if msg is None:
            return "the order module sees no deviation by its own comparison"
        if ordered.number:
            return f"recorded against order {ordered.number}"
        return f"recorded as an order event (no order number yet: gpusession order {session.name} set)"
    except BadInput:
        pass

    for rec in session.journal_records():
        if (
            isinstance(rec, OrderDeviationObservedRecord)
            and rec.observed_gpu_model == model
            and rec.observed_gpu_count == count
        ):
            return f"noted in the journal {rec.at or ''}"
    session.journal(OrderDeviationObservedRecord(
        observed_gpu_model=model, observed_gpu_count=count,
        ordered_gpu_model=ordered.gpu_model, ordered_gpu_count=ordered.gpu_count,
    ))
    return "noted in the journal (the order could not record it)"


def order_match_evidence(session: Session, snap: NvmlSnapshot, *, record: bool = True) -> str:
    """Observed GPU model and count vs the order (lots × GPUs per lot) (S5, G§6).

    A deviation is recorded as an order event against the order number (S5), through
    :func:`gpusession.core.money.order.record_deviation`, which records one deviation once.
    """
    return order_match_probe(session, snap, record=record).text


def order_match_probe(session: Session, snap: NvmlSnapshot, *, record: bool = True) -> ProbeReading:
    """:func:`order_match_evidence` typed: not shown when there is nothing to compare yet.

    A deviation is no ``risk`` here: the summary says it from the order's record (D8).
    """
    ordered = ordered_of(session)
    names, obs_count, source = _observed(session, snap)
    if not names:
        why = str(snap.reason) if not snap.available else "NVML sees no GPU"
        lr = last_run(session)
        if lr is None:
            return ProbeReading(f"not available yet: no GPU observed ({why}) and no run recorded", shown=False)
        devices = ", ".join(map(str, lr.distinct("device"))) or "not recorded"
        return ProbeReading(
            f"no GPU observed ({why}); the last run (experiment {lr.experiment_id}, device "
            f"{devices}) recorded no GPU model: nothing to compare with the order yet", shown=False)
    return ProbeReading(_order_match_words(session, ordered, names, obs_count, source, record=record))


def _order_match_words(session: Session, ordered: Ordered, names: list[str], obs_count: int | None,
                       source: str, *, record: bool) -> str:
    """The comparison of the GPUs seen with the order, once some were seen."""
    obs_model = " + ".join(names)
    seen = f"{obs_count if obs_count is not None else '?'} × {obs_model} seen ({source})"
    if ordered.gpu_model is None:
        return f"{seen}; no order or package GPU set to compare with"
    problems: list[str] = []
    if not all(model_matches(ordered.gpu_model, n) for n in names):
        problems.append(f"model {obs_model} is not the ordered {ordered.gpu_model}")
    forms = [form_factor_words(ordered.gpu_model, n) for n in names]
    problems += [d for d, _ in forms if d] if not problems else []
    unchecked = next((u for _, u in forms if u), None)
    expected = ordered.gpu_count
    if expected is not None and obs_count is not None and obs_count != expected:
        problems.append(
            f"{obs_count} GPU(s) seen, {expected} ordered "
            f"({ordered.lots} lot(s) × {ordered.gpus_per_lot} GPU(s) per lot)"
        )
    order_txt = f"order {ordered.number}" if ordered.number else "the package (no order recorded)"
    exp_txt = (
        f"{expected} × {ordered.gpu_model}" if expected is not None else f"{ordered.gpu_model} (lots not set)"
    )
    if not problems and unchecked:  # never "matches": the card may be the other form factor
        return f"{unchecked}; as ordered by model and count ({order_txt}): {seen}, {exp_txt} ordered"
    if not problems:
        return f"matches {order_txt}: {seen}, {exp_txt} ordered"
    text = f"DEVIATION from {order_txt}: " + "; ".join(problems) + f" (seen via {source})"
    if record:
        text += "; " + _record(session, obs_model, obs_count, ordered)
    return text


def memory_evidence(session: Session, snap: NvmlSnapshot) -> str:
    """Last experiment's peak reserved bytes vs one card's total (G§3: no pooling)."""
    lr = last_run(session)
    if lr is None:
        return "not available yet: no run recorded"
    peaks = lr.distinct("peak_reserved_bytes")
    if not peaks:
        return f"last run (experiment {lr.experiment_id}): peak reserved bytes not measured (CPU run or no GPU memory readout)"
    need = int(max(peaks))
    totals = ([g.memory_total_bytes for g in snap.gpus if g.memory_total_bytes is not None]
              if snap.available else [])
    counts = lr.distinct("gpu_count")
    gpus_used = int(max(counts)) if counts else 1
    head = f"experiment {lr.experiment_id} needs {fmt_bytes(need)} peak reserved (PyTorch allocator)"
    if not totals:
        if not snap.available:
            why = snap.reason
        elif snap.gpus:  # H-18: kept, memory unreadable
            why = "NVML could not read it: " + "; ".join(
                f"GPU {g.index}: {g.why_unread('memory') or g.why_unread('handle')}" for g in snap.gpus)
        else:
            why = "no GPU visible"
        return head + f"; card total unknown ({why})"
    card = min(totals)
    if need <= card:
        return head + f"; one card has {fmt_bytes(card)}: fits ({need / card:.0%} of one card)"
    text = f"WARNING: {head}, more than one card has ({fmt_bytes(card)})"
    if gpus_used <= 1 and len(totals) > 1:
        text += (
            f"; the {len(totals)} cards together have {fmt_bytes(sum(totals))}, but cards do not "
            "pool memory for a program made for one GPU"
        )
    return text


def latest_manifest(session: Session) -> Path | None:
    """The newest ``manifest*.csv`` in the session folder, or ``None``."""
    found = sorted(session.folder.glob("manifest*.csv"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def free_space_evidence(session: Session, destination: Path | None) -> str:
    """Free bytes at the destination folder (psutil) vs the deliverables' size (G§2)."""
    import psutil

    size: int | None = None
    man = latest_manifest(session)
    if man is not None:
        try:
            frame = pl.read_csv(man, schema_overrides={"size_bytes": pl.Int64})
            size = int(frame.get_column("size_bytes").sum())
        except (OSError, pl.exceptions.PolarsError, TypeError, ValueError):
            size = None  # unreadable, no size_bytes column, or an empty sum
    size_txt = (
        f"deliverables {fmt_bytes(size)} ({man.name})" if size is not None and man is not None
        else f"deliverables size unknown: write the manifest first (gpusession manifest {session.name} --deliverables DIR)"
    )
    if destination is None:
        return f"no destination named yet (gpusession checklist {session.name} evidence --destination DIR); " + size_txt
    probe = Path(destination)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        usage = psutil.disk_usage(str(probe))
    except OSError as exc:
        return f"destination {destination}: cannot read free space ({exc.strerror}); " + size_txt
    free = int(usage.free)
    where = (f"destination {destination}" if probe == Path(destination) else
             f"destination {destination} does not exist yet (create it); its nearest existing "
             f"folder {probe} has")
    if probe == Path(destination) and not probe.is_dir():
        where = f"destination {destination} is a file, not a folder; its disk has"
    text = f"{where}: {fmt_bytes(free)} free; " + size_txt
    if size is not None:
        text += "; fits" if free >= size else "; WARNING: not enough free space"
    return text


#: What a corpus protocol must fix (V5); a tolerance left out is "not chosen", said, never missing.
_PROTOCOL_KEYS = ("classes", "output_format", "metric", "threshold")


def _as_dt(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
    return None


#: Experiments named in a count of the ones with nothing to say (the last defined); a
#: finding names every experiment it concerns, whatever their number. Up to this many
#: experiments, the protocol evidence gives each its own line.
EVIDENCE_NAMED = 5


@dataclass(frozen=True)
class ProtocolState:
    """When one experiment's protocol was stored, against its first measured run (V5).

    Attributes:
        stored_at: when the protocol was stored (aware), ``None`` when not recorded.
        first_run_at: its first ``run_started`` (aware), ``None`` before any run.
        missing: what is not fixed, in words (keys of :data:`_PROTOCOL_KEYS`, or the
            whole protocol); empty when every key is.
        tolerance_not_chosen: classes are fixed and no tolerance is: V5 reads it as 0
            and says so (a choice nobody made is never stored as made).
        changed: the protocol in ``session.toml`` differs from the one the journal
            stored before the runs.
    """

    stored_at: datetime | None
    first_run_at: datetime | None
    missing: tuple[str, ...] = ()
    tolerance_not_chosen: bool = False
    changed: bool = False

    @property
    def late(self) -> bool:
        """Stored after the first measured run: a new experiment id was needed (V5)."""
        return self.stored_at is not None and self.first_run_at is not None and self.stored_at > self.first_run_at

    @property
    def fixed_before(self) -> bool:
        """Every key stored before the first run and unchanged since: nothing to say (V5)."""
        return (self.stored_at is not None and self.first_run_at is not None and not self.late
                and not self.missing and not self.changed)

    def words(self) -> str:
        """What :func:`protocol_findings` says of this experiment, without its id."""
        miss_txt = f"; not fixed: {', '.join(self.missing)}" if self.missing else ""
        if self.tolerance_not_chosen:
            miss_txt += "; tolerance not chosen (read as 0)"
        if self.changed:
            miss_txt += "; WARNING: the protocol in session.toml differs from the one stored before the runs (V5)"
        at, first = self.stored_at, self.first_run_at
        if at is None:
            return f"when the protocol was stored is not recorded{miss_txt}"
        if first is None:
            return f"protocol stored {at.isoformat()}; no measured run yet{miss_txt}"
        if not self.late:
            return f"protocol stored {at.isoformat()}, before the first run {first.isoformat()}{miss_txt}"
        return (f"protocol stored {at.isoformat()}, AFTER the first run {first.isoformat()}: changing it "
                f"afterwards needs a new experiment id (V5){miss_txt}")


def protocol_evidence(session: Session) -> str:
    """Was each experiment's protocol fixed before its first measured run (V5, P§1).

    What a person needs to tick ``p1.fixed-before``: which experiments were NOT fixed
    before their first run -- every one named, since that is the finding -- and how many
    were. Up to :data:`EVIDENCE_NAMED` experiments, one line each (``e: …``, ``WARNING e:
    …`` for a protocol stored after the first run). Beyond, at most 7 lines whatever the
    session's size (a month-long session has hundreds of experiments: one line each would
    be 45 KB to read and mask on every mount at 500):

    - ``WARNING: protocol stored AFTER the first run in 2 experiments: a (stored …, first
      run …), b (…): …``; the same for a protocol in ``session.toml`` changed since the
      runs, for keys not fixed (grouped by what is missing) and for a storing time not
      recorded: each lists every experiment it concerns;
    - ``480 of 500 experiments fixed before their first run (the last 5: …); each
      experiment's line: gpusession report NAME``, then the experiments with no measured
      run yet and those whose tolerance was not chosen (read as 0, which V5 allows),
      counted, the last :data:`EVIDENCE_NAMED` defined named.

    Returns:
        One text of lines; ``not available yet: no experiment defined`` when none is.
    """
    states = protocol_states(session)
    if len(states) <= EVIDENCE_NAMED:
        lines = [f"WARNING {exp_id}: {st.words()}" if st.late else f"{exp_id}: {st.words()}"
                 for exp_id, st in states.items()]
        return "\n".join(lines) if lines else "not available yet: no experiment defined"
    return "\n".join(_protocol_summary(session.name, states))


def _experiments(n: int) -> str:
    return f"{n} experiment{'' if n == 1 else 's'}"


def _last_named(ids: list[str]) -> str:
    """`` (the last 5: a, b, …)`` of ids in definition order; the whole list when short."""
    if not ids:
        return ""
    if len(ids) <= EVIDENCE_NAMED:
        return f": {', '.join(ids)}"
    return f" (the last {EVIDENCE_NAMED}: {', '.join(ids[-EVIDENCE_NAMED:])})"


def _protocol_summary(name: str, states: dict[str, ProtocolState]) -> list[str]:
    """:func:`protocol_evidence` past :data:`EVIDENCE_NAMED` experiments: findings named, the rest counted."""
    late = [(e, st) for e, st in states.items() if st.late]
    changed = [e for e, st in states.items() if st.changed]
    unknown = [e for e, st in states.items() if st.stored_at is None]
    missing: dict[tuple[str, ...], list[str]] = {}
    for e, st in states.items():
        if st.missing:
            missing.setdefault(st.missing, []).append(e)
    lines: list[str] = []
    if late:
        named = ", ".join(f"{e} (stored {st.stored_at.isoformat() if st.stored_at else '?'}, first run "
                          f"{st.first_run_at.isoformat() if st.first_run_at else '?'})" for e, st in late)
        lines.append(f"WARNING: protocol stored AFTER the first run in {_experiments(len(late))}: {named}: "
                     "changing it afterwards needs a new experiment id (V5)")
    if changed:
        lines.append(f"WARNING: the protocol in session.toml differs from the one stored before the runs in "
                     f"{_experiments(len(changed))}: {', '.join(changed)} (V5)")
    if missing:
        n = sum(len(ids) for ids in missing.values())
        lines.append(f"not fixed in {_experiments(n)}: " + "; ".join(
            f"{', '.join(what)} in {', '.join(ids)}" for what, ids in missing.items()))
    if unknown:
        lines.append(f"when the protocol was stored is not recorded for {_experiments(len(unknown))}: "
                     f"{', '.join(unknown)}")
    good = [e for e, st in states.items() if st.fixed_before]
    lines.append(f"{len(good)} of {_experiments(len(states))} fixed before their first run"
                 f"{_last_named(good)}; each experiment's line: gpusession report {name}")
    waiting = [e for e, st in states.items() if st.stored_at is not None and st.first_run_at is None]
    if waiting:
        lines.append(f"no measured run yet: {_experiments(len(waiting))}{_last_named(waiting)}")
    no_tolerance = [e for e, st in states.items() if st.tolerance_not_chosen]
    if no_tolerance:
        lines.append(f"tolerance not chosen (read as 0): {_experiments(len(no_tolerance))}"
                     f"{_last_named(no_tolerance)}")
    return lines


def protocol_findings(session: Session) -> dict[str, tuple[str, bool]]:
    """Per experiment id: its words and whether its protocol was stored late (V5).

    Returns:
        ``{experiment id: (words without the id, stored after the first run)}`` from
        :func:`protocol_states`; empty when no experiment is defined. A reader picks an
        experiment's line by its id here, never by the line's words.
    """
    return {exp_id: (st.words(), st.late) for exp_id, st in protocol_states(session).items()}


def protocol_states(session: Session) -> dict[str, ProtocolState]:
    """Per experiment id, in definition order: when its protocol was stored against its first run (V5).

    When the protocol was stored: the experiment's ``defined_at`` in ``session.toml`` if
    present, else the first ``experiment_defined`` journal event of that id (the run
    engine writes one when it stores the experiment). The first measured run is the first
    ``run_started`` journal event of that id. A protocol in ``session.toml`` that differs
    from the last one the journal recorded before the runs is flagged too.

    Returns:
        ``{experiment id: ProtocolState}``; empty when no experiment is defined.
    """
    exps = session.data.get("experiments")
    if not isinstance(exps, dict) or not exps:
        return {}
    digest = journal_digest(session.folder)  # the saved fold and the lines since (A5)
    fold = digest.protocol if digest is not None else ProtocolFold().feed(session.journal_records())
    first_run = {e: dt for e, at in fold.first_run.items() if (dt := _as_dt(at)) is not None}
    defined = {e: dt for e, at in fold.defined.items() if (dt := _as_dt(at)) is not None}
    stored_protocol = fold.stored
    out: dict[str, ProtocolState] = {}
    for exp_id, exp in exps.items():
        if not isinstance(exp, dict):
            continue
        first = first_run.get(exp_id)
        proto = exp.get("protocol")
        if isinstance(proto, dict) and proto:
            missing = tuple(k for k in _PROTOCOL_KEYS if k not in proto)
        else:
            missing = ("the whole protocol (classes, format, metric, threshold, tolerance)",)
        out[str(exp_id)] = ProtocolState(
            stored_at=_as_dt(exp.get("defined_at")) or defined.get(exp_id),
            first_run_at=first,
            missing=missing,
            tolerance_not_chosen=isinstance(proto, dict) and "classes" in proto and proto.get("tolerance") is None,
            changed=(exp_id in stored_protocol and first is not None
                     and _plain(stored_protocol[exp_id]) != _plain(proto)),
        )
    return out


def _plain(value: Any) -> Any:
    """A comparable form (tuples as lists, ints as floats where numbers)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def session_limit_evidence(session: Session, *, now: datetime | None = None) -> str:
    """Time left in the package against the session limit, one reserve for both (G§7, D1, D2).

    The reserve is the session limit's (measured, set with ``package --reserve`` or the
    default), so the checklist, ``status``, ``show`` and the runner never disagree.

    Returns:
        ``5d 20h 00m left; stop by Fri 10:00 UTC (4 h kept for retrieval; …): start no new
        work after 2026-12-04T10:00:00+00:00 (5d 16h 00m from now)``, or a ``WARNING: …``
        once the limit or the package end has passed.
    """
    now = now or utcnow()
    left = session.package.time_left(now)
    if left is None:
        return f"package start or length not set: time left unknown (gpusession package {session.name} --days N --start ...)"
    if left <= timedelta(0):
        return f"WARNING: the package ended {_fmt_td(left)} ago; whatever is not retrieved may be lost"
    limit = session_limit(session, now)
    if limit.at is None:
        return f"{_fmt_td(left)} left; {limit.words}"
    if limit.passed(now):
        return (f"WARNING: {_fmt_td(left)} left, past the session limit ({limit.words}): "
                "stop new runs and retrieve what is useful now")
    stop = min(limit.at, now + left)  # a limit set past the package end stops at the end
    return (f"{_fmt_td(left)} left; {limit.words}: start no new work after "
            f"{stop.isoformat()} ({_fmt_td(stop - now)} from now)")


def first_result_evidence(session: Session) -> str:
    """The first-result stop: the last stop it made, else that it is armed (D3, G§7).

    Args:
        session: the open session (its journal is read).

    Returns:
        ``done: experiment drop stopped after the first result: 300 IDs missing — …``
        when a stop happened, else ``armed: …`` (never a tick).
    """
    stops = [r for r in session.journal_records()
             if isinstance(r, ExperimentStoppedRecord) and r.reason == "first-result"]
    if stops:
        last = stops[-1]
        return f"done: experiment {last.experiment_id} {last.message}"
    return ("armed: the next run stops after its first result when that result has a major "
            "defect (IDs, format, quality); run --continue-on-reject pushes the whole batch")


def manifest_evidence(session: Session) -> str:
    """The latest manifest of approved deliverables in the session folder (S4)."""
    man = latest_manifest(session)
    if man is None:
        return f"no manifest yet: gpusession manifest {session.name} --deliverables DIR"
    try:
        frame = pl.read_csv(man, schema_overrides={"size_bytes": pl.Int64})
        return f"{man.name}: {frame.height} file(s), {fmt_bytes(int(frame.get_column('size_bytes').sum()))}"
    except (OSError, pl.exceptions.PolarsError, TypeError, ValueError) as exc:
        return f"{man.name}: unreadable ({type(exc).__name__})"


def run_probes(
    session: Session,
    *,
    nvml: Any | None = None,
    destination: Path | None = None,
    now: datetime | None = None,
    record_deviation: bool = True,
) -> dict[str, str]:
    """Run every probe once, on one NVML reading (S1).

    Args:
        session: the open session.
        nvml: a pynvml-like module (tests); default the real bindings.
        destination: where the deliverables will be copied (free-space probe, G§2).
        now: the instant for the session-limit probe (default: now, UTC).
        record_deviation: record an order deviation (S5) when one is seen.

    Returns:
        One text per probe name (``device``, ``on-gpu``, ``order-match``, ``memory``,
        ``free-space``, ``protocol``, ``session-limit``, ``manifest``, ``first-result``). Never raises for a
        missing input: each probe says what it lacks.
    """
    snap = snapshot_of(nvml)
    return {
        "device": device_evidence(session, snap),
        "on-gpu": on_gpu_evidence(session),
        "order-match": order_match_evidence(session, snap, record=record_deviation),
        "memory": memory_evidence(session, snap),
        "free-space": free_space_evidence(session, destination),
        "protocol": protocol_evidence(session),
        "session-limit": session_limit_evidence(session, now=now),
        "manifest": manifest_evidence(session),
        "first-result": first_result_evidence(session),
    }


@dataclass(frozen=True)
class GpuMismatch:
    """An experiment's GPUs against the package's (D8, S5): typed, so a reader decides by the counts.

    Attributes:
        asked: the GPUs the experiment asks for (``gpus`` × ``nodes``).
        held: the GPUs the package (or the order) holds.
        words: ``"uses 1 of 2 GPUs of this B200 lot"`` / ``"asks for 4 GPUs, but this B200 lot holds 2"``.
    """

    asked: int
    held: int
    words: str

    @property
    def asks_more(self) -> bool:
        """More GPUs asked for than the package holds (else some are left idle)."""
        return self.asked > self.held


def gpu_mismatch(session: Session, gpus: int, device: str | None = None) -> GpuMismatch | None:
    """The experiment's GPUs against the package's, ``None`` when they match (:func:`gpus_left_idle`'s figures)."""
    ordered = ordered_of(session)
    total = ordered.gpu_count
    if total is None or gpus == total or (device or "").startswith("cpu"):
        return None
    model = ordered.gpu_model or "GPU"
    where = f"this {model} lot" if ordered.lots == 1 else f"these {ordered.lots} {model} lots"
    if gpus > total:
        return GpuMismatch(gpus, total, f"asks for {gpus} GPUs, but {where} {'holds' if ordered.lots == 1 else 'hold'} {total}")
    return GpuMismatch(gpus, total, f"uses {gpus} of {total} GPUs of {where}")


def gpus_left_idle(session: Session, gpus: int, device: str | None = None) -> str | None:
    """A warning when an experiment's GPUs do not match the package.

    Args:
        session: the session (its order, else its package; :func:`ordered_of`).
        gpus: the GPUs the experiment asks for (``gpus`` × ``nodes``).
        device: the experiment's device; ``"cpu"`` uses no GPU and gets no warning.

    Returns:
        ``"uses 1 of 2 GPUs of this B200 lot"`` / ``"uses 2 of 4 GPUs of these 2 B200
        lots"`` when GPUs are left idle; ``"asks for 4 GPUs, but this B200 lot holds 2"``
        when it asks for more than the package holds; ``None`` when it uses them all,
        runs on the CPU, or the package's GPU count is unknown.
    """
    found = gpu_mismatch(session, gpus, device)
    return found.words if found is not None else None


def gpu_use_words(exp: Any) -> str:
    """How an experiment uses GPUs, for a description.

    ``", 2 GPUs per node"``, ``", 2 ranks per node on the CPU (gloo)"``,
    ``", 2 nodes × 4 GPUs per node (rendezvous h:29400)"``; ``""`` for one process.
    """
    gpus, nodes = int(getattr(exp, "gpus", 1) or 1), int(getattr(exp, "nodes", 1) or 1)
    if gpus * nodes <= 1:
        return ""
    cpu = (getattr(exp, "device", None) or "").startswith("cpu")
    unit = "ranks" if cpu else "GPUs"
    where = " on the CPU (gloo)" if cpu else ""
    if nodes > 1:
        return f", {nodes} nodes × {gpus} {unit} per node{where} (rendezvous {getattr(exp, 'rendezvous', None)})"
    return f", {gpus} {unit} per node{where}"


def idle_gpu_warnings(session: Session, experiment_id: str | None = None) -> list[str]:
    """One warning per defined experiment whose GPUs do not match the package.

    Reads ``gpus`` × ``nodes`` of each ``[experiments.<id>]`` (default 1 each; the
    experiment's own checks are the runner's) and words it with :func:`gpus_left_idle`.

    Args:
        session: the session.
        experiment_id: only this experiment; ``None``: every one.

    Returns:
        e.g. ``["experiment batch-sweep uses 1 of 2 GPUs of this B200 lot"]``; empty when
        every experiment uses them all (or runs on the CPU), none is defined, or the GPU
        count is unknown.
    """
    table = session.data.get("experiments", {})
    out: list[str] = []
    if not isinstance(table, dict):
        return out
    for exp_id, data in table.items():
        if not isinstance(data, dict) or experiment_id not in (None, exp_id):
            continue
        gpus, nodes = data.get("gpus", 1), data.get("nodes", 1)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (gpus, nodes)):
            continue
        device = data.get("device") if isinstance(data.get("device"), str) else None
        words = gpus_left_idle(session, gpus * nodes, device)
        if words:
            out.append(f"experiment {exp_id} {words}")
    return out
