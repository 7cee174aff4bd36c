"""Journal records: the typed lines of a session's ``journal.jsonl``.

Why it exists: the journal is the run's own account (S7: what was in flight at a crash
is found here); its records are typed events like the worker's and the runner's, so a
reader (a detached run followed from the TUI, recovery) gets types, not dicts. Who calls
it: the runner writes them through ``Session.journal``; :mod:`gpusession.core.folder.journal`
and :mod:`gpusession.core.folder.recovery` read them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpusession.core.events.base import Channel, Event, _opt


@dataclass(frozen=True, kw_only=True)
class Record(Event):
    """Base of the typed journal records; ``at`` is set when read back from the file."""

    CHANNEL: ClassVar[Channel] = "journal"
    at: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class ExperimentStartedRecord(Record):
    """An invocation of an experiment started, with its drawn order (R5).

    Attributes:
        runs: the run keys it schedules, in order (``"warm:batch-4:2"``).
        resumes: for ``run --resume``, the number of the attempt whose stored schedule it
            continues (1 = the experiment's first ``experiment_started``); its ``runs``
            are then that schedule's runs left unmeasured. ``None`` for a plain run.
        message: what a resume does, in words; ``None`` for a plain run.
    """

    EVENT: ClassVar[str] = "experiment_started"
    experiment_id: str | None = None
    drawn_order: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    concurrent_load: str | None = None
    device_override: str | None = None
    resumes: int | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class _RunRecord(Record):
    """A record about one timed run (``run_key`` is a :class:`RunKey` text)."""

    run_key: str | None = None
    experiment_id: str | None = None
    variant_id: str | None = None
    phase: str | None = None
    run_index: int | None = None


@dataclass(frozen=True, kw_only=True)
class _RowFactsFields:
    """The typed facts of the row a record ends (R7, R10): what its ``notes`` cell says.

    The shape of :meth:`gpusession.core.records.notefacts.RowFacts.record_fields`;
    ``incidents`` is absent in a record written before the facts were typed (its row's
    notes are then the only account) and a list, maybe empty, in every newer one.

    Attributes:
        incidents: ``[{"kind", "what"}]``, the row's incidents.
        energy_j: the run's joules on the GPU (NVML's counter), absent when unread or on CPU.
        energy_unread: why a GPU run has no energy reading, in words.
        energy_unsupported: the GPU has no energy counter.
        remarks: ``[{"kind", "text"}]``, the row's other facts in the order its notes say them.
    """

    incidents: list[dict[str, str]] | None = _opt()
    energy_j: float | None = _opt()
    energy_unread: str | None = _opt()
    energy_unsupported: bool | None = _opt()
    remarks: list[dict[str, str]] | None = _opt()


@dataclass(frozen=True, kw_only=True)
class LoadStartedRecord(_RunRecord):
    """A worker's load (a timed run, R3) is in flight (S7: recovered if never finished)."""

    EVENT: ClassVar[str] = "load_started"
    worker: str | None = None


@dataclass(frozen=True, kw_only=True)
class LoadFinishedRecord(_RowFactsFields, _RunRecord):
    """A worker's load ended (``ok``: it loaded); the facts of its row when it has one."""

    EVENT: ClassVar[str] = "load_finished"
    ok: bool | None = None


@dataclass(frozen=True, kw_only=True)
class RunStartedRecord(_RunRecord):
    """A scheduled run is in flight (S7: recovered if never finished)."""

    EVENT: ClassVar[str] = "run_started"
    worker: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class RunFinishedRecord(_RowFactsFields, _RunRecord):
    """A scheduled run ended (its row is in the CSV, with the facts here)."""

    EVENT: ClassVar[str] = "run_finished"
    ok: bool | None = None
    elapsed_s: float | None = _opt()
    event_elapsed_s: float | None = _opt()
    event_stream: str | None = _opt()
    rss_peak_bytes: int | None = _opt()
    expected_memory: Any = _opt()
    truncated: int | None = _opt()
    tokens: int | None = _opt()
    context: int | None = _opt()
    unmeasured_pass: str | None = _opt()
    memory_scope: str | None = _opt()
    message: str | None = _opt()
    #: what a command reported it ran on (``$GPUSESSION_REPORT``: device, versions), checked
    reported: dict[str, str] | None = _opt()
    #: a command's CPU seconds (user, kernel) and peak resident set in bytes, from ``os.wait4``
    #: (itself and the children it waited for); absent when not measured (hyperfine's figures)
    cpu_user_s: float | None = _opt()
    cpu_system_s: float | None = _opt()
    max_rss_bytes: int | None = _opt()
    #: when an accept rule accepted the run's output: the SHA-256 of the ``files`` list its
    #: accept report holds (H-72), what the count ties the report to; absent otherwise and
    #: in records written before it was typed (their row's notes say it)
    files_digest: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class RunRecoveredRecord(_RowFactsFields, Record):
    """A run lost in a crash got its incident row on reopen (S7), with that row's facts.

    Without facts (``incidents`` absent) when its row had been written before the stop
    (then only the journal's end of the run was lost, and no row is added).
    """

    EVENT: ClassVar[str] = "run_recovered"
    run_key: str | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerStartedRecord(Record):
    """A worker process started."""

    EVENT: ClassVar[str] = "worker_started"
    experiment_id: str | None = None
    worker: str | None = None
    pid: int | None = None
    #: the worker's start time (seconds since the epoch): with ``pid`` it names the
    #: process, so a reused PID is never ended; absent in older journals.
    create_time_s: float | None = _opt()


