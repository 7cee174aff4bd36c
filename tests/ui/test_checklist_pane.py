"""The Checklist pane (key 1, ``ui/panes/checklist.py``): toggles and notes saved at once.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input, OptionList
from ui.pilot import SIZE, MakeApp, settle, unique

from gpusession.core.retrieval.checklist import load_checklist
from gpusession.ui.panes.checklist import ChecklistPane


async def test_s1_space_toggles_done_saved_at_once_and_message_posted(
    session: Any, make_app: MakeApp
) -> None:
    seen: list[Any] = []

    app = make_app()
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await settle(pilot, app)
        first = load_checklist(session)[0]
        assert not first.done
        await pilot.press("space")
        await pilot.pause()
        assert load_checklist(session)[0].done  # on disk already, no save step
        assert "[x] done" in str(app.screen.query_one(OptionList).get_option(first.id).prompt)
        await pilot.press("space")
        await pilot.pause()
        assert not load_checklist(session)[0].done

    toggles = unique(m for m in seen if isinstance(m, ChecklistPane.ItemToggled))
    assert [(m.done) for m in toggles] == [True, False]


@pytest.mark.slow
async def test_s1_n_edits_note_in_modal_and_saves(session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("down", "n")
        await pilot.pause()
        box = app.screen.query_one("#field-note", Input)
        box.value = ""
        await pilot.press(*"reviewer: Anna, by friday")
        await pilot.press("enter")
        await pilot.pause()
        second = load_checklist(session)[1]
        assert second.note == "reviewer: Anna, by friday"
        assert "note: reviewer: Anna, by friday" in str(
            app.screen.query_one(OptionList).get_option(second.id).prompt
        )


async def test_s1_add_own_item_is_saved(session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#field-text", Input).value = "Ask Anna for the hard cases"
        await pilot.press("ctrl+s")
        await pilot.pause()
        own = [i for i in load_checklist(session) if i.custom]
        assert [i.text for i in own] == ["Ask Anna for the hard cases"]


@pytest.mark.slow
async def test_s1_add_item_stage_list_shows_stage_titles(session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("a")
        await pilot.pause()
        stages = app.screen.query_one("#field-stage", OptionList)
        shown = [str(stages.get_option_at_index(i).prompt) for i in range(stages.option_count)]
        assert shown[0].startswith("(*) 1 ") and len(shown[0]) > 8, shown  # "1 Define the output"
        assert all(not s[4:].isdigit() for s in shown), shown


async def test_first_frame_lists_a_screenful_then_every_item(
    session: Any, make_app: MakeApp
) -> None:
    """Start-up: the first frame lists what fits on screen; once it is painted
    the whole checklist is listed, highlight on the first item, the done count over all."""
    from ui.pilot import background_started

    items = load_checklist(session)
    stages = len({i.stage for i in items})
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        olist = app.screen.query_one(OptionList)
        assert SIZE[1] <= olist.option_count <= len(items) + stages  # at least a screenful
        await background_started(app)
        await pilot.pause()
        assert olist.option_count == len(items) + stages
        assert olist.highlighted_option is not None and olist.highlighted_option.id == items[0].id
        status = str(app.screen.query_one("#checklist-status").render())
        assert f"0 of {len(items)} done" in status, status


@pytest.mark.slow
async def test_s11_the_pane_shows_what_gpusession_recorded_and_space_asks_why_not_done(
        session: Any, make_app: MakeApp) -> None:
    from gpusession.core.money.order import set_order

    set_order(session, number="A-1234", gpu_model="RTX A5000", lots=1, days=7)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        olist = app.screen.query_one(OptionList)
        prompt = str(olist.get_option("g5.configurator").prompt)
        assert "[x] done (recorded by gpusession)" in prompt and "order event ordered" in prompt
        olist.highlighted = olist.get_option_index("g5.configurator")
        await pilot.press("space")
        await pilot.pause()
        box = app.screen.query_one("#field-note", Input)  # the CLI's `undone ITEM --note TEXT`
        box.value = "two lots were shown"
        await pilot.press("enter")
        await pilot.pause()
        item = next(i for i in load_checklist(session) if i.id == "g5.configurator")
        assert not item.done and item.not_done_although_recorded and item.note == "two lots were shown"
        assert "[ ] open (marked not done by you)" in str(olist.get_option("g5.configurator").prompt)
