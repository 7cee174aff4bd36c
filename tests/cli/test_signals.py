"""Processes and signals (H-14): a hang-up, SIGTERM, a timeout or the parent's
death ends the worker *and* the user's command; the journal says where; the lock is
released; leftovers of an earlier run are ended before a new one; ``--detach`` outlives
the terminal.

Every test ends what it started, even on failure (the ``reaper`` fixture kills every
process a journal recorded and every process the test spawned).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from helpers import alive, cli, hangup_default, wait_for

from gpusession.core.folder.session import RUN_LOCK, Session

#: Seconds after the signal by which no recorded process may be alive (H-14).
GONE_WITHIN_S = 5.0


# -- helpers ------------------------------------------------------------------------------
def _journal(folder: Path) -> list[dict[str, Any]]:
    path = folder / "journal.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _events(folder: Path, name: str) -> list[dict[str, Any]]:
    return [r for r in _journal(folder) if r.get("event") == name]


def _recorded(folder: Path) -> list[tuple[str, int, float | None]]:
    """(kind, pid, start time) of every worker and user command the journal records."""
    return [(r["event"], r["pid"], r.get("create_time_s")) for r in _journal(folder)
            if r.get("event") in ("worker_started", "command_started") and r.get("pid")]


def _alive_recorded(folder: Path) -> list[tuple[str, int]]:
    return [(kind, pid) for kind, pid, ct in _recorded(folder) if alive(pid, ct)]


def _gone_after(folder: Path, t0: float) -> float:
    """Seconds from ``t0`` until no recorded process is alive (asserts within 5 s)."""
    deadline = t0 + GONE_WITHIN_S
    while time.monotonic() < deadline:
        if not _alive_recorded(folder):
            return time.monotonic() - t0
        time.sleep(0.01)
    raise AssertionError(f"still alive {GONE_WITHIN_S} s after the signal: {_alive_recorded(folder)}")


def _hangup_ignored() -> None:
    """In the child: SIGHUP ignored, as ``nohup`` leaves it."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


