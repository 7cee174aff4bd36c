"""Issue 6: "the run did not finish" goes on the groups that run left unfinished, not on
variants measured in full (tryout: every row of the experiment said it)."""

from __future__ import annotations

from gpusession.core.results import ResultRow
from gpusession.core.session import Session
from gpusession.core.summary import UNFINISHED_KIND, session_summary, unfinished_groups


def _finished(s: Session, variant: str, index: int) -> None:
    s.results.append(ResultRow(experiment_id="e", variant_id=variant, phase="warm", run_index=index,
                               elapsed_seconds=1.0))
    s.journal("run_finished", run_key=f"e:warm:{variant}:{index}", experiment_id="e",
              variant_id=variant, phase="warm", run_index=index, ok=True)


def test_s7_issue6_unfinished_words_only_on_the_groups_the_killed_run_left(session: Session) -> None:
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
    assert unfinished_groups(s.read_journal()) == {"e": frozenset({("batch-8", "warm"), ("batch-16", "warm")})}
    words = {(r.variant_words(), r.phase): r.outcome_words() for r in session_summary(s)}
    said = "2 of 4 runs done, the run did not finish"
    assert words[("batch-1", "warm")] == "all measured"  # measured in full, in both runs
    assert words[("batch-8", "warm")] == said  # batch-16 has no row: batch-8 and the loads say it
    assert words[("all variants", "load")] == said
