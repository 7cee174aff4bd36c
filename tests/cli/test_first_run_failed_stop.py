"""A failed first run stops the experiment at that run boundary, as a major defect does (D3, R7).

A command that fails every run (exit 1, "CUDA out of memory" on stderr) would run its
cold run, its warm-up and every warm run: hours of a rented GPU. The first run of the
invocation to end is the first result; when it failed, the experiment stops there: its
row is kept with the incident, the stop says what failed with the command's stderr tail,
``run`` exits 3, and ``--continue-on-reject`` runs them all. A run that fails after one
succeeded is data, never a stop. Real command workloads (a shell script in the session).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.events import ExperimentStoppedRecord
from gpusession.core.folder.session import Session

CRASH = 'echo "CUDA out of memory" >&2\nexit 1\n'
#: Succeeds twice, then fails every call (a counter file beside it).
LATER = ('n=$(cat "$(dirname "$0")/count" 2>/dev/null || echo 0)\nn=$((n+1))\n'
         'echo $n > "$(dirname "$0")/count"\n[ $n -le 2 ] || { echo "disk full" >&2; exit 1; }\n')


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session, script: str, *, runs: str = "5",
            warmup: str = "1") -> None:
    (s.folder / "crash.sh").write_text(script)
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "crash", "--workload",
                       "command", "--values", "1", "--runs", runs, "--warmup", warmup,
                       "--command", f"sh {s.folder / 'crash.sh'} {{output}}")
    assert code == 0, err


def _stops(s: Session) -> list[ExperimentStoppedRecord]:
    return [r for r in s.journal_records() if isinstance(r, ExperimentStoppedRecord)]


def test_d3_a_failed_first_run_stops_the_experiment(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, CRASH)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 3, out[-3000:] + err[-2000:]
    frame = session.results.read()
    assert frame.height == 1 and frame["phase"][0] == "cold"  # the warm-up and warm runs never started
    assert frame["elapsed_seconds"][0] is None and "CUDA out of memory" in frame["notes"][0]  # R7
    end = out.strip().splitlines()[-1]
    assert "stopped after the first result: " in end and "failed" in end, end
    assert "CUDA out of memory" in end and "exit 3" in end and "--continue-on-reject" in end, end
    stops = _stops(session)
    assert [r.reason for r in stops] == ["first-result"] and "CUDA out of memory" in str(stops[0].message)


def test_d3_continue_on_reject_runs_every_failing_run(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, CRASH, runs="2", warmup="0")
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--continue-on-reject")
    assert code != 0, out[-3000:] + err[-2000:]
    frame = session.results.read()
    assert frame.height == 1 + 2 and frame["elapsed_seconds"].null_count() == 3
    assert not _stops(session) and "stopped after the first result" not in out


def test_d3_a_run_failing_after_others_succeeded_is_data_not_a_stop(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, LATER, runs="3", warmup="0")
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    frame = session.results.read()
    assert frame.height == 1 + 3, out[-3000:] + err[-2000:]
    assert frame["elapsed_seconds"].null_count() == 2  # the third and fourth call failed, kept (R7)
    assert not _stops(session) and "stopped after the first result" not in out
    assert code != 3
