"""Run outputs, bytes → records: the record schema, decoding, CSV outputs (V4).

The first step of validation (read → checks → report). Called by
:mod:`gpusession.core.validation` (CSV outputs), :mod:`.read_jsonl` (which builds on
the record schema and decoding here; this module never imports it) and
:mod:`.expected`. Everything here turns bytes into polars frames with explicit
``String`` columns -- IDs are never inferred as numbers ("007" is not "7"; spaces
matter) -- and turns problems into *reported* records rather than exceptions, so that
a broken output gives a clear report, not a crash. Encoding goes through
:mod:`gpusession.core.files.textio`: invalid UTF-8 is reported per line; a BOM and CRLF line
ends are tolerated and noted.
"""

from __future__ import annotations

import bisect
import codecs
import csv
import io
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gpusession.core.files.textio import BOM_BYTES, decode_lenient
from gpusession.core.files.textio import printable as _printable

#: The columns of a parsed output: 1-based line, ID, label, first problem (null = fine).
RECORD_SCHEMA: dict[str, Any] = {"line": pl.Int64, "id": pl.String, "label": pl.String, "problem": pl.String}
EXCERPT_CHARS = 120
_BLOCK_BYTES = 1024 * 1024
_UTF8_PIECE_BYTES = 8 * 1024 * 1024
#: A byte that is never part of blank text: ASCII, neither whitespace nor a separator
#: (``str.strip`` also strips U+001C-U+001F and non-ASCII spaces).
_NOT_BLANK = re.compile(rb"[^\s\x1c-\x1f\x80-\xff]")


