"""core.validation.metrics: one table of quality metrics, ``{name: function}`` (V5, V6).

The protocol, the CLI's choices, the report and the names for people all read it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gpusession.cli import build_parser
from gpusession.core.files.errors import BadInput
from gpusession.core.records.summary import METRIC_WORDS
from gpusession.core.validation import (
    DEFAULT_METRIC,
    METRICS,
    Protocol,
    load_expected,
    validate_output,
)
from gpusession.core.validation.metrics import ClassScore, Tally, accuracy, macro_f1


def _option(parser: argparse.ArgumentParser, *path: str, dest: str) -> argparse.Action:
    """The action ``dest`` of the subcommand ``path`` (``"validate"``, ``"experiment", "define"``)."""
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return next(a for a in parser._actions if a.dest == dest)


def test_v6_cli_metric_choices_are_the_table() -> None:
    """``validate --metric`` and ``experiment define --metric`` offer the table's names (the
    parser keeps them without importing the table, for ``--help``'s start-up)."""
    parser = build_parser()
    validate = _option(parser, "validate", dest="metric")
    assert validate.choices is not None and list(validate.choices) == list(METRICS)
    assert validate.default == DEFAULT_METRIC
    define = _option(parser, "experiment", "define", dest="metric")
    assert define.choices is not None and list(define.choices) == list(METRICS)
    # no default stored by the parser: the metric is applied with --classes and its threshold (V5)
    assert define.default is None and DEFAULT_METRIC in (define.help or "")


def test_v6_every_metric_of_the_table_has_a_name_for_people() -> None:
    """The CLI's text, the summary table and the TUI's Validation pane name metrics with
    ``metric_words`` (one floor below): its table covers exactly these names."""
    assert list(METRIC_WORDS) == list(METRICS)


def test_v5_protocol_takes_exactly_the_metrics_of_the_table() -> None:
    for name in METRICS:
        assert Protocol(classes=("a",), metric=name).metric == name
    assert Protocol(classes=("a",)).metric == DEFAULT_METRIC == "macro_f1"
    with pytest.raises(BadInput) as info:
        Protocol(classes=("a",), metric="f2")
    assert info.value.field == "protocol.metric"
    assert f"expected one of {', '.join(METRICS)}, got 'f2'" in info.value.message


def test_v6_metric_functions_read_the_tally() -> None:
    """Macro-F1 is the mean over declared classes (a class never predicted counts 0);
    accuracy is right over every scored ID."""
    scores = (ClassScore("a", 1.0, 0.5, 2 / 3, 2, 1, 1), ClassScore("b", 0.5, 1.0, 2 / 3, 1, 2, 1),
              ClassScore("c", 0.0, 0.0, 0.0, 1, 0, 0))
    t = Tally(per_class=scores, scored=4, right=2)
    assert METRICS["macro_f1"] is macro_f1 and METRICS["accuracy"] is accuracy
    assert macro_f1(t) == pytest.approx(4 / 9)
    assert accuracy(t) == 0.5


def test_v6_report_keeps_every_metric_and_judges_the_protocols(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\n1,a\n2,a\n3,b\n4,c\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "1", "label": "a"}\n{"id": "2", "label": "b"}\n{"id": "3", "label": "b"}\n'
                   '{"id": "4", "label": "a"}\n', encoding="utf-8")
    want = {"macro_f1": (0.5 + 2 / 3 + 0.0) / 3, "accuracy": 0.5}
    for name in METRICS:
        r = validate_output(out, load_expected(corpus), Protocol(classes=("a", "b", "c"), metric=name, threshold=0.5))
        assert set(r.metric_values) == set(METRICS)
        assert r.metric_values == pytest.approx(want)
        assert r.quality_value == r.metric_values[name] and r.row_fields()["quality_metric"] == name
        quality = r.to_dict()["quality"]
        assert {k: quality[k] for k in METRICS} == r.metric_values
        assert r.macro_f1 == r.metric_values["macro_f1"] and r.accuracy == r.metric_values["accuracy"]
    assert r.quality_met is True  # accuracy 0.5 ≥ 0.5
