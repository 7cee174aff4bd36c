"""core/gpu/nvml: the one module that opens NVML — the poller's session, the clock reader.

The fake NVML (:class:`gpusession.testing.FakeNvml`) raises pynvml's own error classes, so
the readers meet them as on a real machine.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from gpusession.core.gpu.nvml import (
    NvmlSession,
    RunMeter,
    Unread,
    nvml_query,
    read_boards,
    read_clock_state,
    read_clocks,
    read_nvml,
)
from gpusession.testing import FakeGpu, FakeNvml

SRC = Path(__file__).resolve().parents[2] / "src" / "gpusession"
NVML_MODULE = SRC / "core" / "gpu" / "nvml.py"
#: The calls that open or close NVML: only core/gpu/nvml.py makes them.
OPENERS = {"nvmlInit", "nvmlInitWithFlags", "nvmlShutdown"}
WORKER = SRC / "bench" / "worker.py"


def _two_gpus() -> FakeNvml:
    return FakeNvml([
        FakeGpu(uuid="GPU-aaaa", sm_clock_mhz=1410, throttle_reasons=0x1, temperature_c=35, power_mw=60_000),
        FakeGpu(uuid="GPU-bbbb", sm_clock_mhz=1980, throttle_reasons=0x4 | 0x40, temperature_c=83,
                power_mw=412_250),
    ])


def _nvml_openers() -> dict[Path, list[int]]:
    """Every module under src/gpusession calling nvmlInit/nvmlShutdown, with the lines."""
    found: dict[Path, list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name in OPENERS:
                    found.setdefault(path, []).append(node.lineno)
    return found


def test_m5_nvml_is_opened_only_in_core_gpu_nvml() -> None:
    """No module but core/gpu/nvml.py opens NVML (the worker and the Memory pane read through it)."""
    openers = _nvml_openers()
    assert NVML_MODULE in openers  # the checker sees the calls it looks for
    others = {str(p.relative_to(SRC)): lines for p, lines in openers.items()
              if p != NVML_MODULE}
    assert others == {}, f"NVML opened outside core/gpu/nvml.py: {others}"


def _call_sites(name: str) -> list[str]:
    """``path:line`` of each call of ``name`` in src/gpusession (the fake in testing.py aside)."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "testing.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) == name:
                    out.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return out


def test_m5_nvml_is_opened_and_shut_at_one_call_site_each() -> None:
    """Every reading opens NVML through open_nvml: one nvmlInit, one nvmlShutdown in all."""
    inits, shutdowns = _call_sites("nvmlInit"), _call_sites("nvmlShutdown")
    assert len(inits) == 1 and inits[0].startswith("core/gpu/nvml.py:"), inits
    assert len(shutdowns) == 1 and shutdowns[0].startswith("core/gpu/nvml.py:"), shutdowns
    assert _call_sites("nvmlInitWithFlags") == []


def test_h07_each_reading_opens_nvml_once_and_shuts_it_once() -> None:
    for read in (read_nvml, read_boards, lambda f: read_clock_state(0, f)):
        fake = _two_gpus()
        read(fake)
        assert (fake.init_calls, fake.shutdown_calls) == (1, 1), read
    fake = _two_gpus()
    meter = RunMeter([(0, "GPU-aaaa"), (1, "GPU-bbbb")], fake)
    meter.stop(meter.start())
    meter.stop(meter.start())
    meter.close()
    assert (fake.init_calls, fake.shutdown_calls) == (1, 1)


def test_h07_nvml_that_does_not_open_is_a_typed_unread_with_why() -> None:
    got = nvml_query(lambda lib: 1 / 0, FakeNvml(fail="Driver Not Loaded"))  # never read
    assert got == Unread("start", "Driver Not Loaded", "RuntimeError")
    assert got.why == "no NVIDIA driver found (NVML: Driver Not Loaded)"
    assert not got.snapshot().available and got.snapshot().reason == got.why
    mismatch = nvml_query(len, FakeNvml(fail=pynvml.NVMLError(18)))
    assert isinstance(mismatch, Unread) and mismatch.mismatch and "version mismatch" in mismatch.why
    fake = _two_gpus()
    assert nvml_query(lambda lib: lib.nvmlDeviceGetCount(), fake) == 2
    assert (fake.init_calls, fake.shutdown_calls) == (1, 1)
    broken = FakeNvml()
    try:
        nvml_query(lambda lib: 1 / 0, broken)
    except ZeroDivisionError:
        pass  # the reader's own bug surfaces as a bug, and NVML is still shut down
    assert broken.shutdown_calls == 1


@pytest.mark.slow
def test_m5_the_worker_reads_clocks_through_core_gpu_nvml() -> None:
    from gpusession.bench import device
    from gpusession.core.gpu import nvml

    assert WORKER not in _nvml_openers() and SRC / "bench" / "device.py" not in _nvml_openers()
    assert device.read_clocks is nvml.read_clocks


