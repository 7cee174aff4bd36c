"""Host and GPU facts observed without torch: NVML (``pynvml``) and ``psutil``.

Who calls it: the run pane and memory pane (live device readings, M5: the UI process
never creates a CUDA context, so device figures come from NVML), the runner (concurrent
load at the start of an experiment, R10) and the checklist probes (the GPU seen vs the
order, S5). Nothing here imports torch.

Every reader *never raises*: inside containers NVML is often missing or fails (H-07), so
a failure gives ``available=False`` with the reason in words, and the caller shows the
reason beside the empty fields. Once NVML answers, each reading of each GPU fails alone
(H-18): a GPU is never dropped, its unread fields are ``None`` (never 0) with the reason,
and a process list NVML could not read is "unknown", not "none".

The host memory limit is the one of this process's own cgroup, the tightest from it up
to the root (H-19), not the cgroup root's.

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
        mig_uuid: the MIG instance it runs on, when read through that instance's handle.
    """

    pid: int
    used_bytes: int | None
    name: str | None
    mig_uuid: str | None = None


#: The names of the per-GPU readings, as used in :attr:`GpuReading.unread`.
GPU_READINGS = ("handle", "uuid", "name", "memory", "processes", "mig", "utilization", "sm_clock")


@dataclass(frozen=True)
class GpuReading:
    """One physical GPU as NVML sees it (PCI order).

    Each reading fails alone (H-18): a GPU NVML counts is always kept, at its NVML index,
    with the readings NVML could not give left ``None`` and the reason in ``unread``.

    Attributes:
        index: NVML (physical, PCI-order) index.
        uuid: e.g. ``"GPU-8f2c…"``; ``None`` when unread.
        name: model, e.g. ``"NVIDIA RTX A5000"``; ``None`` when unread.
        memory_total_bytes, memory_used_bytes: device totals in bytes (every process,
            the CUDA contexts included; not the PyTorch allocator's figures, H-04);
            ``None`` when NVML could not read them (e.g. "Not Supported"), never 0.
        processes: compute processes on that GPU; empty also when NVML could not list
            them: then ``unread`` has a ``"processes"`` entry (see
            :attr:`processes_known`).
        mig_uuids: UUIDs (``"MIG-…"``) of the MIG instances on that GPU; empty when MIG
            is off or NVML cannot tell.
        utilization_percent: GPU utilization (NVML, last sample period), ``None`` unread.
        sm_clock_mhz: current SM clock in MHz, ``None`` unread.
        unread: ``(reading, reason)`` for each reading NVML could not give; reading is
            one of :data:`GPU_READINGS`.
    """

    index: int
    uuid: str | None
    name: str | None
    memory_total_bytes: int | None
    memory_used_bytes: int | None
    processes: tuple[GpuProcess, ...]
    mig_uuids: tuple[str, ...] = ()
    utilization_percent: int | None = None
    sm_clock_mhz: int | None = None
    unread: tuple[tuple[str, str], ...] = ()

    def why_unread(self, reading: str) -> str | None:
        """The reason ``reading`` (one of :data:`GPU_READINGS`) is unknown, else ``None``.

        Args:
            reading: e.g. ``"memory"``.

        Returns:
            NVML's words, e.g. ``"Not Supported"``; ``None`` when it was read.
        """
        for name, reason in self.unread:
            if name == reading:
                return reason
        return None

    @property
    def processes_known(self) -> bool:
        """Whether :attr:`processes` is NVML's full list (``False``: could not be read)."""
        return self.why_unread("processes") is None and self.why_unread("handle") is None

    def memory_words(self) -> str:
        """Device memory in words: ``"3221225472 of 25769803776 bytes used"`` or unknown.

        Returns:
            The figures, or ``"memory unknown (NVML: Not Supported)"`` (H-18).
        """
        if self.memory_total_bytes is None or self.memory_used_bytes is None:
            reason = self.why_unread("memory") or self.why_unread("handle") or "not read"
            return f"memory unknown (NVML: {reason})"
        return f"{self.memory_used_bytes} of {self.memory_total_bytes} bytes used"


