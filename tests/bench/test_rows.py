"""The rows of a run from what its worker reported, without a process (bench/rows.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusession.bench.rows import (
    LoadSlot,
    base_row,
    died_loading_row,
    died_run_row,
    finished_run_row,
    load_failed_row,
    load_row,
    run_row,
)
from gpusession.bench.timing import RESERVED_CARRY_NOTE
from gpusession.core.events import WorkerApplied, WorkerLoaded, WorkerRunFinished
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.records.results import ResultRow

EXP = Experiment(id="e", workload="synthetic-mlp", varied="batch", values=(4, 8),
                 context_limit=512, seed=7, precision="fp16")
WARM = ScheduledRun(phase="warm", variant_id="batch-8", run_index=2, worker="warm")
COLD = ScheduledRun(phase="cold", variant_id="batch-4", run_index=1, worker="cold-batch-4-1")
NO_LOAD = None  # a quiet load (ConcurrentLoad.quiet): the recorder passes no words


APPLIED = WorkerApplied(seed=7, seeded=["random", "numpy", "torch"], precision="fp16", context_limit=512)


def _base(applied: WorkerApplied | None = APPLIED) -> ResultRow:
    return base_row(EXP, environment={"device": "cuda:0", "gpu_model": "RTX A5000", "gpu_count": 1,
                                      "torch_version": "2.4.0"},
                    revisions={"model_revision": "m1", "tokenizer_revision": "t1"},
                    corpus_revision="c1", duration_days=7, lots=1, package_total_usd_minor=1234,
                    applied=applied)


def _finished(**kw: Any) -> WorkerRunFinished:
    base: dict[str, Any] = dict(run_key=WARM.run_key, ok=True, phase="warm", warmup_iterations=2,
                                elapsed_s=0.25, baseline_allocated_bytes=10, baseline_reserved_bytes=20,
                                peak_allocated_bytes=30, peak_reserved_bytes=40, output="out.jsonl")
    base.update(kw)
    return WorkerRunFinished(**base)


def _finish(ev: WorkerRunFinished, **kw: Any) -> tuple[ResultRow, str | None]:
    row = run_row(_base(), EXP, WARM, phase=ev.phase, warmup_iterations=ev.warmup_iterations)
    args: dict[str, Any] = dict(validation=None, ended=None, load_note=NO_LOAD)
    args.update(kw)
    return finished_run_row(row, WARM, ev, **args)


def test_r10_base_row_carries_the_environment_revisions_and_package() -> None:
    row = _base()
    assert (row.experiment_id, row.seed, row.precision) == ("e", 7, "fp16")
    assert (row.device, row.gpu_model, row.gpu_count, row.torch_version) == ("cuda:0", "RTX A5000", 1, "2.4.0")
    assert (row.model_revision, row.tokenizer_revision, row.corpus_revision) == ("m1", "t1", "c1")
    assert (row.duration_days, row.lots, row.package_total_usd_minor) == (7, 1, 1234)
    assert row.driver_version is None  # not observed: empty, never made up


def test_a2_seed_and_precision_are_the_workers_never_the_definitions() -> None:
    """The worker's echo fills the cells; a worker that said nothing leaves them empty (A2)."""
    other = WorkerApplied(seed=3, precision="bf16")
    assert (_base(other).seed, _base(other).precision) == (3, "bf16")  # not EXP's 7 and fp16
    assert (_base(None).seed, _base(None).precision) == (None, None)  # never the definition's


def test_a2_run_row_takes_batch_context_seed_precision_from_the_runs_echo() -> None:
    echo = {"batch": 3, "context": 64, "seed": 11, "precision": "fp32"}
    row = run_row(_base(), EXP, WARM, phase="warm", warmup_iterations=0, applied=echo)
    assert (row.batch, row.context, row.seed, row.precision) == (3, 64, 11, "fp32")
    command = run_row(_base(None), EXP, WARM, phase="warm", warmup_iterations=0, applied={"batch": 8})
    assert (command.batch, command.context, command.seed, command.precision) == (8, None, None, None)


def test_s7_load_slot_counts_a_cold_load_under_its_variant_and_a_warm_one_under_all() -> None:
    assert LoadSlot.variant_of([COLD]) == "batch-4"
    assert LoadSlot.variant_of([WARM, COLD]) == "all"
    slot = LoadSlot.of("e", "all", 3)
    assert (slot.key.format(), slot.key.local) == ("e:load:all:3", "load:all:3")


