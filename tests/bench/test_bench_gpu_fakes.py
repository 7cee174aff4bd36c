"""GPU code paths driven by fake ``torch.cuda`` objects on CPU (R8, M1, H-02, R7)."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from gpusession.bench.timing import SyncTimer, TorchCudaOps


class FakeCuda:
    """``torch.cuda`` as far as TorchCudaOps uses it; ``cuda:0`` is the current device."""

    def __init__(self) -> None:
        self.current = 0
        self.recorded: list[str] = []
        self.log: list[str] = []
        self.emptied = 0
        outer = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.stream: str | None = None

            def record(self, stream: str | None = None) -> None:
                # torch records on current_stream() of the CURRENT device when None
                self.stream = stream or f"stream{outer.current}"
                outer.recorded.append(self.stream)

            def elapsed_time(self, end: Any) -> float:
                assert self.stream == end.stream, "events on different streams"
                return 4.0

        self.Event = Event

    @staticmethod
    def _index(device: Any) -> int:
        return int(device.index)

    def current_stream(self, device: Any = None) -> str:
        return f"stream{self.current if device is None else self._index(device)}"

    @contextlib.contextmanager
    def device(self, device: Any) -> Iterator[None]:
        old, self.current = self.current, self._index(device)
        try:
            yield
        finally:
            self.current = old

    def synchronize(self, device: Any = None) -> None:
        self.log.append(f"sync {self.current if device is None else self._index(device)}")

    def empty_cache(self) -> None:
        self.emptied += 1


def _fake_torch(cuda: FakeCuda) -> Any:
    def device(name: str) -> Any:
        kind, _, idx = name.partition(":")
        return SimpleNamespace(type=kind, index=int(idx) if idx else None)

    return SimpleNamespace(cuda=cuda, device=device)


def test_h02_cuda_events_record_on_the_workload_devices_stream() -> None:
    cuda = FakeCuda()  # cuda:0 is current, the work runs on cuda:1
    ops = TorchCudaOps(_fake_torch(cuda))
    make = ops.event_pair("cuda:1")
    start, end = make()
    start.record()
    end.record()
    assert cuda.recorded == ["stream1", "stream1"]  # never the current device's stream
    assert cuda.current == 0
    assert start.elapsed_time(end) == 4.0


def test_r8_event_time_read_after_sync_of_the_event_device() -> None:
    cuda = FakeCuda()
    ops = TorchCudaOps(_fake_torch(cuda))
    order: list[str] = []
    real_sync = cuda.synchronize

    def sync(device: Any = None) -> None:
        order.append(f"sync {device.index}")
        real_sync(device)

    cuda.synchronize = sync  # type: ignore[method-assign]
    timer = SyncTimer(["cuda:1"], ops, clock=lambda: 0, event_factory=ops.event_pair("cuda:1"))
    timer.memory_devices = []  # time only: the fake has no allocator readings
    m = timer.measure(lambda: order.append("work"))
    assert order == ["sync 1", "work", "sync 1"]
    assert cuda.recorded == ["stream1", "stream1"]
    assert m.event_elapsed_s == 0.004


class _Tensor:
    """Stands for a device tensor; alive while something references it."""


def _gpu_dev(cuda: FakeCuda) -> Any:
    from gpusession.bench.device import TorchDevice

    dev = TorchDevice.__new__(TorchDevice)  # no real torch device needed
    dev.torch = _fake_torch(cuda)
    dev.device = "cuda:0"
    return dev


def test_r7_oom_empties_the_cache_after_the_failed_runs_tensors_are_released() -> None:
    from gpusession.bench.phases import measure_or_fail

    cuda = FakeCuda()
    held: list[weakref.ref[_Tensor]] = []
    alive_at_empty: list[bool] = []
    cuda.empty_cache = lambda: alive_at_empty.append(held[0]() is not None)  # type: ignore[method-assign]

    class OutOfMemoryError(RuntimeError):
        pass

    def work() -> None:
        x = _Tensor()  # a local of the failed run, kept alive by the traceback
        held.append(weakref.ref(x))
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    m, failure = measure_or_fail(SyncTimer([]), work, _gpu_dev(cuda))
    assert m is None
    assert failure["oom"] is True and failure["ok"] is False
    assert failure["error_type"] == "OutOfMemoryError"
    assert alive_at_empty == [False]  # the cache is emptied once the blocks are free
    ok, none = measure_or_fail(SyncTimer([]), lambda: 7, _gpu_dev(cuda))
    assert ok is not None and ok.result == 7 and none == {}  # the next variant runs


@pytest.mark.torch
def test_r7_hip_and_torch_oom_messages_are_oom() -> None:
    import torch

    from gpusession.bench.phases import is_oom

    assert is_oom(torch.OutOfMemoryError("x"))  # torch.cuda.OutOfMemoryError is this class
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    assert is_oom(RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"))
    assert is_oom(RuntimeError("HIP out of memory. Tried to allocate 20.00 MiB"))
    assert not is_oom(RuntimeError("CUDA error: an illegal memory access was encountered"))


def _props_torch(uuid: str) -> Any:
    cuda = SimpleNamespace(get_device_properties=lambda d: SimpleNamespace(uuid=uuid))
    return SimpleNamespace(cuda=cuda, device=lambda name: name)


def _snap() -> Any:
    from gpusession.core.gpu.nvml import GpuReading, NvmlSnapshot

    gpus = tuple(GpuReading(i, u, "NVIDIA H200", 1, 0, ()) for i, u in
                 enumerate(["GPU-aaaa0000-0000-0000-0000-000000000000",
                            "GPU-bbbb1111-1111-1111-1111-111111111111"]))
    return NvmlSnapshot(True, None, "580.159.03", gpus)


def test_h05_worker_reports_the_gpu_torch_really_uses_by_uuid() -> None:
    from gpusession.bench.device import physical_gpu

    # torch's cuda:0 is physical GPU 1 although the variable is unset (CUDA orders
    # FASTEST_FIRST, NVML by PCI): torch's own UUID decides, not the position.
    torch = _props_torch("bbbb1111-1111-1111-1111-111111111111")
    assert physical_gpu(torch, "cuda:0", _snap(), {}) == ("GPU-bbbb1111-1111-1111-1111-111111111111", 1)


def test_h05_worker_falls_back_to_visible_devices_then_torch_uuid() -> None:
    from gpusession.bench.device import physical_gpu
    from gpusession.core.gpu.nvml import NvmlSnapshot

    torch = _props_torch("cccc2222-2222-2222-2222-222222222222")  # unknown to NVML
    assert physical_gpu(torch, "cuda:0", _snap(), {"CUDA_VISIBLE_DEVICES": "1"}) == (
        "GPU-bbbb1111-1111-1111-1111-111111111111", 1)
    no_nvml = NvmlSnapshot(False, "no NVIDIA driver found", None, ())
    # kept as torch gave it: a MIG instance's UUID is bare too, so no "GPU-" is guessed
    assert physical_gpu(torch, "cuda:0", no_nvml, {}) == (
        "cccc2222-2222-2222-2222-222222222222", None)
    assert physical_gpu(torch, "cuda:0", no_nvml, {"CUDA_VISIBLE_DEVICES": "3"}) == (
        "cccc2222-2222-2222-2222-222222222222", 3)


@pytest.mark.torch
def test_h02_worker_makes_the_requested_gpu_the_current_device(monkeypatch: Any) -> None:
    import torch

    from gpusession.bench.device import TorchDevice

    chosen: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: chosen.append(i))
    synced: list[Any] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda d=None: synced.append(d))
    dev = TorchDevice("cuda:1")
    assert dev.device == "cuda:1" and dev.is_gpu
    assert chosen == [] and synced == []  # selected inside the timed load, not before
    dev.activate()
    assert chosen == [1] and [str(d) for d in synced] == ["cuda:1"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = TorchDevice("auto")
    cpu.activate()
    assert cpu.device == "cpu" and chosen == [1]  # CPU: no CUDA call


@pytest.mark.torch
def test_r3_bare_cuda_and_cuda_n_select_the_device_the_same_way(monkeypatch: Any) -> None:
    """Context creation falls inside the load clock for ``cuda`` and ``cuda:0`` alike:
    neither spelling touches CUDA before :meth:`TorchDevice.activate`."""
    import torch

    from gpusession.bench.device import TorchDevice

    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: calls.append(f"set {i}"))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: calls.append("current") or 0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda d=None: calls.append(f"sync {d}"))
    for spelling in ("cuda", "cuda:0"):
        calls.clear()
        dev = TorchDevice(spelling)
        assert dev.device == "cuda:0" and calls == []
        dev.activate()
        assert calls == ["set 0", "sync cuda:0"]


@pytest.mark.torch
def test_r10_speed_settings_recorded_in_the_environment(monkeypatch: Any) -> None:
    """TF32 flags, float32 matmul precision, grad mode and the allocator/device-order
    variables are part of the worker's environment, readable on CPU."""
    from gpusession.bench.device import TorchDevice, speed_env_vars

    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    env = TorchDevice("cpu").environment(None, None)
    import torch

    assert env["tf32_matmul"] is bool(torch.backends.cuda.matmul.allow_tf32)
    assert env["tf32_cudnn"] is bool(torch.backends.cudnn.allow_tf32)
    assert env["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    assert env["grad_enabled"] is True
    assert env["pytorch_cuda_alloc_conf"] == "expandable_segments:True"
    assert env["cuda_device_order"] == "unset" and env["hip_visible_devices"] == "1"
    assert "sm_clock_mhz" not in env  # CPU: no GPU clock to read
    assert speed_env_vars({})["pytorch_cuda_alloc_conf"] == "unset"


def test_r10_sm_clock_and_throttle_reasons_read_or_unknown_with_the_reason() -> None:
    from gpusession.core.gpu.nvml import read_clocks

    class NotSupported(Exception):
        pass

    def nvml(bits: int | None, clock: int | None) -> Any:
        def get_clock(h: Any, kind: int) -> int:
            if clock is None:
                raise NotSupported("Not Supported")
            return clock

        def reasons(h: Any) -> int:
            if bits is None:
                raise NotSupported("Not Supported")
            return bits

        return SimpleNamespace(nvmlInit=lambda: None, nvmlShutdown=lambda: None, NVML_CLOCK_SM=1,
                               nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
                               nvmlDeviceGetClockInfo=get_clock,
                               nvmlDeviceGetCurrentClocksThrottleReasons=reasons)

    ok = read_clocks(0, nvml(0x4 | 0x40, 1980))
    assert ok == {"sm_clock_mhz": 1980, "clock_reason": None,
                  "throttle_reasons": "software power cap, hardware thermal slowdown"}
    assert read_clocks(0, nvml(0, 1410))["throttle_reasons"] == "none"
    bad = read_clocks(0, nvml(None, None))
    assert bad["sm_clock_mhz"] is None and bad["throttle_reasons"] is None
    assert "SM clock: NotSupported" in bad["clock_reason"] and "throttle reasons" in bad["clock_reason"]
    unknown = read_clocks(None, nvml(0, 1))
    assert unknown["sm_clock_mhz"] is None and "not known" in unknown["clock_reason"]