@dataclass(frozen=True)
class NvmlSnapshot:
    """One NVML reading of every GPU.

    Attributes:
        available: ``False`` when NVML is missing or failed; then ``reason`` says why and
            ``gpus`` is empty.
        reason: one line in words, e.g. ``"no NVIDIA driver found (NVML: Driver Not
            Loaded)"``; ``None`` when available.
        driver_version: e.g. ``"535.104.05"`` (H-06: decoded from bytes when needed).
        gpus: readings in NVML (PCI) order, one per GPU NVML counts (H-18: a GPU whose
            readings fail is kept, so ``gpus[i].index == i``).
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


def _process_list(infos: Any, mig_uuid: str | None) -> list[GpuProcess]:
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
        out.append(GpuProcess(pid=pid, used_bytes=used, name=_process_name(pid), mig_uuid=mig_uuid))
    return out


def _read_processes(
    nvml: Any, handle: Any, migs: tuple[tuple[str, Any], ...]
) -> tuple[tuple[GpuProcess, ...], str | None]:
    """Compute processes of one GPU and, when they cannot be listed, why.

    On a GPU in MIG mode NVML gives the whole GPU's list only to a privileged caller;
    each instance's own handle lists the processes on that instance, so the instances
    are read first and the whole GPU only when one of them fails.

    Returns:
        ``(processes, None)``, or ``((), reason)`` when NVML could not list them (never
        "none" for "could not tell").
    """
    errors_or_odd: tuple[type[BaseException], ...] = (*_nvml_errors(nvml), TypeError, ValueError)
    reasons: list[str] = []
    if migs:
        per_instance: list[GpuProcess] = []
        try:
            for mig_uuid, mig in migs:
                per_instance.extend(
                    _process_list(nvml.nvmlDeviceGetComputeRunningProcesses(mig), mig_uuid)
                )
        except errors_or_odd as exc:
            reasons.append(f"MIG instance: {_nvml_error_text(exc)}")
        else:
            return tuple(per_instance), None
    try:
        return tuple(_process_list(nvml.nvmlDeviceGetComputeRunningProcesses(handle), None)), None
    except errors_or_odd as exc:
        reasons.insert(0, _nvml_error_text(exc))
    return (), "; ".join(reasons)


def _read_migs(nvml: Any, handle: Any) -> tuple[tuple[str, Any], ...]:
    """``(uuid, handle)`` of the MIG instances of one GPU; ``()`` when MIG is off."""
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
            out.append((decode_nvml_str(nvml.nvmlDeviceGetUUID(mig)), mig))
        except errors:
            continue  # an empty slot raises NotFound
    return tuple(out)


def _read_gpu(nvml: Any, i: int) -> GpuReading:
    """Every reading of GPU ``i``, each failing alone (H-18); never raises NVML errors."""
    errors_or_odd: tuple[type[BaseException], ...] = (*_nvml_errors(nvml), TypeError, ValueError)
    unread: list[tuple[str, str]] = []
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
    except errors_or_odd as exc:
        reason = _nvml_error_text(exc)
        return GpuReading(i, None, None, None, None, (), unread=(("handle", reason),))
    uuid: str | None = None
    name: str | None = None
    total: int | None = None
    used: int | None = None
    util: int | None = None
    clock: int | None = None
    try:
        uuid = decode_nvml_str(nvml.nvmlDeviceGetUUID(handle))
    except errors_or_odd as exc:
        unread.append(("uuid", _nvml_error_text(exc)))
    try:
        name = decode_nvml_str(nvml.nvmlDeviceGetName(handle))
    except errors_or_odd as exc:
        unread.append(("name", _nvml_error_text(exc)))
    try:
        mem = nvml.nvmlDeviceGetMemoryInfo(handle)
        total, used = int(mem.total), int(mem.used)
    except errors_or_odd as exc:  # "Not Supported" on some GPUs and vGPUs (H-18)
        total = used = None
        unread.append(("memory", _nvml_error_text(exc)))
    try:
        util = int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except errors_or_odd as exc:
        unread.append(("utilization", _nvml_error_text(exc)))
    try:
        clock = int(nvml.nvmlDeviceGetClockInfo(handle, getattr(nvml, "NVML_CLOCK_SM", 1)))
    except errors_or_odd as exc:
        unread.append(("sm_clock", _nvml_error_text(exc)))
    migs = _read_migs(nvml, handle)
    processes, why = _read_processes(nvml, handle, migs)
    if why is not None:
        unread.append(("processes", why))
    return GpuReading(
        index=i,
        uuid=uuid,
        name=name,
        memory_total_bytes=total,
        memory_used_bytes=used,
        processes=processes,
        mig_uuids=tuple(u for u, _ in migs),
        utilization_percent=util,
        sm_clock_mhz=clock,
        unread=tuple(unread),
    )


def read_nvml(nvml: Any | None = None) -> NvmlSnapshot:
    """Read driver version and every GPU (memory, processes) through NVML; never raises.

    Args:
        nvml: a pynvml-like module (``nvmlInit``, ``nvmlShutdown``,
            ``nvmlSystemGetDriverVersion``, ``nvmlDeviceGetCount``,
            ``nvmlDeviceGetHandleByIndex``, ``nvmlDeviceGetUUID``, ``nvmlDeviceGetName``,
            ``nvmlDeviceGetMemoryInfo``, ``nvmlDeviceGetComputeRunningProcesses``;
            optional: ``nvmlDeviceGetUtilizationRates``, ``nvmlDeviceGetClockInfo``,
            the MIG calls); injectable for tests. Default: ``pynvml`` from nvidia-ml-py.

    Returns:
        A snapshot; when NVML cannot be imported, initialised or read, ``available`` is
        ``False`` with the reason in words (H-07). After a good init every GPU NVML
        counts is kept at its index; a reading NVML cannot give is ``None`` with its
        reason in :attr:`GpuReading.unread` (H-18), the other readings are kept.
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
        gpus = tuple(_read_gpu(nvml, i) for i in range(count))
        return NvmlSnapshot(True, None, driver, gpus)
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
        cgroup_limit_bytes: the tightest memory limit on this process's own cgroup and
            its ancestors (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``, H-19), else
            ``None`` (no limit / not in a cgroup / unreadable).
        cgroup_path: this process's cgroup as ``/proc/self/cgroup`` names it, e.g.
            ``"/job/abc"``; ``None`` when unknown.
    """

    total_bytes: int
    available_bytes: int
    used_bytes: int
    swap_total_bytes: int
    swap_used_bytes: int
    cgroup_limit_bytes: int | None
    cgroup_path: str | None = None

    @property
    def limit_bytes(self) -> int:
        """What this process may use: the container limit when tighter than host RAM."""
        if self.cgroup_limit_bytes is not None and self.cgroup_limit_bytes < self.total_bytes:
            return self.cgroup_limit_bytes
        return self.total_bytes

    @property
    def container_limited(self) -> bool:
        """Whether a container (cgroup) limit is tighter than the host RAM (H-19)."""
        return self.cgroup_limit_bytes is not None and self.cgroup_limit_bytes < self.total_bytes

    def limit_words(self) -> str:
        """The memory limit in words, e.g. ``"container limit 1073741824 bytes (cgroup…)"``.

        Returns:
            The container limit, saying it is one and tighter than host RAM; or that the
            host RAM is the limit (no container limit, or a looser one).
        """
        where = f" (cgroup {self.cgroup_path})" if self.cgroup_path else ""
        if self.container_limited:
            return (f"container limit {self.cgroup_limit_bytes} bytes{where}, "
                    f"tighter than host RAM {self.total_bytes} bytes")
        if self.cgroup_limit_bytes is not None:
            return (f"host RAM {self.total_bytes} bytes is the limit (container limit "
                    f"{self.cgroup_limit_bytes} bytes{where} is looser)")
        return f"host RAM {self.total_bytes} bytes is the limit (no container memory limit)"


_PROC = Path("/proc")
_CGROUP = Path("/sys/fs/cgroup")
#: cgroup v1 writes a huge number (PAGE_COUNTER_MAX pages, ~2**63) for "no limit".
_V1_UNLIMITED = 2**60


def own_cgroup(proc_root: Path = _PROC) -> tuple[str, str] | None:
    """This process's memory cgroup from ``<proc_root>/self/cgroup`` (H-19).

    Args:
        proc_root: the ``/proc`` folder (injectable for tests).

    Returns:
        ``("v1", path)`` from the line whose controllers include ``memory`` (cgroup v1,
        also in hybrid mode where memory stays on v1), else ``("v2", path)`` from the
        unified ``0::/path`` line; ``None`` when the file is unreadable or has neither.
    """
    try:
        text = (proc_root / "self" / "cgroup").read_text()
    except OSError:
        return None
    v2: str | None = None
    for line in text.splitlines():
        hier, sep1, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not (sep1 and sep2):
            continue
        if "memory" in controllers.split(","):
            return "v1", path.strip() or "/"
        if hier == "0" and controllers == "":
            v2 = path.strip() or "/"
    return ("v2", v2) if v2 is not None else None


def _limit_in(path: Path, unlimited_from: int | None) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:  # the root cgroup has no limit file; a hidden or vanished cgroup
        return None
    if not text or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    if value < 0 or (unlimited_from is not None and value >= unlimited_from):
        return None
    return value


def _cgroup_levels(mount: Path, path: str) -> list[Path]:
    """The cgroup folder of ``path`` under ``mount`` and each ancestor up to ``mount``.

    Inside a container the mount is often the container's own cgroup while ``path``
    still names it from the host's root: the walk then starts at the deepest folder
    that exists.
    """
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    levels = [mount.joinpath(*parts[:k]) for k in range(len(parts), -1, -1)]
    existing = [lv for lv in levels if lv.is_dir()]
    if not existing:
        return [mount]
    return levels[levels.index(existing[0]):]


def read_cgroup_limit(proc_root: Path = _PROC, cgroup_root: Path = _CGROUP) -> int | None:
    """The tightest memory limit on this process's own cgroup, in bytes (H-19).

    The cgroup is the one ``<proc_root>/self/cgroup`` names (not the cgroup root); the
    limit is the smallest one from that cgroup up to the root of the hierarchy, as the
    kernel enforces each of them. cgroup v2: ``memory.max`` under ``cgroup_root``
    (``max`` = no limit); v1: ``memory.limit_in_bytes`` under ``cgroup_root/memory``
    (a huge value, ≥ 2**60, = no limit).

    Args:
        proc_root: the ``/proc`` folder (injectable for tests).
        cgroup_root: where the cgroup filesystem is mounted (``/sys/fs/cgroup``).

    Returns:
        The limit in bytes, or ``None`` when no level has one or nothing is readable;
        never raises.
    """
    own = own_cgroup(proc_root)
    if own is None:
        return None
    kind, path = own
    if kind == "v2":
        mounts, name, unlimited = [cgroup_root], "memory.max", None
    else:
        mounts, name, unlimited = [cgroup_root / "memory"], "memory.limit_in_bytes", _V1_UNLIMITED
        try:  # v1 may mount memory together with other controllers, e.g. "memory,cpu"
            mounts += sorted(p for p in cgroup_root.iterdir()
                             if "memory" in p.name.split(",") and p.name != "memory")
        except OSError:
            pass
    mount = next((m for m in mounts if m.is_dir()), None)
    if mount is None:
        return None
    limits = [v for lv in _cgroup_levels(mount, path)
              if (v := _limit_in(lv / name, unlimited)) is not None]
    return min(limits) if limits else None


def read_host_memory(proc_root: Path = _PROC, cgroup_root: Path = _CGROUP) -> HostMemory:
    """Host memory now (psutil) with the container limit of this process's cgroup (H-19).

    Args:
        proc_root: the ``/proc`` folder (injectable for tests).
        cgroup_root: where the cgroup filesystem is mounted.

    Returns:
        The reading; :meth:`HostMemory.limit_words` says which limit applies.
    """
    import psutil

    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    own = own_cgroup(proc_root)
    return HostMemory(
        total_bytes=int(vm.total),
        available_bytes=int(vm.available),
        used_bytes=int(vm.total - vm.available),
        swap_total_bytes=int(sw.total),
        swap_used_bytes=int(sw.used),
        cgroup_limit_bytes=read_cgroup_limit(proc_root, cgroup_root),
        cgroup_path=own[1] if own else None,
    )


#: How a torch device was matched to a physical GPU (:attr:`VisibleDevice.by`).
BY_UUID = "uuid"
BY_POSITION = "position"


@dataclass(frozen=True)
class VisibleDevice:
    """Torch's ``cuda:N`` mapped to a physical GPU (H-05).

    Attributes:
        torch_index: ``N`` in ``cuda:N`` (position in ``CUDA_VISIBLE_DEVICES``).
        physical_index: NVML (PCI-order) index, ``None`` when it cannot be resolved.
        uuid: the physical GPU's UUID, ``None`` when unknown.
        name: its model name, ``None`` when unknown.
        gpu: the full NVML reading, ``None`` when unknown.
        by: :data:`BY_UUID` when a UUID names the GPU, :data:`BY_POSITION` when an index
            or the order does (right only if CUDA numbers GPUs as NVML does, i.e.
            ``CUDA_DEVICE_ORDER=PCI_BUS_ID``).
    """

    torch_index: int
    physical_index: int | None
    uuid: str | None
    name: str | None
    gpu: GpuReading | None = None
    by: str = BY_POSITION


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
        indices are kept as given and the rest is ``None``. A GPU whose readings failed
        is still at its index (H-18): the map neither shifts nor stops there.
    """
    env = os.environ if env is None else env
    snap = snapshot if snapshot is not None else read_nvml()
    entries = parse_visible_devices(env.get("CUDA_VISIBLE_DEVICES"))
    gpus = list(snap.gpus)
    by_index = {g.index: g for g in gpus}
    if entries is None:
        count = max(by_index, default=-1) + 1
        return tuple(
            VisibleDevice(n, n, g.uuid if g else None, g.name if g else None, g)
            for n in range(count)
            for g in (by_index.get(n),)
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
                by=BY_POSITION if entry.isdigit() else BY_UUID,
            )
        )
    return tuple(out)


