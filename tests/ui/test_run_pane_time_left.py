"""The Run pane's time left counts down each second between runs, by the app's clock, and
is estimated from the first finished run of the attempt (the median of the runs so far).

The clock is the app's fake one (``make_app``'s :class:`~gpusession.testing.FakeClock`):
the test moves it on and calls the pane's one-second tick itself, so nothing sleeps on a
stopwatch; the number of ticks is counted.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ui.pilot import SIZE, MakeApp, settle

from gpusession.core.events import RowAppended
from gpusession.core.records.results import ResultRow
from gpusession.testing import FIXED_NOW, FakeClock, FakeRunner


class OneRunThenWait(FakeRunner):
    """Lands the first scheduled run (2 s) and waits until the test lets it go on."""

    go = threading.Event()

    def run(self) -> Any:
        from gpusession.core.experiment.plan import schedule
        from gpusession.core.folder.experiments import get_experiment

        runs = schedule(get_experiment(self.session, self.experiment_id))
        first = runs[0]
        row = ResultRow(experiment_id=self.experiment_id, variant_id=first.variant_id, phase=first.phase,
                        run_index=first.run_index, elapsed_seconds=2.0)
        self.on_event(RowAppended(row=row, done=1, total=len(runs)))
        self.go.wait(10)
        self.cancel.set()  # the rest is not run: the test is about the wait between runs
        return super().run()


async def _status_when_the_first_row_landed(pilot: Any, pane: Any) -> str:
    deadline = time.monotonic() + 6  # a guard against a hang, not a bound the test asserts
    while time.monotonic() < deadline and not pane.rows:
        await pilot.pause(0.05)
    return str(pane.query_one("#run-status").render())


async def test_d1_the_time_left_counts_down_each_second_between_runs(session: Any, make_app: MakeApp) -> None:
    clock = FakeClock(FIXED_NOW)
    OneRunThenWait.go = threading.Event()
    app = make_app(clock=clock, runner_factory=OneRunThenWait.factory())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        pane = app.screen.pane("run")
        first = await _status_when_the_first_row_landed(pilot, pane)
        try:
            total = len(pane.time_left.schedule)
            # estimated from the first finished run: each run still to run as long as it (2 s)
            assert f"about {2 * (total - 1)}.0 s left for the experiment" in first, first
            seen = [first]
            for _ in range(3):  # three ticks, one second of the app's clock apart
                clock.advance(1)
                pane.follow_tick()
                seen.append(str(pane.query_one("#run-status").render()))
            lefts = [f"about {2 * (total - 1) - i}.0 s left" for i in range(4)]
            assert all(left in text for left, text in zip(lefts, seen, strict=True)), seen
            assert all("before the session limit" in text for text in seen), seen
            clock.advance(60)  # past the estimate: never a negative time
            pane.follow_tick()
            assert "any moment now" in str(pane.query_one("#run-status").render())
        finally:
            OneRunThenWait.go.set()
        await settle(pilot, app)
        assert not pane.running