@dataclass
class ParsedRecords:
    """One output file read record by record.

    Attributes:
        records: one row per record: ``line`` (1-based), ``id`` (null when no ID string
            could be read), ``label`` (null when absent or not a string), ``problem``
            (null when the record parsed; else the first reason, in words).
        file_problems: problems of the whole file (empty file, unreadable CSV, ...).
        notes: what was tolerated but is worth saying (BOM, CRLF line ends).
        non_utf8_lines: how many lines are not valid UTF-8.
        lines: the file's lines (CR stripped), used to quote bad records; ``None`` on
            the fast path until :meth:`line_text` needs them.
        raw: the file's bytes, when they are exactly its text (:class:`RawLines`); then
            ``text`` stays empty and :meth:`line_text` cuts a line from the bytes, so no
            decoded copy of the file is held beside them.
        compact: the records as :class:`CompactRecords`, when the reader was given the
            declared classes and read the file so (the clean JSONL path); ``records`` is
            then empty and the checks use this.
    """

    records: pl.DataFrame
    file_problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    non_utf8_lines: int = 0
    text: str = ""
    lines: list[str] | None = None
    raw: RawLines | None = None
    compact: CompactRecords | None = None

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line``, cut to :data:`EXCERPT_CHARS` characters."""
        if self.raw is not None:
            return excerpt(self.raw.line(line))
        if self.lines is None:
            self.lines = split_lines(self.text)
        if 1 <= line <= len(self.lines):
            return excerpt(self.lines[line - 1])
        return ""


def code_dtype(n_classes: int) -> pl.DataType:
    """The narrowest unsigned integer holding the codes ``0..n_classes`` (V4, V8: memory)."""
    if n_classes < 255:
        return pl.UInt8()
    return pl.UInt16() if n_classes < 65_535 else pl.UInt32()


def label_code(label: pl.Expr, classes: Sequence[str]) -> pl.Expr:
    """A label as a small integer (V4, V8).

    Its index in ``classes``; ``len(classes)`` for any other string (an empty one
    included); null for no label.
    """
    k = len(classes)
    # an Enum's physical codes are the indexes (a cast half the memory of replace_strict)
    code = label.cast(pl.Enum(list(classes)), strict=False).to_physical().cast(code_dtype(k))
    return pl.when(label.is_null()).then(pl.lit(None, code_dtype(k))).otherwise(code.fill_null(k))


@dataclass
class CompactRecords:
    """An output's records held for the checks in fixed-width columns (V2-V6, V8: memory).

    Per record (``n`` rows, the file's order) the checks need only the ID, whether the
    record is valid and which declared class it predicts; the words of a problem are
    needed for the bad records alone. So, instead of four string columns:

    Attributes:
        frame: ``id`` (String, null when no ID string could be read), ``code`` (the label's
            index in ``classes``; ``len(classes)`` for a label outside them; null for no
            label; :func:`code_dtype`), ``ok`` (Boolean: no problem, a non-empty ID, a
            declared label), and ``line`` (Int64, 1-based) only when the lines are not
            simply 1..n (a blank line skipped, a CSV header, a cell over lines).
        bad: ``line`` (Int64), ``id``, ``label``, ``problem`` (String: the reader's
            problem or null) for every record that is not ``ok``, in file order.
        classes: the declared classes the codes index.
    """

    frame: pl.DataFrame
    bad: pl.DataFrame
    classes: tuple[str, ...]

    @property
    def n(self) -> int:
        """Number of records."""
        return self.frame.height

    def lines(self, rows: pl.Series) -> pl.Series:
        """The 1-based lines (Int64) of the records at 0-based ``rows``."""
        if "line" in self.frame.columns:
            return self.frame["line"].gather(rows)
        return (rows.cast(pl.Int64) + 1).alias("line")


def compact_records(records: pl.DataFrame, classes: Sequence[str]) -> CompactRecords:
    """:data:`RECORD_SCHEMA` records as :class:`CompactRecords` (V4, V8)."""
    k = len(classes)
    frame = (
        records.select("line", "id", "problem", code=label_code(pl.col("label"), classes))
        .with_columns(ok=pl.col("problem").is_null() & (pl.col("id") != "").fill_null(False)
                      & (pl.col("code") < k).fill_null(False))
        .drop("problem")
    )
    bad = records.filter(~frame["ok"]).select(list(RECORD_SCHEMA))
    return CompactRecords(frame.select("id", "code", "ok", "line"), bad, tuple(classes))


class RawLines:
    """The lines of a file's bytes, cut one at a time (V4: bad records quoted by line).

    For bytes that are exactly the text (valid UTF-8, no BOM, no CR, no empty line at
    the end), so that line *i* here is line *i* of the decoded text. The first call
    counts the newlines of each 1 MiB block (a few C calls per block); each line is
    then found within its block, so quoting 20 bad lines of a 1 GB output costs
    milliseconds and no copy of the file.

    Args:
        raw: the file's bytes.
    """

    def __init__(self, raw: bytes) -> None:
        """Keep ``raw``; nothing is counted until a line is asked for."""
        self.raw = raw
        self._ends: list[int] = []  # newlines in raw[: (k + 1) * _BLOCK_BYTES], per block k

    def line(self, line: int) -> str:
        """The text of 1-based ``line``; ``""`` past the last line (as :func:`split_lines`)."""
        raw = self.raw
        if not self._ends:
            total = 0
            for start in range(0, len(raw), _BLOCK_BYTES):
                total += raw.count(b"\n", start, start + _BLOCK_BYTES)
                self._ends.append(total)
        n_lines = (self._ends[-1] if self._ends else 0) + (0 if raw.endswith(b"\n") or not raw else 1)
        if not 1 <= line <= n_lines:
            return ""
        start = 0 if line == 1 else self._after_newline(line - 1)
        end = raw.find(b"\n", start)
        return raw[start: len(raw) if end < 0 else end].decode("utf-8", errors="replace")

    def _after_newline(self, nth: int) -> int:
        """The offset just after the ``nth`` (1-based) newline of the bytes."""
        block = bisect.bisect_left(self._ends, nth)
        before = self._ends[block - 1] if block else 0
        start = block * _BLOCK_BYTES
        chunk = self.raw[start: start + _BLOCK_BYTES]
        # the block holds that newline: what follows it in the block is the last piece
        return start + len(chunk) - len(chunk.split(b"\n", nth - before)[-1])


def printable(text: str) -> str:
    r"""``text`` on one line, control characters (ESC, NUL, CR, LF...) as ``\xNN`` (V4, H-17)."""
    return _printable(text, keep="\t")


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, for quoting a record (V4).

    Says how long the text really was; control characters are escaped
    (:func:`printable`).
    """
    if len(text) <= limit:
        return printable(text)
    return f"{printable(text[:limit])}… ({len(text):,} characters)"


def codepoints(text: str, limit: int = 40) -> str:
    """``text`` as code points, ``U+0065 U+0301`` (H-16: two strings that print alike).

    At most ``limit`` code points are written; the rest is summed up as ``… (N more)``.
    """
    shown = " ".join(f"U+{ord(c):04X}" for c in text[:limit])
    return shown + (f" … ({len(text) - limit:,} more)" if len(text) > limit else "")


def normal_form(text: str) -> str:
    """``"NFC"``, ``"NFD"`` or ``"neither NFC nor NFD"``: the Unicode normal form ``text`` is in (H-16)."""
    if unicodedata.is_normalized("NFC", text):
        return "NFC"
    if unicodedata.is_normalized("NFD", text):
        return "NFD"
    return "neither NFC nor NFD"


def normalization_difference(found: str, wanted: str, what: str) -> str:
    """Words saying that ``found`` differs from ``wanted`` only in Unicode normalization (H-16).

    The comparison of IDs and labels stays exact; this only explains a mismatch that
    would otherwise show two strings printing identically, by giving both normal forms
    and both strings' code points.

    Args:
        found: the string read from the output.
        wanted: the declared class or expected ID it is canonically equivalent to.
        what: ``"declared class"`` or ``"expected ID"``.
    """
    return (
        f"differs from the {what} {printable(wanted)!r} only in Unicode normalization "
        f"({normal_form(found)} here, {normal_form(wanted)} {what.split()[0]}): "
        f"{codepoints(found)} here, {codepoints(wanted)} {what.split()[0]}"
    )


def trailing_empty_note(n: int) -> str:
    """The note for ``n`` empty lines ignored at the very end of a file (H-20)."""
    return f"{n:,} empty line(s) at the end of the file were ignored"


def drop_trailing_empty_lines(text: str) -> tuple[str, int]:
    r"""``text`` without the empty lines at its very end, and how many there were (H-20).

    ``"a\n\n"`` gives ``("a\n", 1)``. An empty line in the middle is kept (it stays a
    format problem with its line number, V4), as is a text made only of empty lines
    (the caller reports that file as empty). Whitespace-only lines are not empty: a
    space can be part of an ID.
    """
    if not text.endswith("\n\n"):
        return text, 0
    stripped = text.rstrip("\n")
    if not stripped:
        return text, 0
    return stripped + "\n", len(text) - len(stripped) - 1


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` split on LF only (line *i* is ``result[i-1]``, V4).

    A final newline ends the last line rather than starting an empty one; a CR is kept
    as part of its line (decode first with :func:`decode_text`).
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def is_plain_text(data: bytes) -> bool:
    """Whether ``data`` is exactly the text :func:`decode_text` would give, with no notes.

    Not empty, valid UTF-8 (checked in 8 MiB pieces, each decoded piece dropped at once),
    no BOM, no CR anywhere, no empty line at the very end: then line *i* of the bytes is
    line *i* of the text, and every count made on the bytes is the text's; so an output
    is read from its bytes with no decoded copy beside them (V4, V8: memory).
    """
    if not data or data.startswith(BOM_BYTES) or data.endswith(b"\n\n") or b"\r" in data:
        return False
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    with memoryview(data) as view:
        try:
            for start in range(0, len(data), _UTF8_PIECE_BYTES):
                decoder.decode(view[start: start + _UTF8_PIECE_BYTES])
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return False
    return True


def decode_text(data: bytes) -> tuple[str, list[str], dict[int, str]]:
    """Decode ``data`` as UTF-8 without ever failing (V4: encoding problems reported).

    Returns:
        ``(text, notes, bad_lines)``: the text with a leading BOM removed, CRLF line
        ends turned into LF and empty lines at the very end dropped (invalid bytes
        replaced by U+FFFD); notes saying what was tolerated; and ``{line: reason}``
        for every line that is not valid UTF-8
        (:func:`gpusession.core.files.textio.decode_lenient`).
    """
    decoded = decode_lenient(data, crlf=True)
    notes = decoded.notes()
    text, n_empty = drop_trailing_empty_lines(decoded.text)
    if n_empty:
        notes.append(trailing_empty_note(n_empty))
    return text, notes, {n: b.words() for n, b in decoded.bad_lines.items()}


def record_start_lines(text: str | bytes, n_records: int, *, separator: str = ",") -> pl.Series:
    """The physical line where each CSV record after the header starts (1-based, H-28).

    A quoted cell may span lines, so a record's number is not its line: an error about
    the record after a three-line text must name the line it starts on. When no cell
    spans lines (the count of lines says so) the lines are 2, 3, …; otherwise the
    standard library's CSV reader, which quotes as polars does, counts them.

    Args:
        text: the decoded CSV text (header first), or bytes that are exactly that text
            (:func:`is_plain_text`; decoded only when a cell spans lines).
        n_records: the records polars read after the header.
        separator: the cell separator (``","``; a tab for TSV).

    Returns:
        An ``Int64`` series of ``n_records`` line numbers; 2, 3, … when the two readers
        disagree on the record count (a file polars read and ``csv`` did not).
    """
    plain = pl.int_range(2, n_records + 2, dtype=pl.Int64, eager=True)
    if isinstance(text, bytes):
        n_lines, quoted = text.count(b"\n") + (not text.endswith(b"\n")), b'"' in text
    else:
        n_lines, quoted = text.count("\n") + (not text.endswith("\n")), '"' in text
    if n_lines <= n_records + 1 or not quoted:
        return plain.alias("line")
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator)
    starts: list[int] = []
    end = 0
    try:
        for _ in reader:
            starts.append(end + 1)
            end = reader.line_num
    except csv.Error:
        return plain.alias("line")
    if len(starts) != n_records + 1:
        return plain.alias("line")
    return pl.Series("line", starts[1:], dtype=pl.Int64)


def parse_csv(data: bytes) -> ParsedRecords:
    """Read a CSV output with a header holding ``id`` and ``label`` (V4), all strings.

    Returns:
        The records (line = row + 1 for the header, exact when no cell spans lines);
        unreadable files give a file problem, never an exception.
    """
    if is_plain_text(data) and _NOT_BLANK.search(data):  # read from its bytes, no decoded copy
        text: str | bytes = data
        parsed = ParsedRecords(records=pl.DataFrame(schema=RECORD_SCHEMA), raw=RawLines(data))
        bad_utf8: dict[int, str] = {}
    else:
        text, notes, bad_utf8 = decode_text(data)
        parsed = ParsedRecords(records=pl.DataFrame(schema=RECORD_SCHEMA), notes=notes, text=text)
        parsed.non_utf8_lines = len(bad_utf8)
        if text.strip() == "":
            parsed.file_problems.append("the file is empty: no header, no records")
            return parsed
    try:
        frame = pl.read_csv(io.BytesIO(text if isinstance(text, bytes) else text.encode("utf-8")),
                            infer_schema=False, has_header=True)
    except Exception as exc:  # noqa: BLE001 - polars says why; we report it
        parsed.file_problems.append(f"not readable as CSV: {str(exc).splitlines()[0]}")
        return parsed
    missing = [c for c in ("id", "label") if c not in frame.columns]
    if missing:
        parsed.file_problems.append(
            f"the header has no {' and no '.join(repr(c) for c in missing)} column "
            f"(found: {', '.join(frame.columns) or 'nothing'})"
        )
        return parsed
    records = frame.select("id", "label").with_columns(
        line=record_start_lines(text, frame.height),
        problem=pl.when(pl.all_horizontal(pl.col("id").is_null(), pl.col("label").is_null()))
        .then(pl.lit("empty row"))
        .otherwise(pl.lit(None, pl.String)),
    )
    if bad_utf8:
        fix = pl.DataFrame(
            {"line": list(bad_utf8), "utf8_problem": list(bad_utf8.values())},
            schema={"line": pl.Int64, "utf8_problem": pl.String},
        )
        records = records.join(fix, on="line", how="left", maintain_order="left").with_columns(
            problem=pl.coalesce("utf8_problem", "problem")
        )
    parsed.records = records.select(list(RECORD_SCHEMA))
    if frame.height == 0:
        parsed.file_problems.append("the file holds only a header: no records")
    return parsed


# -- expected IDs, references, train/tune lists (inputs: BadInput when unusable) --------
