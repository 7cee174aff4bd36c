"""What the panes show of measured and hand-edited values: a tiny measured duration or
byte count never reads zero (H-22); control characters of a hand-edited note are shown
escaped (H-17).

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable, Label, OptionList
from ui.pilot import MakeApp, settle, text_of

from gpusession.core.records.results import ResultRow


def _table_text(table: DataTable[Any]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_h22_run_and_memory_panes_never_show_a_tiny_measured_value_as_zero(
    session: Any, make_app: MakeApp
) -> None:
    for i, elapsed in enumerate((1.2e-7, 1.5e-7), start=1):
        session.results.append(ResultRow(
            experiment_id="batch-sweep", variant_id="batch-1", phase="warm", run_index=i, device="cuda:0",
            elapsed_seconds=elapsed, baseline_allocated_bytes=0, baseline_reserved_bytes=0,
            peak_allocated_bytes=1, peak_reserved_bytes=1,
        ))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        run_pane = app.screen.pane("run")
        rows = _table_text(run_pane.query_one("#run-rows", DataTable))
        assert rows[0][3:5] == ["120 ns", "1 B / 1 B"], rows
        summary = _table_text(run_pane.query_one("#run-summary-table", DataTable))
        assert summary[0][3:5] == ["135 ns", "120–150 ns"], summary
        spark = " ".join(str(w.render()) for w in run_pane.query(".spark-range").results(Label))
        assert "120–150 ns" in spark
        await pilot.press("3")
        alloc = text_of(app, "#mem-alloc")
        assert "peak allocated     1 B" in alloc and "baseline allocated 0 B" in alloc, alloc


async def test_h17_checklist_pane_shows_control_characters_of_a_hand_edited_note_escaped(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.retrieval import checklist as cl

    cl.set_note(session, "g1.sample", "hard cases")
    toml = session.checklist_toml
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text.replace('note = "hard cases"', 'note = "\\u001b[31mhard cases\\u0000"'), encoding="utf-8")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("1")
        olist = app.screen.query_one("#checklist-list", OptionList)
        shown = "\n".join(str(olist.get_option_at_index(i).prompt) for i in range(olist.option_count))
        assert "\\x1b[31mhard cases\\x00" in shown
        assert "\x1b" not in shown and "\x00" not in shown
