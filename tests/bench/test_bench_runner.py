"""Runner + worker end to end with fake workloads (R2-R10 failures, H-03, H-12, M4, M5).

A few tests of the runner's own logic (the schedule, a cancel) replay their workers in
this process (:mod:`fake_launcher`); the others start real workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_launcher import ReplayLauncher
from fake_workloads import TESTS_DIR, with_tests_on_path, write_corpus

from gpusession.bench.runner import Runner, describe_exit
from gpusession.core.events import Finished, RowAppended, RunnerEvent, WorkerStarted
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}


def _exp(session: Session, **kw: Any) -> Experiment:
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=kw.pop("n", 8), words=5)
    # the Echo workload's log; a command takes only what its arguments name (A3)
    log = {} if kw.get("workload") == "command" else {"log": str(session.folder / "predict.log")}
    params = {**log, **kw.pop("params", {})}
    base: dict[str, Any] = dict(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(2, 4), runs_per_variant=2, warmup_iterations=1,
        protocol=PROTOCOL, params=params, device="cpu",
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)


def _events(session: Session, name: str) -> list[dict[str, Any]]:
    return [r for r in session.read_journal() if r.get("event") == name]


@pytest.mark.slow
@pytest.mark.torch
def test_r3_r4_r5_rows_per_phase_validated_and_appended(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, params={"chatty": True})
    events: list[RunnerEvent] = []
    out = Runner(s, exp.id, on_event=events.append).run()
    assert out.completed and not out.cancelled and out.incidents == []
    rows = s.results.rows()
    phases = [r.phase for r in rows]
    # 2 cold workers + 1 warm worker: one load row each (R3)
    assert phases.count("load") == 3 and phases.count("cold") == 2 and phases.count("warm") == 4
    warm = [r for r in rows if r.phase == "warm"]
    assert all(r.corpus_accepted is True and r.ids_match is True for r in warm)
    assert all(r.warmup_iterations == 1 for r in warm)  # R4: count stored
    assert [r.variant_id for r in warm] == ["batch-2", "batch-4", "batch-2", "batch-4"]  # R5
    assert s.data["experiments"]["e"]["drawn_order"] == ["batch-2", "batch-4", "batch-2", "batch-4"]
    assert all(r.elapsed_seconds is not None and r.elapsed_seconds > 0 for r in rows)
    # M4: CPU → memory cells empty, not 0
    assert all(r.peak_allocated_bytes is None and r.baseline_reserved_bytes is None for r in rows)
    assert (s.runs_dir / "e" / "batch-4" / "warm-2.jsonl").exists()  # V8: outputs archived
    assert (s.validation_dir / "e" / "batch-4" / "warm-2.toml").exists()
    # rows appended as each run finished: journal run_finished precedes the next run_started
    kinds = [r["event"] for r in s.read_journal() if r["event"] in ("run_started", "run_finished")]
    assert kinds == ["run_started", "run_finished"] * 6
    assert not (s.folder / ".run.lock").exists()
    assert {e.name for e in events} >= {"progress", "row", "loaded", "finished", "environment"}
    assert isinstance(events[-1], Finished)


@pytest.mark.slow
@pytest.mark.torch
def test_r4_announced_warmup_runs_before_the_measured_runs_and_is_stored(
    sessions_root: Path, session: Session, fakes: None
) -> None:
    s = session
    exp = _exp(s, values=(8,), cold_runs_per_variant=0, runs_per_variant=2, warmup_iterations=3)
    Runner(s, exp.id).run()
    sizes = [json.loads(x)["batch"] for x in (s.folder / "predict.log").read_text().splitlines()]
    assert sizes.count(8) == 3 + 2  # 3 announced warm-up iterations + 2 measured runs
    journal = [r["event"] for r in s.read_journal()]
    assert journal.index("warmup_done") < journal.index("run_started")  # warm-up first
    assert [r.warmup_iterations for r in s.results.rows() if r.phase == "warm"] == [3, 3]
    assert s.data["experiments"]["e"]["warmup_iterations"] == 3


@pytest.mark.slow
@pytest.mark.torch
def test_h03_warmup_uses_exactly_the_measured_shapes(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, values=(2, 8), cold_runs_per_variant=0, runs_per_variant=1, warmup_iterations=2)
    Runner(s, exp.id).run()
    sizes = [json.loads(x)["batch"] for x in (s.folder / "predict.log").read_text().splitlines()]
    # corpus of 8: batch 2 → 4 calls of 2; batch 8 → 1 call of 8. Warm-up: 2 iterations each.
    assert sorted(set(sizes)) == [2, 8]
    assert sizes.count(8) == 2 + 1 and sizes.count(2) == 4 * (2 + 1)
    env = s.data["environment"]
    assert env["cudnn_benchmark"] in (True, False)  # recorded
    # R10: what changes speed and results, in session.toml and the report
    assert env["tf32_matmul"] in (True, False) and env["tf32_cudnn"] in (True, False)
    assert env["float32_matmul_precision"] in ("highest", "high", "medium")
    assert env["grad_enabled"] in (True, False) and "cuda_device_order" in env
    assert "pytorch_cuda_alloc_conf" in env and "hip_visible_devices" in env
    from gpusession.core.retrieval.report import render_report

    report = render_report(s)
    assert "tf32_matmul:" in report and "float32_matmul_precision:" in report
    flat = " ".join(report.split())  # the paragraph wraps at 80 columns
    assert "grad_enabled:" in flat and "settings variable(s) unset (named in session.toml)" in flat


@pytest.mark.slow
@pytest.mark.torch
def test_r7_oom_keeps_its_row_and_next_variant_runs(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, values=(2, 8), runs_per_variant=1, params={"oom_batch": 8})
    out = Runner(s, exp.id).run()
    rows = {(r.phase, r.variant_id): r for r in s.results.rows() if r.phase != "load"}
    bad = rows[("warm", "batch-8")]
    assert bad.elapsed_seconds is None and bad.corpus_accepted is None  # never validated
    assert bad.notes and "out of memory" in bad.notes and "OutOfMemoryError" in bad.notes
    assert rows[("cold", "batch-8")].elapsed_seconds is None
    assert rows[("warm", "batch-2")].elapsed_seconds is not None  # the other variant still ran
    assert out.completed  # every run ran; failures kept
    assert any("out of memory" in i for i in out.incidents)


@pytest.mark.torch
def test_r7_after_an_oom_the_next_run_is_preceded_by_one_unmeasured_pass(
        sessions_root: Path, session: Session, fakes: None) -> None:
    """OOM stays in-process: the next variant runs in the same worker, after one
    unmeasured pass of its shape, journalled and noted on its row."""
    s = session
    exp = _exp(s, values=(8, 2), runs_per_variant=2, cold_runs_per_variant=0, warmup_iterations=0,
               params={"oom_batch": 8})
    out = Runner(s, exp.id, continue_on_reject=True).run()  # the first run fails: D3 would stop there
    assert out.completed
    assert len(_events(s, "worker_started")) == 1  # one worker: the OOM did not end it
    sizes = [json.loads(x)["batch"] for x in (s.folder / "predict.log").read_text().splitlines()]
    # each batch-2 run follows a batch-8 OOM: 4 calls of the unmeasured pass + 4 measured
    assert sizes.count(2) == 2 * (4 + 4)
    finished = [r for r in _events(s, "run_finished") if r["variant_id"] == "batch-2"]
    assert [r.get("unmeasured_pass") for r in finished] == ["after an out-of-memory run"] * 2
    assert all(r["ok"] for r in finished)
    warm = [r for r in s.results.rows() if r.variant_id == "batch-2"]
    assert all("preceded by one unmeasured pass after an out-of-memory run" in (r.notes or "") for r in warm)
    assert all(r.elapsed_seconds is not None for r in warm)


@pytest.mark.torch
def test_r7_exception_in_workload_keeps_row(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, values=(4,), runs_per_variant=2, cold_runs_per_variant=0, params={"fail_batch": 4})
    Runner(s, exp.id, continue_on_reject=True).run()  # every run fails: D3 would stop after the first
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 2
    assert all(r.elapsed_seconds is None and "ValueError: bad batch" in (r.notes or "") for r in warm)


@pytest.mark.torch
def test_r7_worker_killed_by_sigkill_leaves_row_with_signal(
    sessions_root: Path, session: Session, fakes: None, tmp_path: Path
) -> None:
    s = session
    marker = tmp_path / "started"
    exp = _exp(s, values=(8,), runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=0,
               params={"sleep_s": 30, "marker": str(marker)})
    pids: list[int] = []

    def on_event(ev: RunnerEvent) -> None:
        if isinstance(ev, WorkerStarted) and ev.pid is not None:
            pids.append(ev.pid)

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(pids[0], signal.SIGKILL)

    t = threading.Thread(target=killer)
    t.start()
    out = Runner(s, exp.id, on_event=on_event).run()
    t.join()
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 1
    assert warm[0].elapsed_seconds is None and warm[0].corpus_accepted is None  # never validated
    assert "SIGKILL" in (warm[0].notes or "")
    assert not out.completed
    assert _events(s, "experiment_incomplete")
    # the journal closes the run, so reopening does not add a second recovered row
    Session.open(sessions_root, s.name)
    assert len([r for r in s.results.rows() if r.phase == "warm"]) == 1


@pytest.mark.slow
@pytest.mark.torch
def test_r7_timed_out_run_is_killed_and_kept(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, values=(8,), runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=0,
               params={"sleep_s": 60}, run_timeout_s=15.0)  # room for torch's import under load
    Runner(s, exp.id).run()
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert warm, f"no warm row: {[(r.phase, r.notes) for r in s.results.rows()]}"
    assert warm[0].elapsed_seconds is None
    assert "timed out after 15 s" in (warm[0].notes or "")


@pytest.mark.slow
def test_h12_cancel_stops_at_run_boundary_and_marks_incomplete(sessions_root: Path, session: Session, fakes: None) -> None:
    """Replayed workers (no subprocess): the boundary is the runner's go/stop, not the worker's."""
    s = session
    exp = _exp(s, values=(2, 4), runs_per_variant=5, cold_runs_per_variant=0, warmup_iterations=0)
    cancel = threading.Event()
    seen: list[int] = []

    def on_event(ev: RunnerEvent) -> None:
        seen.append(threading.get_ident())
        if isinstance(ev, RowAppended) and ev.row.phase == "warm" and ev.row.run_index == 2:
            cancel.set()  # at run 3 of 10

    result: dict[str, Any] = {}
    th = threading.Thread(target=lambda: result.update(out=Runner(s, exp.id, on_event=on_event,
                                                                   cancel=cancel,
                                                                   launcher=ReplayLauncher()).run()))
    th.start()
    th.join(timeout=120)
    out = result["out"]
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 3  # the run that finished the cancel request ran; no more
    assert all(r.elapsed_seconds is not None for r in warm)  # nothing cut mid-run
    assert out.cancelled and not out.completed
    inc = _events(s, "experiment_incomplete")
    assert inc and "cancelled" in inc[-1]["message"]
    assert set(seen) == {th.ident}  # events come from the runner's thread, not the caller's


@pytest.mark.torch
def test_r9_truncation_counted_and_noted(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0, context_limit=3)
    Runner(s, exp.id).run()
    warm = [r for r in s.results.rows() if r.phase == "warm"][0]
    assert warm.context == 3
    assert "truncated 8 of 8 inputs at the context limit of 3 tokens" in (warm.notes or "")


@pytest.mark.torch
def test_a2_a_limit_the_workload_counts_no_cut_of_is_passed_never_stated_as_a_cut(
        sessions_root: Path, session: Session, fakes: None) -> None:
    """A Python workload without ``count_truncated`` given ``--context-limit 3``: its rows say
    the limit was passed and no truncation was observed, never the harness's word count."""
    s = session
    exp = _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0, context_limit=3,
               workload="fake_workloads:Deaf")
    Runner(s, exp.id).run()
    warm = [r for r in s.results.rows() if r.phase == "warm"][0]
    notes = warm.notes or ""
    assert "context limit of 3 tokens passed to the workload; truncation not observed" in notes, notes
    assert "truncated 8 of 8" not in notes
    finished = [r for r in s.journal_records() if getattr(r, "phase", None) == "warm"
                and type(r).__name__ == "RunFinishedRecord"]
    assert finished and all(r.truncated is None for r in finished)  # the journal keeps "not observed"