def test_r10_h05_clocks_read_for_the_gpu_named_by_uuid_before_its_index() -> None:
    """The UUID names the GPU the workload used (H-05): a stale or wrong index loses."""
    fake = _two_gpus()
    got = read_clock_state(0, fake, uuid="GPU-bbbb")
    assert (got.sm_clock_mhz, got.throttle_reasons) == (1980, "software power cap, hardware thermal slowdown")
    assert (got.temperature_c, got.power_w, got.found_by, got.reason) == (83, 412.25, "uuid", None)
    by_index = read_clock_state(0, fake)
    assert (by_index.sm_clock_mhz, by_index.throttle_reasons, by_index.found_by) == (1410, "GPU idle", "index")
    unknown_uuid = read_clock_state(1, fake, uuid="GPU-cccc")
    assert (unknown_uuid.sm_clock_mhz, unknown_uuid.found_by) == (1980, "index")
    assert fake.init_calls == fake.shutdown_calls == 3  # each reading opens and closes NVML


def test_r10_h18_each_clock_figure_unread_alone_with_the_reason() -> None:
    fake = _two_gpus()
    fake.gpus[1].errors.update(sm_clock=pynvml.NVMLError_NotSupported(),
                               power=pynvml.NVMLError_NoPermission())
    got = read_clock_state(1, fake)
    assert got.sm_clock_mhz is None and got.power_w is None
    assert got.throttle_reasons == "software power cap, hardware thermal slowdown" and got.temperature_c == 83
    assert got.reason is not None
    assert "SM clock: NVMLError_NotSupported: Not Supported" in got.reason
    assert "power: NVMLError_NoPermission: Insufficient Permissions" in got.reason
    assert fake.init_calls == fake.shutdown_calls == 1


def test_h07_clocks_without_a_driver_or_an_index_say_why() -> None:
    no_driver = read_clocks(0, FakeNvml(fail="Driver Not Loaded"))
    assert no_driver["sm_clock_mhz"] is None and no_driver["throttle_reasons"] is None
    assert no_driver["clock_reason"] == "NVML could not start (RuntimeError: Driver Not Loaded)"
    fake = _two_gpus()
    unknown = read_clocks(None, fake)
    assert unknown["sm_clock_mhz"] is None and "not known" in unknown["clock_reason"]
    assert fake.init_calls == 0  # nothing to read: NVML is not opened
    gone = read_clocks(7, fake)
    assert gone["sm_clock_mhz"] is None and gone["clock_reason"].startswith("GPU 7: IndexError")


def test_r10_read_clocks_gives_the_workers_environment_fields() -> None:
    """The fields and words the worker records today, on a minimal pynvml-like module
    with only the older throttle-reasons call (the worker's own test case)."""

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

    ok = read_clocks(0, nvml(0x4 | 0x40 | 0x400, 1980))
    assert ok == {"sm_clock_mhz": 1980, "clock_reason": None,
                  "throttle_reasons": "software power cap, hardware thermal slowdown, other (0x400)"}
    assert read_clocks(0, nvml(0, 1410))["throttle_reasons"] == "none"
    bad = read_clocks(0, nvml(None, None))
    assert bad["sm_clock_mhz"] is None and bad["throttle_reasons"] is None
    assert "SM clock: NotSupported" in bad["clock_reason"] and "throttle reasons" in bad["clock_reason"]


def test_m5_a_poller_session_opens_nvml_once_and_closes_it_once() -> None:
    fake = _two_gpus()
    session = NvmlSession(fake)
    readings = [session.read() for _ in range(5)]
    assert fake.init_calls == 1 and fake.shutdown_calls == 0
    assert all(r == read_nvml(_two_gpus()) for r in readings)  # the same figures as a one-off reading
    assert [g.uuid for g in readings[-1].gpus] == ["GPU-aaaa", "GPU-bbbb"]
    session.close()
    session.close()
    assert fake.shutdown_calls == 1
    session.read()  # opened again after a close
    assert fake.init_calls == 2


def test_h07_h18_a_poller_session_keeps_each_gpu_and_the_failure_reason() -> None:
    fake = _two_gpus()
    fake.gpus[0].errors["memory"] = pynvml.NVMLError_NotSupported()
    snap = NvmlSession(fake).read()
    assert [g.index for g in snap.gpus] == [0, 1]
    assert snap.gpus[0].memory_used_bytes is None and snap.gpus[0].why_unread("memory") == "Not Supported"
    failed = NvmlSession(FakeNvml(fail="NVML Shared Library Not Found"))
    first = failed.read()
    assert not first.available and first.reason == (
        "no NVIDIA driver found (NVML: NVML Shared Library Not Found)")
    assert failed.failed is first
    failed.close()  # NVML never opened: nothing to shut down
    assert failed.failed is None
