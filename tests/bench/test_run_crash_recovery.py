"""A crash at any instant loses at most the run in flight, which is recorded
as an incident on reopen (S7) -- here the parent is killed while its worker *loads*, the
one moment of a run that used to leave no trace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import RUN_LOCK, Session
from gpusession.core.records.results import ResultRow


def _journal(s: Session, event: str) -> list[dict[str, Any]]:
    return [r for r in s.read_journal() if r.get("event") == event]


@pytest.mark.slow
@pytest.mark.torch
def test_s7_kill_while_the_worker_loads_is_an_incident_row_on_reopen(
    sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_tests_on_path(monkeypatch)
    s = Session.create(sessions_root, "t")
    corpus = write_corpus(s.folder / "corpus" / "eval.jsonl", n=4)
    marker = tmp_path / "loading"
    define_experiment(s, Experiment(
        id="e", workload="fake_workloads:SlowLoad", corpus=str(corpus.relative_to(s.folder)),
        varied="batch", values=(2,), runs_per_variant=1, warmup_iterations=0,
        cold_runs_per_variant=0, device="cpu", params={"marker": str(marker)},
    ))
    earlier = ResultRow(experiment_id="e", variant_id="batch-2", phase="warm", run_index=1,
                        elapsed_seconds=0.5, notes="an earlier run")
    s.results.append(earlier)
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), "run", "t",
         "--headless"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the worker never started loading"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        if marker.exists():  # the orphaned worker: end it, it is ours
            try:
                os.kill(int(marker.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    reopened = Session.open(sessions_root, "t")
    rows = reopened.results.rows()
    assert rows[0] == earlier  # nothing before the crash is lost
    loads = [r for r in rows if r.phase == "load"]
    assert len(loads) == 1
    assert loads[0].elapsed_seconds is None and loads[0].corpus_accepted is None  # no corpus validated
    assert "in flight" in (loads[0].notes or "")
    lost = [r for r in _journal(reopened, "incident") if r.get("kind") == "run_lost"]
    assert [r["run_key"] for r in lost] == ["e:load:all:1"]
    assert _journal(reopened, "load_started")
    assert not (reopened.folder / RUN_LOCK).exists()
    # reopening again does not add a second row
    Session.open(sessions_root, "t")
    assert len(reopened.results.rows()) == 2


def test_s7_a_stale_run_lock_does_not_block_the_next_run(sessions_root: Path) -> None:
    from gpusession.core.folder.journal import take_lock

    s = Session.create(sessions_root, "t")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = s.folder / RUN_LOCK
    lock.write_text(str(dead.pid))
    define_experiment(s, Experiment(id="e", workload="synthetic-mlp", values=(1,)))
    assert take_lock(s.folder, s.name) == lock
    assert lock.read_text().split()[0] == str(os.getpid())  # "PID HOST"
    assert [p.name for p in s.folder.iterdir() if p.name.startswith(RUN_LOCK)] == [RUN_LOCK]
    lock.unlink()


def test_s7_a_live_run_lock_refuses_a_second_run(sessions_root: Path) -> None:
    from gpusession.core.files.errors import Failure
    from gpusession.core.folder.journal import take_lock

    s = Session.create(sessions_root, "t")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock = s.folder / RUN_LOCK
        lock.write_text(str(live.pid))
        define_experiment(s, Experiment(id="e", workload="synthetic-mlp", values=(1,)))
        with pytest.raises(Failure, match=f"pid {live.pid}"):  # exit 1: not bad input
            take_lock(s.folder, s.name)
        assert lock.read_text() == str(live.pid)
    finally:
        live.kill()
        live.wait()


def test_s7_a_running_experiment_never_undoes_edits_made_meanwhile(sessions_root: Path) -> None:
    from gpusession.bench.runner import Runner
    from gpusession.core.folder.package import Package

    Session.create(sessions_root, "t", package=Package("RTX A5000", 1, 3))
    held = Session.open(sessions_root, "t")  # what a long run holds in memory
    define_experiment(held, Experiment(id="e", workload="synthetic-mlp", values=(1,)))
    runner = Runner(held, "e")
    other = Session.open(sessions_root, "t")  # `gpusession package` / the TUI, meanwhile
    other.set_package(Package("RTX A5000", 1, 30))
    define_experiment(other, Experiment(id="meanwhile", workload="synthetic-mlp", values=(2,)))
    runner._prepare(runner.experiment)
    runner.recorder.env = {"device": "cpu", "gpu_count": 0}
    runner.recorder.store_environment()  # the run saves what it observed, with its start
    on_disk = Session.open(sessions_root, "t")
    assert on_disk.package.days == 30
    assert set(on_disk.data["experiments"]) == {"e", "meanwhile"}
    assert on_disk.data["environment"]["device"] == "cpu"
    assert on_disk.data["experiments"]["e"]["drawn_order"] == ["batch-1"] * 5
    # and an experiment defined from a stale session keeps the other one too
    define_experiment(held, Experiment(id="late", workload="synthetic-mlp", values=(4,)))
    assert set(Session.open(sessions_root, "t").data["experiments"]) == {"e", "meanwhile", "late"}


def test_s7_a_reused_pid_does_not_hold_the_run_lock(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t")
    s.journal("run_started", run_key="e:warm:batch-1:1", experiment_id="e", variant_id="batch-1",
              phase="warm", run_index=1)
    lock = s.folder / RUN_LOCK
    lock.write_text("0")
    old = time.time() - 3600
    os.utime(lock, (old, old))  # written an hour ago by a runner that then crashed
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock.write_text(str(later.pid))  # its PID is now an unrelated, newer process
        os.utime(lock, (old, old))
        assert s.run_lock_holder() is None
        reopened = Session.open(sessions_root, "t")
        assert len(reopened.results.rows()) == 1 and not lock.exists()
    finally:
        later.kill()
        later.wait()
