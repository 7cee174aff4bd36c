"""Ctrl-C in the TUI cancels a run at the next run boundary (as ``c`` and the CLI's first
Ctrl-C do) and otherwise says how to quit; an error in a handler is recorded as the
app's crash (H-23), which ``run_app`` turns into exit 1 and a journal line."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Static
from ui.pilot import SIZE, MakeApp

from gpusession.testing import FakeRunner


def _messages(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


async def test_ctrl_c_without_a_run_says_press_q_to_quit(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.1)
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
        assert app.is_running and app.return_code is None  # Ctrl-C never ends the TUI
        assert any("Press q to quit" in m for m in _messages(app))


async def test_h12_ctrl_c_during_a_run_cancels_at_the_next_run_boundary(make_app: MakeApp) -> None:
    made: list[FakeRunner] = []

    def factory(s: Any, exp_id: str, on_event: Any, cancel: Any) -> FakeRunner:
        made.append(FakeRunner(s, exp_id, on_event, cancel, step_s=0.25))
        return made[-1]

    app = make_app(runner_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.1)
        await pilot.press("2", "r")
        await pilot.pause(0.05)
        run_pane = app.screen.pane("run")
        while len(run_pane.rows) < 2:
            await pilot.pause(0.05)
        await pilot.press("ctrl+c")
        rows_at_cancel = len(run_pane.rows)
        assert made[0].cancel.is_set(), "Ctrl-C did not ask the run to stop"
        assert any("stops at the next run boundary" in m for m in _messages(app))
        await pilot.press("ctrl+c")  # a second Ctrl-C says so, and ends nothing at once
        assert any("Cancel already requested" in m for m in _messages(app))
        while run_pane.running:
            await pilot.pause(0.05)
        assert len(run_pane.rows) <= rows_at_cancel + 1
        status = str(run_pane.query_one("#run-status", Static).render())
        assert "cancelled at a run boundary" in status
        assert app.is_running  # the TUI stays; q quits


async def test_h23_an_error_in_a_handler_is_recorded_as_the_crash(make_app: MakeApp) -> None:
    app = make_app()

    def boom() -> None:
        raise RuntimeError("forced crash")

    with pytest.raises(RuntimeError):
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.1)
            app.call_later(boom)
            await pilot.pause(0.2)
    assert app.return_code == 1
    assert app.crash is not None and app.crash.summary == "RuntimeError: forced crash"
    assert app.crash.trace is not None and "in boom" in app.crash.trace


async def test_sigint_in_the_tui_is_ctrl_c_not_an_exception(make_app: MakeApp) -> None:
    """A SIGINT (``kill -INT``, or a terminal that sends signals) reaches the same action."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGINT"):
        pytest.skip("signal handlers belong to the main thread")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.1)
        assert int(signal.SIGINT) in app._signals_installed
        os.kill(os.getpid(), signal.SIGINT)
        await pilot.pause(0.2)
        assert app.is_running
        assert any("Press q to quit" in m for m in _messages(app))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back on exit
