"""The TUI header warns before the package ends; the key x opens the Cost pane's extensions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ui.pilot import SIZE, MakeApp, settle, text_of

from gpusession.core.folder.package import Package
from gpusession.testing import FIXED_NOW


def _footer_keys(app: Any) -> list[str]:
    from textual.widgets._footer import FooterKey

    return [k.key for k in app.screen.query(FooterKey)]


async def test_header_warns_2h_before_end_and_x_opens_extensions(session: Any, make_app: MakeApp) -> None:
    from textual.widgets import TabbedContent

    session.set_package(Package(gpu_model="RTX A5000", lots=1, days=7,
                                start=FIXED_NOW - timedelta(days=7) + timedelta(hours=1)))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        head = text_of(app, "#session-header")
        assert "WARNING <2h left, copy not verified (x: extensions)" in head
        header = app.screen.query_one("#session-header")
        width = header.content_size.width
        assert header.get_content_height(header.size, app.size, width) <= header.size.height
        await pilot.pause(0.1)
        assert "x" in _footer_keys(app)
        await pilot.press("x")
        await pilot.pause(0.2)
        assert app.screen.query_one(TabbedContent).active == "cost"
        assert "Extension options" in text_of(app, "#cost-report")


async def test_no_warning_no_key_far_from_the_end(session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "WARNING" not in text_of(app, "#session-header")
        assert "x" not in _footer_keys(app)


async def test_header_says_package_ended(session: Any, make_app: MakeApp) -> None:
    session.set_package(Package(gpu_model="RTX A5000", lots=1, days=3,
                                start=FIXED_NOW - timedelta(days=4)))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert "WARNING package ended" in text_of(app, "#session-header")