@dataclass(frozen=True, kw_only=True)
class CommandStartedRecord(Record):
    """A worker started the user's command (its PID and start time; H-14).

    Recovery ends such a command if it is still alive before a new run starts.
    """

    EVENT: ClassVar[str] = "command_started"
    experiment_id: str | None = None
    worker: str | None = None
    pid: int | None = None
    create_time_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class DescendantsEndedRecord(Record):
    """Processes a run left alive were ended, so two measurements never overlap (H-25).

    ``where``: ``"after the command"`` (the worker ended what the user's command left
    when it exited) or ``"after the worker"`` (the runner ended what carried its
    ``GPUSESSION_PARENT_PID`` marker once the worker's group had ended). ``pids`` and
    ``names``: the processes ended and their program names, in the same order.
    """

    EVENT: ClassVar[str] = "descendants_ended"
    experiment_id: str | None = None
    worker: str | None = None
    where: str | None = None
    pids: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class RunInterruptedRecord(Record):
    """The run was ended at once by a signal to gpusession (H-14).

    Attributes:
        signal: the signal's name, ``"SIGHUP"`` (hang-up: the terminal or ssh went away)
            or ``"SIGTERM"``.
        run_key: the run in flight (a load is a run too), ``None`` between runs.
        experiment_id: the experiment being run.
        message: the sentence for people ("interrupted by SIGHUP at …").
    """

    EVENT: ClassVar[str] = "run_interrupted"
    signal: str | None = None
    run_key: str | None = None
    experiment_id: str | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerLoadedRecord(Record):
    """A worker loaded its workload in ``elapsed_s``.

    ``rank_pids``: the PID of each rank of a torchrun group, by rank (ranks
    run in their own sessions, so recovery needs them); absent for one process.
    ``rank_create_times_s`` and ``rank_hosts``: each rank's start time (seconds since
    the epoch, psutil's) and host name, by rank: recovery ends only a rank of this host
    whose PID *and* start time match (a reused PID is spared).
    """

    EVENT: ClassVar[str] = "worker_loaded"
    experiment_id: str | None = None
    worker: str | None = None
    elapsed_s: float | None = None
    rss_peak_bytes: int | None = None
    rank_pids: list[int] | None = _opt()
    rank_create_times_s: list[float | None] | None = _opt()
    rank_hosts: list[str | None] | None = _opt()


@dataclass(frozen=True, kw_only=True)
class WarmupDoneRecord(Record):
    """A worker's warm-up ended (R4): announced ``iterations``, ``runs`` performed.

    ``per_variant`` holds the iterations performed per variant id (fewer than announced
    where a warm-up failed part-way).
    """

    EVENT: ClassVar[str] = "warmup_done"
    experiment_id: str | None = None
    worker: str | None = None
    iterations: int | None = None
    runs: int | None = None
    per_variant: dict[str, int] | None = _opt()


@dataclass(frozen=True, kw_only=True)
class WorkerStderrRecord(Record):
    """The last lines a worker wrote to stderr."""

    EVENT: ClassVar[str] = "worker_stderr"
    experiment_id: str | None = None
    worker: str | None = None
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class WorkerExitedRecord(Record):
    """A worker process ended (``exit`` in words)."""

    EVENT: ClassVar[str] = "worker_exited"
    experiment_id: str | None = None
    worker: str | None = None
    exit: str | None = None


