"""The Validation pane at 80×24 (the smallest tmux pane): the focus on the table that has
rows, and one key between the runs and the deliverables, named in the footer."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable, Footer
from textual.widgets._footer import FooterKey
from ui.pilot import SIZE, MakeApp, settle

from gpusession.core.folder.approvals import decide


def _visuals(out: Any, n: int = 3) -> Any:
    out.mkdir()
    for i in range(1, n + 1):
        (out / f"visual-0{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
    return out


def _footer_keys(app: Any) -> dict[str, FooterKey]:
    return {k.description: k for k in app.screen.query_one(Footer).query(FooterKey) if k.display}


async def test_s9_no_run_yet_the_deliverables_table_holds_the_focus_at_80x24(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    out = _visuals(tmp_path / "out")
    decide(session, [out / "visual-01.png"], decision="approved", by="Ana")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.1)
        runs = app.screen.query_one("#val-table", DataTable)
        deliverables = app.screen.query_one("#deliv-table", DataTable)
        assert runs.row_count == 0 and deliverables.row_count == 3
        assert deliverables.has_focus  # the arrow keys move a cursor the person sees
        await pilot.press("down")
        assert deliverables.cursor_row == 1
        keys = _footer_keys(app)
        assert "Next table" in keys and keys["Next table"].key == "tab"
        every = [k for k in app.screen.query_one(Footer).query(FooterKey) if k.display]
        palette = [k for k in every if "-command-palette" in k.classes]
        edge = palette[0].region.x if palette else SIZE[0]
        for k in every:  # every key whole at 80 columns, left of the palette hint
            assert k in palette or 0 < k.region.right <= edge, (k.key, k.description)
        await pilot.press("tab")  # one key to the runs, and back
        assert runs.has_focus
        await pilot.press("tab")
        assert deliverables.has_focus


async def test_v1_runs_and_no_deliverable_the_runs_table_holds_the_focus(
        session: Any, make_app: MakeApp) -> None:
    from gpusession.core.records.results import ResultRow

    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                     run_index=1, elapsed_seconds=1.0, ids_match=True, format_valid=True))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.1)
        assert app.screen.query_one("#val-table", DataTable).has_focus
        assert "Next table" not in _footer_keys(app)  # one table: no key between tables
