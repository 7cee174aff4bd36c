"""core.textio: the one strict UTF-8 read (V4, C1, S7): file, line and byte of a bad byte;
a BOM ignored; CRLF line ends turned into LF when asked."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusession.core.copyhome.manifest import read_manifest
from gpusession.core.files import textio
from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import decode_lenient, decode_strict, read_bytes, read_text
from gpusession.core.files.tomlio import read_toml
from gpusession.core.records.results import ResultsFile


def test_bad_utf8_names_file_line_and_byte(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes(b"one\ntwo\nabc\xe9d\n")
    with pytest.raises(BadInput) as info:
        read_text(p)
    e = info.value
    assert e.path == p and e.line == 3
    assert "byte 0xE9 at byte 4 of the line" in e.message
    assert str(e).startswith(f"{p}:3: not valid UTF-8")


def test_must_clause_is_added(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="TOML files must be UTF-8"):
        decode_strict(b"\xff", path=tmp_path / "a.toml", must="TOML files must be UTF-8")


def test_bom_is_ignored_and_noted(tmp_path: Path) -> None:
    p = tmp_path / "bom.txt"
    p.write_bytes(b"\xef\xbb\xbfid\n1\n")
    t = read_text(p)
    assert t.text == "id\n1\n" and t.bom and t.crlf == 0
    assert any("byte-order mark" in n for n in t.notes())


def test_bom_then_bad_byte_counts_columns_after_the_bom() -> None:
    with pytest.raises(BadInput) as info:
        decode_strict(b"\xef\xbb\xbfab\x80", path=None)
    assert info.value.line == 1 and "at byte 3 of the line" in info.value.message


def test_crlf_turned_into_lf_only_when_asked() -> None:
    raw = b"a\r\nb\r\nc"
    kept = decode_strict(raw, path=None)
    assert kept.text == "a\r\nb\r\nc" and kept.crlf == 0
    t = decode_strict(raw, path=None, crlf=True)
    assert t.text == "a\nb\nc" and t.crlf == 2
    assert any("2 line(s) end with CRLF" in n for n in t.notes())


def test_lenient_reports_every_bad_line_and_never_raises() -> None:
    t = decode_lenient(b"ok\n\xe9x\r\nfine\nz\xff\n")
    assert sorted(t.bad_lines) == [2, 4]
    assert t.bad_lines[2].words().startswith("not valid UTF-8 (byte 0xE9 at byte 1 of the line")
    assert t.bad_lines[4].column == 2 and t.bad_lines[4].byte == 0xFF
    assert t.text.split("\n")[1] == "\ufffdx" and t.crlf == 1


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="manifest not found"):
        read_bytes(tmp_path / "nope.csv", what="manifest")
    with pytest.raises(BadInput, match="is a folder, expected a file"):
        read_bytes(tmp_path)


@pytest.mark.parametrize("kind", ["toml", "manifest", "results"])
def test_every_reader_gives_file_and_line(tmp_path: Path, kind: str) -> None:
    """TOML, manifest and results CSV all answer a Latin-1 byte with file and line."""
    if kind == "toml":
        p = tmp_path / "s.toml"
        p.write_bytes(b"schema = 1\nname = \"caf\xe9\"\n")
        call = lambda: read_toml(p)  # noqa: E731
    elif kind == "manifest":
        p = tmp_path / "m.csv"
        p.write_bytes(b"path,size_bytes,sha256\nf\xe9.txt,1," + b"0" * 64 + b"\n")
        call = lambda: read_manifest(p)  # noqa: E731
    else:
        from gpusession.core.records.results import COLUMNS

        p = tmp_path / "resultats-bruts.csv"
        p.write_bytes(",".join(COLUMNS).encode() + b"\n" + b"\xe9" + b"," * (len(COLUMNS) - 1) + b"\n")
        call = lambda: ResultsFile(p).read()  # noqa: E731
    with pytest.raises(BadInput) as info:
        call()
    assert info.value.path == p and info.value.line == 2
    assert "not valid UTF-8 (byte 0xE9" in info.value.message


def test_v4_read_bytes_refuses_a_fifo_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # no writer: opening it for reading would wait forever
    with pytest.raises(BadInput, match="is a FIFO .*not a regular file") as info:
        read_bytes(fifo)
    assert info.value.path == fifo


def test_v4_read_bytes_refuses_a_device() -> None:
    with pytest.raises(BadInput, match="is a character device, not a regular file"):
        read_bytes(Path("/dev/zero"), max_line_bytes=10)


def test_v4_line_limit_names_the_line_and_counts_across_chunks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textio, "_CHUNK_BYTES", 3)  # lines span several reads
    p = tmp_path / "x.jsonl"
    p.write_bytes(b"12345\n1234\n123456\n")
    assert read_bytes(p, max_line_bytes=6) == b"12345\n1234\n123456\n"  # 6 bytes is allowed
    with pytest.raises(BadInput) as info:
        read_bytes(p, max_line_bytes=5)
    assert info.value.line == 3 and "longer than 5 bytes" in info.value.message


def test_v4_an_overlong_line_stops_the_read(tmp_path: Path) -> None:
    """The rest of the file is not read once a line passes the limit (memory stays small)."""
    class Endless:
        reads = 0

        def read(self, n: int) -> bytes:
            self.reads += 1
            return b"x" * n

    fh = Endless()
    with pytest.raises(BadInput, match="longer than"):
        textio._read_limited(fh, tmp_path / "endless", 3 * textio._CHUNK_BYTES)  # type: ignore[arg-type]
    assert fh.reads == 4


class _Chunks:
    """A file read in the given chunk size (``read`` only, as :func:`textio._read_limited` uses)."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    def read(self, n: int) -> bytes:
        out = self.data[self.at:self.at + min(n, self.size)]
        self.at += len(out)
        return out


