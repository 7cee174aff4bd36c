"""Host and GPU facts observed without torch: NVML (``pynvml``) and ``psutil``.

Who calls it: the run pane and memory pane (live device readings, M5: the UI process
never creates a CUDA context, so device figures come from NVML), the runner (concurrent
load at the start of an experiment, R10) and the checklist probes (the GPU seen vs the
order, S5). Nothing here imports torch.

Every reader *never raises*: inside containers NVML is often missing or fails (H-07), so
a failure gives ``available=False`` with the reason in words, and the caller shows the
reason beside the empty fields.

NVML numbers GPUs in PCI order while CUDA/PyTorch follow ``CUDA_VISIBLE_DEVICES``
(H-05): :func:`visible_device_map` maps torch's ``cuda:N`` to the physical GPU by the
variable's list (indices or UUIDs), so a reading is for the GPU the workload used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU, as NVML sees it (device/process total, H-04).

    Attributes:
        pid: process id (host namespace; may not exist in a container's namespace).
        used_bytes: GPU memory used by the process in bytes; ``None`` when NVML does not
            report it (e.g. without permission, or under some virtualisation).
        name: process name from psutil, ``None`` when the process is not visible here.
    """

    pid: int
    used_bytes: int | None
    name: str | None


@dataclass(frozen=True)
class GpuReading:
    """One physical GPU as NVML sees it (PCI order).

    Attributes:
        index: NVML (physical, PCI-order) index.
        uuid: e.g. ``"GPU-8f2c…"``.
        name: model, e.g. ``"NVIDIA RTX A5000"``.
        memory_total_bytes, memory_used_bytes: device totals in bytes (every process,
            the CUDA contexts included; not the PyTorch allocator's figures, H-04).
        processes: compute processes on that GPU.
        mig_uuids: UUIDs (``"MIG-…"``) of the MIG instances on that GPU; empty when MIG
            is off or NVML cannot tell.
    """

    index: int
    uuid: str
    name: str
    memory_total_bytes: int
    memory_used_bytes: int
    processes: tuple[GpuProcess, ...]
    mig_uuids: tuple[str, ...] = ()


@dataclass(frozen=True)
class NvmlSnapshot:
    """One NVML reading of every GPU.

    Attributes:
        available: ``False`` when NVML is missing or failed; then ``reason`` says why and
            ``gpus`` is empty.
        reason: one line in words, e.g. ``"no NVIDIA driver found (NVML: Driver Not
            Loaded)"``; ``None`` when available.
        driver_version: e.g. ``"535.104.05"`` (H-06: decoded from bytes when needed).
        gpus: readings in NVML (PCI) order.
    """

    available: bool
    reason: str | None
    driver_version: str | None
    gpus: tuple[GpuReading, ...]


def decode_nvml_str(value: bytes | str) -> str:
    """NVML strings as ``str``: old bindings return ``bytes``, new ones ``str`` (H-06).

    Args:
        value: e.g. ``b"535.104.05"`` or ``"535.104.05"``.

    Returns:
        ``"535.104.05"``; bytes are decoded as UTF-8 (invalid bytes replaced) and a
        trailing NUL is stripped.
    """
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value).decode("utf-8", errors="replace")
    else:
        text = str(value)
    return text.rstrip("\x00").strip()


def _import_pynvml() -> Any:
    import pynvml  # nvidia-ml-py

    return pynvml


def _nvml_errors(nvml: Any) -> tuple[type[BaseException], ...]:
    """What a call into ``nvml`` raises when NVML cannot answer (H-07).

    pynvml raises its ``NVMLError`` for every library failure (no library, driver not
    loaded, not supported, not found; ``NVMLError_FunctionNotFound`` when the driver
    lacks a function). ``AttributeError``: the bindings (an older nvidia-ml-py, or an
    injected pynvml-like object) lack the function. ``RuntimeError``: how a pynvml-like
    object without ``NVMLError`` (the test fakes) reports a failure. ``OSError``: ctypes
    failing to reach the library.
    """
    own = getattr(nvml, "NVMLError", None)
    extra: tuple[type[BaseException], ...] = (
        (own,) if isinstance(own, type) and issubclass(own, BaseException) else ()
    )
    return (*extra, RuntimeError, AttributeError, OSError)


