"""The Run pane's resume key: ``u`` starts the runs of the current experiment's schedule not measured yet."""

from __future__ import annotations

from typing import Any

from ui.pilot import SIZE, MakeApp, settle

from gpusession.core.events import ExperimentStartedRecord
from gpusession.core.records.results import ResultRow
from gpusession.testing import FakeRunner

KEYS = ["cold:batch-1:1", "warm:batch-1:1"]


def _factory(made: list[dict[str, Any]]) -> Any:
    def make(s: Any, exp_id: str, on_event: Any, cancel: Any, **kw: bool) -> FakeRunner:
        made.append(kw)
        return FakeRunner(s, exp_id, on_event, cancel)

    return make


async def _press_u(app: Any, pilot: Any) -> list[str]:
    await settle(pilot, app)
    await pilot.press("2")
    await pilot.pause(0.1)
    await pilot.press("u")
    await settle(pilot, app)
    await pilot.pause(0.3)
    return [n.message for n in app._notifications]


async def test_resume_key_on_a_never_run_experiment_says_so(session: Any, make_app: MakeApp) -> None:
    made: list[dict[str, Any]] = []
    app = make_app(runner_factory=_factory(made))
    async with app.run_test(size=SIZE) as pilot:
        said = await _press_u(app, pilot)
        assert made == [] and any("batch-sweep has never run" in m for m in said), said


async def test_resume_key_starts_the_runner_with_resume(session: Any, make_app: MakeApp) -> None:
    session.journal(ExperimentStartedRecord(experiment_id="batch-sweep", runs=KEYS))
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="cold",
                                     run_index=1, elapsed_seconds=0.5))
    made: list[dict[str, Any]] = []
    app = make_app(runner_factory=_factory(made))
    async with app.run_test(size=SIZE) as pilot:
        await _press_u(app, pilot)
        assert made == [{"resume": True}]
        assert app.screen.pane("run").expected == {"batch-1": 1}  # the one run left


async def test_resume_key_with_nothing_missing_starts_nothing(session: Any, make_app: MakeApp) -> None:
    session.journal(ExperimentStartedRecord(experiment_id="batch-sweep", runs=KEYS))
    for key in KEYS:
        phase, variant, index = key.split(":")
        session.results.append(ResultRow(experiment_id="batch-sweep", variant_id=variant, phase=phase,
                                         run_index=int(index), elapsed_seconds=0.5))
    made: list[dict[str, Any]] = []
    app = make_app(runner_factory=_factory(made))
    async with app.run_test(size=SIZE) as pilot:
        said = await _press_u(app, pilot)
        assert made == [] and "nothing to resume: all 2 runs of batch-sweep are measured" in said, said
