"""The Validation pane (key 4, ``ui/panes/validation.py``): verdicts in words, the stored report.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable
from ui.pilot import MakeApp, settle, text_of, workers_done

from gpusession.core.records.results import ResultRow


async def test_v1_validation_pane_states_in_words_and_distinct_corpora(
    session: Any, make_app: MakeApp
) -> None:
    base = dict(experiment_id="batch-sweep", phase="warm", quality_metric="macro_f1",
                quality_threshold=0.9, quality_tolerance=0.01, expected_ids=1000, observed_ids=1000)
    session.results.append(ResultRow(variant_id="batch-1", run_index=1, corpus_revision="c1", ids_match=True,
                                     format_valid=True, quality_value=0.95, corpus_accepted=True, **base))
    session.results.append(ResultRow(variant_id="batch-1", run_index=2, corpus_revision="c1", ids_match=True,
                                     format_valid=True, quality_value=0.95, corpus_accepted=True, **base))
    session.results.append(ResultRow(variant_id="batch-4", run_index=1, corpus_revision="c2", ids_match=False,
                                     format_valid=True, quality_value=0.5, corpus_accepted=False, **base))

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        t = app.screen.query_one("#val-table", DataTable)
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        assert tuple(rows[0][1:]) == ("accepted", "match", "valid", "met")
        assert tuple(rows[2][1:]) == ("rejected", "mismatch", "valid", "not met")
        assert text_of(app, "#val-status") == "3 runs; 1 accepted corpus (distinct accepted corpora). v: re-read"
        await pilot.press("down", "down")
        detail = text_of(app, "#val-detail")
        assert "REJECTED" in detail and "margin -0.3900" in detail


async def test_v6_validation_pane_names_the_metric_macro_f1_for_people(
    session: Any, make_app: MakeApp
) -> None:
    """The quality line says "macro-F1" (the term), not the stored id ``macro_f1``."""
    session.results.append(ResultRow(
        experiment_id="batch-sweep", variant_id="batch-1", phase="warm", run_index=1, corpus_revision="c1",
        ids_match=True, format_valid=True, quality_metric="macro_f1", quality_threshold=0.9,
        quality_tolerance=0.01, quality_value=0.95, corpus_accepted=True))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        detail = text_of(app, "#val-detail")
        assert "quality: macro-F1 0.9500 vs threshold 0.9000 − tolerance 0.0100: met" in detail, detail
        assert "macro_f1" not in detail
    from gpusession.ui.panes.validation import quality_words

    assert quality_words({"quality_metric": "macro_f1"}) == "macro-F1: not measured"
    assert quality_words({}) == "not measured"  # was "quality: not measured" after "quality: "


async def test_v1_validation_pane_takes_the_quality_verdict_of_the_stored_report(
    session: Any, make_app: MakeApp
) -> None:
    """Same answer as the CLI: a max-degradation failure in the report is 'not met' in
    the pane even though the row's value clears threshold − tolerance."""
    session.results.append(ResultRow(
        experiment_id="e", variant_id="batch-1", phase="warm", run_index=1, corpus_revision="c1",
        ids_match=True, format_valid=True, quality_metric="macro_f1", quality_threshold=0.9,
        quality_tolerance=0.01, quality_value=0.95, corpus_accepted=False))
    folder = session.validation_dir / "e" / "batch-1"
    folder.mkdir(parents=True)
    (folder / "warm-1.toml").write_text(
        'schema = 1\nverdict = "rejected"\n[quality]\npassed = false\n'
        'reason = "macro_f1 = 0.9500 is 0.0300 below the reference 0.9800 (max degradation 0.0100)"\n')

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        t = app.screen.query_one("#val-table", DataTable)
        assert str(t.get_row_at(0)[4]) == "not met"
        detail = text_of(app, "#val-detail")
        assert "NOT MET" in detail and "max degradation" in detail


