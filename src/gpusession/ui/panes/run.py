"""Run pane: pick or define an experiment, run it, watch rows land, read the summary.

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 2) and the command
palette ("Run experiment"). The run itself is :class:`gpusession.bench.runner.Runner`
(blocking; it starts the worker processes that import torch — the UI never does, M5),
driven from a Textual thread worker in group ``run``. Its events cross into the UI only
through ``post_message`` (H-12); ``c`` sets the cancel event, and the runner stops at
the next run boundary, marking the partial experiment incomplete.

A run started elsewhere (``gpusession run NAME --detach``) is followed: while
another live process holds the run lock, the pane looks at the journal and the results
CSV about once a second (a size/mtime check; the re-read in a thread worker), shows the
journal's progress and refreshes its table as rows land; ``r`` says the run is already going.

The pane composes small widgets and routes what they tell it (attributes down, messages
up): :mod:`~gpusession.ui.panes.run_status` (status and Keep lines),
:mod:`~gpusession.ui.panes.run_progress` (the bars and the live rows),
:mod:`~gpusession.ui.panes.run_summary` (the summary table and charts),
:mod:`~gpusession.ui.panes.run_follow` (a run in another process) and the forms of
:mod:`~gpusession.ui.panes.run_forms` (modal screens). It keeps the state they show: the
experiments, the run in flight, and the reads of the session in thread workers.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message

from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.folder.corpus_pin import pinned_revision
from gpusession.core.folder.journal import RunProgress
from gpusession.core.folder.resume import session_resume_plan
from gpusession.ui.context import UiContext
from gpusession.ui.panes.run_follow import RunFollowView
from gpusession.ui.panes.run_forms import (
    WORKLOADS,
    DefineModal,
    DeriveModal,
    PickModal,
    define_form,
)
from gpusession.ui.panes.run_progress import IDLE_TOTAL, RunProgressView, RunRowsTable
from gpusession.ui.panes.run_status import RunStatusView, running_text
from gpusession.ui.panes.run_status import describe as describe_experiment
from gpusession.ui.panes.run_summary import (
    RunSummaryView,
    SummaryRead,
    every_run_failed_in,
    read_summary,
    verdict_count_of,
)
from gpusession.ui.panes.run_views import RunViews
from gpusession.ui.panes.run_words import (
    accepted_words,
    error_words,
    last_run_words,
    outcome_words,
    row_dict,
)

#: how often (seconds) the pane looks for a run in another process and its new rows
FOLLOW_S = 1.0


class RunPane(Vertical):
    """Pane 2: experiments and runs; keys: r start, u resume, c cancel, e pick, d define, v derive, s view."""

    BINDINGS = [
        # short words: the footer must fit 80 columns (the status line says more)
        Binding("r", "start", "Run", id="run.start", tooltip="Start the current experiment"),
        # D1, D3: the same start with the session limit and the first-result stop off, after
        # one confirm line (not in the footer: it must fit 80 columns)
        Binding("R", "start_anyway", "Run anyway", id="run.start_anyway", show=False,
                tooltip="Start past a rejected first result and the session limit (asks first)"),
        # not in the footer (80 columns): the palette says it
        Binding("u", "resume", "Resume", id="run.resume", show=False,
                tooltip="Resume the current experiment at the next run of its schedule not measured"),
        Binding("c", "cancel", "Cancel", id="run.cancel", tooltip="Cancel at the next run boundary"),
        Binding("e", "pick", "Pick", id="run.pick", tooltip="Pick an experiment"),
        Binding("d", "define", "Define", id="run.define", tooltip="Define an experiment"),
        Binding("s", "switch_view", "Rows/summary", id="run.view", tooltip="Live rows or summary"),
        # not in the footer (80 columns): the palette and the status line of a derived one say it
        Binding("v", "derive", "Derive", id="run.derive", show=False,
                tooltip="Replay the current experiment with one element changed"),
    ]

    @dataclass
    class RunRequested(Message):
        experiment_id: str

    @dataclass
    class ProgressMade(Message):
        done: int
        total: int
        variant_id: str | None
        phase: str | None

        def can_replace(self, message: Message) -> bool:  # a flood of progress: keep the last
            return isinstance(message, RunPane.ProgressMade)

    @dataclass
    class RowLanded(Message):
        row: dict[str, Any]

    @dataclass
    class InFlightChanged(Message):
        """What is in flight now (``""``: nothing), as headless ``run`` names it."""

        what: str

    @dataclass
    class IncidentReported(Message):
        message: str

    @dataclass
    class NodesAwaited(Message):
        """A group over several nodes waits for the other nodes: what, and how to start them."""

        message: str

    @dataclass
    class RunFinished(Message):
        experiment_id: str
        outcome: Any
        error: str | None
        cancelled: bool

    @dataclass
    class FollowedRunEnded(Message):
        """A run followed in another process ended (its lock released): the rows it
        wrote are final, as after :class:`RunFinished` (the screen reloads the panes)."""

        experiment_id: str | None
        pid: int

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        #: whether the run that last started is a resume (``u``)
        self.resumed = False
        self.experiments: list[Any] = []
        self.experiment_id: str | None = None
        self.running = False
        self.inflight_what = ""  # what is in flight in this pane's run ("": nothing)
        self.inflight_since = 0.0  # its start, time.monotonic() seconds
        self._running_head = ""  # the status's first lines while running (set by _status)
        self.cancel_event = threading.Event()
        self.rows: list[dict[str, Any]] = []
        self.last_outcome = ""
        #: PID of another process running experiments here (followed), else ``None``
        self.follow_pid: int | None = None
        self.follow_text = ""
        #: the current experiment's newest invocation (journal) and its cold/warm rows,
        #: read while nothing runs (the status line and the overall bar say them)
        self.last_run: RunProgress | None = None
        self.runs_recorded = 0
        #: the report's Keep line of the current experiment (D5, D7)
        self.keep_text = ""
        #: while a run goes: the time left for it and before the session limit
        self.time_left: Any = None
        self.time_left_text = ""
        #: the experiment of a followed run that ended (its status line names that process)
        self._ended_elsewhere: str | None = None
        #: the newest reload (a worker's older result is dropped); the first one is shown
        self._generation = 0
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield RunStatusView(id="run-head")
        yield RunProgressView(id="run-progress")
        yield RunViews(id="run-views")
        yield RunFollowView(self.ctx, id="run-follow")

    def on_mount(self) -> None:
        self.call_after_refresh(self.reload)
        self.call_after_refresh(self.follow_tick)
        self.set_interval(FOLLOW_S, self.follow_tick, name="follow-run")

    def focus_main(self) -> None:
        self.query_one(RunViews).focus_main()

    @property
    def expected(self) -> dict[str, int]:
        """Runs expected per variant of the run in flight (its bars), ``{}`` before one."""
        return self.query_one(RunProgressView).expected

    @property
    def view(self) -> str:
        """``run-rows`` (live rows) or ``run-summary``; both show side by side when wide."""
        return self.query_one(RunViews).view

    def show_view(self, view: str) -> None:
        """Show the live rows or the summary, keeping the focus in the pane."""
        self.query_one(RunViews).show_view(view)

    # -- experiments -----------------------------------------------------------------
    def reload(self) -> None:
        """Re-read the defined experiments and the summary of the current one, in a thread
        worker (the results CSV, the journal and the summary grow with the session); the
        status says "counting …" until the first read is shown. A newer reload replaces
        an older one (exclusive; an older result is dropped by its generation)."""
        self._generation += 1
        if not self.loaded:
            self.query_one(RunSummaryView).counting()
        self._load(self._generation, self.experiment_id)

    @work(thread=True, exclusive=True, group="run-load", exit_on_error=False)
    def _load(self, generation: int, experiment_id: str | None) -> None:
        from gpusession.core.folder import experiments

        try:
            defined = list(experiments.load_experiments(self.ctx.session))
        except BadInput as exc:  # session.toml hand-edited: said in the pane
            self.app.call_from_thread(self._experiments_unreadable, generation, exc)
            return
        ids = [e.id for e in defined]
        if experiment_id not in ids:  # the newest defined, as `gpusession run` without --experiment
            experiment_id = ids[-1] if ids else None
        summary = read_summary(self.ctx.session, experiment_id)
        self.app.call_from_thread(self._loaded, generation, defined, experiment_id, summary)

    def _experiments_unreadable(self, generation: int, exc: BadInput) -> None:
        if generation == self._generation:
            self.loaded = True
            self._status(f"experiments unreadable: {exc}")

    def _loaded(self, generation: int, defined: list[Any], experiment_id: str | None,
                summary: SummaryRead | None) -> None:
        if generation != self._generation:
            return
        self.loaded = True
        self.experiments = defined
        if self.experiment_id not in {e.id for e in defined} or self.experiment_id is None:
            self.experiment_id = experiment_id
        if self.experiment_id == experiment_id:
            self._show_summary(summary)  # reads the last run the status line says
        else:  # chosen meanwhile (a followed run): read it now
            self.refresh_summary()
        self._status()

    def current_experiment(self) -> Any | None:
        return next((e for e in self.experiments if e.id == self.experiment_id), None)

    def describe(self, exp: Any) -> str:
        return describe_experiment(self.ctx.session, exp, self.experiments)

    def _status(self, text: str | None = None) -> None:
        if text is None:
            exp = self.current_experiment()
            if exp is None:
                text = "No experiment defined yet — d: define one."
            elif self.running:
                # described once per change; the in-flight line alone moves each second
                self._running_head = f"{self.describe(exp)}\nrunning — c: cancel at the next run boundary"
                text = self._running_text()
            elif self.follow_pid is not None:
                text = f"{self.describe(exp)}\n{self.follow_text}"
            else:
                who = "the run in the other process" if self._ended_elsewhere == exp.id else "last run"
                text = f"{self.describe(exp)}\n{self.last_outcome or last_run_words(self.last_run, self.runs_recorded, who)}"
        head = self.query_one(RunStatusView)
        head.say(text)
        head.keep(self.keep_text, shown=not self.running)
        self._arrange_keys()
        self.set_class(self.running, "-running")
        self.query_one(RunProgressView).show_state(
            running=self.running, stands=self.running or self.follow_pid is not None or bool(self.last_outcome),
            last_run=self.last_run, runs_recorded=self.runs_recorded)

    def _running_text(self) -> str:
        return running_text(self._running_head, self.inflight_what, self.inflight_since, self.time_left_text)

    def footer_actions(self) -> tuple[str, ...]:
        """The pane's keys in the footer, the ones this state needs first (80 columns hold five).

        Running: cancel; cut short: resume before a new attempt; refused past the session
        limit: run anyway first; no experiment: define.
        """
        if self.running:
            return ("cancel", "switch_view")
        if self.follow_pid is not None:
            return ("switch_view", "pick")
        if self.current_experiment() is None:
            return ("define",)
        last = self.last_run
        if self.last_outcome.startswith("not started: past"):
            return ("start_anyway", "start", "pick", "define", "switch_view")
        if (not self.last_outcome.startswith("not started") and last is not None
                and last.state != "finished" and last.runs_done < last.runs_scheduled):
            return ("resume", "start", "pick", "define", "switch_view")
        return ("start", "pick", "define", "derive", "switch_view")

    def _arrange_keys(self) -> None:
        """Show :meth:`footer_actions` in the footer, in that order; every key still works."""
        from dataclasses import replace

        order = self.footer_actions()
        table = self._bindings.key_to_bindings
        rank = {a: i for i, a in enumerate(order)}

        def first(item: tuple[str, list[Binding]]) -> int:
            return min((rank.get(b.action, len(order)) for b in item[1]), default=len(order))

        before = [(k, [b.show for b in bs]) for k, bs in table.items()]
        arranged = {k: [replace(b, show=b.action in rank) for b in bs]
                    for k, bs in sorted(table.items(), key=first)}
        if [(k, [b.show for b in bs]) for k, bs in arranged.items()] != before:
            self._bindings.key_to_bindings = arranged
            self.refresh_bindings()

    def action_pick(self) -> None:
        if self.running or not self.experiments:
            return
        ids = tuple(e.id for e in self.experiments)

        def chosen(result: dict[str, str] | None) -> None:
            if result:
                if result["experiment"] != self.experiment_id:
                    self.last_outcome = ""  # the words of the last run here were about another experiment
                self.experiment_id = result["experiment"]
                self.refresh_summary()
                self._status()

        self.app.push_screen(PickModal(ids, self.experiment_id), chosen)

    def action_define(self) -> None:
        """The Define form: every setting as text, parsed by the one define form parser
        (:func:`gpusession.core.experiment.form.experiment_from_form`, as ``experiment
        define`` does), prefilled with the current experiment; a refused save keeps the
        form open, naming the field (R1, V5)."""
        if self.running:
            self.notify("a run is in progress", title="cannot define now")
            return
        cur = self.current_experiment()
        self.app.push_screen(DefineModal(cur, on_save=lambda result: self._define(result, cur)))

    def _define(self, result: dict[str, str], cur: Any) -> None:
        """Store the experiment the form describes; raises BadInput (the form says it)."""
        from gpusession.core.experiment import form
        from gpusession.core.folder import experiments
        from gpusession.core.validation import Protocol

        exp = form.experiment_from_form(define_form(result), folder=self.ctx.session.folder, base=cur,
                                        check_protocol=Protocol.from_toml)
        exp = experiments.define_experiment(self.ctx.session, exp)
        self.experiment_id = exp.id
        self.reload()

    def action_derive(self) -> None:
        """The derive form: a new id and the one change (``KEY=VALUE``), as ``experiment
        derive`` takes them; the value is parsed by the define form's parser (D4)."""
        if self.running:
            self.notify("a run is in progress", title="cannot derive now")
            return
        cur = self.current_experiment()
        if cur is None:
            self.notify("define an experiment first (d)", title="derive")
            return
        ids = {e.id for e in self.experiments}
        self.app.push_screen(DeriveModal(cur, ids, on_save=lambda result: self._derive(result, cur)))

    def _derive(self, result: dict[str, str], cur: Any) -> None:
        """Store the replay the derive form describes; raises BadInput (the form says it)."""
        from gpusession.core.experiment.derive import derive_experiment, derive_notes
        from gpusession.core.folder.experiments import store_derived
        from gpusession.core.validation import Protocol

        exp = derive_experiment(cur, result["id"].strip(), result["set"], folder=self.ctx.session.folder,
                                check_protocol=Protocol.from_toml,
                                pinned_corpus_revision=pinned_revision(self.ctx.session, cur.id))
        exp = store_derived(self.ctx.session, exp)
        self.experiment_id = exp.id
        self.reload()
        for note in derive_notes(cur, exp):  # a precision change: its own quality check
            self.notify(note, title="derived", timeout=12)

    def action_switch_view(self) -> None:
        self.show_view("run-rows" if self.view == "run-summary" else "run-summary")

    # -- running ---------------------------------------------------------------------
    #: The confirm line of :meth:`action_start_anyway` (D1, D3).
    ANYWAY_QUESTION = "continue past a rejected first result / past the session limit? y/n"

    def action_start_anyway(self) -> None:
        """Ask one line, then start with the first-result stop and the session limit off."""
        if self.running:
            self.notify("a run is already in progress", title="run")
            return
        from gpusession.ui.modals import ConfirmModal

        def answered(yes: bool | None) -> None:
            if yes:
                self.action_start(anyway=True)

        self.app.push_screen(ConfirmModal(self.ANYWAY_QUESTION), answered)

    def action_resume(self) -> None:
        """Start the runs of the current experiment's schedule that have no measured row.

        Nothing missing, or an experiment that never ran: said, nothing starts.
        """
        if self.running:
            self.notify("a run is already in progress", title="run")
            return
        if self.experiment_id is None:
            self.notify("define an experiment first (d)", title="run")
            return
        try:
            plan = session_resume_plan(self.ctx.session, self.experiment_id)
        except BadInput as exc:  # never ran, or an unreadable CSV: said, nothing starts
            self.notify(printable(f"{error_words(exc)} (here: r)"), title="run")
            return
        if not plan.missing:
            self.notify(plan.nothing_words(), title="run")
            return
        self.action_start(resume=True)

    def action_start(self, anyway: bool = False, resume: bool = False) -> None:
        if self.running:
            self.notify("a run is already in progress", title="run")
            return
        holder = self.query_one(RunFollowView).holder()
        if holder is not None:
            self.notify(f"a run is already going in another process (pid {holder}); "
                        "its progress and rows show in this pane", title="run")
            self.follow_tick()
            return
        if self.experiment_id is None:
            self.notify("define an experiment first (d)", title="run")
            return
        try:  # a limit changed from another shell counts now, as the runner rereads it at each boundary
            self.ctx.session.reload()
        except BadInput as exc:
            self.notify(printable(error_words(exc)), title="not started", severity="error")
            return
        self.post_message(self.RunRequested(self.experiment_id))
        self.running = True
        self.resumed = resume  # its end judges the experiment's rows so far, as `run --resume` does
        self.last_outcome = ""
        self._ended_elsewhere = None
        self.cancel_event = threading.Event()
        self.rows = []
        self.query_one(RunRowsTable).clear()
        self.show_view("run-rows")
        self._setup_variant_bars(resume)
        self._status()
        self._run_worker(self.experiment_id, self.cancel_event, anyway, resume)

    def action_cancel(self) -> None:
        if self.running and not self.cancel_event.is_set():
            self.cancel_event.set()
            self.last_outcome = "cancel requested"
            self._status("Cancel requested — the run stops at the next run boundary.")

    def _setup_variant_bars(self, resume: bool = False) -> None:
        """One bar per variant of the runs to come (a resume: the schedule's runs not measured), and their time left."""
        from gpusession.core.experiment import plan
        from gpusession.core.retrieval.time_left import TimeLeft

        expected: dict[str, int] = {}
        exp = self.current_experiment()
        if exp is not None:
            # a loaded experiment is valid, and a resume's plan was read just before
            runs = session_resume_plan(self.ctx.session, exp.id).missing if resume else plan.schedule(exp)
            for r in runs:
                expected[r.variant_id] = expected.get(r.variant_id, 0) + 1
            self.time_left, self.time_left_text = TimeLeft(self.ctx.session, list(runs), clock=self.ctx.now), ""
        self.query_one(RunProgressView).start(expected)

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _run_worker(self, experiment_id: str, cancel: threading.Event, anyway: bool = False,
                    resume: bool = False) -> None:
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
                self.post_message(self.InFlightChanged(what))
            if isinstance(ev, Progress):
                self.post_message(self.ProgressMade(ev.done, ev.total, ev.variant_id, ev.phase))
            elif isinstance(ev, RowAppended):
                self.post_message(self.RowLanded(row_dict(ev.row)))
            elif isinstance(ev, IncidentReported):
                # a workload's exception text: secrets hidden, controls escaped
                self.post_message(self.IncidentReported(printable(describe(ev) or ev.message)))
            elif isinstance(ev, WorkerStarted) and ev.waiting_for_nodes:
                self.post_message(self.NodesAwaited(ev.waiting_for_nodes))

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
            self.post_message(self.RunFinished(experiment_id, outcome, None, cancel.is_set()))
        except PastLimit as exc:  # the pane's key, not the CLI's flag
            self.post_message(self.RunFinished(
                experiment_id, None, f"not started: {exc.reason}; R: run anyway (asks first)", False))
        except Exception as exc:  # noqa: BLE001 - a Textual worker: whatever stops the runner (bad input, disk, a bug) is shown in the pane and the TUI keeps running
            self.post_message(self.RunFinished(experiment_id, None, error_words(exc), cancel.is_set()))

    def on_run_pane_progress_made(self, msg: ProgressMade) -> None:
        self.query_one(RunProgressView).advance(msg.done, msg.total)

    def on_run_pane_in_flight_changed(self, msg: InFlightChanged) -> None:
        self.inflight_what, self.inflight_since = msg.what, time.monotonic()
        if self.running:
            self._status()

    def on_run_pane_row_landed(self, msg: RowLanded) -> None:
        r = msg.row
        self.rows.append(r)
        self.query_one(RunRowsTable).add_result(r)
        if self.time_left is not None and r.get("phase") in ("cold", "warm"):
            done = sum(1 for x in self.rows if x.get("phase") in ("cold", "warm"))
            self.time_left_text = self.time_left.words(r, done)
            self._status()
        self.query_one(RunProgressView).row_landed(r)

    def on_run_pane_incident_reported(self, msg: IncidentReported) -> None:
        self.notify(msg.message, title="incident (kept in the journal)", severity="warning")

    def on_run_pane_nodes_awaited(self, msg: NodesAwaited) -> None:
        self.notify(msg.message, title="waiting for the other nodes", timeout=30)

    def on_run_pane_run_finished(self, msg: RunFinished) -> None:
        self.running = False
        self.inflight_what = ""
        self.time_left = None  # its last words stay in time_left_text
        self.query_one(RunProgressView).ended()
        rows_written = getattr(msg.outcome, "rows_written", 0) or 0
        self.last_outcome = outcome_words(msg.outcome, msg.error, msg.cancelled,
                                          all_failed=self._every_run_failed(rows_written))
        self.last_outcome += self._verdict_count(rows_written)
        self.reload()
        self.show_view("run-summary")
        self._status()

    def _every_run_failed(self, rows_written: int) -> bool:
        return every_run_failed_in(self.ctx.session, self.experiment_id, rows_written)

    def _verdict_count(self, rows_written: int) -> str:
        return verdict_count_of(self.ctx.session, self.experiment_id, rows_written, resumed=self.resumed)

    # -- a run in another process (`run NAME --detach`, followed) -------------
    def follow_tick(self) -> None:
        """Look (about once a second) for a run in another process; follow it while it runs.

        While a run of this pane is in flight, its elapsed time moves on instead, and the
        time left counts down by the app's clock (a fake one in tests).
        """
        if self.running:
            if self.time_left is not None:  # the last estimate, counted down to now
                self.time_left_text = self.time_left.words_at(self.ctx.now()) or self.time_left_text
            if self.inflight_what or self.time_left_text:  # nothing is read again
                self.query_one(RunStatusView).say(self._running_text())
            return
        self.query_one(RunFollowView).tick({e.id for e in self.experiments}, self.experiment_id)

    def on_run_follow_view_followed(self, msg: RunFollowView.Followed) -> None:
        if self.running:  # a run of this pane started meanwhile: it is what the pane shows
            return
        self.follow_pid, self.follow_text = msg.pid, msg.words
        self.experiment_id = msg.experiment_id
        self.last_outcome = ""
        self.query_one(RunProgressView).followed(msg.done, msg.total)
        self.show_view("run-rows")
        self._status()
        self._show_summary(msg.summary)

    def on_run_follow_view_ended(self, msg: RunFollowView.Ended) -> None:
        """It ended: read its last rows and the summary; the other panes re-read (the screen)."""
        self.follow_pid = None
        self.last_outcome = ""  # the journal says how it ended (the status line)
        self._ended_elsewhere = self.experiment_id
        self.reload()
        self.post_message(self.FollowedRunEnded(self.experiment_id, msg.pid))

    # -- summary -------------------------------------------------------------------------
    def refresh_summary(self) -> None:
        """Summary table (R6: median, min–max; failures in words) and duration charts, read now."""
        self._show_summary(read_summary(self.ctx.session, self.experiment_id))

    def _show_summary(self, read: SummaryRead | None) -> None:
        """Show what :func:`read_summary` read (``None``: no experiment): the summary view,
        and while nothing runs the rows already measured and how the last run ended."""
        self.query_one(RunSummaryView).show(read)
        self.last_run, self.runs_recorded = None, 0
        self.keep_text = ""
        if read is None or read.problem:
            return
        if not self.running:  # the rows already measured, newest last
            self.query_one(RunRowsTable).show_rows(read.tail)
            if read.height and not self.last_outcome and self.follow_pid is None:
                self.show_view("run-summary")
            if self.follow_pid is None:  # nothing runs: how the last run ended
                self.runs_recorded, self.last_run = read.runs_recorded, read.last_run
        self.keep_text = read.keep_text


def _default_runner(session: Any, experiment_id: str, on_event: Any, cancel: threading.Event, *,
                    past_limit: bool = False, continue_on_reject: bool = False,
                    resume: bool = False) -> Any:
    from gpusession.bench.runner import Runner

    return Runner(session, experiment_id, on_event=on_event, cancel=cancel, past_limit=past_limit,
                  continue_on_reject=continue_on_reject, resume=resume)


__all__ = ["FOLLOW_S", "IDLE_TOTAL", "WORKLOADS", "RunPane", "accepted_words", "outcome_words", "read_summary"]
