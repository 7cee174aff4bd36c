"""What a number can mean: the bounds of every numeric cell and TOML number (H-41, C2).

"A decimal with a point and no exponent" lets through ``1`` and 400 zeros: read as a
float it is ``inf`` (``report`` then raised OverflowError) or ``1e+25`` shown as
"10000000000000000905969664 s"; as an integer past 4,300 digits Python refuses to
convert it at all. So a number is bounded by what it can mean, checked on its *text*
before any conversion (no float, no int of 400 digits is ever built):

=============  ===============================  ==========================================
kind           bound                            columns / keys
=============  ===============================  ==========================================
duration       under a year (31,536,000 s)      ``elapsed_seconds``, ``reserve_s``,
                                                ``run_timeout_s``
bytes          under 2^63                       ``*_bytes``
count          under 10^15                      counts, indexes, lots, days, batch,
                                                ``expected_ids``, quality figures
whole (other)  within a signed 64-bit integer   ``seed``, cents
=============  ===============================  ==========================================

A value past its bound is refused as ``file:line: field: expected …`` (the value is
never repeated: it may be 400 digits long).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

#: A duration is under a year: 365 days, in seconds.
YEAR_S = 365 * 24 * 3600
#: A byte count fits a signed 64-bit integer.
BYTES_LIMIT = 2**63
#: A count (rows, IDs, runs, lots, a batch) is under 10^15.
COUNT_LIMIT = 10**15
#: A whole number with no other meaning still fits a signed 64-bit integer.
INT64_LIMIT = 2**63

#: Kind → (exclusive bound, its words).
BOUNDS: dict[str, tuple[int, str]] = {
    "duration": (YEAR_S, "a duration under a year (31,536,000 s)"),
    "bytes": (BYTES_LIMIT, "a byte count under 2^63"),
    "count": (COUNT_LIMIT, "a count under 10^15"),
    "whole": (INT64_LIMIT, "a whole number within 64 bits (under 2^63)"),
}

#: Results CSV column → its kind (a column not listed is ``whole`` when an integer,
#: ``count`` when a decimal).
COLUMN_KINDS: dict[str, str] = {
    "elapsed_seconds": "duration",
    "baseline_allocated_bytes": "bytes", "baseline_reserved_bytes": "bytes",
    "peak_allocated_bytes": "bytes", "peak_reserved_bytes": "bytes",
    "gpu_count": "count", "batch": "count", "context": "count", "run_index": "count",
    "warmup_iterations": "count", "expected_ids": "count", "observed_ids": "count",
    "duration_days": "count", "lots": "count", "accepted_unique_corpora": "count",
    "quality_threshold": "count", "quality_tolerance": "count", "quality_value": "count",
    "seed": "whole", "package_total_usd_minor": "whole",
}


def past_bound(text: str, kind: str) -> str | None:
    """Why the decimal ``text`` (``-?digits[.digits]``) is past the bound of ``kind``, else ``None``.

    Checked on the text: the integral digits are counted first (a 400-digit number is
    refused without being converted), then compared exactly (:class:`decimal.Decimal`).

    Returns:
        ``"expected a duration under a year (31,536,000 s), got a larger number"``, or ``None``.
    """
    limit, words = BOUNDS[kind]
    digits = text.lstrip("-").split(".", 1)[0].lstrip("0")
    if len(digits) > len(str(limit)):
        return f"expected {words}, got a number of {len(digits):,} digits"
    try:
        value = abs(Decimal(text))
    except InvalidOperation:
        return None  # not a decimal: the kind check words it
    return f"expected {words}, got a larger number" if value >= limit else None


def number_past_bound(value: object, kind: str) -> str | None:
    """Why a parsed number (a TOML value) is past the bound of ``kind``, or not finite; else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    limit, words = BOUNDS[kind]
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected {words}, got {value}"
    return f"expected {words}, got a larger number" if abs(value) >= limit else None


__all__ = ["BOUNDS", "BYTES_LIMIT", "COLUMN_KINDS", "COUNT_LIMIT", "INT64_LIMIT", "YEAR_S",
           "number_past_bound", "past_bound"]
