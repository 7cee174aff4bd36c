"""The Run pane's launcher: the checks before a start, the runner in a thread worker, its events as messages.

Who calls it: :class:`gpusession.ui.panes.run.RunPane`, which composes one
:class:`RunLauncher` (it draws nothing) and asks it before a start (``r``, ``R``, ``u``)
and to launch. The run itself is :class:`gpusession.bench.runner.Runner` (blocking; it
starts the worker processes that import torch — the UI never does, M5), driven from a
Textual thread worker in group ``run``. Its events cross into the UI only through
``post_message`` (H-12), rendered by the one :func:`gpusession.core.events.describe`;
the cancel event stops the runner at the next run boundary. What grows with the session
is read in that worker too, never on the event loop (A5): before the start, ``session.toml``
again (``r``, ``R``) and, for ``u``, the resume plan (the results CSV and the journal, once);
the pane shows "starting" meanwhile and a refusal is said as before. When the run ends,
the worker reads its rows once and judges them (R7, D5).

The messages are the pane's (:class:`~gpusession.ui.panes.run_messages.RunMessages`): they
bubble from here through the pane to the screen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from textual import work
from textual.containers import Vertical
from textual.widget import Widget

from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.folder.resume import session_resume_plan
from gpusession.ui.context import UiContext
from gpusession.ui.panes.run_follow import other_run_holder
from gpusession.ui.panes.run_messages import RunMessages
from gpusession.ui.panes.run_progress import RunProgressView, RunRowsTable
from gpusession.ui.panes.run_summary import end_verdicts
from gpusession.ui.panes.run_words import error_words, row_dict

#: The confirm line before a start with the first-result stop and the session limit off (D1, D3).
ANYWAY_QUESTION = "continue past a rejected first result / past the session limit? y/n"


class RunLauncher(Widget):
    """Starts the pane's runs and posts what they do; draws nothing."""

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx

    def may_start(self, running: bool, experiment_id: str | None) -> bool:
        """Whether a run may start now, by what is known without reading the session; when
        not, says why (a toast) and returns ``False``.

        Refused here: a run of the pane in flight, one in another process (the pane follows
        it; its lock file is read), no experiment. ``session.toml`` is re-read in the
        worker (:meth:`launch`: a limit changed from another shell counts, as the runner
        rereads it at each boundary); a file that no longer reads refuses the start there.
        """
        if running:
            self.notify("a run is already in progress", title="run")
            return False
        holder = other_run_holder(self.ctx.session)
        if holder is not None:
            self.notify(f"a run is already going in another process (pid {holder}); "
                        "its progress and rows show in this pane", title="run")
            return False
        if experiment_id is None:
            self.notify("define an experiment first (d)", title="run")
            return False
        return True

    def _checked_in_worker(self, experiment_id: str, exp: Any | None, resume: bool) -> tuple[dict[str, int], Any] | None:
        """In the worker, before the runner: ``session.toml`` re-read and, for a resume, its
        plan read once; the runs expected per variant and their time left, or ``None``
        when the start is refused (:class:`RunMessages.NotStarted` posted, saying why)."""
        try:
            self.ctx.session.reload()
        except BadInput as exc:
            self.post_message(RunMessages.NotStarted(printable(error_words(exc)), "not started", "error"))
            return None
        missing = None
        if resume:
            try:
                plan = session_resume_plan(self.ctx.session, experiment_id)
            except BadInput as exc:  # never ran, or an unreadable CSV: said, nothing starts
                self.post_message(RunMessages.NotStarted(printable(f"{error_words(exc)} (here: r)"), "run"))
                return None
            if not plan.missing:
                self.post_message(RunMessages.NotStarted(plan.nothing_words(), "run"))
                return None
            missing = list(plan.missing)
        return self.plan(exp, missing)

    def ask_anyway(self, running: bool, then: Callable[[], None]) -> None:
        """Ask :data:`ANYWAY_QUESTION`; ``then`` starts on yes (D1, D3)."""
        if running:
            self.notify("a run is already in progress", title="run")
            return
        from gpusession.ui.modals import ConfirmModal

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.app.push_screen(ConfirmModal(ANYWAY_QUESTION), answered)

    def plan(self, exp: Any | None, missing: list[Any] | None = None) -> tuple[dict[str, int], Any]:
        """Runs expected per variant of the runs to come (``missing``: a resume's runs of the
        schedule not measured, already read) and their time left (a ``TimeLeft``; ``None``
        without an experiment)."""
        from gpusession.core.experiment import plan
        from gpusession.core.retrieval.time_left import TimeLeft

        if exp is None:
            return {}, None
        runs = missing if missing is not None else plan.schedule(exp)  # a loaded experiment is valid
        expected: dict[str, int] = {}
        for r in runs:
            expected[r.variant_id] = expected.get(r.variant_id, 0) + 1
        return expected, TimeLeft(self.ctx.session, list(runs), clock=self.ctx.now)

    def on_run_pane_incident_reported(self, msg: RunMessages.IncidentReported) -> None:
        self.notify(msg.message, title="incident (kept in the journal)", severity="warning")

    def on_run_pane_nodes_awaited(self, msg: RunMessages.NodesAwaited) -> None:
        self.notify(msg.message, title="waiting for the other nodes", timeout=30)

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def launch(self, experiment_id: str, exp: Any | None, cancel: threading.Event, anyway: bool = False,
               resume: bool = False, started: Callable[[dict[str, int], Any], None] | None = None) -> None:
        """Run ``experiment_id`` (``exp``: its definition) to its end (``anyway``: both stops
        off; ``resume``: the schedule's runs not measured), posting its events.

        First the checks that read the session (:meth:`_checked_in_worker`): refused, it
        ends with :class:`RunMessages.NotStarted`; else ``started(expected, time_left)``
        runs on the event loop (the pane shows the run's bars) before the runner starts,
        and it ends with :class:`RunMessages.RunFinished`.
        """
        from gpusession.bench.stops import PastLimit
        from gpusession.core.events import (
            IncidentReported,
            Progress,
            RowAppended,
            RunnerEvent,
            WorkerStarted,
            describe,
        )
        from gpusession.core.events.words import in_flight

        def on_event(ev: RunnerEvent) -> None:
            what = in_flight(ev)  # a run, a load or a warm-up starts, or it ended
            if what is not None:
                self.post_message(RunMessages.InFlightChanged(what))
            if isinstance(ev, Progress):
                self.post_message(RunMessages.ProgressMade(ev.done, ev.total, ev.variant_id, ev.phase))
            elif isinstance(ev, RowAppended):
                self.post_message(RunMessages.RowLanded(row_dict(ev.row)))
            elif isinstance(ev, IncidentReported):
                # a workload's exception text: secrets hidden, controls escaped
                self.post_message(RunMessages.IncidentReported(printable(describe(ev) or ev.message)))
            elif isinstance(ev, WorkerStarted) and ev.waiting_for_nodes:
                self.post_message(RunMessages.NodesAwaited(ev.waiting_for_nodes))

        checked = self._checked_in_worker(experiment_id, exp, resume)
        if checked is None:
            return
        if started is not None:
            self.app.call_from_thread(started, *checked)
        try:
            factory = self.ctx.runner_factory or _default_runner
            # D1, D3: both stops off only when asked (a test's factory takes the four arguments)
            off = {"past_limit": True, "continue_on_reject": True} if anyway else {}
            if resume:  # the stored schedule's runs not measured yet
                off["resume"] = True
            runner = factory(self.ctx.session, experiment_id, on_event, cancel, **off)
            if not anyway:  # D1: refused before anything runs once the limit has passed
                from gpusession.bench.stops import refuse_past_limit

                refuse_past_limit(self.ctx.session, experiment_id, self.ctx.now())
            outcome = runner.run()
            rows_written = getattr(outcome, "rows_written", 0) or 0
            all_failed, verdicts = end_verdicts(self.ctx.session, experiment_id, rows_written, resumed=resume)
            self.post_message(RunMessages.RunFinished(experiment_id, outcome, None, cancel.is_set(), all_failed, verdicts))
        except PastLimit as exc:  # the pane's key, not the CLI's flag
            self.post_message(RunMessages.RunFinished(
                experiment_id, None, f"not started: {exc.reason}; R: run anyway (asks first)", False,
                refused_past_limit=True))
        except Exception as exc:  # noqa: BLE001 - a Textual worker: whatever stops the runner (bad input, disk, a bug) is shown in the pane and the TUI keeps running
            self.post_message(RunMessages.RunFinished(experiment_id, None, error_words(exc), cancel.is_set()))


