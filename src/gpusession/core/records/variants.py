"""Variants compared in plain words, honestly for five runs (D5, D7, R6).

For each experiment the variant to keep is the accepted one with the fastest warm median
(:func:`gpusession.core.records.summary.recommended_variant`); every other variant is
compared with it: the ratio of the warm medians, both medians and both min–max ranges,
whether every run of one was faster than every run of the other, and whether the
difference can be told apart from noise with the runs taken. That last question is
answered by an exact two-sided Mann–Whitney U test on the warm runs
(:mod:`gpusession.core.records.ranktest`, ties counted by the exact permutation
distribution of their midranks): with 5 runs against 5 the smallest possible p is
2/252 = 0.0079, with 3 against 3 it is 0.1, so three runs can never tell two variants
apart at 0.05 and the words say so. No p95 is ever given below 20 runs (R6).

A spread warning says when a variant's warm runs spread more than 20 % of their median,
naming the slowest run and whether it was the first run after a load (a warm-up that was
too short shows there first).

Who calls it: the report (Markdown and HTML). No torch, no textual.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusession.core.files.units import format_seconds, format_seconds_range
from gpusession.core.records.ranktest import exact_two_sided_p
from gpusession.core.records.summary import SummaryRow, recommended_variant

if TYPE_CHECKING:
    import polars as pl

#: The p value at or below which two variants are said to differ beyond noise (D7).
ALPHA = 0.05
#: A variant's warm runs spread "too much" when (max − min) exceeds this share of the median.
SPREAD_LIMIT = 0.20


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided exact Mann–Whitney p possible with ``n`` and ``m`` runs.

    Every run of one side faster than every run of the other is 1 of ``C(n+m, n)``
    equally likely orders under "no difference", on each side: ``2 / C(n+m, n)``
    (5 vs 5: 2/252 = 0.0079; 3 vs 3: 0.1). ``1.0`` when either side has no run.
    """
    if n < 1 or m < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n + m, n))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Exact two-sided Mann–Whitney U test of two sets of warm durations (D7).

    Args:
        a: one variant's measured durations (s).
        b: the other's.

    Returns:
        The p value (0–1), ``None`` when either side has no measured run. Without shared
        values it is the classic exact table; with shared values (ties), the exact
        permutation p of the midrank sum (:func:`~gpusession.core.records.ranktest.exact_two_sided_p`).
    """
    if not a or not b:
        return None
    return exact_two_sided_p(a, b)


def _p_words(p: float) -> str:
    text = f"{p:.2g}"
    return text if "." in text or "e" in text else f"{text}.0"


def _times(ratio: float) -> str:
    """``2.3×`` (one decimal below 10, whole above)."""
    return f"{ratio:.1f}×" if ratio < 9.95 else f"{ratio:.0f}×"


def _verdict_inline(verdict: str) -> str:
    """``REJECTED (ids: at least 300 missing)`` → ``REJECTED: ids: at least 300 missing`` (inside parentheses)."""
    head, sep, rest = verdict.partition(" (")
    return f"{head}: {rest[:-1]}" if sep and rest.endswith(")") else verdict


def _runs(n: int, m: int) -> str:
    return f"{n} runs" if n == m else f"{n} and {m} runs"


@dataclass(frozen=True)
class Comparison:
    """The recommended variant of an experiment against one other variant (D7).

    Attributes:
        experiment_id: the experiment.
        best: the recommended variant (accepted, fastest warm median).
        other: the variant compared with it.
        best_times_s: the recommended variant's measured warm durations (s).
        other_times_s: the other variant's (s); empty when none was measured.
        other_verdict: the other variant's verdict in words (``accepted``, ``REJECTED (…)``).
        p_value: the exact two-sided Mann–Whitney p; ``None`` when a side has no run.
    """

    experiment_id: str
    best: str
    other: str
    best_times_s: tuple[float, ...]
    other_times_s: tuple[float, ...]
    other_verdict: str
    p_value: float | None

    @property
    def best_median_s(self) -> float:
        """The recommended variant's warm median (s)."""
        return _median(self.best_times_s)

    @property
    def other_median_s(self) -> float | None:
        """The other variant's warm median (s); ``None`` when none was measured."""
        return _median(self.other_times_s) if self.other_times_s else None

    @property
    def ratio(self) -> float | None:
        """Other median ÷ recommended median (> 1: the recommended one is faster)."""
        other = self.other_median_s
        if other is None or self.best_median_s <= 0:
            return None
        return other / self.best_median_s

    @property
    def every_run(self) -> str | None:
        """``faster`` when every recommended run beat every other run, ``slower`` the reverse."""
        if not self.other_times_s:
            return None
        if max(self.best_times_s) < min(self.other_times_s):
            return "faster"
        if min(self.best_times_s) > max(self.other_times_s):
            return "slower"
        return None

    @property
    def distinguishable(self) -> bool:
        """The difference is told apart from noise: exact p ≤ :data:`ALPHA` (D7)."""
        return self.p_value is not None and self.p_value <= ALPHA

    def noise_words(self) -> str:
        """Whether the difference can be told from noise with the runs taken, in words."""
        n, m = len(self.best_times_s), len(self.other_times_s)
        if self.p_value is None:
            return "no measured warm run to compare"
        low = smallest_p(n, m)
        if low > ALPHA:
            return (f"cannot be told from noise with {_runs(n, m)} (the smallest possible p "
                    f"is {_p_words(low)})")
        if self.distinguishable:
            return f"beyond noise (exact Mann–Whitney p = {_p_words(self.p_value)}, {n} vs {m} runs)"
        return f"not distinguishable with {_runs(n, m)} (p = {_p_words(self.p_value)})"

    def words(self) -> str:
        """``batch-16: 2.3× faster than batch-1 (688 ms vs 1.60 s; …); every run faster; …``."""
        other_median = self.other_median_s
        tag = "" if self.other_verdict == "accepted" else f" ({_verdict_inline(self.other_verdict)})"
        if other_median is None or self.ratio is None:
            return f"{self.best} vs {self.other}{tag}: {self.other} has no measured warm run"
        ratio = self.ratio
        if _times(ratio) == "1.0×" or _times(1 / ratio) == "1.0×":
            how = f"about as fast as {self.other}{tag}"
        elif ratio > 1:
            how = f"{_times(ratio)} faster than {self.other}{tag}"
        else:
            how = f"{_times(1 / ratio)} slower than {self.other}{tag}"
        ranges = (f"{format_seconds_range(min(self.best_times_s), max(self.best_times_s))} vs "
                  f"{format_seconds_range(min(self.other_times_s), max(self.other_times_s))}")
        every = f"every run {self.every_run}" if self.every_run else "the runs overlap"
        return (f"{self.best}: {how} ({format_seconds(self.best_median_s)} vs "
                f"{format_seconds(other_median)}, min–max {ranges}); {every}; {self.noise_words()}")


