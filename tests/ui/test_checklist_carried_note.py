"""A session made with ``new NEXT --from PREVIOUS`` says the decision note it carried on
the TUI's first screen (the Checklist pane's status line), not only in its last item (S11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ui.pilot import SIZE, MakeApp, settle, text_of

from gpusession.core.folder.session import Session
from gpusession.core.retrieval.checklist import set_note
from gpusession.core.retrieval.next_session import apply_carry, read_carry

DECISION = "render at 300 dpi next time; Ana approves"


async def test_s11_the_first_screen_says_the_note_carried_from_the_previous_session(
        session: Any, make_app: MakeApp, sessions_root: Path) -> None:
    from gpusession.testing import make_session

    set_note(session, "g8.decision", DECISION)
    following = make_session(sessions_root, name="next", experiment=False)
    apply_carry(following, read_carry(Session.open(sessions_root, session.name)), session.folder)
    app = make_app(session=Session.open(sessions_root, "next"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        status = text_of(app, "#checklist-status")
        assert status.splitlines()[0] == f"from {session.name}: {DECISION}", status
        assert app.screen.query_one("#checklist-status").region.height >= 2  # whole, above the items


async def test_s11_a_session_not_made_with_from_says_no_such_line(session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert not text_of(app, "#checklist-status").startswith("from ")


async def test_s11_a_long_carried_note_keeps_the_items_on_the_first_screen(
        session: Any, make_app: MakeApp, sessions_root: Path) -> None:
    from gpusession.testing import make_session

    long_note = " ".join(["render at 300 dpi"] * 200)  # ~3.6 KiB, under the 4 KiB field bound
    set_note(session, "g8.decision", long_note)
    following = make_session(sessions_root, name="next", experiment=False)
    apply_carry(following, read_carry(Session.open(sessions_root, session.name)), session.folder)
    app = make_app(session=Session.open(sessions_root, "next"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        status = text_of(app, "#checklist-status")
        assert status.startswith(f"from {session.name}: render at 300 dpi")
        assert "… (the whole note: the last item, g8.decision)" in status
        assert app.screen.query_one("#checklist-status").region.height <= 4  # the items still show
