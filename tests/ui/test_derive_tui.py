"""The Run pane's derive form (v): one change, replayed, as ``experiment derive`` stores it (D4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import cli
from textual.widgets import Input, Static
from ui.pilot import MakeApp, settle

from gpusession.core.files.tomlread import read_toml
from gpusession.testing import make_session
from gpusession.ui.modals import FormModal


async def _derive(app: Any, pilot: Any, new_id: str, change: str) -> Any:
    await settle(pilot, app)
    await pilot.press("2", "v")
    await pilot.pause()
    modal = app.screen
    assert isinstance(modal, FormModal)
    assert modal.query_one("#field-id", Input).value == "batch-sweep-2"  # a free id, prefilled
    modal.query_one("#field-id", Input).value = new_id
    modal.query_one("#field-set", Input).value = change
    await pilot.press("ctrl+s")
    await pilot.pause()
    return app.screen


async def test_d4_run_pane_derive_stores_what_the_cli_stores(
        sessions_root: Path, make_app: MakeApp, capsys: pytest.CaptureFixture[str]) -> None:
    by_tui = make_session(sessions_root, "by-tui", runs=3)
    by_cli = make_session(sessions_root, "by-cli", runs=3)
    app = make_app(session=by_tui)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _derive(app, pilot, "bs-fp16", "precision=fp16")
        assert not isinstance(screen, FormModal), str(screen.query_one("#form-error", Static).render())
        status = str(app.screen.query_one("#run-status", Static).render())
        assert "derived from batch-sweep: precision fp16 (was fp32)" in status
    code, _, err = cli(capsys, sessions_root, "experiment", "by-cli", "derive", "--id", "bs-fp16",
                       "--from", "batch-sweep", "--set", "precision=fp16")
    assert code == 0, err
    stored = read_toml(by_tui.folder / "session.toml")["experiments"]["bs-fp16"]
    assert stored == read_toml(by_cli.folder / "session.toml")["experiments"]["bs-fp16"]
    assert stored["derived_from"] == "batch-sweep" and stored["changed_key"] == "precision"


@pytest.mark.slow
async def test_d4_run_pane_derive_refuses_a_replay_that_varies_something_else(
        sessions_root: Path, make_app: MakeApp) -> None:
    s = make_session(sessions_root, "one", runs=3)
    before = s.session_toml.read_bytes()
    app = make_app(session=s)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _derive(app, pilot, "bs-ctx", "varied=context")
        assert isinstance(screen, FormModal)  # the form stays open, saying why
        assert "varies what the experiment varies" in str(screen.query_one("#form-error", Static).render())
    assert s.session_toml.read_bytes() == before
