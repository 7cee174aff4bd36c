"""A run started elsewhere (``gpusession run NAME --detach``) is followed by the
Run pane (key 2, ``ui/panes/run.py``) and by ``gpusession show NAME``.

The other process is a real one (``sleep``) whose PID is written into the run lock; the
rows and journal records it would write are appended by the test, as the runner does.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import cli
from textual.widgets import DataTable, ProgressBar, Static
from ui.pilot import SIZE, MakeApp, settle

from gpusession.core.events.records import (
    ExperimentFinishedRecord,
    ExperimentStartedRecord,
    RunFinishedRecord,
)
from gpusession.core.folder.journal import RUN_LOCK, running_words
from gpusession.core.records.results import ResultRow
from gpusession.testing import FakeRunner
from gpusession.ui.panes import run as run_mod


@pytest.fixture
def other_process(session: Any) -> Iterator[int]:
    """A live process holding the session's run lock (ended and the lock removed after)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    lock = session.folder / RUN_LOCK
    lock.write_text(str(proc.pid))
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()
        lock.unlink(missing_ok=True)


def _start(session: Any) -> list[Any]:
    from gpusession.core.experiment.plan import schedule
    from gpusession.core.folder.experiments import get_experiment

    runs = schedule(get_experiment(session, "batch-sweep"))
    session.journal(ExperimentStartedRecord(experiment_id="batch-sweep",
                                            runs=[r.run_key for r in runs]))
    return runs


def _land(session: Any, sr: Any, **row: Any) -> None:
    """What the runner writes when one run ends: its row, then its journal record."""
    session.results.append(ResultRow(
        experiment_id="batch-sweep", variant_id=sr.variant_id, corpus_revision="sha256:eval-1",
        device="cpu", phase=sr.phase, run_index=sr.run_index, batch=1, elapsed_seconds=0.1, **row,
    ))
    session.journal(RunFinishedRecord(run_key=sr.run_key, experiment_id="batch-sweep",
                                      variant_id=sr.variant_id, phase=sr.phase,
                                      run_index=sr.run_index, ok=True))


async def _until(pilot: Any, cond: Any, timeout_s: float = 6.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not cond():
        assert loop.time() < end, "the pane did not catch up"
        await pilot.pause(0.1)


async def test_run_pane_follows_a_run_in_another_process(
    session: Any, make_app: MakeApp, other_process: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_mod, "FOLLOW_S", 0.2)
    runs = _start(session)
    for sr in runs[:2]:
        _land(session, sr)
    started: list[Any] = []
    app = make_app(runner_factory=lambda *a: started.append(a) or FakeRunner(*a))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        pane = app.screen.pane("run")
        status = lambda: str(pane.query_one("#run-status", Static).render())  # noqa: E731
        table = pane.query_one("#run-rows", DataTable)
        await _until(pilot, lambda: "another process" in status())
        assert f"a run is in progress in another process (pid {other_process}, started" in status()
        assert f"2 of {len(runs)} runs done" in status()
        assert "idle" not in status()
        assert table.row_count == 2
        bar = pane.query_one("#run-bar", ProgressBar)
        assert (bar.total, bar.progress) == (len(runs), 2)

        for sr in runs[2:5]:  # rows land while the pane watches
            _land(session, sr)
        await _until(pilot, lambda: table.row_count == 5)
        await _until(pilot, lambda: f"5 of {len(runs)} runs done" in status())
        assert pane.query_one("#run-bar", ProgressBar).progress == 5

        await pilot.press("r")  # already going: nothing starts, no class name in the toast
        await pilot.pause(0.1)
        messages = [n.message for n in app._notifications]
        assert any(f"already going in another process (pid {other_process})" in m for m in messages)
        assert not any("Failure" in m for m in messages)
        assert not started and not pane.running
        assert pane.query_one("#run-bar", ProgressBar).total is not None  # no "--%" pulse

        for sr in runs[5:]:
            _land(session, sr)
        session.journal(ExperimentFinishedRecord(experiment_id="batch-sweep", runs_done=len(runs),
                                                 runs_scheduled=len(runs)))
        (session.folder / RUN_LOCK).unlink()
        await _until(pilot, lambda: "in progress in another process" not in status())
        assert status().endswith(f"\nthe run in the other process finished — {len(runs)} of "
                                 f"{len(runs)} runs done; r: run again"), status()
        bar = pane.query_one("#run-bar", ProgressBar)
        assert (bar.total, bar.progress) == (len(runs), len(runs))  # its summary below: not 0 %


@pytest.mark.slow
async def test_end_of_a_followed_run_reloads_validation_cost_and_memory(
    session: Any, make_app: MakeApp, other_process: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of a run in another process are final when it ends: the Validation, Cost
    and Memory panes re-read them, as after a run started in the Run pane."""
    monkeypatch.setattr(run_mod, "FOLLOW_S", 0.2)
    runs = _start(session)
    _land(session, runs[0])  # not validated
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)  # every pane built, reading the one row there is
        await pilot.press("2")
        pane = app.screen.pane("run")
        val, cost, mem = (app.screen.pane(tab) for tab in ("validation", "cost", "memory"))
        await _until(pilot, lambda: pane.follow_pid == other_process)
        assert (len(val.rows), cost.answer.accepted) == (1, None)  # nothing validated: not measured (K3)
        for sr in runs[1:]:
            _land(session, sr, corpus_accepted=True, peak_allocated_bytes=2**30, peak_reserved_bytes=2**31)
        table = pane.query_one("#run-rows", DataTable)
        await _until(pilot, lambda: table.row_count == len(runs))  # followed, not final yet
        session.journal(ExperimentFinishedRecord(experiment_id="batch-sweep", runs_done=len(runs),
                                                 runs_scheduled=len(runs)))
        (session.folder / RUN_LOCK).unlink()
        await _until(pilot, lambda: pane.follow_pid is None)
        await pilot.pause(0.1)
        assert len(val.rows) == len(runs)
        assert cost.answer.accepted == 1  # one corpus, accepted by every validated run (K4)
        assert mem.alloc_row is not None and mem.alloc_row["peak_reserved_bytes"] == 2**31
        assert (mem.alloc_row["variant_id"], mem.alloc_row["run_index"]) == (runs[-1].variant_id,
                                                                             runs[-1].run_index)


async def test_failed_start_says_why_without_class_name_and_bar_stops(
    session: Any, make_app: MakeApp
) -> None:
    """A runner refused (the lock taken between the check and the start): the message
    alone, and the overall bar back to an empty, determinate bar (no "--%" pulse)."""
    from gpusession.core.folder.journal import lock_busy

    def refusing(*_a: Any) -> Any:
        raise lock_busy(4242, session.name)

    app = make_app(runner_factory=refusing)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        await settle(pilot, app)
        pane = app.screen.pane("run")
        status = str(pane.query_one("#run-status", Static).render())
        assert "run failed: another gpusession process (pid 4242)" in status
        assert "Failure" not in status
        assert pane.query_one("#run-bar", ProgressBar).total == run_mod.IDLE_TOTAL


def test_show_says_run_in_progress(
    session: Any, other_process: int, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _start(session)
    for sr in runs[:3]:
        _land(session, sr)
    code, out, _ = cli(capsys, session.folder.parent, "show", session.name)
    assert code == 0
    assert f"run in progress (pid {other_process}): 3 of {len(runs)} runs done" in out
    assert running_words(session.folder) is not None
    (session.folder / RUN_LOCK).unlink()
    code, out, _ = cli(capsys, session.folder.parent, "show", session.name)
    assert "run in progress" not in out
