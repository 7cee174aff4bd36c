"""Journal records of what people and commands did to a session (not of a run).

Why it exists: the session's own actions (created, renamed, package set, experiment
defined, order events, checklist ticks, validation, manifest, report) were written as
free-form ``session.journal("name", **fields)`` records; each is a typed record here,
with the same on-disk name and fields, so old sessions read the same and every reader
gets types (S7: the journal is the session's account). Who calls it:
:mod:`gpusession.core.folder.session`, :mod:`gpusession.core.folder.experiments`,
:mod:`gpusession.core.money.order`, :mod:`gpusession.core.retrieval` (checklist,
evidence, report) and the commands ``validate`` and ``manifest``; read back by
:mod:`gpusession.core.events.reading`.

Fields are ``None`` when not recorded (an older line without them); a settings table
(``package``, ``settings``) is the TOML table as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpusession.core.events.records import Record


@dataclass(frozen=True, kw_only=True)
class SessionCreatedRecord(Record):
    """The session was created with ``package`` (its ``[package]`` table; K1, S6)."""

    EVENT: ClassVar[str] = "session_created"
    package: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SessionStartedFromRecord(Record):
    """The session was started from ``source`` (``new --from``, S11): ``carried`` says what, one line each."""

    EVENT: ClassVar[str] = "session_started_from"
    source: str | None = None
    carried: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class SessionRenamedRecord(Record):
    """The session's folder was renamed from ``old`` to ``new``."""

    EVENT: ClassVar[str] = "session_renamed"
    old: str | None = None
    new: str | None = None


@dataclass(frozen=True, kw_only=True)
class PackageSetRecord(Record):
    """The package was set to ``package`` (its ``[package]`` table; K1, S6)."""

    EVENT: ClassVar[str] = "package_set"
    package: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ExperimentDefinedRecord(Record):
    """An experiment was defined with ``settings`` (its table, fixed before measuring; V5)."""

    EVENT: ClassVar[str] = "experiment_defined"
    experiment_id: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ExperimentForkedRecord(Record):
    """A fixed setting changed after measurements: a new experiment id ``new`` (V5, D4)."""

    EVENT: ClassVar[str] = "experiment_forked"
    old: str | None = None
    new: str | None = None
    changed: list[str] = field(default_factory=list)
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class OrderEventRecord(Record):
    """An entry added to the order's timeline (S2); ``event_at``: its time, ISO 8601."""

    EVENT: ClassVar[str] = "order_event"
    state: str | None = None
    source: str | None = None
    note: str | None = None
    order_number: str | None = None
    event_at: str | None = None


@dataclass(frozen=True, kw_only=True)
class OrderSetRecord(Record):
    """The order's details were set again (same number; S2, S5)."""

    EVENT: ClassVar[str] = "order_set"
    number: str | None = None
    gpu_model: str | None = None
    lots: int | None = None
    days: int | None = None


@dataclass(frozen=True, kw_only=True)
class OrderDeviationObservedRecord(Record):
    """The GPU found differs from the order, kept in the journal when the order could not (S5)."""

    EVENT: ClassVar[str] = "order_deviation_observed"
    observed_gpu_model: str | None = None
    observed_gpu_count: int | None = None
    ordered_gpu_model: str | None = None
    ordered_gpu_count: int | None = None


@dataclass(frozen=True, kw_only=True)
class ChecklistDoneRecord(Record):
    """A checklist item was ticked (S1)."""

    EVENT: ClassVar[str] = "checklist_done"
    item: str | None = None


@dataclass(frozen=True, kw_only=True)
class ChecklistUndoneRecord(Record):
    """A checklist item was unticked (S1)."""

    EVENT: ClassVar[str] = "checklist_undone"
    item: str | None = None


@dataclass(frozen=True, kw_only=True)
class ChecklistItemAddedRecord(Record):
    """The person added an item to the checklist at ``stage`` (S1)."""

    EVENT: ClassVar[str] = "checklist_item_added"
    item: str | None = None
    stage: int | None = None


@dataclass(frozen=True, kw_only=True)
class ValidationRecord(Record):
    """An output was validated in the session (V1-V8): paths relative to the folder.

    The figures are those of the results row the report fills (C5); the quality
    numbers as the report holds them.
    """

    EVENT: ClassVar[str] = "validation"
    report: str | None = None
    output: str | None = None
    output_copy: str | None = None
    corpus: str | None = None
    expected_ids: int | None = None
    observed_ids: int | None = None
    ids_match: bool | None = None
    format_valid: bool | None = None
    quality_metric: str | None = None
    quality_threshold: Any = None
    quality_tolerance: Any = None
    quality_value: Any = None
    corpus_accepted: bool | None = None


@dataclass(frozen=True, kw_only=True)
class ManifestWrittenRecord(Record):
    """The deliverables' manifest was written (S4); ``path``: the manifest, absolute."""

    EVENT: ClassVar[str] = "manifest_written"
    path: str | None = None
    deliverables: str | None = None
    files: int | None = None
    total_bytes: int | None = None
    skipped: int | None = None
    copy_in_deliverables: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReportWrittenRecord(Record):
    """The session's report was written at ``path`` with its ``charts``."""

    EVENT: ClassVar[str] = "report_written"
    path: str | None = None
    charts: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class DemoCorpusWrittenRecord(Record):
    """``gpusession demo`` wrote the demo corpus (paths of its three parts; R1: its revision)."""

    EVENT: ClassVar[str] = "demo_corpus_written"
    train: str | None = None
    tune: str | None = None
    eval: str | None = None
    corpus_revision: str | None = None
    replaced_files: int | None = None
    sizes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DemoModelTrainedRecord(Record):
    """``gpusession demo`` trained the demo classifier (R1: model and tokenizer revisions)."""

    EVENT: ClassVar[str] = "demo_model_trained"
    classes: list[str] = field(default_factory=list)
    seed: int | None = None
    epochs: int | None = None
    context_limit_trained: int | None = None
    model_revision: str | None = None
    tokenizer_revision: str | None = None
    tune_macro_f1: float | None = None
    train_seconds: float | None = None
    train_size: int | None = None


@dataclass(frozen=True, kw_only=True)
class HostCheckedRecord(Record):
    """The GPU of a host was checked against the order (D8, S5); kept in ``host-check.toml``.

    ``host``: ``"<hostname> <boot id>"``; ``memory_total_bytes``: the smallest GPU's total;
    ``deviation``: the order deviation in words, ``None`` when the GPU matches the order;
    ``probe``: the probe's status (``measured``, ``no-gpu``, ``failed``), ``None`` not run.
    """

    EVENT: ClassVar[str] = "host_checked"
    host: str | None = None
    gpu_model: str | None = None
    gpu_count: int | None = None
    memory_total_bytes: int | None = None
    order_number: str | None = None
    deviation: str | None = None
    probe: str | None = None
