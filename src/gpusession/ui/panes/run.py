"""Run pane: pick or define an experiment, run it, watch rows land, read the summary.

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 2) and the command
palette ("Run experiment"). The pane composes small widgets and routes what they tell it
(attributes down, messages up): :mod:`~gpusession.ui.panes.run_status` (status and Keep
lines, the footer's keys), :mod:`~gpusession.ui.panes.run_progress` (the bars and the
live rows), :mod:`~gpusession.ui.panes.run_summary` (the summary table and charts),
:mod:`~gpusession.ui.panes.run_load` (the session read in a thread worker),
:mod:`~gpusession.ui.panes.run_launch` (the keys r, R, u, c, the checks before a start and
the run in a thread worker, H-12), :mod:`~gpusession.ui.panes.run_follow` (a run started
elsewhere, ``run NAME --detach``, looked at about once a second) and
:mod:`~gpusession.ui.panes.run_forms` (the keys e, d, v and their modal forms); its
messages are in :mod:`~gpusession.ui.panes.run_messages`. It keeps the state they show:
the experiments and the run in flight. The results CSV, the journal and the summary
grow with the session: they are never read on the event loop.
"""

from __future__ import annotations

import threading
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding

from gpusession.core.folder.journal import RunProgress
from gpusession.ui.context import UiContext
from gpusession.ui.panes.run_follow import RunFollowView
from gpusession.ui.panes.run_forms import WORKLOADS, RunFormKeys
from gpusession.ui.panes.run_launch import ANYWAY_QUESTION, RunLauncher, RunLaunchKeys
from gpusession.ui.panes.run_load import Loaded, RunLoader
from gpusession.ui.panes.run_messages import RunMessages
from gpusession.ui.panes.run_progress import IDLE_TOTAL, RunProgressView, RunRowsTable
from gpusession.ui.panes.run_status import RunStatusView, arrange_keys, footer_order, running_text
from gpusession.ui.panes.run_status import describe as describe_experiment
from gpusession.ui.panes.run_summary import RunSummaryView, SummaryRead
from gpusession.ui.panes.run_views import RunViews
from gpusession.ui.panes.run_words import accepted_words, last_run_words, outcome_words

#: how often (seconds) the pane looks for a run in another process and its new rows
FOLLOW_S = 1.0


class RunPane(RunLaunchKeys, RunFormKeys, RunMessages):
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

    #: The confirm line of ``R`` (D1, D3).
    ANYWAY_QUESTION = ANYWAY_QUESTION

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        #: whether the run that last started is a resume (``u``)
        self.resumed = False
        self.experiments: list[Any] = []
        self.experiment_id: str | None = None
        self.running = False
        self.inflight_what = ""  # what is in flight in this pane's run ("": nothing)
        self.inflight_since = 0.0  # its start, ctx.monotonic() seconds
        self._running_head = ""  # the status's first lines while running (set by _status)
        self.cancel_event = threading.Event()
        self.rows: list[dict[str, Any]] = []
        self.last_outcome = ""
        #: the last run of this pane was refused before it started, past the session limit (D1)
        self.refused_past_limit = False
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
        #: whether the first read of the session is shown
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield RunStatusView(id="run-head")
        yield RunProgressView(id="run-progress")
        yield RunViews(id="run-views")
        yield RunFollowView(self.ctx, id="run-follow")
        yield RunLauncher(self.ctx, id="run-launch")
        yield RunLoader(self.ctx, self._loaded, id="run-load")

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
        """Re-read the defined experiments and the summary of the current one in a thread
        worker (:class:`RunLoader`); the summary says "counting …" until the first read is shown."""
        if not self.loaded:
            self.query_one(RunSummaryView).counting()
        self.query_one(RunLoader).load(self.experiment_id)

    def _loaded(self, found: Loaded) -> None:
        self.loaded = True
        if found.problem:
            self._status(found.problem)
            return
        self.experiments = found.defined
        if self.experiment_id not in {e.id for e in found.defined} or self.experiment_id is None:
            self.experiment_id = found.experiment_id
        if self.experiment_id == found.experiment_id:
            self._show_summary(found.summary)  # reads the last run the status line says
        else:  # chosen meanwhile (a followed run): read it in a worker again
            self.reload()
        self._status()

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
        arrange_keys(self, self.footer_actions())
        self.set_class(self.running, "-running")
        self.query_one(RunProgressView).show_state(
            running=self.running, stands=self.running or self.follow_pid is not None or bool(self.last_outcome),
            last_run=self.last_run, runs_recorded=self.runs_recorded)

    def _running_text(self) -> str:
        return running_text(self._running_head, self.inflight_what, self.ctx.monotonic() - self.inflight_since,
                            self.time_left_text)

    def footer_actions(self) -> tuple[str, ...]:
        """The pane's keys in the footer, the ones this state needs first (:func:`footer_order`)."""
        return footer_order(running=self.running, following=self.follow_pid is not None,
                            defined=self.current_experiment() is not None,
                            refused_past_limit=self.refused_past_limit and bool(self.last_outcome),
                            last_run=self.last_run)

    def action_switch_view(self) -> None:
        self.show_view("run-rows" if self.view == "run-summary" else "run-summary")

    # -- running (the keys r, R, u, c and the worker: run_launch) ---------------------
    def on_run_pane_progress_made(self, msg: RunMessages.ProgressMade) -> None:
        self.query_one(RunProgressView).advance(msg.done, msg.total)

    def on_run_pane_in_flight_changed(self, msg: RunMessages.InFlightChanged) -> None:
        self.inflight_what, self.inflight_since = msg.what, self.ctx.monotonic()
        if self.running:
            self._status()

    def on_run_pane_row_landed(self, msg: RunMessages.RowLanded) -> None:
        r = msg.row
        self.rows.append(r)
        self.query_one(RunRowsTable).add_result(r)
        if self.time_left is not None and r.get("phase") in ("cold", "warm"):
            done = sum(1 for x in self.rows if x.get("phase") in ("cold", "warm"))
            self.time_left_text = self.time_left.words(r, done)
            self._status()
        self.query_one(RunProgressView).row_landed(r)

    def on_run_pane_run_finished(self, msg: RunMessages.RunFinished) -> None:
        """The run ended: its words, judged by the worker (R7, D5); the summary re-read in a worker."""
        self.running = False
        self.inflight_what = ""
        self.time_left = None  # its last words stay in time_left_text
        self.query_one(RunProgressView).ended()
        self.refused_past_limit = msg.refused_past_limit
        self.last_outcome = outcome_words(msg.outcome, msg.error, msg.cancelled, all_failed=msg.all_failed,
                                          refused=msg.refused_past_limit)
        self.last_outcome += msg.verdicts
        self.reload()
        self.show_view("run-summary")
        self._status()

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


__all__ = ["FOLLOW_S", "IDLE_TOTAL", "WORKLOADS", "RunPane", "accepted_words", "outcome_words"]
