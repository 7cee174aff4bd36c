"""The worker's phases on stand-in GPUs: failures, several devices, the event stream (R3, R7, M1).

A library's allocation failure is an out-of-memory (the next run gets its unmeasured
pass); a sticky CUDA error ends the worker and the runner goes on in a fresh one; a
failed run keeps the allocator peaks it reached. With several GPUs used the load's and
a run's allocator figures are the largest, naming the device; a run says which stream
its CUDA events timed. No GPU: the devices are stand-ins (the GPU twins are marked gpu).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.bench.device import Channel, TorchDevice
from gpusession.bench.phases import (
    Inputs,
    TorchWork,
    is_oom,
    is_unrecoverable,
    load_phase,
    measured_phase,
    measured_run,
)
from gpusession.bench.timing import SyncTimer, TorchCudaOps
from gpusession.core.events import WorkerDone, WorkerEvent, WorkerRunFinished

CUBLAS = "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"
CUDNN = "cuDNN error: CUDNN_STATUS_ALLOC_FAILED"
CUDNN_INIT = "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
STICKY = [
    "CUDA error: an illegal memory access was encountered",
    "CUDA error: device-side assert triggered",
    "CUDA error: unspecified launch failure",
    "RuntimeError: cudaErrorIllegalAddress",
]


@pytest.mark.parametrize("text", [CUBLAS, CUDNN, CUDNN_INIT])
def test_r7_a_librarys_allocation_failure_is_out_of_memory(text: str) -> None:
    exc = RuntimeError(text)
    assert is_oom(exc)
    assert not is_unrecoverable(exc)  # the unmeasured pass, then the same worker goes on


@pytest.mark.parametrize("text", STICKY)
def test_r7_a_sticky_cuda_error_is_unrecoverable_and_not_out_of_memory(text: str) -> None:
    exc = RuntimeError(text)
    assert is_unrecoverable(exc)
    assert not is_oom(exc)
    assert not is_unrecoverable(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not is_unrecoverable(ValueError("bad batch"))


class FakeAllocator:
    """``DeviceOps`` of stand-in GPUs: work allocates at once, peaks reset by name."""

    def __init__(self, devices: tuple[str, ...] = ("cuda:0",)) -> None:
        self.allocated = dict.fromkeys(devices, 0)
        self.reserved = dict.fromkeys(devices, 0)
        self.peak_alloc = dict.fromkeys(devices, 0)
        self.peak_res = dict.fromkeys(devices, 0)

    def hold(self, device: str, n: int) -> None:
        self.allocated[device] += n
        self.reserved[device] = max(self.reserved[device], self.allocated[device] * 2)
        self.peak_alloc[device] = max(self.peak_alloc[device], self.allocated[device])
        self.peak_res[device] = max(self.peak_res[device], self.reserved[device])

    def free(self, device: str) -> None:
        self.allocated[device] = 0

    def synchronize(self, device: str) -> None:
        pass

    def memory_allocated(self, d: str) -> int:
        return self.allocated[d]

    def memory_reserved(self, d: str) -> int:
        return self.reserved[d]

    def reset_peak_memory_stats(self, d: str) -> None:
        self.peak_alloc[d], self.peak_res[d] = self.allocated[d], self.reserved[d]

    def max_memory_allocated(self, d: str) -> int:
        return self.peak_alloc[d]

    def max_memory_reserved(self, d: str) -> int:
        return self.peak_res[d]


class OutOfMemoryError(RuntimeError):
    """torch's class name for a device out of memory."""


class Recorder(Channel):
    """A channel that keeps the events and answers ``go`` to each ``ready``."""

    def __init__(self, runs: int) -> None:
        super().__init__(io.StringIO(), io.StringIO("go\n" * runs))
        self.events: list[WorkerEvent] = []

    def send(self, event: WorkerEvent) -> None:
        self.events.append(event)


def _gpu_dev() -> TorchDevice:
    dev = TorchDevice.__new__(TorchDevice)  # no real torch device needed
    dev.torch = SimpleNamespace(cuda=SimpleNamespace(empty_cache=lambda: None))
    dev.device = "cuda:0"
    dev.index = 0
    return dev


