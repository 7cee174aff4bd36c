"""D7's exact two-sided Mann–Whitney p, our own: scipy as the oracle without ties, a
brute-force permutation test with ties."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from gpusession.core.records.ranktest import exact_two_sided_p


def _brute_force_p(a: list[float], b: list[float]) -> Fraction:
    """Every assignment of n of the N values to the first sample, midranks recomputed."""
    values = a + b
    ordered = sorted(values)
    midrank = {v: Fraction(ordered.index(v) + 1 + len(ordered) - ordered[::-1].index(v), 2)
               for v in values}
    ranks = [midrank[v] for v in values]
    n, big_n = len(a), len(values)
    centre = Fraction(n * (big_n + 1), 2)
    observed = abs(sum(ranks[:n]) - centre)
    extreme = sum(1 for chosen in itertools.combinations(range(big_n), n)
                  if abs(sum(ranks[i] for i in chosen) - centre) >= observed)
    return Fraction(extreme, math.comb(big_n, n))


def test_d7_ties_use_the_permutation_distribution_of_midranks() -> None:
    # four 1s, six 2s: a holds all four 1s (6 ways) or none (6 ways): 12/252, not 0.056
    assert exact_two_sided_p([1, 1, 1, 1, 2], [2, 2, 2, 2, 2]) == pytest.approx(12 / 252, abs=1e-15)
    assert exact_two_sided_p([1, 1, 1], [1, 1, 1]) == 1.0  # all tied: nothing is extreme
    assert exact_two_sided_p([0.5], [0.5]) == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_d7_ties_equal_a_brute_force_permutation_test(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        n, m = rng.randint(1, 6), rng.randint(1, 6)
        pool = [rng.choice([0.1, 0.2, 0.25, 0.3]) for _ in range(n + m)]  # many shared values
        a, b = pool[:n], pool[n:]
        assert exact_two_sided_p(a, b) == pytest.approx(float(_brute_force_p(a, b)), abs=1e-12), (a, b)


def test_d7_without_ties_equals_scipy_exact_on_thousands_of_cases() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(20261203)
    worst = 0.0
    for _ in range(2000):
        n, m = rng.randint(1, 12), rng.randint(1, 12)
        drawn = rng.sample(range(100_000), n + m)  # distinct: no ties
        a, b = [x / 997 for x in drawn[:n]], [x / 997 for x in drawn[n:]]
        want = float(stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
        worst = max(worst, abs(exact_two_sided_p(a, b) - want))
    assert worst <= 1e-12


def test_d7_without_ties_equals_the_brute_force_count_too() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n, m = rng.randint(1, 6), rng.randint(1, 6)
        drawn = [float(x) for x in rng.sample(range(50), n + m)]
        a, b = drawn[:n], drawn[n:]
        assert exact_two_sided_p(a, b) == pytest.approx(float(_brute_force_p(a, b)), abs=1e-12)


def test_d7_large_samples_stay_exact_and_quick() -> None:
    # 40 against 40, every run faster: 2 / C(80, 40), far below any table's float floor
    p = exact_two_sided_p([float(i) for i in range(40)], [100.0 + i for i in range(40)])
    assert p == pytest.approx(2 / math.comb(80, 40), rel=1e-12)
    tied = exact_two_sided_p([float(i // 4) for i in range(30)], [float(i // 4 + 1) for i in range(30)])
    assert 0.0 < tied < 1.0


def test_d7_empty_or_nan_samples_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        exact_two_sided_p([], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        exact_two_sided_p([float("nan")], [1.0])
