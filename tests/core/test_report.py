"""The session report: every section, from hand-written rows; never overwrites."""

from __future__ import annotations

import builtins
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import NewSession, RunCli

from gpusession.core.files.errors import BadInput
from gpusession.core.files.tomlio import write_toml
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session
from gpusession.core.gpu.nvml import GpuReading, NvmlSnapshot
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import checklist as cl
from gpusession.core.retrieval.report import SECTIONS, render_report, write_report

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
GIB = 1024**3
NVML = NvmlSnapshot(True, None, "550.54.15", (
    GpuReading(0, "GPU-5f3a-0001", "NVIDIA RTX A5000", 24 * GIB, 0, ()),))


def _rows() -> list[ResultRow]:
    rows = []
    common: dict[str, Any] = dict(
        experiment_id="batch-sweep", corpus_revision="bbc@1", gpu_model="NVIDIA RTX A5000",
        gpu_count=1, device="cuda:0", driver_version="550.54.15", python_version="3.11.9",
        torch_version="2.5.1", runtime_version="CUDA 12.4", precision="fp32",
        quality_metric="macro_f1", quality_threshold=0.8, quality_tolerance=0.0,
    )
    for variant, base in (("batch-1", 2.0), ("batch-8", 0.5)):
        rows.append(ResultRow(**common, variant_id=variant, phase="cold", run_index=1,
                              elapsed_seconds=base * 3, peak_reserved_bytes=2 * GIB,
                              peak_allocated_bytes=GIB, corpus_accepted=True, quality_value=0.91))
        for i in range(1, 6):
            failed = variant == "batch-8" and i == 5
            rows.append(ResultRow(
                **common, variant_id=variant, phase="warm", run_index=i,
                elapsed_seconds=None if failed else base + i / 100,
                peak_reserved_bytes=None if failed else 3 * GIB,
                peak_allocated_bytes=None if failed else 2 * GIB,
                corpus_accepted=not failed, quality_value=None if failed else 0.91,
                notes="incident: out of memory, elapsed not measured (R7)" if failed else None,
            ))
    return rows


@pytest.fixture
def report_session(new_session: NewSession) -> Session:
    """A session with hand-written rows of every kind, a checklist, a verdict and a manifest."""
    s = new_session(package=Package(gpu_model="RTX A5000", lots=1, days=7, start=T0))
    s.results.append_many(_rows())
    s.data["experiments"] = {"batch-sweep": {
        "workload": "bbc-news", "varied": "batch", "values": [1, 8], "precision": "fp32",
        "scope": "processing", "runs_per_variant": 5,
        "protocol": {"classes": ["business", "sport"], "metric": "macro_f1", "threshold": 0.8,
                     "tolerance": 0.0, "output_format": "jsonl"},
    }}
    s.save()
    cl.set_done(s, "g1.one-sentence", True, now=T0)
    cl.set_note(s, "g1.one-sentence", "Classify 1,000 texts | approved by Ana")
    cl.set_note(s, "g1.approver", "Ana, macro-F1 ≥ 0.8 on the eval corpus")
    cl.set_note(s, "g8.decision", "Batch 8 is the method; keep fp32")
    s.validation_dir.mkdir(exist_ok=True)
    write_toml(s.validation_dir / "batch-sweep.batch-8.warm-1.toml", {
        "run": "batch-sweep.batch-8.warm-1", "corpus_accepted": True,
        "verdict": "corpus ACCEPTED: all four checks passed (IDs, format, quality, overlap)",
        "ids": {"passed": True}, "format": {"passed": True},
        "quality": {"passed": True, "value": 0.9134}, "overlap": {"passed": True},
    })
    (s.folder / "manifest.csv").write_text(
        "path,size_bytes,sha256\nvisuals/01.png,2048," + "a" * 64 + "\n", encoding="utf-8")
    return s


