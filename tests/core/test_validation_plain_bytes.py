"""A plain JSONL output read from its bytes reads as its decoded text would (V4).

A file whose bytes are exactly its text (valid UTF-8, no BOM, no CR, no empty line at
the end) is parsed without a decoded copy and its bad lines are cut from the bytes;
everything else takes the text route. Both routes must give the same records, notes,
problems and quoted lines, whatever the file holds.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusession.core.validation import read, read_jsonl
from gpusession.core.validation.read import RawLines, split_lines
from gpusession.core.validation.read_jsonl import parse_jsonl

PIECES = [
    b'{"id": "a1", "label": "x"}', b'{"id":"b\xc3\xa9", "label":"y"}', b'{"id": 7, "label": "x"}',
    b'{"label": "x"}', b"not json", b"", b" ", b'{"id": "c", "id": "d", "label": "x"}',
    b'{"id" : "e", "label" : "z", "n": 1}', b"\xe9t\xe9", b"\r", b"\xef\xbb\xbf", b'{"id": "\xf0\x9f\x98\x80"}',
]


def _text_route(data: bytes, monkeypatch: pytest.MonkeyPatch) -> read.ParsedRecords:
    with monkeypatch.context() as mp:
        mp.setattr(read_jsonl, "is_plain_text", lambda _data: False)
        return parse_jsonl(data)


GOOD = [b'{"id": "a1", "label": "x"}', b'{"id":"b\xc3\xa9", "label":"y"}', b'{"id": "c", "label": "y", "n": [1]}']
#: Mostly clean files (the bytes route), some with one odd line, a BOM, CRLF or end lines.
line_st = st.one_of(st.sampled_from(GOOD), st.sampled_from(GOOD), st.sampled_from(GOOD),
                    st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map(b"".join))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line_st, min_size=1, max_size=8), start=st.sampled_from([b"", b"\xef\xbb\xbf"]),
       end=st.sampled_from(["\n", "\r\n"]), final_newlines=st.integers(min_value=0, max_value=2),
       block=st.sampled_from([1, 3, 16, 1 << 20]))
def test_v4_a_plain_output_read_from_its_bytes_reads_as_its_text(
        lines: list[bytes], start: bytes, end: str, final_newlines: int, block: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    sep = end.encode()
    data = start + sep.join(lines) + sep * final_newlines
    monkeypatch.setattr(read, "_BLOCK_BYTES", block)  # lines found across many blocks
    got, want = parse_jsonl(data), _text_route(data, monkeypatch)
    assert got.records.equals(want.records)
    assert (got.notes, got.file_problems, got.non_utf8_lines) == (want.notes, want.file_problems, want.non_utf8_lines)
    assert [got.line_text(n) for n in range(0, len(lines) + 3)] == [want.line_text(n) for n in range(0, len(lines) + 3)]


def test_v4_a_clean_output_keeps_no_decoded_copy_and_quotes_lines_from_its_bytes() -> None:
    data = b'{"id": "a", "label": "x"}\n{"id": "b\xc3\xa9", "label": "undeclared"}\n'
    parsed = parse_jsonl(data)
    assert parsed.text == "" and parsed.lines is None and parsed.raw is not None and parsed.raw.raw is data
    assert parsed.line_text(2) == '{"id": "bé", "label": "undeclared"}'


@given(text=st.text(alphabet="ab\né", max_size=40).filter(lambda t: not t.endswith("\n\n")),
       block=st.integers(min_value=1, max_value=9))
def test_v4_raw_lines_are_the_lines_of_the_text(text: str, block: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(read, "_BLOCK_BYTES", block)
        lines, raw = split_lines(text), RawLines(text.encode("utf-8"))
        assert [raw.line(n) for n in range(1, len(lines) + 1)] == lines
        assert raw.line(0) == raw.line(len(lines) + 1) == ""


CSV_LINES = [b"a1,x", b"b\xc3\xa9,y", b'"c\nd",y', b'"e,1",z', b",", b"", b"f", b"\xe9,x", b'"g",\xe2\x80\x83', b"h,x,extra"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(CSV_LINES), max_size=8), start=st.sampled_from([b"", b"\xef\xbb\xbf"]),
       header=st.sampled_from([b"id,label", b"id,lab", b"", b" "]), final_newlines=st.integers(min_value=0, max_value=2))
def test_v4_a_plain_csv_output_read_from_its_bytes_reads_as_its_text(
        lines: list[bytes], start: bytes, header: bytes, final_newlines: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    data = start + b"\n".join([header, *lines]) + b"\n" * final_newlines
    got = read.parse_csv(data)
    with monkeypatch.context() as mp:
        mp.setattr(read, "is_plain_text", lambda _data: False)
        want = read.parse_csv(data)
    assert got.records.equals(want.records)
    assert (got.notes, got.file_problems, got.non_utf8_lines) == (want.notes, want.file_problems, want.non_utf8_lines)
    assert [got.line_text(n) for n in range(0, len(lines) + 4)] == [want.line_text(n) for n in range(0, len(lines) + 4)]
