"""The Run pane never reads the results CSV on the event loop when an experiment is picked
or a run ends (the reads grow with the session: a key must answer meanwhile), and the
GPUs-left-idle hint of its status line reads the order and rates files once per change.

The reads counted are the Run pane's (its modules in the stack); the other panes' reads
after a run are theirs.
"""

from __future__ import annotations

import re
import threading
import traceback
from typing import Any

import pytest
from ui.pilot import MakeApp, settle, workers_done

from gpusession.core.records.results import ResultsFile
from gpusession.testing import FakeRunner

#: a frame of the Run pane's modules
RUN_PANE = re.compile(r"gpusession[/\\]ui[/\\]panes[/\\]run\w*\.py$")


@pytest.fixture
def csv_reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every read of a results CSV from now on that the Run pane's code asked for (a
    ``ui/panes/run*.py`` frame in its stack): ``True`` when it ran on the event loop's thread."""
    seen: list[bool] = []
    real = ResultsFile.read

    def recording(self: ResultsFile, *a: Any, **kw: Any) -> Any:
        if any(RUN_PANE.search(f.filename) for f in traceback.extract_stack()):
            seen.append(threading.current_thread() is threading.main_thread())
        return real(self, *a, **kw)

    monkeypatch.setattr(ResultsFile, "read", recording)
    return seen


async def test_picking_an_experiment_reads_the_csv_off_the_event_loop(
        session: Any, make_app: MakeApp, csv_reads: list[bool]) -> None:
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    FakeRunner(session, "batch-sweep", lambda _e: None, threading.Event()).run()
    define_experiment(session, Experiment(id="ctx-sweep", workload="bbc-news", varied="context",
                                          values=(128, 256), params={"model_dir": "models"}))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await workers_done(pilot, app)
        run_pane = app.screen.pane("run")
        assert run_pane.experiment_id == "ctx-sweep"
        del csv_reads[:]
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("up", "ctrl+s")
        await workers_done(pilot, app)
        assert run_pane.experiment_id == "batch-sweep"
        assert run_pane.runs_recorded > 0  # its summary was read (in the worker)
    assert csv_reads and not any(csv_reads), csv_reads


async def test_the_end_of_a_run_reads_the_csv_off_the_event_loop(
        session: Any, make_app: MakeApp, csv_reads: list[bool]) -> None:
    go = threading.Event()

    def held(*a: Any, **kw: Any) -> Any:  # the fake run waits for the test's go
        runner = FakeRunner.factory()(*a, **kw)
        real_run = runner.run
        runner.run = lambda: go.wait(60) and real_run()
        return runner

    app = make_app(runner_factory=held)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await workers_done(pilot, app)
        run_pane = app.screen.pane("run")
        await pilot.press("r")
        await pilot.pause()
        assert run_pane.running
        del csv_reads[:]  # the start is not what is counted: the rows landing and the end are
        go.set()
        while run_pane.running:
            await pilot.pause(0.05)
        await workers_done(pilot, app)
        assert "variants:" in run_pane.last_outcome  # judged, by the worker
    assert csv_reads and not any(csv_reads), csv_reads


def test_idle_gpus_words_reads_the_files_once_per_change(session: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.retrieval import evidence
    from gpusession.ui.panes.run_status import idle_gpus_words

    calls: list[int] = []
    real = evidence.gpu_mismatch

    def counting(*a: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(evidence, "gpu_mismatch", counting)
    exp = Experiment(id="one-gpu", workload="bbc-news", values=(1,))
    first = idle_gpus_words(session, exp)
    for _ in range(5):  # the status line drawn again: nothing read
        assert idle_gpus_words(session, exp) == first
    assert len(calls) == 1
    (session.folder / "order.toml").write_text("schema = 1\n", encoding="utf-8")  # an edit is seen
    assert idle_gpus_words(session, exp) == first
    assert len(calls) == 2


@pytest.fixture
def session_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every re-read of ``session.toml``, results CSV read and journal read the Run pane's
    code asked for from now on: ``(what, on the event loop's thread)``."""
    from gpusession.core.folder.session import Session

    seen: list[tuple[str, bool]] = []

    def counted(what: str, real: Any) -> Any:
        def recording(*a: Any, **kw: Any) -> Any:
            if any(RUN_PANE.search(f.filename) for f in traceback.extract_stack()):
                seen.append((what, threading.current_thread() is threading.main_thread()))
            return real(*a, **kw)
        return recording

    monkeypatch.setattr(Session, "reload", counted("session.toml", Session.reload))
    monkeypatch.setattr(Session, "journal_records", counted("journal", Session.journal_records))
    monkeypatch.setattr(ResultsFile, "read", counted("csv", ResultsFile.read))
    return seen


async def _run_pane_idle(pilot: Any, app: Any) -> Any:
    await settle(pilot, app)
    await pilot.press("2")
    await workers_done(pilot, app)
    return app.screen.pane("run")


async def test_a5_r_reads_session_toml_off_the_event_loop(
        session: Any, make_app: MakeApp, session_reads: list[tuple[str, bool]]) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        run_pane = await _run_pane_idle(pilot, app)
        del session_reads[:]
        await pilot.press("r")
        await pilot.pause()
        assert run_pane.running  # at once: a second r is refused meanwhile
        while run_pane.running:
            await pilot.pause(0.05)
        await workers_done(pilot, app)
        assert run_pane.rows and run_pane.last_outcome  # it ran, to its end
    assert ("session.toml", False) in session_reads, session_reads
    assert not [r for r in session_reads if r[1]], session_reads


async def test_a5_u_reads_the_resume_plan_once_off_the_event_loop(
        session: Any, make_app: MakeApp, session_reads: list[tuple[str, bool]]) -> None:
    from gpusession.core.events import ExperimentStartedRecord
    from gpusession.core.records.results import ResultRow

    session.journal(ExperimentStartedRecord(experiment_id="batch-sweep", runs=["cold:batch-1:1", "warm:batch-1:1"]))
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="cold",
                                     run_index=1, elapsed_seconds=0.5))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        run_pane = await _run_pane_idle(pilot, app)
        del session_reads[:]
        await pilot.press("u")
        await pilot.pause()
        while run_pane.running:
            await pilot.pause(0.05)
        assert run_pane.resumed
        before_end = list(session_reads)
        await workers_done(pilot, app)
    # the start's reads: session.toml, then the plan's CSV and journal, once each
    assert [w for w, _ in before_end[:3]] == ["session.toml", "csv", "journal"], before_end
    assert not [r for r in session_reads if r[1]], session_reads


async def test_a5_u_with_nothing_missing_is_said_and_the_pane_is_idle_again(
        session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        run_pane = await _run_pane_idle(pilot, app)
        await pilot.press("u")  # never ran: said by the worker, nothing starts
        await pilot.pause()
        await workers_done(pilot, app)
        assert not run_pane.running
        assert any("has never run" in n.message for n in app._notifications)
        await pilot.press("r")  # the pane starts again after a refusal
        await pilot.pause()
        assert run_pane.running
        while run_pane.running:
            await pilot.pause(0.05)
        await workers_done(pilot, app)
        assert run_pane.rows