@pytest.mark.torch
def test_r10_environment_observed_in_worker_and_written(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0)
    Runner(s, exp.id).run()
    s.reload()
    env = s.data["environment"]
    import platform

    assert env["python_version"] == platform.python_version()
    assert env["device"] == "cpu" and env["gpu_count"] == 0
    assert "runtime_version" not in env  # empty on CPU, never "CUDA None" (H-07)
    assert "concurrent_load" in env
    # Echo computes in plain Python: no framework, and torch (the worker's clock) not named
    assert "torch_version" not in env and "frameworks" not in env
    row = [r for r in s.results.rows() if r.phase == "warm"][0]
    assert row.python_version == env["python_version"] and row.torch_version is None
    assert row.runtime_version is None and row.device == "cpu" and row.gpu_count == 0
    assert row.model_revision == "echo-1" and row.tokenizer_revision == "split-1"
    assert row.corpus_revision and len(row.corpus_revision) == 64
    assert row.lots == 1 and row.duration_days == 7


@pytest.mark.slow
def test_r1_rerun_appends_with_continued_indexes(sessions_root: Path, session: Session, fakes: None) -> None:
    """Replayed workers (no subprocess): the indexes are the runner's schedule."""
    s = session
    exp = _exp(s, values=(4,), runs_per_variant=2, cold_runs_per_variant=1, warmup_iterations=0)
    Runner(s, exp.id, launcher=ReplayLauncher()).run()
    Runner(s, exp.id, launcher=ReplayLauncher()).run()
    warm = [r.run_index for r in s.results.rows() if r.phase == "warm"]
    assert warm == [1, 2, 3, 4]
    assert (s.runs_dir / "e" / "batch-4" / "warm-4.jsonl").exists()
    loads = [(r.variant_id, r.run_index) for r in s.results.rows() if r.phase == "load"]
    assert loads == [("batch-4", 1), ("all", 1), ("batch-4", 2), ("all", 2)]


