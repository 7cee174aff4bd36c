"""The one module that opens NVML: init/shutdown, device handles and every reading.

Who calls it: the memory pane's poller (through :class:`NvmlSession`, NVML kept open for
the pane's life), the header and checklist probes and the worker (:func:`read_nvml`, one
reading each), the worker's clock reader (:func:`read_clocks`, right before the runs),
the worker's run meter (:class:`RunMeter`: energy and clocks at each measured run's
boundaries, outside the timed region), and :mod:`gpusession.core.gpu.devices` (the
snapshot it maps torch devices onto). M5: the UI process never creates a CUDA context,
so live device figures come from here. Why one
module: NVML is opened in one place, :func:`open_nvml` (the only ``nvmlInit`` call of
gpusession, paired with :func:`close_nvml`'s ``nvmlShutdown``), and a test checks so.
A reading that reads once goes through :func:`nvml_query` (open, read, shut down);
a poller or a meter keeps NVML open between :func:`open_nvml` and :func:`close_nvml`.
Either way, NVML that does not open is an :class:`Unread` (why, in words), never an
exception.

Every reader *never raises*: inside containers NVML is often missing or fails (H-07), so
a failure gives ``available=False`` with the reason in words, and the caller shows the
reason beside the empty fields. Once NVML answers, each reading of each GPU fails alone
(H-18): a GPU is never dropped, its unread fields are ``None`` (never 0) with the reason,
and a process list NVML could not read is "unknown", not "none". Each GPU is named by its
UUID first (H-05: NVML's PCI order is not torch's); :func:`read_clocks` looks the GPU up
by UUID before its index. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from gpusession.core.gpu.host import in_container, possible_pid, process_name
from gpusession.core.records.energy import energy_note


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
    foreign: bool = False

    @property
    def readable(self) -> bool:
        """Whether NVML's PID can be a process (0 or 4294967295 cannot: H-33)."""
        return possible_pid(self.pid)

    def words(self) -> str:
        """``pid 123 python``; ``host PID 123, not visible from this container``; or ``unreadable``.

        A PID that cannot exist is never named nor counted as a process (H-33); in a
        container a host PID is never named from a local lookup (``foreign``).
        """
        if not self.readable:
            return f"unreadable process (NVML gave PID {self.pid}, which no process can have)"
        if self.foreign:
            return f"process not visible from this container (host PID {self.pid})"
        return f"pid {self.pid} {self.name or '(name unknown)'}"


@dataclass(frozen=True)
class MigReading:
    """One MIG instance's memory, read on the instance's own handle.

    Why its own handle: NVML refuses the parent GPU's memory to an unprivileged caller
    when MIG is on, and the parent's figures are not the instance's anyway.

    Attributes:
        uuid: ``"MIG-…"`` as NVML writes it.
        memory_total_bytes, memory_used_bytes: the instance's memory in bytes; ``None``
            when NVML could not read it (then ``reason`` says why), never 0.
        reason: NVML's words when the memory is unread, else ``None``.
    """

    uuid: str
    memory_total_bytes: int | None
    memory_used_bytes: int | None
    reason: str | None = None


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
    migs: tuple[MigReading, ...] = ()

    def mig(self, uuid: str) -> MigReading | None:
        """The MIG instance ``uuid`` (``"MIG-…"``, case-insensitive) of this GPU, else ``None``."""
        for m in self.migs:
            if m.uuid.lower() == uuid.lower():
                return m
        return None

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
            said = f"memory unknown (NVML: {reason})"
            read = [m for m in self.migs if m.memory_used_bytes is not None]
            if read:  # the instances' own figures, when the whole GPU's are refused
                said += "; " + ", ".join(f"MIG instance {m.uuid}: {m.memory_used_bytes} of "
                                         f"{m.memory_total_bytes} bytes used" for m in read)
            return said
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


def _process_list(infos: Any, mig_uuid: str | None) -> list[GpuProcess]:
    out = []
    foreign = in_container()  # NVML's PIDs are the host's: never named from here
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
        out.append(GpuProcess(pid=pid, used_bytes=used, name=None if foreign or not possible_pid(pid) else process_name(pid),
                              mig_uuid=mig_uuid, foreign=foreign))
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


