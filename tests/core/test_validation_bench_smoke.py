"""benchmarks/bench_validation.py at its smallest size: CI's smoke run of the benchmark."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_validation.py"


def test_v6_validation_benchmark_smallest_agrees_with_the_baseline_and_the_floor(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--smallest`` runs every step (ours, the polars floor, the scikit-learn baseline,
    the report) on 2,000 IDs; its assertions compare verdicts, counts and macro-F1."""
    spec = importlib.util.spec_from_file_location("bench_validation", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--smallest"]) == 0
    out = capsys.readouterr().out
    assert "built 2,000 IDs" in out and "verdict: accepted=False missing=20 extra=20 duplicated=20" in out
    assert "plain-Python baseline:" in out and "same verdict, counts and macro-F1" in out
    assert "not judged (--smallest: a smoke run)" in out