def _work(tmp_path: Path, workload: Any, ops: FakeAllocator, runs: int) -> TorchWork:
    session = tmp_path / "s"
    session.mkdir(mode=0o700, exist_ok=True)
    spec = {"experiment": {"id": "e"}, "output_dir": str(session / "runs" / "e"),
            "runs": [{"run_key": f"warm:batch-2:{i}", "variant_id": "batch-2", "phase": "warm",
                      "run_index": i, "batch": 2} for i in range(1, runs + 1)]}
    inputs = Inputs(None, ["t-0", "t-1"], ["a w", "b w"], ["a w", "b w"])
    return TorchWork(spec, Recorder(runs), None, _gpu_dev(), workload, inputs,
                     SyncTimer(["cuda:0"], ops))


def test_r7_m1_a_failed_run_keeps_the_peaks_it_reached_before_the_failure(tmp_path: Path) -> None:
    ops = FakeAllocator()

    class Fills:
        def predict(self, texts: list[str]) -> list[str]:
            ops.hold("cuda:0", 3 << 30)  # 3 GiB held, then the next allocation fails
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    w = _work(tmp_path, Fills(), ops, runs=1)
    run = w.spec["runs"][0]
    fields, ran_out = measured_run(w, run, tmp_path / "out.jsonl", 1, {}, False, None)
    assert ran_out and fields["oom"] is True and fields["ok"] is False
    assert fields["failed_peak_allocated_bytes"] == 3 << 30
    assert fields["failed_peak_reserved_bytes"] == 6 << 30
    from gpusession.bench.rows import failure_peaks_words

    words = failure_peaks_words(WorkerRunFinished(**{"run_key": run["run_key"], **fields}))
    assert words == "allocator peaks before the failure: allocated 3.00 GiB, reserved 6.00 GiB"


def test_r7_a_sticky_error_ends_the_worker_after_its_run_saying_a_fresh_one_goes_on(tmp_path: Path) -> None:
    calls: list[int] = []

    class Sticky:
        def predict(self, texts: list[str]) -> list[str]:
            calls.append(len(texts))
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    w = _work(tmp_path, Sticky(), FakeAllocator(), runs=3)
    assert measured_phase(w, {}, False, None) == 0
    assert isinstance(w.ch, Recorder)
    finished = [e for e in w.ch.events if isinstance(e, WorkerRunFinished)]
    assert len(finished) == 1 and calls == [2]  # the runs left are not tried in this process
    ev = finished[0]
    assert ev.unrecoverable is True and not ev.ok and not ev.oom
    assert ev.worker_ends == ("the GPU reported an unrecoverable error; "
                              "the remaining runs go on in a fresh worker")
    assert not any(isinstance(e, WorkerDone) for e in w.ch.events)  # it did not run its share


def test_r7_a_sticky_error_in_the_warm_up_ends_the_worker_before_its_runs_saying_so(tmp_path: Path) -> None:
    from gpusession.bench.phases import warmup_phase
    from gpusession.core.events import WorkerIncident

    class Sticky:
        def predict(self, texts: list[str]) -> list[str]:
            raise RuntimeError("CUDA error: device-side assert triggered")

    w = _work(tmp_path, Sticky(), FakeAllocator(), runs=2)
    w.spec.update(warmup=[{"variant_id": "batch-2", "batch": 2}, {"variant_id": "batch-4", "batch": 4}],
                  warmup_iterations=2)
    done, _ = warmup_phase(w)
    assert done == {"batch-2": 0}  # the other variant's warm-up is not tried in this process
    assert measured_phase(w, done, False, None) == 0
    assert isinstance(w.ch, Recorder)
    assert not any(isinstance(e, WorkerRunFinished | WorkerDone) for e in w.ch.events)
    said = [e for e in w.ch.events if isinstance(e, WorkerIncident)]
    assert said[-1].message == ("the GPU reported an unrecoverable error in the warm-up; "
                                "the worker ended before its measured runs")
    assert said[-1].error_type == "RuntimeError"


def test_r7_an_ordinary_exception_keeps_the_worker_going(tmp_path: Path) -> None:
    class Refuses:
        def predict(self, texts: list[str]) -> list[str]:
            raise ValueError("bad batch")

    w = _work(tmp_path, Refuses(), FakeAllocator(), runs=2)
    assert measured_phase(w, {}, False, None) == 0
    assert isinstance(w.ch, Recorder)
    finished = [e for e in w.ch.events if isinstance(e, WorkerRunFinished)]
    assert len(finished) == 2 and all(e.worker_ends is None for e in finished)
    assert isinstance(w.ch.events[-1], WorkerDone)


