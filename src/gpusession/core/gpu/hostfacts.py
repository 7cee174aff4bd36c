"""What a host check finds: which machine, which GPUs (NVML) and the probe's figures (D8).

Why it exists: "is this the GPU I paid for?" is answered from evidence kept beside the
order. This module reads the NVML part (model, count, memory, PCIe link, power limit,
ECC and MIG mode, other processes on the GPUs) and names the machine by hostname and boot
id, so a check is done once per boot of a host and a pulled copy at home never counts as
that host. The probe's figures are made by a worker (:mod:`gpusession.bench.hostprobe`);
this module only holds them (:class:`ProbeResult`). Who calls it:
:mod:`gpusession.core.money.host_check` (records and compares with the order), the
``check-host`` command, ``run`` and the TUI. Nothing here imports torch.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.secrets import mask_text
from gpusession.core.gpu.nvml import BoardReading, GpuReading, NvmlSnapshot, read_boards, read_nvml

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class HostKey:
    """One boot of one machine: its hostname and the kernel's boot id (D8).

    Attributes:
        hostname: ``socket.gethostname()``.
        boot_id: ``/proc/sys/kernel/random/boot_id``; ``None`` where unreadable (not Linux).
    """

    hostname: str
    boot_id: str | None

    @property
    def key(self) -> str:
        """``"<hostname> <boot id>"``: the key of this host's entry in ``host-check.toml``."""
        return f"{self.hostname} {self.boot_id or 'boot-id-unknown'}"


def this_host(boot_id_path: Path = _BOOT_ID) -> HostKey:
    """The machine this process runs on, this boot (D8); masked as :func:`mask_host` does.

    Args:
        boot_id_path: the boot id file (injectable for tests).
    """
    try:
        boot: str | None = boot_id_path.read_text(encoding="ascii", errors="replace").strip() or None
    except OSError:
        boot = None
    return mask_host(HostKey(socket.gethostname(), boot))


def mask_host(host: HostKey, found: list[str] | None = None) -> HostKey:
    """``host`` with a hostname or boot id that looks like a secret masked (H-24).

    Why: the key of a host's entry in ``host-check.toml`` is written there; masked the
    same way wherever it is made, the entry is still found on the next open.

    Args:
        host: the machine and boot.
        found: where to add a phrase per masked text (``"hostname (API key)"``).
    """
    found = [] if found is None else found
    return HostKey(_mask(host.hostname, "hostname", found) or "",
                   _mask(host.boot_id, "boot id", found))


@dataclass(frozen=True)
class GpuFacts:
    """One GPU as the host check found it (NVML; D8). ``None``: not read, never 0.

    Attributes:
        index: NVML (PCI-order) index.
        uuid, name: ``"GPU-…"``, ``"NVIDIA H200"``.
        memory_total_bytes: device memory in bytes.
        pcie_generation, pcie_width, pcie_max_generation, pcie_max_width: the PCIe link
            now and the most it allows (an idle GPU lowers its generation).
        power_limit_w: enforced power limit in watts.
        ecc_on, mig_on: ECC and MIG mode now.
        processes: other processes on the GPU, in words (:meth:`GpuProcess.words`).
        unread: the readings NVML could not give, with NVML's reasons; ``None`` if none.
        pci_device_id: the PCI device id (``0x2330``), ``None`` unread (H-61).
    """

    index: int
    uuid: str | None
    name: str | None
    memory_total_bytes: int | None
    pcie_generation: int | None = None
    pcie_width: int | None = None
    pcie_max_generation: int | None = None
    pcie_max_width: int | None = None
    power_limit_w: float | None = None
    ecc_on: bool | None = None
    mig_on: bool | None = None
    processes: tuple[str, ...] = ()
    unread: str | None = None
    pci_device_id: int | None = None