#: The kinds of incident the runner journals (``IncidentRecord.kind``, R7), each with what it
#: means; recovery's and the TUI's kinds are their modules' (``run_lost``, ``cut_line``…).
RUNNER_INCIDENT_KINDS: dict[str, str] = {
    "out_of_memory": "a run or a load ran out of memory",
    "exception": "the workload raised an exception",
    "output_refused": "the harness refused the run's output (a link, a special file)",
    "load_failed": "the workload's load raised",
    "worker_died": "a worker exited on its own before its runs ended (crashed worker)",
    "timed_out": "a run passed its time limit and its worker was killed (limit stop)",
    "interrupted": "gpusession was told to stop and ended the run at once (killed by a signal)",
    "stopped": "the experiment stopped: every next worker would fail the same way",
    "revision_changed": "the load reported another model or tokenizer than the rows'",
    "validation": "the output cannot be validated as defined (the corpus, the rule)",
    "past_bound": "a figure past its column's bound was left empty: the run counts as failed",
    "runs_not_run": "scheduled runs a worker did not run (a fresh worker may run them)",
    "leftover_ended": "processes an earlier run left alive were ended before this one (H-14)",
}


@dataclass(frozen=True, kw_only=True)
class IncidentRecord(Record):
    """An incident (R7, S7), in one sentence; the other fields only when known.

    Attributes:
        message: the sentence for people (who said it included).
        kind: what kind of incident (:data:`RUNNER_INCIDENT_KINDS`, recovery's kinds);
            absent in a record written before incidents were typed.
        run_key: the run it cut or concerns (a load is a run too), when one.
        worker: the worker it happened in, when one.
        what: the failure's own words without who said it, the same words as the
            incident of the run's row: the report groups by ``run_key`` and these, never
            by reading ``message``. Absent in older records.
    """

    EVENT: ClassVar[str] = "incident"
    message: str | None = None
    experiment_id: str | None = _opt()
    kind: str | None = _opt()
    run_key: str | None = _opt()
    worker: str | None = _opt()
    what: str | None = _opt()
    trace: str | None = _opt()
    exit: str | None = _opt()
    #: the journal line the incident is about (an unreadable or cut line), 1-based
    line: int | None = _opt()


@dataclass(frozen=True, kw_only=True)
class ExperimentEndedRecord(Record):
    """Base of the two ends of an invocation."""

    experiment_id: str | None = None
    rows_written: int | None = None
    runs_done: int | None = None
    runs_scheduled: int | None = None
    cancelled: bool | None = None
    message: str | None = None
    #: why it stopped early on purpose: ``"session-limit"`` (D1) or ``"first-result"`` (D3)
    stopped: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class ExperimentFinishedRecord(ExperimentEndedRecord):
    """Every scheduled run ran."""

    EVENT: ClassVar[str] = "experiment_finished"


@dataclass(frozen=True, kw_only=True)
class ExperimentIncompleteRecord(ExperimentEndedRecord):
    """Some scheduled runs did not run (cancel, a worker died, H-12)."""

    EVENT: ClassVar[str] = "experiment_incomplete"



@dataclass(frozen=True, kw_only=True)
class AttemptFailedRecord(Record):
    """An invocation ended without measuring anything (the workload did not load).

    Its failed rows stay in the CSV (C1); ``run_keys`` names them, so the summary shows
    them as attempt ``attempt`` of the experiment, apart from the rows of a corrected
    definition, and they do not count as measurements (a corrected definition keeps the
    experiment id).
    """

    EVENT: ClassVar[str] = "attempt_failed"
    experiment_id: str | None = None
    attempt: int | None = None
    run_keys: list[str] = field(default_factory=list)
    workload: str | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class ExperimentStoppedRecord(Record):
    """The runner stopped an experiment at a run boundary on purpose (D1, D3).

    Attributes:
        experiment_id: the experiment.
        reason: ``"session-limit"`` (the next run would end past the session limit, D1)
            or ``"first-result"`` (its first measured result had a major defect, D3).
        run_key: the run not started (``None`` when the stop came after the last run).
        message: the sentence for people ("stopped at the session limit (stop by …): …",
            "stopped after the first result: 300 IDs missing — fix and run again; …").
        limit_at: the session limit (ISO 8601, D1).
        expected_s: the expected duration of the run not started (D1).
        report: the validation report of the defective result (D3).
    """

    EVENT: ClassVar[str] = "experiment_stopped"
    experiment_id: str | None = None
    reason: str | None = None
    run_key: str | None = None
    message: str | None = None
    limit_at: str | None = _opt()
    expected_s: float | None = _opt()
    report: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class RunOverrideRecord(Record):
    """The person switched a stop of the runner off for one invocation (D1, D3).

    Attributes:
        experiment_id: the experiment.
        override: ``"past-limit"`` (runs may end after the session limit, D1) or
            ``"continue-on-reject"`` (a defective first result does not stop it, D3).
        message: the sentence for people.
    """

    EVENT: ClassVar[str] = "run_override"
    experiment_id: str | None = None
    override: str | None = None
    message: str | None = None