class RunLaunchKeys(Vertical):
    """The Run pane's run keys (``r`` start, ``R`` start anyway, ``u`` resume, ``c`` cancel),
    a base of :class:`gpusession.ui.panes.run.RunPane`: the checks and the worker are its
    :class:`RunLauncher`'s; the pane holds the state named here and shows it (``_status``)."""

    ctx: Any
    running: bool
    resumed: bool
    experiment_id: str | None
    last_outcome: str
    refused_past_limit: bool
    cancel_event: threading.Event
    rows: list[dict[str, Any]]
    time_left: Any
    time_left_text: str
    _ended_elsewhere: str | None
    current_experiment: Callable[[], Any | None]  # the forms' (RunFormKeys)

    def _status(self, text: str | None = None) -> None:
        raise NotImplementedError

    def follow_tick(self) -> None:
        raise NotImplementedError

    def show_view(self, view: str) -> None:
        raise NotImplementedError

    def action_start_anyway(self) -> None:
        """Ask one line, then start with the first-result stop and the session limit off."""
        self.query_one(RunLauncher).ask_anyway(self.running, lambda: self.action_start(anyway=True))

    def action_resume(self) -> None:
        """Start the runs of the current experiment's schedule that have no measured row;
        nothing missing, or an experiment that never ran: said (by the worker, which reads
        the plan), nothing starts."""
        self.action_start(resume=True)

    def action_start(self, anyway: bool = False, resume: bool = False) -> None:
        """Start the current experiment (``anyway``: both stops off; ``resume``: the runs of
        its schedule not measured) when :meth:`RunLauncher.may_start` lets it.

        The pane is running ("starting") at once, so a second key is refused; the reads
        that grow with the session are the worker's (:meth:`RunLauncher.launch`), which
        calls :meth:`_started` or posts :class:`RunMessages.NotStarted`.
        """
        launcher = self.query_one(RunLauncher)
        if not launcher.may_start(self.running, self.experiment_id) or self.experiment_id is None:
            if not self.running:
                self.follow_tick()  # a run in another process: followed now
            return
        self.running = True
        self.resumed = resume  # its end judges the experiment's rows so far, as `run --resume` does
        self.last_outcome = ""
        self.refused_past_limit = False
        self._ended_elsewhere = None
        self.cancel_event = threading.Event()
        self.time_left, self.time_left_text = None, ""
        self._status()
        launcher.launch(self.experiment_id, self.current_experiment(), self.cancel_event, anyway, resume,
                        self._started)

    def _started(self, expected: dict[str, int], time_left: Any) -> None:
        """The worker's checks passed: one bar per variant of the runs to come, their time
        left, the live rows emptied (on the event loop, before the runner's first event)."""
        if self.experiment_id is not None:
            self.post_message(RunMessages.RunRequested(self.experiment_id))
        self.rows = []
        self.query_one(RunRowsTable).clear()
        self.show_view("run-rows")
        self.time_left = time_left
        self.query_one(RunProgressView).start(expected)
        self._status()

    def on_run_pane_not_started(self, msg: RunMessages.NotStarted) -> None:
        """The worker refused the start (``session.toml`` unreadable, nothing to resume): said, as before."""
        self.running = False
        self.notify(msg.words, title=msg.title, severity=msg.severity)
        self._status()

    def action_cancel(self) -> None:
        """Ask the run to stop at the next run boundary (the partial experiment: incomplete)."""
        if self.running and not self.cancel_event.is_set():
            self.cancel_event.set()
            self.last_outcome = "cancel requested"
            self._status("Cancel requested — the run stops at the next run boundary.")


def _default_runner(session: Any, experiment_id: str, on_event: Any, cancel: threading.Event, *,
                    past_limit: bool = False, continue_on_reject: bool = False,
                    resume: bool = False) -> Any:
    from gpusession.bench.runner import Runner

    return Runner(session, experiment_id, on_event=on_event, cancel=cancel, past_limit=past_limit,
                  continue_on_reject=continue_on_reject, resume=resume)


__all__ = ["ANYWAY_QUESTION", "RunLaunchKeys", "RunLauncher"]
