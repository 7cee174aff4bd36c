"""What the TUI shows names no internal rule id
(``K1``, ``M3``, ``R9``, ``H-12`` …) and cites no section (``G§2``, ``seed 003 §1``,
through :func:`helpers.ids_in`); it says the rule in words.

The rendered text of each of the six panes (keys 1–6) and the header, on a session with
runs, validation and an order (``busy_session``). The CLI's output on the same session:
``tests/cli/test_rule_ids_not_shown_cli.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ids_in
from textual.widgets import DataTable, OptionList, Static
from ui.pilot import MakeApp

from gpusession.testing import FakeRunner


def _pane_text(pane: Any) -> str:
    parts: list[str] = []
    for w in [pane, *pane.query("*")]:
        if isinstance(w, Static):
            parts.append(str(w.render()))
        elif isinstance(w, OptionList):
            parts += [str(o.prompt) for o in w.options]
        elif isinstance(w, DataTable):
            parts += [str(c.label) for c in w.columns.values()]
            parts += [str(cell) for key in w.rows for cell in w.get_row(key)]
    return "\n".join(parts)


async def _tui_ids(busy_session: Any, make_app: MakeApp) -> dict[str, list[str]]:
    app = make_app(session=busy_session, runner_factory=FakeRunner.factory())
    found: dict[str, list[str]] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        for key, tab in enumerate(("checklist", "run", "memory", "validation", "order", "cost"), 1):
            await pilot.press(str(key))
            await pilot.pause(0.1)
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            text = _pane_text(app.screen.pane(tab)) + "\n" + str(
                app.screen.query_one("#session-header", Static).render())
            if ids_in(text):
                found[tab] = ids_in(text)
    return found


@pytest.mark.slow
async def test_tui_panes_show_no_rule_id(busy_session: Any, make_app: MakeApp) -> None:
    found = await _tui_ids(busy_session, make_app)
    found.pop("order", None)  # checked below
    assert not found, f"rule ids on screen (say the rule in words): {found}"


@pytest.mark.slow
async def test_tui_order_pane_shows_no_rule_id(busy_session: Any, make_app: MakeApp) -> None:
    assert (await _tui_ids(busy_session, make_app)).get("order") is None
