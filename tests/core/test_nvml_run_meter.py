"""core/gpu/nvml RunMeter: energy and clocks at a measured run's boundaries (R10).

The fake NVML's energy counter is advanced by hand between the two boundaries, as a
run's draw would.
"""

from __future__ import annotations

from gpusession.core.gpu.nvml import ENERGY_UNSUPPORTED, RunMeter
from gpusession.testing import FakeGpu, FakeNvml


def _gpus() -> list[FakeGpu]:
    return [FakeGpu(uuid="GPU-aaaa", energy_mj=5_000_000), FakeGpu(uuid="GPU-bbbb", energy_mj=9_000_000)]


def test_r10_energy_of_a_run_is_the_counter_difference_summed_over_its_gpus() -> None:
    gpus = _gpus()
    fake = FakeNvml(gpus)
    meter = RunMeter([(1, "GPU-bbbb"), (0, "GPU-aaaa")], fake)
    before = meter.start()
    gpus[0].energy_mj += 23_400  # 23.4 J
    gpus[1].energy_mj += 100_000  # 100 J
    energy, clocks = meter.stop(before)
    assert energy.per_gpu_j == (("GPU-bbbb", 100.0), ("GPU-aaaa", 23.4))
    assert energy.energy_j == 123.4 and energy.words() == "energy 123.4 J"
    assert clocks.words() is None
    meter.close()
    assert (fake.init_calls, fake.shutdown_calls) == (1, 1)  # NVML kept open across the run


def test_r10_energy_not_supported_is_said_never_zero() -> None:
    gpus = _gpus()
    gpus[1].energy_mj = None  # no counter (before Volta)
    meter = RunMeter([(0, "GPU-aaaa"), (1, "GPU-bbbb")], FakeNvml(gpus))
    before = meter.start()
    gpus[0].energy_mj += 2_500  # GPU 0 drew 2.5 J
    energy, _clocks = meter.stop(before)
    assert energy.energy_j is None
    assert energy.words() == f"{ENERGY_UNSUPPORTED} (NVML: Not Supported)"
    assert dict(energy.per_gpu_j) == {"GPU-aaaa": 2.5, "GPU-bbbb": None}


def test_h07_energy_without_nvml_is_said_not_measured() -> None:
    meter = RunMeter([(0, "GPU-aaaa")], FakeNvml(fail="Driver Not Loaded"))
    energy, clocks = meter.stop(meter.start())
    assert energy.energy_j is None
    assert energy.words().startswith("energy not measured: NVML could not start (no NVIDIA driver found")
    assert clocks.throttled == ()


def test_r10_a_throttled_run_is_named_by_reason_or_clock_below_the_application_clock() -> None:
    gpus = _gpus()
    meter = RunMeter([(0, "GPU-aaaa"), (1, "GPU-bbbb")], FakeNvml(gpus))
    before = meter.start()
    gpus[0].throttle_reasons = 0x4 | 0x40  # software power cap, hardware thermal slowdown
    gpus[1].throttle_reasons = 0x0
    gpus[1].sm_clock_mhz, gpus[1].applications_clock_mhz = 1410, 1980
    _energy, clocks = meter.stop(before)
    assert clocks.words() == ("throttled at the end of the run: GPU-aaaa: software power cap, hardware "
                              "thermal slowdown; GPU-bbbb: SM clock 1410 MHz below the application "
                              "clock 1980 MHz")


def test_r10_an_idle_gpu_below_its_application_clock_is_not_throttled() -> None:
    gpus = _gpus()
    gpus[0].throttle_reasons = 0x1  # idle: the clock drops, no slowdown
    gpus[0].sm_clock_mhz, gpus[0].applications_clock_mhz = 210, 1980
    meter = RunMeter([(0, "GPU-aaaa")], FakeNvml(gpus))
    assert meter.stop(meter.start())[1].words() is None


def test_r10_a_mig_instance_is_never_given_its_whole_gpus_energy() -> None:
    meter = RunMeter([(0, "MIG-1a2b")], FakeNvml(_gpus()))
    energy, _clocks = meter.stop(meter.start())
    assert energy.energy_j is None
    assert energy.words() == "energy not measured: a MIG instance has no energy counter of its own"
