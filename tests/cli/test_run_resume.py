"""``run --resume``: an experiment that ended early continues at the next missing run of its schedule.

A command workload (values 1,2,3, 5 runs each, one cold run each: 18 runs) whose eighth
run kills the runner itself with SIGKILL; crash recovery keeps that run's incident row,
and ``--resume`` measures the 11 runs left, the eighth included, so each
(variant, phase, run index) of the schedule ends with exactly one measured row.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_launcher import ReplayLauncher, keeping, replay_everywhere, session_of
from fake_workloads import write_corpus
from helpers import cli

from gpusession.core.events import ExperimentStartedRecord, ExperimentStoppedRecord
from gpusession.core.folder.session import Session

#: A command that writes every ID; on its 8th call (``count`` file) it SIGKILLs the runner
#: (the PID in the session's run lock) once (``killed`` marker), then waits to be ended.
KILL_AT_8 = """\
import json, os, signal, sys, time
corpus, output, count, killed = sys.argv[1:5]
with open(count, "a") as fh:
    fh.write("x\\n")
n = len(open(count).read().split())
if n == 8 and not os.path.exists(killed):
    open(killed, "w").close()
    os.kill(int(open(".run.lock").read().split()[0]), signal.SIGKILL)
    time.sleep(60)
broken = os.path.exists("broken")
with open(corpus) as src, open(output, "w") as out:
    for i, line in enumerate(l for l in src if l.strip()):
        if broken and i >= 700:
            break
        rec = json.loads(line)
        out.write(json.dumps({"id": rec["id"], "label": rec["label"]}) + "\\n")
"""


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session, tmp_path: Path, *,
            n: int = 20, exp_id: str = "e") -> None:
    write_corpus(s.folder / "corpus.jsonl", n=n)
    (s.folder / "cmd.py").write_text(KILL_AT_8)
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", exp_id, "--workload",
                       "command", "--values", "1,2,3", "--runs", "5", "--warmup", "0",
                       "--corpus", "corpus.jsonl", "--classes", "a,b", "--threshold", "0.5",
                       "--command", f"{sys.executable} {s.folder / 'cmd.py'} {{corpus}} {{output}} "
                       f"{tmp_path / 'count'} {tmp_path / 'killed'}")
    assert code == 0, err


def _slots(s: Session, exp_id: str = "e") -> dict[tuple[str, str, int], list[dict[str, object]]]:
    frame = s.results.read()
    out: dict[tuple[str, str, int], list[dict[str, object]]] = {}
    for r in frame.filter(frame["experiment_id"] == exp_id).iter_rows(named=True):
        if r["phase"] != "load":
            out.setdefault((r["phase"], r["variant_id"], r["run_index"]), []).append(r)
    return out


def _schedule(s: Session) -> list[tuple[str, str, int]]:
    head = next(r for r in s.journal_records() if isinstance(r, ExperimentStartedRecord))
    return [(p, v, int(i)) for p, v, i in (k.split(":") for k in head.runs)]


@pytest.mark.slow
def test_resume_after_kill_ends_with_one_measured_row_per_slot(
        sessions_root: Path, session: Session, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), "run", session.name,
         "--experiment", "e", "--headless"], capture_output=True, text=True, timeout=240)
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]  # killed for real
    assert (tmp_path / "killed").exists()
    reopened = Session.open(sessions_root, session.name)  # crash recovery: the incident row
    before = _slots(reopened)
    measured = {k for k, rows in before.items() if any(r["elapsed_seconds"] is not None for r in rows)}
    assert len(measured) == 7, before
    schedule = _schedule(reopened)
    assert len(schedule) == 18
    cut = schedule[7]
    assert [r["elapsed_seconds"] for r in before[cut]] == [None]

    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume")
    assert code == 0, out[-3000:] + err[-2000:]
    assert f"resuming attempt 1 of e at {cut[0]}:{cut[1]}:{cut[2]}: 11 of 18 runs missing" in out
    after = _slots(reopened)
    assert set(after) == set(schedule)  # no run outside the stored schedule
    for slot in schedule:
        ok = [r for r in after[slot] if r["elapsed_seconds"] is not None]
        assert len(ok) == 1, (slot, after[slot])
    incident = [r for r in after[cut] if r["elapsed_seconds"] is None]
    assert len(incident) == 1 and "in flight" in str(incident[0]["notes"])  # kept
    resumed = [r for slot in schedule[7:] for r in after[slot] if r["elapsed_seconds"] is not None]
    assert all("resumed after attempt 1 ended early" in str(r["notes"]) for r in resumed)
    assert not any("resumed" in str(r["notes"]) for slot in schedule[:7] for r in after[slot])
    starts = [r for r in reopened.journal_records() if isinstance(r, ExperimentStartedRecord)]
    assert [r.resumes for r in starts] == [None, 1]
    assert starts[1].runs == [f"{p}:{v}:{i}" for p, v, i in schedule[7:]]
    assert "a new worker loads" in str(starts[1].message)

    shown = " ".join(cli(capsys, sessions_root, "show", session.name)[1].split())
    # the first attempt keeps its own words; the resume is said after them
    assert "attempt 1: 7 of 18 runs done, the run did not finish; resumed by attempt 2" in shown, shown
    data = json.loads(cli(capsys, sessions_root, "show", session.name, "--json")[1])
    timed = [r for r in data["summary"] if r["experiment_id"] == "e" and r["phase"] in ("cold", "warm")]
    assert sorted((r["phase"], r["runs"], r["failed"]) for r in timed) == \
        [("cold", 1, 0)] * 3 + [("warm", 5, 0)] * 3  # one run per slot, not two

    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume")
    assert code == 0 and "nothing to resume: all 18 runs of e are measured" in out
    assert len(_slots(reopened)) == 18  # nothing ran


def test_resume_after_a_first_result_stop_rearms_the_gate(
        sessions_root: Path, session: Session, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's runs replayed in this process (700 IDs kept while ``broken`` exists)."""
    _define(capsys, sessions_root, session, tmp_path, n=1000)
    replay_everywhere(monkeypatch, ReplayLauncher(
        run=keeping(700, when=lambda spec: (session_of(spec) / "broken").exists())))
    (tmp_path / "killed").touch()  # this one is never killed
    (session.folder / "broken").touch()  # 300 IDs missing
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 3, out[-3000:] + err[-2000:]
    assert len(_slots(session)) == 1
    assert ("`run --resume` runs the rest of its schedule and keeps the rejected first result as measured; "
            "a plain `run` measures the whole batch anew") in out  # what to do next, and what each keeps
    # resumed unfixed: the gate looks at the first result of this run again
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume")
    assert code == 3 and "stopped after the first result: 300 IDs missing" in out, out[-3000:] + err
    assert sorted(_slots(session)) == [("cold", "batch-1", 1), ("cold", "batch-2", 1)]
    stops = [r for r in session.journal_records() if isinstance(r, ExperimentStoppedRecord)]
    assert [r.reason for r in stops] == ["first-result"] * 2
    (session.folder / "broken").unlink()  # fixed
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume")
    # the two rejected first results stay measured: the end says so, as show does, never "0 REJECTED"
    assert code == 3, out[-3000:] + err[-2000:]
    assert "resuming attempt 1 of e at cold:batch-3:1: 16 of 18 runs missing" in out
    assert "; variants: 1 accepted, 2 REJECTED; experiment complete" in out, out[-3000:]
    slots = _slots(session)
    assert sorted(slots) == sorted(_schedule(session))
    assert all(len([r for r in rows if r["elapsed_seconds"] is not None]) == 1 for rows in slots.values())


