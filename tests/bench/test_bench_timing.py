"""bench.timing with a fake device whose work completes late (R8, M1-M4, H-01, H-02)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gpusession.bench.device import runtime_version
from gpusession.bench.phases import is_oom
from gpusession.bench.timing import SyncTimer


class FakeDevice:
    """Asynchronous fake GPUs: work is queued per device and completes only on sync.

    The clock is virtual (ns); ``launch`` returns at once, like a CUDA kernel launch,
    while the device stays busy for ``ns``. ``synchronize(d)`` advances the clock to the
    end of ``d``'s queue. Every call is logged so the order can be asserted.
    """

    def __init__(self) -> None:
        self.now = 0
        self.busy_until: dict[str, int] = {}
        self.log: list[str] = []
        self.allocated = {"cuda:0": 100, "cuda:1": 0}
        self.reserved = {"cuda:0": 2048, "cuda:1": 0}
        self.peak_alloc = dict(self.allocated)
        self.peak_res = dict(self.reserved)

    def clock(self) -> int:
        self.log.append("clock")
        return self.now

    def launch(self, device: str, ns: int, alloc: int = 0) -> None:
        self.log.append(f"launch {device}")
        start = max(self.now, self.busy_until.get(device, 0))
        self.busy_until[device] = start + ns
        self.peak_alloc[device] = max(self.peak_alloc[device], self.allocated[device] + alloc)
        self.peak_res[device] = max(self.peak_res[device], self.reserved[device] + 2 * alloc)

    def synchronize(self, device: str) -> None:
        self.log.append(f"sync {device}")
        self.now = max(self.now, self.busy_until.get(device, 0))

    def memory_allocated(self, d: str) -> int:
        self.log.append(f"allocated {d}")
        return self.allocated[d]

    def memory_reserved(self, d: str) -> int:
        self.log.append(f"reserved {d}")
        return self.reserved[d]

    def reset_peak_memory_stats(self, d: str) -> None:
        self.log.append(f"reset {d}")
        self.peak_alloc[d] = self.allocated[d]
        self.peak_res[d] = self.reserved[d]

    def max_memory_allocated(self, d: str) -> int:
        self.log.append(f"peak_allocated {d}")
        return self.peak_alloc[d]

    def max_memory_reserved(self, d: str) -> int:
        self.log.append(f"peak_reserved {d}")
        return self.peak_res[d]


def test_h01_late_completing_work_is_fully_timed() -> None:
    dev = FakeDevice()
    dev.launch("cuda:0", 7_000_000)  # earlier work still pending when the run starts
    timer = SyncTimer(["cuda:0"], dev, clock=dev.clock)
    m = timer.measure(lambda: dev.launch("cuda:0", 5_000_000))
    # a run can never look faster than the work it timed, nor include earlier work
    assert m.elapsed_ns == 5_000_000


def test_h01_without_sync_the_same_work_would_look_instant() -> None:
    dev = FakeDevice()
    t0 = dev.clock()
    dev.launch("cuda:0", 5_000_000)
    assert dev.clock() - t0 == 0  # why R8 exists: the unsynchronized reading lies


def test_r8_sync_right_before_start_and_right_before_stop() -> None:
    dev = FakeDevice()
    timer = SyncTimer(["cuda:0"], dev, clock=dev.clock)
    timer.measure(lambda: dev.launch("cuda:0", 10))
    log = dev.log
    starts = [i for i, e in enumerate(log) if e == "clock"]
    assert len(starts) == 2
    assert log[starts[0] - 1] == "sync cuda:0"  # right before the start reading
    assert log[starts[1] - 1] == "sync cuda:0"  # right before the stop reading
    assert log.index("launch cuda:0") > starts[0]
    assert log.index("launch cuda:0") < starts[1] - 1


def test_h02_every_used_device_is_synchronized_by_name() -> None:
    dev = FakeDevice()
    timer = SyncTimer(["cuda:0", "cuda:1"], dev, clock=dev.clock)
    m = timer.measure(lambda: dev.launch("cuda:1", 9_000))  # work on the non-current device
    assert m.elapsed_ns == 9_000
    stop = len(dev.log) - 1 - dev.log[::-1].index("clock")
    assert set(dev.log[stop - 2 : stop]) == {"sync cuda:0", "sync cuda:1"}


def test_m1_memory_protocol_order_and_peaks() -> None:
    dev = FakeDevice()
    timer = SyncTimer(["cuda:0"], dev, clock=dev.clock)
    m = timer.measure(lambda: dev.launch("cuda:0", 10, alloc=1000))
    log = [e for e in dev.log if not e.startswith("launch")]
    assert log[:4] == ["sync cuda:0", "allocated cuda:0", "reserved cuda:0", "reset cuda:0"]
    assert log[-2:] == ["peak_allocated cuda:0", "peak_reserved cuda:0"]
    assert log[-3] == "clock" and log[-4] == "sync cuda:0"  # peaks read after the final sync
    assert (m.baseline_allocated_bytes, m.baseline_reserved_bytes) == (100, 2048)
    assert (m.peak_allocated_bytes, m.peak_reserved_bytes) == (1100, 4048)


def test_m2_allocated_and_reserved_stay_separate_figures() -> None:
    dev = FakeDevice()
    m = SyncTimer(["cuda:0"], dev, clock=dev.clock).measure(lambda: dev.launch("cuda:0", 1, alloc=50))
    fields = vars(m)
    assert m.peak_reserved_bytes == 2148 and m.peak_allocated_bytes == 150  # never summed
    assert not any("cache" in k for k in fields)  # no "reserved − allocated = cache" figure


def test_m4_cpu_leaves_memory_cells_empty_and_never_syncs() -> None:
    calls: list[str] = []
    timer = SyncTimer(["cpu"], None)
    m = timer.measure(lambda: calls.append("work") or 42)
    assert m.result == 42 and calls == ["work"]
    assert m.baseline_allocated_bytes is None and m.peak_reserved_bytes is None
    assert m.event_elapsed_s is None
    assert m.elapsed_ns >= 0


def test_m4_memory_read_only_for_the_device_used() -> None:
    dev = FakeDevice()
    SyncTimer(["cuda:0", "cuda:1"], dev, clock=dev.clock, memory_device="cuda:1").measure(lambda: None)
    mem_calls = [e for e in dev.log if e.split()[0] in ("allocated", "reserved", "reset",
                                                         "peak_allocated", "peak_reserved")]
    assert mem_calls and all(e.endswith("cuda:1") for e in mem_calls)


def test_r8_cuda_event_time_recorded_beside_wall_time() -> None:
    dev = FakeDevice()
    recorded: list[str] = []

    class Ev:
        def __init__(self, name: str) -> None:
            self.name = name

        def record(self) -> None:
            recorded.append(self.name)

        def elapsed_time(self, other: Any) -> float:
            return 5.0  # ms

    timer = SyncTimer(["cuda:0"], dev, clock=dev.clock, event_factory=lambda: (Ev("s"), Ev("e")))
    m = timer.measure(lambda: dev.launch("cuda:0", 5_000_000))
    assert recorded == ["s", "e"]
    assert m.event_elapsed_s == pytest.approx(0.005)
    assert m.elapsed_s == pytest.approx(0.005)


def test_h07_runtime_is_hip_on_rocm_and_empty_on_cpu_never_cuda_none() -> None:
    rocm = SimpleNamespace(version=SimpleNamespace(cuda=None, hip="6.1.40091"))
    cuda = SimpleNamespace(version=SimpleNamespace(cuda="12.4", hip=None))
    cpu_build = SimpleNamespace(version=SimpleNamespace(cuda=None, hip=None))
    assert runtime_version(rocm, "cuda:0") == "HIP 6.1.40091"
    assert runtime_version(cuda, "cuda:0") == "CUDA 12.4"
    assert runtime_version(cuda, "cpu") is None
    assert runtime_version(cpu_build, "cuda:0") is None
    for t in (rocm, cuda, cpu_build):
        assert "None" not in str(runtime_version(t, "cuda:0") or "")


def test_r7_oom_recognised_by_type_name_and_message() -> None:
    class OutOfMemoryError(RuntimeError):
        pass

    assert is_oom(OutOfMemoryError("x"))
    assert is_oom(RuntimeError("HIP out of memory. Tried to allocate"))
    assert is_oom(MemoryError())
    assert not is_oom(ValueError("bad"))


def test_r8_gc_disabled_inside_the_timed_region_and_restored_after() -> None:
    """As timeit does: no garbage collection between the two clock readings, the
    collector back on between runs, also when the work raises."""
    import gc

    dev = FakeDevice()
    seen: list[tuple[str, bool]] = []

    def clock() -> int:
        seen.append(("clock", gc.isenabled()))
        return dev.clock()

    def sync(d: str) -> None:
        seen.append(("sync", gc.isenabled()))
        FakeDevice.synchronize(dev, d)

    dev.synchronize = sync  # type: ignore[method-assign]
    timer = SyncTimer(["cuda:0"], dev, clock=clock)
    assert gc.isenabled()
    m = timer.measure(lambda: (seen.append(("work", gc.isenabled())), dev.launch("cuda:0", 10)))
    assert m.elapsed_ns == 10
    clocks = [i for i, (k, _) in enumerate(seen) if k == "clock"]
    assert [on for k, on in seen[clocks[0]:clocks[1] + 1]] == [False] * (clocks[1] - clocks[0] + 1)
    assert ("work", False) in seen
    assert gc.isenabled()  # re-enabled between runs

    def boom() -> None:
        assert not gc.isenabled()
        raise RuntimeError("failed run")

    with pytest.raises(RuntimeError):
        timer.measure(boom)
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        timer.measure(lambda: None)
        assert not gc.isenabled()
    finally:
        gc.enable()
