"""The Order pane (key 5, ``ui/panes/order.py``): payment sent is not confirmed, forms refuse bad input.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from textual.widgets import Input, OptionList, Static
from ui.pilot import (
    SIZE,
    HeldRead,
    MakeApp,
    background_started,
    rounds_until,
    settle,
    shown_on_screen,
    text_of,
    workers_done,
)

#: a frame of the Order pane's module
ORDER_PANE = re.compile(r"gpusession[/\\]ui[/\\]panes[/\\]order\.py$")
#: a held read gives up after this long, so a failing test ends (it is never reached when green)
HOLD_S = 30


async def test_s2_s3_payment_sent_is_not_confirmed_and_countdown_moves(
    session: Any, make_app: MakeApp
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "p")
        await pilot.pause()
        for name, value in (("asset", "USDT"), ("network", "TRC20"), ("amount", "55.00"),
                            ("destination", "TXyz123"), ("expires", "30")):
            app.screen.query_one(f"#field-{name}", Input).value = value
        await pilot.press("ctrl+s")
        await pilot.pause()
        text = text_of(app, "#order-text")
        assert "exactly 55.00 USDT on network TRC20" in text and "expires in 30m" in text
        assert "payment order issued — not paid" in text_of(app, "#session-header")
        app.ctx.clock.advance(600)
        app.screen.pane("order").redraw()
        assert "expires in 20m" in text_of(app, "#order-text")
        await pilot.press("e")  # default: payment-sent by you
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "payment sent — not confirmed" in text_of(app, "#session-header")
        assert "NOT confirmed" in text_of(app, "#order-warnings")
        assert "paid (provider tracking)" not in text_of(app, "#session-header")


async def test_s3_payment_order_refused_keeps_the_form_and_everything_typed(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.money.order import load_order
    from gpusession.ui.modals import FormModal

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "p")
        await pilot.pause()
        typed = {"network": "TRC20", "amount": "55.00", "destination": "TXyz123", "expires": "30"}
        for name, value in typed.items():  # the asset is forgotten
            app.screen.query_one(f"#field-{name}", Input).value = value
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, FormModal), "the form closed on a refused save"
        error = str(app.screen.query_one("#form-error", Static).render())
        assert "Not saved" in error and "asset" in error, error
        assert shown_on_screen(app, app.screen.query_one("#form-error"))
        assert shown_on_screen(app, app.screen.query_one("#form-save"))
        for name, value in typed.items():
            assert app.screen.query_one(f"#field-{name}", Input).value == value
        assert app.focused is app.screen.query_one("#field-asset")  # the cursor goes to it
        assert load_order(session).payment is None  # nothing written on bad input
        await pilot.press(*"USDT")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, FormModal)
        assert "exactly 55.00 USDT on network TRC20" in text_of(app, "#order-text")


async def test_s2_event_form_state_list_shows_every_state_at_80x24(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.money.order import STATES

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "e")
        await pilot.pause(0.2)
        states = app.screen.query_one("#field-state", OptionList)
        assert states.size.height >= len(STATES)
        assert shown_on_screen(app, states)
        assert app.screen.find_widget(states).visible_region.height >= len(STATES)


@pytest.mark.slow
async def test_h11_choice_in_a_form_marks_the_chosen_state_in_text(
    session: Any, make_app: MakeApp
) -> None:
    """In a plain terminal (no colour, no reverse video) the chosen state is still readable."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "e")
        await pilot.pause()
        states = app.screen.query_one("#field-state", OptionList)

        def prompts() -> list[str]:
            return [str(states.get_option_at_index(i).prompt) for i in range(states.option_count)]

        assert [p for p in prompts() if p.startswith("(*)")] == ["(*) payment-sent"]
        await pilot.press("down")
        await pilot.pause()
        assert [p for p in prompts() if p.startswith("(*)")] == ["(*) payment-confirmed"]
        assert "( ) payment-sent" in prompts()
        assert states.value == "payment-confirmed"  # type: ignore[attr-defined]


