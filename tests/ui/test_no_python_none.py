"""The TUI shows no Python ``None`` a ``validate --session`` row
(experiment ``validate``, no phase, no run index, no timing) next to measured runs; a
validation run archived as ``validation/<name>.toml`` is found by the Validation pane;
hand-edited free text of an archived report is shown escaped (H-17).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static
from ui.pilot import MakeApp, settle
from ui.test_rule_ids_not_shown_tui import _pane_text

from gpusession.cli import main
from gpusession.testing import FakeRunner

PANES = ("checklist", "run", "memory", "validation", "order", "cost")


def _validate_into(session: Any, tmp: Path, name: str = "by-hand") -> None:
    corpus = tmp / "corpus.csv"
    corpus.write_text("id,label\n" + "".join(f"v{i:03d},{'a' if i % 2 else 'b'}\n" for i in range(10)))
    out = tmp / "out.jsonl"
    out.write_text("".join(json.dumps({"id": f"v{i:03d}", "label": "a" if i % 2 else "b"}) + "\n"
                           for i in range(10)))
    rc = main(["--sessions-dir", str(session.folder.parent), "validate", "--threshold", "0.9", "--corpus", str(corpus),
               "--predictions", str(out), "--classes", "a,b", "--session", session.name, "--name", name])
    assert rc == 0


async def _select_last_validation(pilot: Any, app: Any) -> str:
    await pilot.press("4")
    await pilot.pause(0.05)
    pane = app.screen.pane("validation")
    table = pane.query_one("#val-table", DataTable)
    table.move_cursor(row=table.row_count - 1)
    await pilot.pause(0.05)
    return str(pane.query_one("#val-detail", Static).render())


@pytest.mark.slow
async def test_h22_no_python_none_in_any_pane(busy_session: Any, make_app: MakeApp, tmp_path: Path) -> None:
    _validate_into(busy_session, tmp_path)
    app = make_app(session=busy_session, runner_factory=FakeRunner.factory())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        found: dict[str, str] = {}
        for key, tab in enumerate(PANES, 1):
            await pilot.press(str(key))
            await pilot.pause(0.1)
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            text = _pane_text(app.screen.pane(tab)) + "\n" + str(
                app.screen.query_one("#session-header", Static).render())
            if re.search(r"\bNone\b", text):
                found[tab] = "\n".join(line for line in text.splitlines() if re.search(r"\bNone\b", line))
        detail = await _select_last_validation(pilot, app)
        assert "None" not in detail, detail
    assert not found, f"Python None on screen: {found}"


async def test_validation_pane_finds_a_report_archived_by_validate_session(
        busy_session: Any, make_app: MakeApp, tmp_path: Path) -> None:
    _validate_into(busy_session, tmp_path)
    assert (busy_session.validation_dir / "by-hand.toml").is_file()
    app = make_app(session=busy_session, runner_factory=FakeRunner.factory())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        detail = await _select_last_validation(pilot, app)
    assert "No report file" not in detail
    assert "Report" in detail and "by-hand.toml" in detail


async def test_h17_validation_pane_escapes_control_characters_of_an_archived_report(
        busy_session: Any, make_app: MakeApp, tmp_path: Path) -> None:
    _validate_into(busy_session, tmp_path)
    path = busy_session.validation_dir / "by-hand.toml"
    text = path.read_text(encoding="utf-8")
    # a hand edit: an ESC sequence and a NUL in the verdict and a reason (TOML escapes)
    text = re.sub(r'^verdict = "', r'verdict = "\\u001b[31m\\u0000', text, count=1, flags=re.M)
    text = re.sub(r'^reason = "', r'reason = "\\u001b[31m', text, count=1, flags=re.M)
    path.write_text(text, encoding="utf-8")
    app = make_app(session=busy_session, runner_factory=FakeRunner.factory())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        detail = await _select_last_validation(pilot, app)
    assert "\x1b" not in detail and "\x00" not in detail
    assert "\\x1b[31m" in detail and "\\x00" in detail


@pytest.mark.slow
async def test_validation_pane_at_60x20_verdict_visible_selected_row_shown_footer_whole(
        busy_session: Any, make_app: MakeApp, tmp_path: Path) -> None:
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey
    from ui.pilot import shown_on_screen

    _validate_into(busy_session, tmp_path, name="a-long-report-name")
    app = make_app(session=busy_session, runner_factory=FakeRunner.factory())
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.05)
        table = app.screen.pane("validation").query_one("#val-table", DataTable)
        table.focus()
        for _ in range(table.row_count):
            await pilot.press("down")
        await pilot.pause(0.1)
        assert table.cursor_row == table.row_count - 1
        # the verdict column ends inside the table's visible width, no sideways scroll
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        assert table.ordered_columns[1].label.plain == "corpus"
        assert sum(widths[:2]) <= table.scrollable_content_region.width
        assert table.scroll_x == 0
        # the selected row is scrolled into view
        row_y = table.cursor_row + 1  # below the header line
        assert table.scroll_y <= table.cursor_row <= table.scroll_y + table.scrollable_content_region.height - 2
        assert row_y > 0 and shown_on_screen(app, table)
        # the footer's words are whole
        keys = [k for k in app.screen.query_one(Footer).query(FooterKey) if k.display]
        assert {k.description for k in keys} >= {"Re-read reports", "Quit"}
        for k in keys:  # each key painted whole, none cut at the right edge
            assert k.region.width and k.region.right <= app.size.width, (k.description, k.region)
