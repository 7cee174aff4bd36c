"""Forms (``ui/modals.py``): q does not quit, placeholders read as examples, opaque.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input
from ui.pilot import SIZE, MakeApp, settle


async def test_q_in_a_form_does_not_quit(session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "e")  # the order-event form opens on its state list
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
        assert app.return_value is None and app.screen.__class__.__name__ == "FormModal"
        await pilot.press("ctrl+g")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
        assert app.return_value == 0


@pytest.mark.slow
async def test_h11_form_placeholders_read_as_examples_not_values(
    session: Any, make_app: MakeApp
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for keys in (("5", "p"), ("5", "e"), ("1", "a")):
            await pilot.press(*keys)
            await pilot.pause()
            holders = [i.placeholder for i in app.screen.query(Input) if i.placeholder]
            assert holders, keys
            assert all(h.startswith("e.g. ") for h in holders), holders
            await pilot.press("ctrl+g")
            await pilot.pause()
        await pilot.press("6")  # the cost pane's own inputs too
        await pilot.pause()
        holders = [i.placeholder for i in app.screen.pane("cost").query(Input) if i.placeholder]
        assert holders and all(h.startswith("e.g. ") for h in holders), holders


async def test_h11_form_covers_the_pane_behind_it(session: Any, make_app: MakeApp) -> None:
    """Nothing of the pane behind shows through at the form's edges (opaque backdrop)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "p")
        await pilot.pause()
        assert app.screen.styles.background.a == 1.0


@pytest.mark.slow
async def test_what_is_typed_in_a_form_field_is_shown_and_its_focus_seen_without_colour(
        session: Any, make_app: MakeApp, monkeypatch: Any) -> None:
    """A focused one-line field keeps its line of text (a frame around it would hide it)
    and shows its focus by a shape, not only a colour (NO_COLOR)."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "d")
        await pilot.pause(0.2)
        field = app.screen.query(Input).first()
        field.focus()
        await pilot.press(*"typed-id")
        await pilot.pause(0.1)
        assert field.value == "typed-id"
        assert field.content_region.height == 1, field.content_region
        screen = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "typed-id" in screen, screen
        others = [w for w in app.screen.query(Input) if w is not field]
        assert others and field.styles.border_left[0] != others[0].styles.border_left[0]