def test_r3_load_row_holds_the_timed_load_and_names_its_worker() -> None:
    ev = WorkerLoaded(elapsed_s=1.5, baseline_allocated_bytes=1, baseline_reserved_bytes=2,
                      peak_allocated_bytes=3, peak_reserved_bytes=4)
    row = load_row(_base(), LoadSlot.of("e", "all", 1), ev, "warm")
    assert (row.phase, row.variant_id, row.run_index, row.elapsed_seconds) == ("load", "all", 1, 1.5)
    assert (row.baseline_allocated_bytes, row.peak_reserved_bytes) == (1, 4)
    assert row.notes == "load of worker warm (model to device, timed once per process)"


def test_r7_a_failed_load_keeps_its_row_with_the_incident_and_no_verdict() -> None:
    slot = LoadSlot.of("e", "batch-4", 2)
    failed = load_failed_row(_base(), slot, "load: ImportError: no module named x")
    assert failed.notes == "incident: load failed: load: ImportError: no module named x"
    died = died_loading_row(_base(), slot, "worker cold-batch-4-1 killed by signal SIGKILL (9)")
    assert died.notes == "incident: worker cold-batch-4-1 killed by signal SIGKILL (9) while loading"
    for row in (failed, died):
        assert (row.phase, row.variant_id, row.run_index) == ("load", "batch-4", 2)
        assert row.elapsed_seconds is None and row.corpus_accepted is None


def test_r4_run_row_takes_phase_and_warmup_from_the_worker_not_the_definition() -> None:
    row = run_row(_base(), EXP, WARM, phase="cold", warmup_iterations=1)
    assert (row.phase, row.warmup_iterations, row.batch, row.context) == ("cold", 1, 8, 512)
    assert run_row(_base(), EXP, WARM, phase=None, warmup_iterations=0).phase == "warm"


def test_r7_a_run_its_worker_died_in_carries_the_warmup_reported_and_no_verdict() -> None:
    warm = died_run_row(_base(), EXP, WARM, {"batch-8": 2}, "worker warm died")
    assert (warm.warmup_iterations, warm.notes) == (2, "incident: worker warm died during this run")
    assert warm.elapsed_seconds is None and warm.corpus_accepted is None
    cold = died_run_row(_base(), EXP, COLD, {"batch-4": 2}, "x")
    assert cold.warmup_iterations == 0  # a cold run follows no warm-up


def test_m1_a_measured_warm_run_has_its_figures_validation_and_the_carry_note() -> None:
    validation = ({"corpus_accepted": True, "ids_match": True}, None)
    row, incident = _finish(_finished(), validation=validation)
    assert incident is None
    assert (row.elapsed_seconds, row.baseline_allocated_bytes, row.peak_reserved_bytes) == (0.25, 10, 40)
    assert (row.corpus_accepted, row.ids_match) == (True, True)
    assert row.notes == RESERVED_CARRY_NOTE


def test_r7_notes_of_a_returned_run_say_its_incident_unmeasured_pass_and_load() -> None:
    ev = _finished(phase="cold", peak_reserved_bytes=None, message="predict returned 3 labels for 4 inputs",
                   unmeasured_pass="after an out-of-memory run", truncated=1200, n_inputs=2000)
    row, incident = _finish(ev, validation=({}, "validation failed: bad line 3"),
                            load_note="other GPU processes: 1 (pid 9, 2 GiB)")
    assert incident is None
    assert row.notes == ("incident: predict returned 3 labels for 4 inputs; "  # incidents first
                         "truncated 1,200 of 2,000 inputs at the context limit of 512 tokens; "
                         "preceded by one unmeasured pass after an out-of-memory run; "
                         "validation failed: bad line 3; "
                         "concurrent load at start: other GPU processes: 1 (pid 9, 2 GiB)")


def test_r7_a_run_with_nothing_to_say_has_empty_notes() -> None:
    row, _ = _finish(_finished(phase="cold", peak_reserved_bytes=None))
    assert row.notes is None


@pytest.mark.parametrize(("oom", "error_type", "kind"), [
    (True, "OutOfMemoryError", "out of memory"),
    (False, "BadInput", "output refused"),
    (False, "ValueError", "exception in the workload"),
])
def test_r7_a_failed_run_keeps_its_row_with_the_incident_first(oom: bool, error_type: str, kind: str) -> None:
    ev = _finished(ok=False, oom=oom, error_type=error_type, message="boom", elapsed_s=None,
                   rank_note="2 ranks; slowest rank 1")
    row, incident = _finish(ev, validation=({"corpus_accepted": True}, None))
    assert row.elapsed_seconds is None and row.peak_reserved_bytes is None
    assert row.corpus_accepted is None  # never validated: no verdict, never false
    assert row.notes == f"incident: {kind}: {error_type}: boom; elapsed not measured; 2 ranks; slowest rank 1"
    assert incident == f"run warm:batch-8:2: {kind}: {error_type}: boom"