@dataclass(frozen=True)
class SpreadWarning:
    """A variant whose warm runs spread more than :data:`SPREAD_LIMIT` of their median (D7).

    Attributes:
        experiment_id: the experiment.
        variant_id: the variant.
        median_s: its warm median (s).
        min_s: its fastest warm run (s).
        max_s: its slowest warm run (s).
        slowest_run: the ``run_index`` of the slowest warm run.
        first_after_load: the slowest run was the first timed run after a load.
    """

    experiment_id: str
    variant_id: str
    median_s: float
    min_s: float
    max_s: float
    slowest_run: int | None
    first_after_load: bool

    @property
    def spread(self) -> float:
        """(max − min) ÷ median (0.42 = 42 %)."""
        return (self.max_s - self.min_s) / self.median_s if self.median_s > 0 else math.inf

    def words(self) -> str:
        """``batch-1: warm runs spread 42 % of the median (470–671 ms); the slowest, run 2 (…), was …``."""
        which = f"run {self.slowest_run}" if self.slowest_run is not None else "a run"
        after = ("the first after a load (a warm-up too short shows there)" if self.first_after_load
                 else "not the first after a load")
        return (f"{self.variant_id}: warm runs spread {round(self.spread * 100)} % of the median "
                f"({format_seconds_range(self.min_s, self.max_s)}); the slowest, {which} "
                f"({format_seconds(self.max_s)}), was {after}")


    def short_words(self) -> str:
        """``batch-1 31 % (slowest run 2)``; ``(slowest run 1, the first after a load)`` when it was."""
        which = f"run {self.slowest_run}" if self.slowest_run is not None else "a run"
        after = ", the first after a load" if self.first_after_load else ""
        return f"{self.variant_id} {round(self.spread * 100)} % (slowest {which}{after})"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True)
