"""core/gpu/nvml: device memory by NVML's v2 call, and why NVML did not start.

The fake NVML answers v1 with the driver's reserved memory inside "used" and v2 without
it, as R510+ drivers do; it raises pynvml's own error classes.
"""

from __future__ import annotations

import pynvml

from gpusession.core.gpu.nvml import read_clock_state, read_nvml
from gpusession.testing import GIB, MIB, FakeGpu, FakeNvml


def _idle_h200() -> FakeGpu:
    return FakeGpu(name="NVIDIA H200", total_bytes=141 * GIB, used_bytes=0, reserved_bytes=580 * MIB,
                   processes=[])


def test_h07_an_idle_gpu_reads_idle_through_memory_v2() -> None:
    gpu = read_nvml(FakeNvml([_idle_h200()])).gpus[0]
    assert (gpu.memory_total_bytes, gpu.memory_used_bytes) == (141 * GIB, 0)


def test_h07_memory_falls_back_to_v1_on_a_driver_without_v2() -> None:
    gpu = read_nvml(FakeNvml([_idle_h200()], memory_v2=False)).gpus[0]
    assert gpu.memory_used_bytes == 580 * MIB  # v1: what the driver reserves counts as used
    assert gpu.why_unread("memory") is None


def test_h07_memory_falls_back_to_v1_with_bindings_that_lack_v2() -> None:
    class OldBindings(FakeNvml):
        nvmlMemory_v2 = None

    gpu = read_nvml(OldBindings([_idle_h200()])).gpus[0]
    assert gpu.memory_used_bytes == 580 * MIB


def test_h07_a_driver_library_mismatch_is_said_as_such() -> None:
    mismatch = pynvml.NVMLError(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    snap = read_nvml(FakeNvml(fail=mismatch))
    assert not snap.available
    assert snap.reason is not None
    assert snap.reason.startswith("NVIDIA driver/library version mismatch")
    assert "no NVIDIA driver found" not in snap.reason
    clocks = read_clock_state(0, FakeNvml(fail=mismatch))
    assert "version mismatch" in (clocks.reason or "")


def test_h07_no_driver_is_still_said_as_no_driver() -> None:
    snap = read_nvml(FakeNvml(fail=pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)))
    assert snap.reason == "no NVIDIA driver found (NVML: Driver Not Loaded)"