def _memory_info(nvml: Any, handle: Any) -> tuple[int, int]:
    """``(total_bytes, used_bytes)`` of one GPU or MIG instance, by NVML's v2 call first.

    Why v2: on R510+ drivers v1's "used" includes the memory the driver reserves, so an
    idle GPU does not read as idle and disagrees with ``nvidia-smi``; v2 keeps that apart
    (``reserved``). Bindings without ``nvmlMemory_v2`` (or without its ``version``
    argument) and drivers without ``nvmlDeviceGetMemoryInfo_v2`` are read with v1.

    Raises:
        what v1 raises (an NVML error, ``TypeError``/``ValueError`` for odd figures).
    """
    version = getattr(nvml, "nvmlMemory_v2", None)
    if version is not None:
        odd: tuple[type[BaseException], ...] = (*_nvml_errors(nvml), TypeError, ValueError)
        try:
            mem = nvml.nvmlDeviceGetMemoryInfo(handle, version=version)
            return int(mem.total), int(mem.used)
        except odd:
            pass  # old bindings (no ``version``) or a driver without v2: v1 below
    mem = nvml.nvmlDeviceGetMemoryInfo(handle)
    return int(mem.total), int(mem.used)


def _mig_memory(nvml: Any, uuid: str, handle: Any) -> MigReading:
    """One MIG instance's memory on its own handle; unread with NVML's words on failure."""
    odd: tuple[type[BaseException], ...] = (*_nvml_errors(nvml), TypeError, ValueError)
    try:
        total, used = _memory_info(nvml, handle)
    except odd as exc:
        return MigReading(uuid, None, None, _nvml_error_text(exc))
    return MigReading(uuid, total, used)


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
        total, used = _memory_info(nvml, handle)
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
    mig_readings = tuple(_mig_memory(nvml, u, h) for u, h in migs)
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
        migs=mig_readings,
    )


def _read_open(nvml: Any) -> NvmlSnapshot:
    """Driver version and every GPU, NVML already initialised; never raises NVML errors."""
    errors = _nvml_errors(nvml)
    # with an int() of a field that is not a number (a count, a memory figure)
    errors_or_odd: tuple[type[BaseException], ...] = (*errors, TypeError, ValueError)
    try:
        driver: str | None = decode_nvml_str(nvml.nvmlSystemGetDriverVersion())
    except errors:
        driver = None
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except errors_or_odd as exc:
        return NvmlSnapshot(False, f"NVML could not count GPUs ({_nvml_error_text(exc)})", driver, ())
    return NvmlSnapshot(True, None, driver, tuple(_read_gpu(nvml, i) for i in range(count)))


#: NVML_ERROR_LIB_RM_VERSION_MISMATCH: the library is not the loaded kernel driver's.
LIB_RM_VERSION_MISMATCH = 18


def _is_mismatch(exc: BaseException) -> bool:
    return (getattr(exc, "value", None) == LIB_RM_VERSION_MISMATCH
            or type(exc).__name__ == "NVMLError_LibRmVersionMismatch")


def init_failure_words(exc: BaseException) -> str:
    """Why ``nvmlInit`` failed, in words (H-07): no driver, or a driver/library mismatch.

    Why: a driver updated without a reboot (or a container's ``libnvidia-ml`` that is
    not the host driver's) fails with "RM has detected an NVML/RM version mismatch";
    saying "no NVIDIA driver found" then sends the renter to the wrong fix.

    Args:
        exc: what ``nvmlInit`` raised (pynvml's ``NVMLError_LibRmVersionMismatch``, or
            any ``NVMLError`` with ``value`` 18).

    Returns:
        e.g. ``"NVIDIA driver/library version mismatch (NVML: …): …"`` or
        ``"no NVIDIA driver found (NVML: Driver Not Loaded)"``.
    """
    return _start_words(_nvml_error_text(exc), _is_mismatch(exc))


def _start_words(text: str, mismatch: bool) -> str:
    if mismatch:
        return (f"NVIDIA driver/library version mismatch (NVML: {text}): the driver was updated "
                "without a reboot, or this container's NVML library is not the host driver's")
    return f"no NVIDIA driver found (NVML: {text})"


