"""The parent side of a run: schedule, worker groups, supervision, rows, validation.

Orchestration only: :class:`Runner` schedules the runs, splits them into worker groups,
starts each group and records what its events say; the event loop of a group (timeout,
go/stop, its end) is :mod:`gpusession.bench.supervise`, which leaves one typed
:class:`~gpusession.bench.supervise.GroupReport`, and every result row is built by
:mod:`gpusession.bench.rows` (pure).

Who calls it: ``gpusession demo`` / ``gpusession run`` (headless) and the run pane (from
a Textual thread worker). No torch here (M5): workers are ``python -m
gpusession.bench.worker`` subprocesses started with an argv list (no shell).

For each run the parent writes ``run_started`` / ``run_finished`` to the journal (with a
``run_key``), validates the run's output (V1-V8) and appends its CSV row *the moment the
run finishes* (S7). A failed run — out of memory, an exception, a worker killed by a
signal or timed out — keeps its row: elapsed empty, ``corpus_accepted`` empty (its
output was never validated: a row states what happened), the incident in ``notes``
(R7). A cancel request stops at the next run boundary and the experiment is marked
incomplete in the journal (H-12). While running, the parent's PID is in
``<session>/.run.lock``.

Processes (H-14): each worker is the leader of a process group of its own
(:class:`~gpusession.bench.process.WorkerProcess`), journaled with its PID and start
time, as is each user command it starts. A timeout, an error of the parent or
:meth:`Runner.interrupt` (SIGHUP/SIGTERM, through
:func:`gpusession.core.folder.processes.interrupt_all`) ends the whole group at once; a parent
killed outright takes its workers with it (parent-death signal,
:mod:`gpusession.bench.lifetime`). :meth:`Runner.run` forks every worker from the thread
that calls it and returns only after the last one exited, so that thread lives as long
as the run (the death signal follows the forking thread). Before the first worker
starts, workers and commands of earlier runs that are still alive are ended
(:func:`gpusession.core.folder.processes.end_recorded`).

``on_event`` receives typed runner events of :mod:`gpusession.core.events` (from the
runner's thread): ``Progress``, ``RowAppended``, ``Loaded``, ``EnvironmentObserved``,
``IncidentReported``, ``WorkerStarted``, ``Finished``; :func:`gpusession.core.events.describe`
turns them into words. The journal gets typed records, and the worker's events arrive
typed (:mod:`gpusession.bench.process`). A row's protocol fields (phase, warm-up
iterations) come from what the worker reports it did, never from the definition (R4).

An experiment with ``gpus > 1`` starts each worker through torchrun
(:mod:`gpusession.bench.ranks`); the row is still one per run (elapsed between the ranks'
barriers, memory the maximum over ranks, the ranks in ``notes``), each rank's own figures
go to ``runs/<experiment>/ranks.csv``, and a group that ends part-way (a rank raised in
a run — the group then ends with that run and its row waits for the exit, to name the
rank's exit code — died, or hung past the timeout) is followed by a fresh group for the
runs left.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from gpusession.bench.process import WorkerProcess, describe_exit, outside_kill_advice
from gpusession.bench.ranks import (
    RankFailure,
    error_gist,
    join_timeout_s,
    lost_peer,
    rendezvous_timed_out,
)
from gpusession.bench.rows import (
    LoadSlot,
    base_row,
    count_words,
    died_loading_row,
    died_run_row,
    finished_run_row,
    load_failed_row,
    load_row,
    run_row,
)
from gpusession.bench.run_validation import RunValidation, package_total_minor
from gpusession.bench.stacks import STACK_DIR_ENV
from gpusession.bench.stops import RunStops
from gpusession.bench.supervise import TEARDOWN_GRACE_S, GroupReport, Supervisor
from gpusession.bench.timing import ALLOCATOR_SCOPE, CPU_MEMORY_SCOPE
from gpusession.core.events import (
    AttemptFailedRecord,
    CommandStartedRecord,
    DescendantsEndedRecord,
    EnvironmentObserved,
    Event,
    ExperimentFinishedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    Finished,
    IncidentRecord,
    IncidentReported,
    Loaded,
    LoadFinishedRecord,
    LoadStartedRecord,
    Progress,
    RowAppended,
    RunFinishedRecord,
    RunInterruptedRecord,
    RunnerEvent,
    RunStartedRecord,
    WarmupDoneRecord,
    WorkerCommandStarted,
    WorkerDescendantsEnded,
    WorkerEnvironment,
    WorkerEvent,
    WorkerExitedRecord,
    WorkerIncident,
    WorkerLoaded,
    WorkerLoadedRecord,
    WorkerRunFinished,
    WorkerRunStarted,
    WorkerStarted,
    WorkerStartedRecord,
    WorkerStderrRecord,
    WorkerWarmupDone,
)
from gpusession.core.events.words import interrupted_words
from gpusession.core.experiment.form import resolve_corpus
from gpusession.core.experiment.plan import Experiment, ScheduledRun, schedule, workers_of
from gpusession.core.files.errors import Failure
from gpusession.core.files.safefile import check_writable, make_private_dir, write_private_bytes
from gpusession.core.files.secrets import mask_text
from gpusession.core.folder import journal
from gpusession.core.folder.experiments import get_experiment
from gpusession.core.folder.journal import RunKey
from gpusession.core.folder.processes import end_recorded, on_interrupt
from gpusession.core.folder.recovery import SPEC_PREFIX, remove_worker_specs
from gpusession.core.folder.rendezvous import check_rendezvous_port
from gpusession.core.folder.resume import session_resume_plan
from gpusession.core.folder.session import SESSION_TOML, Session
from gpusession.core.records.outcome import RunOutcome
from gpusession.core.records.results import ResultRow
from gpusession.core.records.summary import accepted_revisions
from gpusession.core.retrieval.status import SUMMARY_JSON, refresh_counts

#: ``1000`` → ``1,000``; ``None`` → ``?`` (user text has thousands separators).
_count = count_words


class Runner:
    """Run one defined experiment of a session (seed 000 §2-§4).

    Args:
        session: the open session.
        experiment_id: an experiment defined in ``session.toml``.
        on_event: called with typed runner events from the runner's thread (see module doc).
        cancel: set it to stop at the next run boundary (H-12).
        python: interpreter for the workers (default: this one).
        device: overrides the experiment's device for this invocation
            (``cpu``/``cuda``/``cuda:N``); ``None`` = the experiment's, else decided in
            the worker.
        torchrun: start the worker through torchrun even for one GPU (a group of one
            rank; ``scripts/gpu-check.sh`` checks the launch path with it).
            With ``gpus > 1`` torchrun is always used.
        clock: returns now (aware UTC) for the session limit and the journal; a fake
            clock in tests (default :func:`gpusession.core.files.clock.utcnow`).
        past_limit: start runs that would end after the session limit (recorded, D1).
        continue_on_reject: a major defect of the first result does not stop the
            experiment (recorded, D3).
        resume: run only the runs of the experiment's stored schedule that have no
            measured row yet, in its order and with their run indexes
            (:mod:`gpusession.core.folder.resume`); a new attempt, journaled as resuming
            the one whose schedule it continues, each of its rows saying so.

    Raises:
        BadInput: unknown experiment.
    """

    def __init__(
        self,
        session: Session,
        experiment_id: str,
        *,
        on_event: Callable[[RunnerEvent], None] | None = None,
        cancel: threading.Event | None = None,
        python: str = sys.executable,
        device: str | None = None,
        torchrun: bool = False,
        clock: Callable[[], datetime] | None = None,
        past_limit: bool = False,
        continue_on_reject: bool = False,
        resume: bool = False,
    ) -> None:
        """Look the experiment up; nothing runs until :meth:`run`."""
        self.clock = clock
        self.resume = resume
        # What every row of a resumed attempt says, per phase (set up by _prepare).
        self._resume_notes: dict[str, str] = {}
        self.past_limit = past_limit
        self.continue_on_reject = continue_on_reject
        # The session limit and the first-result gate (D1, D3), set up by _prepare.
        self._stops: RunStops | None = None
        self.session = session
        self.experiment: Experiment = get_experiment(session, experiment_id)
        self.on_event = on_event or (lambda _e: None)
        self.cancel = cancel or threading.Event()
        self.python = python
        self.device = device
        self.torchrun = torchrun
        self.outcome = RunOutcome()
        self._env: dict[str, Any] = {}
        self._revisions: dict[str, Any] = {}
        self._done = 0
        # Runs ended by an interrupt: they have a row but never finished.
        self._cut = 0
        self._total = 0
        self._worker_died = False
        # Read once from the results CSV in _prepare, then kept up to date per row, so a
        # run never re-reads the whole CSV or the rates file for each row it appends.
        self._accepted_revisions: set[str] = set()
        self._load_counters: dict[str, int] = {}
        self._package_total_minor: int | None = None
        # Warm-up iterations per variant that the current worker reported it performed.
        self._warm_done: dict[str, int] = {}
        # A load failure no other worker can mend stops the experiment at once;
        # rows of an invocation that measured nothing become a failed attempt.
        self._fatal_load: str | None = None
        self._measured = False
        self._keys_written: list[str] = []
        # Runs a fresh rank group runs after a group ended early.
        self._rest: list[ScheduledRun] = []
        # The worker running now and the run key in flight (a load is a run), for
        # interrupt(); interrupt may come from another thread.
        self._current: WorkerProcess | None = None
        self._current_key: str | None = None
        self._interrupt_said = False
        # What each worker event leaves (journal, rows, UI), by the event's type.
        self._handlers: dict[type[WorkerEvent], Callable[[Any, GroupReport], None]] = {
            WorkerEnvironment: self._on_environment,
            WorkerCommandStarted: self._on_command_started,
            WorkerDescendantsEnded: self._on_descendants_ended,
            WorkerLoaded: self._on_loaded,
            WorkerWarmupDone: self._on_warmup_done,
            WorkerRunStarted: self._on_run_started,
            WorkerRunFinished: self._on_run_finished,
            WorkerIncident: self._on_incident,
        }

    def interrupt(self, signal_name: str) -> None:
        """End the run at once: ``signal_name`` (``"SIGHUP"``/``"SIGTERM"``/``"SIGINT"``) arrived.

        The worker's whole group is ended now (not at the next run boundary), no other
        worker starts, and the journal gets a ``run_interrupted`` record naming the run in
        flight; :meth:`run` then releases the lock and returns with
        ``outcome.interrupted`` set (H-14). Callable from a signal handler or
        another thread; a second call changes nothing.
        """
        if self.outcome.interrupted is None:
            self.outcome.interrupted = signal_name
        self.cancel.set()
        w = self._current
        if w is not None:
            w.end_group()

    def preflight(self) -> None:
        """Check every file the run will write, before any measurement.

        The results CSV, the journal, ``summary.json``, ``session.toml``, the run lock,
        the ``runs/<experiment>`` and ``validation/`` folders and any worker spec already
        in ``runs/<experiment>`` must not be symbolic links and must be writable
        (:func:`gpusession.core.files.safefile.check_writable`); otherwise the run would
        measure everything and only then be refused. A rendezvous port another program
        listens on is refused too (H-27). Nothing is written.

        Raises:
            BadInput: one line naming the first file refused, or the port in use.
        """
        s = self.session
        for path in (s.results.path, s.journal_path, s.folder / SUMMARY_JSON,
                     s.folder / SESSION_TOML, s.folder / journal.RUN_LOCK):
            check_writable(path)
        exp_dir = s.runs_dir / self.experiment.id
        for folder in (s.runs_dir, exp_dir, s.validation_dir):
            check_writable(folder, folder=True)
        if exp_dir.is_dir():
            for spec in exp_dir.glob(f"{SPEC_PREFIX}*.json"):
                check_writable(spec)
        check_rendezvous_port(self.experiment.rendezvous, field=f"experiments.{self.experiment.id}.rendezvous")

    # -- helpers ------------------------------------------------------------------------
    def _emit(self, event: RunnerEvent) -> None:
        try:
            self.on_event(event)
        except Exception:  # noqa: BLE001 - a UI callback (any code) must never break the measurement
            pass

    def _journal(self, record: Event) -> None:
        self.session.journal(record)

    def _incident(self, message: str, *, trace: str | None = None, exit: str | None = None) -> None:
        message = mask_text(message)[0]  # what a program said, less any secret (S6)
        trace = mask_text(trace)[0] if trace else trace
        self.outcome.incidents.append(message)
        self._journal(IncidentRecord(experiment_id=self.experiment.id, message=message,
                                     trace=trace, exit=exit))
        self._emit(IncidentReported(message=message))

    def _path(self, value: str | None) -> Path | None:
        return resolve_corpus(self.session.folder, value) if value else None

    def _offsets(self, frame: Any) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for r in frame.filter(frame["experiment_id"] == self.experiment.id).iter_rows(named=True):
            key = (r["phase"], r["variant_id"])
            out[key] = max(out.get(key, 0), r["run_index"] or 0)
        return out

    # -- the run ------------------------------------------------------------------------
    def run(self) -> RunOutcome:
        """Run every scheduled run; return the outcome (also sent as ``finished``)."""
        exp = self.experiment
        s = self.session
        self.preflight()  # nothing is measured that could not be written
        journal.take_lock(s.folder, s.name)  # S7: one runner per session
        forget = on_interrupt(self.interrupt)
        try:
            # Never trust the lock alone: what an earlier run left alive ends first (H-14).
            for msg in end_recorded(journal.read_records(s.journal_path)):
                self._incident(msg)
            self._run(exp)
        finally:
            forget()
            if self._current is not None:  # an error of the parent: the group ends too
                self._current.end_group()
            remove_worker_specs(s.runs_dir / exp.id)  # any a parent's error left
            self._say_interrupted()
            journal.release_lock(s.folder)
        self._emit(Finished(outcome=self.outcome))
        return self.outcome

    def _prepare(self, exp: Experiment) -> list[ScheduledRun]:

        from gpusession.core.gpu.environment import read_concurrent_load

        frame = self.session.results.read()
        offsets = self._offsets(frame)
        self._load_counters = {v: i for (p, v), i in offsets.items() if p == "load"}
        self._accepted_revisions = accepted_revisions(frame)
        self._measured = bool(self._offsets_measured(frame))
        self._package_total_minor = package_total_minor(self.session)
        plan = session_resume_plan(self.session, exp.id) if self.resume else None
        runs = list(plan.missing) if plan is not None else schedule(exp, offsets)
        drawn = [r.variant_id for r in runs if r.phase == "warm"]
        load = read_concurrent_load(own_pids={os.getpid()})
        invocation = {
            "started_at": self._now(),
            "concurrent_load": load.describe(),
            "host_cpu_percent": load.host_cpu_percent,
        }

        def change(doc: dict[str, Any]) -> None:  # on a fresh read: keep others' edits (S7)
            data = doc.setdefault("experiments", {}).setdefault(exp.id, {})
            if plan is None:  # a resume keeps the stored schedule's drawn order
                data["drawn_order"] = drawn
            data["last_invocation"] = invocation

        self.session.update(change)
        self._load_note = load.describe()
        self._journal(ExperimentStartedRecord(
            experiment_id=exp.id, drawn_order=drawn, runs=[r.run_key for r in runs],
            concurrent_load=self._load_note, device_override=self.device,
            resumes=plan.attempt if plan is not None else None,
            message=plan.words() if plan is not None else None,
        ))
        if plan is not None:
            self._resume_notes = resume_notes(plan.attempt, warmed=exp.warmup_iterations > 0)
        self._stops = RunStops(self.session, exp, frame=frame, records=self.session.journal_records(),
                               journal=self._journal, clock=self._now, past_limit=self.past_limit,
                               continue_on_reject=self.continue_on_reject)
        return runs

    def _now(self) -> datetime:
        if self.clock is not None:
            return self.clock()
        from gpusession.core.files import clock

        return clock.utcnow()

    @property
    def stops(self) -> RunStops:
        """The session limit and the first-result gate of this invocation (D1, D3)."""
        assert self._stops is not None, "set up when the run starts"
        return self._stops

    def _run(self, exp: Experiment) -> None:
        runs = self._prepare(exp)
        self._total = len(runs)
        self._emit(Progress(done=0, total=self._total))
        self._validation = RunValidation(self.session, exp, self._path(exp.corpus))
        if self._validation.problem:
            self._incident(self._validation.problem)
        groups = workers_of(runs)
        stopped = False
        while groups:
            name, group = groups.pop(0)
            if self.cancel.is_set():
                stopped = True
                break
            if not self.stops.may_start(group[0], new_worker=True):  # D1, D3: a run boundary
                break
            self._rest = []
            if not self._run_worker(exp, name, group):
                stopped = self.cancel.is_set() or stopped
                if self.cancel.is_set() or self._fatal_load is not None or self.stops.stop:
                    break
            if self._rest:  # a rank group died; a fresh group runs what is left
                groups.insert(0, (self._rest[0].worker, self._rest))
        if self._fatal_load is not None:
            self._incident(self._fatal_load)
        if not self._measured and self._keys_written and not self.cancel.is_set():
            self._journal(AttemptFailedRecord(
                experiment_id=exp.id, attempt=self._attempt_number(exp.id),
                run_keys=list(self._keys_written), workload=exp.workload,
                message=self._fatal_load or "nothing measured: no worker loaded the workload",
            ))
        finished = self._done - self._cut  # a run ended by an interrupt never finished
        ran_all = finished == self._total
        interrupted = self.outcome.interrupted
        self._say_interrupted()
        stop = self.stops.stop if interrupted is None and not ran_all else None
        self.outcome.stopped, self.outcome.stopped_words = stop or (None, None)
        self.outcome.cancelled = (self.cancel.is_set() and not ran_all and interrupted is None
                                  and stop is None)
        self.outcome.completed = ran_all and not self.outcome.cancelled and not self._worker_died
        end = ExperimentFinishedRecord if self.outcome.completed else ExperimentIncompleteRecord
        cause = (f" (interrupted by {interrupted})" if interrupted else  # the cause, not its effect
                 (f" ({stop[1]})" if stop else "")
                 + (" (a worker died or timed out)" if self._worker_died else "")
                 + (" (cancelled at a run boundary)" if self.outcome.cancelled else ""))
        self._journal(end(
            experiment_id=exp.id, rows_written=self.outcome.rows_written,
            runs_done=finished, runs_scheduled=self._total, cancelled=self.outcome.cancelled,
            message=(None if self.outcome.completed else
                     f"incomplete: {finished} of {self._total} runs done{cause}"),
            stopped=stop[0] if stop else None,
        ))
        _ = stopped

    def _say_interrupted(self) -> None:
        """Journal ``run_interrupted`` once, naming the run in flight."""
        sig = self.outcome.interrupted
        if sig is None or self._interrupt_said:
            return
        self._interrupt_said = True
        key = self._current_key
        words = interrupted_words(sig, key)
        self.outcome.incidents.append(words)
        try:
            self._journal(RunInterruptedRecord(signal=sig, run_key=key,
                                               experiment_id=self.experiment.id, message=words))
        except OSError:
            pass  # the disk refused it: the lock is still released by run()
        self._emit(IncidentReported(message=words))

    def _spec(self, exp: Experiment, name: str, group: list[ScheduledRun]) -> dict[str, Any]:
        runs = []
        for r in group:
            st = exp.setting(r.variant_id)
            runs.append({"phase": r.phase, "variant_id": r.variant_id, "run_index": r.run_index,
                         "run_key": r.run_key, **st})
        warm = group[0].phase == "warm"
        params = {k: (str(self._path(v)) if k.endswith("_dir") else v) for k, v in exp.params.items()}
        return {
            "worker": name,
            "experiment": {**exp.to_toml(), "id": exp.id, "params": params},
            "device": self.device or exp.device,
            "corpus": str(self._path(exp.corpus)) if exp.corpus else None,
            "output_dir": str(self.session.runs_dir / exp.id),
            "runs": runs,
            "warmup": ([{"variant_id": v, **exp.setting(v)} for v in exp.variant_ids] if warm else []),
            "warmup_iterations": exp.warmup_iterations if warm else 0,
            "code_dir": str(Path(__file__).resolve().parent) if exp.workload in ("bbc-news", "synthetic-mlp")
            else exp.params.get("code_dir"),
        }

    def _base_row(self) -> ResultRow:
        """The fields every row of this run shares, as observed so far (:func:`rows.base_row`)."""
        pkg = self.session.package
        return base_row(self.experiment, environment=self._env, revisions=self._revisions,
                        corpus_revision=self._validation.corpus_revision,
                        duration_days=pkg.days, lots=pkg.lots,
                        package_total_usd_minor=self._package_total_minor)

    def _append(self, row: ResultRow) -> None:
        stops = self._stops
        if stops is not None:
            stops.seen_row(row.phase, row.variant_id, row.elapsed_seconds)
            if stops.past_limit_note:  # D1: the override is in every row it let start
                row = row.replace(notes="; ".join(n for n in (row.notes, stops.past_limit_note) if n))
        if self._resume_notes:  # a resumed attempt says so in each of its rows
            said = self._resume_notes.get(str(row.phase), self._resume_notes["load"])
            row = row.replace(notes="; ".join(n for n in (row.notes, said) if n))
        if row.corpus_accepted and row.corpus_revision is not None:
            self._accepted_revisions.add(row.corpus_revision)
        # K4: distinct accepted corpora of the session, never a count of rows.
        row = row.replace(accepted_unique_corpora=len(self._accepted_revisions))
        self.session.results.append(row)
        refresh_counts(self.session.folder)  # summary.json for `gpusession status`
        self.outcome.rows_written += 1
        if row.phase != "load" or row.elapsed_seconds is not None:
            self._measured = True
        self._keys_written.append(f"{row.experiment_id}:{row.phase}:{row.variant_id}:{row.run_index}")
        # A cold or warm row ends one scheduled run: it is the next one counted (load rows are not).
        self._emit(RowAppended(row=row, done=None if row.phase == "load" else self._done + 1,
                               total=self._total))

    def _run_worker(self, exp: Experiment, name: str, group: list[ScheduledRun]) -> bool:
        """Run one worker group from spec to exit; True when it ran its share to the end.

        The runner starts the worker, a :class:`~gpusession.bench.supervise.Supervisor`
        watches it and passes each event to :meth:`_on_worker_event` as it arrives (rows
        and journal at once, S7); what is left after the exit comes from the group's
        :class:`~gpusession.bench.supervise.GroupReport` (:meth:`_after_exit`).
        """
        variant = LoadSlot.variant_of(group)
        slot = LoadSlot.of(exp.id, variant, self._load_index(exp, variant))
        spec_path = self._write_spec(exp, name, group, slot)
        env, stack_dir = self._worker_env(exp)
        self._warm_done = {}
        # The load is a timed run too: journal it as in flight before the worker starts,
        # so that a crash while it loads is recovered as an incident row on reopen (S7).
        self._journal(LoadStartedRecord(worker=name, **self._load_fields(slot)))
        self._current_key = slot.key.format()
        w = WorkerProcess(self._worker_argv(exp, spec_path, env), env)
        self._current = w
        if self.outcome.interrupted is not None:  # the signal came while it started
            w.end_group()
        self._journal(WorkerStartedRecord(experiment_id=exp.id, worker=name, pid=w.proc.pid,
                                          create_time_s=w.ident.create_time_s))
        self._emit(WorkerStarted(worker=name, pid=w.proc.pid, waiting_for_nodes=self._waiting_words(exp, name)))
        rep = GroupReport(name=name, runs={r.run_key: r for r in group}, load=slot)
        sup = Supervisor(w, rep, timeout_s=exp.run_timeout_s, cancel=self.cancel,
                         ranked=self._ranked(exp), stack_dir=stack_dir, world_size=exp.gpus * exp.nodes,
                         may_start=lambda key: self.stops.may_start(rep.runs[key], new_worker=False))
        sup.watch(self._on_worker_event)
        self._say_interrupted()  # before the rows: the journal says why the worker died
        sup.reap(spec_path)
        self._current = None
        return self._after_exit(exp, rep)

    def _write_spec(self, exp: Experiment, name: str, group: list[ScheduledRun], slot: LoadSlot) -> Path:
        """Write the group's worker spec, private, under ``runs/<experiment>/``; return its path."""
        s = self.session
        spec_dir = s.runs_dir / exp.id
        make_private_dir(spec_dir, root=s.folder)  # 0700, never through a link
        spec_path = spec_dir / f"{SPEC_PREFIX}{name}.json"
        spec = self._spec(exp, name, group)
        spec["load_run_key"] = slot.key.local  # the load's key in ranks.csv
        write_private_bytes(spec_path, json.dumps(spec, default=str).encode())
        return spec_path

    def _worker_env(self, exp: Experiment) -> tuple[dict[str, str], str | None]:
        """The worker's environment (this package first on ``PYTHONPATH``) and its stack folder.

        A torchrun group gets a fresh folder where each rank says where it stands when a
        run times out (:mod:`gpusession.bench.stacks`); one process gets ``None``.
        """
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        stack_dir = tempfile.mkdtemp(prefix="gpusession-stacks-") if self._ranked(exp) else None
        env.pop(STACK_DIR_ENV, None)
        if stack_dir is not None:
            env[STACK_DIR_ENV] = stack_dir
        return env, stack_dir

    def _load_fields(self, slot: LoadSlot) -> dict[str, Any]:
        """The journal fields that name a load as a run."""
        return dict(run_key=slot.key.format(), experiment_id=self.experiment.id,
                    variant_id=slot.variant_id, phase="load", run_index=slot.run_index)

    def _close_load(self, rep: GroupReport, *, ok: bool) -> None:
        """Journal the group's load as finished, once."""
        if rep.load_open:
            self._journal(LoadFinishedRecord(ok=ok, **self._load_fields(rep.load)))
            rep.load_open = False

    # -- what each worker event leaves, as it arrives (S7) -------------------------------
    def _on_worker_event(self, ev: WorkerEvent, rep: GroupReport) -> None:
        """Record one worker event: journal, rows, UI (the :data:`supervise.Sink` of a group)."""
        handler = self._handlers.get(type(ev))
        if handler is not None:
            handler(ev, rep)

    def _on_environment(self, ev: WorkerEnvironment, rep: GroupReport) -> None:
        self._env = dict(ev.environment)
        # rank PIDs go to the journal (worker_loaded), not to session.toml
        rep.rank_ids = {k: self._env.pop(k, None)
                        for k in ("rank_pids", "rank_create_times_s", "rank_hosts")}
        rep.leader = self._env.get("leader_rank")
        self._store_environment(self.experiment)
        self._emit(EnvironmentObserved(environment=self._env))

    def _on_command_started(self, ev: WorkerCommandStarted, rep: GroupReport) -> None:
        self._journal(CommandStartedRecord(experiment_id=self.experiment.id, worker=rep.name,
                                           pid=ev.pid, create_time_s=ev.create_time_s))

    def _on_descendants_ended(self, ev: WorkerDescendantsEnded, rep: GroupReport) -> None:
        self._journal(DescendantsEndedRecord(experiment_id=self.experiment.id, worker=rep.name,
                                             where=ev.where, pids=ev.pids, names=ev.names))

    def _on_loaded(self, ev: WorkerLoaded, rep: GroupReport) -> None:
        rep.loaded = True
        self.stops.worker_loaded()
        self._revisions = ev.revisions or {}
        self._emit(Loaded(worker=rep.name, elapsed_s=ev.elapsed_s))
        self._journal(WorkerLoadedRecord(experiment_id=self.experiment.id, worker=rep.name,
                                         elapsed_s=ev.elapsed_s, rss_peak_bytes=ev.rss_peak_bytes,
                                         **rep.rank_ids))
        if ev.elapsed_s is not None:
            self._append(load_row(self._base_row(), rep.load, ev, rep.name))
        if rep.load_open:
            self._close_load(rep, ok=True)
            self._current_key = None

    def _on_warmup_done(self, ev: WorkerWarmupDone, rep: GroupReport) -> None:
        self._warm_done = dict(ev.per_variant)
        self.stops.warmup_done()
        self._journal(WarmupDoneRecord(experiment_id=self.experiment.id, worker=rep.name,
                                       iterations=ev.iterations, runs=ev.runs,
                                       per_variant=dict(ev.per_variant)))

    def _on_run_started(self, ev: WorkerRunStarted, rep: GroupReport) -> None:
        run = rep.runs[ev.run_key]
        self._current_key = self._key(run).format()
        self.outcome.started_runs += 1
        self._journal(RunStartedRecord(
            run_key=self._key(run).format(), experiment_id=self.experiment.id,
            variant_id=run.variant_id, phase=run.phase, run_index=run.run_index, worker=rep.name))

    def _on_run_finished(self, ev: WorkerRunFinished, rep: GroupReport) -> None:
        if not rep.is_torn_by(ev):  # a torn run's row waits for the group's exit
            self._finish_run(self.experiment, rep.runs[ev.run_key], ev)
        self._current_key = None

    def _on_incident(self, ev: WorkerIncident, rep: GroupReport) -> None:
        exp = self.experiment
        said = error_gist(ev.message) or mask_text(ev.message or "")[0]  # never torch's banner
        msg = f"{ev.where}: {ev.error_type}: {said}" + (" (out of memory)" if ev.oom else "")
        rep.last_incident = msg
        rep.last_error = f"{ev.error_type}: {said}"
        if ev.where == "load" and unmendable_load(ev):
            # Every worker loads the same model the same way: say it once and stop.
            self._fatal_load = self._load_fatal_words(exp, rep.name, ev, said)
            self._journal(IncidentRecord(experiment_id=exp.id, message=f"worker {rep.name}: {msg}",
                                         trace=ev.trace))
        else:
            self._incident(f"worker {rep.name}: {msg}", trace=ev.trace)
        if ev.where == "load":
            self._append(load_failed_row(self._base_row(), rep.load, msg))  # no corpus validated
            self._close_load(rep, ok=False)

    def _load_fatal_words(self, exp: Experiment, name: str, ev: WorkerIncident, said: str | None) -> str:
        """The one sentence of a load failure that stops the experiment, with what to do."""
        return (
            f"the workload {exp.workload} could not load: {ev.error_type}: {said}. "
            f"The experiment stopped at {'the first worker' if not self._keys_written else 'worker'} "
            f"({name}); {'nothing' if not self._measured else 'nothing more'} was measured. "
            + (self._device_advice(exp) if ev.error_type == "DeviceUnavailable" else
               TORCH_MISSING_ADVICE if torch_missing(said) else
               f"Fix the workload or its definition (gpusession experiment "
               f"{self.session.name} define --id {exp.id} …) and run again."))

    # -- what the group's exit leaves ---------------------------------------------------
    def _after_exit(self, exp: Experiment, rep: GroupReport) -> bool:
        """Journal the exit, write the rows it still owes; True when the group ran its share."""
        code = rep.code
        if rep.stderr:
            self._journal(WorkerStderrRecord(experiment_id=exp.id, worker=rep.name, lines=mask_text("\n".join(rep.stderr))[0].split("\n")[-100:]))  # masked whole, then cut (S6)
        self._journal(WorkerExitedRecord(experiment_id=exp.id, worker=rep.name, exit=describe_exit(code)))
        if rep.torn is not None:  # the row of the failed run, with how the group ended
            run, ev = rep.torn
            self._finish_run(exp, run, ev,
                             ended=self._teardown_words(exp, ev, rep.rank_cause, code, rep.forced))
            code = 0 if not rep.forced else code  # the group ended as it should: no worker died
        died = code != 0
        if died or rep.timed_out:
            self._group_died(exp, rep, code)
        if rep.load_open:  # the worker ended before loading; any row was written above
            self._journal(LoadFinishedRecord(ok=False, **self._load_fields(rep.load)))
        missing = rep.missing()
        self._rest = self._fresh_group_runs(exp, list(rep.runs.values()), missing,
                                            died or rep.timed_out or rep.torn is not None
                                            or rep.unrecoverable, any_worker=rep.unrecoverable)
        if missing and not self.cancel.is_set() and self._fatal_load is None and not self.stops.stop:
            fresh = " in this worker (a fresh worker runs them)" if rep.unrecoverable else \
                " in this group (a fresh group runs them)"
            self._incident(f"worker {rep.name}: {len(missing)} scheduled run(s) not run"
                           + (fresh if self._rest else "") + ": "
                           + ", ".join(r.run_key for r in missing[:10]))
        return not rep.stopped and not missing and not died

    def _group_died(self, exp: Experiment, rep: GroupReport, code: int | None) -> None:
        """A group that exited non-zero or timed out: its incident, and the row it cut short (R7)."""
        self._worker_died = True
        detail = self._death_detail(exp, rep, code)
        if exp.nodes > 1 and not rep.heard and self._fatal_load is None and (
                rep.timed_out or rendezvous_timed_out(rep.stderr)):
            # No rank ever spoke: the other nodes did not come (the join timeout, or the
            # run timeout while waiting). Every next group would wait as long.
            self._fatal_load = self._no_join_words(exp, rep.name)
        if rep.in_flight is not None:
            self._failed_row(exp, rep.in_flight, f"incident: {detail} during this run")
            rep.finished_keys.add(rep.in_flight.run_key)
        elif not rep.loaded and (code != 3 or rep.load_open):  # 3 with no load row: a rank's
            self._append(died_loading_row(self._base_row(), rep.load, detail))  # no corpus validated
        if self._fatal_load is None:
            self._incident(detail, exit=describe_exit(code))
        else:  # said once, in the fatal message; kept in the journal
            self._journal(IncidentRecord(experiment_id=exp.id, message=detail, exit=describe_exit(code)))

    def _death_detail(self, exp: Experiment, rep: GroupReport, code: int | None) -> str:
        """How a group died, in one sentence: ``"worker NAME exited with code 1 after …"``."""
        cause = rep.rank_cause
        how = (f"timed out after {exp.run_timeout_s:g} s and was killed"
               + (f" ({rep.hung})" if rep.hung else "") if rep.timed_out
               else f"was ended at once (interrupted by {self.outcome.interrupted})"
               if self.outcome.interrupted else describe_exit(code))
        last = error_gist(rep.last_stderr)
        after = error_gist(rep.last_incident)
        world = exp.gpus * exp.nodes
        if cause is not None and not rep.timed_out and self._survivor(exp, cause, rep.leader, rep.last_error):
            # the rank torchrun names here only lost its peer; never blame it
            seen = cause.error if lost_peer(cause.error) else error_gist(rep.last_error)
            where = "on another node" if exp.nodes > 1 else "that torchrun did not name"
            how = (f": the group lost a rank {where}; rank {cause.rank} of {world} (on this node) "
                   f"lost its connection to it" + (f" ({seen})" if seen else "")
                   + f" and {how}, and torchrun ended the group")
            after = last = None
        elif cause is not None and not rep.timed_out:
            how = f" rank {cause.rank} of {world} {how} (torchrun ended the group)"
            last = cause.error  # torchrun's own last line is its banner
        else:
            how = f" {how}"
        advice = None if rep.timed_out or self.outcome.interrupted else outside_kill_advice(code)
        return (f"worker {rep.name}{how}" + (f" after {after}" if after else "")
                + (f"; last stderr: {last}" if last else "") + (f"; {advice}" if advice else ""))

    def _no_join_words(self, exp: Experiment, name: str) -> str:
        """The other nodes never joined: the sentence that stops the experiment, with what to do."""
        return (
            f"the other {exp.nodes - 1} node(s) did not join the rendezvous at {exp.rendezvous} "
            f"within {join_timeout_s(exp.run_timeout_s)} s. The experiment stopped at worker {name}; "
            f"{'nothing' if not self._measured else 'nothing more'} was measured. On each other node "
            f"run `gpusession agent {self.session.name} --experiment {exp.id}` (the same session "
            "folder and corpus paths), then run again.")

    def _offsets_measured(self, frame: Any) -> int:
        """Rows of this experiment that measured something (not a failed load)."""
        import polars as pl

        mine = frame.filter(pl.col("experiment_id") == self.experiment.id)
        return int(mine.filter((pl.col("phase") != "load") | pl.col("elapsed_seconds").is_not_null()).height)

    def _attempt_number(self, exp_id: str) -> int:
        return 1 + sum(isinstance(r, AttemptFailedRecord) and r.experiment_id == exp_id
                       for r in self.session.journal_records())

    # -- several ranks through torchrun -------------------------------------------------
    def _worker_argv(self, exp: Experiment, spec_path: Path, env: dict[str, str]) -> list[str]:
        """The worker's command line: plain, or through torchrun when ``exp.gpus > 1``.

        A plain worker never inherits a torchrun environment of the caller's shell
        (``RANK``, ``WORLD_SIZE``…): it would take itself for a rank. ``env`` is changed
        in place.
        """
        from gpusession.bench.ranks import LEADER_ENV, rendezvous_id, torchrun_argv

        module = ["-m", "gpusession.bench.worker", "--spec", str(spec_path)]
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                  "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", LEADER_ENV):
            env.pop(k, None)
        if not self._ranked(exp):
            return [self.python, *module]
        env[LEADER_ENV] = "1"  # this node's local rank 0 talks to the runner
        return torchrun_argv(self.python, exp.gpus, module, nodes=exp.nodes,
                             rendezvous=exp.rendezvous,
                             run_id=rendezvous_id(exp.id, spec_path.stem.removeprefix(SPEC_PREFIX)),
                             join_timeout_s=join_timeout_s(exp.run_timeout_s))

    def _device_advice(self, exp: Experiment) -> str:
        """What to do when the device asked for is not there."""
        more = (f", or define the experiment with fewer GPUs per node (--gpus; it asks for {exp.gpus})"
                if exp.gpus > 1 else "")
        return (f"Run on the CPU (gpusession run {self.session.name} --experiment {exp.id} --device cpu){more}, "
                "or check which GPUs this torch sees: python3 -c 'import torch; print(torch.cuda.device_count())'.")

    def _waiting_words(self, exp: Experiment, name: str) -> str | None:
        """What a group over several nodes waits for, and how to start it; else ``None``."""
        if exp.nodes <= 1:
            return None
        return (f"group {name}: waiting up to {join_timeout_s(exp.run_timeout_s)} s for the other "
                f"{exp.nodes - 1} node(s) at {exp.rendezvous}; on each, run "
                f"`gpusession agent {self.session.name} --experiment {exp.id}`")

    def _ranked(self, exp: Experiment) -> bool:
        """Whether the worker runs as a torchrun group."""
        return exp.gpus > 1 or exp.nodes > 1 or self.torchrun

    def _fresh_group_runs(self, exp: Experiment, group: list[ScheduledRun],
                          missing: list[ScheduledRun], ended: bool, *,
                          any_worker: bool = False) -> list[ScheduledRun]:
        """What a fresh torchrun group (or, ``any_worker``, a fresh worker) runs after one ended early.

        Only for ``gpus > 1`` or a worker that ended after a sticky GPU error
        (``any_worker``), not after a cancel, and only when the ended group ran at
        least one run (a group that dies while loading would die again).
        """
        if (not (self._ranked(exp) or any_worker) or not ended or self.cancel.is_set() or self.stops.stop
                or len(missing) >= len(group)):
            return []
        return [replace(r, worker=self._fresh_name(r.worker)) for r in missing]

    @staticmethod
    def _fresh_name(name: str) -> str:
        """``warm`` → ``warm-again-2`` → ``warm-again-3``: the worker name of a fresh group."""
        base, sep, n = name.rpartition("-again-")
        return f"{base}-again-{int(n) + 1}" if sep and n.isdigit() else f"{name}-again-2"

    def _teardown_words(self, exp: Experiment, ev: WorkerRunFinished, cause: RankFailure | None,
                        code: int | None, forced: bool) -> str:
        """How a group ended after its rank ``ev.failed_rank`` failed a run.

        Example: ``"the group ended with this run: rank 1 of 2 exited with code 5"``.
        """
        world = exp.gpus * exp.nodes
        if forced:
            how = (f"it did not end within {TEARDOWN_GRACE_S:g} s and was ended "
                   f"(launcher {describe_exit(code)})")
        elif cause is not None and cause.rank == ev.failed_rank:
            how = f"rank {cause.rank} of {world} {describe_exit(cause.exitcode)}"
        else:
            how = f"launcher {describe_exit(code)}"
        return f"the group ended with this run: {how}"

    @staticmethod
    def _survivor(exp: Experiment, cause: RankFailure, leader: int | None, last_error: str | None) -> bool:
        """Whether the failed rank seen here only lost a peer that failed first.

        True when its error says a peer closed or reset the connection, or -- the leader
        unknown (the group never reported its ranks) -- when the group spans several
        nodes, torchrun has no error of the rank and the runner's last incident says so.
        """
        if cause.lost_peer:
            return True
        return (leader is None and exp.nodes > 1 and cause.error is None and lost_peer(last_error))

    def _key(self, run: ScheduledRun) -> RunKey:
        return run.key(self.experiment.id)

    def _load_index(self, exp: Experiment, variant: str) -> int:
        n = self._load_counters.get(variant, 0) + 1
        self._load_counters[variant] = n
        return n

    def _store_environment(self, exp: Experiment) -> None:
        env = {k: v for k, v in self._env.items() if v is not None}
        env["observed_at"] = self._now()
        env["concurrent_load"] = getattr(self, "_load_note", None)

        def change(doc: dict[str, Any]) -> None:  # on a fresh read: keep others' edits (S7)
            doc["environment"] = env
            doc.setdefault("experiments", {}).setdefault(exp.id, {})["environment"] = env

        self.session.update(change)

    def _failed_row(self, exp: Experiment, run: ScheduledRun, note: str) -> None:
        """The row and journal record of a run its worker's end cut short (R7)."""
        self._append(died_run_row(self._base_row(), exp, run, self._warm_done, note))
        self._journal(RunFinishedRecord(
            run_key=self._key(run).format(), experiment_id=exp.id, variant_id=run.variant_id,
            phase=run.phase, run_index=run.run_index, ok=False, message=note))
        if self.outcome.interrupted is not None:  # ended by the signal: not a finished run
            self._cut += 1
        self._progress(run)

    def _progress(self, run: ScheduledRun) -> None:
        self._done += 1
        self._emit(Progress(done=self._done, total=self._total, variant_id=run.variant_id,
                            phase=run.phase, run_index=run.run_index))

    def _finish_run(self, exp: Experiment, run: ScheduledRun, ev: WorkerRunFinished,
                    *, ended: str | None = None) -> None:
        """Append the row of a finished run and journal it (R3, R7).

        ``ended``: for a run whose rank failed under torchrun, how the group ended with it,
        put in the notes and the incident. A run that returned has its output validated
        first (V1-V8); a failed one holds no verdict.
        """
        row = run_row(self._base_row(), exp, run, phase=ev.phase, warmup_iterations=ev.warmup_iterations)
        validation = self._validation.validate(Path(str(ev.output)), run) if ev.ok else None
        row, incident = finished_run_row(row, run, ev, validation=validation, ended=ended,
                                         load_note=self._load_note)
        if incident is not None:
            self._incident(incident)
        if ev.ok and validation is not None and validation[0]:  # a verdict: the gate looks (D3)
            self.stops.first_result(run, self._validation.last_report, self._validation.last_path)
        self._append(row)
        self._journal(RunFinishedRecord(
            run_key=self._key(run).format(), experiment_id=exp.id, variant_id=run.variant_id,
            phase=run.phase, run_index=run.run_index, ok=bool(ev.ok),
            elapsed_s=ev.elapsed_s, event_elapsed_s=ev.event_elapsed_s, event_stream=ev.event_stream,
            rss_peak_bytes=ev.rss_peak_bytes, expected_memory=ev.expected_memory,
            truncated=ev.truncated or 0, tokens=ev.tokens, context=ev.context,
            unmeasured_pass=ev.unmeasured_pass,
            memory_scope=(ALLOCATOR_SCOPE if ev.peak_allocated_bytes is not None
                          else CPU_MEMORY_SCOPE),
        ))
        self._progress(run)


