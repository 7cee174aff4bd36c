"""Bad inputs to corpus validation (V4): each a clear report, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from gpusession.core.files.errors import BadInput
from gpusession.core.validation import Expected, Protocol, load_expected, validate_output

PROTO = Protocol(classes=("a", "b"), threshold=0.5)
CSV_PROTO = Protocol(classes=("a", "b"), threshold=0.5, output_format="csv")


@pytest.fixture
def expected(tmp_path: Path) -> Expected:
    path = tmp_path / "corpus.csv"
    path.write_text("id,label\n001,a\n002,b\n003,a\n")
    return load_expected(path)


def jsonl(*records: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


GOOD = jsonl({"id": "001", "label": "a"}, {"id": "002", "label": "b"}, {"id": "003", "label": "a"})


def run(tmp_path: Path, content: str | bytes, expected: Expected, proto: Protocol = PROTO, name: str = "o.jsonl"):  # type: ignore[no-untyped-def]
    out = tmp_path / name
    if isinstance(content, str):
        out.write_text(content, encoding="utf-8", newline="")
    else:
        out.write_bytes(content)
    return validate_output(out, expected, proto)


def test_v4_good_file_is_accepted(tmp_path: Path, expected: Expected) -> None:
    assert run(tmp_path, GOOD, expected).corpus_accepted


def test_v4_empty_output_file(tmp_path: Path, expected: Expected) -> None:
    r = run(tmp_path, "", expected)
    assert not r.format_valid and not r.ids_match and not r.corpus_accepted
    assert r.file_problems == ["the file is empty: no records"]
    # H-21: every expected ID is scored; a missing prediction counts as wrong.
    assert r.missing_count == 3 and r.quality_value == 0.0 and r.predictions_missing == 3
    text = "\n".join(r.summary_lines())
    assert "the file is empty" in text and "3 missing" in text


def test_v4_empty_csv_output_and_only_a_header(tmp_path: Path, expected: Expected) -> None:
    r = run(tmp_path, "", expected, CSV_PROTO, "o.csv")
    assert not r.format_valid and "empty" in r.file_problems[0]
    r = run(tmp_path, "id,label\n", expected, CSV_PROTO, "o.csv")
    assert not r.format_valid and r.file_problems == ["the file holds only a header: no records"]
    assert r.missing_count == 3


def test_v4_jsonl_with_a_csv_header_line(tmp_path: Path, expected: Expected) -> None:
    r = run(tmp_path, "id,label\n" + GOOD, expected)
    assert not r.format_valid and r.ids_match  # the header is a bad record, the IDs are all there
    assert r.bad_records[0].line == 1 and r.bad_records[0].problem.startswith("not JSON")


def test_v4_line_that_is_not_json_reported_with_its_line(tmp_path: Path, expected: Expected) -> None:
    lines = GOOD.splitlines()
    content = "\n".join([lines[0], "this is { not json", lines[1], lines[2]]) + "\n"
    r = run(tmp_path, content, expected)
    assert not r.format_valid and r.ids_match and r.bad_record_count == 1
    assert r.bad_records[0].line == 2 and r.bad_records[0].text == "this is { not json"
    assert r.problem_counts == {"not JSON": 1}


def test_v4_one_bad_line_among_many_keeps_every_good_record(tmp_path: Path) -> None:
    n = 5000
    corpus = tmp_path / "ids.csv"
    pl.DataFrame({"id": [f"{i:05d}" for i in range(n)], "label": ["a"] * n}).write_csv(corpus)
    exp = load_expected(corpus)
    lines = [json.dumps({"id": f"{i:05d}", "label": "a"}) for i in range(n)]
    lines[3210] = lines[3210][:-1]  # truncated: not JSON
    lines[77] = json.dumps({"meta": {"id": "x"}, "id": "00077", "label": "a"})  # nested id key
    r = run(tmp_path, "\n".join(lines) + "\n", exp)
    assert r.bad_record_count == 1 and r.bad_records[0].line == 3211
    assert r.missing_ids["id"].to_list() == ["03210"]
    assert r.records == n and r.observed_ids == n - 1


def test_v4_label_with_trailing_space_is_not_a_declared_class(tmp_path: Path, expected: Expected) -> None:
    content = jsonl({"id": "001", "label": "a "}, {"id": "002", "label": "b"}, {"id": "003", "label": "a"})
    r = run(tmp_path, content, expected)
    assert not r.format_valid and r.ids_match
    assert r.bad_records[0].problem == 'label "a " is not a declared class'
    # H-21: the bad record's ID is still scored, as a wrong prediction.
    assert r.scored_records == 3 and r.predictions_undeclared == 1


def test_v4_id_given_as_a_number_is_a_format_error(tmp_path: Path, expected: Expected) -> None:
    content = jsonl({"id": 1, "label": "a"}, {"id": "002", "label": "b"}, {"id": True, "label": "a"})
    r = run(tmp_path, content, expected)
    assert not r.format_valid and not r.ids_match
    problems = {b.line: b.problem for b in r.bad_records}
    assert problems[1] == "ID is a JSON number (1), expected a string"
    assert problems[3] == "ID is a JSON boolean (true), expected a string"
    assert r.missing_ids["id"].to_list() == ["001", "003"]


def test_v4_other_record_problems(tmp_path: Path, expected: Expected) -> None:
    content = (
        '{"id": "001", "label": "a", "id": "002"}\n'
        "[1, 2]\n"
        '{"id": "003", "label": NaN}\n'
        '{"id": "", "label": "a"}\n'
        "\n"
        '{"id": "002", "label": 3}\n'
    )
    r = run(tmp_path, content, expected)
    problems = {b.line: b.problem for b in r.bad_records}
    assert problems[1] == "key 'id' appears twice in one record"
    assert problems[2] == "not a JSON object (a JSON array)"
    assert problems[3].startswith("not JSON")
    assert problems[4] == "empty ID"
    assert problems[5] == "empty line"
    assert problems[6] == "label is a JSON number (3), expected a string"
    assert r.observed_ids == 1  # only line 6 carries a usable ID


def test_v4_ten_megabytes_on_one_line(tmp_path: Path, expected: Expected) -> None:
    big = "x" * 10_000_000
    r = run(tmp_path, GOOD + json.dumps({"id": "004", "label": big}) + "\n", expected)
    assert not r.format_valid and r.extra_ids["id"].to_list() == ["004"]
    bad = r.bad_records[0]
    assert bad.line == 4 and len(bad.problem) < 100 and len(bad.text) < 200
    assert "10,000,026 characters" in bad.text
    r = run(tmp_path, GOOD + big + "\n", expected)  # 10 MB that is not JSON at all
    assert r.bad_records[0].line == 4 and r.bad_records[0].problem.startswith("not JSON")
    assert sum(len(line) for line in r.summary_lines()) < 5000


def test_v4_latin1_file_reported_not_crashed(tmp_path: Path, expected: Expected) -> None:
    content = GOOD.replace('"003", "label": "a"', '"003", "label": "a", "note": "café"').encode("latin-1")
    r = run(tmp_path, content, expected)
    assert not r.format_valid
    assert r.bad_records[0].line == 3 and r.bad_records[0].problem.startswith("not valid UTF-8 (byte 0xE9")
    assert r.ids_match  # the ID of the line is still readable
    assert r.problem_counts == {"not valid UTF-8": 1}


def test_v4_latin1_csv_output(tmp_path: Path, expected: Expected) -> None:
    content = "id,label\n001,a\n002,b\n003,é\n".encode("latin-1")
    r = run(tmp_path, content, expected, CSV_PROTO, "o.csv")
    assert not r.format_valid and r.bad_records[0].line == 4
    assert r.bad_records[0].problem.startswith("not valid UTF-8")


def test_v4_crlf_file_with_bom_is_read_and_noted(tmp_path: Path, expected: Expected) -> None:
    content = b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode()
    r = run(tmp_path, content, expected)
    assert r.ids_match and r.format_valid and r.corpus_accepted
    notes = " ".join(r.encoding_notes)
    assert "byte-order mark" in notes and "CRLF" in notes
    assert any("byte-order mark" in line for line in r.summary_lines())
    csv_content = b"\xef\xbb\xbfid,label\r\n001,a\r\n002,b\r\n003,a\r\n"
    r = run(tmp_path, csv_content, expected, CSV_PROTO, "o.csv")
    assert r.corpus_accepted and r.encoding_notes


def test_v4_csv_output_problems(tmp_path: Path, expected: Expected) -> None:
    r = run(tmp_path, "id,prediction\n001,a\n", expected, CSV_PROTO, "o.csv")
    assert not r.format_valid and "no 'label' column" in r.file_problems[0]
    r = run(tmp_path, "id,label\n001,a,extra\n002,b\n", expected, CSV_PROTO, "o.csv")
    assert not r.format_valid and r.file_problems[0].startswith("not readable as CSV")
    r = run(tmp_path, "id,label\n001,a\n002,\n 003,a\n", expected, CSV_PROTO, "o.csv")
    problems = {b.line: b.problem for b in r.bad_records}
    assert problems == {3: "empty label"}
    assert r.extra_ids["id"].to_list() == [" 003"]  # spaces matter


def test_v4_missing_output_file_is_bad_input(tmp_path: Path, expected: Expected) -> None:
    with pytest.raises(BadInput, match="file not found"):
        validate_output(tmp_path / "nope.jsonl", expected, PROTO)


# -- expected-ID files ----------------------------------------------------------------


def test_corpus_with_bom_and_crlf_reads_clean_ids(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_bytes(b"\xef\xbb\xbfid,label\r\n007,a\r\n 8,b\r\n")
    exp = load_expected(path)
    assert exp.ids.to_list() == ["007", " 8"] and exp.frame["label"].to_list() == ["a", "b"]
    lst = tmp_path / "ids.txt"
    lst.write_bytes(b"\xef\xbb\xbf007\r\n008\r\n")
    assert load_expected(lst).ids.to_list() == ["007", "008"]


def test_corpus_formats_jsonl_parquet_and_list(tmp_path: Path) -> None:
    j = tmp_path / "c.jsonl"
    j.write_text(jsonl({"id": "1", "label": "a", "text": "hello"}, {"id": "2", "label": "b", "text": "x"}))
    assert load_expected(j).frame.select("id", "label").rows() == [("1", "a"), ("2", "b")]
    pq = tmp_path / "c.parquet"
    pl.DataFrame({"id": ["01", "02"], "label": ["a", "b"]}).write_parquet(pq)
    assert load_expected(pq).ids.to_list() == ["01", "02"]
    lst = tmp_path / "ids.lst"
    lst.write_text("id\n01\n02\n")
    exp = load_expected(lst)
    assert exp.ids.to_list() == ["01", "02"] and not exp.has_labels


def test_corpus_bad_inputs_raise_bad_input_with_line(tmp_path: Path) -> None:
    latin = tmp_path / "c.csv"
    latin.write_bytes("id,label\n1,a\n2,é\n".encode("latin-1"))
    with pytest.raises(BadInput) as info:
        load_expected(latin)
    assert info.value.line == 3 and "UTF-8" in info.value.message
    noid = tmp_path / "n.csv"
    noid.write_text("key,label\n1,a\n")
    with pytest.raises(BadInput, match="no 'id' column"):
        load_expected(noid)
    numeric = tmp_path / "n.jsonl"
    numeric.write_text('{"id": "1"}\n{"id": 2}\n')
    with pytest.raises(BadInput) as info:
        load_expected(numeric)
    assert info.value.line == 2 and "ID is a JSON number" in info.value.message
    pq = tmp_path / "i.parquet"
    pl.DataFrame({"id": [7, 8]}).write_parquet(pq)
    with pytest.raises(BadInput, match="expected strings"):
        load_expected(pq)
    blank = tmp_path / "b.txt"
    blank.write_text("1\n\n2\n")
    with pytest.raises(BadInput) as info:
        load_expected(blank)
    assert info.value.line == 2
    empty = tmp_path / "e.txt"
    empty.write_text("")
    with pytest.raises(BadInput, match="no expected IDs"):
        load_expected(empty)


def test_corpus_jsonl_labels_absent_null_or_not_strings(tmp_path: Path) -> None:
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"id": "1", "label": "a"}\n{"id": "2", "label": null}\n{"id": "3"}\n')
    assert load_expected(ok).frame["label"].to_list() == ["a", None, None]
    numeric = tmp_path / "num.jsonl"
    numeric.write_text('{"id": "1", "label": 3}\n')
    with pytest.raises(BadInput) as info:
        load_expected(numeric)
    assert info.value.line == 1 and "label is a JSON number" in info.value.message


@pytest.mark.parametrize(
    "content",
    [
        '{"id":"001","label":"a"}\n{"id":"002","label":"b"}\n{"id":"003","label":"a"}\n',  # compact
        '{"id":"001","label":"a"}\n{"id": "002", "label": "b"}\n{"id"  :  "003","label":"a"}\n',  # mixed spacing
        '{"label":"a","id":"001","note":"id"}\n{"id":"002","label":"b"}\n{"id":"003","label":"a"}\n',  # "id" as a value
    ],
)
def test_v4_spellings_of_a_good_file_are_all_accepted(tmp_path: Path, expected: Expected, content: str) -> None:
    assert run(tmp_path, content, expected).corpus_accepted


def test_v4_number_id_hidden_among_compact_lines(tmp_path: Path, expected: Expected) -> None:
    content = '{"id":"001","label":"a"}\n{"id":2,"label":"b"}\n{"id":"003","label":"a"}\n'
    r = run(tmp_path, content, expected)
    assert not r.format_valid and r.bad_records[0].line == 2 and r.bad_records[0].problem.startswith("ID is a JSON number")
    nested = '{"id":"001","label":"a","meta":{"id":7}}\n{"id":"002","label":"b"}\n{"id":"003","label":"a"}\n'
    assert run(tmp_path, nested, expected).corpus_accepted  # a nested "id" is not the record's ID


# -- V4: what polars reads otherwise than json: keys written with escapes, lone surrogates --
def _validate_bytes(tmp_path: Path, corpus_ids: list[str], body: bytes, classes: tuple[str, ...] = ("a", "b")):  # type: ignore[no-untyped-def]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "label": classes[k % 2]}) + "\n" for k, i in enumerate(corpus_ids)),
                      encoding="utf-8")
    out = tmp_path / "o.jsonl"
    out.write_bytes(body)
    return validate_output(out, load_expected(corpus), Protocol(classes=classes, threshold=0.5))


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_v4_a_number_id_under_an_escaped_key_is_a_format_problem_never_a_string(tmp_path: Path, ending: bytes) -> None:
    """``"\\u0069d"`` is ``"id"``: the byte counts cannot see it; a nested ``"id"`` elsewhere
    kept them even. The record's ID is the JSON number 7, never the string "7"."""
    body = ending.join([b'{"\\u0069d": 7, "label": "a"}', b'{"id": "8", "label": "b", "m": {"id": "z"}}']) + ending
    r = _validate_bytes(tmp_path, ["7", "8"], body)
    assert r.bad_records_all.rows() == [(1, "ID is a JSON number (7), expected a string")]
    assert r.missing_ids.rows() == [("7", 1)] and not r.format_valid and not r.corpus_accepted


