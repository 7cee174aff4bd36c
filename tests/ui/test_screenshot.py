"""Screenshots go into ``screenshots/`` of the session folder (never ``~/Downloads``, absent
on a server), mode 0600 in a 0700 folder, and the toast says where in plain words."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from ui.pilot import SIZE, MakeApp, settle


def _toasts(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_s7_the_screenshot_is_saved_in_the_session_folder_with_a_plain_message(
        session: Any, make_app: MakeApp, monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.05)
        app.action_screenshot()
        app.action_screenshot()  # a second one the same second: a name of its own
        await pilot.pause(0.05)
        shots = sorted((session.folder / "screenshots").iterdir())
        assert [p.name for p in shots] == ["validation-20261129T120000Z-2.svg",
                                           "validation-20261129T120000Z.svg"]
        assert all(p.read_text(encoding="utf-8").startswith("<svg") for p in shots)
        assert stat.S_IMODE((session.folder / "screenshots").stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in shots)
        said = _toasts(app)
        assert f"Saved to {session.folder / 'screenshots' / 'validation-20261129T120000Z.svg'}" in said, said
        assert not any("[" in t or "Failed" in t for t in said), said  # no markup tag, no Downloads
        assert not (tmp_path / "home-without-downloads").exists()


async def test_s7_a_linked_screenshots_folder_is_refused_in_one_line(
        session: Any, make_app: MakeApp, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (session.folder / "screenshots").symlink_to(elsewhere)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.deliver_screenshot() is None
        await pilot.pause(0.05)
        assert list(elsewhere.iterdir()) == []
        assert any(t.startswith("not saved:") and "link" in t for t in _toasts(app)), _toasts(app)