def _gpu_for_uuid_entry(entry: str, gpus: list[GpuReading]) -> tuple[GpuReading | None, str | None]:
    """The physical GPU for one UUID entry of ``CUDA_VISIBLE_DEVICES`` (H-05).

    The entry may be a unique prefix, as CUDA accepts; the MIG instance's UUID is
    returned too when the entry names one. A GPU whose UUID NVML could not read matches
    nothing.

    ``GPU-…`` names a GPU; ``MIG-…`` a MIG instance (matched against each GPU's
    instances); the CUDA 11.0-11.x form ``MIG-GPU-<gpu uuid>/<gi>/<ci>`` names an instance
    of that GPU.
    """
    low = entry.lower()
    if low.startswith("mig-gpu-"):
        parent = low[len("mig-"):].split("/", 1)[0]
        found = [g for g in gpus if g.uuid and g.uuid.lower().startswith(parent)]
        return (found[0], entry) if len(found) == 1 else (None, None)
    if low.startswith("mig-"):
        hits = [(g, m) for g in gpus for m in g.mig_uuids if m.lower().startswith(low)]
        return hits[0] if len(hits) == 1 else (None, None)
    found = [g for g in gpus if g.uuid and g.uuid.lower().startswith(low)]
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
        for candidate in (*((g.uuid,) if g.uuid else ()), *g.mig_uuids):
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


