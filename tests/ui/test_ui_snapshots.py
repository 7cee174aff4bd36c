"""Snapshot tests of the six panes at 80×24 (smallest tmux pane) and 120×40.

Deterministic: a fixed clock, a fake NVML (one RTX A5000 by UUID), a fixed host memory
reading, UTC for local times (``make_app`` in ``tests/ui/conftest.py``), a fake runner for
the run pane, memory sampled once; sessions of :func:`gpusession.testing.make_session`
(fixed dates).
Update with ``pytest --snapshot-update`` only after looking at the report.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from ui.pilot import MakeApp, background_started, workers_done

from gpusession.testing import FIXED_NOW, FakeRunner, make_session

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}
PANES = ("checklist", "run", "memory", "validation", "order", "cost")


def populated(root: Path, pane: str) -> Any:
    """A session with runs and an order (the checklist one has no experiment: its
    evidence would carry the real time the protocol was stored)."""
    import threading

    from gpusession.core.money import order

    s = make_session(root, experiment=pane != "checklist", runs=3)
    if pane in ("validation", "memory", "cost"):
        FakeRunner(s, "batch-sweep", lambda _e: None, threading.Event()).run()
    if pane == "order":
        order.set_order(s, number="ORD-1042", gpu_model="RTX A5000", lots=1, days=7, at=FIXED_NOW)
        order.new_payment_order(s, asset="USDT", network="TRC20", amount="55.00",
                                destination="TXyz1234", expires_at=FIXED_NOW + timedelta(minutes=45),
                                now=FIXED_NOW)
        order.record_event(s, "payment-sent", source="you", note="clicked I have paid",
                           at=FIXED_NOW + timedelta(minutes=5))
    return s


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("pane", PANES)
def test_ui_snapshot(pane: str, size: str, sessions_root: Path, make_app: MakeApp,
                     snap_compare: Any) -> None:
    app = make_app(session=populated(sessions_root, pane), runner_factory=FakeRunner.factory())
    key = str(PANES.index(pane) + 1)

    async def run_before(pilot: Any) -> None:
        await pilot.pause(0.1)
        await background_started(pilot.app)
        await pilot.app.workers.wait_for_complete()
        await pilot.press(key)
        if pane == "run":
            await pilot.press("r")
        await workers_done(pilot, pilot.app)  # the run, then the panes' reads it starts
        await pilot.pause()  # the tables' column widths, set when each table is idle
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


def test_ui_snapshot_validation_at_60x20(sessions_root: Path, make_app: MakeApp, snap_compare: Any) -> None:
    """The Validation pane in a 60×20 terminal, the last run selected: the verdict column
    without scrolling sideways, the selected row in view, the footer's words whole."""
    app = make_app(session=populated(sessions_root, "validation"), runner_factory=FakeRunner.factory())

    async def run_before(pilot: Any) -> None:
        await pilot.pause(0.1)
        await background_started(pilot.app)
        await pilot.app.workers.wait_for_complete()
        await pilot.press("4")
        await workers_done(pilot, pilot.app)  # the pane's tables, read in a worker
        await pilot.press(*["down"] * 12)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(60, 20), run_before=run_before)
