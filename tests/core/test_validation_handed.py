"""Handed cases for corpus validation: H-16, H-20, H-21 (V1, V4, V6)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from sklearn.metrics import f1_score

from gpusession.core.files.errors import BadInput
from gpusession.core.validation import Protocol, load_expected, validate_output

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
SENTINEL = "\x00no valid prediction"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def jsonl(*rows: tuple[object, object]) -> str:
    return "".join(json.dumps({"id": i, "label": lab}) + "\n" for i, lab in rows)


# -- H-21: quality is never better than the truth ------------------------------------

H21_PROTO = Protocol(classes=("c0", "c1"), threshold=0.9)


@pytest.fixture
def h21_expected(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_expected(write(tmp_path / "corpus.csv", "id,label\na,c0\nb,c1\nc,c1\n"))


def test_h21_undeclared_prediction_counts_as_wrong(tmp_path: Path, h21_expected) -> None:  # type: ignore[no-untyped-def]
    out = write(tmp_path / "o.jsonl", jsonl(("a", "c0"), ("b", "zz"), ("c", "c1")))
    r = validate_output(out, h21_expected, H21_PROTO)
    want = f1_score(["c0", "c1", "c1"], ["c0", SENTINEL, "c1"], labels=["c0", "c1"], average="macro", zero_division=0)
    assert r.macro_f1 == pytest.approx(want, abs=1e-12) and round(r.macro_f1, 4) == 0.8333
    assert r.accuracy == pytest.approx(2 / 3)
    assert not r.quality_met and not r.corpus_accepted and r.scored_records == 3
    assert r.predictions_undeclared == 1 and r.predictions_missing == 0 and r.predictions_malformed == 0
    assert "macro-F1 = 0.8333 < 0.9000" in r.quality_reason
    assert "over every expected ID (3)" in r.quality_reason
    assert "1 outside the declared classes" in r.quality_reason
    text = "\n".join(r.summary_lines())
    assert "quality  FAIL" in text and "count as wrong predictions" in text
    doc = r.to_dict()["quality"]["counted_wrong"]
    assert doc == {"missing": 0, "malformed": 0, "outside_declared_classes": 1}


def test_h21_quality_over_a_subset_of_expected_ids_is_never_met(tmp_path: Path) -> None:
    """Expected IDs without a reference cannot be scored: the figure (perfect on the two
    referenced IDs) is reported, but the rule is not met, so the corpus is not accepted."""
    corpus = write(tmp_path / "ids.txt", "a\nb\nc\n")
    refs = write(tmp_path / "refs.csv", "id,label\na,c0\nb,c1\n")
    expected = load_expected(corpus, references=refs)
    out = write(tmp_path / "o.jsonl", jsonl(("a", "c0"), ("b", "c1"), ("c", "c0")))
    r = validate_output(out, expected, H21_PROTO)
    assert r.macro_f1 == pytest.approx(1.0)
    assert not r.quality_met and not r.corpus_accepted
    assert r.quality_reason.startswith("not met: 1 of 3 expected IDs have no reference")
    assert "covers a subset only" in r.quality_reason


@pytest.mark.parametrize(
    ("rows", "kind"),
    [
        ((("a", "c0"), ("c", "c1")), "1 missing"),
        ((("a", "c0"), ("b", 7), ("c", "c1")), "1 malformed"),
        ((("a", "c0"), ("b", "zz"), ("c", "c1")), "1 outside the declared classes"),
    ],
)
def test_h21_missing_malformed_or_undeclared_never_gives_met_on_a_subset(
    tmp_path: Path, h21_expected, rows: tuple[tuple[object, object], ...], kind: str  # type: ignore[no-untyped-def]
) -> None:
    # The two valid predictions alone score 1.0; over every expected ID it is 0.8333.
    r = validate_output(write(tmp_path / "o.jsonl", jsonl(*rows)), h21_expected, Protocol(classes=("c0", "c1"), threshold=0.85))
    assert round(r.quality_value or 0.0, 4) == 0.8333 and not r.quality_met
    assert kind in r.quality_reason
    per = {c.label: (c.support, c.predicted, c.true_positives) for c in r.per_class}
    assert per == {"c0": (1, 1, 1), "c1": (2, 1, 1)}


def test_h21_duplicate_scored_by_its_first_record(tmp_path: Path, h21_expected) -> None:  # type: ignore[no-untyped-def]
    out = write(tmp_path / "o.jsonl", jsonl(("a", "c0"), ("b", "zz"), ("b", "c1"), ("c", "c1")))
    r = validate_output(out, h21_expected, H21_PROTO)
    assert round(r.macro_f1 or 0.0, 4) == 0.8333 and r.predictions_undeclared == 1
    assert not r.ids_match and r.duplicate_output_count == 1


# -- H-20: trailing empty lines ------------------------------------------------------

PROTO = Protocol(classes=("a", "b"), threshold=0.5)
GOOD = jsonl(("1", "a"), ("2", "b"), ("3", "a"))


def test_h20_output_jsonl_trailing_empty_line_is_ignored_with_a_note(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.csv", "id,label\n1,a\n2,b\n3,a\n"))
    r = validate_output(write(tmp_path / "o.jsonl", GOOD + "\n"), exp, PROTO)
    assert r.corpus_accepted and r.format_valid and r.records == 3
    assert "1 empty line(s) at the end of the file were ignored" in r.encoding_notes
    r2 = validate_output(write(tmp_path / "o2.jsonl", GOOD.replace("\n", "\r\n") + "\r\n\r\n"), exp, PROTO)
    assert r2.corpus_accepted and "2 empty line(s) at the end of the file were ignored" in r2.encoding_notes


def test_h20_output_empty_line_in_the_middle_stays_a_problem(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.csv", "id,label\n1,a\n2,b\n3,a\n"))
    lines = GOOD.splitlines(keepends=True)
    r = validate_output(write(tmp_path / "o.jsonl", lines[0] + "\n" + "".join(lines[1:]) + "\n"), exp, PROTO)
    assert not r.format_valid and [(b.line, b.problem) for b in r.bad_records] == [(2, "empty line")]
    csv_proto = Protocol(classes=("a", "b"), threshold=0.5, output_format="csv")
    r = validate_output(write(tmp_path / "o.csv", "id,label\n1,a\n\n2,b\n3,a\n"), exp, csv_proto)
    assert not r.format_valid and [(b.line, b.problem) for b in r.bad_records] == [(3, "empty row")]


def test_h20_output_csv_trailing_empty_lines_are_ignored(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.csv", "id,label\n1,a\n2,b\n3,a\n"))
    csv_proto = Protocol(classes=("a", "b"), threshold=0.5, output_format="csv")
    r = validate_output(write(tmp_path / "o.csv", "id,label\n1,a\n2,b\n3,a\n\n"), exp, csv_proto)
    assert r.corpus_accepted and r.records == 3
    assert "1 empty line(s) at the end of the file were ignored" in r.encoding_notes


def test_h20_corpus_csv_trailing_empty_line_is_ignored_middle_is_refused(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.csv", "id,label\n1,a\n2,b\n3,a\n\n"))
    assert exp.n_ids == 3 and "c.csv: 1 empty line(s) at the end of the file were ignored" in exp.notes
    r = validate_output(write(tmp_path / "o.jsonl", GOOD), exp, PROTO)
    assert r.corpus_accepted and any("empty line(s) at the end" in n for n in r.notes)
    with pytest.raises(BadInput) as err:
        load_expected(write(tmp_path / "m.csv", "id,label\n1,a\n\n2,b\n"))
    assert err.value.line == 3


def test_h20_corpus_jsonl_trailing_empty_line_is_ignored(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.jsonl", GOOD + "\n\n"))
    assert exp.n_ids == 3 and "c.jsonl: 2 empty line(s) at the end of the file were ignored" in exp.notes


def test_h20_id_list_trailing_empty_line_is_ignored_middle_is_refused(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "ids.txt", "1\n2\n3\n\n"))
    assert exp.ids.to_list() == ["1", "2", "3"]
    assert "ids.txt: 1 empty line(s) at the end of the file were ignored" in exp.notes
    train = write(tmp_path / "train.txt", "t1\nt2\n\n\n")
    r = validate_output(write(tmp_path / "o.jsonl", GOOD), load_expected(write(tmp_path / "c.csv", "id,label\n1,a\n2,b\n3,a\n")), PROTO, train_ids=train)
    assert r.corpus_accepted and r.no_overlap
    with pytest.raises(BadInput) as err:
        load_expected(write(tmp_path / "m.txt", "1\n\n2\n"))
    assert err.value.line == 2


# -- H-16: the same text in two Unicode normal forms ---------------------------------


def test_h16_label_in_another_normal_form_is_rejected_and_explained(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.csv", f"id,label\n1,{NFC}\n2,b\n"))
    out = write(tmp_path / "o.jsonl", jsonl(("1", NFD), ("2", "b")))
    r = validate_output(out, exp, Protocol(classes=(NFC, "b"), threshold=0.0))
    assert not r.format_valid and not r.corpus_accepted  # the comparison stays exact
    problem = r.bad_records[0].problem
    assert "differs from the declared class" in problem and "only in Unicode normalization" in problem
    assert "NFD here, NFC declared" in problem
    assert "U+0065 U+0301" in problem and "U+00E9" in problem
    assert r.problem_counts == {"label not a declared class": 1}
    assert any("U+0065 U+0301" in line for line in r.summary_lines())
    assert r.predictions_undeclared == 1


def test_h16_id_in_another_normal_form_is_missing_and_extra_and_explained(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.csv", f"id,label\n{NFC},a\nx,b\n"))
    out = write(tmp_path / "o.jsonl", jsonl((NFD, "a"), ("x", "b")))
    r = validate_output(out, exp, PROTO)
    assert not r.ids_match and r.missing_count == 1 and r.extra_count == 1
    assert len(r.ids_notes) == 1
    note = r.ids_notes[0]
    assert "differs from the expected ID" in note and "only in Unicode normalization" in note
    assert "(line 1)" in note and "expected at line 2" in note
    assert "U+0063 U+0061 U+0066 U+0065 U+0301 here" in note and "U+0063 U+0061 U+0066 U+00E9 expected" in note
    assert any(note in line for line in r.summary_lines())
    assert r.to_dict()["ids"]["notes"] == [note]


def test_h16_unrelated_mismatches_get_no_normalization_note(tmp_path: Path) -> None:
    exp = load_expected(write(tmp_path / "c.csv", "id,label\n1,a\n2,b\n"))
    r = validate_output(write(tmp_path / "o.jsonl", jsonl(("1", "c"), ("9", "b"))), exp, PROTO)
    assert r.ids_notes == [] and "normalization" not in r.bad_records[0].problem


def test_h28_a_record_after_a_text_quoted_over_three_lines_is_named_by_its_physical_line(tmp_path: Path) -> None:
    """The empty ID is on line 5 of the file (the record's number is 2): the error says 5."""
    from gpusession.core.files.errors import BadInput
    from gpusession.core.validation.expected import read_id_table
    from gpusession.core.validation.read import parse_csv

    corpus = tmp_path / "corpus.csv"
    corpus.write_text('id,text,label\nt1,"first line\nsecond line\nthird line",a\n,"empty id",b\nt3,x,a\n',
                      encoding="utf-8")
    with pytest.raises(BadInput, match=r"corpus\.csv:5: empty ID"):
        read_id_table(corpus)
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text('id\ttext\nt1\t"a\nb"\n\tc\n', encoding="utf-8")
    with pytest.raises(BadInput, match=r"corpus\.tsv:4: empty ID"):
        read_id_table(tsv)
    out = parse_csv(b'id,label\n"a\nb",x\n,\nc,y\n\r\n'.replace(b"\r\n", b"\n"))
    assert out.records["line"].to_list() == [2, 4, 5]
    assert out.records.filter(out.records["problem"].is_not_null())["line"].to_list() == [4]
    crlf = parse_csv(b'id,label\r\n"a\r\nb",x\r\n,\r\nc,y\r\n')
    assert crlf.records["line"].to_list() == [2, 4, 5]
    plain = parse_csv(b'id,label\n"a",x\n,\nc,y\n')  # quotes, no cell over lines
    assert plain.records["line"].to_list() == [2, 3, 4]
