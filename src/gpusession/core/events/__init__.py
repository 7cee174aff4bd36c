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
:mod:`~gpusession.core.events.registry` (JSON → type),
:mod:`~gpusession.core.events.reading` (the one reader of ``journal.jsonl``: typed records,
unreadable lines as notes) and :mod:`~gpusession.core.events.words` (:func:`describe`).
Import from ``gpusession.core.events``: the submodules are its layout, not its interface.

The names load on first use (:func:`__getattr__`): ``gpusession status`` reads the journal
through :mod:`~gpusession.core.events.reading` without paying for the record classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpusession.core.events.actions import (
        ChecklistDoneRecord,
        ChecklistItemAddedRecord,
        ChecklistUndoneRecord,
        DemoCorpusWrittenRecord,
        DemoModelTrainedRecord,
        ExperimentDefinedRecord,
        ExperimentForkedRecord,
        ManifestWrittenRecord,
        OrderDeviationObservedRecord,
        OrderEventRecord,
        OrderSetRecord,
        PackageSetRecord,
        ReportWrittenRecord,
        SessionCreatedRecord,
        SessionRenamedRecord,
        ValidationRecord,
    )
    from gpusession.core.events.base import PROTOCOL_VERSION, Channel, Event, GenericRecord
    from gpusession.core.events.reading import JournalRead, Unreadable, read_journal, read_records
    from gpusession.core.events.records import (
        AttemptFailedRecord,
        CommandStartedRecord,
        DescendantsEndedRecord,
        ExperimentEndedRecord,
        ExperimentFinishedRecord,
        ExperimentIncompleteRecord,
        ExperimentStartedRecord,
        ExperimentStoppedRecord,
        IncidentRecord,
        LoadFinishedRecord,
        LoadStartedRecord,
        Record,
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
        WorkerDescendantsEnded,
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

#: Where each public name lives (submodule of this package).
_WHERE = {
    "ChecklistDoneRecord": "actions",
    "ChecklistItemAddedRecord": "actions",
    "ChecklistUndoneRecord": "actions",
    "DemoCorpusWrittenRecord": "actions",
    "DemoModelTrainedRecord": "actions",
    "ExperimentDefinedRecord": "actions",
    "ExperimentForkedRecord": "actions",
    "ManifestWrittenRecord": "actions",
    "OrderDeviationObservedRecord": "actions",
    "OrderEventRecord": "actions",
    "OrderSetRecord": "actions",
    "PackageSetRecord": "actions",
    "ReportWrittenRecord": "actions",
    "SessionCreatedRecord": "actions",
    "SessionRenamedRecord": "actions",
    "ValidationRecord": "actions",
    "JournalRead": "reading",
    "Unreadable": "reading",
    "read_journal": "reading",
    "read_records": "reading",
    "AttemptFailedRecord": "records",
    "Channel": "base",
    "CommandStartedRecord": "records",
    "DescendantsEndedRecord": "records",
    "EnvironmentObserved": "runner",
    "Event": "base",
    "ExperimentEndedRecord": "records",
    "ExperimentFinishedRecord": "records",
    "ExperimentIncompleteRecord": "records",
    "ExperimentStartedRecord": "records",
    "ExperimentStoppedRecord": "records",
    "Finished": "runner",
    "GenericRecord": "base",
    "IncidentRecord": "records",
    "IncidentReported": "runner",
    "LoadFinishedRecord": "records",
    "LoadStartedRecord": "records",
    "Loaded": "runner",
    "PROTOCOL_VERSION": "base",
    "Progress": "runner",
    "Record": "records",
    "RowAppended": "runner",
    "RunFinishedRecord": "records",
    "RunInterruptedRecord": "records",
    "RunOverrideRecord": "records",
    "RunRecoveredRecord": "records",
    "RunStartedRecord": "records",
    "RunnerEvent": "runner",
    "WarmupDoneRecord": "records",
    "WorkerCommandStarted": "worker",
    "WorkerDescendantsEnded": "worker",
    "WorkerDone": "worker",
    "WorkerEnvironment": "worker",
    "WorkerEvent": "worker",
    "WorkerExitedRecord": "records",
    "WorkerHello": "worker",
    "WorkerIncident": "worker",
    "WorkerLoaded": "worker",
    "WorkerLoadedRecord": "records",
    "WorkerReady": "worker",
    "WorkerRunFinished": "worker",
    "WorkerRunStarted": "worker",
    "WorkerStarted": "runner",
    "WorkerStartedRecord": "records",
    "WorkerStderrRecord": "records",
    "WorkerStopped": "worker",
    "WorkerWarmupDone": "worker",
    "corpus_verdict": "words",
    "describe": "words",
    "event_from_json": "registry",
    "event_types": "registry",
}


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its submodule on first use (PEP 562)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from gpusession.core.events import (
        actions,
        base,
        reading,
        records,
        registry,
        runner,
        words,
        worker,
    )

    module = {"actions": actions, "base": base, "reading": reading, "records": records,
              "registry": registry, "runner": runner, "worker": worker, "words": words}[where]
    value = getattr(module, name)
    globals()[name] = value
    return value


__all__ = [
    "AttemptFailedRecord",
    "Channel",
    "ChecklistDoneRecord",
    "ChecklistItemAddedRecord",
    "ChecklistUndoneRecord",
    "DemoCorpusWrittenRecord",
    "DemoModelTrainedRecord",
    "CommandStartedRecord",
    "DescendantsEndedRecord",
    "EnvironmentObserved",
    "Event",
    "ExperimentDefinedRecord",
    "ExperimentEndedRecord",
    "ExperimentFinishedRecord",
    "ExperimentForkedRecord",
    "ExperimentIncompleteRecord",
    "ExperimentStartedRecord",
    "ExperimentStoppedRecord",
    "Finished",
    "GenericRecord",
    "IncidentRecord",
    "IncidentReported",
    "JournalRead",
    "LoadFinishedRecord",
    "LoadStartedRecord",
    "Loaded",
    "ManifestWrittenRecord",
    "OrderDeviationObservedRecord",
    "OrderEventRecord",
    "OrderSetRecord",
    "PROTOCOL_VERSION",
    "PackageSetRecord",
    "Progress",
    "Record",
    "ReportWrittenRecord",
    "RowAppended",
    "RunFinishedRecord",
    "RunInterruptedRecord",
    "RunOverrideRecord",
    "RunRecoveredRecord",
    "RunStartedRecord",
    "RunnerEvent",
    "SessionCreatedRecord",
    "SessionRenamedRecord",
    "Unreadable",
    "ValidationRecord",
    "WarmupDoneRecord",
    "WorkerCommandStarted",
    "WorkerDescendantsEnded",
    "WorkerDone",
    "WorkerEnvironment",
    "WorkerEvent",
    "WorkerExitedRecord",
    "WorkerHello",
    "WorkerIncident",
    "WorkerLoaded",
    "WorkerLoadedRecord",
    "WorkerReady",
    "WorkerRunFinished",
    "WorkerRunStarted",
    "WorkerStarted",
    "WorkerStartedRecord",
    "WorkerStderrRecord",
    "WorkerStopped",
    "WorkerWarmupDone",
    "corpus_verdict",
    "describe",
    "event_from_json",
    "event_types",
    "read_journal",
    "read_records",
]