@dataclass(frozen=True)
class Unread:
    """NVML did not open for a reading: the typed "not read, and why" (H-07).

    Why a value, not an exception: every reader here never raises (inside containers
    NVML is often missing), and a poller keeps this one value instead of a chained
    exception per tick.

    Attributes:
        stage: ``"bindings"`` (``pynvml`` from nvidia-ml-py not importable) or
            ``"start"`` (``nvmlInit`` failed: no driver, a driver/library mismatch).
        error: what the bindings said (the exception's text; its class name when empty).
        error_type: the exception's class name (``"NVMLError_DriverNotLoaded"``).
        mismatch: the library is not the loaded kernel driver's version (H-07).
    """

    stage: Literal["bindings", "start"]
    error: str
    error_type: str
    mismatch: bool = False

    @classmethod
    def of(cls, stage: Literal["bindings", "start"], exc: BaseException) -> Unread:
        """The unread reading ``exc`` gave at ``stage`` (the exception is not kept)."""
        return cls(stage, _nvml_error_text(exc), type(exc).__name__, _is_mismatch(exc))

    @property
    def why(self) -> str:
        """``"NVML bindings not installed (…)"``, ``"no NVIDIA driver found (NVML: …)"`` or the mismatch."""
        if self.stage == "bindings":
            return f"NVML bindings not installed ({self.error})"
        return _start_words(self.error, self.mismatch)

    def snapshot(self) -> NvmlSnapshot:
        """The unavailable snapshot that says why (``available=False``)."""
        return NvmlSnapshot(False, self.why, None, ())


def open_nvml(nvml: Any | None = None) -> Any:
    """NVML ready to read: the bindings with ``nvmlInit`` done, or the :class:`Unread` why not.

    The one ``nvmlInit`` call of gpusession; each opened library is closed by
    :func:`close_nvml` (a reading that reads once uses :func:`nvml_query`, which pairs them).

    Args:
        nvml: a pynvml-like module (see :func:`read_nvml`); ``None`` imports ``pynvml``.

    Returns:
        The opened bindings, or an :class:`Unread` (never raises): the bindings are not
        importable, or ``nvmlInit`` failed in any way (pynvml's ``NVMLError``, a fake's
        own error, ctypes' ``OSError``).
    """
    if nvml is None:
        try:
            nvml = _import_pynvml()
        except (ImportError, OSError) as exc:  # not installed, or a broken install
            return Unread.of("bindings", exc)
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - any failure to start NVML is an unread reading, said so (H-07)
        return Unread.of("start", exc)
    return nvml


def close_nvml(nvml: Any) -> None:
    """Shut down what :func:`open_nvml` opened; best effort (NVML shuts down with the process)."""
    try:
        nvml.nvmlShutdown()
    except Exception:  # noqa: BLE001, S110 - shutting NVML down is best effort
        pass


_T = TypeVar("_T")


def nvml_query(read: Callable[[Any], _T], nvml: Any | None = None) -> _T | Unread:
    """One reading: open NVML, ``read(bindings)``, shut NVML down; :class:`Unread` if it did not open.

    Why: a probe that reads once (the header, the checklist, the worker, the host check)
    opens NVML once for the whole reading, in one place.

    Args:
        read: reads what it needs from the opened bindings; its own NVML failures are
            its to word (each figure fails alone, H-18).
        nvml: a pynvml-like module; ``None`` imports ``pynvml``.
    """
    lib = open_nvml(nvml)
    if isinstance(lib, Unread):
        return lib
    try:
        return read(lib)
    finally:
        close_nvml(lib)