def _nvml_error_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


def _process_name(pid: int) -> str | None:
    try:
        import psutil
    except ImportError:
        return None
    try:
        return str(psutil.Process(pid).name())
    except (psutil.Error, OSError, ValueError):  # gone, hidden, not ours; negative pid
        return None


def _read_processes(nvml: Any, handle: Any) -> tuple[GpuProcess, ...]:
    try:
        infos = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except _nvml_errors(nvml):
        return ()
    out = []
    for info in infos or ():
        pid = int(getattr(info, "pid", 0))
        used = getattr(info, "usedGpuMemory", None)
        # NVML reports NVML_VALUE_NOT_AVAILABLE (2**64-1) or None when it cannot tell.
        if used is not None:
            try:
                used = int(used)
            except (TypeError, ValueError):
                used = None
        if used is not None and (used < 0 or used >= 2**63):
            used = None
        out.append(GpuProcess(pid=pid, used_bytes=used, name=_process_name(pid)))
    return tuple(out)


def _read_mig_uuids(nvml: Any, handle: Any) -> tuple[str, ...]:
    """UUIDs of the MIG instances of one GPU; ``()`` when MIG is off or unsupported."""
    errors = _nvml_errors(nvml)
    errors_or_odd: tuple[type[BaseException], ...] = (*errors, TypeError, ValueError)
    try:
        count = int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))
    except errors_or_odd:  # NotSupported: no MIG on this GPU
        return ()
    out = []
    for i in range(count):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
            out.append(decode_nvml_str(nvml.nvmlDeviceGetUUID(mig)))
        except errors:
            continue  # an empty slot raises NotFound
    return tuple(out)


def read_nvml(nvml: Any | None = None) -> NvmlSnapshot:
    """Read driver version and every GPU (memory, processes) through NVML; never raises.

    Args:
        nvml: a pynvml-like module (``nvmlInit``, ``nvmlShutdown``,
            ``nvmlSystemGetDriverVersion``, ``nvmlDeviceGetCount``,
            ``nvmlDeviceGetHandleByIndex``, ``nvmlDeviceGetUUID``, ``nvmlDeviceGetName``,
            ``nvmlDeviceGetMemoryInfo``, ``nvmlDeviceGetComputeRunningProcesses``);
            injectable for tests. Default: ``pynvml`` from nvidia-ml-py.

    Returns:
        A snapshot; when NVML cannot be imported, initialised or read, ``available`` is
        ``False`` with the reason in words (H-07). A failure on one GPU after a good
        init skips that GPU's fields but keeps the others.
    """
    if nvml is None:
        try:
            nvml = _import_pynvml()
        except (ImportError, OSError) as exc:  # not installed, or a broken install
            return NvmlSnapshot(False, f"NVML bindings not installed ({_nvml_error_text(exc)})", None, ())
    errors = _nvml_errors(nvml)
    # with an int() of a field that is not a number (a count, a memory figure)
    errors_or_odd: tuple[type[BaseException], ...] = (*errors, TypeError, ValueError)
    try:
        nvml.nvmlInit()
    except errors as exc:
        return NvmlSnapshot(
            False, f"no NVIDIA driver found (NVML: {_nvml_error_text(exc)})", None, ()
        )
    try:
        try:
            driver: str | None = decode_nvml_str(nvml.nvmlSystemGetDriverVersion())
        except errors:
            driver = None
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except errors_or_odd as exc:
            return NvmlSnapshot(
                False, f"NVML could not count GPUs ({_nvml_error_text(exc)})", driver, ()
            )
        gpus = []
        for i in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(i)
                uuid = decode_nvml_str(nvml.nvmlDeviceGetUUID(handle))
                name = decode_nvml_str(nvml.nvmlDeviceGetName(handle))
                mem = nvml.nvmlDeviceGetMemoryInfo(handle)
                gpus.append(
                    GpuReading(
                        index=i,
                        uuid=uuid,
                        name=name,
                        memory_total_bytes=int(mem.total),
                        memory_used_bytes=int(mem.used),
                        processes=_read_processes(nvml, handle),
                        mig_uuids=_read_mig_uuids(nvml, handle),
                    )
                )
            except errors_or_odd:  # this GPU only; int() of odd fields
                continue
        return NvmlSnapshot(True, None, driver, tuple(gpus))
    except errors as exc:  # pragma: no cover - defensive: every call above is guarded
        return NvmlSnapshot(False, f"NVML read failed ({_nvml_error_text(exc)})", None, ())
    finally:
        try:
            nvml.nvmlShutdown()
        except errors:
            pass


