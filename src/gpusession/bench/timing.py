"""Synchronized stopwatch and the allocator memory protocol (R8, M1, H-01, H-02).

Who calls it: the worker (:mod:`gpusession.bench.worker`) around every measured interval:
the load phase (``presync=False``), the warm-up iterations, the cold and warm runs of
torch workloads and the whole process of a command workload. This is the one stopwatch:
nothing else in the worker reads a clock around a measurement. The module itself imports no torch: the device operations (synchronize,
allocator readings, CUDA events) are injected, so tests drive it with a fake device
whose work completes after the call returns (H-01), and the worker passes torch's.

Order of one measurement (seed 000 §3)::

    sync(every used device)            # M1: baselines after pending work
    baseline allocated / reserved      # per device used
    reset peak stats                   # per device used
    gc.disable()                       # as timeit does: no collection inside the clock
    sync(every used device); t0 = perf_counter_ns()    # R8: start reading
    work()
    sync(every used device); t1 = perf_counter_ns()    # R8: stop reading
    gc.enable()                        # if it was enabled; also when work() raises
    peak allocated / reserved          # the phase's absolute peaks

Each device is synchronized *by name* (H-02: ``synchronize()`` without an argument
waits only for the current device).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: How allocator figures are labelled (H-04): never presented as the device total.
ALLOCATOR_LABEL = "PyTorch allocator"
#: How NVML figures are labelled (H-04).
NVML_LABEL = "device/process total (NVML)"
#: What the allocator readout does not cover (M3), stated beside every reading.
ALLOCATOR_SCOPE = (
    "PyTorch allocator of the device used only: other processes and memory outside the "
    "allocator (CUDA context, library workspaces) are not covered; allocated is part of "
    "reserved (never add them) and the two peaks may occur at different moments"
)
#: Beside a warm run's reserved figures: the caching allocator keeps blocks between runs
#: of interleaved variants, and the peak after a reset starts from what is reserved now.
RESERVED_CARRY_NOTE = "reserved bytes include blocks kept from earlier runs of this worker"
#: Why the memory cells are empty on CPU (M4).
CPU_MEMORY_SCOPE = "not measured: the run used no GPU (empty cells mean not measured, not 0)"


class DeviceOps(Protocol):
    """What the timer needs from a device backend (torch's CUDA, or a fake)."""

    def synchronize(self, device: str) -> None:
        """Wait until every queued kernel on ``device`` (e.g. ``"cuda:1"``) has finished (R8)."""
        ...

    def memory_allocated(self, device: str) -> int:
        """Bytes held by live tensors in the allocator of ``device`` now (M1)."""
        ...

    def memory_reserved(self, device: str) -> int:
        """Bytes the allocator of ``device`` holds from the driver now (M1)."""
        ...

    def reset_peak_memory_stats(self, device: str) -> None:
        """Restart the peak counters of ``device`` so the next peaks are the phase's (M1)."""
        ...

    def max_memory_allocated(self, device: str) -> int:
        """Peak allocated bytes of ``device`` since the last reset (M1)."""
        ...

    def max_memory_reserved(self, device: str) -> int:
        """Peak reserved bytes of ``device`` since the last reset (M1)."""
        ...


@dataclass(frozen=True)
class Measurement:
    """One timed piece of work.

    Attributes:
        elapsed_ns: stop − start of ``perf_counter_ns`` in nanoseconds.
        event_elapsed_s: CUDA-event elapsed time in seconds (journal only), ``None`` on
            CPU or when events are unavailable.
        baseline_allocated_bytes, baseline_reserved_bytes: allocator readings before
            the work (PyTorch allocator only, M3); ``None`` on CPU (M4).
        peak_allocated_bytes, peak_reserved_bytes: the peaks during the work; never to
            be added together (M2); ``None`` on CPU (M4).
        result: what the work returned.
        peak_allocated_device, peak_reserved_device: the device holding each peak
            (``"cuda:1"``): with several devices used the largest is kept, each baseline
            from the same device; ``None`` on CPU.
        memory_devices: every device whose allocator was read.
        event_stream: which stream the CUDA events timed, in words (journal only),
            ``None`` without events.
    """

    elapsed_ns: int
    event_elapsed_s: float | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    result: Any = None
    peak_allocated_device: str | None = None
    peak_reserved_device: str | None = None
    memory_devices: tuple[str, ...] = ()
    event_stream: str | None = None

    def memory_note(self) -> str | None:
        """Which device the allocator figures come from, in words; ``None`` for one device or none."""
        return memory_words(self.memory_devices, self.peak_allocated_device, self.peak_reserved_device)

    @property
    def elapsed_s(self) -> float:
        """Elapsed seconds (float)."""
        return self.elapsed_ns / 1e9


def memory_words(devices: Sequence[str], alloc_device: str | None, reserved_device: str | None) -> str | None:
    """Words for notes: the device the allocator figures come from (M1), ``None`` for one device.

    Example: ``"allocator figures from cuda:1, the largest of 2 GPUs used (cuda:0, cuda:1)"``;
    when the two peaks sit on different devices both are named.
    """
    if len(devices) < 2 or reserved_device is None:
        return None
    where = (f"from {reserved_device}" if alloc_device in (None, reserved_device) else
             f"reserved from {reserved_device}, allocated from {alloc_device}")
    return f"allocator figures {where}, the largest of {len(devices)} GPUs used ({', '.join(devices)})"


def largest_peaks(peaks: dict[str, tuple[int, int]],
                  baselines: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """The largest allocated and reserved peaks over devices, each with its device's baseline (M1).

    Args:
        peaks: ``device → (peak allocated, peak reserved)`` bytes.
        baselines: ``device → (allocated, reserved)`` bytes read before the work; a
            device missing here gives ``None`` baselines (not read, never 0).

    Returns:
        :class:`Measurement` keyword arguments: ``peak_*_bytes``, ``baseline_*_bytes``,
        ``peak_*_device``; every value ``None`` when ``peaks`` is empty.
    """
    out: dict[str, Any] = {}
    for i, kind in enumerate(("allocated", "reserved")):
        top = max(peaks, key=lambda d, i=i: peaks[d][i], default=None)  # type: ignore[misc]
        out[f"peak_{kind}_bytes"] = peaks[top][i] if top is not None else None
        out[f"baseline_{kind}_bytes"] = baselines[top][i] if top in baselines else None
        out[f"peak_{kind}_device"] = top
    return out


class SyncTimer:
    """Times work with explicit synchronization of every device used (R8, H-01, H-02).

    Args:
        devices: the devices the work uses, e.g. ``["cuda:0", "cuda:1"]``; empty or
            ``["cpu"]`` on CPU (nothing to synchronize, memory cells stay ``None``, M4).
        ops: the device backend; ``None`` on CPU.
        clock: a nanosecond clock (default ``time.perf_counter_ns``).
        event_factory: makes a CUDA-event pair ``(start, end)`` with ``record()`` and
            ``start.elapsed_time(end)`` in ms (and, optionally, ``stream_words()``: which
            stream they timed); ``None`` for no event timing.
        memory_device: read only this device's allocator; default every device of
            ``devices`` (the largest peak is kept, naming its device: M1).
    """

    def __init__(
        self,
        devices: Sequence[str] = (),
        ops: DeviceOps | None = None,
        *,
        clock: Callable[[], int] = time.perf_counter_ns,
        event_factory: Callable[[], tuple[Any, Any]] | None = None,
        memory_device: str | None = None,
    ) -> None:
        """Keep the devices (``"cpu"`` dropped); without a device, no ops and no events."""
        self.devices = [d for d in devices if d != "cpu"]
        self.ops = ops if self.devices else None
        self.clock = clock
        self.event_factory = event_factory if self.ops is not None else None
        self.memory_devices: list[str] = [memory_device] if memory_device else list(self.devices)

    def sync(self) -> None:
        """Synchronize every used device, each by name (H-02)."""
        if self.ops is None:
            return
        for d in self.devices:
            self.ops.synchronize(d)

    def baselines(self, *, reset: bool = True) -> dict[str, tuple[int, int]]:
        """``device → (allocated, reserved)`` bytes now on every device read; the peaks reset (M1)."""
        ops = self.ops
        if ops is None:
            return {}
        out = {d: (int(ops.memory_allocated(d)), int(ops.memory_reserved(d))) for d in self.memory_devices}
        if reset:
            for d in self.memory_devices:
                ops.reset_peak_memory_stats(d)
        return out

    def peaks(self, devices: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        """``device → (peak allocated, peak reserved)`` bytes since the last reset (M1).

        Also after a failed :meth:`measure`: the peaks the work reached before it raised
        (an out-of-memory run's notes keep them). A device whose reading raises (a CUDA
        error left by the failure) is left out; ``{}`` on CPU.
        """
        ops = self.ops
        out: dict[str, tuple[int, int]] = {}
        if ops is None:
            return out
        for d in self.memory_devices if devices is None else devices:
            try:
                out[d] = (int(ops.max_memory_allocated(d)), int(ops.max_memory_reserved(d)))
            except RuntimeError:  # torch.AcceleratorError after a failed run: not read
                continue
        return out

    def measure(self, work: Callable[[], Any], *, presync: bool = True) -> Measurement:
        """Run ``work()`` once and measure it (M1, R8).

        Args:
            work: the work to time; what it returns is ``Measurement.result``.
            presync: ``True`` for a run: synchronize, read the baselines and reset the
                peaks before the start clock. ``False`` for the load phase (R3): the
                clock starts at once, so creating the device context (which the work
                does first, the worker's ``TorchDevice.activate``) is included; no
                baseline is read here (``None``: the work reads it and resets the
                peaks itself once the context exists); the stop is synchronized as
                always.

        Python's garbage collector is disabled from just before the start clock to
        just after the stop clock, as :mod:`timeit` does, and re-enabled (when it was
        enabled) on the way out, exception or not: collections then happen between
        runs, not inside one. Every device read keeps its own baseline and peaks; the
        largest peak is the measurement's, with its device named.

        Returns:
            The measurement; exceptions raised by ``work`` propagate (the caller turns
            them into a failed row, R7) after nothing else is read.
        """
        base: dict[str, tuple[int, int]] = {}
        if presync and self.ops is not None and self.memory_devices:
            self.sync()
            base = self.baselines()
        events = self.event_factory() if self.event_factory and presync else None
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            if presync:
                self.sync()
            if events:
                events[0].record()
            t0 = self.clock()
            result = work()
            if events:
                events[1].record()
            self.sync()
            t1 = self.clock()
        finally:
            if gc_was_enabled:
                gc.enable()
        event_s = None
        if events:
            try:
                event_s = float(events[0].elapsed_time(events[1])) / 1000.0
            except RuntimeError:  # torch: an event not recorded / a CUDA error; journal-only figure
                event_s = None
        said = getattr(events[0], "stream_words", None) if events else None
        return Measurement(
            elapsed_ns=t1 - t0, event_elapsed_s=event_s, result=result,
            memory_devices=tuple(self.memory_devices) if self.ops is not None else (),
            event_stream=said() if callable(said) else None,
            **largest_peaks(self.peaks(), base),
        )


class TorchCudaOps:
    """:class:`DeviceOps` over ``torch.cuda`` (CUDA and ROCm builds alike).

    Imported and built only in worker processes (the UI never creates a CUDA context,
    M5).
    """

    def __init__(self, torch: Any) -> None:
        """Wrap ``torch`` (the module, imported by the caller in a worker process)."""
        self.cuda = torch.cuda
        self._torch = torch

    def _d(self, device: str) -> Any:
        return self._torch.device(device)

    def synchronize(self, device: str) -> None:
        """``torch.cuda.synchronize(device)``: that device by name, never the current one (H-02)."""
        self.cuda.synchronize(self._d(device))

    def memory_allocated(self, device: str) -> int:
        """``torch.cuda.memory_allocated(device)`` in bytes (PyTorch allocator only, M3)."""
        return int(self.cuda.memory_allocated(self._d(device)))

    def memory_reserved(self, device: str) -> int:
        """``torch.cuda.memory_reserved(device)`` in bytes (PyTorch allocator only, M3)."""
        return int(self.cuda.memory_reserved(self._d(device)))

    def reset_peak_memory_stats(self, device: str) -> None:
        """``torch.cuda.reset_peak_memory_stats(device)`` (M1)."""
        self.cuda.reset_peak_memory_stats(self._d(device))

    def max_memory_allocated(self, device: str) -> int:
        """``torch.cuda.max_memory_allocated(device)`` in bytes since the last reset (M1)."""
        return int(self.cuda.max_memory_allocated(self._d(device)))

    def max_memory_reserved(self, device: str) -> int:
        """``torch.cuda.max_memory_reserved(device)`` in bytes since the last reset (M1)."""
        return int(self.cuda.max_memory_reserved(self._d(device)))

    def event_pair(self, device: str) -> Callable[[], tuple[Any, Any]]:
        """A factory of (start, end) CUDA events recorded on ``device``'s current stream.

        ``torch.cuda.Event.record()`` without a stream records on the *current device's*
        stream, so a workload on ``cuda:1`` while ``cuda:0`` is current would be timed on
        the wrong (idle) device and create a context there (H-02). The events returned
        here record on ``torch.cuda.current_stream(device)`` explicitly.
        """
        dev = self._d(device)

        def make() -> tuple[Any, Any]:
            with self.cuda.device(dev):
                start = self.cuda.Event(enable_timing=True)
                end = self.cuda.Event(enable_timing=True)
            return _StreamEvent(self.cuda, dev, start), _StreamEvent(self.cuda, dev, end)

        return make


class _StreamEvent:
    """A CUDA event that records on one device's current stream (H-02).

    Never on the current device's stream; ``elapsed_time`` is in ms as torch's, read only
    after synchronization. Work a workload queues on streams of its own is not in the
    event figure (the wall time covers it: ``synchronize`` waits for every stream), so
    :meth:`stream_words` says which stream the pair timed.
    """

    def __init__(self, cuda: Any, device: Any, event: Any) -> None:
        self._cuda = cuda
        self._device = device
        self.event = event
        self.stream: Any = None

    def record(self) -> None:
        self.stream = self._cuda.current_stream(self._device)
        self.event.record(self.stream)

    def elapsed_time(self, end: _StreamEvent) -> float:
        return float(self.event.elapsed_time(end.event))

    def stream_words(self) -> str:
        """``"events timed the default stream of cuda:0; wall time covers every stream"``."""
        default = getattr(self._cuda, "default_stream", None)
        is_default = callable(default) and self.stream == default(self._device)
        which = "the default stream" if is_default else f"stream {getattr(self.stream, 'stream_id', self.stream)}"
        return f"events timed {which} of {_name(self._device)}; wall time covers every stream"


def _name(device: Any) -> str:
    """``cuda:1`` for a torch device (or a stand-in with ``type`` and ``index``)."""
    kind, index = getattr(device, "type", None), getattr(device, "index", None)
    return f"{kind}:{index}" if kind is not None and index is not None else str(device)


__all__ = [
    "ALLOCATOR_LABEL", "ALLOCATOR_SCOPE", "CPU_MEMORY_SCOPE", "NVML_LABEL", "RESERVED_CARRY_NOTE",
    "DeviceOps", "Measurement", "SyncTimer", "TorchCudaOps", "largest_peaks", "memory_words",
]