async def test_s2_order_pane_after_payment_confirmed_says_paid_without_countdown(
    session: Any, make_app: MakeApp
) -> None:
    """The Order pane says paid and what is open (provisioning), no countdown."""
    from datetime import timedelta

    from gpusession.core.money import order as om

    om.new_payment_order(session, asset="USDT", network="TRC20", amount="55.00",
                         destination="TXyz123", expires_at=session.package.start + timedelta(days=400))
    om.record_event(session, "payment-confirmed", source="tracking")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await pilot.pause()
        text = text_of(app, "#order-text")
        assert "PAID" in text and "Still open: GPU provisioning" in text
        assert "Active payment order" not in text and "expires in" not in text


async def test_s6_order_pane_offers_to_restart_the_window_at_gpu_provisioned(
    session: Any, make_app: MakeApp
) -> None:
    """The header says which event the window counts from; the Order pane offers
    to restart it at the gpu-provisioned event (key w)."""
    from datetime import timedelta

    from gpusession.core.money import order as om
    from gpusession.testing import FIXED_NOW

    at = FIXED_NOW - timedelta(hours=2)
    om.record_event(session, "gpu-provisioned", source="tracking", at=at)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "window from session creation" in text_of(app, "#session-header")
        await pilot.press("5")
        await pilot.pause()
        assert "press w to restart it at gpu-provisioned" in text_of(app, "#order-warnings")
        await pilot.press("w")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.ctx.session.package.start == at
        assert "window from gpu-provisioned" in text_of(app, "#session-header")
        assert "press w" not in text_of(app, "#order-warnings")


@pytest.mark.slow
async def test_order_pane_hints_give_its_keys_not_cli_syntax(
    session: Any, make_app: MakeApp
) -> None:
    """No order recorded: the pane says ``o: set order``, never ``gpusession order NAME set``."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await pilot.pause()
        text = text_of(app, "#order-text")
        assert "Order: not recorded (o: set order)" in text
        assert "gpusession" not in text and "--number" not in text
        await pilot.press("e")  # "ordered" with no order: the warning names the key too
        await pilot.pause()
        states = app.screen.query_one("#field-state", OptionList)
        states.highlighted = 0
        await pilot.pause()
        assert states.value == "ordered"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert messages and not any("gpusession order" in m for m in messages), messages


async def test_a5_key_5_reads_order_toml_off_the_event_loop_and_says_so_meanwhile(
    session: Any, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pane's first show: key 5 answers at once, "reading order.toml …" while a worker
    reads it (held here by an event, never a sleep); the event loop reads it 0 times."""
    from gpusession.core.money import order as om
    from gpusession.ui.panes import order as order_pane

    om.set_order(session, number="A-1234", gpu_model="RTX A5000", lots=1, days=7)
    held = HeldRead(monkeypatch, om, "load_order", ORDER_PANE, HOLD_S)  # each read the pane asks for
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await background_started(app)
        await workers_done(pilot, app)
        await pilot.press("5")
        await rounds_until(pilot, lambda: bool(held.reads))
        assert text_of(app, "#order-text") == order_pane.READING  # the key answered meanwhile
        held.release.set()
        await workers_done(pilot, app)
        assert "A-1234" in text_of(app, "#order-text")
    assert held.reads == [False]


def test_a1_s2_the_pane_gives_its_own_set_hint_to_core_never_rewrites_its_words(session: Any) -> None:
    """Core's order texts take the pane's hint as an argument (as the Cost pane's ``count_hint``);
    the CLI keeps its own words; the pane has no word rewriter left."""
    from gpusession.core.money.order import SET_ORDER_HINT, load_order, record_event
    from gpusession.core.money.order_text import SET_ORDER_LINE_HINT, order_lines
    from gpusession.ui.panes import order as pane

    assert not hasattr(pane, "pane_words")
    state = load_order(session)
    assert f"Order: not recorded {SET_ORDER_LINE_HINT}" in order_lines(state)
    here = order_lines(state, set_hint=pane.PANE_SET_LINE_HINT)
    assert "Order: not recorded (o: set order)" in here and not any("gpusession" in ln for ln in here)
    cli = record_event(session, "ordered", source="you")
    assert any(SET_ORDER_HINT in w for w in cli), cli
    mine = record_event(session, "ordered", source="you", set_hint=pane.PANE_SET_HINT)
    assert any("o (set order) so deviations" in w for w in mine) and not any("gpusession" in w for w in mine), mine