@dataclass(frozen=True)
class HostMemory:
    """Host RAM, swap and the container's memory limit, in bytes (psutil; not GPU memory).

    Attributes:
        total_bytes, available_bytes, used_bytes: from ``psutil.virtual_memory()``.
        swap_total_bytes, swap_used_bytes: from ``psutil.swap_memory()``.
        cgroup_limit_bytes: the cgroup memory limit when one applies (v2 ``memory.max``
            or v1 ``memory.limit_in_bytes``), else ``None`` (no limit / not in a cgroup).
    """

    total_bytes: int
    available_bytes: int
    used_bytes: int
    swap_total_bytes: int
    swap_used_bytes: int
    cgroup_limit_bytes: int | None


_CGROUP_V2 = Path("/sys/fs/cgroup/memory.max")
_CGROUP_V1 = Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")


def read_cgroup_limit(v2: Path = _CGROUP_V2, v1: Path = _CGROUP_V1) -> int | None:
    """The container's memory limit in bytes, or ``None`` when unlimited or unknown.

    cgroup v2 writes ``max`` for no limit; v1 writes a huge number (≥ 2**60) instead.

    Args:
        v2: the cgroup v2 ``memory.max`` file (read first).
        v1: the cgroup v1 ``memory.limit_in_bytes`` file.

    Returns:
        The limit in bytes from the first readable file; never raises (unreadable files
        are skipped, an unparseable one gives ``None``).
    """
    for path in (v2, v1):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if not text or text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            return None
        return None if value >= 2**60 else value
    return None


def read_host_memory() -> HostMemory:
    """Host memory now (psutil) with the cgroup limit when inside a container."""
    import psutil

    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    return HostMemory(
        total_bytes=int(vm.total),
        available_bytes=int(vm.available),
        used_bytes=int(vm.total - vm.available),
        swap_total_bytes=int(sw.total),
        swap_used_bytes=int(sw.used),
        cgroup_limit_bytes=read_cgroup_limit(),
    )


@dataclass(frozen=True)
class VisibleDevice:
    """Torch's ``cuda:N`` mapped to a physical GPU (H-05).

    Attributes:
        torch_index: ``N`` in ``cuda:N`` (position in ``CUDA_VISIBLE_DEVICES``).
        physical_index: NVML (PCI-order) index, ``None`` when it cannot be resolved.
        uuid: the physical GPU's UUID, ``None`` when unknown.
        name: its model name, ``None`` when unknown.
        gpu: the full NVML reading, ``None`` when unknown.
    """

    torch_index: int
    physical_index: int | None
    uuid: str | None
    name: str | None
    gpu: GpuReading | None = None


def parse_visible_devices(value: str | None) -> list[str] | None:
    """``CUDA_VISIBLE_DEVICES`` as a list of entries; ``None`` when the variable is unset.

    Entries are stripped; as in CUDA, the list stops at the first empty or invalid entry
    (``-1`` hides every later device). An empty string hides every device (``[]``).
    """
    if value is None:
        return None
    out: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            break
        if entry.lstrip("-").isdigit():
            if int(entry) < 0:
                break
            out.append(str(int(entry)))
        elif entry.upper().startswith(("GPU-", "MIG-")):
            out.append(entry)
        else:
            break
    return out


