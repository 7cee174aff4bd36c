"""The parent side of a run: start workers, turn their events into rows, validate.

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

Processes (issue 12, H-14): each worker is the leader of a process group of its own
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

An experiment with ``gpus > 1`` starts each worker through torchrun (issue 13:
:mod:`gpusession.bench.ranks`); the row is still one per run (elapsed between the ranks'
barriers, memory the maximum over ranks, the ranks in ``notes``), each rank's own figures
go to ``runs/<experiment>/ranks.csv``, and a group that ends part-way (a rank raised in
a run — the group then ends with that run and its row waits for the exit, to name the
rank's exit code — died, or hung past the timeout) is followed by a fresh group for the
runs left.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpusession.bench.process import EOF_EVENT, WorkerProcess, describe_exit
from gpusession.bench.ranks import error_gist, join_timeout_s, lost_peer, rendezvous_timed_out
from gpusession.bench.run_validation import RunValidation, package_total_minor
from gpusession.bench.stacks import STACK_DIR_ENV
from gpusession.bench.timing import ALLOCATOR_SCOPE, CPU_MEMORY_SCOPE, RESERVED_CARRY_NOTE
from gpusession.core.events import (
    AttemptFailedRecord,
    CommandStartedRecord,
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
    WorkerEnvironment,
    WorkerExitedRecord,
    WorkerIncident,
    WorkerLoaded,
    WorkerLoadedRecord,
    WorkerReady,
    WorkerRunFinished,
    WorkerRunStarted,
    WorkerStarted,
    WorkerStartedRecord,
    WorkerStderrRecord,
    WorkerStopped,
    WorkerWarmupDone,
)
from gpusession.core.events.words import interrupted_words
from gpusession.core.experiment.plan import Experiment, ScheduledRun, schedule, workers_of
from gpusession.core.files.safefile import check_writable, make_private_dir, write_private_bytes
from gpusession.core.folder import journal
from gpusession.core.folder.experiments import get_experiment
from gpusession.core.folder.journal import RunKey
from gpusession.core.folder.processes import end_recorded, on_interrupt
from gpusession.core.folder.recovery import SPEC_PREFIX, remove_worker_specs
from gpusession.core.folder.rendezvous import check_rendezvous_port
from gpusession.core.folder.session import SESSION_TOML, Session
from gpusession.core.records.results import ResultRow
from gpusession.core.records.summary import accepted_revisions
from gpusession.core.retrieval.status import SUMMARY_JSON, refresh_counts

#: Seconds a torchrun group may take to end by itself after a rank failed a run before
#: the runner ends it (issue 13; the ranks exit right after the leader's report).
TEARDOWN_GRACE_S = 30.0


def _count(n: int | None) -> str:
    """``1000`` → ``1,000`` (user text has thousands separators); ``None`` → ``?``."""
    return "?" if n is None else f"{n:,}"


@dataclass
class RunOutcome:
    """What one invocation of an experiment produced.

    Attributes:
        rows_written: CSV rows appended (load, cold and warm, failures included).
        completed: every scheduled run ran (failed runs count as ran; R7).
        cancelled: stopped by a cancel request at a run boundary (H-12).
        interrupted: the signal (``"SIGHUP"``, ``"SIGTERM"``) that ended the run at once,
            ``None`` when none did (issue 12).
        incidents: one sentence per incident.
    """

    rows_written: int = 0
    completed: bool = False
    cancelled: bool = False
    interrupted: str | None = None
    incidents: list[str] = field(default_factory=list)


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
            rank; ``scripts/gpu-check.sh`` checks the launch path with it, issue 13).
            With ``gpus > 1`` torchrun is always used.

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
    ) -> None:
        """Look the experiment up; nothing runs until :meth:`run`."""
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
        # Runs ended by an interrupt (issue 12): they have a row but never finished.
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
        # Issue 15: a load failure no other worker can mend stops the experiment at once;
        # rows of an invocation that measured nothing become a failed attempt.
        self._fatal_load: str | None = None
        self._measured = False
        self._keys_written: list[str] = []
        # Runs a fresh rank group runs after a group ended early (issue 13).
        self._rest: list[ScheduledRun] = []
        # The worker running now and the run key in flight (a load is a run), for
        # interrupt() (issue 12); interrupt may come from another thread.
        self._current: WorkerProcess | None = None
        self._current_key: str | None = None
        self._interrupt_said = False

    def interrupt(self, signal_name: str) -> None:
        """End the run at once: ``signal_name`` (``"SIGHUP"``/``"SIGTERM"``/``"SIGINT"``) arrived.

        The worker's whole group is ended now (not at the next run boundary), no other
        worker starts, and the journal gets a ``run_interrupted`` record naming the run in
        flight; :meth:`run` then releases the lock and returns with
        ``outcome.interrupted`` set (issue 12, H-14). Callable from a signal handler or
        another thread; a second call changes nothing.
        """
        if self.outcome.interrupted is None:
            self.outcome.interrupted = signal_name
        self.cancel.set()
        w = self._current
        if w is not None:
            w.end_group()

    def preflight(self) -> None:
        """Check every file the run will write, before any measurement (issue 12).

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
        self.outcome.incidents.append(message)
        self._journal(IncidentRecord(experiment_id=self.experiment.id, message=message,
                                     trace=trace, exit=exit))
        self._emit(IncidentReported(message=message))

    def _path(self, value: str | None) -> Path | None:
        if not value:
            return None
        p = Path(value)
        return p if p.is_absolute() else self.session.folder / p

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
        self.preflight()  # nothing is measured that could not be written (issue 12)
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
            remove_worker_specs(s.runs_dir / exp.id)  # any a parent's error left (issue 12)
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
        runs = schedule(exp, offsets)
        drawn = [r.variant_id for r in runs if r.phase == "warm"]
        load = read_concurrent_load(own_pids={os.getpid()})
        invocation = {
            "started_at": self._now(),
            "concurrent_load": load.describe(),
            "host_cpu_percent": load.host_cpu_percent,
        }

        def change(doc: dict[str, Any]) -> None:  # on a fresh read: keep others' edits (S7)
            data = doc.setdefault("experiments", {}).setdefault(exp.id, {})
            data["drawn_order"] = drawn
            data["last_invocation"] = invocation

        self.session.update(change)
        self._load_note = load.describe()
        self._journal(ExperimentStartedRecord(
            experiment_id=exp.id, drawn_order=drawn, runs=[r.run_key for r in runs],
            concurrent_load=self._load_note, device_override=self.device,
        ))
        return runs

    @staticmethod
    def _now() -> Any:
        from gpusession.core.files.clock import utcnow

        return utcnow()

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
            self._rest = []
            if not self._run_worker(exp, name, group):
                stopped = self.cancel.is_set() or stopped
                if self.cancel.is_set() or self._fatal_load is not None:
                    break
            if self._rest:  # issue 13: a rank group died; a fresh group runs what is left
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
        self.outcome.cancelled = self.cancel.is_set() and not ran_all and interrupted is None
        self.outcome.completed = ran_all and not self.outcome.cancelled and not self._worker_died
        end = ExperimentFinishedRecord if self.outcome.completed else ExperimentIncompleteRecord
        cause = (f" (interrupted by {interrupted})" if interrupted else  # the cause, not its effect
                 (" (a worker died or timed out)" if self._worker_died else "")
                 + (" (cancelled at a run boundary)" if self.outcome.cancelled else ""))
        self._journal(end(
            experiment_id=exp.id, rows_written=self.outcome.rows_written,
            runs_done=finished, runs_scheduled=self._total, cancelled=self.outcome.cancelled,
            message=(None if self.outcome.completed else
                     f"incomplete: {finished} of {self._total} runs done{cause}"),
        ))
        _ = stopped

    def _say_interrupted(self) -> None:
        """Journal ``run_interrupted`` once, naming the run in flight (issue 12)."""
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

    def _base_row(self, exp: Experiment) -> ResultRow:
        env = self._env
        pkg = self.session.package
        return ResultRow(
            experiment_id=exp.id,
            corpus_revision=self._validation.corpus_revision,
            model_revision=self._revisions.get("model_revision"),
            tokenizer_revision=self._revisions.get("tokenizer_revision"),
            seed=exp.seed,
            gpu_model=env.get("gpu_model"),
            gpu_count=env.get("gpu_count"),
            device=env.get("device"),
            driver_version=env.get("driver_version"),
            python_version=env.get("python_version"),
            torch_version=env.get("torch_version"),
            runtime_version=env.get("runtime_version"),
            precision=exp.precision,
            duration_days=pkg.days,
            lots=pkg.lots,
            package_total_usd_minor=self._package_total_minor,
        )

    def _append(self, row: ResultRow) -> None:
        if row.corpus_accepted and row.corpus_revision is not None:
            self._accepted_revisions.add(row.corpus_revision)
        # K4: distinct accepted corpora of the session, never a count of rows.
        row = row.replace(accepted_unique_corpora=len(self._accepted_revisions))
        self.session.results.append(row)
        refresh_counts(self.session.folder)  # summary.json for `gpusession status` (issue 14)
        self.outcome.rows_written += 1
        if row.phase != "load" or row.elapsed_seconds is not None:
            self._measured = True
        self._keys_written.append(f"{row.experiment_id}:{row.phase}:{row.variant_id}:{row.run_index}")
        # A cold or warm row ends one scheduled run: it is the next one counted (load rows are not).
        self._emit(RowAppended(row=row, done=None if row.phase == "load" else self._done + 1,
                               total=self._total))

    def _run_worker(self, exp: Experiment, name: str, group: list[ScheduledRun]) -> bool:
        """Run one worker process; True when it ran its share to the end."""
        s = self.session
        spec_dir = s.runs_dir / exp.id
        make_private_dir(spec_dir, root=s.folder)  # 0700, never through a link (issue 12)
        spec_path = spec_dir / f"{SPEC_PREFIX}{name}.json"
        load_variant = group[0].variant_id if group[0].phase == "cold" else "all"
        load_index = self._load_index(exp, load_variant)
        load_key = RunKey(exp.id, "load", load_variant, load_index)
        spec = self._spec(exp, name, group)
        spec["load_run_key"] = load_key.local  # the load's key in ranks.csv (issue 13)
        write_private_bytes(spec_path, json.dumps(spec, default=str).encode())
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        # issue 13: where each rank stands when a run times out (bench/stacks.py)
        stack_dir = tempfile.mkdtemp(prefix="gpusession-stacks-") if self._ranked(exp) else None
        env.pop(STACK_DIR_ENV, None)
        if stack_dir is not None:
            env[STACK_DIR_ENV] = stack_dir
        hung: str | None = None
        by_key = {r.run_key: r for r in group}
        self._warm_done = {}
        # The load is a timed run too: journal it as in flight before the worker starts,
        # so that a crash while it loads is recovered as an incident row on reopen (S7).
        load_fields: dict[str, Any] = dict(run_key=load_key.format(), experiment_id=exp.id,
                                           variant_id=load_variant, phase="load", run_index=load_index)
        self._journal(LoadStartedRecord(worker=name, **load_fields))
        load_open = True
        self._current_key = load_key.format()
        w = WorkerProcess(self._worker_argv(exp, spec_path, env), env)
        self._current = w
        if self.outcome.interrupted is not None:  # the signal came while it started
            w.end_group()
        self._journal(WorkerStartedRecord(experiment_id=exp.id, worker=name, pid=w.proc.pid,
                                          create_time_s=w.ident.create_time_s))
        self._emit(WorkerStarted(worker=name, pid=w.proc.pid, waiting_for_nodes=self._waiting_words(exp, name)))
        in_flight: ScheduledRun | None = None
        rank_ids: dict[str, Any] = {}
        loaded = False
        # issue 13: the run whose rank failed; the group ends with it and its row waits
        # for the group's exit (the failed rank's exit code goes in it)
        torn: tuple[ScheduledRun, WorkerRunFinished] | None = None
        forced = False
        finished_keys: set[str] = set()
        deadline = time.monotonic() + exp.run_timeout_s
        timed_out = False
        heard = False
        last_incident: str | None = None
        last_error: str | None = None  # its error alone, without where it came
        leader: int | None = None  # the global rank that speaks to the runner (issue 13)
        ok = True
        while True:
            try:
                ev = w.events.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                if torn is None:
                    timed_out = True
                    if stack_dir is not None and rank_ids.get("rank_pids"):
                        hung = self._where_ranks_stood(exp, stack_dir, rank_ids)
                else:  # a group that does not end after a rank failed: ended here (issue 13)
                    forced = True
                # the worker and everything it started, torchrun's ranks too (issues 12, 13)
                w.end_group()
                continue
            if ev is EOF_EVENT:
                break
            heard = True  # a rank spoke: the group formed (issue 13)
            if isinstance(ev, WorkerEnvironment):
                self._env = dict(ev.environment)
                # issue 13: rank PIDs go to the journal (worker_loaded), not to session.toml
                rank_ids = {k: self._env.pop(k, None)
                            for k in ("rank_pids", "rank_create_times_s", "rank_hosts")}
                leader = self._env.get("leader_rank")
                self._store_environment(exp)
                self._emit(EnvironmentObserved(environment=self._env))
            elif isinstance(ev, WorkerCommandStarted):
                self._journal(CommandStartedRecord(experiment_id=exp.id, worker=name, pid=ev.pid,
                                                   create_time_s=ev.create_time_s))
            elif isinstance(ev, WorkerLoaded):
                loaded = True
                self._revisions = ev.revisions or {}
                self._emit(Loaded(worker=name, elapsed_s=ev.elapsed_s))
                self._journal(WorkerLoadedRecord(experiment_id=exp.id, worker=name,
                                                 elapsed_s=ev.elapsed_s, rss_peak_bytes=ev.rss_peak_bytes,
                                                 **rank_ids))
                if ev.elapsed_s is not None:
                    self._append(self._base_row(exp).replace(
                        variant_id=load_variant, phase="load", run_index=load_index,
                        elapsed_seconds=ev.elapsed_s,
                        baseline_allocated_bytes=ev.baseline_allocated_bytes,
                        baseline_reserved_bytes=ev.baseline_reserved_bytes,
                        peak_allocated_bytes=ev.peak_allocated_bytes,
                        peak_reserved_bytes=ev.peak_reserved_bytes,
                        notes=f"load of worker {name} (model to device, timed once per process)",
                    ))
                if load_open:
                    self._journal(LoadFinishedRecord(ok=True, **load_fields))
                    load_open = False
                    self._current_key = None
            elif isinstance(ev, WorkerWarmupDone):
                self._warm_done = dict(ev.per_variant)
                self._journal(WarmupDoneRecord(experiment_id=exp.id, worker=name,
                                               iterations=ev.iterations, runs=ev.runs,
                                               per_variant=dict(ev.per_variant)))
            elif isinstance(ev, WorkerReady):
                if self.cancel.is_set():
                    w.send("stop")
                else:
                    w.send("go")
                    deadline = time.monotonic() + exp.run_timeout_s
            elif isinstance(ev, WorkerRunStarted):
                in_flight = by_key[ev.run_key]
                self._current_key = self._key(in_flight).format()
                self._journal(RunStartedRecord(
                    run_key=self._key(in_flight).format(), experiment_id=exp.id,
                    variant_id=in_flight.variant_id, phase=in_flight.phase,
                    run_index=in_flight.run_index, worker=name))
            elif isinstance(ev, WorkerRunFinished):
                run = by_key[ev.run_key]
                if ev.failed_rank is not None and not ev.ok and self._ranked(exp):
                    # issue 13: the group ends with this run; its row once it has ended
                    torn = (run, ev)
                    deadline = time.monotonic() + TEARDOWN_GRACE_S
                else:
                    self._finish_run(exp, run, ev)
                finished_keys.add(run.run_key)
                in_flight = None
                self._current_key = None
            elif isinstance(ev, WorkerIncident):
                said = error_gist(ev.message) or ev.message  # never torch's banner (issue 13)
                msg = (f"{ev.where}: {ev.error_type}: {said}"
                       + (" (out of memory)" if ev.oom else ""))
                last_incident = msg
                last_error = f"{ev.error_type}: {said}"
                if ev.where == "load" and unmendable_load(ev):
                    # Every worker loads the same model the same way: say it once and stop.
                    self._fatal_load = (
                        f"the workload {exp.workload} could not load: {ev.error_type}: {said}. "
                        f"The experiment stopped at {'the first worker' if not self._keys_written else 'worker'} "
                        f"({name}); {'nothing' if not self._measured else 'nothing more'} was measured. "
                        + (self._device_advice(exp) if ev.error_type == "DeviceUnavailable" else
                           f"Fix the workload or its definition (gpusession experiment "
                           f"{self.session.name} define --id {exp.id} …) and run again."))
                    self._journal(IncidentRecord(experiment_id=exp.id, message=f"worker {name}: {msg}",
                                                 trace=ev.trace))
                else:
                    self._incident(f"worker {name}: {msg}", trace=ev.trace)
                if ev.where == "load":
                    self._append(self._base_row(exp).replace(
                        variant_id=load_variant, phase="load", run_index=load_index,
                        notes=f"incident: load failed: {msg}"))  # no corpus validated: left empty
                    if load_open:
                        self._journal(LoadFinishedRecord(ok=False, **load_fields))
                        load_open = False
            elif isinstance(ev, WorkerStopped):
                ok = False
        self._say_interrupted()  # before the rows: the journal says why the worker died
        code = w.finish()
        self._current = None
        spec_path.unlink(missing_ok=True)  # the group has ended: its spec serves nothing (issue 12)
        if stack_dir is not None:
            shutil.rmtree(stack_dir, ignore_errors=True)
        rank_cause = self._rank_cause(exp, w, {leader: last_error}
                                      if leader is not None and last_error else {})
        if rank_cause is not None and not timed_out:  # the failed rank's exit, not torchrun's (issue 13)
            code = rank_cause.exitcode
        stderr = list(w.stderr)
        if stderr:
            self._journal(WorkerStderrRecord(experiment_id=exp.id, worker=name, lines=stderr[-100:]))
        self._journal(WorkerExitedRecord(experiment_id=exp.id, worker=name, exit=describe_exit(code)))
        if torn is not None:  # issue 13: the row of the failed run, with how the group ended
            self._finish_run(exp, torn[0], torn[1],
                             ended=self._teardown_words(exp, torn[1], rank_cause, code, forced))
            code = 0 if not forced else code  # the group ended as it should: no worker died
        died = code != 0
        if died or timed_out:
            self._worker_died = True
            how = (f"timed out after {exp.run_timeout_s:g} s and was killed"
                   + (f" ({hung})" if hung else "") if timed_out
                   else f"was ended at once (interrupted by {self.outcome.interrupted})"
                   if self.outcome.interrupted else describe_exit(code))
            last = error_gist(w.last_stderr())
            after = error_gist(last_incident)
            world = exp.gpus * exp.nodes
            if rank_cause is not None and not timed_out and self._survivor(exp, rank_cause, leader, last_error):
                # issue 13: the rank torchrun names here only lost its peer; never blame it
                seen = rank_cause.error if lost_peer(rank_cause.error) else error_gist(last_error)
                where = "on another node" if exp.nodes > 1 else "that torchrun did not name"
                how = (f": the group lost a rank {where}; rank {rank_cause.rank} of {world} (on this node) "
                       f"lost its connection to it" + (f" ({seen})" if seen else "")
                       + f" and {how}, and torchrun ended the group")
                after = last = None
            elif rank_cause is not None and not timed_out:
                how = f" rank {rank_cause.rank} of {world} {how} (torchrun ended the group)"
                last = rank_cause.error  # torchrun's own last line is its banner
            else:
                how = f" {how}"
            detail = (f"worker {name}{how}" + (f" after {after}" if after else "")
                      + (f"; last stderr: {last}" if last else ""))
            if exp.nodes > 1 and not heard and self._fatal_load is None and (
                    timed_out or rendezvous_timed_out(list(w.stderr))):
                # No rank ever spoke: the other nodes did not come (the join timeout, or the
                # run timeout while waiting). Every next group would wait as long (issue 13).
                self._fatal_load = (
                    f"the other {exp.nodes - 1} node(s) did not join the rendezvous at {exp.rendezvous} "
                    f"within {join_timeout_s(exp.run_timeout_s)} s. The experiment stopped at worker {name}; "
                    f"{'nothing' if not self._measured else 'nothing more'} was measured. On each other node "
                    f"run `gpusession agent {self.session.name} --experiment {exp.id}` (the same session "
                    "folder and corpus paths), then run again.")
            if in_flight is not None:
                self._failed_row(exp, in_flight, f"incident: {detail} during this run")
                finished_keys.add(in_flight.run_key)
            elif not loaded and (code != 3 or load_open):  # 3 with no load row: a rank's (issue 13)
                self._append(self._base_row(exp).replace(
                    variant_id=load_variant, phase="load", run_index=load_index,
                    notes=f"incident: {detail} while loading"))  # no corpus validated: left empty
            if self._fatal_load is None:
                self._incident(detail, exit=describe_exit(code))
            else:  # said once, in the fatal message; kept in the journal
                self._journal(IncidentRecord(experiment_id=exp.id, message=detail, exit=describe_exit(code)))
        if load_open:  # the worker ended before loading; any row was written above
            self._journal(LoadFinishedRecord(ok=False, **load_fields))
        missing = [r for r in group if r.run_key not in finished_keys]
        self._rest = self._fresh_group_runs(exp, group, missing, died or timed_out or torn is not None)
        if missing and not self.cancel.is_set() and self._fatal_load is None:
            self._incident(f"worker {name}: {len(missing)} scheduled run(s) not run"
                           + (" in this group (a fresh group runs them)" if self._rest else "") + ": "
                           + ", ".join(r.run_key for r in missing[:10]))
        return ok and not missing and not died

    def _offsets_measured(self, frame: Any) -> int:
        """Rows of this experiment that measured something (not a failed load; issue 15)."""
        import polars as pl

        mine = frame.filter(pl.col("experiment_id") == self.experiment.id)
        return int(mine.filter((pl.col("phase") != "load") | pl.col("elapsed_seconds").is_not_null()).height)

    def _attempt_number(self, exp_id: str) -> int:
        done = [r for r in self.session.read_journal()
                if r.get("event") == AttemptFailedRecord.EVENT and r.get("experiment_id") == exp_id]
        return len(done) + 1

    # -- several ranks through torchrun (issue 13) --------------------------------------------
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

    def _where_ranks_stood(self, exp: Experiment, stack_dir: str, rank_ids: dict[str, Any]) -> str | None:
        """Which ranks of this node were still working at the timeout, and where (issue 13)."""
        from gpusession.bench.stacks import ask_stacks, hung_words

        try:
            stacks = ask_stacks(Path(stack_dir), list(rank_ids.get("rank_pids") or []),
                                rank_ids.get("rank_hosts"), rank_ids.get("rank_create_times_s"))
            return hung_words(stacks, exp.gpus * exp.nodes)
        except Exception:  # noqa: BLE001 - naming the hung rank is a courtesy: the timeout is handled anyway
            return None

    def _device_advice(self, exp: Experiment) -> str:
        """What to do when the device asked for is not there (issue 13)."""
        more = (f", or define the experiment with fewer GPUs per node (--gpus; it asks for {exp.gpus})"
                if exp.gpus > 1 else "")
        return (f"Run on the CPU (gpusession run {self.session.name} --experiment {exp.id} --device cpu){more}, "
                "or check which GPUs this torch sees: python3 -c 'import torch; print(torch.cuda.device_count())'.")

    def _waiting_words(self, exp: Experiment, name: str) -> str | None:
        """What a group over several nodes waits for, and how to start it (issue 13); else ``None``."""
        if exp.nodes <= 1:
            return None
        return (f"group {name}: waiting up to {join_timeout_s(exp.run_timeout_s)} s for the other "
                f"{exp.nodes - 1} node(s) at {exp.rendezvous}; on each, run "
                f"`gpusession agent {self.session.name} --experiment {exp.id}`")

    def _ranked(self, exp: Experiment) -> bool:
        """Whether the worker runs as a torchrun group (issue 13)."""
        return exp.gpus > 1 or exp.nodes > 1 or self.torchrun

    def _fresh_group_runs(self, exp: Experiment, group: list[ScheduledRun],
                          missing: list[ScheduledRun], ended: bool) -> list[ScheduledRun]:
        """What a fresh torchrun group runs after a group ended early (issue 13).

        Only for ``gpus > 1``, not after a cancel, and only when the ended group ran at
        least one run (a group that dies while loading would die again).
        """
        if not self._ranked(exp) or not ended or self.cancel.is_set() or len(missing) >= len(group):
            return []
        return [replace(r, worker=self._fresh_name(r.worker)) for r in missing]

    @staticmethod
    def _fresh_name(name: str) -> str:
        """``warm`` → ``warm-again-2`` → ``warm-again-3``: the worker name of a fresh group."""
        base, sep, n = name.rpartition("-again-")
        return f"{base}-again-{int(n) + 1}" if sep and n.isdigit() else f"{name}-again-2"

    def _teardown_words(self, exp: Experiment, ev: WorkerRunFinished, cause: Any,
                        code: int | None, forced: bool) -> str:
        """How a group ended after its rank ``ev.failed_rank`` failed a run (issue 13).

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

    def _rank_cause(self, exp: Experiment, w: WorkerProcess, known: dict[int, str]) -> Any:
        """The failed rank torchrun names on stderr, ``None`` for one process or none.

        ``known``: the leader's last incident by its global rank (it speaks on stdout):
        a leader that only lost its peer is then not taken for the failed rank (issue 13).
        """
        if not self._ranked(exp):
            return None
        from gpusession.bench.ranks import torchrun_root_cause

        return torchrun_root_cause(list(w.stderr), known)

    @staticmethod
    def _survivor(exp: Experiment, cause: Any, leader: int | None, last_error: str | None) -> bool:
        """Whether the failed rank seen here only lost a peer that failed first (issue 13).

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

    def _row_for(self, exp: Experiment, run: ScheduledRun, *, phase: str | None,
                 warmup_iterations: int) -> ResultRow:
        """The row of ``run``, filled from what the worker reported it did (R3, R4).

        ``phase`` and ``warmup_iterations`` come from the worker's ``run_finished``, never
        from the experiment's announced warm-up.
        """
        st = exp.setting(run.variant_id)
        return self._base_row(exp).replace(
            variant_id=run.variant_id, phase=phase or run.phase, run_index=run.run_index,
            batch=st["batch"], context=st["context"], warmup_iterations=warmup_iterations,
        )

    def _failed_row(self, exp: Experiment, run: ScheduledRun, note: str) -> None:
        # The worker died during the run: its warm-up report is all it said it did. Its
        # output was never validated: corpus_accepted stays empty, never false (issue 13).
        done = self._warm_done.get(run.variant_id, 0) if run.phase == "warm" else 0
        self._append(self._row_for(exp, run, phase=run.phase, warmup_iterations=done)
                     .replace(notes=note))
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

        ``ended``: for a run whose rank failed under torchrun, how the group ended with it
        (issue 13), put in the notes and the incident.
        """
        notes: list[str] = []
        row = self._row_for(exp, run, phase=ev.phase, warmup_iterations=ev.warmup_iterations)
        truncated = ev.truncated or 0
        if truncated:
            notes.append(f"truncated {truncated:,} of {_count(ev.n_inputs)} inputs at the context "
                         f"limit of {_count(row.context)} tokens")
        if ev.rank_note:  # issue 13: elapsed between barriers, peaks the maximum over ranks
            notes.append(ev.rank_note)
        if ev.ok:
            row = row.replace(
                elapsed_seconds=ev.elapsed_s,
                baseline_allocated_bytes=ev.baseline_allocated_bytes,
                baseline_reserved_bytes=ev.baseline_reserved_bytes,
                peak_allocated_bytes=ev.peak_allocated_bytes,
                peak_reserved_bytes=ev.peak_reserved_bytes,
            )
            if ev.message:
                notes.append(f"incident: {ev.message}")
            if ev.unmeasured_pass:
                notes.append(f"preceded by one unmeasured pass {ev.unmeasured_pass}")
            if ev.phase == "warm" and ev.peak_reserved_bytes is not None:
                # the caching allocator keeps blocks between interleaved variants (M1)
                notes.append(RESERVED_CARRY_NOTE)
            fields, vnote = self._validation.validate(Path(str(ev.output)), run)
            row = row.replace(**fields)
            if vnote:
                notes.append(vnote)
        else:
            # a refused output file (a link, issue 12) is the harness's refusal, not the workload's
            kind = ("out of memory" if ev.oom else "output refused" if ev.error_type == "BadInput"
                    else "exception in the workload")
            said = error_gist(ev.message) or ev.message  # never torch's banner (issue 13)
            notes.insert(0, f"incident: {kind}: {ev.error_type}: {said}; "
                            "elapsed not measured")
            if ended:
                notes.append(ended)
            # no output to validate: corpus_accepted stays empty, never false (issue 13)
            self._incident(f"run {run.run_key}: {kind}: {ev.error_type}: {said}"
                           + (f"; {ended}" if ended else ""))
        if self._load_note and "other GPU processes: none" not in self._load_note:
            notes.append(f"concurrent load at start: {self._load_note}")
        row = row.replace(notes="; ".join(notes) or None)
        self._append(row)
        self._journal(RunFinishedRecord(
            run_key=self._key(run).format(), experiment_id=exp.id, variant_id=run.variant_id,
            phase=run.phase, run_index=run.run_index, ok=bool(ev.ok),
            elapsed_s=ev.elapsed_s, event_elapsed_s=ev.event_elapsed_s,
            rss_peak_bytes=ev.rss_peak_bytes, expected_memory=ev.expected_memory,
            truncated=truncated, tokens=ev.tokens, context=ev.context,
            unmeasured_pass=ev.unmeasured_pass,
            memory_scope=(ALLOCATOR_SCOPE if ev.peak_allocated_bytes is not None
                          else CPU_MEMORY_SCOPE),
        ))
        self._progress(run)


#: Exception types of a load failure that another worker would hit the same way: the
#: workload does not import, its factory or definition is refused, or it breaks the
#: load/predict contract (issue 15). An out-of-memory is never one of them (per variant).
UNMENDABLE_LOAD_ERRORS = frozenset({
    "BadInput", "ImportError", "ModuleNotFoundError", "SyntaxError", "NameError",
    "AttributeError", "TypeError", "ValueError", "KeyError", "NotImplementedError",
    "FileNotFoundError", "DeviceUnavailable",
})


def unmendable_load(ev: WorkerIncident) -> bool:
    """Whether a load incident ends the whole experiment at once (issue 15).

    Args:
        ev: the worker's ``incident`` event with ``where == "load"``.

    Returns:
        ``True`` for a failure no retry or other worker can mend
        (:data:`UNMENDABLE_LOAD_ERRORS`); ``False`` for an out-of-memory (it stays per
        variant, R7) and for anything else (a device error may be one worker's).
    """
    return not ev.oom and (ev.error_type or "") in UNMENDABLE_LOAD_ERRORS


__all__ = ["Runner", "RunOutcome", "UNMENDABLE_LOAD_ERRORS", "describe_exit", "unmendable_load"]
