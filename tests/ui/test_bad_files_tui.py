"""Bad files in the TUI: a hand-edited session file of the wrong kind, or holding a secret.

The app opens and says what is wrong instead of crashing; a seed phrase pasted into
``order.toml`` by hand is never painted, and the pane warns that it was hidden.
"""

from __future__ import annotations

from typing import Any

import pytest
from ui.pilot import SIZE, MakeApp, settle, text_of


async def test_order_toml_events_a_number_is_said_in_the_pane(
    session: Any, make_app: MakeApp
) -> None:
    with open(session.order_toml, "a", encoding="utf-8") as fh:
        fh.write("events = 5\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await pilot.pause()
        text = text_of(app, "#order-text")
        assert "order.toml" in text and "events: expected a list of tables" in text
        header = text_of(app, "#session-header")
        assert "order.toml could not be read" in header and "BadInput" not in header
        await pilot.press("1")  # the other panes still work
        await pilot.pause()
        assert app.is_running


async def test_checklist_toml_of_the_wrong_kind_is_said_in_the_pane(
    session: Any, make_app: MakeApp
) -> None:
    session.checklist_toml.write_text('schema = 1\nitems = "x"\n', encoding="utf-8")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("1")
        await pilot.pause()
        assert "items: expected" in text_of(app, "#checklist-status")


async def test_secrets_a_seed_phrase_pasted_in_order_toml_is_hidden_with_a_warning(
    session: Any, make_app: MakeApp
) -> None:
    from mnemonic import Mnemonic

    from gpusession.core.money import order
    from gpusession.testing import FIXED_NOW

    order.record_event(session, "payment-sent", source="you", note="clicked", at=FIXED_NOW)
    phrase = Mnemonic("spanish").generate(128)
    text = session.order_toml.read_text(encoding="utf-8")
    session.order_toml.write_text(text.replace('note = "clicked"', f'note = "{phrase}"'),
                                  encoding="utf-8")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await pilot.pause()
        shown = text_of(app, "#order-text") + text_of(app, "#order-warnings")
        assert phrase.split()[0] not in shown and phrase.split()[5] not in shown
        assert "HIDDEN" in text_of(app, "#order-text")
        assert "events[0].note: hidden, it looked like a seed phrase" in text_of(app, "#order-warnings")


async def test_secrets_a_tui_form_reaches_the_same_check_and_never_echoes(
    session: Any, make_app: MakeApp
) -> None:
    from textual.widgets import Input, Static

    from gpusession.ui.modals import FormModal

    key = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
    before = session.order_toml.read_bytes()
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "o")
        await pilot.pause()
        app.screen.query_one("#field-preparation", Input).value = f"{key[:32]} {key[32:]}"
        app.screen.query_one("#field-number", Input).value = "ORD-1"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, FormModal), "the form closed on a refused save"
        error = str(app.screen.query_one("#form-error", Static).render())
        assert "private key" in error and key[:8] not in error and key[-8:] not in error
    assert session.order_toml.read_bytes() == before


def _drop_schema(path: Any) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text("".join(line for line in text.splitlines(keepends=True)
                            if not line.startswith("schema")), encoding="utf-8")


def test_one_bad_file_does_not_stop_the_tui_from_opening(
    session: Any, capsys: Any, monkeypatch: Any
) -> None:
    """``gpusession NAME`` with ``schema`` missing from ``order.toml`` reaches the TUI."""
    from helpers import cli

    import gpusession.ui.app as ui_app

    _drop_schema(session.order_toml)
    opened: list[Any] = []
    monkeypatch.setattr(ui_app, "run_app", lambda s: opened.append(s) or 0)
    code, _, err = cli(capsys, session.folder.parent, session.name)
    assert code == 0, err
    assert [s.name for s in opened] == [session.name]


def test_a_bad_session_toml_is_refused_in_one_line(
    session: Any, capsys: Any, monkeypatch: Any
) -> None:
    from helpers import cli

    import gpusession.ui.app as ui_app

    session.session_toml.write_text("schema = 1\ncreated_at = 5\n", encoding="utf-8")
    monkeypatch.setattr(ui_app, "run_app", lambda s: 0)
    code, _, err = cli(capsys, session.folder.parent, session.name)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "session.toml" in err
    assert "Traceback" not in err


@pytest.mark.slow
async def test_panes_with_good_files_open_and_the_bad_one_says_why(
    session: Any, make_app: MakeApp
) -> None:
    """``order.toml`` without ``schema``: every other pane works; the Order pane says it."""
    from textual.widgets import DataTable

    from gpusession.core.folder.session import Session

    _drop_schema(session.order_toml)
    opened = Session.open(session.folder.parent, session.name, check_files=False)
    app = make_app(session=opened)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await pilot.pause()
        text = text_of(app, "#order-text")
        assert "order.toml" in text and "schema: missing key" in text
        assert len([line for line in text.splitlines() if "order.toml" in line]) == 1
        await pilot.press("1")
        await pilot.pause()
        assert "unreadable" not in text_of(app, "#checklist-status")
        await pilot.press("2")
        await pilot.pause()
        assert "batch-sweep" in text_of(app, "#run-status")
        assert app.screen.pane("run").query_one("#run-summary-table", DataTable) is not None
        await pilot.press("4")
        await pilot.pause()
        assert app.is_running


@pytest.mark.slow
async def test_h39_a_deep_accept_report_is_named_in_the_cost_pane_and_the_app_lives(
    session: Any, make_app: MakeApp, sessions_root: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from helpers import cli

    from gpusession.core.folder.session import Session

    (session.folder / "expected.txt").write_text("v-1.png\n", encoding="utf-8")
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "render",
                       "--workload", "command", "--values", "1", "--runs", "1", "--warmup", "0",
                       "--command", f"{sys.executable} render.py {{output}}",
                       "--expected-outputs", "expected.txt", "--deliverable-format", "png",
                       "--accept", f"{sys.executable} rule.py {{output}}")
    assert code == 0, err
    where = session.folder / "validation" / "render" / "v1"
    where.mkdir(parents=True, exist_ok=True)
    (where / "warm-1.accept.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    app = make_app(session=Session.open(sessions_root, session.name))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await pilot.pause()
        out = text_of(app, "#cost-report")
        assert "count unreadable" in out and "warm-1.accept.json" in out
        assert "nested too deep (past 64 levels)" in out
        await pilot.press("1")  # the other panes still work
        await pilot.pause()
        assert app.is_running