async def test_v2_v3_validation_detail_shows_counts_first_offenders_and_classes(
    session: Any, make_app: MakeApp
) -> None:
    import tomli_w

    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-4", phase="warm", run_index=2,
                                     ids_match=False, format_valid=True, corpus_accepted=False))
    folder = session.validation_dir / "batch-sweep" / "batch-4"
    folder.mkdir(parents=True)
    (folder / "warm-2.toml").write_text(tomli_w.dumps({
        "schema": 1, "verdict": "corpus REJECTED: IDs failed", "label_set": ["a", "b"],
        "ids": {"passed": False, "reason": "2 missing, 1 duplicated", "missing": 2, "extra": 0,
                "duplicated_in_output": 1, "duplicated_in_expected": 0,
                "first_missing": ["007", "12"], "first_extra": [], "first_duplicates": ["3"]},
        "quality": {"passed": True, "reason": "macro_f1 0.95", "per_class": [
            {"label": "a", "precision": 1.0, "recall": 0.9, "f1": 0.947, "support": 10}]},
    }))

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        detail = text_of(app, "#val-detail")
        assert "IDs: FAILED — 2 missing, 1 duplicated" in detail
        assert "missing 2, extra 0, duplicated in output 1" in detail
        assert "first missing: 007, 12 (2 listed)" in detail  # IDs stay strings (V2)
        assert "first duplicates: 3 (1 listed)" in detail
        assert "a                    1.000   0.900  0.947       10" in detail
        assert "label set used: a, b" in detail


async def test_v1_validation_pane_names_the_experiment_when_the_session_holds_several(
    session: Any, make_app: MakeApp
) -> None:
    """Two experiments' "batch-4 cold 1" read alike: each run names its experiment then."""
    for exp in ("r2", "mn"):
        session.results.append(ResultRow(experiment_id=exp, variant_id="batch-4", phase="cold", run_index=1,
                                         corpus_revision="c1", ids_match=True, format_valid=True,
                                         corpus_accepted=True))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        t = app.screen.query_one("#val-table", DataTable)
        assert [str(t.get_row_at(i)[0]) for i in range(t.row_count)] == ["r2 batch-4 cold 1", "mn batch-4 cold 1"]


async def test_v1_validation_pane_reads_an_older_failed_rows_false_as_not_validated(
    session: Any, make_app: MakeApp
) -> None:
    """A failed run written by an older version holds corpus_accepted = false with no
    validation at all: the pane says "not validated", as show and the report do."""
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-4", phase="warm", run_index=1,
                                     corpus_accepted=False, notes="incident: worker died during this run"))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        t = app.screen.query_one("#val-table", DataTable)
        assert str(t.get_row_at(0)[1]) == "not validated"
        assert "corpus NOT VALIDATED" in text_of(app, "#val-detail")


