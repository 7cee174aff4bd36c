"""Headless ``run``: each finished run's line says the time left for the experiment and
before the session limit (the median of the runs measured so far); ``--quiet`` prints
only the end line."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from fake_workloads import write_corpus
from helpers import cli

from gpusession.core.folder.session import Session

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6); not the in-flight ticker, whose timed waits libfaketime stops.
calendar = pytest.mark.calendar

COPY = "import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])\n"


def _ten_runs(capsys: pytest.CaptureFixture[str], root: Path, session: Session) -> None:
    write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    (session.folder / "copy.py").write_text(COPY, encoding="utf-8")
    code, _, err = cli(capsys, root, "experiment", session.name, "define", "--id", "e", "--workload", "command",
                       "--command", f"{sys.executable} copy.py {{corpus}} {{output}} {{batch}}",
                       "--varied", "batch", "--values", "1,2", "--runs", "5", "--warmup", "0",
                       "--cold-runs", "0", "--corpus", "corpus/eval.jsonl", "--classes", "a,b",
                       "--threshold", "0")
    assert code == 0, err


@calendar
def test_d1_each_finished_run_says_the_time_left(sessions_root: Path, session: Session,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _ten_runs(capsys, sessions_root, session)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out + err
    runs = [line for line in out.splitlines() if re.match(r"\[\s*\d+/10\]", line)]
    assert len(runs) == 10, out
    for line in runs[:-1]:
        assert re.search(r"about [\d.]+ (ms|s|min) left for the experiment", line), line
        assert "before the session limit" in line, line
    assert "experiment done" in runs[-1] and "before the session limit" in runs[-1]


@calendar
def test_quiet_prints_only_the_end_line(sessions_root: Path, session: Session,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _ten_runs(capsys, sessions_root, session)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--quiet")
    assert code == 0, out + err
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "appended to" in lines[0], out


@calendar
def test_run_json_is_the_end_line_as_data(sessions_root: Path, session: Session,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from test_json_contract import _valid

    _ten_runs(capsys, sessions_root, session)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--json")
    assert code == 0, out + err
    doc = _valid("run", out)
    assert doc["rows_appended"] >= 10 and doc["completed"] is True and doc["exit_code"] == 0
    assert json.loads(out) == doc  # stdout is the one document


SLEEP_COPY = "import shutil,sys,time; time.sleep(1.0); shutil.copyfile(sys.argv[1], sys.argv[2])\n"


def test_a_run_in_flight_past_the_interval_says_so_each_interval(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that lasts prints "in flight: N s" every interval (10 s; 0.25 s here), as plain
    lines where stdout is no terminal, and none under ``--quiet``."""
    from gpusession.commands import inflight

    monkeypatch.setattr(inflight, "INTERVAL_S", 0.25)
    write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    (session.folder / "slow.py").write_text(SLEEP_COPY, encoding="utf-8")
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "e",
                       "--workload", "command", "--command",
                       f"{sys.executable} slow.py {{corpus}} {{output}} {{batch}}",
                       "--varied", "batch", "--values", "1", "--runs", "2", "--warmup", "0",
                       "--cold-runs", "0", "--corpus", "corpus/eval.jsonl", "--classes", "a,b",
                       "--threshold", "0")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out + err
    lines = out.splitlines()
    flying = [ln for ln in lines if " in flight: " in ln]
    assert any(re.match(r"\[\s*1/2\] warm batch-1 run 1 in flight: 0 s$", ln) for ln in flying), out
    assert any(ln.startswith("[  2/2] warm batch-1 run 2 in flight") for ln in flying), out
    assert "\r" not in out and "\x1b" not in out  # a log gets plain lines, never the in-place form
    first_row = next(i for i, ln in enumerate(lines) if re.match(r"\[\s*1/2\] warm\s+batch-1\s+run 1 ", ln)
                     and " in flight" not in ln)
    assert any(" in flight" in ln for ln in lines[:first_row]), out  # said before the run's row
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--quiet")
    assert code == 0 and " in flight" not in out and len(out.strip().splitlines()) == 1, out