class _WarmRun:
    variant_id: str
    run_index: int | None
    elapsed_s: float
    first_after_load: bool


def _warm_runs(frame: pl.DataFrame) -> dict[str, list[_WarmRun]]:
    """The measured warm runs of each experiment, in the order written, in one pass over the rows.

    Each is marked when it was the first timed run after a load of its experiment; the
    rows of every attempt are pooled, as the summary pools them. One pass, not one per
    experiment: a session of 500 experiments has 10,000 rows (A5).

    Returns:
        ``{experiment id → its warm runs}``; an experiment with none is absent.
    """
    out: dict[str, list[_WarmRun]] = {}
    after_load: dict[str, bool] = {}
    cols = ("experiment_id", "variant_id", "phase", "run_index", "elapsed_seconds")
    for exp, variant, phase, index, elapsed in frame.select(cols).iter_rows():
        if exp is None:
            continue
        key = str(exp)
        if phase == "load":
            after_load[key] = True
            continue
        if phase not in ("cold", "warm"):
            continue
        first, after_load[key] = after_load.get(key, False), False
        if phase == "warm" and elapsed is not None:
            out.setdefault(key, []).append(
                _WarmRun(str(variant), None if index is None else int(index), float(elapsed), first))
    return out


def compare_variants(frame: pl.DataFrame, rows: Sequence[SummaryRow]) -> list[Comparison]:
    """The recommended variant of each experiment against each other variant (D5, D7).

    Args:
        frame: the results rows (38 columns), every attempt.
        rows: the summary table of the same rows
            (:func:`gpusession.core.records.summary.session_summary`).

    Returns:
        One :class:`Comparison` per other variant with warm rows, experiments in the
        table's order; none for an experiment with no accepted variant (a faster variant
        that was not accepted is never named the best).
    """
    out: list[Comparison] = []
    warm = _warm_runs(frame)
    by_exp: dict[str | None, list[SummaryRow]] = {}  # each experiment's rows, so the work is O(rows)
    for r in rows:
        by_exp.setdefault(r.experiment_id, []).append(r)
    for exp in dict.fromkeys(r.experiment_id for r in rows if r.phase == "warm"):
        best = recommended_variant(by_exp[exp], exp)
        if best is None or exp is None:
            continue
        runs = warm.get(str(exp), [])
        times: dict[str, list[float]] = {}
        for run in runs:
            times.setdefault(run.variant_id, []).append(run.elapsed_s)
        best_times = tuple(times.get(str(best.variant_id), ()))
        if not best_times:
            continue
        for r in by_exp[exp]:
            if r.phase != "warm" or r.variant_id == best.variant_id:
                continue
            other = tuple(times.get(str(r.variant_id), ()))
            out.append(Comparison(str(exp), str(best.variant_id), str(r.variant_id), best_times,
                                  other, r.verdict_words(), mann_whitney_p(best_times, other)))
    return out


def spread_warnings(frame: pl.DataFrame, limit: float = SPREAD_LIMIT) -> list[SpreadWarning]:
    """Variants whose warm runs spread more than ``limit`` of their median (D7).

    Args:
        frame: the results rows (38 columns).
        limit: the share of the median (0.20 = 20 %).

    Returns:
        One :class:`SpreadWarning` per such variant (two measured runs at least), in
        the order the experiments and variants were first written.
    """
    if frame.height == 0:
        return []
    out: list[SpreadWarning] = []
    warm = _warm_runs(frame)
    for exp in dict.fromkeys(frame.get_column("experiment_id").to_list()):
        if exp is None:
            continue
        by_variant: dict[str, list[_WarmRun]] = {}
        for run in warm.get(str(exp), []):
            by_variant.setdefault(run.variant_id, []).append(run)
        for variant, runs in by_variant.items():
            if len(runs) < 2:
                continue
            values = [r.elapsed_s for r in runs]
            median = _median(values)
            if median <= 0 or (max(values) - min(values)) <= limit * median:
                continue
            slowest = max(runs, key=lambda r: r.elapsed_s)
            out.append(SpreadWarning(str(exp), variant, median, min(values), max(values),
                                     slowest.run_index, slowest.first_after_load))
    return out


__all__ = ["ALPHA", "SPREAD_LIMIT", "Comparison", "SpreadWarning", "compare_variants",
           "mann_whitney_p", "smallest_p", "spread_warnings"]
