"""H-35 in the TUI: an incident toast shows the workload's failure with its secret hidden
and its invisible characters escaped (H-24)."""

from __future__ import annotations

from typing import Any

from ui.pilot import SIZE, MakeApp, settle

from gpusession.testing import FakeRunner

HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


async def test_h35_an_incident_toast_hides_the_key_and_escapes_a_bidi_override(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.events import IncidentReported

    class LeakyRunner(FakeRunner):
        def run(self) -> Any:
            self.on_event(IncidentReported(message=f"worker w1: ValueError: key {HEX_KEY} to abc\u202edcba"))
            return super().run()

    app = make_app(runner_factory=LeakyRunner.factory(), poll_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.press("r")
        run_pane = app.screen.pane("run")
        await pilot.pause(0.1)
        while run_pane.running:
            await pilot.pause(0.05)
        said = [n.message for n in app._notifications if n.title.startswith("incident")]
        assert said, [n.title for n in app._notifications]
        assert all(HEX_KEY not in m and HEX_KEY[:16] not in m and "\u202e" not in m for m in said)
        assert any("ValueError: key [HIDDEN: private key] to abc\\u202edcba" in m for m in said)
