"""Snapshot tests of the six panes at 80×24 (smallest tmux pane) and 120×40 (issue 6).

Deterministic: a fixed clock, a fake NVML (one RTX A5000 by UUID), a fixed host memory
reading, UTC for local times, a fake runner for the run pane, memory sampled once.
Update with ``pytest --snapshot-update`` only after looking at the report.
"""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from gpusession.testing import (
    FIXED_NOW,
    FakeClock,
    FakeNvml,
    FakeRunner,
    fixed_host_memory,
    make_session,
)
from gpusession.ui.app import build_app

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}
PANES = ("checklist", "run", "memory", "validation", "order", "cost")


def populated(root: Path, pane: str) -> Any:
    """A session with runs and an order (the checklist one has no experiment: its
    evidence would carry the real time the protocol was stored)."""
    import threading

    from gpusession.core import order

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
def test_ui_snapshot(pane: str, size: str, sessions_root: Path, snap_compare: Any) -> None:
    s = populated(sessions_root, pane)
    app = build_app(s, clock=FakeClock(FIXED_NOW), nvml=FakeNvml(), host_memory=fixed_host_memory,
                    runner_factory=FakeRunner.factory(), poll_s=0, tz=timezone.utc)
    key = str(PANES.index(pane) + 1)

    async def run_before(pilot: Any) -> None:
        await pilot.pause(0.1)
        await pilot.app.workers.wait_for_complete()
        await pilot.press(key)
        if pane == "run":
            await pilot.press("r")
        await pilot.pause(0.1)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
