"""The Run pane says what is in flight and for how long, as headless ``run`` does: the same
words (``[  1/9] warm batch-4 run 1 in flight: 2 s``), moving on with the clock, gone once
the run's row lands. The elapsed time is read from the app's monotonic clock, a fake one
here: the test advances it, never waits on a stopwatch (A6)."""

from __future__ import annotations

import threading
from typing import Any

from ui.pilot import SIZE, MakeApp, settle

from gpusession.testing import FIXED_NOW, FakeClock, FakeRunner

IN_FLIGHT = "[  1/9] warm batch-4 run 1 in flight"


async def test_the_run_pane_shows_the_run_in_flight_and_its_elapsed_time(
        session: Any, make_app: MakeApp) -> None:
    from gpusession.core.events import RunStarted

    go = threading.Event()

    class SlowStart(FakeRunner):
        def run(self) -> Any:
            self.on_event(RunStarted(run_key="batch-sweep:warm:batch-4:1", variant_id="batch-4",
                                     phase="warm", run_index=1, done=0, total=9))
            go.wait(30)  # the run is in flight until the test lets it land
            return super().run()

    clock = FakeClock(FIXED_NOW)
    app = make_app(runner_factory=SlowStart.factory(), clock=clock, monotonic=clock.monotonic)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        pane = app.screen.pane("run")

        def status() -> str:
            return str(pane.query_one("#run-status").render())

        try:
            for _ in range(500):  # bounded by rounds: the worker posts the start
                if IN_FLIGHT in status():
                    break
                await pilot.pause(0.02)
            assert f"{IN_FLIGHT}: 0 s" in status(), status()
            clock.advance(2)
            pane.follow_tick()  # the pane's once-a-second tick
            await pilot.pause()
            assert f"{IN_FLIGHT}: 2 s" in status(), status()  # it moves on with the clock
        finally:
            go.set()
        for _ in range(500):
            if not pane.running:
                break
            await pilot.pause(0.02)
        assert not pane.running
        assert "in flight" not in status()
