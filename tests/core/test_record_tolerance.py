"""The record's ``tolerance=`` item says what judges a row: a threshold, a rule, or nothing (H-77)."""

from __future__ import annotations

from gpusession.core.experiment.record import record_of, tolerance_words
from gpusession.core.records.record_notes import record_items
from gpusession.core.validation.accept_rule import accept_protocol


def test_h77_an_accept_rule_protocol_says_no_threshold_never_none_nor_a_metric() -> None:
    protocol = accept_protocol(accept="sh r.sh {output}", expected_outputs="expected.txt",
                               deliverable_format="png")
    items = record_items(record_of(scope="full-chain", code_revision=None, protocol=protocol))
    assert items["tolerance"] == "none (accepted by a rule, no quality threshold)"
    said = tolerance_words(protocol)
    assert "None" not in said and "threshold None" not in said and "macro_f1" not in said


def test_h77_a_protocol_of_names_and_format_only_says_no_threshold() -> None:
    protocol = accept_protocol(accept=None, expected_outputs="expected.txt", deliverable_format="png")
    assert tolerance_words(protocol) == "none (no quality threshold)"


def test_h77_a_classification_protocol_still_says_its_threshold_and_metric() -> None:
    assert tolerance_words({"classes": ["a"], "threshold": 0.9}) == "not chosen (read as 0) below threshold 0.9 (macro_f1)"
    assert tolerance_words({"threshold": 0.9, "tolerance": 0.01, "metric": "accuracy"}) == \
        "0.01 below threshold 0.9 (accuracy)"
    assert tolerance_words(None) == tolerance_words({}) == "none (no validation protocol)"
