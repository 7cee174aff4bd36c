"""Variants compared in words (D5, D7): ratios, an exact test, spread warnings.

Every expected figure below is written as a number, worked out by hand (an enumeration
of the C(n+m, n) orders), never recomputed with the library under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusession.core.records.results import ResultRow, rows_frame
from gpusession.core.records.summary import summary_rows
from gpusession.core.records.variants import (
    compare_variants,
    mann_whitney_p,
    smallest_p,
    spread_warnings,
)


def _rows(times: dict[str, list[float | None]], accepted: dict[str, bool | None] | None = None,
          *, loads: bool = True) -> list[ResultRow]:
    """Interleaved warm runs after one warm-worker load, as the runner writes them."""
    common: dict[str, Any] = dict(experiment_id="sweep", corpus_revision="c@1",
                                  quality_metric="macro_f1", quality_threshold=0.9,
                                  quality_tolerance=0.0)
    rows = [ResultRow(**common, variant_id="all", phase="load", run_index=1, elapsed_seconds=0.2)] if loads else []
    n = max(len(v) for v in times.values())
    for i in range(n):
        for variant, values in times.items():
            if i >= len(values):
                continue
            ok = (accepted or {}).get(variant, True)
            measured = values[i] is not None
            rows.append(ResultRow(
                **common, variant_id=variant, phase="warm", run_index=i + 1, elapsed_seconds=values[i],
                ids_match=True if measured and ok is not None else None,
                format_valid=True if measured and ok is not None else None,
                quality_value=(0.95 if ok else 0.333) if measured and ok is not None else None,
                corpus_accepted=ok if measured else None))
    return rows


def _compare(times: dict[str, list[float | None]], accepted: dict[str, bool | None] | None = None) -> list[Any]:
    frame = rows_frame(_rows(times, accepted))
    return compare_variants(frame, summary_rows(frame))


#: (best runs, other runs, exact two-sided p written by hand, words expected)
CASES = [
    # 5 vs 5, every run faster: 2 of 252 orders as extreme → 2/252
    ([1.0, 1.1, 1.2, 1.3, 1.4], [2.0, 2.1, 2.2, 2.3, 2.4], 0.0079, "beyond noise (exact Mann–Whitney p = 0.0079, 5 vs 5 runs)"),
    # 5 vs 5 interleaved: U = 10 of 25 → 174/252
    ([1.0, 1.2, 1.4, 1.6, 1.8], [1.1, 1.3, 1.5, 1.7, 1.9], 0.6905, "not distinguishable with 5 runs (p = 0.69)"),
    # 5 vs 5, one overlap: U = 1 → 4/252
    ([1.0, 1.1, 1.2, 1.3, 1.5], [1.4, 1.6, 1.7, 1.8, 1.9], 0.0159, "beyond noise (exact Mann–Whitney p = 0.016, 5 vs 5 runs)"),
    # 3 vs 3, every run faster: 2/20, never below 0.05 with three runs
    ([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], 0.1, "cannot be told from noise with 3 runs (the smallest possible p is 0.1)"),
    # 6 vs 4, every run faster: 2/210
    ([1.0, 1.1, 1.2, 1.3, 1.4, 1.5], [2.0, 2.1, 2.2, 2.3], 0.0095, "beyond noise (exact Mann–Whitney p = 0.0095, 6 vs 4 runs)"),
]


@pytest.mark.parametrize(("best", "other", "p", "words"), CASES)
def test_d7_exact_mann_whitney_on_a_table_of_cases(best: list[float], other: list[float], p: float,
                                                   words: str) -> None:
    got = mann_whitney_p(best, other)
    assert got == pytest.approx(p, abs=5e-5)
    [c] = _compare({"fast": list(best), "slow": list(other)})
    assert (c.best, c.other) == ("fast", "slow")
    assert c.p_value == pytest.approx(p, abs=5e-5)
    assert words in c.words()
    assert "p95" not in c.words()  # never a p95 below 20 runs (R6)


def test_d7_smallest_possible_p() -> None:
    assert smallest_p(5, 5) == pytest.approx(0.0079365, abs=1e-7)  # 2/252
    assert smallest_p(3, 3) == pytest.approx(0.1)  # 2/20
    assert smallest_p(4, 4) == pytest.approx(0.0285714, abs=1e-7)  # 2/70
    assert smallest_p(0, 5) == 1.0


def test_d7_the_words_of_the_issue_example() -> None:
    """batch 16 against batch 1: 2.3× faster, medians and min–max, every run faster, p = 2/252."""
    [c] = _compare({"batch-16": [0.650, 0.670, 0.688, 0.700, 0.720],
                    "batch-1": [1.50, 1.55, 1.60, 1.65, 1.70]})
    assert c.words() == ("batch-16: 2.3× faster than batch-1 (688 ms vs 1.60 s, min–max "
                         "650–720 ms vs 1.50–1.70 s); every run faster; beyond noise (exact "
                         "Mann–Whitney p = 0.0079, 5 vs 5 runs)")
    assert c.ratio == pytest.approx(1.60 / 0.688)
    assert c.distinguishable


def test_d7_overlapping_runs_are_not_distinguishable() -> None:
    [c] = _compare({"a": [0.50, 0.60, 0.55, 0.52, 0.58], "b": [0.51, 0.62, 0.57, 0.53, 0.59]})
    assert not c.distinguishable
    assert "the runs overlap; not distinguishable with 5 runs" in c.words()


def test_d5_a_faster_rejected_variant_is_never_named_the_best() -> None:
    cs = _compare({"fast": [0.1, 0.11, 0.12, 0.13, 0.14], "kept": [0.5, 0.51, 0.52, 0.53, 0.54]},
                  accepted={"fast": False, "kept": True})
    [c] = cs
    assert c.best == "kept" and c.other == "fast"
    assert c.words().startswith("kept: 4.3× slower than fast (REJECTED: quality 0.333 below the floor 0.9 − 0.0) (520 ms")
    # nothing accepted: no variant is named at all
    assert _compare({"a": [0.1, 0.2], "b": [0.3, 0.4]}, accepted={"a": False, "b": None}) == []


def test_d7_a_variant_with_no_measured_warm_run_is_said_so() -> None:
    [c] = _compare({"a": [0.1, 0.2, 0.3], "b": [None, None, None]})
    assert c.p_value is None and "b has no measured warm run" in c.words()


def test_d7_spread_warning_names_the_slowest_run_and_whether_it_followed_a_load() -> None:
    # a: 1.00–1.30 s around a median of 1.10 s: 27 % > 20 %; its slowest run is the first after the load
    frame = rows_frame(_rows({"a": [1.30, 1.00, 1.10, 1.05, 1.20], "b": [1.0, 1.1, 1.05, 1.08, 1.02]}))
    [w] = spread_warnings(frame)
    assert (w.variant_id, w.slowest_run, w.first_after_load) == ("a", 1, True)
    assert w.spread == pytest.approx(0.30 / 1.10)
    assert w.words() == ("a: warm runs spread 27 % of the median (1.00–1.30 s); the slowest, run 1 "
                         "(1.30 s), was the first after a load (a warm-up too short shows there)")
    # b spreads 10 %: no warning; a slowest run later on is "not the first after a load"
    frame = rows_frame(_rows({"a": [1.00, 1.30, 1.10, 1.05, 1.20]}))
    [w] = spread_warnings(frame)
    assert w.slowest_run == 2 and "not the first after a load" in w.words()
    assert spread_warnings(rows_frame(_rows({"b": [1.0, 1.1, 1.05, 1.08, 1.02]}))) == []


def test_d7_the_exact_p_without_scipy_is_scipys_figure_when_no_value_is_shared() -> None:
    """Without ties the figure is scipy's exact one; with ties it is the exact permutation p
    of the midranks instead (scipy's exact method ignores ties), tested in test_ranktest."""
    import random

    from scipy.stats import mannwhitneyu

    rng = random.Random(7)
    for _ in range(300):
        n, m = rng.randint(1, 12), rng.randint(1, 12)
        pool = [round(rng.uniform(0.5, 2.0), rng.choice((1, 2, 3))) for _ in range(n + m)]  # ties too
        a, b = pool[:n], pool[n:]
        if len(set(pool)) < len(pool):
            continue  # a shared value: the permutation p with ties, not scipy's figure
        want = float(mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
        assert mann_whitney_p(a, b) == pytest.approx(want, rel=1e-9, abs=1e-12), (a, b)
