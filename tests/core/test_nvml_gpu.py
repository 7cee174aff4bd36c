"""On a real GPU: what the fake NVML cannot show (memory v2, the energy counter, end clocks).

Marked ``gpu``: skipped where torch sees no CUDA device (``scripts/gpu-check.sh`` runs them).
"""

from __future__ import annotations

import pytest

from gpusession.core.gpu.nvml import ENERGY_UNSUPPORTED, RunMeter, read_nvml


@pytest.mark.gpu
def test_h07_memory_v2_reads_no_more_used_than_v1_on_the_real_driver() -> None:
    import pynvml

    snap = read_nvml()
    assert snap.available, snap.reason
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        v1 = int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
    finally:
        pynvml.nvmlShutdown()
    used = snap.gpus[0].memory_used_bytes
    assert used is not None and used <= v1  # v2 leaves the driver's reserved memory out


@pytest.mark.gpu
def test_r10_a_real_runs_energy_is_positive_or_said_unsupported() -> None:
    import torch

    snap = read_nvml()
    gpu = snap.gpus[0]
    meter = RunMeter([(gpu.index, gpu.uuid)])
    a = torch.randn(8192, 8192, device="cuda:0")
    torch.cuda.synchronize()
    before = meter.start()
    for _ in range(40):
        a = a @ a
        a = a / a.norm()
    torch.cuda.synchronize()
    energy, clocks = meter.stop(before)
    meter.close()
    if energy.energy_j is None:
        assert energy.reason is not None and energy.reason.startswith(ENERGY_UNSUPPORTED)
    else:
        assert energy.energy_j > 0
    assert clocks.unread == (), clocks.unread  # the end-of-run clocks were read
