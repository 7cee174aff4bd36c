"""Durations and byte counts in words: 3 significant digits and a unit (H-22).

Why it exists: each display path had its own ``:.4f`` or ``:.2f``, and a measured
``1.2e-7 s`` read ``0.0000`` — a measured value shown as zero. Every place that shows a
duration or a byte count (CLI ``show`` and the summary table, the Markdown report, the
TUI tables and charts, the run progress words) goes through these functions. Files keep
full precision (the results CSV writes ``0.00000012``); this module is for display only.
``None`` is "not measured" (C3: empty is not zero); a measured ``0`` reads ``0 s`` /
``0 B``, which is the truth.
"""

from __future__ import annotations

import math

NOT_MEASURED = "not measured"

_TIME_UNITS = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, without exponent (``120``, ``1.50``).

    Args:
        value: a finite number.
        digits: significant digits kept (at least 1); whole numbers with more digits
            keep all of them (``1234`` stays ``1234``).

    Returns:
        The number as text; ``0`` for zero.
    """
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:.{decimals}f}"
    # rounding may add a digit (9.995 -> 10.00): keep ``digits`` significant digits
    rounded_magnitude = math.floor(math.log10(abs(float(text)))) if float(text) else magnitude
    if rounded_magnitude > magnitude and decimals > 0:
        text = f"{value:.{decimals - 1}f}"
    return text


def format_seconds(seconds: float | None, absent: str = NOT_MEASURED) -> str:
    """A duration with 3 significant digits and a unit: ``120 ns``, ``1.50 ms``, ``2.35 s``.

    Args:
        seconds: the duration in seconds; ``None`` when not measured.
        absent: the words for ``None`` (``failed`` where the run failed).

    Returns:
        The duration in words; ``absent`` for ``None``; ``0 s`` for a measured zero.
    """
    if seconds is None:
        return absent
    s = float(seconds)
    if math.isnan(s) or math.isinf(s):
        return f"{s} s"
    if s == 0:
        return "0 s"
    size, unit = _TIME_UNITS[-1]
    for scale, name in _TIME_UNITS:
        if abs(s) < scale * 1000 and abs(float(significant(s / scale))) < 1000:
            size, unit = scale, name
            break
    return f"{significant(s / size)} {unit}"


def format_bytes(n: int | float | None, absent: str = NOT_MEASURED) -> str:
    """A byte count with binary units: ``1 B``, ``1.50 KiB``, ``24.0 GiB``.

    Counts below 1024 are whole bytes; larger ones keep 3 significant digits.

    Args:
        n: the count in bytes; ``None`` when not measured.
        absent: the words for ``None`` (``unknown`` for a reading that failed).

    Returns:
        The count in words; ``absent`` for ``None``; ``0 B`` for a measured zero.
    """
    if n is None:
        return absent
    value = float(n)
    if math.isnan(value) or math.isinf(value):
        return f"{value} B"
    if abs(value) < 1024:
        return f"{value:.0f} B" if value == int(value) else f"{significant(value)} B"
    for unit in _BYTE_UNITS:
        value /= 1024
        if abs(value) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{significant(value)} {unit}"
    return f"{significant(value)} PiB"  # pragma: no cover


def format_seconds_range(low: float | None, high: float | None, absent: str = NOT_MEASURED) -> str:
    """``1.20–3.40 ms`` (``950 µs–1.20 ms`` across units); ``absent`` when either end is not measured."""
    if low is None or high is None:
        return absent
    lo, hi = format_seconds(low), format_seconds(high)
    lo_num, _, lo_unit = lo.partition(" ")
    return f"{lo_num}–{hi}" if hi.partition(" ")[2] == lo_unit else f"{lo}–{hi}"


def byte_scale(largest: float | None) -> tuple[float, str]:
    """``(divisor, unit)`` for a chart axis whose largest value is ``largest`` bytes.

    Args:
        largest: the largest count on the axis (``None`` or 0: bytes).

    Returns:
        ``(1024**k, "KiB"...)`` so the largest value reads between 1 and 1024 units,
        ``(1, "B")`` below 1 KiB: a chart of 1 B never shows bars of 0.000 GiB (H-22).
    """
    divisor, unit = 1.0, "B"
    for name in _BYTE_UNITS:
        if largest is None or abs(largest) < divisor * 1024:
            break
        divisor, unit = divisor * 1024, name
    return divisor, unit