def _section(text: str, title: str) -> str:
    m = re.search(rf"^## \d+\. {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"section {title!r} missing"
    return m.group(1)


def test_report_has_every_section_with_content(report_session: Session) -> None:
    res = write_report(report_session, now=T0, nvml=NVML)
    assert res.path == report_session.folder / "report.md"
    text = res.path.read_text(encoding="utf-8")
    assert text.startswith("# Session report: visuals-test-01")
    for title in SECTIONS:
        _section(text, title)
    need = _section(text, "Need, decision and retrieval")
    assert "Classify 1,000 texts" in need and "Ana, macro-F1" in need
    env = _section(text, "Environment and protocol")
    assert "NVIDIA RTX A5000" in env and "CUDA 12.4" in env and "550.54.15" in env
    assert "GPU-5f3a-0001" in env and "matches the package" in env and "on the GPU" in env
    assert "batch-sweep" in env and "business, sport" in env and "threshold: 0.8" in env
    results = _section(text, "Results per variant and phase")
    # batch-8 warm: 4 measured, 1 failed kept; median of 0.51..0.54 = 0.525
    assert "Experiment batch-sweep (median" in results
    assert re.search(r"\| batch-8 \| warm \| 4 \| 525 ms \| 510–540 ms \| [^|]+ \| [^|]+ \|", results)
    assert "- batch-8 warm: 1 failed (kept" in results  # the measurement, apart from the verdict
    assert "out of memory" in results
    assert "p95" in results  # says why there is none
    assert "never added" in results  # the memory peaks
    assert "batch-8: 3.9× faster than batch-1" in results  # the variants compared (D7)
    val = _section(text, "Validation verdicts")
    assert "0.9134" in val
    assert "| batch-sweep.batch-8.warm-1 | ACCEPTED | PASS | PASS | PASS (0.9134) | PASS |" in val
    cost = _section(text, "Cost")
    assert "55.00 USD" in cost  # the 7-day RTX A5000 lot of seed 003 §4
    retrieval = _section(text, "Need, decision and retrieval")
    assert "manifest.csv: 1 deliverable(s)" in retrieval
    assert "Batch 8 is the method" in retrieval
    assert "![report-durations](report-durations.png)" in results or "matplotlib" in results  # drawn, or why not
    # g1.one-sentence ticked by the person, g4.cost-per-deliverable by the accepted corpus counted (S11)
    said = " ".join(retrieval.split())
    assert "Checklist: 2 of 48 items done, 1 ticked by gpusession's records (stage 1: 1/10, 4: 1/4;" in said
    # a pipe in a note does not break the Markdown
    assert "Classify 1,000 texts | approved" in need  # bullet text, not a table cell


def test_d5_the_report_opens_with_the_verdict_the_cost_and_the_variant_to_keep(report_session: Session) -> None:
    """The first 10 lines answer first: accepted?, cost per accepted deliverable, which variant."""
    text = render_report(report_session, now=T0, nvml=NVML)
    first = "\n".join(text.splitlines()[:10])
    assert "**Verdict:** 1 distinct corpus accepted; 11 of 12 runs validated, 11 accepted." in first
    assert "55.00 USD per" in first and "accepted deliverable" in first
    assert "**Keep:** batch-8 of batch-sweep, warm median 525 ms; 3.9× faster than" in first
    assert "**Risks:** 1 incident; no variant rejected; copy home not verified" in first
    # each incident once: the row's note and the journal say the same failure
    assert text.count("out of memory") == 1


def test_d5_the_summary_keeps_to_10_lines_and_its_risks_with_many_experiments(new_session: NewSession) -> None:
    s = new_session("many")
    common: dict[str, Any] = dict(corpus_revision="c@1", quality_metric="macro_f1", quality_threshold=0.9,
                                  quality_tolerance=0.0, ids_match=True, format_valid=True, phase="warm",
                                  quality_value=0.95, corpus_accepted=True)
    s.results.append_many([ResultRow(**common, experiment_id=f"experiment-with-a-long-name-{e}",
                                     variant_id=f"variant-{v}", run_index=i, elapsed_seconds=0.1 * v + i / 100)
                           for e in range(6) for v in (1, 2) for i in range(1, 6)])
    lines = render_report(s, now=T0, nvml=NVML).splitlines()
    summary = lines[2:lines.index("", 2)]
    assert len(summary) <= 10, summary
    assert any("**Risks:**" in line for line in summary)
    assert "more experiments: see the results" in "\n".join(summary)


def test_d5_each_incident_said_once_with_the_runs_it_concerns(new_session: NewSession) -> None:
    """The runner says a failed run as a typed fact of its row and in the journal: the report, once."""
    from gpusession.core.events import IncidentRecord, RunFinishedRecord
    from gpusession.core.records.notefacts import Incident, Remark, RowFacts, notes_cell

    s = new_session("incidents")
    said = "out of memory: OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    facts = RowFacts(incidents=(Incident("run_failed", said),),
                     remarks=(Remark("concurrent_load", "concurrent load at start: host CPU 9%"),))
    s.results.append_many([
        ResultRow(experiment_id="e", variant_id="batch-64", phase="warm", run_index=i, notes=notes_cell(facts))
        for i in (1, 2)])
    for i in (1, 2):
        s.journal(RunFinishedRecord(run_key=f"e:warm:batch-64:{i}", experiment_id="e", variant_id="batch-64",
                                    phase="warm", run_index=i, ok=False, **facts.record_fields()))
        s.journal(IncidentRecord(experiment_id="e", message=f"run warm:batch-64:{i}: {said}"))
    s.journal(IncidentRecord(experiment_id="e", message=f"worker warm: {said}"))
    text = render_report(s, now=T0, nvml=NVML)
    assert text.count("Tried to allocate 2.00 GiB") == 1, text
    assert "2 runs of e (warm); 3 times, last" in " ".join(text.split())
    assert "**Risks:** 1 incident;" in text
    assert "concurrent load at start: host CPU 9%" in " ".join(text.split())  # the other note stays