def visible_device_map(
    env: Mapping[str, str] | None = None, snapshot: NvmlSnapshot | None = None
) -> tuple[VisibleDevice, ...]:
    """Map torch's ``cuda:N`` to the physical GPU via ``CUDA_VISIBLE_DEVICES`` (H-05).

    Args:
        env: environment (default ``os.environ``); ``CUDA_VISIBLE_DEVICES`` may hold
            physical indices (``"1,0"``) or UUIDs / UUID prefixes (``"GPU-8f2c"``).
        snapshot: an NVML reading (default: :func:`read_nvml`).

    Returns:
        One entry per device torch will see, in torch's order: ``result[N]`` is
        ``cuda:N``. With the variable unset, torch sees every GPU; the map is then NVML's
        order (set ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` for CUDA to agree). Entries whose
        physical GPU cannot be found keep ``physical_index=None``; with NVML unavailable
        indices are kept as given and the rest is ``None``.
    """
    env = os.environ if env is None else env
    snap = snapshot if snapshot is not None else read_nvml()
    entries = parse_visible_devices(env.get("CUDA_VISIBLE_DEVICES"))
    gpus = list(snap.gpus)
    by_index = {g.index: g for g in gpus}
    if entries is None:
        return tuple(
            VisibleDevice(n, g.index, g.uuid, g.name, g) for n, g in enumerate(gpus)
        )
    out: list[VisibleDevice] = []
    for n, entry in enumerate(entries):
        gpu: GpuReading | None = None
        physical: int | None = None
        mig_uuid: str | None = None
        if entry.isdigit():
            physical = int(entry)
            gpu = by_index.get(physical)
            if snap.available and gpu is None:
                break  # CUDA stops at an index that does not exist
        else:
            gpu, mig_uuid = _gpu_for_uuid_entry(entry, gpus)
            physical = gpu.index if gpu else None
        out.append(
            VisibleDevice(
                torch_index=n,
                physical_index=physical,
                uuid=mig_uuid if mig_uuid else gpu.uuid if gpu else (entry if not entry.isdigit() else None),
                name=gpu.name if gpu else None,
                gpu=gpu,
            )
        )
    return tuple(out)


def _gpu_for_uuid_entry(entry: str, gpus: list[GpuReading]) -> tuple[GpuReading | None, str | None]:
    """The physical GPU for one UUID entry of ``CUDA_VISIBLE_DEVICES`` (H-05).

    The entry may be a unique prefix, as CUDA accepts; the MIG instance's UUID is
    returned too when the entry names one.

    ``GPU-…`` names a GPU; ``MIG-…`` a MIG instance (matched against each GPU's
    instances); the CUDA 11.0-11.x form ``MIG-GPU-<gpu uuid>/<gi>/<ci>`` names an instance
    of that GPU.
    """
    low = entry.lower()
    if low.startswith("mig-gpu-"):
        parent = low[len("mig-"):].split("/", 1)[0]
        found = [g for g in gpus if g.uuid.lower().startswith(parent)]
        return (found[0], entry) if len(found) == 1 else (None, None)
    if low.startswith("mig-"):
        hits = [(g, m) for g in gpus for m in g.mig_uuids if m.lower().startswith(low)]
        return hits[0] if len(hits) == 1 else (None, None)
    found = [g for g in gpus if g.uuid.lower().startswith(low)]
    return (found[0], None) if len(found) == 1 else (None, None)


def gpu_for_uuid(uuid: str, snapshot: NvmlSnapshot) -> tuple[GpuReading | None, str | None]:
    """The physical GPU whose UUID (or one of whose MIG instances' UUID) is ``uuid``.

    Args:
        uuid: as torch reports it (``torch.cuda.get_device_properties(d).uuid``: bare
            ``"8f2c…"`` without prefix) or as NVML does (``"GPU-8f2c…"``, ``"MIG-…"``).
        snapshot: an NVML reading.

    Returns:
        ``(gpu, uuid_as_nvml_writes_it)``, or ``(None, None)`` when no GPU matches (H-05:
        the GPU the process really used, whatever ``CUDA_VISIBLE_DEVICES`` or
        ``CUDA_DEVICE_ORDER`` say).
    """
    bare = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if bare.startswith(prefix):
            bare = bare[len(prefix):]
    if not bare:
        return None, None
    for g in snapshot.gpus:
        for candidate in (g.uuid, *g.mig_uuids):
            low = candidate.lower()
            if low.split("-", 1)[-1] == bare or low == bare:
                return g, candidate
    return None, None