def test_v4_a_key_written_twice_once_with_an_escape_is_refused(tmp_path: Path) -> None:
    body = b'{"id": "r0", "\\u0069d": "r1", "label": "a"}\n{"id": "r1", "label": "b"}\n'
    r = _validate_bytes(tmp_path, ["r0", "r1"], body)
    assert r.bad_records_all.rows() == [(1, "key 'id' appears twice in one record")]
    assert not r.format_valid and not r.corpus_accepted


def test_v4_an_id_holding_a_lone_surrogate_is_no_text_and_matches_nothing(tmp_path: Path) -> None:
    """polars reads ``"\\ud800"`` as NUL; json as a lone surrogate: neither is an ID."""
    body = b'{"id": "\\ud800", "label": "a"}\n{"id": "\\udbff", "label": "b"}\n'
    r = _validate_bytes(tmp_path, ["\x00", "y"], body)
    assert [line for line, _ in r.bad_records_all.rows()] == [1, 2]
    assert all("lone surrogate" in problem for _, problem in r.bad_records_all.rows())
    assert r.duplicates.height == 0 and r.missing_count == 2 and not r.ids_match and not r.corpus_accepted


def test_v4_escaped_text_and_surrogate_pairs_in_values_are_read_as_json_reads_them(tmp_path: Path) -> None:
    """What json.dumps writes by default (ensure_ascii): escapes in values, an emoji as a pair."""
    ids = ["café", "x\U0001f600", 'q"uote']
    body = "".join(json.dumps({"id": i, "label": "ab"[k % 2]}) + "\n" for k, i in enumerate(ids)).encode("ascii")
    assert b"\\ud83d\\ude00" in body and b"\\u00e9" in body
    r = _validate_bytes(tmp_path, ids, body)
    assert r.corpus_accepted and r.bad_record_count == 0 and r.observed_unique == 3
