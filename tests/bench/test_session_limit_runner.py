"""The runner stops at the run boundary where the next run would end past the limit (D1).

A fake clock that moves 25 min with each measured row: the first run (measured before at
20 min) fits the 30 min left, the next does not; the run in flight is never cut, the
row it wrote stands, and the end says why. The workers are replayed in this process
(:mod:`fake_launcher`): what is tested is the runner's stop, not a subprocess.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from fake_launcher import ReplayLauncher
from fake_workloads import write_corpus

from gpusession.bench.runner import Runner
from gpusession.core.copyhome.limit import set_limit
from gpusession.core.events import ExperimentIncompleteRecord, ExperimentStoppedRecord, RowAppended
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

BASE = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
COPY = ("import json, sys\nwith open(sys.argv[1]) as src, open(sys.argv[2], 'w') as out:\n"
        "    for line in src:\n        if line.strip():\n            r = json.loads(line)\n"
        "            out.write(json.dumps({'id': r['id'], 'label': r['label']}) + '\\n')\n")


def test_d1_the_experiment_stops_at_the_boundary_where_the_next_run_would_end_past_the_limit(
        session: Session) -> None:
    write_corpus(session.folder / "corpus.jsonl", n=8)
    (session.folder / "copy.py").write_text(COPY)
    define_experiment(session, Experiment(
        id="e", workload="command", corpus="corpus.jsonl", values=(1,), runs_per_variant=3,
        warmup_iterations=0, cold_runs_per_variant=0,
        params={"command": [sys.executable, str(session.folder / "copy.py"), "{corpus}", "{output}"]}))
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="load",
                                     run_index=1, elapsed_seconds=1.0))
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm",
                                     run_index=1, elapsed_seconds=1200.0))
    set_limit(session, at=BASE + timedelta(minutes=30))
    rows: list[Any] = []

    def on_event(ev: Any) -> None:
        if isinstance(ev, RowAppended) and ev.row.phase == "warm":
            rows.append(ev.row)

    out = Runner(session, "e", on_event=on_event, launcher=ReplayLauncher(),
                 clock=lambda: BASE + timedelta(minutes=25) * len(rows)).run()
    assert len(rows) == 1 and rows[0].elapsed_seconds is not None  # the first run ran whole
    assert out.stopped == "session-limit" and out.started_runs == 1 and not out.completed
    assert out.stopped_words is not None and out.stopped_words.startswith(
        "stopped at the session limit (stop by Fri 12:30:00 UTC): warm:batch-1:3 is expected to take 20 min: the longest measured warm run")
    records = session.journal_records()
    stop = [r for r in records if isinstance(r, ExperimentStoppedRecord)]
    assert len(stop) == 1 and stop[0].run_key == "e:warm:batch-1:3"
    end = [r for r in records if isinstance(r, ExperimentIncompleteRecord)]
    assert end and end[-1].stopped == "session-limit" and "1 of 3 runs done" in (end[-1].message or "")
    assert not any("not run" in (getattr(r, "message", "") or "") for r in records)  # no incident


def test_d1_a_reserve_changed_during_the_run_applies_at_the_next_boundary(session: Session) -> None:
    """The limit is read again at each run boundary: a reserve set after the first run stops the second."""
    write_corpus(session.folder / "corpus.jsonl", n=8)
    (session.folder / "copy.py").write_text(COPY)
    define_experiment(session, Experiment(
        id="e", workload="command", corpus="corpus.jsonl", values=(1,), runs_per_variant=3,
        warmup_iterations=0, cold_runs_per_variant=0,
        params={"command": [sys.executable, str(session.folder / "copy.py"), "{corpus}", "{output}"]}))
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="load",
                                     run_index=1, elapsed_seconds=1.0))
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm",
                                     run_index=1, elapsed_seconds=60.0))
    end = session.package.end
    assert end is not None and end - BASE > timedelta(hours=10)  # the 4 h default leaves room for all
    rows: list[Any] = []

    def on_event(ev: Any) -> None:
        if isinstance(ev, RowAppended) and ev.row.phase == "warm":
            rows.append(ev.row)
            if len(rows) == 1:  # another pane sets a reserve while the experiment runs
                other = Session.open(session.folder.parent, session.name)
                set_limit(other, reserve_s=(end - BASE).total_seconds() - 30)

    out = Runner(session, "e", on_event=on_event, launcher=ReplayLauncher(),
                 clock=lambda: BASE + timedelta(minutes=1) * len(rows)).run()
    assert len(rows) == 1 and out.stopped == "session-limit" and not out.completed
    assert out.stopped_words is not None and out.stopped_words.startswith("stopped at the session limit")
    stop = [r for r in session.journal_records() if isinstance(r, ExperimentStoppedRecord)]
    assert len(stop) == 1 and stop[0].run_key == "e:warm:batch-1:3"


def _command_experiment(session: Session, *, cold: int) -> None:
    write_corpus(session.folder / "corpus.jsonl", n=4)
    (session.folder / "copy.py").write_text(COPY)
    define_experiment(session, Experiment(
        id="e", workload="command", corpus="corpus.jsonl", values=(1,), runs_per_variant=1,
        warmup_iterations=0, cold_runs_per_variant=cold,
        params={"command": [sys.executable, str(session.folder / "copy.py"), "{corpus}", "{output}"]}))


def test_d1_a_command_is_estimated_from_its_measured_runs_not_the_timeout(session: Session) -> None:
    """A command has no load row: its cold and warm runs of 20 ms estimate the next ones."""
    _command_experiment(session, cold=1)
    for phase in ("load", "cold", "warm"):  # as a first attempt of a command leaves them
        session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase=phase, run_index=1,
                                         elapsed_seconds=None if phase == "load" else 0.02))
    set_limit(session, at=BASE + timedelta(minutes=10))  # far less than the 3600 s timeout
    out = Runner(session, "e", clock=lambda: BASE).run()
    assert out.stopped is None and out.completed, out.stopped_words


def test_d1_a_refusal_at_the_limit_gives_seconds_in_both_times(session: Session) -> None:
    _command_experiment(session, cold=0)
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm",
                                     run_index=1, elapsed_seconds=20.0))
    set_limit(session, at=BASE + timedelta(seconds=10))
    out = Runner(session, "e", clock=lambda: BASE).run()
    assert out.stopped == "session-limit"
    words = out.stopped_words or ""
    assert "stop by Fri 12:00:10 UTC" in words and "would end Fri 12:00:20 UTC" in words, words
    assert "the longest measured warm run of batch-1" in words and "run timeout" not in words, words
