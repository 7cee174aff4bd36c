"""A measured run's energy and clocks: read at its boundaries, never inside the timer (R10).

The worker's phase runs with a stand-in device (CPU), a stand-in timer that logs where
its interval starts and stops, and the real :class:`RunMeter` on the fake NVML, whose
counter the workload advances as a GPU's draw would.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpusession.bench.device import meter_gpus
from gpusession.bench.phases import Inputs, TorchWork, measured_run
from gpusession.bench.timing import Measurement
from gpusession.core.gpu.nvml import RunMeter
from gpusession.testing import FakeGpu, FakeNvml


class LoggingNvml(FakeNvml):
    def __init__(self, gpus: list[FakeGpu], log: list[str]) -> None:
        super().__init__(gpus)
        self.log = log

    def nvmlDeviceGetTotalEnergyConsumption(self, h: FakeGpu) -> int:  # noqa: N802
        self.log.append("energy read")
        return super().nvmlDeviceGetTotalEnergyConsumption(h)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: FakeGpu) -> int:  # noqa: N802
        self.log.append("clocks read")
        return super().nvmlDeviceGetCurrentClocksEventReasons(h)


class LoggingTimer:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def measure(self, work: Any) -> Measurement:
        self.log.append("timer start")
        result = work()
        self.log.append("timer stop")
        return Measurement(elapsed_ns=1_000_000, result=result)

    def peaks(self) -> dict[str, tuple[int, int]]:
        return {}  # a CPU timer reads no allocator


class Workload:
    def __init__(self, gpu: FakeGpu, log: list[str], fail: bool = False) -> None:
        self.gpu, self.log, self.fail = gpu, log, fail

    def predict(self, texts: list[str]) -> list[str]:
        self.log.append("work")
        self.gpu.energy_mj = (self.gpu.energy_mj or 0) + 61_700  # 61.7 J
        if self.fail:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return ["a"] * len(texts)


def _work(tmp_path: Path, gpu: FakeGpu, log: list[str], *, fail: bool = False) -> TorchWork:
    spec = {"experiment": {"scope": "processing"}, "output_dir": str(tmp_path / "runs" / "exp")}
    ids = ["d1", "d2", "d3"]
    inputs = Inputs(None, ids, ["x"] * 3, ["x"] * 3)
    meter = RunMeter([(0, gpu.uuid)], LoggingNvml([gpu], log))
    return TorchWork(spec, SimpleNamespace(), None, SimpleNamespace(is_gpu=False),
                     Workload(gpu, log, fail), inputs, LoggingTimer(log), meter=meter)  # type: ignore[arg-type]


def _run(w: TorchWork, tmp_path: Path) -> dict[str, Any]:
    run = {"batch": 2, "phase": "warm", "variant_id": "batch-2", "run_key": "warm:batch-2:1"}
    (tmp_path / "runs" / "exp").mkdir(parents=True, exist_ok=True)
    fields, _oom = measured_run(w, run, tmp_path / "runs" / "exp" / "out.jsonl", 1, {}, False, None)
    return fields


def test_r10_run_energy_read_at_the_boundaries_outside_the_timed_region(tmp_path: Path) -> None:
    log: list[str] = []
    gpu = FakeGpu(uuid="GPU-aaaa", energy_mj=1_000_000)
    fields = _run(_work(tmp_path, gpu, log), tmp_path)
    assert log == ["energy read", "timer start", "work", "work", "timer stop", "energy read", "clocks read"]
    assert fields["energy_j"] == 123.4 and fields["energy_words"] == "energy 123.4 J"
    assert fields["throttled"] is None and fields["ok"] is True


def test_r10_a_failed_run_keeps_the_energy_it_drew(tmp_path: Path) -> None:
    log: list[str] = []
    gpu = FakeGpu(uuid="GPU-aaaa", energy_mj=1_000_000)
    fields = _run(_work(tmp_path, gpu, log, fail=True), tmp_path)
    assert fields["oom"] is True and fields["energy_j"] == 61.7


def test_r10_a_run_throttled_at_its_end_is_named(tmp_path: Path) -> None:
    log: list[str] = []
    gpu = FakeGpu(uuid="GPU-aaaa", throttle_reasons=0x20)  # software thermal slowdown
    fields = _run(_work(tmp_path, gpu, log), tmp_path)
    assert fields["throttled"] == "throttled at the end of the run: GPU-aaaa: software thermal slowdown"


def test_r10_unsupported_energy_is_said_in_the_run_fields(tmp_path: Path) -> None:
    log: list[str] = []
    gpu = FakeGpu(uuid="GPU-aaaa", energy_mj=None)
    fields = _run(_work(tmp_path, gpu, log), tmp_path)
    assert fields["energy_j"] is None
    assert fields["energy_words"] == "energy not supported by this GPU (NVML: Not Supported)"
    assert fields["energy_unsupported"] is True  # typed by the meter: the row never reads it from the words


def test_r10_a1_the_rows_energy_fact_takes_unsupported_from_the_typed_flag_not_the_words() -> None:
    from gpusession.core.records.notefacts import Energy

    said = "energy not supported by this GPU (NVML: Not Supported)"
    assert Energy.of_worker(None, said, unsupported=True).unsupported  # type: ignore[union-attr]
    assert not Energy.of_worker(None, said).unsupported  # type: ignore[union-attr]  # the words alone decide nothing
    assert Energy.of_worker(12.5, "energy 12.5 J").joules == 12.5  # type: ignore[union-attr]


def test_r10_meter_reads_every_gpu_held_and_a_groups_leader_reads_every_rank() -> None:
    one = meter_gpus({}, [("GPU-aaaa", 0), ("GPU-bbbb", 1), ("GPU-aaaa", 0)], None)
    assert one == [(0, "GPU-aaaa"), (1, "GPU-bbbb")]
    env = {"rank_gpu_uuids": ["GPU-aaaa", "GPU-bbbb"], "rank_hosts": ["h", "h"]}
    assert meter_gpus(env, [("GPU-aaaa", 0)], True) == [(None, "GPU-aaaa"), (None, "GPU-bbbb")]
    assert meter_gpus(env, [("GPU-bbbb", 1)], False) is None  # the leader reads it
    assert meter_gpus({**env, "rank_hosts": ["h1", "h2"]}, [("GPU-aaaa", 0)], True) == []


def test_r10_a_group_on_several_hosts_says_its_energy_is_not_measured() -> None:
    from gpusession.bench.device import SEVERAL_HOSTS

    fake = FakeNvml([FakeGpu()])
    meter = RunMeter([], fake, refused=SEVERAL_HOSTS)
    energy, clocks = meter.stop(meter.start())
    meter.close()
    assert (energy.energy_j, energy.words()) == (None, SEVERAL_HOSTS)
    assert meter.stop(meter.start())[0].words() == SEVERAL_HOSTS and fake.init_calls == 0


class OneHostGroup:
    """A leader of two ranks, one GPU each: ``measure`` stands for the barriers and the work."""

    world_size = 2
    is_leader = True

    def __init__(self, gpus: list[FakeGpu], log: list[str]) -> None:
        self.gpus, self.log = gpus, log

    def measure(self, timer: Any, work: Any, *, gpu_uuid: Any, on_failure: Any) -> Any:
        from gpusession.bench.rank_group import RankRun

        self.log.append("barriers and work")
        self.gpus[0].energy_mj = (self.gpus[0].energy_mj or 0) + 10_000
        self.gpus[1].energy_mj = (self.gpus[1].energy_mj or 0) + 12_500
        per_rank = [{"rank": r, "world_size": 2, "device": f"cuda:{r}", "gpu_uuid": g.uuid, "ok": True,
                     "elapsed_s": 0.1} for r, g in enumerate(self.gpus)]
        return RankRun(0.1, per_rank, result=["a"])

    def gather_to_first(self, labels: list[str]) -> list[str]:
        return labels * 3


def test_r10_a_groups_leader_reads_every_ranks_gpu_and_ranks_csv_keeps_each(tmp_path: Path) -> None:
    from gpusession.core.records.ranks import read_rank_rows

    log: list[str] = []
    gpus = [FakeGpu(uuid="GPU-aaaa", energy_mj=0), FakeGpu(uuid="GPU-bbbb", energy_mj=0)]
    w = _work(tmp_path, gpus[0], log)
    w.group = OneHostGroup(gpus, log)
    w.meter = RunMeter([(None, "GPU-aaaa"), (None, "GPU-bbbb")], LoggingNvml(gpus, log))
    w.spec["worker"] = "warm"
    fields = _run(w, tmp_path)
    assert log[:3] == ["energy read", "energy read", "barriers and work"]
    assert fields["energy_j"] == 22.5 and fields["energy_words"] == "energy 22.5 J"
    rows = read_rank_rows(tmp_path / "runs" / "exp" / "ranks.csv")
    assert [(r["gpu_uuid"], r["energy_j"]) for r in rows] == [("GPU-aaaa", 10.0), ("GPU-bbbb", 12.5)]


def test_r10_a_counter_that_did_not_move_is_unread_never_zero_joules() -> None:
    gpu = FakeGpu(uuid="GPU-aaaa", energy_mj=1_000_000)
    meter = RunMeter([(0, gpu.uuid)], FakeNvml([gpu]))
    before = meter.start()
    energy, _clocks = meter.stop(before)  # nothing drawn between the two reads
    assert energy.energy_j is None and energy.per_gpu_j == (("GPU-aaaa", None),)
    assert energy.words() == "energy unread: the run was shorter than the counter's update"
    assert "0 J" not in energy.words() and "0.0 J" not in energy.words()
    before = meter.start()
    gpu.energy_mj = 1_000_001  # one millijoule moved: a measured figure
    assert meter.stop(before)[0].energy_j == 0.001
