"""Demo and summary output in words: no Python dict, the warm worker's
load row named, thousands separators in counts."""

from __future__ import annotations

from gpusession.bench.demo import corpus_words
from gpusession.bench.runner import _count
from gpusession.commands.summary_table import format_summary
from gpusession.core.events.runner import RowAppended
from gpusession.core.events.words import describe
from gpusession.core.records.results import ResultRow
from gpusession.core.records.summary import SummaryRow


def test_demo_corpus_line_is_words() -> None:
    text = corpus_words({"train": 1000, "tune": 225, "eval": 1000})
    assert text == "1,000 training, 225 tuning and 1,000 evaluation"
    assert "{" not in text and "'" not in text


def test_warm_load_row_reads_all_variants() -> None:
    rows = [SummaryRow("batch-sweep", "all", "load", 1, 1, 0, 0.5, 0.5, 0.5, None),
            SummaryRow("batch-sweep", "batch-1", "load", 1, 1, 0, 0.5, 0.5, 0.5, None),
            SummaryRow("batch-sweep", "batch-1", "warm", 5, 5, 0, 0.1, 0.1, 0.1, None)]
    table = format_summary(rows)
    assert "all variants load" in " ".join(table.split())
    assert "batch-1" in table
    line = describe(RowAppended(row=ResultRow(experiment_id="batch-sweep", phase="load",
                                              variant_id="all", elapsed_seconds=0.5)))
    assert line is not None and "all variants" in line


def test_counts_have_thousands_separators() -> None:
    assert _count(1000) == "1,000" and _count(None) == "?" and _count(8) == "8"