class Reaper:
    """Ends, at teardown, everything a test started or a journal recorded."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[Any]] = []
        self.folders: list[Path] = []
        self.pids: list[int] = []

    def popen(self, cmd: list[str], **kw: Any) -> subprocess.Popen[Any]:
        """Start ``cmd`` with the default hang-up disposition (the suite may run under nohup)."""
        kw.setdefault("preexec_fn", hangup_default)
        p = subprocess.Popen(cmd, **kw)
        self.procs.append(p)
        return p

    def close(self) -> None:
        victims: list[psutil.Process] = []
        for folder in self.folders:
            for _kind, pid, ct in _recorded(folder):
                if alive(pid, ct):
                    victims.append(psutil.Process(pid))
        for p in self.procs:
            if p.poll() is None:
                try:
                    victims.append(psutil.Process(p.pid))
                except psutil.Error:
                    pass
        for pid in self.pids:
            try:
                victims.append(psutil.Process(pid))
            except psutil.Error:
                pass
        for v in list(victims):
            try:
                victims.extend(v.children(recursive=True))
            except psutil.Error:
                pass
        for v in victims:
            try:
                v.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(victims, timeout=5)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def reaper() -> Iterator[Reaper]:
    r = Reaper()
    try:
        yield r
    finally:
        r.close()


def _define(capsys: pytest.CaptureFixture[str], root: Path, name: str, exp_id: str,
            command: str, *extra: str) -> None:
    code, out, err = cli(capsys, root, "experiment", name, "define", "--id", exp_id,
                         "--workload", "command", "--values", "1", "--runs", "1",
                         "--warmup", "0", "--cold-runs", "0", "--command", command, *extra)
    assert code == 0, err


def _gpusession(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "gpusession", "--sessions-dir", str(root), *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GPUSESSION_HOME", None)
    return env


def _start_headless(reaper: Reaper, root: Path, name: str, exp_id: str, log: Path) -> subprocess.Popen[Any]:
    with open(log, "wb") as fh:
        return reaper.popen(_gpusession(root, "run", name, "--experiment", exp_id, "--headless"),
                            stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=_env())


# -- H-14: a hang-up (or SIGTERM) of `run --headless` --------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_h14_signal_ends_worker_and_command_journals_it_releases_lock(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
    tmp_path: Path, sig: signal.Signals,
) -> None:
    folder = session.folder
    reaper.folders.append(folder)
    _define(capsys, sessions_root, session.name, "sleepy", "sleep 25")
    _define(capsys, sessions_root, session.name, "quick", "sleep 0.1")
    proc = _start_headless(reaper, sessions_root, session.name, "sleepy", tmp_path / "out.txt")
    # after the worker has started the user's command (the journal says so)
    wait_for(lambda: _events(folder, "command_started"), timeout_s=60)
    recorded = _recorded(folder)
    assert {k for k, _, _ in recorded} == {"worker_started", "command_started"}
    assert all(ct is not None for _, _, ct in recorded)
    assert len(_alive_recorded(folder)) == 2
    t0 = time.monotonic()
    proc.send_signal(sig)
    elapsed = _gone_after(folder, t0)
    code = proc.wait(timeout=30)
    print(f"\n{sig.name}: every recorded process gone {elapsed:.3f} s after the signal; "
          f"gpusession exited {time.monotonic() - t0:.3f} s after it")
    assert code == 128 + sig
    interrupted = _events(folder, "run_interrupted")
    assert len(interrupted) == 1
    assert interrupted[0]["signal"] == sig.name
    assert interrupted[0]["run_key"] == "sleepy:warm:batch-1:1"
    assert interrupted[0]["message"] == f"interrupted by {sig.name} at sleepy:warm:batch-1:1"
    assert not (folder / RUN_LOCK).exists()
    # the run in flight is recorded once, as an incident row (never measured)
    reopened = Session.open(sessions_root, session.name)
    rows = [r for r in reopened.results.rows() if r.experiment_id == "sleepy"]
    assert len(rows) == 1 and rows[0].elapsed_seconds is None
    assert f"interrupted by {sig.name}" in (rows[0].notes or "")
    assert _events(folder, "run_recovered") == []  # nothing lost, so nothing recovered
    # a rerun works and never overlaps an earlier worker (none is alive)
    before = {pid for _, pid, _ in _recorded(folder)}
    done = subprocess.run(_gpusession(sessions_root, "run", session.name, "--experiment", "quick",
                                      "--headless"), capture_output=True, text=True, env=_env(),
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    new = [pid for _, pid, _ in _recorded(folder) if pid not in before]
    assert new and not _alive_recorded(folder)


@pytest.mark.slow
def test_second_ctrl_c_ends_the_run_at_once_like_a_hangup(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    folder = session.folder
    reaper.folders.append(folder)
    _define(capsys, sessions_root, session.name, "sleepy", "sleep 25")
    log = tmp_path / "out.txt"
    proc = _start_headless(reaper, sessions_root, session.name, "sleepy", log)
    wait_for(lambda: _events(folder, "command_started"), timeout_s=60)
    proc.send_signal(signal.SIGINT)  # the first: stop at the next run boundary
    wait_for(lambda: "cancel requested" in log.read_text(encoding="utf-8"))
    assert proc.poll() is None and len(_alive_recorded(folder)) == 2  # still measuring
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)  # the second: now
    _gone_after(folder, t0)
    code = proc.wait(timeout=30)
    text = log.read_text(encoding="utf-8")
    assert code == 130, text
    assert "gpusession: interrupted" not in text and "Traceback" not in text
    assert "not measured, corpus not validated" in text and "REJECTED" not in text
    interrupted = _events(folder, "run_interrupted")
    assert [(r["signal"], r["run_key"]) for r in interrupted] == [("SIGINT", "sleepy:warm:batch-1:1")]
    assert interrupted[0]["message"] == "interrupted by SIGINT at sleepy:warm:batch-1:1"
    assert not (folder / RUN_LOCK).exists()
    end = _events(folder, "experiment_incomplete")
    assert end[-1]["message"] == "incomplete: 0 of 1 runs done (interrupted by SIGINT)"
    # the run in flight got its one incident row now, not at the next open
    reopened = Session.open(sessions_root, session.name)
    rows = [r for r in reopened.results.rows() if r.experiment_id == "sleepy"]
    assert len(rows) == 1 and rows[0].elapsed_seconds is None
    assert "interrupted by SIGINT" in (rows[0].notes or "")
    assert _events(folder, "run_recovered") == [] and not [
        r for r in _events(folder, "incident") if r.get("kind") == "run_lost"]


@pytest.mark.slow
def test_h14_sigkill_of_the_parent_takes_worker_and_command_along(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    folder = session.folder
    reaper.folders.append(folder)
    _define(capsys, sessions_root, session.name, "sleepy", "sleep 25")
    proc = _start_headless(reaper, sessions_root, session.name, "sleepy", tmp_path / "out.txt")
    wait_for(lambda: _events(folder, "command_started"), timeout_s=60)
    t0 = time.monotonic()
    proc.kill()  # nothing in gpusession runs: only the parent-death signal can act
    elapsed = _gone_after(folder, t0)
    proc.wait(timeout=10)
    print(f"\nSIGKILL of the parent: every recorded process gone {elapsed:.3f} s after it")


@pytest.mark.slow
def test_timeout_ends_the_user_command_too(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
) -> None:
    folder = session.folder
    reaper.folders.append(folder)
    _define(capsys, sessions_root, session.name, "slow", "sleep 47", "--timeout", "2")
    code, out, _err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 1
    assert "timed out after 2 s and was killed" in out
    kinds = {k for k, _, _ in _recorded(folder)}
    assert kinds == {"worker_started", "command_started"}
    assert _alive_recorded(folder) == []  # `sleep 47` was killed with its worker
    assert not (folder / RUN_LOCK).exists()


def test_leftover_worker_of_an_earlier_run_is_ended_before_a_new_run(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
) -> None:
    from gpusession.core.events import WorkerStartedRecord
    from gpusession.core.folder.processes import PARENT_ENV, identify

    folder = session.folder
    reaper.folders.append(folder)
    _define(capsys, sessions_root, session.name, "quick", "true")
    # A worker of an earlier run, still measuring: leader of its own group, with a child.
    leftover = reaper.popen(["sh", "-c", "sleep 30 & wait"], start_new_session=True,
                            env={**_env(), PARENT_ENV: "1"})
    child = wait_for(lambda: psutil.Process(leftover.pid).children())[0]
    ident = identify(leftover.pid)
    session.journal(WorkerStartedRecord(experiment_id="quick", worker="warm", pid=ident.pid,
                                        create_time_s=ident.create_time_s))
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert leftover.poll() is not None or not alive(leftover.pid, ident.create_time_s)
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert f"pid {leftover.pid}" in out and "ended before this run started" in out
    # it was ended before the new worker started
    recs = _journal(folder)
    ended = next(i for i, r in enumerate(recs) if "ended before this run" in str(r.get("message")))
    new_worker = next(i for i, r in enumerate(recs)
                      if r.get("event") == "worker_started" and r.get("pid") != leftover.pid)
    assert ended < new_worker
    assert code == 1  # the leftover is an incident of this run


def test_a_reused_pid_is_never_ended(sessions_root: Path, session: Session,
                                             reaper: Reaper, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.events import WorkerStartedRecord

    other = reaper.popen(["sleep", "30"], start_new_session=True)
    # the journal names this PID with another start time: an earlier process, long gone
    session.journal(WorkerStartedRecord(experiment_id="quick", worker="warm", pid=other.pid,
                                        create_time_s=psutil.Process(other.pid).create_time() - 100))
    _define(capsys, sessions_root, session.name, "quick", "true")
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out
    assert other.poll() is None


def test_user_command_does_not_inherit_ignored_sigint(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
) -> None:
    reaper.folders.append(session.folder)
    probe = ("import signal, sys; "
             "sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 5)")
    _define(capsys, sessions_root, session.name, "probe",
            f"{sys.executable} -c \"{probe}\"")
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out  # exit 5 would be a failed run: SIGINT ignored in the command


# -- --detach --------------------------------------------------------------------------------
@pytest.mark.slow
def test_h14_detach_survives_the_terminal_hangup_and_finishes(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    folder = session.folder
    reaper.folders.append(folder)
    _define(capsys, sessions_root, session.name, "short", "sleep 1.5")
    out = tmp_path / "terminal.txt"
    cmd = " ".join(f"'{a}'" for a in _gpusession(sessions_root, "run", session.name, "--detach"))
    # a "terminal": a shell in a session of its own, which stays after gpusession returns
    with open(out, "wb") as fh:
        term = reaper.popen(["sh", "-c", f"{cmd}; echo detach-exit=$?; sleep 60"],
                            start_new_session=True, stdout=fh, stderr=subprocess.STDOUT, env=_env())
    text = wait_for(lambda: "detach-exit=" in out.read_text() and out.read_text(), timeout_s=60)
    assert "detach-exit=0" in text
    assert f"gpusession show {session.name}" in text and "Run pane" in text
    pid = int(text.split("(pid ")[1].split(")")[0])
    reaper.pids.append(pid)
    wait_for(lambda: _events(folder, "command_started"), timeout_s=60)
    os.killpg(term.pid, signal.SIGHUP)  # the ssh drop: the terminal's whole session hangs up
    term.wait(timeout=10)
    finished = wait_for(lambda: _events(folder, "experiment_finished"), timeout_s=60)
    assert finished[0]["experiment_id"] == "short"
    assert _events(folder, "run_interrupted") == []
    logs = list((folder / "logs").glob("run-*.log"))
    # the summary is printed after the journal's end: wait for it, not for any output
    assert len(logs) == 1 and wait_for(lambda: " appended to " in logs[0].read_text(), 10)
    assert logs[0].stat().st_mode & 0o777 == 0o600
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    assert not (folder / RUN_LOCK).exists()


@pytest.mark.slow
def test_h14_a_run_under_nohup_outlives_the_hangup_and_finishes(
    sessions_root: Path, session: Session, reaper: Reaper, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """``nohup gpusession run …`` asks the run to outlive the terminal: SIGHUP stays ignored."""
    folder = session.folder
    reaper.folders.append(folder)
    _define(capsys, sessions_root, session.name, "short", "sleep 1.5")
    with open(tmp_path / "out.txt", "wb") as fh:
        proc = reaper.popen(_gpusession(sessions_root, "run", session.name, "--experiment", "short",
                                        "--headless"),
                            stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                            env=_env(), preexec_fn=_hangup_ignored)
    wait_for(lambda: _events(folder, "command_started"), timeout_s=60)
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=60) == 0, (tmp_path / "out.txt").read_text()
    assert _events(folder, "run_interrupted") == []
    assert _events(folder, "experiment_finished")[0]["experiment_id"] == "short"


def test_detach_refuses_a_busy_session(sessions_root: Path, session: Session,
                                               reaper: Reaper,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    reaper.folders.append(session.folder)
    _define(capsys, sessions_root, session.name, "short", "true")
    other = reaper.popen(["sleep", "30"])  # another live process holds the lock
    (session.folder / RUN_LOCK).write_text(str(other.pid))
    try:
        code, out, err = cli(capsys, sessions_root, "run", session.name, "--detach")
    finally:
        (session.folder / RUN_LOCK).unlink()
    assert code == 1 and "nothing was run" in err
    assert not (session.folder / "logs").exists()


# -- the journal record and its words --------------------------------------------------------
def test_run_interrupted_record_round_trip_and_words() -> None:
    from gpusession.core.events import (
        CommandStartedRecord,
        RunInterruptedRecord,
        WorkerCommandStarted,
        WorkerStartedRecord,
        describe,
        event_from_json,
    )

    rec = RunInterruptedRecord(signal="SIGHUP", run_key="e:warm:batch-4:2", experiment_id="e",
                               message="interrupted by SIGHUP at e:warm:batch-4:2")
    assert event_from_json(json.loads(json.dumps(rec.to_json()))) == rec
    words = describe(rec) or ""
    assert words.startswith("interrupted by SIGHUP at e:warm:batch-4:2")
    assert "hang-up" in words and "None" not in words
    between = describe(RunInterruptedRecord(signal="SIGTERM", run_key=None))
    assert between is not None and "between runs" in between and "None" not in between
    for ev, channel in ((WorkerCommandStarted(pid=5, create_time_s=1.25), "worker"),
                        (CommandStartedRecord(pid=5, create_time_s=1.25, worker="warm"), "journal"),
                        (WorkerStartedRecord(pid=5, create_time_s=1.25), "journal")):
        assert event_from_json(ev.to_json(), channel=channel) == ev  # type: ignore[arg-type]
    # an older journal's worker_started without a start time still reads
    old = event_from_json({"event": "worker_started", "pid": 5})
    assert isinstance(old, WorkerStartedRecord) and old.create_time_s is None


@pytest.mark.slow
@pytest.mark.torch
def test_load_row_cut_by_sighup_leaves_corpus_accepted_empty(
    sessions_root: Path, session: Session, reaper: Reaper, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A load validates no corpus: its row says "not validated" (empty), never "false"."""
    from fake_workloads import with_tests_on_path, write_corpus

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    with_tests_on_path(monkeypatch)
    folder = session.folder
    reaper.folders.append(folder)
    corpus = write_corpus(folder / "corpus" / "eval.jsonl", n=4)
    marker = tmp_path / "loading"
    define_experiment(session, Experiment(
        id="slowload", workload="fake_workloads:SlowLoad", corpus=str(corpus.relative_to(folder)),
        varied="batch", values=(2,), runs_per_variant=1, warmup_iterations=0,
        cold_runs_per_variant=0, device="cpu", params={"marker": str(marker)},
    ))
    with open(tmp_path / "out.txt", "wb") as fh:
        proc = reaper.popen(_gpusession(sessions_root, "run", session.name, "--experiment",
                                        "slowload", "--headless"),
                            stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                            env=_env())
    wait_for(marker.exists, timeout_s=60)  # the worker is loading
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=30) == 128 + signal.SIGHUP
    rows = Session.open(sessions_root, session.name).results.rows()
    loads = [r for r in rows if r.phase == "load"]
    assert len(loads) == 1 and loads[0].elapsed_seconds is None, rows
    assert "SIGHUP" in (loads[0].notes or "")
    assert loads[0].corpus_accepted is None