class TwoGpus:
    """``torch.cuda`` of two stand-in GPUs, by index or device; reserved is twice allocated."""

    def __init__(self) -> None:
        self.alloc = {0: 0, 1: 0}
        self.res = {0: 0, 1: 0}
        self.peak_a = {0: 0, 1: 0}
        self.peak_r = {0: 0, 1: 0}

    @staticmethod
    def _i(d: Any) -> int:
        return d if isinstance(d, int) else int(d.index)

    def hold(self, i: int, n: int) -> None:
        self.alloc[i] += n
        self.res[i] = max(self.res[i], 2 * self.alloc[i])
        self.peak_a[i] = max(self.peak_a[i], self.alloc[i])
        self.peak_r[i] = max(self.peak_r[i], self.res[i])

    def device_count(self) -> int:
        return 2

    def set_device(self, i: int) -> None:
        pass

    def synchronize(self, d: Any = None) -> None:
        pass

    def memory_allocated(self, d: Any) -> int:
        return self.alloc[self._i(d)]

    def memory_reserved(self, d: Any) -> int:
        return self.res[self._i(d)]

    def reset_peak_memory_stats(self, d: Any) -> None:
        i = self._i(d)
        self.peak_a[i], self.peak_r[i] = self.alloc[i], self.res[i]

    def max_memory_allocated(self, d: Any) -> int:
        return self.peak_a[self._i(d)]

    def max_memory_reserved(self, d: Any) -> int:
        return self.peak_r[self._i(d)]


def _torch_of(cuda: Any) -> Any:
    def device(name: str) -> Any:
        kind, _, idx = name.partition(":")
        return SimpleNamespace(type=kind, index=int(idx) if idx else None)

    return SimpleNamespace(cuda=cuda, device=device)


def test_m1_the_load_keeps_the_largest_peak_over_every_gpu_it_used_naming_it() -> None:
    gpus = TwoGpus()
    gpus.hold(0, 5 << 20)  # something already held on cuda:0 before the load

    class Spread:
        def load(self, device: str, precision: str, context_limit: int | None) -> None:
            gpus.hold(0, 1 << 20)
            gpus.hold(1, 8 << 20)  # the larger part of the model on the second GPU

        def devices_used(self) -> list[str]:
            return ["cuda:0", "cuda:1"]

    dev = _gpu_dev()
    dev.torch = _torch_of(gpus)
    timer = SyncTimer(["cuda:0"], TorchCudaOps(dev.torch))
    loaded = load_phase(dev, Spread(), {}, timer)
    assert loaded.used == ["cuda:0", "cuda:1"]
    fig = loaded.figures(True)
    assert fig["peak_reserved_bytes"] == 16 << 20 and fig["peak_allocated_bytes"] == 8 << 20
    assert fig["baseline_reserved_bytes"] == 0  # cuda:1's own baseline, not cuda:0's 10 MiB
    assert fig["memory_note"] == "allocator figures from cuda:1, the largest of 2 GPUs used (cuda:0, cuda:1)"
    assert loaded.figures(False)["memory_note"] is None


def test_m1_a_run_keeps_the_largest_peak_over_every_gpu_it_used_naming_it(tmp_path: Path) -> None:
    gpus = TwoGpus()

    class Spread:
        def predict(self, texts: list[str]) -> list[str]:
            gpus.hold(0, 3 << 20)
            gpus.hold(1, 1 << 20)
            return ["a"] * len(texts)

    w = _work(tmp_path, Spread(), FakeAllocator(), runs=1)
    w.dev.torch = _torch_of(gpus)
    w.timer = SyncTimer(["cuda:0", "cuda:1"], TorchCudaOps(w.dev.torch))
    fields, _ = measured_run(w, w.spec["runs"][0], tmp_path / "s" / "out.jsonl", 1, {}, False, None)
    assert fields["ok"] is True, fields
    assert fields["peak_reserved_bytes"] == 6 << 20
    assert fields["memory_note"] == "allocator figures from cuda:0, the largest of 2 GPUs used (cuda:0, cuda:1)"