def torch_device_uuid(torch: Any, device: str) -> str | None:
    """Torch's own UUID of ``device``, or ``None`` when this torch cannot give one.

    ``torch.cuda.get_device_properties(d).uuid`` exists from torch 1.10 (CUDA); older
    builds, ROCm builds of some versions and failures give ``None`` and the mapping to
    a physical GPU is then by position (:func:`map_torch_device`).

    Args:
        torch: the ``torch`` module (passed in: this module never imports it).
        device: e.g. ``"cuda:1"``.

    Returns:
        The UUID as torch writes it (bare hex, or ``GPU-…``/``MIG-…``), or ``None``.
    """
    try:
        value = torch.cuda.get_device_properties(torch.device(device)).uuid
    except (RuntimeError, AssertionError, AttributeError):
        # RuntimeError: a CUDA error or a bad device string; AssertionError: torch's
        # "Invalid device id" / "not compiled with CUDA"; AttributeError: no ``uuid``
        # in this torch build's device properties.
        return None
    return str(value) or None


@dataclass(frozen=True)
class GpuMapping:
    """The physical GPU behind a torch device and how it was found (H-05, H-18).

    Attributes:
        uuid: the GPU's (or MIG instance's) UUID as NVML writes it, else torch's.
        physical_index: NVML (PCI-order) index, ``None`` when unresolved.
        by: :data:`BY_UUID` (a UUID names it: torch's own, or one in
            ``CUDA_VISIBLE_DEVICES``), :data:`BY_POSITION` (an index or the order: right
            only if CUDA numbers GPUs as NVML does), or ``"unresolved"``.
    """

    uuid: str | None
    physical_index: int | None
    by: str

    def words(self) -> str:
        """How the mapping was made, in words, for the environment record."""
        if self.by == BY_UUID:
            return "by UUID"
        if self.by == BY_POSITION:
            return ("by position (no device UUID from torch matched NVML; right only if "
                    "CUDA_DEVICE_ORDER=PCI_BUS_ID)")
        return "unresolved"


