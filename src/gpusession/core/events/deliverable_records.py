"""Journal records of the deliverables: the unit fixed, a person's decision on a file, the plan kept (S8, S9, K6).

Why it exists: the unit of the useful work and who approved what are the session's own
account (seed 000 §5: fix the unit before comparing; seed 003 §1: who approves); each
is journaled when it is decided, read back by :mod:`gpusession.core.events.reading`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gpusession.core.events.records import Record


@dataclass(frozen=True, kw_only=True)
class UnitSetRecord(Record):
    """The session's unit was set (S8); ``forced`` with ``note`` when counts existed."""

    EVENT: ClassVar[str] = "unit_set"
    unit: str | None = None
    unit_plural: str | None = None
    expected_count: int | None = None
    previous: str | None = None
    forced: bool = False
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeliverableDecidedRecord(Record):
    """A person approved or rejected one deliverable file (S9).

    ``path`` is relative to the deliverables folder, ``sha256`` the file's digest at
    the decision, ``decision`` ``approved`` or ``rejected``.
    """

    EVENT: ClassVar[str] = "deliverable_decided"
    path: str | None = None
    sha256: str | None = None
    decision: str | None = None
    by: str | None = None
    text: str | None = None


@dataclass(frozen=True, kw_only=True)
class PlanSetRecord(Record):
    """The session's plan was kept (K6).

    Durations in days as decimal strings, their sum, and the sum of the plan it replaced
    (``None`` when there was none).
    """

    EVENT: ClassVar[str] = "plan_set"
    durations_days: list[str] | None = None
    names: list[str] | None = None
    total_days: str | None = None
    previous_total_days: str | None = None


DELIVERABLE_RECORDS: tuple[type[Record], ...] = (UnitSetRecord, DeliverableDecidedRecord, PlanSetRecord)
