"""The words "the run did not finish" go on the groups that run left unfinished, not on
variants measured in full."""

from __future__ import annotations

from gpusession.core.events.facts import journal_facts
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.records.summary import UNFINISHED_KIND, session_summary


def _finished(s: Session, variant: str, index: int) -> None:
    s.results.append(ResultRow(experiment_id="e", variant_id=variant, phase="warm", run_index=index,
                               elapsed_seconds=1.0))
    s.journal("run_finished", run_key=f"e:warm:{variant}:{index}", experiment_id="e",
              variant_id=variant, phase="warm", run_index=index, ok=True)


def test_s7_unfinished_words_only_on_the_groups_the_killed_run_left(session: Session) -> None:
    s = session
    # a first run, complete
    s.journal("experiment_started", experiment_id="e", runs=["warm:batch-1:1", "warm:batch-1:2"])
    s.results.append(ResultRow(experiment_id="e", variant_id="all", phase="load", run_index=1, elapsed_seconds=2.0))
    _finished(s, "batch-1", 1)
    _finished(s, "batch-1", 2)
    s.journal("experiment_finished", experiment_id="e", runs_done=2, runs_scheduled=2)
    # a second run, killed after 2 of 4 runs, then recovered
    s.journal("experiment_started", experiment_id="e",
              runs=["warm:batch-1:3", "warm:batch-8:1", "warm:batch-8:2", "warm:batch-16:1"])
    s.results.append(ResultRow(experiment_id="e", variant_id="all", phase="load", run_index=2, elapsed_seconds=2.0))
    _finished(s, "batch-1", 3)
    _finished(s, "batch-8", 1)
    s.journal("incident", experiment_id="e", kind=UNFINISHED_KIND, message="the run of e … did not finish")
    assert journal_facts(s.journal_records()).unfinished_groups == {"e": frozenset({("batch-8", "warm"), ("batch-16", "warm")})}
    words = {(r.variant_words(), r.phase): r.outcome_words() for r in session_summary(s)}
    said = "attempt 2: 2 of 4 runs done, the run did not finish"  # two attempts: it names its own
    assert words[("batch-1", "warm")] == "all measured"  # measured in full, in both runs
    assert words[("batch-8", "warm")] == said  # batch-16 has no row: batch-8 and the loads say it
    assert words[("all variants", "load")] == said


def test_s7_a_run_stopped_by_a_hang_up_says_so_on_what_it_left(session: Session) -> None:
    """SIGHUP after 1 of 3 runs: an ended but incomplete run; its rows say it stopped early."""
    s = session
    s.journal("experiment_started", experiment_id="e", runs=["warm:batch-1:1", "warm:batch-4:1", "warm:batch-16:1"])
    _finished(s, "batch-1", 1)
    s.results.append(ResultRow(experiment_id="e", variant_id="batch-4", phase="warm", run_index=1,
                               notes="incident: interrupted by SIGHUP"))  # its row, no run_finished
    s.journal("experiment_incomplete", experiment_id="e", runs_done=1, runs_scheduled=3, cancelled=False)
    words = {(r.variant_words(), r.phase): r.outcome_words() for r in session_summary(s)}
    assert words[("batch-1", "warm")] == "all measured"
    assert words[("batch-4", "warm")].endswith("1 of 3 runs done, the run stopped before the end")
    # the runner records the cut run as finished (failed): only batch-16 is left, with no
    # row; the loads say it, never batch-1 measured in full
    s.journal("run_finished", run_key="e:warm:batch-4:1", experiment_id="e", variant_id="batch-4",
              phase="warm", run_index=1, ok=False)
    s.journal("load_started", run_key="e:load:all:1", experiment_id="e", variant_id="all",
              phase="load", run_index=1)  # as the runner journals a load: it names its attempt
    s.results.append(ResultRow(experiment_id="e", variant_id="all", phase="load", run_index=1, elapsed_seconds=2.0))
    words = {(r.variant_words(), r.phase): r.outcome_words() for r in session_summary(s)}
    assert words[("batch-1", "warm")] == "all measured"
    assert words[("all variants", "load")] == "2 of 3 runs done, the run stopped before the end"
    s.journal("experiment_started", experiment_id="e", runs=["warm:batch-1:2"])
    _finished(s, "batch-1", 2)
    s.journal("experiment_incomplete", experiment_id="e", runs_done=1, runs_scheduled=1, cancelled=True)
    # every run the second attempt scheduled ran (a cancel after the last): it says nothing;
    # the rows the first attempt wrote keep its own words (D5)
    words = {(r.variant_words(), r.phase): r.outcome_words() for r in session_summary(s)}
    assert words[("batch-1", "warm")] == "all measured"
    assert words[("all variants", "load")] == "attempt 1: 2 of 3 runs done, the run stopped before the end"
    assert not any("attempt 2" in w for w in words.values())
