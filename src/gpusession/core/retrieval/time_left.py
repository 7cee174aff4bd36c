"""The time left beside each finished run: headless ``run`` and the Run pane say the same.

Beside each finished run, the time left for the experiment (the runs of the
schedule still to run, each the longest measured run of its phase and variant — the
estimate the session limit uses before it lets a run start, D1) and the time left before
the session limit. Loads and warm-ups of workers still to start are not counted: the
figure is said as "about".
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpusession.core.experiment import plan
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.units import format_seconds
from gpusession.core.folder.resume import session_resume_plan
from gpusession.core.retrieval.limit import duration_words, session_limit

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
        self.longest_s: dict[tuple[str, str], float] = {}

    def experiment_left_s(self, done: int) -> float | None:
        """Seconds the runs after the first ``done`` are expected to take; ``None`` before any run is measured.

        A run is counted as the longest measured run of its phase and variant, else of its
        phase, else of any phase (a warm run after the cold ones: the cold figure, an
        upper bound).
        """
        total = 0.0
        for phase, variant in self.schedule[done:]:
            run_s = self.longest_s.get((phase, variant))
            if run_s is None:  # not measured yet: the longest of that phase, else of any run
                same = [s for (p, _), s in self.longest_s.items() if p == phase] or list(self.longest_s.values())
                if not same:
                    return None
                run_s = max(same)
            total += run_s
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
            key = (str(get("phase")), str(get("variant_id")))
            self.longest_s[key] = max(self.longest_s.get(key, 0.0), float(elapsed))
        left = self.experiment_left_s(done)
        if done >= len(self.schedule):
            parts = ["experiment done"]
        elif left is None:
            parts = ["time left for the experiment not known yet"]
        else:
            parts = [f"about {_span(left)} left for the experiment"]
        parts.append(self._limit_words(self.clock()))
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
