"""The summary table carries the quality figure beside the times (V6, R6)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import RunCli

from gpusession.core.events import AttemptFailedRecord, IncidentRecord
from gpusession.core.events.facts import failed_attempts
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow, ResultsFile
from gpusession.core.records.summary import summary_rows


def test_v6_summary_rows_give_the_quality_figure_per_variant(tmp_path: Path) -> None:
    f = ResultsFile(tmp_path / "r.csv")
    for i, (value, accepted) in enumerate(((0.951, True), (0.962, True), (None, None)), start=1):
        f.append(ResultRow(experiment_id="e", variant_id="batch-4", phase="warm", run_index=i,
                           elapsed_seconds=0.1 * i if value else None, quality_metric="macro_f1",
                           quality_value=value, corpus_accepted=accepted))
    f.append(ResultRow(experiment_id="e", variant_id="all", phase="load", run_index=1, elapsed_seconds=2.0))
    f.append(ResultRow(experiment_id="e", variant_id="batch-8", phase="warm", run_index=1,
                       elapsed_seconds=0.05, quality_metric="accuracy", quality_value=0.9))
    rows = summary_rows(f.read())
    by = {(r.variant_id, r.phase): r for r in rows}
    assert by[("batch-4", "warm")].quality_words() == "macro-F1 0.951–0.962"
    assert by[("batch-4", "warm")].outcome_words() == "1 failed (kept; the report says why)"
    assert by[("all", "load")].quality_words() == "-"
    assert by[("batch-8", "warm")].quality_words() == "accuracy 0.900"
    assert [r.phase for r in rows] == ["load", "warm", "warm"]


def test_failed_attempts_read_from_the_journal() -> None:
    records = [AttemptFailedRecord(attempt=1, run_keys=["e:load:all:1"]), IncidentRecord(message="x"),
               AttemptFailedRecord(attempt=2, run_keys=["e:load:all:2"])]
    assert failed_attempts(records) == {"e:load:all:1": 1, "e:load:all:2": 2}


def test_v6_show_prints_the_quality_figure_beside_the_times(
        measured_session: Session, run_cli: RunCli) -> None:
    out = run_cli("show", measured_session.name)
    assert out.returncode == 0, out.stderr
    header = next(ln for ln in out.stdout.splitlines() if ln.startswith("experiment"))
    assert "median" in header and "quality" in header
    warm = [ln for ln in out.stdout.splitlines() if ln.split()[2:3] == ["warm"]]  # the table's warm rows
    assert warm and all("macro-F1 0.950" in ln for ln in warm), out.stdout
    data = json.loads(run_cli("show", measured_session.name, "--json").stdout)
    assert all(r["quality"] == "macro-F1 0.950" for r in data["summary"] if r["phase"] == "warm")
    assert "None" not in out.stdout


def test_d5_the_recommended_variant_is_the_fastest_accepted_never_a_faster_rejected_one() -> None:
    from gpusession.core.records.summary import SummaryRow, recommended_variant

    def warm(variant: str, median_s: float | None, validated: int, accepted: int,
             exp: str = "e", phase: str = "warm") -> SummaryRow:
        return SummaryRow(experiment_id=exp, variant_id=variant, phase=phase, runs=5, n=5, failed=0,
                          median_seconds=median_s, min_seconds=median_s, max_seconds=median_s,
                          p95_seconds=None, validated=validated, accepted=accepted)

    rows = [warm("batch-1", 1.6, 5, 5), warm("batch-16", 0.688, 5, 5),
            warm("batch-32", 0.5, 5, 0),            # faster, rejected
            warm("batch-64", 0.4, 0, 0),            # faster, not validated
            warm("batch-8", 0.3, 5, 4),             # faster, one run rejected
            warm("batch-2", 0.1, 5, 5, phase="cold"),
            warm("batch-4", 0.2, 5, 5, exp="other")]
    best = recommended_variant(rows, "e")
    assert best is not None and best.variant_id == "batch-16"
    assert recommended_variant(rows, "nothing") is None
    assert recommended_variant([warm("batch-1", 1.0, 5, 0)], "e") is None