@given(
    lines=st.lists(st.integers(min_value=0, max_value=12), max_size=12),
    final_newline=st.booleans(),
    limit=st.integers(min_value=0, max_value=10),
    chunk=st.integers(min_value=1, max_value=16),
)
def test_v4_line_limit_refuses_the_first_overlong_line_whatever_the_chunks(
        lines: list[int], final_newline: bool, limit: int, chunk: int) -> None:
    """The bound is checked a chunk at a time in C; it names the same line as a line-by-line count."""
    data = b"\n".join(b"x" * n for n in lines) + (b"\n" if final_newline and lines else b"")
    over = [i + 1 for i, n in enumerate(lines) if n > limit]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(textio, "_CHUNK_BYTES", chunk)
        if not over:
            assert textio._read_limited(_Chunks(data, chunk), Path("f"), limit) == data  # type: ignore[arg-type]
            return
        with pytest.raises(BadInput) as info:
            textio._read_limited(_Chunks(data, chunk), Path("f"), limit)  # type: ignore[arg-type]
    assert info.value.line == over[0]
    assert f"longer than {limit:,} bytes" in info.value.message and info.value.path == Path("f")



@given(
    lines=st.lists(st.integers(min_value=0, max_value=12), max_size=12),
    limit=st.integers(min_value=0, max_value=10),
    chunk=st.integers(min_value=1, max_value=16),
)
def test_v4_line_limit_names_the_same_line_in_a_regular_file_read_twice(lines: list[int], limit: int, chunk: int) -> None:
    """A regular file's first pass counts no newline; on refusal they are counted again up to it."""
    data = b"\n".join(b"x" * n for n in lines)
    over = [i + 1 for i, n in enumerate(lines) if n > limit]
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        path = Path(tmp) / "f.txt"
        path.write_bytes(data)
        mp.setattr(textio, "_CHUNK_BYTES", chunk)
        if not over:
            assert textio.read_bytes(path, max_line_bytes=limit) == data
            return
        with pytest.raises(BadInput) as info:
            textio.read_bytes(path, max_line_bytes=limit)
    assert info.value.line == over[0]
