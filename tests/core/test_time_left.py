"""The time left beside each finished run (``core/retrieval/time_left.py``): the runs still
to run each count as the median of the runs measured so far, from the first finished run
of the attempt, and the estimate counts down by the clock it is given."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gpusession.core.experiment.plan import ScheduledRun
from gpusession.core.retrieval.time_left import TimeLeft
from gpusession.testing import FIXED_NOW, FakeClock


def _schedule(n: int) -> list[Any]:
    return [ScheduledRun(phase="warm", variant_id="batch-1", run_index=i + 1, worker="warm") for i in range(n)]


def _row(elapsed_s: float) -> dict[str, Any]:
    return {"phase": "warm", "variant_id": "batch-1", "elapsed_seconds": elapsed_s}


def test_d1_the_first_finished_run_gives_an_estimate(session: Any) -> None:
    left = TimeLeft(session, _schedule(5), clock=FakeClock(FIXED_NOW))
    assert left.words_at(FIXED_NOW) == ""  # nothing measured yet: nothing said
    assert left.words(_row(3.0), 1).startswith("about 12.0 s left for the experiment")


def test_d1_the_estimate_is_the_median_of_the_runs_so_far_not_the_longest(session: Any) -> None:
    left = TimeLeft(session, _schedule(6), clock=FakeClock(FIXED_NOW))
    left.words(_row(1.0), 1)
    left.words(_row(9.0), 2)
    words = left.words(_row(2.0), 3)
    assert left.experiment_left_s(3) == 6.0  # 3 runs × the median 2 s (the longest would say 27 s)
    assert words.startswith("about 6.00 s left"), words


def test_d1_the_estimate_counts_down_by_the_clock_and_never_below_zero(session: Any) -> None:
    clock = FakeClock(FIXED_NOW)
    left = TimeLeft(session, _schedule(3), clock=clock)
    left.words(_row(4.0), 1)
    said = [left.words_at(FIXED_NOW + timedelta(seconds=s)) for s in (0, 1, 2)]
    assert [w.split(";")[0] for w in said] == ["about 8.00 s left for the experiment",
                                               "about 7.00 s left for the experiment",
                                               "about 6.00 s left for the experiment"]
    assert left.words_at(FIXED_NOW + timedelta(seconds=30)).startswith("the experiment should end any moment now")
    assert left.words(_row(4.0), 3).startswith("experiment done")
