"""The exact two-sided Mann–Whitney (Wilcoxon rank-sum) p of two small samples (D7).

Why our own: one p value of a few runs against a few runs is a counting problem, and the
report must not import a 100 MB scientific stack to count.

Under "no difference" every way of choosing which ``n`` of the ``n + m`` runs belong to the
first sample is equally likely (``C(n+m, n)`` of them). The p value is the share of those
choices whose rank sum lies at least as far from its mean as the observed one, on either
side (two-sided).

* **No shared value**: the ranks are 1…N and the count of choices per U statistic is the
  coefficient list of the Gaussian binomial ``[N choose n]_q`` (built by exact integer
  polynomial products), O(n·n·m).
* **Shared values (ties)**: tied runs take their midrank; the rank sum is counted over the
  permutation distribution *with those midranks* (doubled, so every rank is a whole
  number), by a dynamic programme over the groups of equal values. This is the exact
  permutation test; ``[1,1,1,1,2]`` against ``[2,2,2,2,2]`` gives 12/252 = 0.048 where a
  table that ignores ties gives 0.056.

Both are exact integer counts divided once; no normal approximation at any size. The
distribution is symmetric about its mean in both cases (the midranks of a sample are
symmetric about (N+1)/2), so "as far on either side" is the two-sided p.

Who calls it: :mod:`gpusession.core.records.variants`. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _gaussian_binomial(n: int, m: int) -> list[int]:
    """Counts of each U = 0…n·m among the C(n+m, n) choices, no ties.

    The coefficients of ``prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i)``.
    """
    size = n * m + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n + 1):
        # multiply by (1 - q^(m+i)), then divide by (1 - q^i); every step stays exact
        shift = m + i
        for k in range(size - 1, shift - 1, -1):
            poly[k] -= poly[k - shift]
        for k in range(i, size):
            poly[k] += poly[k - i]
    return poly


def _doubled_midranks(values: Sequence[float]) -> tuple[list[int], list[tuple[int, int]]]:
    """Twice the midrank of each value, and the (doubled rank, group size) of each group."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    doubled = [0] * len(values)
    groups: list[tuple[int, int]] = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        size = end - start + 1
        rank2 = 2 * start + size + 1  # 2 × (start+1 + end+1) / 2, ranks 1-based
        for pos in range(start, end + 1):
            doubled[order[pos]] = rank2
        groups.append((rank2, size))
        start = end + 1
    return doubled, groups


def _tied_counts(groups: Sequence[tuple[int, int]], n: int) -> dict[int, int]:
    """Counts of each doubled rank sum of ``n`` values chosen among the tie groups."""
    # table[k]: {doubled rank sum of k chosen values: number of ways}
    table: list[dict[int, int]] = [{} for _ in range(n + 1)]
    table[0][0] = 1
    seen = 0
    for rank2, size in groups:
        for k in range(min(n, seen), -1, -1):
            row = table[k]
            if not row:
                continue
            for j in range(1, min(size, n - k) + 1):
                ways = math.comb(size, j)
                add = j * rank2
                dest = table[k + j]
                for total, count in row.items():
                    dest[total + add] = dest.get(total + add, 0) + count * ways
        seen += size
    return table[n]


def exact_two_sided_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact two-sided Mann–Whitney p of sample ``a`` against sample ``b`` (D7).

    Args:
        a: one sample (any unit, e.g. warm durations in s); at least one value.
        b: the other sample; at least one value.

    Returns:
        The p value in (0, 1]: the share of the ``C(n+m, n)`` equally likely assignments
        whose rank sum is at least as far from its mean as the observed one. With shared
        values, the exact permutation distribution of the midrank sum.

    Raises:
        ValueError: either sample is empty, or a value is NaN (it has no rank).
    """
    n, m = len(a), len(b)
    if n < 1 or m < 1:
        raise ValueError("each sample needs at least one value")
    values = [float(v) for v in a] + [float(v) for v in b]
    if any(math.isnan(v) for v in values):
        raise ValueError("a NaN has no rank")
    doubled, groups = _doubled_midranks(values)
    observed2 = sum(doubled[:n])  # twice a's rank sum
    centre2 = n * (n + m + 1)  # twice its mean
    distance = abs(observed2 - centre2)
    total = math.comb(n + m, n)
    if len(groups) == n + m:  # no ties: U = R − n(n+1)/2, so 2R − centre2 = 2U − n·m
        counts = _gaussian_binomial(n, m)
        extreme = sum(c for u, c in enumerate(counts) if abs(2 * u - n * m) >= distance)
    else:
        extreme = sum(c for s, c in _tied_counts(groups, n).items() if abs(s - centre2) >= distance)
    return min(1.0, extreme / total)