async def test_s9_the_pane_lists_deliverables_and_rejects_with_j_through_the_cli_function(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    from textual.widgets import Input

    from gpusession.core.folder.approvals import decide, load_approvals
    from gpusession.core.folder.unit import set_unit

    set_unit(session, "visual")
    out = _two_visuals(tmp_path / "out")
    decide(session, [out / "visual-01.png"], decision="approved", by="Ana")
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        t = app.screen.query_one("#deliv-table", DataTable)
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        assert rows[0][:3] == ["visual-01.png", "approved", "Ana"]
        assert rows[1][:2] == ["visual-02.png", "still to decide"]
        assert "1 approved visual" in text_of(app, "#deliv-status")
        t.focus()
        t.move_cursor(row=1)
        await pilot.press("j")
        await pilot.pause()
        app.screen.query_one("#field-by", Input).value = "Bo"
        app.screen.query_one("#field-text", Input).value = "legend cut"
        await pilot.press("ctrl+s")
        await workers_done(pilot, app)  # the count is read again in a worker
        d = load_approvals(session)["visual-02.png"]
        assert (d.decision, d.by, d.text) == ("rejected", "Bo", "legend cut")
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        assert rows[1][:3] == ["visual-02.png", "rejected", "Bo"]


async def test_s9_the_first_decision_is_made_in_the_pane_on_the_last_accepted_output(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    """Before any decision, the pane proposes the last accepted output folder and ``a``
    approves there through the CLI's function, recording that folder (S9)."""
    import json

    from textual.widgets import Input

    from gpusession.core.folder.approvals import deliverables_folder, load_approvals
    from gpusession.core.validation.accept_rule import KIND, REPORT_SUFFIX

    out = _two_visuals(tmp_path / "warm-1")
    report = session.validation_dir / "render" / "batch-1" / f"warm-1{REPORT_SUFFIX}"
    report.parent.mkdir(parents=True)
    report.write_text(json.dumps({"schema": 1, "kind": KIND, "output": str(out), "accepted": True,
                                  "files": {"visual-01.png": "a" * 64, "visual-02.png": "b" * 64}}))
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        t = app.screen.query_one("#deliv-table", DataTable)
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        assert [r[:2] for r in rows] == [["visual-01.png", "still to decide"],
                                         ["visual-02.png", "still to decide"]]
        assert "the last accepted output" in text_of(app, "#deliv-status")
        assert t.has_focus  # no run in the results: the table with rows holds the focus
        app.screen.query_one("#val-table", DataTable).focus()
        await pilot.pause()
        assert not t.has_focus  # a reaches the first deliverable from anywhere in the pane
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#field-by", Input).value = "Ana"
        await pilot.press("ctrl+s")
        await workers_done(pilot, app)  # the count is read again in a worker
        d = load_approvals(session)["visual-01.png"]
        assert (d.decision, d.by) == ("approved", "Ana")
        assert deliverables_folder(session) == out
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        assert rows[0][:3] == ["visual-01.png", "approved", "Ana"]
        assert "the last accepted output" not in text_of(app, "#deliv-status")


async def test_s9_a_rejected_file_moved_away_keeps_its_decision_in_the_pane(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    """A rejected file taken out of the hand-over folder reads "rejected, no longer there",
    as ``gpusession deliverables`` says it (the decision is kept)."""
    from gpusession.core.folder.approvals import decide

    out = _two_visuals(tmp_path / "out")
    decide(session, [out / "visual-01.png"], decision="approved", by="Ana")
    decide(session, [out / "visual-02.png"], decision="rejected", by="Ana", text="legend cut")
    (out / "visual-02.png").unlink()
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        t = app.screen.query_one("#deliv-table", DataTable)
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        assert rows[1][:3] == ["visual-02.png", "rejected, no longer there", "Ana"]


def _two_visuals(out: Any) -> Any:
    """``out`` made with ``visual-01.png`` and ``visual-02.png`` (two distinct PNGs)."""
    out.mkdir()
    for i in (1, 2):
        (out / f"visual-0{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
    return out


async def test_s10_k3_a1_the_top_line_says_the_sessions_count_in_its_unit_with_its_source_as_cost(
        session: Any, make_app: MakeApp, tmp_path: Any, sessions_root: Any,
        capsys: Any) -> None:
    """A charts session with 4 files approved by a person: the pane's top line says
    ``4 approved charts`` and where the count comes from, never "0 distinct accepted
    corpora", and ``cost`` divides by the same words."""
    from helpers import cli

    from gpusession.core.folder.approvals import decide
    from gpusession.core.folder.unit import set_unit

    set_unit(session, "chart")
    out = tmp_path / "charts"
    out.mkdir()
    for i in range(4):
        (out / f"chart-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
    decide(session, sorted(out.iterdir()), decision="approved", by="Ana")
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await workers_done(pilot, app)
        status = text_of(app, "#val-status")
    assert status == "0 runs; 4 approved charts (approved by a person, distinct by SHA-256 (approvals.toml)). v: re-read"
    assert "corpora" not in status
    code, said, err = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0, err
    assert said.splitlines()[0] == "55.00 USD ÷ 4 approved charts = 13.75 USD per chart", said


async def test_s9_s10_the_pane_says_same_bytes_counted_once_and_a_conflict_to_settle(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    """From the count's facts: a repeat of approved bytes reads "counted once", the same
    bytes approved by Ana and rejected by Bo read as a conflict in the rows and the status."""
    from gpusession.core.folder.approvals import decide
    from gpusession.core.folder.unit import set_unit

    set_unit(session, "visual")
    out = _two_visuals(tmp_path / "out")
    (out / "visual-03.png").write_bytes((out / "visual-01.png").read_bytes())
    (out / "visual-04.png").write_bytes((out / "visual-02.png").read_bytes())
    decide(session, [out / "visual-01.png", out / "visual-02.png"], decision="approved", by="Ana")
    decide(session, [out / "visual-03.png"], decision="approved", by="Ana")
    decide(session, [out / "visual-04.png"], decision="rejected", by="Bo", text="legend cut")
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        t = app.screen.query_one("#deliv-table", DataTable)
        cells = {str(t.get_row_at(i)[0]): str(t.get_row_at(i)[1]) for i in range(t.row_count)}
        assert cells == {"visual-01.png": "approved",
                         "visual-02.png": "approved: CONFLICT, settle it",
                         "visual-03.png": "approved: same bytes as visual-01.png, counted once",
                         "visual-04.png": "rejected: CONFLICT, settle it"}
        status = text_of(app, "#deliv-status")
        assert "1 approved visual" in status  # the disputed bytes wait for the person (S9)
        assert ("conflict: the same bytes approved by Ana (visual-02.png) and rejected by Bo (visual-04.png)"
                in status), status