@pytest.mark.torch
def test_r2_full_chain_scope_writes_outputs_inside_the_timed_work(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0, scope="full-chain")
    Runner(s, exp.id).run()
    assert s.data["experiments"]["e"]["scope"] == "full-chain"
    warm = [r for r in s.results.rows() if r.phase == "warm"][0]
    assert warm.corpus_accepted is True


def test_command_workload_timed_as_whole_process(sessions_root: Path, session: Session) -> None:
    s = session
    script = (
        "import json,sys; src,out,b=sys.argv[1:4];"
        "recs=[json.loads(l) for l in open(src)];"
        "open(out,'w').write(''.join(json.dumps({'id':r['id'],'label':r['label']})+'\\n' for r in recs))"
    )
    path = s.folder / "score.py"  # a script file: a placeholder after -c is refused
    path.write_text(script, encoding="utf-8")
    exp = _exp(s, workload="command", values=(4,), runs_per_variant=1, cold_runs_per_variant=0,
               scope="full-chain",
               params={"command": [sys.executable, str(path), "{corpus}", "{output}", "{batch}"]})
    Runner(s, exp.id).run()
    warm = [r for r in s.results.rows() if r.phase == "warm"][0]
    assert warm.elapsed_seconds is not None and warm.corpus_accepted is True
    assert warm.peak_allocated_bytes is None