class Streams:
    """``torch.cuda`` streams and events of stand-in GPUs; ``side`` is made current on ``cuda:0``."""

    def __init__(self, side: bool) -> None:
        self.side = side

    def current_stream(self, d: Any = None) -> Any:
        return SimpleNamespace(stream_id=7 if self.side else 0)

    def default_stream(self, d: Any = None) -> Any:
        return SimpleNamespace(stream_id=0)

    @staticmethod
    def device(d: Any) -> Any:
        from contextlib import nullcontext

        return nullcontext()

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            self.stream: Any = None

        def record(self, stream: Any = None) -> None:
            self.stream = stream

        def elapsed_time(self, end: Any) -> float:
            return 2.0

    def synchronize(self, d: Any = None) -> None:
        pass


@pytest.mark.parametrize(("side", "which"), [(False, "the default stream"), (True, "stream 7")])
def test_r8_a_run_says_which_stream_its_events_timed(tmp_path: Path, side: bool, which: str) -> None:
    class Echo:
        def predict(self, texts: list[str]) -> list[str]:
            return ["a"] * len(texts)

    w = _work(tmp_path, Echo(), FakeAllocator(), runs=1)
    ops = TorchCudaOps(_torch_of(Streams(side)))
    w.timer = SyncTimer(["cuda:0"], ops, event_factory=ops.event_pair("cuda:0"))
    w.timer.memory_devices = []
    fields, _ = measured_run(w, w.spec["runs"][0], tmp_path / "s" / "out.jsonl", 1, {}, False, None)
    assert fields["event_elapsed_s"] == 0.002
    assert fields["event_stream"] == f"events timed {which} of cuda:0; wall time covers every stream"


# -- end to end: the runner and real worker processes, a fake workload on the CPU -------
PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}


def _runner_exp(session: Any, **kw: Any) -> Any:
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=8, words=5)
    params = {"log": str(session.folder / "predict.log"), **kw.pop("params", {})}
    base: dict[str, Any] = dict(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(8, 2), runs_per_variant=2, cold_runs_per_variant=0,
        warmup_iterations=0, protocol=PROTOCOL, params=params, device="cpu",
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))


@pytest.mark.torch
def test_r7_a_cublas_allocation_failure_gets_the_unmeasured_pass(
        sessions_root: Path, session: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.bench.runner import Runner

    with_tests_on_path(monkeypatch)
    exp = _runner_exp(session, params={"raise_batch": 8, "raise_message": CUBLAS})
    out = Runner(session, exp.id, continue_on_reject=True).run()  # its first run fails: D3 would stop
    assert out.completed
    failed = [r for r in session.results.rows() if r.variant_id == "batch-8"]
    assert failed and all("out of memory" in (r.notes or "") for r in failed)
    after = [r for r in session.results.rows() if r.variant_id == "batch-2"]
    assert after and all("preceded by one unmeasured pass after an out-of-memory run" in (r.notes or "")
                         for r in after)


@pytest.mark.slow
@pytest.mark.torch
def test_r7_after_a_sticky_error_a_fresh_worker_runs_the_remaining_runs(
        sessions_root: Path, session: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.bench.runner import Runner

    with_tests_on_path(monkeypatch)
    marker = session.folder / "sticky.marker"
    # corpus of 8 at batch 8 and 2: the first measured run is call 1 or calls 1-4
    exp = _runner_exp(session, params={"sticky_call": 1, "sticky_marker": str(marker)})
    out = Runner(session, exp.id, continue_on_reject=True).run()  # its first run fails: D3 would stop
    journal = session.read_journal()
    started = [r["worker"] for r in journal if r.get("event") == "worker_started"]
    assert started == ["warm", "warm-again-2"]
    pids = {r["pid"] for r in journal if r.get("event") == "worker_started"}
    assert len(pids) == 2 and int(marker.read_text()) in pids
    rows = [r for r in session.results.rows() if r.phase == "warm"]
    assert len(rows) == 4  # every scheduled run has its row
    bad, *rest = rows
    assert bad.elapsed_seconds is None and bad.notes is not None
    assert "illegal memory access" in bad.notes
    assert ("the GPU reported an unrecoverable error; the remaining runs go on in a fresh worker"
            in bad.notes)
    assert all(r.elapsed_seconds is not None for r in rest)  # measured in the fresh worker
    assert any("a fresh worker runs them" in i for i in out.incidents)
    assert out.completed
    sizes = [json.loads(x)["batch"] for x in (session.folder / "predict.log").read_text().splitlines()]
    assert sizes  # the fresh worker predicted