def test_resume_of_a_never_run_experiment_points_to_plain_run(
        sessions_root: Path, session: Session, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, tmp_path)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume")
    assert code == 2, out + err
    assert "nothing to resume: e has never run" in err
    assert f"gpusession run {session.name} --experiment e --headless" in err
    assert "Traceback" not in err and not session.results.read().height


def test_resume_with_nothing_missing_runs_nothing(
        sessions_root: Path, session: Session, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.records.results import ResultRow

    _define(capsys, sessions_root, session, tmp_path)
    keys = ["cold:batch-1:1", "warm:batch-1:1"]
    session.journal(ExperimentStartedRecord(experiment_id="e", runs=keys))
    for k in keys:
        phase, variant, index = k.split(":")
        session.results.append(ResultRow(experiment_id="e", variant_id=variant, phase=phase,
                                         run_index=int(index), elapsed_seconds=0.5))
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume",
                         "--detach")
    assert code == 0, out + err
    assert "nothing to resume: all 2 runs of e are measured" in out
    assert "started" not in out and not (session.folder / "logs").exists()  # nothing forked
    assert session.results.read().height == 2


def test_resume_refuses_a_schedule_with_variants_no_longer_defined(
        sessions_root: Path, session: Session, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, tmp_path)
    session.journal(ExperimentStartedRecord(experiment_id="e", runs=["warm:batch-9:1"]))
    code, _, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume")
    assert code == 2 and "batch-9 that it no longer defines" in err, err
    assert "Traceback" not in err and not session.results.read().height


def test_a_cancelled_run_says_how_to_measure_the_rest_in_run_and_show(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """A run cut short before some groups started: ``show`` names it with the resume command."""
    from gpusession.commands.session_cmds import unfinished_experiments
    from gpusession.core.events import ExperimentIncompleteRecord, ExperimentStartedRecord

    session.journal(ExperimentStartedRecord(experiment_id="e", runs=["cold:batch-1:1", "warm:batch-1:1"]))
    session.journal(ExperimentIncompleteRecord(experiment_id="e", cancelled=True))
    words = unfinished_experiments(session)
    assert words == {"e": f"0 of 2 runs done, the run was cancelled; `gpusession run {session.name} "
                          "--experiment e --resume` measures the rest"}
    code, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert code == 0 and f"cut short e: 0 of 2 runs done, the run was cancelled; `gpusession run {session.name}" in out


def test_a_resume_refused_by_the_run_lock_says_nothing_of_what_it_would_run(
        sessions_root: Path, session: Session, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Another run takes the lock after the first look at it: the refusal comes before the resume's words."""
    import platform

    from gpusession.commands import host_cmd
    from gpusession.core.records.results import ResultRow

    _define(capsys, sessions_root, session, tmp_path)
    keys = ["cold:batch-1:1", "warm:batch-1:1"]
    session.journal(ExperimentStartedRecord(experiment_id="e", runs=keys))
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="cold",
                                     run_index=1, elapsed_seconds=0.5))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        def taken_meanwhile(s: Session) -> list[str]:  # the other run starts between look and print
            (s.folder / ".run.lock").write_text(f"{other.pid} {platform.node()}")
            return []

        monkeypatch.setattr(host_cmd, "check_on_first_open", taken_meanwhile)
        code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--resume")
    finally:
        other.kill()
        other.wait()
    assert code == 1 and f"another gpusession process (pid {other.pid}) is running experiments" in err, out + err
    assert "resuming" not in out and "running e" not in out, out
    assert session.results.read().height == 1 and (session.folder / ".run.lock").exists()  # not freed
