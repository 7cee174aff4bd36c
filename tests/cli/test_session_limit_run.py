"""``run`` keeps to the session limit at run boundaries (D1, H-31).

A fake clock 30 min before the limit; the variant's measured run took 40 min: that run
is not started and the experiment stops, saying "stopped at the session limit (stop by
…)"; after the limit ``run`` is refused with exit 4 before anything runs; ``--past-limit``
runs it, and the override is in the journal and the rows' notes.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fake_launcher import ReplayLauncher, replay_everywhere
from fake_workloads import write_corpus
from helpers import cli

from gpusession.core.events import (
    ExperimentStartedRecord,
    ExperimentStoppedRecord,
    RunOverrideRecord,
)
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

LIMIT = datetime(2026, 12, 5, 14, 0, tzinfo=timezone.utc)

COPY_LABELS = """\
import json, sys
corpus, output = sys.argv[1], sys.argv[2]
with open(corpus) as src, open(output, "w") as out:
    for line in src:
        if line.strip():
            rec = json.loads(line)
            out.write(json.dumps({"id": rec["id"], "label": rec["label"]}) + "\\n")
"""


def _at(monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
    """The instant every command of the test reads as now (``$GPUSESSION_NOW``, A6)."""
    monkeypatch.setenv("GPUSESSION_NOW", now.isoformat())


def _setup(capsys: pytest.CaptureFixture[str], root: Path, s: Session) -> None:
    write_corpus(s.folder / "corpus.jsonl", n=8)
    (s.folder / "copy.py").write_text(COPY_LABELS)
    assert cli(capsys, root, "package", s.name, "--limit", LIMIT.isoformat())[0] == 0
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "lim", "--workload",
                       "command", "--values", "1", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
                       "--corpus", "corpus.jsonl", "--classes", "a,b", "--threshold", "0.5",
                       "--command", f"{sys.executable} {s.folder / 'copy.py'} {{corpus}} {{output}}")
    assert code == 0, err
    # an earlier run of this variant measured 40 min (and its load 1 s)
    s.results.append(ResultRow(experiment_id="lim", variant_id="batch-1", phase="load", run_index=1,
                               elapsed_seconds=1.0))
    s.results.append(ResultRow(experiment_id="lim", variant_id="batch-1", phase="warm", run_index=1,
                               elapsed_seconds=2400.0))


def test_h31_a_run_that_would_end_after_the_limit_is_not_started(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _setup(capsys, sessions_root, session)
    _at(monkeypatch, LIMIT - timedelta(minutes=30))
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 4, out + err
    assert "stopped at the session limit (stop by Sat 14:00:00 UTC)" in out, out
    assert "expected to take 40 min: the longest measured warm run of batch-1, 2400 s" in out  # a command: no load added
    assert "--past-limit" in out and "incident" not in out.split("stopped at")[0].splitlines()[-1]
    assert session.results.read().height == 2  # nothing was started, the rows stand
    stops = [r for r in session.journal_records() if isinstance(r, ExperimentStoppedRecord)]
    assert [r.reason for r in stops] == ["session-limit"] and stops[0].expected_s == pytest.approx(2400)
    code, shown, _ = cli(capsys, sessions_root, "show", session.name)
    assert "stopped   lim: stopped at the session limit (stop by" in shown, shown


def test_h31_after_the_limit_run_is_refused_with_exit_4_before_anything_runs(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _setup(capsys, sessions_root, session)
    _at(monkeypatch, LIMIT + timedelta(minutes=1))
    for extra in ((), ("--detach",)):
        code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", *extra)
        assert code == 4, out + err
        assert "not started: past the session limit (stop by Sat 5 Dec 14:00 UTC)" in err and out == ""
    assert not [r for r in session.journal_records() if isinstance(r, ExperimentStartedRecord)]
    assert not (session.folder / "logs").exists()  # --detach never forked
    code, shown, _ = cli(capsys, sessions_root, "status", session.name)
    # the package ends a day after the limit: its own warning may stand beside it
    assert shown.startswith("WARNING: ") and "past the session limit: start no run" in shown.splitlines()[0], shown


def test_h31_past_limit_runs_it_and_records_the_override(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _setup(capsys, sessions_root, session)
    _at(monkeypatch, LIMIT - timedelta(minutes=30))
    replay_everywhere(monkeypatch, ReplayLauncher())  # the override is the runner's: no worker process
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--past-limit")
    assert code == 0, out + err
    frame = session.results.read()
    new = frame.slice(2)
    assert new.height >= 1 and all("started past the session limit" in (n or "") for n in new["notes"])
    overrides = [r for r in session.journal_records() if isinstance(r, RunOverrideRecord)]
    assert [r.override for r in overrides] == ["past-limit"]


def test_d1_a_never_measured_run_expects_the_run_timeout(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _setup(capsys, sessions_root, session)
    session.results.path.unlink()  # nothing measured: the timeout (3600 s) is expected
    _at(monkeypatch, LIMIT - timedelta(minutes=59))
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 4 and "run timeout, as nothing is measured yet" in out, out


def test_d1_exit_4_and_the_two_overrides_agree_in_the_guide_docs_and_help() -> None:
    from gpusession.cli import build_parser

    root = Path(__file__).resolve().parents[2]
    readme = (root / "docs" / "guide.md").read_text(encoding="utf-8")
    codes = (root / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    helptext = " ".join(sub.choices["run"].format_help().split())  # type: ignore[attr-defined]
    for text in (readme, codes, helptext):
        flat = " ".join(text.split())
        assert "4 not started: past the session limit" in flat.replace("**4** ", "4 ")
        assert "stopped at the session limit" in flat
    for flag in ("--past-limit", "--continue-on-reject"):
        assert flag in readme and flag in codes and flag in helptext


def test_d1_checklist_reserve_hours_sets_the_one_reserve_show_and_status_say(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "package", session.name, "--limit", "auto")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "checklist", session.name, "evidence", "--reserve-hours", "6")
    assert code == 0, err
    session.reload()
    assert session.data["limit"] == {"reserve_s": 6 * 3600.0}
    shown_ = cli(capsys, sessions_root, "show", session.name)[1]
    assert "6 h kept for retrieval" in shown_, shown_
    status = cli(capsys, sessions_root, "status", session.name)[1]
    assert "6 h kept" in status, status
