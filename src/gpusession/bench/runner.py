"""The parent side of a run: schedule, worker groups, supervision, rows, validation.

Orchestration only: :class:`Runner` schedules the runs, splits them into worker groups,
starts each group, holds the stops (the session limit, a defective first result) and the
workers' lifetimes. The event loop of a group (timeout, go/stop, its end) is
:mod:`gpusession.bench.supervise`, which leaves one typed
:class:`~gpusession.bench.supervise.GroupReport`; what the events and the report leave in
the journal and the results CSV is :class:`gpusession.bench.recorder.Recorder` (no
process, no clock of its own); every result row is built by :mod:`gpusession.bench.rows`
(pure) and every sentence by :mod:`gpusession.bench.run_words`.

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
(:func:`gpusession.core.folder.processes.end_recorded`), those recorded after the offset
the last finished invocation's check reached (:mod:`gpusession.core.folder.leftover_check`).

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

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from gpusession.bench.launch import (
    Launcher,
    ProcessLauncher,
    WorkerHandle,
    worker_argv,
    worker_env,
    worker_spec,
    write_spec,
)
from gpusession.bench.process import describe_exit
from gpusession.bench.program_digest import command_code_revision
from gpusession.bench.recorder import UNMENDABLE_LOAD_ERRORS, Recorder, unmendable_load
from gpusession.bench.row_record import program_folder
from gpusession.bench.rows import LoadSlot, count_words
from gpusession.bench.run_words import (
    TORCH_MISSING_ADVICE,
    resume_notes,
    torch_missing,
    waiting_words,
)
from gpusession.bench.stops import RunStops
from gpusession.bench.supervise import GroupReport, Supervisor
from gpusession.core.events import ExperimentStartedRecord, Finished, RunnerEvent
from gpusession.core.events.reading import read_records_naming
from gpusession.core.experiment.form import resolve_corpus
from gpusession.core.experiment.plan import (
    Experiment,
    ScheduledRun,
    check_params_reach,
    schedule,
    workers_of,
)
from gpusession.core.files.digest import sha256_file
from gpusession.core.files.errors import Failure
from gpusession.core.files.safefile import check_writable
from gpusession.core.folder import journal
from gpusession.core.folder.code_pin import check_same_code
from gpusession.core.folder.corpus_pin import check_one_revision
from gpusession.core.folder.experiments import get_experiment
from gpusession.core.folder.leftover_check import CheckedMark, end_leftovers, keep_checked
from gpusession.core.folder.processes import on_interrupt
from gpusession.core.folder.recovery import SPEC_PREFIX, remove_worker_specs
from gpusession.core.folder.rendezvous import check_rendezvous_port
from gpusession.core.folder.resume import session_resume_plan
from gpusession.core.folder.session import SESSION_TOML, Session
from gpusession.core.records.outcome import RunOutcome
from gpusession.core.retrieval.status import SUMMARY_JSON


def default_launcher() -> Launcher:
    """The launcher of a runner made without one: each worker a subprocess (H-14)."""
    return ProcessLauncher()


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
        launcher: what starts each worker (default :func:`default_launcher`: a
            subprocess each); a test passes one that replays typed events in process.

    Attributes:
        recorder: what the runs leave in the journal and the results (:class:`Recorder`).

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
        launcher: Launcher | None = None,
    ) -> None:
        """Look the experiment up; nothing runs until :meth:`run`."""
        self.clock = clock
        self.resume = resume
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
        self.launcher = launcher or default_launcher()
        self.recorder = Recorder(session, self.experiment, outcome=self.outcome,
                                 emit=self._emit, now=self._now)
        # Loads per variant so far (each load is a run with an index), set up by _prepare.
        self._load_counters: dict[str, int] = {}
        # Runs a fresh rank group runs after a group ended early.
        self._rest: list[ScheduledRun] = []
        # The worker running now, for interrupt(); interrupt may come from another thread.
        self._current: WorkerHandle | None = None

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
        listens on is refused too (H-27), a parameter the program would never receive
        (A3), another corpus (V5) or program (R10) than the rows'. Nothing is written.

        Raises:
            BadInput: one line naming the first file refused, the port, corpus or code.
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
        check_params_reach(self.experiment)  # a param stored before A3 that the program never gets
        corpus = self._path(self.experiment.corpus)
        if corpus is not None and corpus.is_file():  # V5: one corpus revision per experiment
            check_one_revision(s, self.experiment.id, sha256_file(corpus))
        check_command_code(s, self.experiment)  # R10: one program per experiment

    def _emit(self, event: RunnerEvent) -> None:
        try:
            self.on_event(event)
        except Exception:  # noqa: BLE001 - a UI callback (any code) must never break the measurement
            pass

    def _path(self, value: str | None) -> Path | None:
        return resolve_corpus(self.session.folder, value) if value else None

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

    # -- the run ------------------------------------------------------------------------
    def run(self) -> RunOutcome:
        """Run every scheduled run; return the outcome (also sent as ``finished``)."""
        exp = self.experiment
        s = self.session
        self.preflight()  # nothing is measured that could not be written
        journal.take_lock(s.folder, s.name)  # S7: one runner per session
        forget = on_interrupt(self.interrupt)
        checked: CheckedMark | None = None
        try:  # never trust the lock alone: what an earlier run left alive ends first (H-14, A5)
            checked = end_leftovers(s.folder, lambda msg: self.recorder.incident(msg, kind="leftover_ended"))
            self._run(exp)
        finally:
            forget()
            if self._current is not None:  # an error of the parent: the group ends too
                self._current.end_group()
            remove_worker_specs(s.runs_dir / exp.id)  # any a parent's error left
            try:  # a parent's error before the end: the start is still kept in session.toml
                self.recorder.flush_session()
            except (OSError, Failure):
                pass
            self.recorder.say_interrupted()
            keep_checked(s.folder, checked)  # the lock still held: the next run reads it once written
            journal.release_lock(s.folder)
        self._emit(Finished(outcome=self.outcome))
        return self.outcome

    def _prepare(self, exp: Experiment) -> list[ScheduledRun]:
        """The runs of this invocation (the schedule, or what a resume left), journaled as started."""
        from gpusession.core.gpu.environment import read_concurrent_load

        rec = self.recorder
        frame = self.session.results.read()
        offsets = run_offsets(frame, exp.id)
        self._load_counters = {v: i for (p, v), i in offsets.items() if p == "load"}
        plan = session_resume_plan(self.session, exp.id) if self.resume else None
        runs = list(plan.missing) if plan is not None else schedule(exp, offsets)
        drawn = [r.variant_id for r in runs if r.phase == "warm"]
        load = read_concurrent_load(own_pids={os.getpid()})
        invocation = {"started_at": self._now(), "concurrent_load": load.describe(),
                      "host_cpu_percent": load.host_cpu_percent}

        def change(doc: dict[str, Any]) -> None:  # on a fresh read: keep others' edits (S7)
            data = doc.setdefault("experiments", {}).setdefault(exp.id, {})
            if plan is None:  # a resume keeps the stored schedule's drawn order
                data["drawn_order"] = drawn
            data["last_invocation"] = invocation

        rec.change_session(change)  # written with the environment the first worker observes (A5)
        rec.load_note = load.describe()
        rec.load_quiet = load.quiet  # the rows remark on a load only when there is one (R11)
        rec.journal(ExperimentStartedRecord(
            experiment_id=exp.id, drawn_order=drawn, runs=[r.run_key for r in runs],
            concurrent_load=rec.load_note, device_override=self.device,
            resumes=plan.attempt if plan is not None else None,
            message=plan.words() if plan is not None else None,
        ))
        if plan is not None:
            rec.resume_notes = resume_notes(plan.attempt, warmed=exp.warmup_iterations > 0)
        self._stops = RunStops(self.session, exp, frame=frame, records=read_records_naming(self.session.journal_path, (exp.id,)),
                               journal=rec.journal, clock=self._now, past_limit=self.past_limit,
                               continue_on_reject=self.continue_on_reject)
        rec.open(frame, self._stops)
        return runs

    def _run(self, exp: Experiment) -> None:
        """Start the worker groups in schedule order until one of the stops says no more."""
        runs = self._prepare(exp)
        rec = self.recorder
        rec.start(len(runs), self._path(exp.corpus))
        groups = workers_of(runs)
        while groups:
            name, group = groups.pop(0)
            if self.cancel.is_set() or rec.refused is not None:
                break
            if not self.stops.may_start(group[0], new_worker=True):  # D1, D3: a run boundary
                break
            self._rest = []
            if not self._run_worker(exp, name, group):
                if self.cancel.is_set() or rec.fatal_load is not None or self.stops.stop or rec.refused:
                    break
            if self._rest:  # a rank group died; a fresh group runs what is left
                groups.insert(0, (self._rest[0].worker, self._rest))
        rec.flush_session()  # no worker observed an environment: the start is written now
        rec.experiment_ended(rec.refused or self.stops.stop, cancelled=self.cancel.is_set())

    def _run_worker(self, exp: Experiment, name: str, group: list[ScheduledRun]) -> bool:
        """Run one worker group from spec to exit; True when it ran its share to the end.

        The runner starts the worker, a :class:`~gpusession.bench.supervise.Supervisor`
        watches it and passes each event to the recorder as it arrives (rows and journal
        at once, S7); what is left after the exit comes from the group's
        :class:`~gpusession.bench.supervise.GroupReport` (:meth:`_after_exit`).
        """
        rec = self.recorder
        variant = LoadSlot.variant_of(group)
        n = self._load_counters[variant] = self._load_counters.get(variant, 0) + 1
        slot = LoadSlot.of(exp.id, variant, n)
        spec = worker_spec(self.session, exp, name, group, self.device)
        spec_path = write_spec(self.session, exp, name, spec, slot)
        env, stack_dir = worker_env(self._ranked(exp))
        rec.load_started(name, slot)  # a crash while it loads is then recovered (S7)
        w = self.launcher.start(worker_argv(self.python, exp, spec_path, env, ranked=self._ranked(exp)),
                                env, spec)
        self._current = w
        if self.outcome.interrupted is not None:  # the signal came while it started
            w.end_group()
        rec.worker_started(name, w.ident.pid, w.ident.create_time_s,
                           waiting_words(exp, self.session.name, name))
        rep = GroupReport(name=name, runs={r.run_key: r for r in group}, load=slot)
        sup = Supervisor(w, rep, timeout_s=exp.run_timeout_s, cancel=self.cancel,
                         ranked=self._ranked(exp), stack_dir=stack_dir, world_size=exp.gpus * exp.nodes,
                         may_start=lambda key: rec.refused is None  # R1: another model loaded
                         and self.stops.may_start(rep.runs[key], new_worker=False))
        sup.watch(rec.on_worker_event)
        rec.say_interrupted()  # before the rows: the journal says why the worker died
        sup.reap(spec_path)
        self._current = None
        return self._after_exit(exp, rep)

    def _after_exit(self, exp: Experiment, rep: GroupReport) -> bool:
        """Record the exit; plan a fresh group for the runs left; True when the group ran its share."""
        rec = self.recorder
        died = rec.group_exited(rep)
        missing = rep.missing()
        self._rest = self._fresh_group_runs(exp, list(rep.runs.values()), missing,
                                            died or rep.timed_out or rep.torn is not None
                                            or rep.unrecoverable, any_worker=rep.unrecoverable)
        if (missing and not self.cancel.is_set() and rec.fatal_load is None and not self.stops.stop
                and rec.refused is None):
            fresh = " in this worker (a fresh worker runs them)" if rep.unrecoverable else \
                " in this group (a fresh group runs them)"
            what = (f"{len(missing)} scheduled run(s) not run" + (fresh if self._rest else "") + ": "
                    + ", ".join(r.run_key for r in missing[:10]))
            rec.incident(f"worker {rep.name}: {what}", kind="runs_not_run", worker=rep.name, what=what)
        return not rep.stopped and not missing and not died

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
        return [replace(r, worker=fresh_name(r.worker)) for r in missing]

    def _ranked(self, exp: Experiment) -> bool:
        """Whether the worker runs as a torchrun group."""
        return exp.gpus > 1 or exp.nodes > 1 or self.torchrun


def fresh_name(name: str) -> str:
    """``warm`` → ``warm-again-2`` → ``warm-again-3``: the worker name of a fresh group."""
    base, sep, n = name.rpartition("-again-")
    return f"{base}-again-{int(n) + 1}" if sep and n.isdigit() else f"{name}-again-2"


def run_offsets(frame: Any, experiment_id: str) -> dict[tuple[str, str], int]:
    """``(phase, variant) → highest run index`` of the experiment's rows: a rerun continues them (R1)."""
    offsets: dict[tuple[str, str], int] = {}
    for r in frame.filter(frame["experiment_id"] == experiment_id).iter_rows(named=True):
        key = (r["phase"], r["variant_id"])
        offsets[key] = max(offsets.get(key, 0), r["run_index"] or 0)
    return offsets


def check_command_code(session: Session, exp: Experiment) -> None:
    """Refuse a command experiment whose program changed since its measured rows (R10, before any run).

    The revision is observed as its worker will observe it
    (:func:`gpusession.bench.program_digest.command_code_revision`: ``git describe`` of
    the program's folder or ``--param code_dir``, else a digest of the program files).

    Raises:
        BadInput: as :func:`gpusession.core.folder.code_pin.check_same_code`.
    """
    if exp.workload != "command":
        return
    argv = [str(a) for a in exp.params.get("command") or []]
    code_dir = exp.params.get("code_dir") or program_folder(argv, session.folder)
    check_same_code(session, exp.id, command_code_revision(argv, session.folder, code_dir))


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


__all__ = ["Runner", "RunOutcome", "TORCH_MISSING_ADVICE", "UNMENDABLE_LOAD_ERRORS", "check_command_code",
           "check_torch_for", "describe_exit", "resume_notes", "torch_missing", "unmendable_load"]