def resume_notes(attempt: int, *, warmed: bool = True) -> dict[str, str]:
    """What each row of a resumed attempt says, by phase (``load``, ``cold``, ``warm``).

    A resume starts new workers: the warm runs come after a new load and warm-up
    (``warmed``: the experiment has warm-up iterations), never after the ended attempt's;
    each cold run is in a fresh process, as always.
    """
    head = f"resumed after attempt {attempt} ended early"
    return {
        "load": f"{head}: a new worker for the runs it left",
        "cold": f"{head}; in a fresh process, as every cold run",
        "warm": f"{head}; a new worker loaded" + (" and warmed up again" if warmed else "") + " before it",
    }


#: What to do when a Python workload meets a Python without torch: the user's own build,
#: matched to the machine (a CUDA build on a ROCm host, or a CPU one on a GPU, is wrong).
TORCH_MISSING_ADVICE = (
    "Install the torch build that matches this machine's CUDA or ROCm (pick it at "
    "https://pytorch.org/get-started/locally/; on a CPU-only machine `pip install torch`).")


def torch_missing(message: str | None) -> bool:
    """Whether a load failure's words say torch itself is not installed."""
    return bool(message) and "No module named 'torch'" in str(message)


def check_torch_for(exp: Experiment) -> None:
    """Refuse, before anything runs, a Python workload in a Python that has no torch.

    The home side installs no torch (pull, report, compare need none); a Python
    workload and the built-ins do, a command workload does not. Without this the
    first worker would start, fail to load and only then say so.

    Raises:
        Failure: one line: the workload, this Python, and :data:`TORCH_MISSING_ADVICE`.
    """
    import importlib.util

    if exp.workload == "command" or importlib.util.find_spec("torch") is not None:
        return
    raise Failure(f"not started: the workload {exp.workload} needs torch, and this Python "
                  f"({sys.executable}) has none. {TORCH_MISSING_ADVICE} A command workload "
                  "(--workload command) needs no torch.")


