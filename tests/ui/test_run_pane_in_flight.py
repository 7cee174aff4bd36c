"""The Run pane says what is in flight and for how long, as headless ``run`` does: the same
words (``[  1/9] warm batch-4 run 1 in flight: 2 s``), moving on each second, gone once the
run's row lands."""

from __future__ import annotations

import threading
import time
from typing import Any

from ui.pilot import SIZE, MakeApp, settle

from gpusession.testing import FakeRunner


async def test_the_run_pane_shows_the_run_in_flight_and_its_elapsed_time(
        session: Any, make_app: MakeApp) -> None:
    from gpusession.core.events import RunStarted

    go = threading.Event()

    class SlowStart(FakeRunner):
        def run(self) -> Any:
            self.on_event(RunStarted(run_key="batch-sweep:warm:batch-4:1", variant_id="batch-4",
                                     phase="warm", run_index=1, done=0, total=9))
            go.wait(10)  # the run is in flight until the test lets it land
            return super().run()

    app = make_app(runner_factory=SlowStart.factory())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        pane = app.screen.pane("run")
        seen: list[str] = []
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and not any("in flight: 2 s" in t for t in seen):
            await pilot.pause(0.2)
            seen.append(str(pane.query_one("#run-status").render()))
        go.set()
        assert any("[  1/9] warm batch-4 run 1 in flight: 0 s" in t for t in seen), seen[-1]
        assert any("in flight: 2 s" in t for t in seen), seen[-1]  # it moves on by itself
        while pane.running:
            await pilot.pause(0.05)
        assert "in flight" not in str(pane.query_one("#run-status").render())