def test_d5_a_rejected_faster_variant_is_a_risk_never_the_one_to_keep(new_session: NewSession) -> None:
    s = new_session("rejected")
    common: dict[str, Any] = dict(experiment_id="e", corpus_revision="c@1", quality_metric="macro_f1",
                                  quality_threshold=0.9, quality_tolerance=0.0, ids_match=True,
                                  format_valid=True, phase="warm")
    rows = []
    for i in range(1, 6):
        rows.append(ResultRow(**common, variant_id="fast", run_index=i, elapsed_seconds=0.1 + i / 100,
                              quality_value=0.333, corpus_accepted=False))
        rows.append(ResultRow(**common, variant_id="slow", run_index=i, elapsed_seconds=0.5 + i / 100,
                              quality_value=0.95, corpus_accepted=True))
    s.results.append_many(rows)
    first = "\n".join(render_report(s, now=T0, nvml=NVML).splitlines()[:10])
    assert "**Keep:** slow of e" in first and "Keep:** fast" not in first
    assert "REJECTED: fast" in first
    assert "(variants: 1 accepted, 1 REJECTED)" in first


def test_report_never_overwrites_an_out_file_and_keep_numbers(report_session: Session, tmp_path: Path) -> None:
    first = write_report(report_session, now=T0)
    before = first.path.read_bytes()
    second = write_report(report_session, now=T0, keep=True)
    assert second.path.name == "report-2.md" and first.path.read_bytes() == before
    again = write_report(report_session, now=T0)  # the latest replaces the last: nothing piles
    assert again.path == first.path
    assert sorted(p.name for p in report_session.folder.glob("report*.md")) == ["report-2.md", "report.md"]
    out = tmp_path / "for-ana.md"
    out.write_text("mine", encoding="utf-8")
    with pytest.raises(BadInput, match="--force"):
        write_report(report_session, out=out)
    assert out.read_text(encoding="utf-8") == "mine"
    write_report(report_session, out=out, force=True)
    assert out.read_text(encoding="utf-8").startswith("# Session report")


