"""Durations and byte counts in words (``core/files/units.py``): 3 significant digits and a
unit, never a measured value as zero (H-22)."""

from __future__ import annotations

import pytest

from gpusession.commands.summary_table import format_summary
from gpusession.core.events import RowAppended
from gpusession.core.events.words import describe
from gpusession.core.files.units import (
    byte_scale,
    format_bytes,
    format_seconds,
    format_seconds_range,
)
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import evidence
from gpusession.core.retrieval.report import _cell
from gpusession.ui import context


@pytest.mark.parametrize(
    "seconds, words",
    [(1.2e-7, "120 ns"), (0.0, "0 s"), (None, "not measured"), (1e-9, "1.00 ns"),
     (0.0009997, "1.00 ms"), (0.12345, "123 ms"), (1.5, "1.50 s"), (123.456, "123 s"),
     (1234.5, "1234 s")],
)
def test_h22_format_seconds_three_significant_digits_with_unit(seconds: float | None, words: str) -> None:
    assert format_seconds(seconds) == words
    assert context.fmt_seconds(seconds) == words


@pytest.mark.parametrize(
    "n, words",
    [(1, "1 B"), (0, "0 B"), (None, "not measured"), (1023, "1023 B"), (1536, "1.50 KiB"),
     (24 * 1024**3, "24.0 GiB"), (512 * 1024**2, "512 MiB")],
)
def test_h22_format_bytes_three_significant_digits_with_unit(n: int | None, words: str) -> None:
    assert format_bytes(n) == words
    assert context.fmt_bytes(n) == words


def test_h22_every_formatter_shows_tiny_measured_values_not_zero() -> None:
    assert evidence.fmt_bytes(1) == "1 B"
    assert evidence.fmt_bytes(1536) == "1.50 KiB (1536 bytes)"
    assert evidence.fmt_bytes(0) == "0 B" and evidence.fmt_bytes(None) == "unknown"
    assert format_seconds_range(1.2e-7, 1.5e-7) == "120–150 ns"
    assert format_seconds_range(9.5e-4, 1.2e-3) == "950 µs–1.20 ms"
    assert format_seconds_range(None, 1.0) == "not measured"
    assert byte_scale(1) == (1.0, "B") and byte_scale(3 * 1024**3) == (1024.0**3, "GiB")
    assert _cell(1.2e-7) == "0.00000012" and _cell(0.0) == "0" and _cell(0.5) == "0.5"
    tiny = ResultRow(variant_id="v", phase="warm", run_index=1, elapsed_seconds=1.2e-7)
    assert "120 ns" in str(describe(RowAppended(row=tiny, done=1, total=1)))
    load = ResultRow(variant_id="v", phase="load", run_index=1, elapsed_seconds=1.2e-7)
    assert str(describe(RowAppended(row=load, total=1))).endswith("120 ns")
    zero = ResultRow(variant_id="v", phase="warm", run_index=1, elapsed_seconds=0.0)
    assert "0 s," in str(describe(RowAppended(row=zero, done=1, total=1)))
    table = format_summary([
        {"experiment_id": "e", "variant_id": "v", "phase": "warm", "n": 2, "failed": 0,
         "median_seconds": 1.2e-7, "min_seconds": 1.2e-7, "max_seconds": 1.2e-7},
        {"experiment_id": "e", "variant_id": "w", "phase": "warm", "n": 0, "failed": 1,
         "median_seconds": None, "min_seconds": None, "max_seconds": None},
    ])
    assert "120 ns" in table and "120–120 ns" in table and "0.000000" not in table