@pytest.mark.torch
def test_v1_a_run_that_cannot_be_validated_says_why_in_its_row(sessions_root: Path, session: Session,
                                                                 fakes: None) -> None:
    """No verdict is never silent: each row's notes say why its corpus was not validated."""
    s = session
    exp = _exp(s, id="noproto", values=(4,), runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=0,
               protocol={})
    out = Runner(s, exp.id).run()
    assert any("no validation protocol declared" in i for i in out.incidents)  # said once at the start
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 1 and warm[0].corpus_accepted is None
    assert "not validated: no validation protocol declared" in (warm[0].notes or "")


_RECORD_CALL = (
    "import sys, time\n"
    "with open('calls.log', 'a') as fh:\n"
    "    fh.write(sys.argv[1] + '\\n')\n"
    "time.sleep(0.02)\n"
)


def test_h15_command_warmup_performed_and_rows_carry_the_count(sessions_root: Path, session: Session) -> None:
    """H-15: ``python3 record_call.py {batch}``, values 1,2, runs 2, warm-up 2, cold runs 1:
    per variant 1 cold + 2 warm-up + 2 measured calls; the journal records the warm-up;
    each row's ``warmup_iterations`` is what was performed (cold rows 0)."""
    s = session
    script = s.folder / "record_call.py"
    script.write_text(_RECORD_CALL, encoding="utf-8")
    exp = _exp(s, workload="command", values=(1, 2), runs_per_variant=2, cold_runs_per_variant=1,
               warmup_iterations=2, scope="full-chain",
               params={"command": [sys.executable, str(script), "{batch}"]})
    cwd = os.getcwd()
    os.chdir(s.folder)  # the script appends to calls.log in its working directory
    try:  # it writes no output: D3 would stop after the first run
        out = Runner(s, exp.id, continue_on_reject=True).run()
    finally:
        os.chdir(cwd)
    assert out.completed
    calls = (s.folder / "calls.log").read_text().split()
    assert calls.count("1") == 1 + 2 + 2 and calls.count("2") == 1 + 2 + 2
    # the warm worker's calls: the warm-up (2 per variant) comes before any measured call
    warm_calls = calls[2:]
    assert sorted(warm_calls[:4]) == ["1", "1", "2", "2"]
    done = _events(s, "warmup_done")
    assert len(done) == 1 and done[0]["runs"] == 4
    assert done[0]["per_variant"] == {"batch-1": 2, "batch-2": 2}
    rows = [r for r in s.results.rows() if r.phase != "load"]
    assert [r.warmup_iterations for r in rows if r.phase == "cold"] == [0, 0]
    assert [r.warmup_iterations for r in rows if r.phase == "warm"] == [2, 2, 2, 2]
    # warm-up outputs are kept apart from the measured ones and never validated
    assert (s.runs_dir / "e" / "batch-1" / "warmup-2.jsonl").parent.is_dir()
    assert not (s.validation_dir / "e" / "batch-1" / "warmup-1.toml").exists()


