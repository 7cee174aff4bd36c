"""The Run pane's second start key and the header at the session limit (D1, D3).

``r`` starts as before; ``R`` asks one confirm line and starts with the first-result stop
and the session limit off; the header turns to the warning once the limit has passed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from ui.pilot import SIZE, MakeApp, settle, text_of

from gpusession.core.copyhome.limit import set_limit
from gpusession.testing import FIXED_NOW, FakeRunner
from gpusession.ui.modals import ConfirmModal
from gpusession.ui.panes.run import RunPane


def _factory(made: list[dict[str, Any]]) -> Any:
    def make(s: Any, exp_id: str, on_event: Any, cancel: Any, **off: bool) -> FakeRunner:
        made.append(off)
        return FakeRunner(s, exp_id, on_event, cancel)

    return make


@pytest.mark.slow
async def test_d3_capital_r_asks_then_starts_with_both_stops_off(session: Any, make_app: MakeApp) -> None:
    made: list[dict[str, Any]] = []
    app = make_app(runner_factory=_factory(made))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        await pilot.press("R")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmModal)
        assert app.screen.question == RunPane.ANYWAY_QUESTION
        await pilot.press("n")
        await pilot.pause(0.1)
        assert made == [] and not isinstance(app.screen, ConfirmModal)
        await pilot.press("R")
        await pilot.pause(0.1)
        await pilot.press("y")
        await settle(pilot, app)
        await pilot.pause(0.3)
        assert made == [{"past_limit": True, "continue_on_reject": True}]
        await pilot.press("r")  # r is as it was: both stops on
        await settle(pilot, app)
        await pilot.pause(0.3)
        assert made[-1] == {}


@pytest.mark.slow
async def test_d1_header_turns_to_the_warning_at_the_limit(session: Any, make_app: MakeApp) -> None:
    set_limit(session, at=FIXED_NOW - timedelta(minutes=5))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        head = text_of(app, "#session-header")
        assert "WARNING past the session limit (stop by" in head and "pull now" in head, head


@pytest.mark.slow
async def test_d1_r_after_the_limit_is_refused_and_capital_r_runs(session: Any, make_app: MakeApp) -> None:
    set_limit(session, at=FIXED_NOW - timedelta(minutes=5))
    made: list[dict[str, Any]] = []
    app = make_app(runner_factory=_factory(made))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        await pilot.press("r")
        await settle(pilot, app)
        await pilot.pause(0.3)
        pane = app.screen.pane("run")
        assert "not started: past the session limit (stop by" in pane.last_outcome
        assert len(pane.rows) == 0
        await pilot.press("R", "y")
        await settle(pilot, app)
        await pilot.pause(0.5)
        assert made[-1] == {"past_limit": True, "continue_on_reject": True} and pane.rows


async def test_d1_header_says_stop_by_a_day_before_the_limit(session: Any, make_app: MakeApp) -> None:
    set_limit(session, at=FIXED_NOW + timedelta(hours=5))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        head = text_of(app, "#session-header")
        assert "stop by Sun 17:00 UTC" in head and "past the session limit" not in head, head


def test_d2_past_the_limit_the_header_says_pull_by_from_the_measured_throughput(session: Any) -> None:
    from types import SimpleNamespace

    from gpusession.core.copyhome.limit import when_words
    from gpusession.core.folder.package import Package
    from gpusession.ui.header import package_warning_now

    session.set_package(Package("RTX A5000", 1, 3, FIXED_NOW - timedelta(days=3) + timedelta(hours=30)))
    size = 100 * 1024**3
    (session.folder / "manifest.csv").write_text(f"path,size_bytes,sha256\nx,{size}," + "0" * 64 + "\n")
    (session.folder / "retrieval.toml").write_text(
        '[[pull]]\nat = "2026-11-29T10:00:00Z"\nbytes = 1048576\nseconds = 1.0\n'
        'throughput_bytes_per_s = 1048576.0\nprobe = false\npath = "deliverables"\n')
    warning = package_warning_now(SimpleNamespace(session=session, now=lambda: FIXED_NOW))
    pull_by = FIXED_NOW + timedelta(hours=30) - timedelta(seconds=size / 1048576)
    assert warning is not None and warning.level == "limit"
    assert warning.short.endswith(f"pull by {when_words(pull_by, FIXED_NOW)}"), warning.short
