"""Typed run events: worker → runner, runner → CLI/TUI, and the journal's records.

Why it exists: the three protocols of a run were ``dict[str, Any]`` built and read by
hand in four places; here each event kind is one frozen dataclass with ``to_json()`` /
``from_json()`` and a protocol version ``v``, and :func:`describe` is the one place where
a runner event becomes words (used by ``gpusession run --headless`` and the Run pane).

Who calls it: the worker (:mod:`gpusession.bench.worker`, sends ``Worker*`` events as
JSON lines), :mod:`gpusession.bench.process` (reads them back), the runner
(:mod:`gpusession.bench.runner`, emits runner events and writes ``*Record`` journal
records), :mod:`gpusession.core.journal` and :mod:`gpusession.core.recovery` (read the
records back). No textual, no torch.

Three channels share event names (``run_finished`` is a worker event and a journal
record with other fields), so :func:`event_from_json` takes the channel. An event name a
channel does not know — a record of the first release, or of a newer one — becomes a
:class:`GenericRecord` holding every field: reading never fails on content.

Units are in field names (``elapsed_s``, ``peak_reserved_bytes``); ``None`` means not
measured (C3, M4), never 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

#: Version of the event protocol written as ``v`` (records of the first release have none
#: and read back with ``v = 0``).
PROTOCOL_VERSION = 1

Channel = Literal["worker", "runner", "journal"]


def _opt() -> Any:
    """A field left out of the JSON when it is ``None`` (it was written only when set)."""
    return field(default=None, metadata={"omit_none": True})


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        as_dict = getattr(value, "as_dict", None)
        return as_dict() if callable(as_dict) else dataclasses.asdict(value)
    return value


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event: its name (``EVENT``) and the protocol version ``v``."""

    EVENT: ClassVar[str] = ""
    CHANNEL: ClassVar[Channel] = "journal"
    v: int = PROTOCOL_VERSION

    @property
    def name(self) -> str:
        """The event's name as written in JSON (``"run_finished"``)."""
        return self.EVENT

    def to_json(self) -> dict[str, Any]:
        """``{"event": name, "v": version, ...fields}``; JSON-ready for plain fields."""
        out: dict[str, Any] = {"event": self.EVENT, "v": self.v}
        for f in dataclasses.fields(self):
            if f.name == "v":
                continue
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.name] = _plain(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Event:
        """Build the event from its JSON object; unknown keys are ignored, missing
        fields take their defaults (``None``: not recorded)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names and k != "v"}
        version = data.get("v", 0)
        return cls(v=version if isinstance(version, int) else 0, **kw)


@dataclass(frozen=True, kw_only=True)
class GenericRecord(Event):
    """Any event without its own type (other journal records, old or unknown ones).

    Attributes:
        event: the event's name as written.
        fields: every other key of the record (``at`` included).
    """

    event: str = ""
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.event

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.event, "v": self.v}
        out.update({k: v for k, v in self.fields.items() if k not in ("event", "v")})
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GenericRecord:
        version = data.get("v", 0)
        return cls(
            v=version if isinstance(version, int) else 0,
            event=str(data.get("event", "")),
            fields={k: v for k, v in data.items() if k not in ("event", "v")},
        )

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the record, ``default`` when absent."""
        return self.fields.get(key, default)


# -- worker → runner (JSON lines on the worker's stdout) ---------------------------------
@dataclass(frozen=True, kw_only=True)
class WorkerEvent(Event):
    """Base of the events a worker process sends."""

    CHANNEL: ClassVar[Channel] = "worker"


@dataclass(frozen=True, kw_only=True)
class WorkerHello(WorkerEvent):
    """The worker started (its PID and its name in the schedule)."""

    EVENT: ClassVar[str] = "hello"
    pid: int | None = None
    worker: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerEnvironment(WorkerEvent):
    """The environment observed in the worker process (R10)."""

    EVENT: ClassVar[str] = "environment"
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WorkerLoaded(WorkerEvent):
    """The load phase ended (R3); ``elapsed_s`` is ``None`` when not timed (a command)."""

    EVENT: ClassVar[str] = "loaded"
    elapsed_s: float | None = None
    revisions: dict[str, Any] = field(default_factory=dict)
    rss_peak_bytes: int | None = None
    n_inputs: int | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerWarmupDone(WorkerEvent):
    """The warm-up ended (R4).

    Attributes:
        iterations: the announced iterations per variant.
        runs: warm-up iterations performed in all.
        per_variant: iterations performed per variant id (fewer than announced when one
            failed).
    """

    EVENT: ClassVar[str] = "warmup_done"
    iterations: int = 0
    runs: int = 0
    per_variant: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WorkerReady(WorkerEvent):
    """The worker waits for ``go`` or ``stop`` before the run ``run_key`` (H-12)."""

    EVENT: ClassVar[str] = "ready"
    run_key: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkerRunStarted(WorkerEvent):
    """The run ``run_key`` (local key, ``phase:variant:index``) starts now."""

    EVENT: ClassVar[str] = "run_started"
    run_key: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkerRunFinished(WorkerEvent):
    """One scheduled run ended, with what the worker *did* (R3, R4, R7).

    Attributes:
        run_key: the local key of the run.
        ok: the work returned; ``False`` with ``error_type``/``message``/``oom``.
        phase: ``"cold"`` or ``"warm"`` as run by this process.
        warmup_iterations: warm-up iterations of this run's variant performed by this
            process before the run (0 when none, e.g. a command or a cold worker).
        scope: the stopwatch scope used (``processing`` / ``full-chain``, R2).
        order: 1-based position of the run in this process's schedule.
        elapsed_s, event_elapsed_s: wall clock and CUDA-event seconds (``None`` when
            not measured).
        baseline_*/peak_*_bytes: allocator readings (M1); ``None`` on CPU (M4).
    """

    EVENT: ClassVar[str] = "run_finished"
    run_key: str = ""
    ok: bool = False
    phase: str | None = None
    warmup_iterations: int = 0
    scope: str | None = None
    order: int | None = None
    elapsed_s: float | None = None
    event_elapsed_s: float | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    output: str | None = None
    message: str | None = None
    error_type: str | None = None
    oom: bool = False
    truncated: int = 0
    n_inputs: int | None = None
    rss_peak_bytes: int | None = None
    expected_memory: Any = None


@dataclass(frozen=True, kw_only=True)
class WorkerIncident(WorkerEvent):
    """Something failed in the worker (``where``: ``load``, ``warmup``, ``worker``)."""

    EVENT: ClassVar[str] = "incident"
    where: str = "worker"
    ok: bool = False
    oom: bool = False
    error_type: str | None = None
    message: str | None = None
    trace: str | None = None
    variant_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerStopped(WorkerEvent):
    """The parent said ``stop`` before ``run_key``: the worker ends here (H-12)."""

    EVENT: ClassVar[str] = "stopped"
    run_key: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkerDone(WorkerEvent):
    """The worker ran its whole share."""

    EVENT: ClassVar[str] = "done"


# -- runner → CLI / TUI (Runner(on_event=...)) -----------------------------------------
@dataclass(frozen=True, kw_only=True)
class RunnerEvent(Event):
    """Base of the events the runner gives its ``on_event`` callback."""

    CHANNEL: ClassVar[Channel] = "runner"


@dataclass(frozen=True, kw_only=True)
class Progress(RunnerEvent):
    """``done`` of ``total`` scheduled runs ended (the last one named)."""

    EVENT: ClassVar[str] = "progress"
    done: int = 0
    total: int = 0
    variant_id: str | None = None
    phase: str | None = None
    run_index: int | None = None


@dataclass(frozen=True, kw_only=True)
class RowAppended(RunnerEvent):
    """A row was appended to the results CSV (S7: the moment its run ended).

    Attributes:
        row: the :class:`gpusession.core.results.ResultRow` written.
        done: for a cold or warm row, how many scheduled runs have ended with it
            (``None`` for a load row); ``total``: runs scheduled.
    """

    EVENT: ClassVar[str] = "row"
    row: Any = None
    done: int | None = None
    total: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RowAppended:
        from gpusession.core.results import ResultRow

        row = data.get("row")
        if isinstance(row, Mapping):
            names = {f.name for f in dataclasses.fields(ResultRow)}
            row = ResultRow(**{k: v for k, v in row.items() if k in names})
        version = data.get("v", 0)
        return cls(v=version if isinstance(version, int) else 0, row=row,
                   done=data.get("done"), total=int(data.get("total") or 0))


@dataclass(frozen=True, kw_only=True)
class Loaded(RunnerEvent):
    """Worker ``worker`` loaded the workload in ``elapsed_s`` (``None``: not timed)."""

    EVENT: ClassVar[str] = "loaded"
    worker: str | None = None
    elapsed_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class EnvironmentObserved(RunnerEvent):
    """The environment a worker observed (R10)."""

    EVENT: ClassVar[str] = "environment"
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class IncidentReported(RunnerEvent):
    """An incident, in one sentence (also in the journal)."""

    EVENT: ClassVar[str] = "incident"
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkerStarted(RunnerEvent):
    """A worker process started."""

    EVENT: ClassVar[str] = "worker_started"
    worker: str | None = None
    pid: int | None = None


@dataclass(frozen=True, kw_only=True)
class Finished(RunnerEvent):
    """The invocation ended; ``outcome`` is the runner's ``RunOutcome``."""

    EVENT: ClassVar[str] = "finished"
    outcome: Any = None


# -- journal records (journal.jsonl) -------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Record(Event):
    """Base of the typed journal records; ``at`` is set when read back from the file."""

    CHANNEL: ClassVar[Channel] = "journal"
    at: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class ExperimentStartedRecord(Record):
    """An invocation of an experiment started, with its drawn order (R5)."""

    EVENT: ClassVar[str] = "experiment_started"
    experiment_id: str | None = None
    drawn_order: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    concurrent_load: str | None = None
    device_override: str | None = None


@dataclass(frozen=True, kw_only=True)
class _RunRecord(Record):
    """A record about one timed run (``run_key`` is a :class:`RunKey` text)."""

    run_key: str | None = None
    experiment_id: str | None = None
    variant_id: str | None = None
    phase: str | None = None
    run_index: int | None = None


@dataclass(frozen=True, kw_only=True)
class LoadStartedRecord(_RunRecord):
    """A worker's load (a timed run, R3) is in flight (S7: recovered if never finished)."""

    EVENT: ClassVar[str] = "load_started"
    worker: str | None = None


@dataclass(frozen=True, kw_only=True)
class LoadFinishedRecord(_RunRecord):
    """A worker's load ended (``ok``: it loaded)."""

    EVENT: ClassVar[str] = "load_finished"
    ok: bool | None = None


@dataclass(frozen=True, kw_only=True)
class RunStartedRecord(_RunRecord):
    """A scheduled run is in flight (S7: recovered if never finished)."""

    EVENT: ClassVar[str] = "run_started"
    worker: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class RunFinishedRecord(_RunRecord):
    """A scheduled run ended (its row is in the CSV)."""

    EVENT: ClassVar[str] = "run_finished"
    ok: bool | None = None
    elapsed_s: float | None = _opt()
    event_elapsed_s: float | None = _opt()
    rss_peak_bytes: int | None = _opt()
    expected_memory: Any = _opt()
    truncated: int | None = _opt()
    memory_scope: str | None = _opt()
    message: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class RunRecoveredRecord(Record):
    """A run lost in a crash got its incident row on reopen (S7)."""

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


@dataclass(frozen=True, kw_only=True)
class WorkerLoadedRecord(Record):
    """A worker loaded its workload in ``elapsed_s``."""

    EVENT: ClassVar[str] = "worker_loaded"
    experiment_id: str | None = None
    worker: str | None = None
    elapsed_s: float | None = None
    rss_peak_bytes: int | None = None


@dataclass(frozen=True, kw_only=True)
class WarmupDoneRecord(Record):
    """A worker's warm-up ended (R4): announced ``iterations``, ``runs`` performed."""

    EVENT: ClassVar[str] = "warmup_done"
    experiment_id: str | None = None
    worker: str | None = None
    iterations: int | None = None
    runs: int | None = None


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


@dataclass(frozen=True, kw_only=True)
class IncidentRecord(Record):
    """An incident (R7, S7), in one sentence; the other fields only when known."""

    EVENT: ClassVar[str] = "incident"
    message: str | None = None
    experiment_id: str | None = _opt()
    kind: str | None = _opt()
    run_key: str | None = _opt()
    trace: str | None = _opt()
    exit: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class ExperimentEndedRecord(Record):
    """Base of the two ends of an invocation."""

    experiment_id: str | None = None
    rows_written: int | None = None
    runs_done: int | None = None
    runs_scheduled: int | None = None
    cancelled: bool | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class ExperimentFinishedRecord(ExperimentEndedRecord):
    """Every scheduled run ran."""

    EVENT: ClassVar[str] = "experiment_finished"


@dataclass(frozen=True, kw_only=True)
class ExperimentIncompleteRecord(ExperimentEndedRecord):
    """Some scheduled runs did not run (cancel, a worker died, H-12)."""

    EVENT: ClassVar[str] = "experiment_incomplete"


_TYPES: dict[Channel, dict[str, type[Event]]] = {"worker": {}, "runner": {}, "journal": {}}
for _cls in (
    WorkerHello, WorkerEnvironment, WorkerLoaded, WorkerWarmupDone, WorkerReady,
    WorkerRunStarted, WorkerRunFinished, WorkerIncident, WorkerStopped, WorkerDone,
    Progress, RowAppended, Loaded, EnvironmentObserved, IncidentReported, WorkerStarted,
    Finished,
    ExperimentStartedRecord, LoadStartedRecord, LoadFinishedRecord, RunStartedRecord,
    RunFinishedRecord, RunRecoveredRecord, WorkerStartedRecord, WorkerLoadedRecord,
    WarmupDoneRecord, WorkerStderrRecord, WorkerExitedRecord, IncidentRecord,
    ExperimentFinishedRecord, ExperimentIncompleteRecord,
):
    _TYPES[_cls.CHANNEL][_cls.EVENT] = _cls


def event_types(channel: Channel) -> dict[str, type[Event]]:
    """The typed events of ``channel`` by name (a copy)."""
    return dict(_TYPES[channel])


def event_from_json(data: Mapping[str, Any], channel: Channel = "journal") -> Event:
    """The typed event for one JSON object of ``channel``.

    An unknown name, or a known one whose fields do not fit (a record of another
    release), gives a :class:`GenericRecord` with every field: never an exception.
    """
    cls = _TYPES[channel].get(str(data.get("event", "")))
    if cls is None:
        return GenericRecord.from_json(data)
    try:
        return cls.from_json(data)
    except (TypeError, ValueError):
        return GenericRecord.from_json(data)


# -- the one renderer to words ------------------------------------------------------------
def _seconds(value: float | None, digits: int, absent: str) -> str:
    return absent if value is None else f"{value:.{digits}f} s"


def _environment_words(env: Mapping[str, Any]) -> str:
    def said(key: str, absent: str = "not recorded") -> str:
        value = env.get(key)
        return absent if value is None or value == "" else str(value)

    reason = env.get("nvml_reason")
    driver = env.get("driver_version") or ("not read" + (f" ({reason})" if reason else ""))
    runtime = env.get("runtime_version") or ("none (CPU)" if env.get("device") == "cpu" else "not recorded")
    return (f"environment: device {said('device')}, GPU {said('gpu_model', 'none')}, "
            f"GPUs used {said('gpu_count')}, torch {said('torch_version', 'not used')}, "
            f"runtime {runtime}, driver {driver}")


_ACCEPTED_WORDS = {True: "accepted", False: "REJECTED", None: "not validated"}


def describe(event: Event) -> str | None:
    """The one line a person reads for a runner event, or ``None`` when the event is
    not told in words (progress moves a bar; the end has its own summary).

    Used by ``gpusession run --headless`` (printed) and the Run pane (notified).
    """
    if isinstance(event, RowAppended):
        r = event.row
        if r.phase == "load":
            return f"          load  {r.variant_id:<10} {_seconds(r.elapsed_seconds, 3, 'failed')}"
        el = _seconds(r.elapsed_seconds, 4, "not measured")
        done = "?" if event.done is None else event.done
        return (f"[{done:>3}/{event.total or '?'}] {r.phase:<5} {r.variant_id:<10} "
                f"run {r.run_index:<3} {el}, corpus {_ACCEPTED_WORDS.get(r.corpus_accepted)}")
    if isinstance(event, EnvironmentObserved):
        return _environment_words(event.environment)
    if isinstance(event, IncidentReported):
        return f"incident: {event.message}"
    return None


__all__ = [
    "PROTOCOL_VERSION", "EnvironmentObserved", "Event", "ExperimentEndedRecord",
    "ExperimentFinishedRecord", "ExperimentIncompleteRecord", "ExperimentStartedRecord",
    "Finished", "GenericRecord", "IncidentRecord", "IncidentReported", "LoadFinishedRecord",
    "LoadStartedRecord", "Loaded", "Progress", "Record", "RowAppended", "RunFinishedRecord",
    "RunRecoveredRecord", "RunStartedRecord", "RunnerEvent", "WarmupDoneRecord", "WorkerDone",
    "WorkerEnvironment", "WorkerEvent", "WorkerExitedRecord", "WorkerHello", "WorkerIncident",
    "WorkerLoaded", "WorkerLoadedRecord", "WorkerReady", "WorkerRunFinished", "WorkerRunStarted",
    "WorkerStarted", "WorkerStartedRecord", "WorkerStderrRecord", "WorkerStopped",
    "WorkerWarmupDone", "describe", "event_from_json", "event_types",
]