def test_report_of_an_empty_session_says_what_is_missing(new_session: NewSession) -> None:
    s = new_session(name="empty", package=None)
    text = render_report(s, now=T0)
    for title in SECTIONS:
        _section(text, title)
    assert "No run recorded yet" in text and "No experiment defined" in text
    assert "not written yet" in _section(text, "Need, decision and retrieval")
    assert "Package not fully set" in _section(text, "Cost")
    assert "**Verdict:** not validated: none of 0 runs validated yet." in text


def test_report_says_when_charts_are_left_out(report_session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *a: Any, **k: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    res = write_report(report_session, now=T0)
    assert res.charts == [] and res.charts_note and "matplotlib is not installed" in res.charts_note
    assert "Charts left out" in _section(res.path.read_text(encoding="utf-8"), "Results per variant and phase")


@pytest.mark.slow
def test_report_draws_charts_when_matplotlib_is_importable(report_session: Session) -> None:
    pytest.importorskip("matplotlib")
    res = write_report(report_session, now=T0)
    assert [p.name for p in res.charts] == ["report-durations.png", "report-memory.png"]
    for p in res.charts:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({p.name})" in res.path.read_text(encoding="utf-8")
        assert p.stat().st_mode & 0o777 == 0o600  # as every file of the session folder


@pytest.mark.parametrize("backend", ["module://matplotlib_inline.backend_inline", "nonsense"])
def test_h42_report_keeps_its_charts_under_an_unusable_backend(
        run_cli: RunCli, report_session: Session, backend: str) -> None:
    """A notebook image's MPLBACKEND made ``import matplotlib`` raise: every chart was dropped."""
    pytest.importorskip("matplotlib")
    r = run_cli("report", report_session.name, "--html", env={"MPLBACKEND": backend})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "left out" not in r.stdout, r.stdout
    folder = report_session.folder
    assert (folder / "report-durations.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![report-durations](report-durations.png)" in (folder / "report.md").read_text(encoding="utf-8")
    assert "<svg" in (folder / "report.html").read_text(encoding="utf-8")


def test_h42_the_user_backend_is_put_back_for_child_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    import os

    from gpusession.core.retrieval.plotting import pyplot_agg

    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    plt = pyplot_agg()
    assert plt.get_backend().lower() == "agg"
    assert os.environ["MPLBACKEND"] == "module://matplotlib_inline.backend_inline"


def test_report_charts_draw_every_run_as_a_dot_on_axes_from_zero(report_session: Session) -> None:
    pytest.importorskip("matplotlib")
    from gpusession.core.retrieval.report import _figures

    plt, figures, note = _figures(report_session.results.read())
    assert note is None
    try:
        for name, fig in figures:
            for ax in fig.axes:
                if not ax.collections:
                    continue
                assert ax.get_ylim()[0] == 0, name  # every axis from 0
                assert not ax.patches, name  # no bar: the runs themselves are drawn
        from matplotlib.collections import PathCollection

        warm = dict(figures)["durations"].axes[0]  # the first panel: warm
        dots = sum(len(c.get_offsets()) for c in warm.collections if isinstance(c, PathCollection))
        runs = sum(1 for r in report_session.results.rows()
                   if r.phase == "warm" and r.elapsed_seconds is not None)
        assert dots == runs  # one dot per measured warm run
    finally:
        for _, fig in figures:
            plt.close(fig)


def test_d5_the_answer_is_given_before_the_charts_are_drawn_and_as_the_file_says_it(
        report_session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """``report`` prints the first lines at once: they need no chart (nor matplotlib)."""
    from gpusession.core.retrieval import report
    said: list[str] = []
    drawn = report._figures

    def figures(frame: Any, *answered: Any) -> Any:
        said.append("charts drawn")
        return drawn(frame, *answered)

    monkeypatch.setattr(report, "_figures", figures)
    res = write_report(report_session, now=T0, nvml=NVML, on_answer=said.extend)
    lines = res.answer
    assert said == [*lines, "charts drawn"] and lines[0].startswith("- Verdict: 1 distinct corpus")
    text = res.path.read_text(encoding="utf-8")  # the page holds the same lines (bold marks aside)
    assert all(any(line == ln.replace("**", "") for ln in text.splitlines()) for line in lines)


def test_report_no_charts_draws_none_imports_no_matplotlib_and_says_so(
        report_session: Session, sessions_root: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from gpusession.cli import main; "
            f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'report', {report_session.name!r}, "
            "'--no-charts', '--html']); print('MPL', 'matplotlib' in sys.modules, rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "MPL False 0" in done.stdout, done.stdout + done.stderr
    assert "Charts not drawn (--no-charts)" in done.stdout
    folder = report_session.folder
    assert not list(folder.glob("report*.png"))
    assert "Charts not drawn (--no-charts)" in (folder / "report.md").read_text(encoding="utf-8")
    assert "<svg" not in (folder / "report.html").read_text(encoding="utf-8")


def test_a_chart_is_written_0600_whatever_the_umask(report_session: Session) -> None:
    import os

    pytest.importorskip("matplotlib")
    old = os.umask(0)
    try:
        res = write_report(report_session, now=T0)
    finally:
        os.umask(old)
    assert res.charts and {p.stat().st_mode & 0o777 for p in res.charts} == {0o600}


@pytest.mark.slow
def test_cli_report(run_cli: RunCli, sessions_root: Path) -> None:
    assert run_cli("new", "r1", "--gpu", "RTX A5000", "--lots", "1", "--days", "3").returncode == 0
    r = run_cli("report", "r1")
    assert r.returncode == 0, r.stderr
    assert (sessions_root / "r1" / "report.md").exists() and "report.md" in r.stdout
    r = run_cli("report", "r1", "--out", str(sessions_root / "r1" / "report.md"))
    assert r.returncode == 2 and "--force" in r.stderr


@pytest.mark.slow
def test_d5_report_of_the_demo_answers_first_and_fits_80_lines(
        run_cli: RunCli, sessions_root: Path, demo_session: object) -> None:
    """End to end: `gpusession demo --headless --device cpu` (run once per test run), then `report demo`."""
    r = run_cli("report", "demo")
    assert r.returncode == 0, r.stderr
    text = (sessions_root / "demo" / "report.md").read_text(encoding="utf-8")
    for title in SECTIONS:
        _section(text, title)
    lines = text.splitlines()
    first = "\n".join(lines[:10])  # the answer first (D5): verdict, cost per deliverable, variant
    assert "**Verdict:** 1 distinct corpus accepted; 18 of 18 runs validated, 18 accepted." in first
    assert "55.00 USD per" in first and "accepted deliverable" in first
    assert re.search(r"\*\*Keep:\*\* (batch-\d\s+of\s+batch-sweep,\s+warm\s+median [^;]+; (\d\.\d× faster|about as fast)"
                     r"|none is faster beyond noise with 5 runs \(p = [\d.]+\); batch-\d\s+of\s+batch-sweep\s+has\s+the\s+lowest)",
                     first), first
    # the whole report at most 80 lines at 80 columns
    assert max(len(line) for line in lines) <= 80
    assert sum(max(1, -(-len(line) // 80)) for line in lines) <= 80, len(lines)
    results = _section(text, "Results per variant and phase")
    for variant in ("batch-1", "batch-4", "batch-8"):
        assert re.search(rf"\| {variant} \| warm \| 5 \| [^|]+ \| [^|]+ \| macro-F1 0\.9\d\d \| accepted \|",
                         results), results
    assert results.count("truncated 197 of 1,000 inputs") == 1  # identical notes said once
    assert "18 runs of batch-sweep (cold, warm): truncated 197 of 1,000 inputs" in " ".join(results.split())
    assert "Mann–Whitney" in results and "p95" in results
    assert "None" not in text
    env = _section(text, "Environment and protocol")
    assert "| cpu |" in env and "classes: business" in env and "before the first run" in env
    assert "ACCEPTED" in _section(text, "Validation verdicts")
    assert "55.00 USD" in _section(text, "Cost")


def test_report_chart_code_runs_against_a_stand_in_matplotlib(
        report_session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exercises our chart code (grouping, medians, file names) without matplotlib."""
    import sys
    import types
    from unittest import mock

    saved: list[str] = []

    def subplots(*a: Any, **k: Any) -> tuple[Any, Any]:
        fig = mock.MagicMock()
        fig.savefig.side_effect = lambda buf, **kw: (buf.write(b"\x89PNG\r\n\x1a\n"),  # drawn in memory
                                                     saved.append(kw.get("format")))
        return fig, mock.MagicMock()

    pyplot = types.ModuleType("matplotlib.pyplot")
    pyplot.subplots = subplots  # type: ignore[attr-defined]
    pyplot.close = lambda fig: None  # type: ignore[attr-defined]
    mpl = types.ModuleType("matplotlib")
    mpl.use = lambda backend: None  # type: ignore[attr-defined]
    mpl.pyplot = pyplot  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    res = write_report(report_session, now=T0, nvml=NVML)
    assert res.charts_note is None, res.charts_note
    assert saved == ["png", "png"]
    assert [p.name for p in res.charts] == ["report-durations.png", "report-memory.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in res.charts)
    text = res.path.read_text(encoding="utf-8")
    assert "![report-durations](report-durations.png)" in _section(text, "Results per variant and phase")
    # a second report replaces the charts; one kept (--keep) gets its own chart files
    res2 = write_report(report_session, now=T0, nvml=NVML)
    assert [p.name for p in res2.charts] == ["report-durations.png", "report-memory.png"]
    res3 = write_report(report_session, now=T0, nvml=NVML, keep=True)
    assert [p.name for p in res3.charts] == ["report-2-durations.png", "report-2-memory.png"]


def test_report_no_double_blank_lines_and_the_unit_said_is_true(report_session: Session,
                                                                       new_session: NewSession) -> None:
    """Section 1 had stray blank lines; section 4 said "Seconds." beside values in ms."""
    for s in (report_session, new_session(name="empty", package=None)):
        text = render_report(s, now=T0)
        assert "\n\n\n" not in text
        results = _section(text, "Results per variant and phase")
        assert "Seconds." not in results
    results = _section(render_report(report_session, now=T0), "Results per variant and phase")
    assert "ms or s" in results and " ms |" in results
    assert results.startswith("Experiment batch-sweep (median")  # the table's title first


def test_report_matplotlib_hint_matches_the_readme(report_session: Session,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *a: Any, **k: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    note = write_report(report_session, now=T0).charts_note or ""
    hint = re.search(r"`(pip install [^`]+)`", note)
    assert hint, note
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert hint.group(1) in readme


@pytest.mark.slow
def test_cli_report_replaces_the_latest_keep_numbers_said_in_help_and_printed(run_cli: RunCli,
                                                                              sessions_root: Path) -> None:
    assert run_cli("new", "r1").returncode == 0
    helptext = " ".join(run_cli("report", "--help").stdout.split())
    assert "replaces it" in helptext and "report-2.md, report-3.md" in helptext and "printed" in helptext
    for name, extra in (("report.md", ()), ("report.md", ()), ("report-2.md", ("--keep",)),
                        ("report-3.md", ("--keep",))):
        r = run_cli("report", "r1", *extra)
        assert r.returncode == 0, r.stderr
        assert f"wrote {sessions_root / 'r1' / name}" in r.stdout
    assert sorted(p.name for p in (sessions_root / "r1").glob("report*.md")) == [
        "report-2.md", "report-3.md", "report.md"]


def test_report_memory_shows_each_rank_beside_the_largest(new_session: NewSession) -> None:
    from gpusession.core.records.ranks import append_rank_rows

    s = new_session("ranks-report")
    s.results.append(ResultRow(experiment_id="two", variant_id="batch-8", phase="warm", run_index=1,
                               device="cuda:0", gpu_count=2, elapsed_seconds=0.2,
                               peak_allocated_bytes=3 * GIB, peak_reserved_bytes=5 * GIB))
    append_rank_rows(s.runs_dir / "two" / "ranks.csv", "warm:batch-8:1", "warm", [
        {"rank": 0, "world_size": 2, "device": "cuda:0", "ok": True,
         "peak_allocated_bytes": 2 * GIB, "peak_reserved_bytes": 4 * GIB},
        {"rank": 1, "world_size": 2, "device": "cuda:1", "ok": True,
         "peak_allocated_bytes": 3 * GIB, "peak_reserved_bytes": 5 * GIB},
    ])
    memory = _section(render_report(s, now=T0, nvml=NVML), "Results per variant and phase")
    assert "| batch-8 | warm | 3.00 GiB | 5.00 GiB |" in memory  # the row: the largest over ranks
    assert "each rank's own highest peak" in memory and "runs/two/ranks.csv" in memory
    assert "| batch-8 | warm | 0 | cuda:0 | 2.00 GiB | 4.00 GiB |" in memory
    assert "| batch-8 | warm | 1 | cuda:1 | 3.00 GiB | 5.00 GiB |" in memory
    assert "9.00 GiB" not in memory  # never added over ranks

    (s.runs_dir / "two" / "ranks.csv").write_text("run_key,rank\nwarm:batch-8:1,x\n")
    memory = _section(render_report(s, now=T0, nvml=NVML), "Results per variant and phase")
    assert "per-rank table cannot be read" in memory and "ranks.csv" in memory


def test_report_and_summary_count_only_rows_that_were_validated(new_session: NewSession) -> None:
    from gpusession.core.records.summary import summary_rows

    s = new_session("validated-count")
    run: dict[str, Any] = dict(experiment_id="e", variant_id="batch-4", phase="warm", corpus_revision="c1")
    s.results.append_many([
        ResultRow(**run, run_index=1, elapsed_seconds=0.2, ids_match=True, format_valid=True,
                  quality_value=0.95, corpus_accepted=True),
        ResultRow(**run, run_index=2, elapsed_seconds=0.2, ids_match=False, format_valid=True,
                  quality_value=0.4, corpus_accepted=False),  # validated and rejected
        ResultRow(**run, run_index=3, notes="incident: worker warm was ended at once (interrupted "
                  "by SIGHUP) during this run"),  # cut: never validated
        ResultRow(**run, run_index=4, corpus_accepted=False,  # as older versions wrote it
                  notes="incident: run in flight when gpusession stopped; recovered on reopen"),
    ])
    val = _section(render_report(s, now=T0), "Validation verdicts")
    assert "| e | batch-4 | 4 | 2 | 1 |" in val  # runs, validated, accepted
    [warm] = summary_rows(s.results.read())
    assert (warm.runs, warm.validated, warm.accepted) == (4, 2, 1)


def test_d5_a_setting_of_many_named_values_is_said_by_its_exceptions() -> None:
    from gpusession.core.retrieval.report import _settings_words

    many = "generic=none, cuda.matmul=none, cudnn=none, cudnn.conv=tf32, cudnn.rnn=tf32, mkldnn=none"
    assert _settings_words(many) == "cudnn.conv=tf32, cudnn.rnn=tf32, the other 4 none"
    assert _settings_words("a=1, b=2") == "a=1, b=2"  # few: kept as they are
    assert _settings_words("torch 2.13.0+cpu") == "torch 2.13.0+cpu"
    even = "a=x, b=y, c=x, d=y, e=z, f=z"
    assert _settings_words(even) == even  # no value holds most of them
