"""The time left beside each finished run: headless ``run`` and the Run pane say the same.

Beside each finished run, the time left for the experiment (the runs of the
schedule still to run, each the median of the runs of its phase and variant measured in
this attempt: one slow first run does not stretch every later estimate) and the time left
before the session limit. Loads and warm-ups of workers still to start are not counted:
the figure is said as "about". Between runs the Run pane counts the estimate down each
second (:meth:`TimeLeft.words_at`) by the app's clock, so it never stands still while a
run is in flight. The session limit's own check before a run (D1) keeps the longest run.
"""

from __future__ import annotations

from datetime import datetime
from statistics import median
from typing import TYPE_CHECKING, Any

from gpusession.core.copyhome.limit import duration_words, session_limit
from gpusession.core.experiment import plan
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.units import format_seconds
from gpusession.core.folder.resume import session_resume_plan

if TYPE_CHECKING:
    from gpusession.core.folder.session import Session


def _span(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 05 min``, ``3 d 11 h``: a time left at a glance."""
    return format_seconds(seconds) if seconds < 60 else duration_words(seconds)


class TimeLeft:
    """The words beside a finished run: ``about 3 min left for the experiment; 6 d 23 h before the session limit``.

    Args:
        session: the open session (its limit is read at each line: a limit changed from
            another shell counts from the next run on).
        schedule: the runs of this invocation in order (phase, variant_id), as
            :class:`gpusession.core.experiment.plan.ScheduledRun`.
        clock: returns now (aware); a fake clock in tests.
    """

    def __init__(self, session: Session, schedule: list[Any], clock: Any = utcnow) -> None:
        """Keep the session, the schedule and the clock; nothing is read yet."""
        self.session = session
        self.schedule = [(r.phase, r.variant_id) for r in schedule]
        self.clock = clock
        #: seconds of each measured run of this attempt, by (phase, variant)
        self.runs_s: dict[tuple[str, str], list[float]] = {}
        #: the last estimate: when it was made, the runs ended then and the seconds left
        self._estimate: tuple[datetime, int, float | None] | None = None

    def experiment_left_s(self, done: int) -> float | None:
        """Seconds the runs after the first ``done`` are expected to take; ``None`` before any run is measured.

        A run is counted as the median of the measured runs of its phase and variant, else
        of its phase, else of every measured run (the first finished run of the attempt
        already gives an estimate).
        """
        total = 0.0
        every = [s for runs in self.runs_s.values() for s in runs]
        if not every:
            return None
        for phase, variant in self.schedule[done:]:
            same = (self.runs_s.get((phase, variant))
                    or [s for (p, _), runs in self.runs_s.items() if p == phase for s in runs] or every)
            total += median(same)
        return total

    def words(self, row: Any, done: int | None) -> str:
        """Record ``row``'s duration, then the words for the runs after ``done`` (``""`` for a load row).

        Args:
            row: a result row, as a :class:`~gpusession.core.records.results.ResultRow` or a dict.
            done: scheduled runs ended with it (``None``: a load row).
        """
        if done is None:
            return ""
        get = row.get if isinstance(row, dict) else (lambda k: getattr(row, k, None))
        elapsed = get("elapsed_seconds")
        if elapsed is not None:
            self.runs_s.setdefault((str(get("phase")), str(get("variant_id"))), []).append(float(elapsed))
        now = self.clock()
        self._estimate = (now, done, self.experiment_left_s(done))
        return self.words_at(now)

    def words_at(self, now: datetime) -> str:
        """The last estimate counted down to ``now`` (``""`` before the first finished run).

        The seconds left fall by the seconds of ``now`` since the estimate was made, down
        to ``any moment now``; the session limit is read again at ``now``.
        """
        if self._estimate is None:
            return ""
        at, done, left = self._estimate
        if done >= len(self.schedule):
            parts = ["experiment done"]
        elif left is None:
            parts = ["time left for the experiment not known yet"]
        else:
            since_s = max(0.0, (now - at).total_seconds())
            left_now = left - since_s
            parts = ([f"about {_span(left_now)} left for the experiment"] if since_s == 0 or left_now > 0
                     else ["the experiment should end any moment now"])
        parts.append(self._limit_words(now))
        return "; ".join(p for p in parts if p)

    def _limit_words(self, now: datetime) -> str:

        try:
            limit = session_limit(self.session, now)
        except (BadInput, OSError):
            return ""
        if limit.at is None:
            return "no session limit"
        left_s = (limit.at - now).total_seconds()
        if left_s <= 0:
            return "past the session limit"
        return f"{_span(left_s)} before the session limit"


def schedule_of(session: Session, experiment: Any, resume: bool) -> list[Any]:
    """The runs this invocation runs, in order: the stored schedule's missing runs on a resume."""
    if resume:

        return list(session_resume_plan(session, experiment.id).missing)
    return list(plan.schedule(experiment))


__all__ = ["TimeLeft", "schedule_of"]