def device_for(torch_device: str, env: Mapping[str, str] | None = None,
               snapshot: NvmlSnapshot | None = None) -> VisibleDevice | None:
    """The physical GPU behind a torch device string (H-05).

    Args:
        torch_device: ``"cuda"`` (device 0), ``"cuda:1"``, ``"cpu"``…
        env: environment (default ``os.environ``), for ``CUDA_VISIBLE_DEVICES``.
        snapshot: an NVML reading (default: :func:`read_nvml`).

    Returns:
        The mapped device; ``None`` for CPU or when it cannot be resolved.
    """
    if not torch_device.startswith("cuda"):
        return None
    _, _, idx = torch_device.partition(":")
    n = int(idx) if idx.isdigit() else 0
    mapping = visible_device_map(env, snapshot)
    return mapping[n] if n < len(mapping) else None


def host_cpu_percent(interval_s: float = 0.1) -> float | None:
    """Host CPU use in percent over ``interval_s`` seconds (concurrent load, R10)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        return float(psutil.cpu_percent(interval=interval_s))
    except (psutil.Error, OSError, ValueError):  # /proc unreadable; a negative interval
        return None


@dataclass(frozen=True)
class ConcurrentLoad:
    """What else was running when an experiment started (R10).

    Attributes:
        host_cpu_percent: host CPU use in percent, ``None`` if unknown.
        other_gpu_processes: ``(pid, physical_gpu_index, used_bytes)`` of GPU processes
            that are not ours; empty when NVML sees none or is unavailable.
        nvml_reason: why GPU processes are unknown, when NVML is unavailable.
    """

    host_cpu_percent: float | None
    other_gpu_processes: tuple[tuple[int, int, int | None], ...]
    nvml_reason: str | None

    def describe(self) -> str:
        """One line in words, e.g. ``host CPU 12%; other GPU processes: none``."""
        cpu = "unknown" if self.host_cpu_percent is None else f"{self.host_cpu_percent:.0f}%"
        if self.nvml_reason:
            gpu = f"unknown ({self.nvml_reason})"
        elif not self.other_gpu_processes:
            gpu = "none"
        else:
            gpu = ", ".join(
                f"pid {p} on GPU {i}" + (f" ({u} bytes)" if u is not None else "")
                for p, i, u in self.other_gpu_processes
            )
        return f"host CPU {cpu}; other GPU processes: {gpu}"


def read_concurrent_load(
    own_pids: set[int] | None = None,
    snapshot: NvmlSnapshot | None = None,
    interval_s: float = 0.1,
) -> ConcurrentLoad:
    """Host CPU % and the GPU processes other than ``own_pids`` (R10); never raises."""
    own = own_pids or {os.getpid()}
    snap = snapshot if snapshot is not None else read_nvml()
    others = tuple(
        (p.pid, g.index, p.used_bytes)
        for g in snap.gpus
        for p in g.processes
        if p.pid not in own
    )
    return ConcurrentLoad(
        host_cpu_percent=host_cpu_percent(interval_s),
        other_gpu_processes=others,
        nvml_reason=None if snap.available else snap.reason,
    )


__all__ = [
    "ConcurrentLoad",
    "GpuProcess",
    "GpuReading",
    "HostMemory",
    "NvmlSnapshot",
    "VisibleDevice",
    "decode_nvml_str",
    "device_for",
    "gpu_for_uuid",
    "host_cpu_percent",
    "parse_visible_devices",
    "read_cgroup_limit",
    "read_concurrent_load",
    "read_host_memory",
    "read_nvml",
    "visible_device_map",
]
