"""benchmarks/bench_validation.py at its smallest size: CI's smoke run of the benchmark."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

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


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_validation", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


@pytest.mark.parametrize("which", ["dirty", "clean"])
def test_v6_the_validation_floor_reaches_the_products_verdict_counts_and_macro_f1(
        tmp_path: Path, which: str) -> None:
    """The floor is a floor: the same checks, so the same verdict, counts, digest and metric."""
    bench: Any = _bench()
    corpus, output, train, classes = bench.build(tmp_path, 3_000, 7, 25, seed=3)
    target = output if which == "dirty" else tmp_path / "clean.jsonl"
    protocol = bench.Protocol(classes=classes, threshold=0.8)
    ours, fl = bench.ours(corpus, target, train, protocol), bench.floor(corpus, target, train, protocol)
    bench.same_verdict(ours, fl)
    assert fl["accepted"] is (which == "clean") and fl["format_valid"] is True
    if which == "dirty":
        assert (fl["missing"], fl["extra"], fl["dup"]) == (25, 25, ours["dup"]) and fl["dup"] > 0
    # and it can tell: a label outside the classes is a format problem for both
    bad = tmp_path / "bad.jsonl"
    bad.write_text(target.read_text(encoding="utf-8").replace('"label": "class_00"', '"label": "class_99"', 1),
                   encoding="utf-8")
    ours_bad, fl_bad = bench.ours(corpus, bad, train, protocol), bench.floor(corpus, bad, train, protocol)
    bench.same_verdict(ours_bad, fl_bad)
    assert fl_bad["format_valid"] is False and fl_bad["accepted"] is False
