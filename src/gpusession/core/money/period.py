"""Which accepted outputs were validated inside the package window (seed 000 §5; K3).

The seed counts the corpora "actually validated in the period": an output validated
before the package started or after it ended is not work this package paid for. A run's
time is its journal record (``run_finished``, or ``validation`` for ``gpusession
validate``), read on the session's clock (``GPUSESSION_NOW`` in tests, A6).

Why a cheap check first: every run's time lies between the session's ``created_at`` and
the journal's last line, so when the window holds both (the ordinary case) nothing is
scanned; only a window that starts late or ends early reads the journal's run records.

Scope: the runs behind distinct accepted corpora and behind outputs an accept rule
accepted. A person's approval (``approvals.toml``) is a decision that may come after
the package ended (reviewed at home); it is counted by its file, not by a time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from gpusession.core.events.actions import ValidationRecord
from gpusession.core.events.records import RunFinishedRecord
from gpusession.core.money.window import local_str

if TYPE_CHECKING:
    from gpusession.core.folder.session import Session

#: A run as rows and journal records name it: (experiment, variant, phase, run index).
RunId = tuple[str, str, str | None, int | None]
#: How much of the journal's end is read for its last line (bytes).
_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class Period:
    """The package window as applied to a count (seed 000 §5).

    Attributes:
        start, end: the window (aware, UTC); ``None`` when the package's start or days
            are not set, and then nothing is left out.
        run_times: when each run was validated, only when the window needed a scan.
        scanned: whether the journal was read (the window does not hold the whole session).
    """

    start: datetime | None
    end: datetime | None
    run_times: dict[RunId, datetime] = field(default_factory=dict)
    scanned: bool = False

    def side(self, run: RunId) -> str | None:
        """``"before"``, ``"after"`` the window, or ``None`` inside it (or time unknown)."""
        if not self.scanned or self.start is None or self.end is None:
            return None
        at = self.run_times.get(run)
        if at is None:
            return None  # no journal record of its time: counted, as before the period was applied
        if at < self.start:
            return "before"
        if at > self.end:
            return "after"
        return None

    def words(self, n: int, noun: str, side: str) -> str:
        """``2 accepted corpora validated before the package started (2026-11-29 18:00 UTC …)``."""
        when = (f"before the package started ({local_str(self.start)})" if side == "before"
                else f"after the package ended ({local_str(self.end)})")
        return f"{n:,} {noun} validated {when}: outside the period the package paid for"


def session_period(session: Session) -> Period:
    """The session's window and, when it does not hold the whole session, each run's time.

    Raises:
        BadInput: the journal does not read (as every reader of it).
    """
    start, end = session.package.start, session.package.end
    if start is None or end is None:
        return Period(None, None)
    created = session.data.get("created_at")
    first = created if isinstance(created, datetime) else None
    last = _last_line_at(session.journal_path)
    if first is not None and last is not None and start <= first and last <= end:
        return Period(start, end)  # every run lies between the two: nothing to scan
    return Period(start, end, _run_times(session), scanned=True)


def _last_line_at(path: os.PathLike[str]) -> datetime | None:
    """The ``at`` of the journal's last complete line, from its tail only; ``None`` when unread."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _TAIL_BYTES))
            tail = f.read()
    except OSError:
        return None
    lines = [ln for ln in tail.split(b"\n") if ln.strip()]
    if not lines:
        return None
    try:
        at = json.loads(lines[-1]).get("at")
        return _aware(at) if isinstance(at, str) else None
    except (ValueError, AttributeError):
        return None


def _aware(text: str) -> datetime | None:
    """An ISO 8601 time with offset (the journal's ``at``), else ``None``."""
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def _run_times(session: Session) -> dict[RunId, datetime]:
    """When each run and each ``validate`` was recorded, from the journal's typed records."""
    times: dict[RunId, datetime] = {}
    for rec in session.journal_records():
        if isinstance(rec, RunFinishedRecord) and rec.experiment_id and rec.variant_id:
            run: RunId = (rec.experiment_id, rec.variant_id, rec.phase, rec.run_index)
        elif isinstance(rec, ValidationRecord) and rec.report:
            run = ("validate", os.path.splitext(os.path.basename(rec.report))[0], None, None)
        else:
            continue
        at = _aware(rec.at) if isinstance(rec.at, str) else None
        if at is not None:
            times[run] = at
    return times


__all__ = ["Period", "RunId", "session_period"]