def test_r7_a_torn_run_says_how_its_group_ended_in_notes_and_incident() -> None:
    ended = "the group ended with this run: rank 1 of 2 exited with code 5"
    ev = _finished(ok=False, error_type="RuntimeError", message="boom", failed_rank=1)
    row, incident = _finish(ev, ended=ended)
    assert row.notes is not None and row.notes.endswith(f"elapsed not measured; {ended}")
    assert incident == f"run warm:batch-8:2: exception in the workload: RuntimeError: boom; {ended}"


def test_r10_the_frameworks_recorded_are_those_the_workload_uses_not_the_workers_torch() -> None:
    """A scikit-learn workload reads "torch not used, frameworks scikit-learn …"."""
    import sys
    import types

    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression

    from gpusession.bench.device import frameworks_used
    from gpusession.core.events.words import _environment_words

    mod = types.ModuleType("sk_workload_for_test")
    exec("from sklearn.linear_model import LogisticRegression\n"
         "class W:\n    def __init__(self):\n        self.model = LogisticRegression()\n", mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        found = frameworks_used(mod.W())
    finally:
        del sys.modules[mod.__name__]
    assert list(found) == ["scikit-learn"] and found["scikit-learn"][0].isdigit()
    assert frameworks_used(types.SimpleNamespace(model=LogisticRegression())) == found
    torch = pytest.importorskip("torch")
    assert list(frameworks_used(types.SimpleNamespace(net=torch.nn.Linear(2, 2)))) == ["torch"]
    words = _environment_words({"device": "cpu", "torch_version": None, "frameworks": "scikit-learn 1.5.2"})
    assert "torch not used, frameworks scikit-learn 1.5.2" in words


def test_r10_a_runs_energy_and_throttle_go_into_its_notes_failed_or_not() -> None:
    row, _ = _finish(_finished(energy_j=123.4, energy_words="energy 123.4 J",
                               throttled="throttled at the end of the run: GPU-a: software power cap"))
    assert row.notes is not None
    assert "energy 123.4 J" in row.notes
    assert "throttled at the end of the run: GPU-a: software power cap" in row.notes
    failed, _ = _finish(_finished(ok=False, oom=True, error_type="OutOfMemoryError", message="CUDA out of memory",
                                  energy_j=61.7, energy_words="energy 61.7 J"))
    assert failed.notes is not None and "energy 61.7 J" in failed.notes
    unsupported, _ = _finish(_finished(energy_words="energy not supported by this GPU (NVML: Not Supported)"))
    assert unsupported.notes is not None and "energy not supported by this GPU" in unsupported.notes
    assert "energy 0" not in unsupported.notes


def test_m1_r7_notes_name_the_gpu_of_the_figures_and_a_failed_runs_peaks_and_end() -> None:
    note = "allocator figures from cuda:1, the largest of 2 GPUs used (cuda:0, cuda:1)"
    row, _ = _finish(_finished(memory_note=note))
    assert row.notes == f"{note}; {RESERVED_CARRY_NOTE}"
    ends = "the GPU reported an unrecoverable error; the remaining runs go on in a fresh worker"
    ev = _finished(ok=False, error_type="AcceleratorError", message="CUDA error: an illegal memory access",
                   failed_peak_allocated_bytes=3 << 30, failed_peak_reserved_bytes=6 << 30,
                   unrecoverable=True, worker_ends=ends)
    row, incident = _finish(ev)
    assert row.peak_reserved_bytes is None  # the figures stay empty: nothing was measured
    assert row.notes == ("incident: exception in the workload: AcceleratorError: CUDA error: an illegal "
                         "memory access; elapsed not measured; allocator peaks before the failure: "
                         f"allocated 3.00 GiB, reserved 6.00 GiB; {ends}")
    assert incident is not None and incident.endswith(ends)


def test_m1_r3_a_load_row_names_the_gpu_of_its_figures_and_the_group_set_up() -> None:
    slot = LoadSlot.of("e", "all", 1)
    ev = WorkerLoaded(elapsed_s=2.0, peak_reserved_bytes=40, memory_note="allocator figures from cuda:1",
                      setup_note="the CUDA context (0.4 s) is in the load")
    row = load_row(_base(), slot, ev, "warm")
    assert row.notes == ("load of worker warm (model to device, timed once per process); "
                         "allocator figures from cuda:1; the CUDA context (0.4 s) is in the load")
