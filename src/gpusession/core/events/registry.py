"""Event name → type, per channel: how a JSON object becomes a typed event.

Why it exists: three channels share event names (``run_finished`` is a worker event and
a journal record with other fields), so the lookup takes the channel. Who calls it:
:mod:`gpusession.bench.process` (worker lines), :mod:`gpusession.core.folder.journal` (journal
lines), through :mod:`gpusession.core.events`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpusession.core.events.actions import ACTION_RECORDS
from gpusession.core.events.base import Channel, Event, GenericRecord
from gpusession.core.events.records import (
    AttemptFailedRecord,
    CommandStartedRecord,
    DescendantsEndedRecord,
    ExperimentFinishedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    ExperimentStoppedRecord,
    IncidentRecord,
    LoadFinishedRecord,
    LoadStartedRecord,
    RunFinishedRecord,
    RunInterruptedRecord,
    RunOverrideRecord,
    RunRecoveredRecord,
    RunStartedRecord,
    WarmupDoneRecord,
    WorkerExitedRecord,
    WorkerLoadedRecord,
    WorkerStartedRecord,
    WorkerStderrRecord,
)
from gpusession.core.events.runner import (
    EnvironmentObserved,
    Finished,
    IncidentReported,
    Loaded,
    Progress,
    RowAppended,
    WorkerStarted,
)
from gpusession.core.events.worker import (
    WorkerCommandStarted,
    WorkerDescendantsEnded,
    WorkerDone,
    WorkerEnvironment,
    WorkerHello,
    WorkerIncident,
    WorkerLoaded,
    WorkerReady,
    WorkerRunFinished,
    WorkerRunStarted,
    WorkerStopped,
    WorkerWarmupDone,
)

_TYPES: dict[Channel, dict[str, type[Event]]] = {"worker": {}, "runner": {}, "journal": {}}
_cls: type[Event]
for _cls in (
    WorkerHello, WorkerEnvironment, WorkerLoaded, WorkerWarmupDone, WorkerReady,
    WorkerRunStarted, WorkerRunFinished, WorkerIncident, WorkerStopped, WorkerDone,
    Progress, RowAppended, Loaded, EnvironmentObserved, IncidentReported, WorkerStarted,
    Finished,
    ExperimentStartedRecord, LoadStartedRecord, LoadFinishedRecord, RunStartedRecord,
    RunFinishedRecord, RunRecoveredRecord, WorkerStartedRecord, WorkerLoadedRecord,
    WarmupDoneRecord, WorkerStderrRecord, WorkerExitedRecord, IncidentRecord,
    ExperimentFinishedRecord, ExperimentIncompleteRecord,
    WorkerCommandStarted, CommandStartedRecord, RunInterruptedRecord, AttemptFailedRecord,
    WorkerDescendantsEnded, DescendantsEndedRecord,
    ExperimentStoppedRecord, RunOverrideRecord,
    *ACTION_RECORDS,
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

