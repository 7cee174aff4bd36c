"""H-29 in the Run pane: a rejected variant reads REJECTED with its reason, beside the times (D5)."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable
from ui.pilot import MakeApp, settle

from gpusession.core.records.results import ResultRow
from gpusession.ui.panes.run_summary import end_verdicts


async def test_h29_run_pane_summary_says_rejected_with_the_reason(session: Any, make_app: MakeApp) -> None:
    for i in (1, 2):  # every text labelled `a` on a two-class corpus: macro-F1 0.333
        session.results.append(ResultRow(
            experiment_id="batch-sweep", variant_id="batch-1", phase="warm", run_index=i,
            elapsed_seconds=0.1, expected_ids=8, observed_ids=8, ids_match=True, format_valid=True,
            quality_metric="macro_f1", quality_threshold=0.9, quality_tolerance=0.0,
            quality_value=1 / 3, corpus_accepted=False))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        table = app.screen.pane("run").query_one("#run-summary-table", DataTable)
        header = [str(c.label) for c in table.columns.values()]
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        verdict = header.index("verdict")
        assert [r[verdict] for r in rows] == ["REJECTED (quality 0.333 below the floor 0.9 − 0.0)"]
        assert "measured" not in header  # a group measured in full adds nothing to its verdict


def _validated(phase: str, accepted: bool) -> ResultRow:
    return ResultRow(
        experiment_id="batch-sweep", variant_id="batch-1", phase=phase, run_index=1,
        elapsed_seconds=0.1, expected_ids=8, observed_ids=8 if accepted else 5, ids_match=accepted,
        format_valid=True, quality_metric="macro_f1", quality_threshold=0.5, quality_tolerance=0.0,
        quality_value=1.0 if accepted else 0.6, corpus_accepted=accepted)


async def test_a_resume_ends_judging_the_rejected_first_result_it_kept(session: Any, make_app: MakeApp) -> None:
    """The first-result stop's rejected cold row stays; the resume measured only an accepted warm row."""
    session.results.append(_validated("cold", accepted=False))
    session.results.append(_validated("warm", accepted=True))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        # the run worker judges the run that ended (resumed: every row of the experiment)
        assert end_verdicts(session, "batch-sweep", 1, resumed=True)[1] == (
            "; variants: 0 accepted, 1 REJECTED")  # as show says
        # a plain run is judged by the rows it wrote
        assert end_verdicts(session, "batch-sweep", 1, resumed=False)[1] == "; variants: 1 accepted, 0 REJECTED"


async def test_d5_a_group_not_measured_in_full_says_how_in_its_verdict_cell(session: Any, make_app: MakeApp) -> None:
    """One of two warm runs failed: the verdict cell says so after the verdict, within 80 columns."""
    session.results.append(_validated("warm", accepted=True))
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                     run_index=2, notes="incident: exception in the workload: boom"))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        table = app.screen.pane("run").query_one("#run-summary-table", DataTable)
        header = [str(c.label) for c in table.columns.values()]
        cell = str(table.get_row_at(0)[header.index("verdict")])
        assert cell.startswith("accepted; ") and "failed" in cell, cell


def test_r1_a_run_refused_at_its_load_says_not_run_and_why() -> None:
    from gpusession.core.folder.corpus_pin import REVISION_CHANGED
    from gpusession.core.records.outcome import RunOutcome
    from gpusession.ui.panes.run import outcome_words

    words = "the model changed since the last attempt of m (echo-1 → echo-2): …"
    outcome = RunOutcome(stopped=REVISION_CHANGED, stopped_words=words, incidents=[words])
    assert outcome_words(outcome, None, False) == f"not run: {words}"


def test_a1_d5_the_verdict_cells_colour_follows_the_typed_verdict_not_its_words() -> None:
    """A rejection is red by ``any_rejected``; an accepted group whose reason text starts ``REJECTED`` is not."""
    from rich.text import Text

    from gpusession.core.records.summary import SummaryRow
    from gpusession.ui.panes.run_words import verdict_cell

    base = dict(experiment_id="e", variant_id="v", phase="warm", runs=2, n=2, failed=0,
                median_seconds=0.1, min_seconds=0.1, max_seconds=0.1, p95_seconds=None)
    rejected = verdict_cell(SummaryRow(**base, validated=2, accepted=1, rejections=("format invalid",)))
    assert isinstance(rejected, Text) and "red" in str(rejected.style) and str(rejected).startswith("REJECTED 1 of 2")
    accepted = verdict_cell(SummaryRow(**base, validated=2, accepted=2))
    assert not (isinstance(accepted, Text) and "red" in str(accepted.style))
    cut = SummaryRow(**{**base, "failed": 1}, validated=1, accepted=1)
    assert not cut.measured_in_full and str(verdict_cell(cut)) == f"accepted; {cut.outcome_words()}"
    whole = SummaryRow(**base, validated=2, accepted=2)
    assert whole.measured_in_full and whole.outcome_words() == "all measured" and str(verdict_cell(whole)) == "accepted"



def test_a1_h11_a_state_cells_colour_is_its_typed_tone_whatever_its_words() -> None:
    from gpusession.ui.context import state_cell, tone

    assert [tone(True), tone(False), tone(None)] == ["good", "bad", "unknown"]
    assert str(state_cell("rejected", "good").style) == "green"  # the tone decides, not the word
    assert str(state_cell("accepted", "bad").style) == "bold red"
    assert str(state_cell("not validated", "unknown").style) == "dim"
    assert str(state_cell("still to decide", "plain").style) == ""