def test_r4_command_warmup_failed_part_way_reports_the_count_done(
        sessions_root: Path, session: Session) -> None:
    """A command whose second warm-up call fails: its rows say 1, not the announced 2 (R4)."""
    s = session
    counter = s.folder / "n.txt"
    script = (
        "import sys, pathlib; p = pathlib.Path(sys.argv[1]);"
        "n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n));"
        "sys.exit(1 if n == 2 else 0)"
    )
    exp = _exp(s, workload="command", values=(4,), runs_per_variant=2, cold_runs_per_variant=0,
               warmup_iterations=2, scope="full-chain",
               params={"command": [sys.executable, "-c", script, str(counter)]})
    out = Runner(s, exp.id, continue_on_reject=True).run()  # no output: D3 would stop after the first run
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 2 and all(r.elapsed_seconds is not None for r in warm)
    assert [r.warmup_iterations for r in warm] == [1, 1]
    assert _events(s, "warmup_done")[0]["per_variant"] == {"batch-4": 1}
    assert any("warm-up call 2 exited with code 1" in i for i in out.incidents)


@pytest.mark.torch
def test_r4_warmup_failed_part_way_reports_the_count_done(sessions_root: Path, session: Session, fakes: None) -> None:
    """A torch worker whose warm-up fails part-way: each variant's rows carry the
    iterations that really ran before them (batch-2: 2 of 2, batch-4: 1 of 2)."""
    s = session
    # 8 inputs: batch-2 warm-up = 2 x 4 predict calls, batch-4 = 2 x 2; call 11 is the
    # first call of batch-4's second warm-up iteration.
    exp = _exp(s, values=(2, 4), runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=2,
               params={"fail_call": 11})
    out = Runner(s, exp.id).run()
    warm = {r.variant_id: r for r in s.results.rows() if r.phase == "warm"}
    assert warm["batch-2"].warmup_iterations == 2
    assert warm["batch-4"].warmup_iterations == 1
    assert all(r.elapsed_seconds is not None for r in warm.values())  # the runs themselves ran
    assert any("warmup" in i and "predict call 11" in i for i in out.incidents)
    done = _events(s, "warmup_done")
    assert done[-1]["iterations"] == 2 and done[-1]["runs"] == 3