@pytest.mark.slow
@pytest.mark.torch
def test_s7_kill_9_during_warmup_is_said_once_and_show_never_reads_all_measured(
    sessions_root: Path, session: Session, reaper: Reaper, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from fake_workloads import with_tests_on_path, write_corpus

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    with_tests_on_path(monkeypatch)
    folder = session.folder
    reaper.folders.append(folder)
    corpus = write_corpus(folder / "corpus" / "eval.jsonl", n=4)
    marker = tmp_path / "warming"
    define_experiment(session, Experiment(
        id="warmkill", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(folder)),
        varied="batch", values=(2,), runs_per_variant=2, warmup_iterations=2,
        cold_runs_per_variant=0, device="cpu", params={"marker": str(marker), "sleep_s": 30},
    ))
    with open(tmp_path / "out.txt", "wb") as fh:
        proc = reaper.popen(_gpusession(sessions_root, "run", session.name, "--experiment",
                                        "warmkill", "--headless"),
                            stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=_env())
    wait_for(marker.exists, timeout_s=60)  # the worker is in its warm-up
    assert not _events(folder, "run_started")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    wait_for(lambda: not _alive_recorded(folder), timeout_s=30)  # the worker follows its parent
    code, out, err = cli(capsys, sessions_root, "show", session.name)
    assert code == 0, err
    assert "the run of warmkill started at " in err and "ended without finishing: 0 of 2 runs done" in err
    words = " ".join(out.split())  # a long cell wraps at 80 columns
    assert "all measured" not in words and "0 of 2 runs done, the run did not finish" in words, out
    code, out, err = cli(capsys, sessions_root, "show", session.name)
    assert "recovered" not in err and "the run did not finish" in " ".join(out.split())
    said = [r for r in _events(folder, "incident") if r.get("kind") == "run_did_not_finish"]
    assert len(said) == 1
