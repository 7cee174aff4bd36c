"""Every benchmark is run once by CI (a smoke run) and named in the guide: none is dropped."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


def test_there_are_benchmarks() -> None:
    assert "bench_report.py" in BENCHMARKS and "bench_compare.py" in BENCHMARKS


def test_ci_runs_every_benchmark_once() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ran = re.findall(r"^(?:rc=0; )?python3 benchmarks/(\w+\.py)\b", ci, flags=re.M)
    assert sorted(ran) == BENCHMARKS


def test_the_guide_names_every_benchmark() -> None:
    readme = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Benchmarks"):].split("\n## ")[0]
    assert [b for b in BENCHMARKS if f"`{b}`" not in section and f"benchmarks/{b}" not in section] == []