@pytest.mark.slow
@pytest.mark.torch
def test_m5_parent_runner_never_imports_torch(sessions_root: Path, session: Session, tmp_path: Path) -> None:
    s = session
    _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=0)
    code = (
        "import sys; from pathlib import Path;"
        "from gpusession.core.folder.session import Session; from gpusession.bench.runner import Runner;"
        "import gpusession.commands.run_cmds;"
        f"s=Session.open(Path({str(sessions_root)!r}), {s.name!r}); Runner(s, 'e').run();"
        "print('torch' in sys.modules)"
    )
    env = dict(os.environ)
    tests_dir = str(TESTS_DIR)
    env["PYTHONPATH"] = tests_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
    assert len(s.results.rows()) == 2  # the worker (which does import torch) did run


def test_describe_exit_names_signals() -> None:
    assert describe_exit(-9) == "killed by signal SIGKILL (9)"
    assert describe_exit(3) == "exited with code 3"


@pytest.mark.torch
def test_m3_journal_states_what_the_memory_readout_does_not_cover(sessions_root: Path, session: Session, fakes: None) -> None:
    from gpusession.bench.timing import ALLOCATOR_SCOPE, CPU_MEMORY_SCOPE

    assert "other processes" in ALLOCATOR_SCOPE and "outside" in ALLOCATOR_SCOPE
    assert "never add" in ALLOCATOR_SCOPE  # M2
    s = session
    exp = _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=0)
    Runner(s, exp.id).run()
    fin = _events(s, "run_finished")
    assert fin and fin[0]["memory_scope"] == CPU_MEMORY_SCOPE  # M4 on CPU: said in words


def test_second_runner_refused_while_a_live_process_holds_the_lock(sessions_root: Path, session: Session, fakes: None) -> None:
    from gpusession.core.files.errors import Failure

    s = session
    exp = _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (s.folder / ".run.lock").write_text(str(other.pid))
        with pytest.raises(Failure, match=f"pid {other.pid}"):  # exit 1, not bad input
            Runner(s, exp.id).run()
        assert s.results.rows() == []
    finally:
        other.kill()
        other.wait()


@pytest.mark.slow
@pytest.mark.torch
def test_r6_cli_run_headless_prints_median_min_max_and_failures_in_words(
    sessions_root: Path, session: Session, run_cli: Any, fakes: None
) -> None:
    s = session
    _exp(s, values=(4,), runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=0)
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]}
    res = run_cli("run", s.name, "--experiment", "e", "--headless", env=env)
    assert res.returncode == 0, res.stderr
    assert "warm  batch-4" in res.stdout and "experiment complete" in res.stdout
    assert "median" in res.stdout and "min–max" in res.stdout and "verdict" in res.stdout
    bad = run_cli("run", s.name, "--experiment", "nope", "--headless", env=env)
    assert bad.returncode == 2 and "no experiment 'nope'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1  # one line, no traceback