@dataclass(frozen=True)
class HostFacts:
    """The NVML part of a host check (D8).

    Attributes:
        host: the machine and boot.
        checked_at: when NVML was read (aware UTC).
        nvml_reason: why NVML gave nothing (no driver, no bindings); ``None`` when read.
        driver_version: e.g. ``"550.54.15"``.
        gpus: one entry per GPU NVML counts, NVML order.
        masked: one phrase per reading that looked like a secret and is kept masked
            (``"GPU 0 name (API key)"``); ``()`` when none.
    """

    host: HostKey
    checked_at: datetime
    nvml_reason: str | None
    driver_version: str | None
    gpus: tuple[GpuFacts, ...]
    masked: tuple[str, ...] = ()

    @property
    def sees_gpu(self) -> bool:
        """Whether NVML answered and counted at least one GPU."""
        return self.nvml_reason is None and bool(self.gpus)

    @property
    def gpu_model(self) -> str | None:
        """The models seen, ``" + "``-joined when they differ; ``None`` when none was read."""
        names = list(dict.fromkeys(g.name for g in self.gpus if g.name))
        return " + ".join(names) if names else None

    @property
    def memory_total_bytes(self) -> int | None:
        """The smallest GPU's memory in bytes (a program on one GPU gets that); ``None`` unread."""
        sizes = [g.memory_total_bytes for g in self.gpus if g.memory_total_bytes is not None]
        return min(sizes) if sizes else None


def _mask(text: str | None, where: str, found: list[str], *, digest: bool = False) -> str | None:
    """``text`` with any secret in it masked; ``where`` and the kinds added to ``found``."""
    if text is None:
        return None
    out, kinds = mask_text(text, digest=digest)
    if kinds:
        found.append(f"{where} ({', '.join(kinds)})")
    return out


def _mask_lines(lines: tuple[str, ...], where: str, found: list[str]) -> tuple[str, ...]:
    """Each line masked, then the lines together (a secret split over lines is one secret)."""
    each = [_mask(line, where, found) or "" for line in lines]
    if len(each) < 2:
        return tuple(each)
    whole = _mask("\n".join(each), where, found) or ""
    return tuple(whole.split("\n"))


def mask_facts(facts: HostFacts) -> HostFacts:
    """``facts`` with every text NVML gave that looks like a secret masked (D8, H-24).

    Why: a GPU name, a process or a driver string is written to ``host-check.toml``,
    where a key would be refused; the reading is kept masked
    (:func:`gpusession.core.files.secrets.mask_text`) and said in
    :attr:`HostFacts.masked`, so the check is never lost to it. Masking twice changes
    nothing.
    """
    found = list(facts.masked)
    gpus = tuple(replace(
        g, name=_mask(g.name, f"GPU {g.index} name", found),
        uuid=_mask(g.uuid, f"GPU {g.index} UUID", found, digest=True),
        processes=_mask_lines(g.processes, f"GPU {g.index} processes", found),
        unread=_mask(g.unread, f"GPU {g.index} unread readings", found)) for g in facts.gpus)
    host = mask_host(facts.host, found)
    return replace(facts, host=host, gpus=gpus,
                   nvml_reason=_mask(facts.nvml_reason, "NVML's reason", found),
                   driver_version=_mask(facts.driver_version, "driver version", found),
                   masked=tuple(dict.fromkeys(found)))


def mask_probe(probe: ProbeResult) -> tuple[ProbeResult, tuple[str, ...]]:
    """``probe`` with every text that looks like a secret masked, and what was (D8, H-24).

    Returns:
        ``(masked probe, phrases)``: one phrase per masked text, ``()`` when none.
    """
    found: list[str] = []
    gpus = tuple(replace(g, name=_mask(g.name, f"probe GPU {n} name", found),
                         uuid=_mask(g.uuid, f"probe GPU {n} UUID", found, digest=True))
                 for n, g in enumerate(probe.gpus))
    masked = replace(probe, gpus=gpus, words=_mask(probe.words, "probe's words", found) or "",
                     dtype=_mask(probe.dtype, "probe's dtype", found),
                     torch_version=_mask(probe.torch_version, "torch version", found))
    return masked, tuple(dict.fromkeys(found))