#: Exception types of a load failure that another worker would hit the same way: the
#: workload does not import, its factory or definition is refused, or it breaks the
#: load/predict contract. An out-of-memory is never one of them (per variant).
UNMENDABLE_LOAD_ERRORS = frozenset({
    "BadInput", "ImportError", "ModuleNotFoundError", "SyntaxError", "NameError",
    "AttributeError", "TypeError", "ValueError", "KeyError", "NotImplementedError",
    "FileNotFoundError", "DeviceUnavailable",
})


def unmendable_load(ev: WorkerIncident) -> bool:
    """Whether a load incident ends the whole experiment at once.

    Args:
        ev: the worker's ``incident`` event with ``where == "load"``.

    Returns:
        ``True`` for a failure no retry or other worker can mend
        (:data:`UNMENDABLE_LOAD_ERRORS`); ``False`` for an out-of-memory (it stays per
        variant, R7) and for anything else (a device error may be one worker's).
    """
    return not ev.oom and (ev.error_type or "") in UNMENDABLE_LOAD_ERRORS


__all__ = ["Runner", "RunOutcome", "TORCH_MISSING_ADVICE", "UNMENDABLE_LOAD_ERRORS", "check_torch_for",
           "describe_exit", "resume_notes", "torch_missing", "unmendable_load"]
