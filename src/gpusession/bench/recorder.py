"""What a run leaves: typed worker events in, journal records and result rows out (S7, R3, R7).

Who calls it: :class:`gpusession.bench.runner.Runner`, which owns one :class:`Recorder`
per invocation and passes it each worker group's events (the recorder's
:meth:`Recorder.on_worker_event` is the group's :data:`~gpusession.bench.supervise.Sink`)
and each group's :class:`~gpusession.bench.supervise.GroupReport` once reaped. The
runner keeps the schedule, the stops and the worker lifetimes; the recorder only records:
no process, no thread, no clock of its own (``now`` is the runner's), so a test can feed
it events and read what it wrote.

Every row is built by :mod:`gpusession.bench.rows` (pure) and appended the moment its
run ends (S7); a failed run keeps its row, elapsed and ``corpus_accepted`` empty, the
incident in ``notes`` (R7). Words are :mod:`gpusession.bench.run_words`. No torch here (M5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from gpusession.bench.accept_run import make_validation
from gpusession.bench.process import describe_exit
from gpusession.bench.ranks import error_gist, rendezvous_timed_out
from gpusession.bench.rows import (
    LoadSlot,
    base_row,
    died_loading_facts,
    died_loading_row,
    died_run_facts,
    died_run_row,
    every_row_facts,
    failure_incident_kind,
    finished_run_facts,
    finished_run_row,
    load_facts,
    load_failed_facts,
    load_failed_row,
    load_row,
    run_row,
    worker_incident_kind,
)
from gpusession.bench.run_validation import RunValidation, package_total_minor
from gpusession.bench.run_words import (
    death_detail,
    death_kind,
    incomplete_cause,
    load_fatal_words,
    no_join_words,
    teardown_words,
)
from gpusession.bench.session_writes import SessionWrites
from gpusession.bench.stops import RunStops
from gpusession.bench.supervise import GroupReport
from gpusession.bench.timing import ALLOCATOR_SCOPE, CPU_MEMORY_SCOPE
from gpusession.core.events import (
    AttemptFailedRecord,
    CommandStartedRecord,
    DescendantsEndedRecord,
    EnvironmentObserved,
    Event,
    ExperimentFinishedRecord,
    ExperimentIncompleteRecord,
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
    RunStarted,
    RunStartedRecord,
    WarmupDoneRecord,
    WorkerApplied,
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
from gpusession.core.events.reading import read_records_naming
from gpusession.core.events.words import interrupted_words
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.files.bounds import number_past_bound
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import mask_text
from gpusession.core.folder.corpus_pin import REVISION_CHANGED, WorkloadRevisions, keep_for_run
from gpusession.core.folder.journal import RunKey
from gpusession.core.folder.session import Session
from gpusession.core.money.count import session_count
from gpusession.core.records.notefacts import RowFacts
from gpusession.core.records.outcome import RunOutcome
from gpusession.core.records.results import ResultRow
from gpusession.core.records.summary import accepted_revisions, corpora_cell
from gpusession.core.retrieval.status import count_appended_row, csv_signature
from gpusession.core.validation.accept_rule import AcceptReport

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


def count_for_status(session: Session) -> None:
    """Keep the session's count of deliverables for ``status`` and ``list`` once the runs end (S10).

    Source: S10 (one source for the count). Why: ``status`` read the count cached by the
    last ``approve``/``reject``/``cost``/``manifest``; after a run accepted by a rule it
    said "0 accepted corpora" while ``show`` said "18 accepted visuals". Counted after the
    last row, so the cache describes the results as they are. A count that does not read,
    or a cache that cannot be written, is no error of the run: ``show`` and ``cost`` count
    again.
    """
    try:
        session_count(session, cache=True)
    except (BadInput, OSError):
        pass


def measured_rows(frame: Any, experiment_id: str) -> int:
    """Rows of ``experiment_id`` in a results frame that measured something (not a failed load)."""
    import polars as pl

    mine = frame.filter(pl.col("experiment_id") == experiment_id)
    return int(mine.filter((pl.col("phase") != "load") | pl.col("elapsed_seconds").is_not_null()).height)


def attempt_number(session: Session, experiment_id: str) -> int:
    """This invocation's attempt of the experiment: 1 + the failed attempts its journal holds."""
    return 1 + sum(isinstance(r, AttemptFailedRecord) and r.experiment_id == experiment_id
                   for r in read_records_naming(session.journal_path, (experiment_id,)))


