"""Corpus validation: rules V1-V8 and case H-13, through the core API."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from gpusession.core.files.errors import BadInput
from gpusession.core.files.tomlio import read_toml
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.validation import (
    Expected,
    Protocol,
    accepted_corpora,
    load_expected,
    validate_output,
)


def write_corpus(path: Path, rows: list[tuple[str, str | None]]) -> Path:
    pl.DataFrame({"id": [r[0] for r in rows], "label": [r[1] for r in rows]}, schema={"id": pl.String, "label": pl.String}).write_csv(path)
    return path


def write_jsonl(path: Path, rows: list[tuple[object, object]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "label": lab}) + "\n" for i, lab in rows), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus.csv", [(f"{i:03d}", "ab"[i % 2]) for i in range(10)])


@pytest.fixture
def expected(corpus: Path) -> Expected:
    return load_expected(corpus)


PROTO = Protocol(classes=("a", "b"), threshold=0.9)


def perfect(tmp_path: Path, name: str = "out.jsonl") -> Path:
    return write_jsonl(tmp_path / name, [(f"{i:03d}", "ab"[i % 2]) for i in range(10)])


def test_v1_perfect_output_is_accepted_and_each_check_reported(tmp_path: Path, expected: Expected) -> None:
    r = validate_output(perfect(tmp_path), expected, PROTO)
    assert (r.ids_match, r.format_valid, r.quality_met, r.no_overlap, r.corpus_accepted) == (True,) * 5
    assert r.quality_value == 1.0
    lines = r.summary_lines()
    assert lines[0].startswith("corpus ACCEPTED")
    assert any(line.startswith("IDs      PASS") for line in lines)
    assert any(line.startswith("format   PASS") for line in lines)
    assert any(line.startswith("quality  PASS") for line in lines)


def test_v1_quality_below_threshold_rejects_alone(tmp_path: Path, expected: Expected) -> None:
    out = write_jsonl(tmp_path / "o.jsonl", [(f"{i:03d}", "a") for i in range(10)])
    r = validate_output(out, expected, PROTO)
    assert r.ids_match and r.format_valid and not r.quality_met and not r.corpus_accepted
    assert r.failed_checks == ["quality"]
    assert r.quality_reason.startswith(
        "macro-F1 = 0.3333 < 0.9000 (threshold 0.9000 − tolerance not chosen (read as 0))")


def test_v1_row_fields_are_exactly_the_csv_keys(tmp_path: Path, expected: Expected) -> None:
    r = validate_output(perfect(tmp_path), expected, PROTO)
    fields = r.row_fields()
    assert set(fields) == {
        "expected_ids", "observed_ids", "ids_match", "format_valid", "quality_metric",
        "quality_threshold", "quality_tolerance", "quality_value", "corpus_accepted",
    }
    ResultRow(**fields)  # fills the results row without renaming


def test_v2_equal_line_counts_with_different_ids_reject(tmp_path: Path, expected: Expected) -> None:
    rows = [(f"{i:03d}", "ab"[i % 2]) for i in range(9)] + [("999", "b")]
    r = validate_output(write_jsonl(tmp_path / "o.jsonl", rows), expected, PROTO)
    assert r.observed_ids == r.expected_ids == 10
    assert not r.ids_match and not r.corpus_accepted
    assert r.missing_ids["id"].to_list() == ["009"]
    assert r.extra_ids["id"].to_list() == ["999"]
    assert "equal counts, different IDs" in r.ids_reason


def test_v2_lists_written_beside_the_report(tmp_path: Path, expected: Expected) -> None:
    rows = [(f"{i:03d}", "ab"[i % 2]) for i in range(8)] + [("x1", "a"), ("x2", "b"), ("000", "a")]
    r = validate_output(write_jsonl(tmp_path / "o.jsonl", rows), expected, PROTO)
    path = r.write(tmp_path / "validation", "run-1")
    assert path == tmp_path / "validation" / "run-1.toml"
    doc = read_toml(path)
    assert doc["ids"]["missing"] == 2 and doc["ids"]["extra"] == 2 and doc["ids"]["duplicated_in_output"] == 1
    folder = tmp_path / "validation"
    assert pl.read_csv(folder / "run-1.missing.csv", schema_overrides={"id": pl.String})["id"].to_list() == ["008", "009"]
    assert pl.read_csv(folder / "run-1.extra.csv")["id"].to_list() == ["x1", "x2"]
    dup = pl.read_csv(folder / "run-1.duplicates.csv", schema_overrides={"id": pl.String, "lines": pl.String})
    assert dup.row(0, named=True) == {"id": "000", "found_in": "output", "count": 2, "lines": "1;11"}


def test_v2_ids_are_strings_leading_zeros_and_spaces_matter(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("007", "a"), ("x y", "b")]))
    out = write_jsonl(tmp_path / "o.jsonl", [("7", "a"), ("x y ", "b")])
    r = validate_output(out, exp, PROTO)
    assert r.missing_ids["id"].to_list() == ["007", "x y"]
    assert sorted(r.extra_ids["id"].to_list()) == ["7", "x y "]


def test_v3_duplicate_id_rejects_even_when_sets_match(tmp_path: Path, expected: Expected) -> None:
    rows = [(f"{i:03d}", "ab"[i % 2]) for i in range(10)] + [("003", "b")]
    r = validate_output(write_jsonl(tmp_path / "o.jsonl", rows), expected, PROTO)
    assert r.missing_count == 0 and r.extra_count == 0
    assert r.duplicate_output_count == 1 and not r.ids_match and not r.corpus_accepted
    assert "003" in "\n".join(r.summary_lines())


def test_v3_duplicate_in_expected_list_rejects(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("1", "a"), ("2", "b"), ("1", "a")]))
    r = validate_output(write_jsonl(tmp_path / "o.jsonl", [("1", "a"), ("2", "b")]), exp, PROTO)
    assert r.duplicate_expected_count == 1 and r.missing_count == 0 and not r.ids_match
    assert r.duplicates.row(0, named=True)["found_in"] == "expected list"


def test_v4_bad_records_quoted_with_line_numbers(tmp_path: Path, expected: Expected) -> None:
    out = tmp_path / "o.jsonl"
    lines = [json.dumps({"id": f"{i:03d}", "label": "ab"[i % 2]}) for i in range(10)]
    lines[2] = "not json at all"
    lines[4] = '{"id": 4, "label": "a"}'
    lines[6] = '{"id": "006"}'
    lines[7] = '{"id": "007", "label": ""}'
    out.write_text("\n".join(lines) + "\n")
    r = validate_output(out, expected, PROTO)
    assert not r.format_valid and r.bad_record_count == 4
    got = {b.line: b.problem for b in r.bad_records}
    assert got[3].startswith("not JSON")
    assert got[5].startswith("ID is a JSON number")
    assert got[7] == "missing field 'label'"
    assert got[8] == "empty label"
    assert r.bad_records[0].text == "not json at all"
    # a record with a number ID has no ID: 002 and 004 are missing too
    assert r.missing_ids["id"].to_list() == ["002", "004"]


def test_v4_problem_kinds_as_common_as_each_other_are_said_in_name_order(tmp_path: Path, expected: Expected) -> None:
    """The reason lists the commonest kind first and ties by name, the same on every run."""
    out = tmp_path / "o.jsonl"
    lines = [json.dumps({"id": f"{i:03d}", "label": "ab"[i % 2]}) for i in range(10)]
    lines[2] = "not json at all"
    lines[4] = '{"id": 4, "label": "a"}'
    lines[6] = '{"id": "006"}'
    lines[7] = '{"id": "007", "label": ""}'
    lines[8] = '{"id": "008", "label": ""}'
    out.write_text("\n".join(lines) + "\n")
    for _ in range(5):
        r = validate_output(out, expected, PROTO)
        assert "(empty label: 2, ID is not a string: 1, missing field: 1, not JSON: 1)" in r.format_reason
        assert list(r.problem_counts) == ["empty label", "ID is not a string", "missing field", "not JSON"]


def test_v4_only_first_20_bad_records_quoted(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [(str(i), "a") for i in range(50)]))
    out = write_jsonl(tmp_path / "o.jsonl", [(str(i), "z") for i in range(50)])
    r = validate_output(out, exp, PROTO)
    assert r.bad_record_count == 50 and len(r.bad_records) == 20
    assert [b.line for b in r.bad_records] == list(range(1, 21))


def test_v5_protocol_round_trips_and_refuses_bad_values() -> None:
    p = Protocol(classes=("a", "b"), metric="accuracy", threshold=0.8, tolerance=0.01,
                 reference_value=0.85, max_degradation=0.02, output_format="csv")
    assert Protocol.from_toml(p.to_toml()) == p
    with pytest.raises(BadInput, match="protocol.metric"):
        Protocol.from_toml({"classes": ["a"], "metric": "f2"})
    with pytest.raises(BadInput, match="protocol.threshold"):
        Protocol.from_toml({"classes": ["a"], "threshold": 1.5})
    with pytest.raises(BadInput, match="protocol.classes"):
        Protocol.from_toml({"metric": "accuracy"})
    with pytest.raises(BadInput, match="protocol.reference_value"):
        Protocol.from_toml({"classes": ["a"], "max_degradation": 0.1})
    with pytest.raises(BadInput, match="twice"):
        Protocol(classes=("a", "a"))


def test_v6_class_never_predicted_scores_zero_not_skipped(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("1", "a"), ("2", "b"), ("3", "b")]))
    out = write_jsonl(tmp_path / "o.jsonl", [("1", "b"), ("2", "b"), ("3", "b")])
    r = validate_output(out, exp, Protocol(classes=("a", "b"), threshold=0.0))
    scores = {c.label: c for c in r.per_class}
    assert scores["a"].f1 == 0.0 and scores["a"].support == 1 and scores["a"].predicted == 0
    assert r.macro_f1 == pytest.approx((0.0 + 0.8) / 2)
    assert any("never predicted" in n for n in r.quality_notes)


def test_v6_accuracy_metric_and_tolerance(tmp_path: Path, expected: Expected) -> None:
    rows = [(f"{i:03d}", "ab"[i % 2]) for i in range(9)] + [("009", "a")]  # 9 of 10 right
    out = write_jsonl(tmp_path / "o.jsonl", rows)
    r = validate_output(out, expected, Protocol(classes=("a", "b"), metric="accuracy", threshold=0.91, tolerance=0.01))
    assert r.quality_value == pytest.approx(0.9) and r.quality_met  # 0.9 ≥ 0.91 − 0.01
    r2 = validate_output(out, expected, Protocol(classes=("a", "b"), metric="accuracy", threshold=0.91))
    assert not r2.quality_met and r2.quality_margin == pytest.approx(-0.01)


def test_v6_max_degradation_against_reference(tmp_path: Path, expected: Expected) -> None:
    rows = [(f"{i:03d}", "ab"[i % 2]) for i in range(9)] + [("009", "a")]
    out = write_jsonl(tmp_path / "o.jsonl", rows)
    base = dict(classes=("a", "b"), metric="accuracy", threshold=0.5, reference_value=0.95)
    assert validate_output(out, expected, Protocol(**base, max_degradation=0.05)).quality_met  # type: ignore[arg-type]
    r = validate_output(out, expected, Protocol(**base, max_degradation=0.04))  # type: ignore[arg-type]
    assert not r.quality_met and "beyond the maximum degradation" in r.quality_reason


def test_v6_no_references_means_quality_not_met(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("1\n2\n")
    exp = load_expected(ids)
    r = validate_output(write_jsonl(tmp_path / "o.jsonl", [("1", "a"), ("2", "b")]), exp, PROTO)
    assert r.ids_match and r.format_valid and not r.quality_met and r.quality_value is None
    assert "no reference labels" in r.quality_reason


def test_v7_overlap_of_training_ids_blocks_acceptance(tmp_path: Path, expected: Expected) -> None:
    train = tmp_path / "train.txt"
    train.write_text("t1\n005\n")
    r = validate_output(perfect(tmp_path), expected, PROTO, train_ids=train, tune_ids=["u1", "t1"])
    assert r.ids_match and r.format_valid and r.quality_met
    assert not r.no_overlap and not r.corpus_accepted and r.failed_checks == ["overlap"]
    pairs = set(r.overlap.iter_rows())
    assert pairs == {("005", "evaluation and training"), ("t1", "training and tuning")}
    clean = validate_output(perfect(tmp_path), expected, PROTO, train_ids=["t1"], tune_ids=["u1"])
    assert clean.no_overlap and clean.overlap_checked and clean.corpus_accepted


def test_v8_report_archived_in_session_validation_folder(tmp_path: Path, sessions_root: Path, expected: Expected) -> None:
    s = Session.create(sessions_root, "demo")
    r = validate_output(perfect(tmp_path), expected, PROTO)
    path = r.write(s.validation_dir, "e1-v1-warm-1")
    assert path.parent == s.validation_dir
    doc = read_toml(path)
    assert doc["corpus_accepted"] is True and doc["label_set"] == ["a", "b"]
    assert doc["row"]["quality_value"] == 1.0
    assert doc["summary"] == r.summary_lines()
    for kind in ("missing", "extra", "duplicates", "bad_records", "overlap"):
        assert (s.validation_dir / f"e1-v1-warm-1.{kind}.csv").exists()


def test_h13_undeclared_class_is_format_invalid_before_scoring(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("1", "a"), ("2", "a"), ("3", "b"), ("4", "b"), ("5", "b")]))
    out = write_jsonl(tmp_path / "o.jsonl", [("1", "a"), ("2", "a"), ("3", "b"), ("4", "b"), ("5", "c")])
    r = validate_output(out, exp, Protocol(classes=("a", "b"), threshold=0.5))
    assert not r.format_valid and not r.corpus_accepted
    assert r.bad_records[0].line == 5 and "not a declared class" in r.bad_records[0].problem


def test_h13_macro_f1_over_declared_classes_is_0_6(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("1", "a"), ("2", "a"), ("3", "b"), ("4", "b"), ("5", "b")]))
    out = write_jsonl(tmp_path / "o.jsonl", [("1", "a"), ("2", "a"), ("3", "b"), ("4", "b"), ("5", "c")])
    r = validate_output(out, exp, Protocol(classes=("a", "b", "c"), threshold=0.5))
    assert r.format_valid
    assert r.macro_f1 == pytest.approx(0.6)
    assert {c.label: round(c.f1, 6) for c in r.per_class} == {"a": 1.0, "b": 0.8, "c": 0.0}
    assert r.label_set == ("a", "b", "c")
    assert "label set used: a, b, c" in r.quality_reason


def test_accepted_corpora_counts_distinct_revisions_not_rows() -> None:
    frame = pl.DataFrame(
        {"corpus_revision": ["r1"] * 5 + ["r2", "r3"], "corpus_accepted": [True] * 5 + [True, False]}
    )
    assert accepted_corpora(frame) == 2


def test_references_file_replaces_labels(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("id\n1\n2\n3\n")
    refs = write_corpus(tmp_path / "refs.csv", [("1", "a"), ("2", "b")])
    exp = load_expected(ids, references=refs)
    assert exp.frame["label"].to_list() == ["a", "b", None]
    assert any("no reference" in n for n in exp.notes)
    conflicting = write_corpus(tmp_path / "bad.csv", [("1", "a"), ("1", "b")])
    with pytest.raises(BadInput, match="more than one label"):
        load_expected(ids, references=conflicting)


def test_v5_fingerprint_changes_with_any_protocol_field() -> None:
    base = Protocol(classes=("a", "b"), threshold=1)
    assert base.fingerprint() == Protocol(classes=["a", "b"], threshold=1.0).fingerprint()  # type: ignore[arg-type]
    changed = [
        Protocol(classes=("a", "b", "c"), threshold=1),
        Protocol(classes=("a", "b"), threshold=0.9),
        Protocol(classes=("a", "b"), threshold=1, tolerance=0.01),
        Protocol(classes=("a", "b"), threshold=1, metric="accuracy"),
        Protocol(classes=("a", "b"), threshold=1, output_format="csv"),
        Protocol(classes=("a", "b"), threshold=1, reference_value=0.9, max_degradation=0.1),
    ]
    assert len({base.fingerprint(), *(p.fingerprint() for p in changed)}) == 1 + len(changed)


def test_v6_class_with_no_reference_and_no_prediction_is_reported(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("1", "a"), ("2", "b")]))
    out = write_jsonl(tmp_path / "o.jsonl", [("1", "a"), ("2", "b")])
    r = validate_output(out, exp, Protocol(classes=("a", "b", "c"), threshold=0.5))
    assert r.macro_f1 == pytest.approx(2 / 3)  # c counts as 0, as scikit-learn does
    assert any("'c' have no reference and no prediction" in n for n in r.quality_notes)
    assert any("'c' have no reference" in line for line in r.summary_lines())


def test_v4_control_characters_are_escaped_in_quotes(tmp_path: Path, expected: Expected) -> None:
    out = tmp_path / "o.jsonl"
    out.write_text(perfect(tmp_path).read_text() + '{"id": "x\\u001b[2J", "label": "\\u001b[31mred"}\n')
    r = validate_output(out, expected, PROTO)
    text = "\n".join(r.summary_lines())
    assert "\x1b" not in text and "\\x1b" in text
    doc = read_toml(r.write(tmp_path / "val", "r"))
    assert doc["format"]["bad_records"] == 1


def test_v4_last_line_without_newline_is_read(tmp_path: Path, expected: Expected) -> None:
    out = tmp_path / "o.jsonl"
    out.write_text(perfect(tmp_path).read_text().rstrip("\n"))
    assert validate_output(out, expected, PROTO).corpus_accepted


def test_v6_expected_ids_without_label_are_not_scored_and_said(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("1", "a"), ("2", None), ("3", "b")]))
    assert any("1 expected ID(s) of c.csv have no label" in n for n in exp.notes)
    r = validate_output(write_jsonl(tmp_path / "o.jsonl", [("1", "a"), ("2", "a"), ("3", "b")]), exp, PROTO)
    assert r.scored_records == 2 and r.quality_value == 1.0
    assert any(line.startswith("note: 1 expected ID(s) of c.csv") for line in r.summary_lines())


def test_v6_references_outside_declared_classes_fail_quality(tmp_path: Path) -> None:
    exp = load_expected(write_corpus(tmp_path / "c.csv", [("1", "a"), ("2", "b"), ("3", "z")]))
    out = write_jsonl(tmp_path / "o.jsonl", [("1", "a"), ("2", "b"), ("3", "b")])
    r = validate_output(out, exp, Protocol(classes=("a", "b"), threshold=0.0))
    assert r.format_valid and r.ids_match and not r.quality_met and not r.corpus_accepted
    assert "reference label(s) are not declared classes ('z')" in r.quality_reason
