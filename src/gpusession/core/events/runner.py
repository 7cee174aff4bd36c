"""Runner → CLI/TUI events: what ``Runner(on_event=...)`` is given.

Why it exists: the CLI progress printer and the Run pane follow a run through these
types, and :func:`gpusession.core.events.describe` turns them into words. Who calls it:
the runner (:mod:`gpusession.bench.runner`) emits them; ``gpusession run`` and the Run
pane receive them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpusession.core.events.base import Channel, Event
from gpusession.core.records.outcome import RunOutcome
from gpusession.core.records.results import ResultRow


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
        row: the :class:`gpusession.core.records.results.ResultRow` written.
        done: for a cold or warm row, how many scheduled runs have ended with it
            (``None`` for a load row); ``total``: runs scheduled.
    """

    EVENT: ClassVar[str] = "row"
    row: Any = None
    done: int | None = None
    total: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RowAppended:
        """Read the event back, the row as a :class:`gpusession.core.records.results.ResultRow`.

        Unknown row keys are dropped; a row that is not a mapping is kept as it is.

        Raises:
            TypeError: a row field that does not fit ``ResultRow``.
            ValueError: a ``total`` that is not a number.
        """
        row = data.get("row")
        if isinstance(row, Mapping):
            names = {f.name for f in dataclasses.fields(ResultRow)}
            row = ResultRow(**{k: v for k, v in row.items() if k in names})
        version = data.get("v", 0)
        return cls(v=version if isinstance(version, int) else 0, row=row,
                   done=data.get("done"), total=int(data.get("total") or 0))


@dataclass(frozen=True, kw_only=True)
class RunStarted(RunnerEvent):
    """A scheduled run starts now: the in-flight line of ``run`` counts from here.

    Attributes:
        run_key: the journal's key of the run (``experiment:phase:variant:index``).
        variant_id, phase, run_index: which run.
        done: scheduled runs already ended; ``total``: runs scheduled.
    """

    EVENT: ClassVar[str] = "run_started"
    run_key: str = ""
    variant_id: str | None = None
    phase: str | None = None
    run_index: int | None = None
    done: int = 0
    total: int = 0


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
    #: a group over several nodes: what it waits for and how to start it
    waiting_for_nodes: str | None = None


@dataclass(frozen=True, kw_only=True)
class Finished(RunnerEvent):
    """The invocation ended; ``outcome`` is what it produced (``None`` only in a test's bare event)."""

    EVENT: ClassVar[str] = "finished"
    outcome: RunOutcome | None = None