def run_finished_record(run_key: str, experiment_id: str, run: ScheduledRun,
                        ev: WorkerRunFinished, facts: RowFacts, *,
                        files_digest: str | None = None) -> RunFinishedRecord:
    """The journal's record of a run its worker reported finished (ok or not, R3), with its row's typed facts.

    A duration past a year is left out, as its row leaves it out (H-65: one record).
    ``files_digest``: the accept report's files digest when the rule accepted (H-72).
    """
    def seconds(value: float | None) -> float | None:
        return None if number_past_bound(value, "duration") else value

    return RunFinishedRecord(
        run_key=run_key, experiment_id=experiment_id, variant_id=run.variant_id,
        phase=run.phase, run_index=run.run_index, ok=bool(ev.ok),
        elapsed_s=seconds(ev.elapsed_s), event_elapsed_s=seconds(ev.event_elapsed_s), event_stream=ev.event_stream,
        rss_peak_bytes=ev.rss_peak_bytes, expected_memory=ev.expected_memory,
        truncated=ev.truncated, tokens=ev.tokens, context=ev.context,
        unmeasured_pass=ev.unmeasured_pass,
        memory_scope=ALLOCATOR_SCOPE if ev.peak_allocated_bytes is not None else CPU_MEMORY_SCOPE,
        reported=dict(ev.reported) if ev.reported else None,
        cpu_user_s=ev.cpu_user_s, cpu_system_s=ev.cpu_system_s, max_rss_bytes=ev.max_rss_bytes,
        files_digest=files_digest, **facts.record_fields(),
    )


def accepted_digest(report: Any) -> str | None:
    """The files digest of an accept report whose rule accepted (H-72), ``None`` for any other report."""
    return report.accepted_files_digest() if isinstance(report, AcceptReport) else None


def load_fields(experiment_id: str, slot: LoadSlot) -> dict[str, Any]:
    """The journal fields that name a load as a run (S7: a load is a timed run, R3)."""
    return dict(run_key=slot.key.format(), experiment_id=experiment_id,
                variant_id=slot.variant_id, phase="load", run_index=slot.run_index)