def map_torch_device(device: str, torch_uuid: str | None, snapshot: NvmlSnapshot,
                     env: Mapping[str, str] | None = None) -> GpuMapping:
    """The physical GPU behind ``device``: by torch's UUID first, else by position.

    Args:
        device: e.g. ``"cuda:1"``.
        torch_uuid: :func:`torch_device_uuid`'s answer (``None``: torch too old).
        snapshot: an NVML reading.
        env: environment (default ``os.environ``) for ``CUDA_VISIBLE_DEVICES``.

    Returns:
        The mapping with how it was made; ``by`` says "position" when torch gave no UUID
        (or NVML does not know it) and an index or the order decided.
    """
    if torch_uuid:
        gpu, nvml_uuid = gpu_for_uuid(torch_uuid, snapshot)
        if gpu is not None:
            return GpuMapping(nvml_uuid, gpu.index, BY_UUID)
    fallback = None
    if torch_uuid:
        fallback = torch_uuid if torch_uuid.upper().startswith(("GPU-", "MIG-")) else f"GPU-{torch_uuid}"
    phys = device_for(device, env, snapshot=snapshot)
    if phys is None:
        return GpuMapping(fallback, None, "unresolved")
    if phys.physical_index is None:
        return GpuMapping(phys.uuid or fallback, None, "unresolved")
    return GpuMapping(phys.uuid or fallback, phys.physical_index, phys.by)


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
            that are not ours, on the GPUs whose processes NVML could list.
        nvml_reason: why GPU processes are unknown, when NVML is unavailable.
        unlisted_gpus: ``(physical_gpu_index, reason)`` of the GPUs whose processes NVML
            could not list (MIG without privileges, some containers): unknown, not none.
        listed_gpus: physical indices of the GPUs whose processes NVML did list.
    """

    host_cpu_percent: float | None
    other_gpu_processes: tuple[tuple[int, int, int | None], ...]
    nvml_reason: str | None
    unlisted_gpus: tuple[tuple[int, str], ...] = ()

    listed_gpus: tuple[int, ...] = ()

    @property
    def gpu_processes_known(self) -> bool:
        """Whether NVML listed the processes of every GPU (so "none" means none)."""
        return not self.nvml_reason and not self.unlisted_gpus

    def describe(self) -> str:
        """One line in words, e.g. ``host CPU 12%; other GPU processes: none``.

        "none" only when NVML listed every GPU's processes; a GPU it could not list
        reads "unknown on GPU 1 (NVML could not list them: reason)".
        """
        cpu = "unknown" if self.host_cpu_percent is None else f"{self.host_cpu_percent:.0f}%"
        if self.nvml_reason:
            return f"host CPU {cpu}; other GPU processes: unknown ({self.nvml_reason})"
        parts = [
            f"pid {p} on GPU {i}" + (f" ({u} bytes)" if u is not None else "")
            for p, i, u in self.other_gpu_processes
        ]
        if not self.unlisted_gpus:
            return f"host CPU {cpu}; other GPU processes: {', '.join(parts) or 'none'}"
        busy = {i for _, i, _ in self.other_gpu_processes}
        quiet = [i for i in self.listed_gpus if i not in busy]
        if quiet:
            parts.append("none on GPU " + ", ".join(str(i) for i in quiet))
        parts += [f"unknown on GPU {i} (NVML could not list them: {why})"
                  for i, why in self.unlisted_gpus]
        return f"host CPU {cpu}; other GPU processes: {'; '.join(parts)}"


def read_concurrent_load(
    own_pids: set[int] | None = None,
    snapshot: NvmlSnapshot | None = None,
    interval_s: float = 0.1,
) -> ConcurrentLoad:
    """Host CPU % and the GPU processes other than ``own_pids`` (R10); never raises.

    A GPU whose processes NVML could not list (MIG without privileges, containers) is
    reported as unknown with the reason, never as "none".
    """
    own = own_pids or {os.getpid()}
    snap = snapshot if snapshot is not None else read_nvml()
    others = tuple(
        (p.pid, g.index, p.used_bytes)
        for g in snap.gpus
        for p in g.processes
        if p.pid not in own
    )
    unlisted = tuple(
        (g.index, g.why_unread("handle") or g.why_unread("processes") or "not read")
        for g in snap.gpus
        if not g.processes_known
    )
    return ConcurrentLoad(
        host_cpu_percent=host_cpu_percent(interval_s),
        other_gpu_processes=others,
        nvml_reason=None if snap.available else snap.reason,
        unlisted_gpus=unlisted,
        listed_gpus=tuple(g.index for g in snap.gpus if g.processes_known),
    )


__all__ = [
    "BY_POSITION",
    "BY_UUID",
    "GPU_READINGS",
    "ConcurrentLoad",
    "GpuMapping",
    "GpuProcess",
    "GpuReading",
    "HostMemory",
    "NvmlSnapshot",
    "VisibleDevice",
    "decode_nvml_str",
    "device_for",
    "gpu_for_uuid",
    "host_cpu_percent",
    "map_torch_device",
    "own_cgroup",
    "parse_visible_devices",
    "read_cgroup_limit",
    "read_concurrent_load",
    "read_host_memory",
    "read_nvml",
    "torch_device_uuid",
    "visible_device_map",
]
