"""What the panes read is frozen out of the cyclic GC once read; the collector stays on (A5).

An app started by ``run_app`` (:meth:`GpuSessionApp.pause_gc_until_first_frame`) calls
:func:`gc.freeze` once the first frame's background reads have ended and again after each
run's end reload, so a full pass of the collector no longer walks the session's tables on
the event loop. ``gc.freeze`` is replaced by a recorder here: a test's process builds many
apps and must keep its collector as it is.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from ui.pilot import SIZE, MakeApp, background_started, settle, workers_done

from gpusession.testing import FakeRunner

#: the reads the first frame starts (``MainScreen.after_first_frame``)
FIRST_READS = {"checklist-load", "checklist-evidence", "header-order", "header-gpu"}


def _record_freezes(app: Any, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, bool]]]:
    """Replace ``gc.freeze``: each call appends the (group, finished) of the reads awaited before it."""
    awaited: list[Any] = []
    freezes: list[list[tuple[str, bool]]] = []
    wait = app._freeze_when_read

    async def spy(reads: list[Any]) -> None:
        awaited[:] = reads
        await wait(reads)

    monkeypatch.setattr(app, "_freeze_when_read", spy)
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append([(w.group, w.is_finished) for w in awaited]))
    return freezes


async def test_a5_the_first_reads_are_frozen_once_ended_and_the_collector_runs(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    freezes = _record_freezes(app, monkeypatch)
    try:
        app.pause_gc_until_first_frame()  # as run_app does: start-up's freeze
        assert len(freezes) == 1 and not gc.isenabled()
        async with app.run_test(size=SIZE) as pilot:
            await background_started(app)
            await workers_done(pilot, app)
            assert gc.isenabled()
            assert app.reads_frozen == 1 and len(freezes) == 2
            groups = {g for g, _ in freezes[1]}
            assert FIRST_READS <= groups, groups  # it waited for the first frame's reads ...
            assert all(done for _, done in freezes[1]), freezes[1]  # ... and froze once they ended
    finally:
        gc.enable()


@pytest.mark.slow
async def test_a5_a_runs_end_reload_is_frozen_once_read_and_the_collector_runs(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(runner_factory=FakeRunner.factory())
    freezes = _record_freezes(app, monkeypatch)
    try:
        app.pause_gc_until_first_frame()
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            assert app.reads_frozen == 1
            await pilot.press("2", "r")
            await settle(pilot, app)
            run_pane = app.screen.pane("run")
            assert not run_pane.running and len(run_pane.rows) == 18
            assert gc.isenabled()
            assert app.reads_frozen == 2 and len(freezes) == 3
            groups = {g for g, _ in freezes[2]}
            assert "checklist-evidence" in groups, groups  # the reload after the run's end
            assert "run" not in groups  # a run is never awaited
            assert all(done for _, done in freezes[2]), freezes[2]
    finally:
        gc.enable()


async def test_a5_an_app_not_started_by_run_app_never_freezes(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    freezes = _record_freezes(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await background_started(app)
        await workers_done(pilot, app)
        app.freeze_after_reads()
        await workers_done(pilot, app)
    assert freezes == [] and app.reads_frozen == 0 and gc.isenabled()