@pytest.mark.slow
@pytest.mark.torch
def test_h12_ctrl_c_in_headless_run_cancels_at_run_boundary(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    _exp(s, values=(4,), runs_per_variant=6, cold_runs_per_variant=0, warmup_iterations=0,
         params={"sleep_s": 0.3})
    env = dict(os.environ)
    env.pop("GPUSESSION_HOME", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), "run", s.name,
         "--experiment", "e", "--headless"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("[  1/"):
            proc.send_signal(signal.SIGINT)
            break
    rest, err = proc.communicate(timeout=60)
    out = "".join(lines) + rest
    assert proc.returncode == 1, err
    assert "cancel requested" in out and "experiment cancelled" in out
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert 1 <= len(warm) < 6 and all(r.elapsed_seconds is not None for r in warm)
    assert _events(s, "experiment_incomplete")


@pytest.mark.slow
@pytest.mark.torch
def test_h03_warm_medians_do_not_depend_on_variant_order(sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    medians: dict[tuple[int, ...], dict[str, float]] = {}
    for values in ((2, 8), (8, 2)):
        exp = _exp(s, id=f"order-{values[0]}", values=values, runs_per_variant=3,
                   cold_runs_per_variant=0, warmup_iterations=1, params={"sleep_s": 0.02})
        Runner(s, exp.id).run()
        rows = [r for r in s.results.rows() if r.experiment_id == exp.id and r.phase == "warm"]
        assert [r.variant_id for r in rows][:2] == [f"batch-{values[0]}", f"batch-{values[1]}"]
        by: dict[str, list[float]] = {}
        for r in rows:
            by.setdefault(str(r.variant_id), []).append(float(r.elapsed_seconds or 0))
        medians[values] = {v: sorted(x)[1] for v, x in by.items()}
    for v in ("batch-2", "batch-8"):
        a, b = medians[(2, 8)][v], medians[(8, 2)][v]
        assert abs(a - b) / max(a, b) < 0.3, (v, a, b)
    # 8 texts: batch 2 = 4 predict calls, batch 8 = 1 → about 4× apart in either order
    assert medians[(2, 8)]["batch-2"] > 2.5 * medians[(2, 8)]["batch-8"]


def _demo_model(folder: Path) -> tuple[Path, Path]:
    """A tiny trained bbc-news model and an eval corpus of 200-word texts."""
    from gpusession.bench.workloads import bbc_news

    corpus = folder / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    recs = [{"id": f"d{i}", "label": lab,
             "text": " ".join(f"{lab}{j % 7} w{(i * j) % 50}" for j in range(100))}
            for i, lab in enumerate(["a", "b"] * 4)]
    for name in ("train", "tune", "eval"):
        (corpus / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    bbc_news.train(corpus, folder / "models", seed=0, context_limit=64)
    return corpus / "eval.jsonl", folder / "models"


@pytest.mark.slow
@pytest.mark.torch
def test_r9_context_sweep_applies_each_runs_limit_to_the_work(sessions_root: Path, session: Session) -> None:
    """``varied = "context"`` on the demo workload: 64 and 512 feed different token counts
    and only the 64 variant notes truncation, at 64 (R9)."""
    s = session
    corpus, models = _demo_model(s.folder)
    exp = define_experiment(s, Experiment(
        id="ctx", workload="bbc-news", corpus=str(corpus.relative_to(s.folder)), varied="context",
        values=(64, 512), batch=4, runs_per_variant=1, cold_runs_per_variant=0, warmup_iterations=1,
        protocol=PROTOCOL, params={"model_dir": str(models)}, device="cpu"))
    out = Runner(s, exp.id).run()
    assert out.completed, out.incidents
    rows = {r.variant_id: r for r in s.results.rows() if r.phase == "warm"}
    assert rows["context-64"].context == 64 and rows["context-512"].context == 512
    assert "truncated 8 of 8 inputs at the context limit of 64 tokens" in (rows["context-64"].notes or "")
    assert "truncated" not in (rows["context-512"].notes or "")
    finished = {r["context"]: r for r in _events(s, "run_finished")}
    assert finished[64]["tokens"] == 8 * 64 and finished[512]["tokens"] == 8 * 200
    assert finished[64]["truncated"] == 8 and finished[512]["truncated"] == 0


def test_r9_context_cannot_vary_for_a_workload_without_tokens(sessions_root: Path, session: Session) -> None:
    from gpusession.core.files.errors import BadInput

    with pytest.raises(BadInput, match="cannot vary the context"):
        define_experiment(session, Experiment(id="m", workload="synthetic-mlp", varied="context",
                                              values=(64, 128)))
    with pytest.raises(BadInput, match=r"\{context\}"):
        define_experiment(session, Experiment(id="c", workload="command", varied="context",
                                              values=(64, 128), params={"command": ["true", "{batch}"]}))


@pytest.mark.slow
@pytest.mark.torch
def test_r9_context_sweep_refused_at_load_for_a_workload_without_set_context(
        sessions_root: Path, session: Session, fakes: None) -> None:
    """A ``module:factory`` workload that cannot apply a run's context limit: the load is
    refused with the reason, no run times the same work under different labels."""
    s = session
    exp = _exp(s, varied="context", values=(64, 512), batch=2, runs_per_variant=1,
               cold_runs_per_variant=0, warmup_iterations=0)
    out = Runner(s, exp.id).run()
    assert not out.completed
    assert any("cannot vary the context" in i for i in out.incidents)
    assert [r.phase for r in s.results.rows()] == ["load"]
    assert not (s.folder / "predict.log").exists()