def _facts_of(gpu: GpuReading, board: BoardReading | None) -> GpuFacts:
    unread = [f"{name}: {reason}" for name, reason in gpu.unread
              if name not in ("utilization", "sm_clock")]
    if board is not None and board.unread:
        unread.append(board.unread)
    others = tuple(p.words() for p in gpu.processes)
    if not gpu.processes_known:
        others = (f"unknown (NVML: {gpu.why_unread('processes') or 'not read'})",)
    b = board or BoardReading(gpu.index, gpu.uuid)
    return GpuFacts(gpu.index, gpu.uuid, gpu.name, gpu.memory_total_bytes, b.pcie_generation,
                    b.pcie_width, b.pcie_max_generation, b.pcie_max_width, b.power_limit_w,
                    b.ecc_on, b.mig_on, others, "; ".join(unread) or None, b.pci_device_id)


def facts_from(snap: NvmlSnapshot, boards: tuple[BoardReading, ...], host: HostKey,
               now: datetime) -> HostFacts:
    """The host check's NVML part from one snapshot and the board readings (D8).

    Boards are matched to GPUs by UUID first, by index only when a UUID is unread (H-05).
    A text that looks like a secret is masked (:func:`mask_facts`).
    """
    by_uuid = {b.uuid: b for b in boards if b.uuid}
    by_index = {b.index: b for b in boards}
    gpus = tuple(_facts_of(g, by_uuid.get(g.uuid) if g.uuid else by_index.get(g.index))
                 for g in snap.gpus)
    reason = snap.reason if not snap.available else None
    return mask_facts(HostFacts(host, now, reason, snap.driver_version, gpus))


def read_host_facts(nvml: Any | None = None, *, host: HostKey | None = None,
                    now: datetime | None = None) -> HostFacts:
    """Read the NVML part of a host check now; never raises (D8, H-07).

    Args:
        nvml: a pynvml-like module (tests: :class:`gpusession.testing.FakeNvml`).
        host: the machine (default :func:`this_host`).
        now: the instant recorded (default now, UTC).

    Returns:
        The facts; without a driver ``nvml_reason`` says why and ``gpus`` is empty.
    """
    snap = read_nvml(nvml)
    boards = read_boards(nvml) if snap.available and snap.gpus else ()
    return facts_from(snap, boards, host or this_host(), now or utcnow())


@dataclass(frozen=True)
class ProbeGpu:
    """The probe's figures on one GPU (D8): for the renter's records, not judged here.

    Attributes:
        uuid, name: the GPU as torch names it (``"GPU-…"``).
        matmul_tflops: dense matmul throughput, 10**12 floating-point operations per
            second (2·n³ per product) in ``ProbeResult.dtype``; ``None`` not measured.
        h2d_gb_per_s, d2h_gb_per_s: pinned host→device and device→host copy, 10**9 bytes
            per second; ``None`` not measured.
    """

    uuid: str | None
    name: str | None
    matmul_tflops: float | None
    h2d_gb_per_s: float | None
    d2h_gb_per_s: float | None


#: How a probe ended: measured; no GPU visible to torch; failed (with the reason).
PROBE_STATUSES = ("measured", "no-gpu", "failed")


@dataclass(frozen=True)
class ProbeResult:
    """A fixed probe of every visible GPU (D8): what ran, how long, what it measured.

    Attributes:
        status: one of :data:`PROBE_STATUSES`.
        words: one line saying what happened (``"no GPU visible: no probe"``).
        seconds: the probe's wall time in seconds; ``None`` when it did not run.
        dtype, matrix_n, copy_bytes: the fixed work (``"float16"``, 8192, bytes per copy).
        torch_version: the torch that ran it.
        gpus: one entry per GPU probed.
    """

    status: str
    words: str
    seconds: float | None = None
    dtype: str | None = None
    matrix_n: int | None = None
    copy_bytes: int | None = None
    torch_version: str | None = None
    gpus: tuple[ProbeGpu, ...] = ()


__all__ = [
    "PROBE_STATUSES", "GpuFacts", "HostFacts", "HostKey", "ProbeGpu", "ProbeResult",
    "facts_from", "mask_facts", "mask_host", "mask_probe", "read_host_facts", "this_host",
]