def read_nvml(nvml: Any | None = None) -> NvmlSnapshot:
    """Read driver version and every GPU (memory, processes) through NVML; never raises.

    NVML is initialised for this one reading and shut down after it: right for a probe
    that reads once (the header, the checklist, the worker); a poller keeps NVML open
    with :class:`NvmlSession` instead.

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
    got = nvml_query(_read_open, nvml)
    return got.snapshot() if isinstance(got, Unread) else got


class NvmlSession:
    """NVML opened once and kept open for a poller's life (one ``nvmlInit`` in total).

    Why: :func:`read_nvml` initialises and shuts NVML down on every call; once a second
    that costs CPU on a real GPU host (``nvmlInit`` enumerates the devices). The first
    :meth:`read` initialises NVML; a failure is remembered as its snapshot (the reason
    stays shown, and nothing is raised or chained per reading, so an idle poller keeps
    nothing per tick); :meth:`close` shuts NVML down once at the end. One thread at a
    time may call :meth:`read` (the memory pane's poller thread).

    Args:
        nvml: a pynvml-like object (see :func:`read_nvml`); ``None`` imports ``pynvml``
            (nvidia-ml-py) at the first reading.
    """

    def __init__(self, nvml: Any | None = None) -> None:
        """Nothing is opened yet: NVML starts at the first :meth:`read`."""
        self._nvml: Any = nvml
        self._open = False
        self._failed: NvmlSnapshot | None = None

    @property
    def failed(self) -> NvmlSnapshot | None:
        """The snapshot NVML's failure to start gave (H-07), ``None`` while none."""
        return self._failed

    def read(self) -> NvmlSnapshot:
        """One reading of every GPU with NVML kept open; never raises (H-07, H-18).

        Returns:
            The snapshot, as :func:`read_nvml` gives it; while NVML failed to start, the
            same unavailable snapshot each time (NVML is not asked again).
        """
        if self._failed is not None:
            return self._failed
        if not self._open:
            lib = open_nvml(self._nvml)
            if isinstance(lib, Unread):
                self._failed = lib.snapshot()
                return self._failed
            self._nvml, self._open = lib, True
        return _read_open(self._nvml)

    def close(self) -> None:
        """Shut NVML down if this session opened it; a later :meth:`read` opens it again."""
        if self._open:
            close_nvml(self._nvml)
        self._open = False
        self._failed = None


#: NVML clock event ("throttle") reason bits, in words.
THROTTLE_REASONS = {
    0x1: "GPU idle",
    0x2: "applications clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake slowdown",
    0x100: "display clock setting",
}


def throttle_words(bits: int) -> str:
    """NVML's clock event reason bits in words, ``"none"`` when none is active.

    Args:
        bits: e.g. ``0x44``.

    Returns:
        e.g. ``"software power cap, hardware thermal slowdown"``; unknown bits as
        ``"other (0x…)"``.
    """
    words = [w for b, w in THROTTLE_REASONS.items() if bits & b]
    unknown = bits & ~sum(THROTTLE_REASONS)
    if unknown:
        words.append(f"other (0x{unknown:x})")
    return ", ".join(words) or "none"


@dataclass(frozen=True)
class ClockReading:
    """How fast one GPU may run right now (R10): clock, throttle reasons, heat, power.

    Attributes:
        sm_clock_mhz: current SM clock in MHz; ``None`` unread.
        throttle_reasons: :func:`throttle_words`; ``None`` unread.
        temperature_c: GPU core temperature in degrees Celsius; ``None`` unread.
        power_w: board power draw in watts (NVML gives milliwatts); ``None`` unread.
        found_by: ``"uuid"`` or ``"index"``: how the GPU's handle was found (H-05);
            ``None`` when no handle was found.
        reason: why a figure is unread, ``"; "``-joined; ``None`` when all were read.
    """

    sm_clock_mhz: int | None
    throttle_reasons: str | None
    temperature_c: int | None = None
    power_w: float | None = None
    found_by: str | None = None
    reason: str | None = None

    def as_env(self) -> dict[str, Any]:
        """The worker's environment fields: ``sm_clock_mhz``, ``throttle_reasons``, ``clock_reason``."""
        return {"sm_clock_mhz": self.sm_clock_mhz, "throttle_reasons": self.throttle_reasons,
                "clock_reason": self.reason}


def _why(what: str, exc: BaseException) -> str:
    return f"{what}: {type(exc).__name__}: {exc}"


def _gpu_handle(lib: Any, index: int | None, uuid: str | None,
                problems: list[str]) -> tuple[Any, str | None]:
    """The handle of one GPU by UUID first (H-05), else by NVML index."""
    # A MIG instance's handle has no clocks of its own: its parent GPU is read by index.
    if uuid and uuid.upper().startswith("GPU-") and hasattr(lib, "nvmlDeviceGetHandleByUUID"):
        try:
            return lib.nvmlDeviceGetHandleByUUID(uuid), "uuid"
        except Exception as exc:  # noqa: BLE001 - NotFound, an old driver: the index decides
            problems.append(_why(f"GPU {uuid}", exc))
    if index is None:
        return None, None
    try:
        handle = lib.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:  # noqa: BLE001 - no handle for this index: every figure unread
        problems.append(_why(f"GPU {index}", exc))
        return None, None
    problems.clear()  # the index found it: a failed UUID lookup is no longer a reason
    return handle, "index"


def _read_figure(problems: list[str], what: str, call: Any) -> Any:
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - NotSupported, NoPermission…: unread, with the reason
        problems.append(_why(what, exc))
        return None


def read_clock_state(index: int | None, nvml: Any | None = None, *,
                     uuid: str | None = None) -> ClockReading:
    """SM clock, throttle reasons, temperature and power of one physical GPU now (R10).

    NVML is initialised for this reading and shut down after it. Why: the worker reads
    it once, right before the warm-up and the runs, for the environment record.

    Args:
        index: the GPU's NVML (PCI-order) index; ``None`` when it is not known.
        nvml: a pynvml-like module (``nvmlInit``, ``nvmlShutdown``,
            ``nvmlDeviceGetHandleByIndex``, ``nvmlDeviceGetClockInfo``,
            ``nvmlDeviceGetCurrentClocksEventReasons`` or
            ``nvmlDeviceGetCurrentClocksThrottleReasons``; optional
            ``nvmlDeviceGetHandleByUUID``, ``nvmlDeviceGetTemperature``,
            ``nvmlDeviceGetPowerUsage``); default ``pynvml``.
        uuid: the GPU's UUID (``"GPU-…"``) as NVML writes it; looked up first (H-05),
            the index only when the UUID is not given or not found.

    Returns:
        The reading; every figure NVML cannot give is ``None`` and ``reason`` says why
        (H-07). Never raises: any failure of the bindings (the fakes' own classes
        included) is an unread figure, said so.
    """
    if index is None and not uuid:
        return ClockReading(None, None, reason="the GPU's NVML index is not known")
    got = nvml_query(lambda lib: _clock_state_of(lib, index, uuid), nvml)
    if not isinstance(got, Unread):
        return got
    if got.stage == "bindings":
        return ClockReading(None, None, reason=got.why)
    said = got.why if got.mismatch else f"{got.error_type}: {got.error}"
    return ClockReading(None, None, reason=f"NVML could not start ({said})")


def _clock_state_of(lib: Any, index: int | None, uuid: str | None) -> ClockReading:
    """:func:`read_clock_state` with NVML open: each figure fails alone (H-18)."""
    problems: list[str] = []
    handle, found_by = _gpu_handle(lib, index, uuid, problems)
    if handle is None:
        return ClockReading(None, None, reason="; ".join(problems) or "the GPU's NVML index is not known")
    clock = _read_figure(problems, "SM clock", lambda: int(
        lib.nvmlDeviceGetClockInfo(handle, getattr(lib, "NVML_CLOCK_SM", 1))))
    get = (getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
           or getattr(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None))

    def reasons() -> str:
        if get is None:
            raise AttributeError("these NVML bindings cannot read throttle reasons")
        return throttle_words(int(get(handle)))

    throttle = _read_figure(problems, "throttle reasons", reasons)
    temperature = power = None
    if hasattr(lib, "nvmlDeviceGetTemperature"):
        temperature = _read_figure(problems, "temperature", lambda: int(
            lib.nvmlDeviceGetTemperature(handle, getattr(lib, "NVML_TEMPERATURE_GPU", 0))))
    if hasattr(lib, "nvmlDeviceGetPowerUsage"):
        power = _read_figure(problems, "power", lambda: int(lib.nvmlDeviceGetPowerUsage(handle)) / 1000)
    return ClockReading(clock, throttle, temperature, power, found_by, "; ".join(problems) or None)


def read_clocks(index: int | None, nvml: Any | None = None, *,
                uuid: str | None = None) -> dict[str, Any]:
    """:func:`read_clock_state` as the worker's environment fields (R10); never raises.

    Returns:
        ``sm_clock_mhz`` (int), ``throttle_reasons`` (words, ``"none"`` when none is
        active) and ``clock_reason`` (why a figure is unread, else ``None``).
    """
    return read_clock_state(index, nvml, uuid=uuid).as_env()


@dataclass(frozen=True)
class BoardReading:
    """How one GPU is fitted and set, as NVML says (D8): PCIe link, power limit, ECC, MIG.

    Attributes:
        index: NVML (PCI-order) index.
        uuid: ``"GPU-…"``; ``None`` when unread.
        pcie_generation, pcie_width: the PCIe link now (an idle GPU lowers its generation
            to save power); ``None`` unread.
        pcie_max_generation, pcie_max_width: the most the GPU and its slot allow.
        power_limit_w: the enforced power limit in watts (NVML gives milliwatts).
        ecc_on: ECC mode now; ``None`` when not supported or unread.
        mig_on: MIG mode now; ``None`` when not supported or unread.
        unread: ``"; "``-joined reasons of the figures NVML could not give, else ``None``.
        pci_device_id: the PCI device id (``0x2330``: an H100 SXM5), which tells a form
            factor the name may not (H-61); ``None`` unread (never a reason of its own:
            the name is the card's first word).
    """

    index: int
    uuid: str | None
    pcie_generation: int | None = None
    pcie_width: int | None = None
    pcie_max_generation: int | None = None
    pcie_max_width: int | None = None
    power_limit_w: float | None = None
    ecc_on: bool | None = None
    mig_on: bool | None = None
    unread: str | None = None
    pci_device_id: int | None = None


def _board_of(lib: Any, i: int) -> BoardReading:
    """The board figures of GPU ``i``, each failing alone (H-18)."""
    problems: list[str] = []
    try:
        handle = lib.nvmlDeviceGetHandleByIndex(i)
    except Exception as exc:  # noqa: BLE001 - no handle: every figure unread, said so
        return BoardReading(i, None, unread=_why(f"GPU {i}", exc))
    uuid = _read_figure(problems, "UUID", lambda: decode_nvml_str(lib.nvmlDeviceGetUUID(handle)))

    def num(what: str, name: str) -> int | None:
        value = _read_figure(problems, what, lambda: int(getattr(lib, name)(handle)))
        return value if isinstance(value, int) else None

    def mode(what: str, name: str) -> bool | None:
        pair = _read_figure(problems, what, lambda: getattr(lib, name)(handle))
        return None if pair is None else bool(int(pair[0]))

    limit_mw = num("power limit", "nvmlDeviceGetEnforcedPowerLimit")
    try:  # NVML: device id << 16 | vendor id (0x10de)
        pci_device_id: int | None = int(lib.nvmlDeviceGetPciInfo(handle).pciDeviceId) >> 16
    except Exception:  # noqa: BLE001 - unread: the form factor is then told by the name alone
        pci_device_id = None
    return BoardReading(
        i, uuid, num("PCIe generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
        num("PCIe width", "nvmlDeviceGetCurrPcieLinkWidth"),
        num("PCIe max generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
        num("PCIe max width", "nvmlDeviceGetMaxPcieLinkWidth"),
        None if limit_mw is None else limit_mw / 1000, mode("ECC mode", "nvmlDeviceGetEccMode"),
        mode("MIG mode", "nvmlDeviceGetMigMode"), "; ".join(problems) or None, pci_device_id)


def read_boards(nvml: Any | None = None) -> tuple[BoardReading, ...]:
    """PCIe link, power limit, ECC and MIG mode of every GPU, one NVML init (D8); never raises.

    Why: the host check keeps how the GPU is fitted beside the order, as evidence.

    Args:
        nvml: a pynvml-like module (``nvmlDeviceGetCurrPcieLinkGeneration`` / ``Width``,
            ``nvmlDeviceGetMaxPcieLinkGeneration`` / ``Width``,
            ``nvmlDeviceGetEnforcedPowerLimit``, ``nvmlDeviceGetEccMode``,
            ``nvmlDeviceGetMigMode``); default ``pynvml``.

    Returns:
        One reading per GPU in NVML order; ``()`` when NVML cannot start or count (the
        caller's :func:`read_nvml` says why). A figure NVML cannot give is ``None`` with
        its reason in :attr:`BoardReading.unread`.
    """
    got = nvml_query(_boards_of, nvml)
    return () if isinstance(got, Unread) else got  # no driver: read_nvml says why


def _boards_of(lib: Any) -> tuple[BoardReading, ...]:
    """Every GPU's board figures with NVML open; ``()`` when NVML cannot count (read_nvml says why)."""
    try:
        count = int(lib.nvmlDeviceGetCount())
        return tuple(_board_of(lib, i) for i in range(count))
    except Exception:  # noqa: BLE001 - NVML could not count: read_nvml says why
        return ()


#: Throttle reason bits that slow a run down (power and thermal); idle and settings are not.
SLOWING_REASONS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
#: NVML's idle bit: a clock below the application clock is then no slowdown.
IDLE_REASON = 0x1
#: What a run's notes say where the GPU has no energy counter (before Volta, some vGPUs).
ENERGY_UNSUPPORTED = "energy not supported by this GPU"
#: What a run's notes say when the counter did not move across it: NVML updates it every
#: few tens of milliseconds, so a shorter run reads 0 mJ that it did draw (never "0 J").
ENERGY_UNMOVED = "energy unread: the run was shorter than the counter's update"


@dataclass(frozen=True)
class RunEnergy:
    """The energy one measured run drew on every GPU it held, from NVML's counter.

    Attributes:
        energy_j: joules summed over the GPUs (NVML counts millijoules since the driver
            loaded, Volta and later); ``None`` when any GPU's counter is unread, never 0.
        per_gpu_j: ``(uuid or "GPU <index>", joules or None)`` per GPU, in the meter's order.
        reason: why ``energy_j`` is ``None``, in words; ``None`` when measured.
        unsupported: a GPU it held has no energy counter (NVML: not supported, before
            Volta): typed, so a reader never finds it in ``reason``'s words (A1).
    """

    energy_j: float | None
    per_gpu_j: tuple[tuple[str, float | None], ...] = ()
    reason: str | None = None
    unsupported: bool = False

    def words(self) -> str:
        """``"energy 123.4 J"``, or ``"energy not supported by this GPU (NVML: …)"`` and the like."""
        if self.energy_j is None:
            return self.reason or "energy not measured"
        return energy_note(self.energy_j)


@dataclass(frozen=True)
class RunClocks:
    """How each GPU a run held was clocked when the run ended (R10).

    Attributes:
        throttled: ``(gpu, words)`` for each GPU slowed at the end of the run (power or
            thermal reasons active, or the SM clock below the application clock while
            not idle); empty when none was.
        unread: ``(gpu, reason)`` for each GPU whose clocks NVML could not give.
    """

    throttled: tuple[tuple[str, str], ...] = ()
    unread: tuple[tuple[str, str], ...] = ()

    def words(self) -> str | None:
        """``"throttled at the end of the run: GPU-…: software power cap"``; ``None`` when not."""
        if not self.throttled:
            return None
        return "throttled at the end of the run: " + "; ".join(f"{g}: {w}" for g, w in self.throttled)


def _throttle_of(lib: Any, handle: Any) -> str | None:
    """The slowdown of one GPU now in words, ``None`` when it runs unslowed.

    Raises:
        what NVML raises for the reasons or the SM clock.
    """
    get = (getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
           or lib.nvmlDeviceGetCurrentClocksThrottleReasons)
    bits = int(get(handle))
    said = [throttle_words(bits & SLOWING_REASONS)] if bits & SLOWING_REASONS else []
    sm_type = getattr(lib, "NVML_CLOCK_SM", 1)
    sm = int(lib.nvmlDeviceGetClockInfo(handle, sm_type))
    try:
        app: int | None = int(lib.nvmlDeviceGetApplicationsClock(handle, sm_type))
    except Exception:  # noqa: BLE001 - no application clock here (NotSupported, old bindings): reasons only
        app = None
    if app and sm < app and not bits & IDLE_REASON:
        said.append(f"SM clock {sm} MHz below the application clock {app} MHz")
    return ", ".join(said) or None


class RunMeter:
    """NVML kept open over a worker's measured runs: energy and clocks at each boundary.

    Why: a run's energy is the difference of NVML's total-energy counter (millijoules)
    read right before and right after it, on every GPU it held, and its clocks at its
    end say whether it was throttled. Both are read outside the timed region, by the
    worker, between :class:`gpusession.bench.timing.SyncTimer` intervals. NVML opens at
    the first reading and :meth:`close` shuts it once. Never raises.

    Args:
        gpus: ``(nvml_index, uuid)`` of each GPU the workload held; the UUID (``GPU-…``)
            is looked up first (H-05), the index when it is not found.
        nvml: a pynvml-like module (``nvmlDeviceGetTotalEnergyConsumption``,
            ``nvmlDeviceGetClockInfo``, the reasons, optional
            ``nvmlDeviceGetApplicationsClock``); default ``pynvml``.
    """

    def __init__(self, gpus: list[tuple[int | None, str | None]], nvml: Any | None = None, *,
                 refused: str | None = None) -> None:
        """Nothing is opened yet: NVML starts at the first :meth:`start`.

        ``refused``: why this meter reads nothing (e.g. a group's ranks on several
        hosts); each run then says it instead of an energy figure, NVML never opened.
        """
        self.gpus = [] if refused else list(gpus)
        self._nvml: Any = nvml
        self._handles: list[tuple[str, Any]] | None = [] if refused else None
        self._why: str | None = refused
        #: the GPUs whose counter NVML said is not supported at a reading since the last :meth:`stop`
        self._no_counter: set[str] = set()

    def _open(self) -> list[tuple[str, Any]]:
        if self._handles is not None:
            return self._handles
        self._handles = []
        lib = open_nvml(self._nvml)
        if isinstance(lib, Unread):
            self._why = ("energy not measured: " + lib.why if lib.stage == "bindings"
                         else f"energy not measured: NVML could not start ({lib.why})")
            self._nvml = None
            return self._handles
        self._nvml = lib
        for index, uuid in self.gpus:
            if uuid and uuid.upper().startswith("MIG-"):
                # the parent's counter is the whole GPU's, other instances' draw included
                self._handles.append((uuid, None))
                continue
            problems: list[str] = []
            handle, _by = _gpu_handle(self._nvml, index, uuid, problems)
            self._handles.append((uuid or f"GPU {index}", handle))
        return self._handles

    def start(self) -> tuple[int | str, ...]:
        """Each GPU's energy counter now: millijoules, or why it is unread (words)."""
        out: list[int | str] = []
        for name, handle in self._open():
            if handle is None:
                out.append("energy not measured: a MIG instance has no energy counter of its own"
                           if name.upper().startswith("MIG-") else
                           "energy not measured: NVML has no handle for this GPU")
                continue
            try:
                out.append(int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle)))
            except Exception as exc:  # noqa: BLE001 - NotSupported before Volta, FunctionNotFound: said
                text = _nvml_error_text(exc)
                if "Not Supported" in text or "Function Not Found" in text:  # NVML's own words
                    self._no_counter.add(name)
                    out.append(f"{ENERGY_UNSUPPORTED} (NVML: {text})")
                else:
                    out.append(f"energy not measured (NVML: {text})")
        return tuple(out)

    def stop(self, before: tuple[int | str, ...]) -> tuple[RunEnergy, RunClocks]:
        """The run's energy since ``before`` (:meth:`start`) and each GPU's clocks now."""
        after = self.start()
        if not self._handles:
            return RunEnergy(None, (), self._why or "energy not measured: no GPU to read"), RunClocks()
        per: list[tuple[str, float | None]] = []
        reasons: list[str] = []
        unsupported = False
        for (name, _h), b, a in zip(self._handles, before, after, strict=False):
            if isinstance(b, int) and isinstance(a, int) and a > b:
                per.append((name, (a - b) / 1000))
                continue
            per.append((name, None))
            unsupported = unsupported or name in self._no_counter
            why = (b if isinstance(b, str) else a if isinstance(a, str)
                   else ENERGY_UNMOVED if a == b else "energy not measured: the counter went back")
            reasons.append(why)
        total = None if reasons else sum(j for _n, j in per if j is not None)
        reason = None if not reasons else "; ".join(dict.fromkeys(reasons))
        self._no_counter = set()  # the next run's readings say it again
        return RunEnergy(total, tuple(per), reason, unsupported), self._clocks()

    def _clocks(self) -> RunClocks:
        throttled: list[tuple[str, str]] = []
        unread: list[tuple[str, str]] = []
        for name, handle in self._handles or ():
            if handle is None:
                continue
            try:
                words = _throttle_of(self._nvml, handle)
            except Exception as exc:  # noqa: BLE001 - NotSupported, NoPermission: unread, with the reason
                unread.append((name, _nvml_error_text(exc)))
                continue
            if words:
                throttled.append((name, words))
        return RunClocks(tuple(throttled), tuple(unread))

    def close(self) -> None:
        """Shut NVML down if this meter opened it; a later :meth:`start` opens it again."""
        if self._nvml is not None and self._handles is not None and self._why is None:
            close_nvml(self._nvml)
        if self.gpus:  # a refusing meter stays as it is
            self._handles = None
            self._why = None


__all__ = [
    "GPU_READINGS",
    "THROTTLE_REASONS",
    "BoardReading",
    "read_boards",
    "ENERGY_UNMOVED",
    "ENERGY_UNSUPPORTED",
    "ClockReading",
    "GpuProcess",
    "GpuReading",
    "MigReading",
    "NvmlSession",
    "NvmlSnapshot",
    "Unread",
    "close_nvml",
    "nvml_query",
    "open_nvml",
    "RunClocks",
    "RunEnergy",
    "RunMeter",
    "decode_nvml_str",
    "init_failure_words",
    "read_clock_state",
    "read_clocks",
    "read_nvml",
    "throttle_words",
]
