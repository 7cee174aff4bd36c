"""A5: the report of a session of many experiments stays bounded in what it draws and reads.

Counted, never timed: the chart panels drawn (through the plotting seam, the same number
for 12 experiments and for 40), the parses of the results CSV in one report (one), and
the verdict lines read from the validation reports (the same words as a whole read).
The speed at two sizes is in ``benchmarks/bench_report.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers import TEST_NOW, NewSession

from gpusession.core.files.tomlio import read_toml, write_toml
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session
from gpusession.core.gpu.nvml import NvmlSnapshot
from gpusession.core.records import results
from gpusession.core.records.results import ResultRow
from gpusession.core.records.variants import _warm_runs
from gpusession.core.retrieval import plotting, report
from gpusession.core.retrieval.report import CHART_EXPERIMENTS, PANELS, write_report

pytestmark = pytest.mark.calendar  # the report says the package window and the cost

GIB = 1024**3
NVML = NvmlSnapshot(False, "no NVIDIA driver (test)", None, ())


def _rows(experiments: int) -> list[ResultRow]:
    """Each experiment: two variants, a load, a cold run and three warm runs each, accepted, with memory."""
    rows = []
    for e in range(experiments):
        common: dict[str, Any] = dict(experiment_id=f"sweep-{e:03d}", corpus_revision="c@1", device="cuda:0",
                                      quality_metric="macro_f1", quality_threshold=0.5, quality_tolerance=0.0)
        for variant, base in (("batch-1", 2.0), ("batch-8", 0.5)):
            rows.append(ResultRow(**common, variant_id=variant, phase="load", run_index=1, elapsed_seconds=1.5))
            rows.append(ResultRow(**common, variant_id=variant, phase="cold", run_index=1,
                                  elapsed_seconds=base * 3, corpus_accepted=True, quality_value=0.9,
                                  peak_allocated_bytes=GIB, peak_reserved_bytes=2 * GIB))
            rows += [ResultRow(**common, variant_id=variant, phase="warm", run_index=i,
                               elapsed_seconds=base + i / 100, corpus_accepted=True, quality_value=0.9,
                               peak_allocated_bytes=GIB, peak_reserved_bytes=2 * GIB) for i in (1, 2, 3)]
    return rows


def _session(new_session: NewSession, name: str, experiments: int) -> Session:
    s = new_session(name, package=Package(gpu_model="RTX A5000", lots=1, days=7, start=TEST_NOW))
    s.results.append_many(_rows(experiments))
    return s


def _panels_drawn(monkeypatch: pytest.MonkeyPatch, s: Session, tmp_path: Path) -> tuple[int, int, str | None]:
    """``(panels, figures, note)`` of one ``report``: every figure counted as the report closes it."""
    plt = plotting.pyplot_agg()
    seen: list[int] = []

    class Counting:
        """pyplot as the report gets it, counting the axes of each figure it closes."""

        def __getattr__(self, name: str) -> Any:
            return getattr(plt, name)

        def close(self, fig: Any) -> None:
            seen.append(len(fig.axes))
            plt.close(fig)

    monkeypatch.setattr(plotting, "pyplot_agg", Counting)
    res = write_report(s, out=tmp_path / f"{s.name}.md", now=TEST_NOW, nvml=NVML)
    assert len(res.charts) == len(seen), res.charts_note
    return sum(seen), len(seen), res.charts_note


def test_a5_report_draws_bounded_panels_for_12_and_40_experiments(
        new_session: NewSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    small = _panels_drawn(monkeypatch, _session(new_session, "many-12", 12), tmp_path)
    large = _panels_drawn(monkeypatch, _session(new_session, "many-40", 40), tmp_path)
    # the answer's experiments (a row of panels each), one summary figure, one memory figure
    bound = CHART_EXPERIMENTS * len(PANELS) + 2
    assert small[0] <= bound and large[0] <= bound and small[1] == large[1] == 3
    assert large[2] is not None and "the other 39 are not drawn" in large[2]
    assert "tables of section 1" in large[2]
    text = (tmp_path / "many-40.md").read_text(encoding="utf-8")
    assert "the other 39 are not drawn" in " ".join(text.split())


def test_a5_report_of_few_experiments_draws_each_and_says_nothing_left_out(
        new_session: NewSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    panels, figures, note = _panels_drawn(monkeypatch, _session(new_session, "few-3", 3), tmp_path)
    assert (panels, figures, note) == (3 * len(PANELS) + 1, 2, None)  # a row each, and the memory figure


def test_a5_report_reads_the_results_csv_once(
        new_session: NewSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    s = _session(new_session, "many-12", 12)
    checked: list[Path] = []
    parsed: list[object] = []
    check_rows, read_csv = results.check_rows, pl.read_csv

    def counting_check(path: Path, *args: Any, **kw: Any) -> Any:
        checked.append(Path(path))
        return check_rows(path, *args, **kw)

    def counting_read(source: Any, *args: Any, **kw: Any) -> Any:
        parsed.append(source)
        return read_csv(source, *args, **kw)

    monkeypatch.setattr(results, "_LAST_READ", {})  # nothing read before this report
    monkeypatch.setattr(results, "check_rows", counting_check)
    monkeypatch.setattr(pl, "read_csv", counting_read)
    write_report(s, out=tmp_path / "r.md", now=TEST_NOW, nvml=NVML, charts=False)
    assert checked.count(s.results.path) == 1 and len(parsed) == 1


def test_a5_warm_runs_of_interleaved_experiments_keep_their_own_first_after_load() -> None:
    frame = pl.DataFrame({
        "experiment_id": ["a", "b", "b", "a", "a"], "variant_id": ["v1", "v1", "v1", "v1", "v1"],
        "phase": ["load", "load", "warm", "warm", "warm"], "run_index": [1, 1, 1, 1, 2],
        "elapsed_seconds": [1.0, 1.0, 0.5, 0.4, 0.3]})
    runs = _warm_runs(frame)
    assert [(r.run_index, r.first_after_load) for r in runs["a"]] == [(1, True), (2, False)]
    assert [(r.run_index, r.first_after_load) for r in runs["b"]] == [(1, True)]


def test_a5_verdict_lines_read_as_the_whole_report_reads(tmp_path: Path) -> None:
    doc = {"run": "warm-1", "corpus_accepted": False, "verdict": "corpus REJECTED: quality below 0.5",
           "output": "runs/e/v/warm-1.jsonl", "summary": ["passed = false", "  [ids]"],
           "ids": {"passed": True, "reason": "every expected ID", "first_missing": []},
           "format": {"passed": True}, "quality": {"passed": False, "value": 0.41, "notes": ["value = 3"]},
           "overlap": {"checked": False}}
    write_toml(tmp_path / "warm-1.toml", doc)
    whole = read_toml(tmp_path / "warm-1.toml", field_bound=False)
    seen: dict[str, dict[str, Any]] = {}
    lines = report._verdict_doc(tmp_path / "warm-1.toml", seen)
    for key in ("corpus_accepted", "verdict"):
        assert lines[key] == whole[key]
    for section in ("ids", "format", "quality", "overlap"):
        assert {k: lines[section].get(k) for k in ("passed", "checked", "value")} == {
            k: whole[section].get(k) for k in ("passed", "checked", "value")}
    assert len(seen) == 1 and report._verdict_doc(tmp_path / "warm-1.toml", seen) is lines  # parsed once


def test_a5_a_verdict_line_that_does_not_parse_is_said_unreadable_with_its_line(
        new_session: NewSession, tmp_path: Path) -> None:
    s = _session(new_session, "broken-verdict", 1)
    s.validation_dir.mkdir(exist_ok=True)
    (s.validation_dir / "warm-1.toml").write_text("schema = 1\ncorpus_accepted = maybe\n", encoding="utf-8")
    text = report.render_report(s, now=TEST_NOW, nvml=NVML)
    assert "| warm-1.toml | unreadable: " in text and "warm-1.toml:2: TOML syntax error" in text