class Recorder:
    """The journal records and result rows of one experiment's invocation (S7).

    Args:
        session: the open session (its journal, results CSV and ``session.toml``).
        experiment: the experiment being run.
        outcome: the invocation's outcome, filled here (rows, incidents, the end).
        emit: sends a typed runner event to the UI (never raises).
        now: the runner's clock (aware UTC).

    Attributes:
        fatal_load: the sentence of a failure no other worker can mend (the runner stops).
        refused: ``(REVISION_CHANGED, words)``: a load reported another model or tokenizer (R1).
        measured: the session has a measured row of this experiment.
        worker_died: a group exited non-zero or timed out in this invocation.
        current_key: the run key in flight (a load is a run), ``None`` between runs.
        load_note: the concurrent load seen at the start, in words (the journal, the environment).
        load_quiet: nothing else ran on the GPUs at the start: the rows say no load.
        resume_notes: what each row of a resumed attempt says, by phase.
    """

    def __init__(self, session: Session, experiment: Experiment, *, outcome: RunOutcome,
                 emit: Callable[[RunnerEvent], None], now: Callable[[], datetime]) -> None:
        """Nothing is written until the first event."""
        self.session = session
        self.experiment = experiment
        self.outcome = outcome
        self.emit = emit
        self.now = now
        self.env: dict[str, Any] = {}
        self.writes = SessionWrites(session, experiment.id, now)  # session.toml, once per invocation
        self.revisions: dict[str, Any] = {}
        self.done = 0
        self.cut = 0  # runs ended by an interrupt: they have a row but never finished
        self.total = 0
        self.worker_died = False
        # Read once from the results CSV (open), then kept up to date per row.
        self.accepted_revisions: set[str] = set()
        self.package_total_minor: int | None = None
        self.warm_done: dict[str, int] = {}  # warm-up iterations the current worker did
        self.applied: WorkerApplied | None = None  # what the current worker applied before its load (A2)
        self.fatal_load: str | None = None
        self.refused: tuple[str, str] | None = None
        self.workload_revisions = WorkloadRevisions({})  # the rows', then this attempt's loads (R1)
        self.measured = False
        self.keys_written: list[str] = []
        self.current_key: str | None = None
        self.load_note: str | None = None
        self.load_quiet = False
        self.resume_notes: dict[str, str] = {}
        self.stops: RunStops | None = None
        self.validation: RunValidation | None = None
        self._interrupt_said = False

    # -- the invocation -----------------------------------------------------------------
    def open(self, frame: Any, stops: RunStops) -> None:
        """Read what the session already holds, once (each row keeps it up to date)."""
        self.accepted_revisions = accepted_revisions(frame)
        self.measured = bool(measured_rows(frame, self.experiment.id))
        self.workload_revisions = WorkloadRevisions.of(frame, self.experiment.id)
        self.package_total_minor = package_total_minor(self.session)
        self.stops = stops

    def start(self, total: int, corpus: Path | None) -> None:
        """The schedule is known: say ``0 of total`` and prepare validation (V1-V8)."""
        self.total = total
        self.emit(Progress(done=0, total=total))
        self.validation = make_validation(self.session, self.experiment, corpus)
        if self.validation.problem:
            self.incident(self.validation.problem, kind="validation")
        if corpus is not None and self.validation.corpus_revision:
            # what the runs are validated against, kept for an audit without the original
            if (problem := keep_for_run(self.session, self.experiment.id, corpus, str(self.experiment.corpus),
                                        self.validation.corpus_revision, self.now().isoformat())):
                self.incident(problem, kind="validation")

    def journal(self, record: Event) -> None:
        """Append one typed record to the session's journal."""
        self.session.journal(record)

    def incident(self, message: str, *, kind: str, trace: str | None = None, exit: str | None = None,
                 run_key: str | None = None, worker: str | None = None, what: str | None = None,
                 show: bool = True) -> None:
        """Journal one incident, typed for the report (``kind``, ``run_key``, ``what``: R7), less any secret (S6).

        ``what`` defaults to ``message``; ``show=False`` journals it only (said elsewhere).
        """
        message = mask_text(message)[0]  # what a program said, less any secret (S6)
        trace = mask_text(trace)[0] if trace else trace
        what = mask_text(what)[0] if what is not None else message
        self.journal(IncidentRecord(experiment_id=self.experiment.id, message=message, kind=kind,
                                    run_key=run_key, worker=worker, what=what, trace=trace, exit=exit))
        if show:
            self.outcome.incidents.append(message)
            self.emit(IncidentReported(message=message))

    def say_interrupted(self) -> None:
        """Journal ``run_interrupted`` once, naming the run in flight."""
        sig = self.outcome.interrupted
        if sig is None or self._interrupt_said:
            return
        self._interrupt_said = True
        key = self.current_key
        words = interrupted_words(sig, key)
        self.outcome.incidents.append(words)
        try:
            self.journal(RunInterruptedRecord(signal=sig, run_key=key,
                                              experiment_id=self.experiment.id, message=words))
        except OSError:
            pass  # the disk refused it: the lock is still released by run()
        self.emit(IncidentReported(message=words))

    def experiment_ended(self, stop: tuple[str, str] | None, *, cancelled: bool) -> None:
        """Fill the outcome and journal the experiment's end (finished or incomplete, H-12).

        Args:
            stop: what stopped the runs (D1, D3: ``(kind, words)``), ``None`` when nothing did.
            cancelled: a cancel was asked (a run boundary).
        """
        exp = self.experiment
        if self.fatal_load is not None:
            self.incident(self.fatal_load, kind="stopped")
        if not self.measured and self.keys_written and not cancelled:
            self.journal(AttemptFailedRecord(
                experiment_id=exp.id, attempt=attempt_number(self.session, exp.id),
                run_keys=list(self.keys_written), workload=exp.workload,
                message=self.fatal_load or "nothing measured: no worker loaded the workload",
            ))
        out = self.outcome
        finished = self.done - self.cut  # a run ended by an interrupt never finished
        ran_all = finished == self.total
        interrupted = out.interrupted
        self.say_interrupted()
        stop = stop if interrupted is None and not ran_all else None
        out.stopped, out.stopped_words = stop or (None, None)
        out.cancelled = cancelled and not ran_all and interrupted is None and stop is None
        out.completed = ran_all and not out.cancelled and not self.worker_died
        end = ExperimentFinishedRecord if out.completed else ExperimentIncompleteRecord
        cause = incomplete_cause(interrupted, stop[1] if stop else None,
                                 worker_died=self.worker_died, cancelled=out.cancelled)
        self.journal(end(
            experiment_id=exp.id, rows_written=out.rows_written,
            runs_done=finished, runs_scheduled=self.total, cancelled=out.cancelled,
            message=None if out.completed else f"incomplete: {finished} of {self.total} runs done{cause}",
            stopped=stop[0] if stop else None,
        ))
        if interrupted is None:  # a signal ends the run now: status then says "as last counted"
            count_for_status(self.session)

    # -- a worker group's start ---------------------------------------------------------
    def load_started(self, name: str, slot: LoadSlot) -> None:
        """Journal the group's load as in flight before its worker starts.

        A crash while it loads is then recovered as an incident row on reopen (S7).
        """
        self.warm_done, self.applied = {}, None  # a new process: nothing done or applied until it says so
        self.journal(LoadStartedRecord(worker=name, **load_fields(self.experiment.id, slot)))
        self.current_key = slot.key.format()

    def worker_started(self, name: str, pid: int, create_time_s: float | None,
                       waiting_for_nodes: str | None) -> None:
        """Journal the worker's PID and start time (H-14) and tell the UI."""
        self.journal(WorkerStartedRecord(experiment_id=self.experiment.id, worker=name, pid=pid,
                                         create_time_s=create_time_s))
        self.emit(WorkerStarted(worker=name, pid=pid, waiting_for_nodes=waiting_for_nodes))

    def close_load(self, rep: GroupReport, *, ok: bool, facts: RowFacts | None = None) -> None:
        """Journal the group's load as finished, once, with the facts of its row if it has one."""
        if rep.load_open:
            self.journal(LoadFinishedRecord(ok=ok, **load_fields(self.experiment.id, rep.load),
                                            **(facts.record_fields() if facts is not None else {})))
            rep.load_open = False

    # -- rows ---------------------------------------------------------------------------
    def key(self, run: ScheduledRun) -> RunKey:
        """The run's key in the journal."""
        return run.key(self.experiment.id)

    def base_row(self) -> ResultRow:
        """The fields every row of this run shares, as observed so far (:func:`rows.base_row`)."""
        pkg = self.session.package
        return base_row(self.experiment, environment=self.env, revisions=self.revisions,
                        corpus_revision=self.validation.corpus_revision if self.validation else None,
                        duration_days=pkg.days, lots=pkg.lots,
                        package_total_usd_minor=self.package_total_minor, applied=self.applied)

    def append(self, row: ResultRow, facts: RowFacts, reported: Mapping[str, str] | None = None,
               offered: list[str] | None = None, params: Mapping[str, Any] | None = None) -> RowFacts:
        """Append one row at once (S7), its notes from ``facts`` and every row's (R11, R10, A2: a run's echo)."""
        stops = self.stops
        row, facts = every_row_facts(row, facts, self.experiment, self.env, resume_notes=self.resume_notes,
                                     past_limit_note=stops.past_limit_note if stops is not None else None,
                                     reported=reported, offered=offered, say=self.incident,
                                     params=params if params is not None else
                                     self.applied.params if self.applied is not None else {})
        if stops is not None:  # the figure as written: never one its reader refuses (H-65)
            stops.seen_row(row.phase, row.variant_id, row.elapsed_seconds)
        if row.corpus_accepted and row.corpus_revision is not None:
            self.accepted_revisions.add(row.corpus_revision)
        # K4: distinct accepted corpora of the session, never a count of rows; empty on a
        # row of a kind that counts no corpora (an accept rule: `cost` counts it, S10)
        row = row.replace(accepted_unique_corpora=corpora_cell(row.quality_metric, self.accepted_revisions))
        before = csv_signature(self.session.folder)  # summary.json moved by this row alone (A5)
        self.session.results.append(row)
        count_appended_row(self.session.folder, before, row.corpus_revision if row.corpus_accepted else None)
        self.outcome.rows_written += 1
        if row.phase != "load" or row.elapsed_seconds is not None:
            self.measured = True
        self.keys_written.append(f"{row.experiment_id}:{row.phase}:{row.variant_id}:{row.run_index}")
        # A cold or warm row ends one scheduled run: it is the next one counted (load rows are not).
        self.emit(RowAppended(row=row, done=None if row.phase == "load" else self.done + 1,
                              total=self.total))
        return facts

    def progress(self, run: ScheduledRun) -> None:
        """One more scheduled run has its row."""
        self.done += 1
        self.emit(Progress(done=self.done, total=self.total, variant_id=run.variant_id,
                           phase=run.phase, run_index=run.run_index))

    def change_session(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Keep ``change`` of ``session.toml`` for the invocation's one write (:class:`SessionWrites`, A5)."""
        self.writes.change(change)

    def flush_session(self) -> None:
        """Write the changes kept by :meth:`change_session`, if any (:meth:`SessionWrites.flush`)."""
        self.writes.flush()

    def store_environment(self) -> None:
        """Keep what the worker observed in ``session.toml`` (S7), with the changes kept, when either is new (A5)."""
        env = {k: v for k, v in self.env.items() if v is not None} | {"concurrent_load": self.load_note}
        self.writes.environment(env)

    def failed_row(self, exp: Experiment, run: ScheduledRun, detail: str) -> None:
        """The row and journal record of a run its worker's end cut short (R7); ``detail``: how."""
        facts = self.append(died_run_row(self.base_row(), exp, run, self.warm_done, detail), died_run_facts(detail))
        self.journal(RunFinishedRecord(
            run_key=self.key(run).format(), experiment_id=exp.id, variant_id=run.variant_id, phase=run.phase,
            run_index=run.run_index, ok=False, message=facts.incidents[0].words(), **facts.record_fields()))
        if self.outcome.interrupted is not None:  # ended by the signal: not a finished run
            self.cut += 1
        elif self.stops is not None:  # a timeout or a death in the first run stops too (D3)
            self.stops.first_run(run, failed=detail)
        self.progress(run)

    def finish_run(self, exp: Experiment, run: ScheduledRun, ev: WorkerRunFinished,
                   *, ended: str | None = None) -> None:
        """Append the row of a finished run and journal it (R3, R7).

        ``ended``: for a run whose rank failed under torchrun, how the group ended with it,
        put in the notes and the incident. A run that returned has its output validated
        first (V1-V8); a failed one holds no verdict.
        """
        assert self.validation is not None, "set up by start()"
        row = run_row(self.base_row(), exp, run, phase=ev.phase, warmup_iterations=ev.warmup_iterations,
                      applied=ev.applied)
        validation = self.validation.validate(Path(str(ev.output)), run) if ev.ok else None
        load = None if self.load_quiet else self.load_note  # a typed fact, never the words read back
        facts, incident = finished_run_facts(row, run, ev, validation=validation, ended=ended, load_note=load)
        row, _ = finished_run_row(row, run, ev, validation=validation, ended=ended, load_note=load)
        if incident is not None:  # the row's incident words, typed: the report pairs them by run
            self.incident(incident, kind=failure_incident_kind(ev), run_key=self.key(run).format(),
                          what=facts.incidents[0].what if facts.incidents else None)
        if self.stops is not None:  # the first run to end: the gate looks (D3)
            _first_run_gate(self, run, ev, facts, validation)
        digest = accepted_digest(self.validation.last_report) if validation is not None else None  # H-72
        facts = self.append(row, facts, ev.reported, ev.offered, (ev.applied or {}).get("params"))
        self.journal(run_finished_record(self.key(run).format(), exp.id, run, ev, facts, files_digest=digest))
        self.progress(run)

    # -- what each worker event leaves, as it arrives (S7) -------------------------------
    def on_worker_event(self, ev: WorkerEvent, rep: GroupReport) -> None:
        """Record one worker event: journal, rows, UI (the :data:`supervise.Sink` of a group)."""
        handler = _HANDLERS.get(type(ev))
        if handler is not None:
            handler(self, ev, rep)

    def _on_environment(self, ev: WorkerEnvironment, rep: GroupReport) -> None:
        self.env = dict(ev.environment)
        # rank PIDs go to the journal (worker_loaded), not to session.toml
        rep.rank_ids = {k: self.env.pop(k, None)
                        for k in ("rank_pids", "rank_create_times_s", "rank_hosts")}
        rep.leader = self.env.get("leader_rank")
        self.store_environment()
        self.emit(EnvironmentObserved(environment=self.env))

    def _on_command_started(self, ev: WorkerCommandStarted, rep: GroupReport) -> None:
        self.journal(CommandStartedRecord(experiment_id=self.experiment.id, worker=rep.name,
                                          pid=ev.pid, create_time_s=ev.create_time_s))

    def _on_loaded(self, ev: WorkerLoaded, rep: GroupReport) -> None:
        rep.loaded = True
        if self.stops is not None:
            self.stops.worker_loaded()
        self.revisions = ev.revisions or {}
        self.emit(Loaded(worker=rep.name, elapsed_s=ev.elapsed_s))
        self.journal(WorkerLoadedRecord(experiment_id=self.experiment.id, worker=rep.name,
                                        elapsed_s=ev.elapsed_s, rss_peak_bytes=ev.rss_peak_bytes,
                                        **rep.rank_ids))
        if self.refuse_revisions(rep):
            return
        facts = (self.append(load_row(self.base_row(), rep.load, ev, rep.name), load_facts(ev, rep.name))
                 if ev.elapsed_s is not None else None)  # a command's load is not timed: no row
        if rep.load_open:
            self.close_load(rep, ok=True, facts=facts)
            self.current_key = None

    def refuse_revisions(self, rep: GroupReport) -> bool:
        """Refuse the attempt when the load reported another model or tokenizer than the rows' (R1).

        Then the refusal is an incident, the load is closed in the journal without a
        row and :attr:`refused` is set: the runner starts no run after it (the worker is
        told ``stop`` at its first run boundary). Returns ``True`` when refused.
        """
        words = self.workload_revisions.admit(self.session.name, self.experiment.id, self.revisions)
        if words is None:
            return False
        if self.refused is None:
            self.refused = (REVISION_CHANGED, words)
            self.incident(words, kind="revision_changed")
        self.close_load(rep, ok=False)
        self.current_key = None
        return True

    def _on_warmup_done(self, ev: WorkerWarmupDone, rep: GroupReport) -> None:
        self.warm_done = dict(ev.per_variant)
        if self.stops is not None:
            self.stops.warmup_done()
        self.journal(WarmupDoneRecord(experiment_id=self.experiment.id, worker=rep.name,
                                      iterations=ev.iterations, runs=ev.runs,
                                      per_variant=dict(ev.per_variant)))

    def _on_run_started(self, ev: WorkerRunStarted, rep: GroupReport) -> None:
        run = rep.runs[ev.run_key]
        self.current_key = self.key(run).format()
        self.outcome.started_runs += 1
        self.journal(RunStartedRecord(
            run_key=self.key(run).format(), experiment_id=self.experiment.id,
            variant_id=run.variant_id, phase=run.phase, run_index=run.run_index, worker=rep.name))
        self.emit(RunStarted(run_key=self.current_key, variant_id=run.variant_id, phase=run.phase,
                             run_index=run.run_index, done=self.done, total=self.total))

    def _on_run_finished(self, ev: WorkerRunFinished, rep: GroupReport) -> None:
        if not rep.is_torn_by(ev):  # a torn run's row waits for the group's exit
            self.finish_run(self.experiment, rep.runs[ev.run_key], ev)
        self.current_key = None

    # -- what the group's exit leaves ---------------------------------------------------
    def group_exited(self, rep: GroupReport) -> bool:
        """Journal the exit and write the rows it still owes; ``True`` when the group died.

        A torn run (a rank failed it under torchrun) gets its row now, with how the group
        ended; a group that then ended as it should did not die.
        """
        exp = self.experiment
        code = rep.code
        if rep.stderr:  # masked whole, then cut (S6)
            lines = mask_text("\n".join(rep.stderr))[0].split("\n")[-100:]
            self.journal(WorkerStderrRecord(experiment_id=exp.id, worker=rep.name, lines=lines))
        self.journal(WorkerExitedRecord(experiment_id=exp.id, worker=rep.name, exit=describe_exit(code)))
        if rep.torn is not None:  # the row of the failed run, with how the group ended
            run, ev = rep.torn
            self.finish_run(exp, run, ev, ended=teardown_words(exp, ev, rep.rank_cause, code, rep.forced))
            code = 0 if not rep.forced else code  # the group ended as it should: no worker died
        died = code != 0
        if died or rep.timed_out:
            self.group_died(rep, code)
        if rep.load_open:  # the worker ended before loading; any row was written above
            self.journal(LoadFinishedRecord(ok=False, **load_fields(self.experiment.id, rep.load)))
        return died

    def group_died(self, rep: GroupReport, code: int | None) -> None:
        """A group that exited non-zero or timed out: its incident, and the row it cut short (R7)."""
        exp = self.experiment
        self.worker_died = True
        detail = death_detail(exp, rep, code, self.outcome.interrupted)
        if exp.nodes > 1 and not rep.heard and self.fatal_load is None and (
                rep.timed_out or rendezvous_timed_out(rep.stderr)):
            # No rank ever spoke: the other nodes did not come (the join timeout, or the
            # run timeout while waiting). Every next group would wait as long.
            self.fatal_load = no_join_words(exp, self.session.name, rep.name, measured=self.measured)
        cut: str | None = None  # the run whose row says this death (R7)
        if rep.in_flight is not None:
            cut = self.key(rep.in_flight).format()
            self.failed_row(exp, rep.in_flight, detail)
            rep.finished_keys.add(rep.in_flight.run_key)
        elif not rep.loaded and (code != 3 or rep.load_open):  # 3 with no load row: a rank's
            cut = rep.load.key.format()
            facts = self.append(died_loading_row(self.base_row(), rep.load, detail),
                                died_loading_facts(detail))  # no corpus validated
            self.close_load(rep, ok=False, facts=facts)
        # said once, in the fatal message, when there is one; kept in the journal
        self.incident(detail, exit=describe_exit(code), kind=death_kind(rep, self.outcome.interrupted),
                      worker=rep.name, show=self.fatal_load is None, run_key=cut)


def _first_run_gate(r: Recorder, run: ScheduledRun, ev: WorkerRunFinished, facts: RowFacts,
                    validation: tuple[dict[str, Any], str | None] | None) -> None:
    """Show the gate a run that ended (D3): what failed in words, else its validation report.

    A run that returned but whose output could not be validated (no file, one that does
    not read) is a failed first result too, in the validation's words.
    """
    assert r.stops is not None and r.validation is not None
    report = r.validation.last_report if validation is not None else None
    failed: str | None = None
    if not ev.ok:
        failed = next((i.what for i in facts.incidents if i.kind == "run_failed"), f"{ev.error_type}: {ev.message}")
    elif validation is not None and validation[0] and report is None:
        failed = validation[1] or "its output could not be validated"
    r.stops.first_run(run, failed=failed, report=report,
                      report_path=r.validation.last_path if report is not None else None)


def _on_incident(r: Recorder, ev: WorkerIncident, rep: GroupReport) -> None:
    """Journal an exception the worker reported, typed (R7); a failed load gets its row (S7)."""
    exp = r.experiment
    said = error_gist(ev.message) or mask_text(ev.message or "")[0]  # never torch's banner
    msg = f"{ev.where}: {ev.error_type}: {said}" + (" (out of memory)" if ev.oom else "")
    rep.last_incident = msg
    rep.last_error = f"{ev.error_type}: {said}"
    if fatal := (ev.where == "load" and unmendable_load(ev)):
        # Every worker loads the same model the same way: say it once and stop.
        r.fatal_load = load_fatal_words(exp, r.session.name, rep.name, ev, said,
                                        first=not r.keys_written, measured=r.measured)
    r.incident(f"worker {rep.name}: {msg}", trace=ev.trace, show=not fatal, worker=rep.name, what=msg,
               run_key=rep.load.key.format() if ev.where == "load" else r.current_key,
               kind=worker_incident_kind(ev))
    if ev.where == "load":
        facts = r.append(load_failed_row(r.base_row(), rep.load, msg), load_failed_facts(msg))
        r.close_load(rep, ok=False, facts=facts)  # no corpus validated


def _on_descendants_ended(r: Recorder, ev: WorkerDescendantsEnded, rep: GroupReport) -> None:
    """Journal what the worker ended after the user's command (H-25)."""
    r.journal(DescendantsEndedRecord(experiment_id=r.experiment.id, worker=rep.name,
                                     where=ev.where, pids=ev.pids, names=ev.names))


#: What each worker event leaves (journal, rows, UI), by the event's type; the others
#: (``ready``, ``stopped``, ``done``…) are the protocol's and leave nothing here.
_HANDLERS: dict[type[WorkerEvent], Callable[[Recorder, Any, GroupReport], None]] = {
    WorkerApplied: lambda r, ev, _rep: setattr(r, "applied", ev),  # what the process applied (A2)
    WorkerEnvironment: Recorder._on_environment,
    WorkerCommandStarted: Recorder._on_command_started,
    WorkerDescendantsEnded: _on_descendants_ended,
    WorkerLoaded: Recorder._on_loaded,
    WorkerWarmupDone: Recorder._on_warmup_done,
    WorkerRunStarted: Recorder._on_run_started,
    WorkerRunFinished: Recorder._on_run_finished,
    WorkerIncident: _on_incident,
}

__all__ = ["UNMENDABLE_LOAD_ERRORS", "Recorder", "attempt_number", "measured_rows",
           "run_finished_record", "unmendable_load"]
