"""Typed run events: worker → runner, runner → CLI/TUI, and the journal's records.

Why it exists: the three protocols of a run were ``dict[str, Any]`` built and read by
hand in four places; here each event kind is one frozen dataclass with ``to_json()`` /
``from_json()`` and a protocol version ``v``, and :func:`describe` is the one place where
a runner event becomes words (used by ``gpusession run --headless`` and the Run pane).

Who calls it: the worker (:mod:`gpusession.bench.worker`, sends ``Worker*`` events as
JSON lines), :mod:`gpusession.bench.process` (reads them back), the runner
(:mod:`gpusession.bench.runner`, emits runner events and writes ``*Record`` journal
records), :mod:`gpusession.core.folder.journal` and :mod:`gpusession.core.folder.recovery` (read the
records back). No textual, no torch.

Three channels share event names (``run_finished`` is a worker event and a journal
record with other fields), so :func:`event_from_json` takes the channel. An event name a
channel does not know — a record of the first release, or of a newer one — becomes a
:class:`GenericRecord` holding every field: reading never fails on content.

Units are in field names (``elapsed_s``, ``peak_reserved_bytes``); ``None`` means not
measured (C3, M4), never 0.

The package, by job: :mod:`~gpusession.core.events.base` (``Event``, JSON round trip),
:mod:`~gpusession.core.events.worker`, :mod:`~gpusession.core.events.runner` and
:mod:`~gpusession.core.events.records` (the three channels),
:mod:`~gpusession.core.events.registry` (JSON → type) and
:mod:`~gpusession.core.events.words` (:func:`describe`). Import from
``gpusession.core.events``: the submodules are its layout, not its interface.
"""

from __future__ import annotations

from gpusession.core.events.base import PROTOCOL_VERSION, Channel, Event, GenericRecord
from gpusession.core.events.records import (
    AttemptFailedRecord,
    CommandStartedRecord,
    ExperimentEndedRecord,
    ExperimentFinishedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    IncidentRecord,
    LoadFinishedRecord,
    LoadStartedRecord,
    Record,
    RunFinishedRecord,
    RunInterruptedRecord,
    RunRecoveredRecord,
    RunStartedRecord,
    WarmupDoneRecord,
    WorkerExitedRecord,
    WorkerLoadedRecord,
    WorkerStartedRecord,
    WorkerStderrRecord,
)
from gpusession.core.events.registry import event_from_json, event_types
from gpusession.core.events.runner import (
    EnvironmentObserved,
    Finished,
    IncidentReported,
    Loaded,
    Progress,
    RowAppended,
    RunnerEvent,
    WorkerStarted,
)
from gpusession.core.events.words import corpus_verdict, describe
from gpusession.core.events.worker import (
    WorkerCommandStarted,
    WorkerDone,
    WorkerEnvironment,
    WorkerEvent,
    WorkerHello,
    WorkerIncident,
    WorkerLoaded,
    WorkerReady,
    WorkerRunFinished,
    WorkerRunStarted,
    WorkerStopped,
    WorkerWarmupDone,
)

__all__ = [
    "AttemptFailedRecord", "Channel", "CommandStartedRecord", "EnvironmentObserved", "Event",
    "ExperimentEndedRecord", "ExperimentFinishedRecord", "ExperimentIncompleteRecord",
    "ExperimentStartedRecord", "Finished", "GenericRecord", "IncidentRecord",
    "IncidentReported", "LoadFinishedRecord", "LoadStartedRecord", "Loaded",
    "PROTOCOL_VERSION", "Progress", "Record", "RowAppended", "RunFinishedRecord",
    "RunInterruptedRecord", "RunRecoveredRecord", "RunStartedRecord", "RunnerEvent",
    "WarmupDoneRecord", "WorkerCommandStarted", "WorkerDone", "WorkerEnvironment",
    "WorkerEvent", "WorkerExitedRecord", "WorkerHello", "WorkerIncident", "WorkerLoaded",
    "WorkerLoadedRecord", "WorkerReady", "WorkerRunFinished", "WorkerRunStarted",
    "WorkerStarted", "WorkerStartedRecord", "WorkerStderrRecord", "WorkerStopped",
    "WorkerWarmupDone", "corpus_verdict", "describe", "event_from_json", "event_types",
]
