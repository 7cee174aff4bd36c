"""Reading the files corpus validation needs: outputs, expected IDs, references (V2-V4).

Called by :mod:`gpusession.core.validation` and :mod:`gpusession.core.validation_jsonl`.
Everything here turns bytes into polars frames with explicit ``String`` columns -- IDs
are never inferred as numbers ("007" is not "7"; spaces matter) -- and, for run outputs,
turns problems into *reported* records rather than exceptions, so that a broken output
gives a clear report, not a crash. Encoding: invalid UTF-8 is reported per line; a BOM
and CRLF line ends are tolerated and noted.

Expected-ID files (corpus, references, train/tune lists) are *inputs a person gives*:
when they are unusable, :class:`~gpusession.core.errors.BadInput` is raised naming the
file and line.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.errors import BadInput

BOM = "\ufeff"
#: The columns of a parsed output: 1-based line, ID, label, first problem (null = fine).
RECORD_SCHEMA: dict[str, Any] = {"line": pl.Int64, "id": pl.String, "label": pl.String, "problem": pl.String}
EXCERPT_CHARS = 120


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
    """

    records: pl.DataFrame
    file_problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    non_utf8_lines: int = 0
    text: str = ""
    lines: list[str] | None = None

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line``, cut to :data:`EXCERPT_CHARS` characters."""
        if self.lines is None:
            self.lines = split_lines(self.text)
        if 1 <= line <= len(self.lines):
            return excerpt(self.lines[line - 1])
        return ""


#: Control characters shown as escapes, so a quoted record cannot drive the terminal.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127) if c != 9}


def printable(text: str) -> str:
    """``text`` with control characters (ESC, NUL, CR, ...) written as ``\\xNN``."""
    return text.translate(_CONTROL)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to ``limit`` characters (saying how long it really was), with
    control characters escaped (:func:`printable`)."""
    if len(text) <= limit:
        return printable(text)
    return f"{printable(text[:limit])}… ({len(text):,} characters)"


def split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``.

    Raises:
        BadInput: the file does not exist or cannot be read.
    """
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise BadInput("file not found", path=path) from None
    except IsADirectoryError:
        raise BadInput("is a folder, expected a file", path=path) from None
    except OSError as exc:
        raise BadInput(f"cannot read: {exc.strerror}", path=path) from None


def decode_text(data: bytes) -> tuple[str, list[str], dict[int, str]]:
    """Decode ``data`` as UTF-8 without ever failing (V4: encoding problems reported).

    Returns:
        ``(text, notes, bad_lines)``: the text with a leading BOM removed and CRLF line
        ends turned into LF (invalid bytes replaced by U+FFFD); notes saying what was
        tolerated; and ``{line: reason}`` for every line that is not valid UTF-8.
    """
    notes: list[str] = []
    bad_lines: dict[int, str] = {}
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
        notes.append("the file starts with a UTF-8 byte-order mark (BOM); it was ignored")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        raw_lines = data.split(b"\n")
        # Only lines holding a replacement character can be the broken ones.
        candidates = [i for i, ln in enumerate(text.split("\n")) if "\ufffd" in ln]
        for i in candidates:
            try:
                raw_lines[i].decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw_lines[i][exc.start]
                bad_lines[i + 1] = (
                    f"not valid UTF-8 (byte 0x{byte:02X} at byte {exc.start + 1} of the line; "
                    "Latin-1 or another encoding?)"
                )
    if "\r" in text:
        crlf = text.count("\r\n")
        if crlf:
            text = text.replace("\r\n", "\n")
            notes.append(f"{crlf:,} line(s) end with CRLF (Windows line ends); the CR was ignored")
    return text, notes, bad_lines


def parse_csv(data: bytes) -> ParsedRecords:
    """Read a CSV output with a header holding ``id`` and ``label`` (V4), all strings.

    Returns:
        The records (line = row + 1 for the header, exact when no cell spans lines);
        unreadable files give a file problem, never an exception.
    """
    text, notes, bad_utf8 = decode_text(data)
    parsed = ParsedRecords(records=pl.DataFrame(schema=RECORD_SCHEMA), notes=notes, text=text)
    parsed.non_utf8_lines = len(bad_utf8)
    if text.strip() == "":
        parsed.file_problems.append("the file is empty: no header, no records")
        return parsed
    try:
        frame = pl.read_csv(io.BytesIO(text.encode("utf-8")), infer_schema=False, has_header=True)
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
        line=pl.int_range(2, frame.height + 2, dtype=pl.Int64),
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

TABLE_SUFFIXES = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


def read_id_table(path: Path, *, need_label: bool = False) -> tuple[pl.DataFrame, list[str]]:
    """Read an ID file: CSV / JSONL / Parquet with an ``id`` column (and ``label`` if
    present), or a plain list with one ID per line (any other suffix; a first line
    that is exactly ``id`` is taken as a header).

    Returns:
        ``(frame, notes)``: columns ``line`` (Int64, 1-based line or row), ``id``
        (String) and ``label`` (String, null where absent).

    Raises:
        BadInput: unreadable, not UTF-8, no ``id`` column, an empty or non-string ID,
            a label required but absent; names file and line.
    """
    path = Path(path)
    kind = TABLE_SUFFIXES.get(path.suffix.lower(), "list")
    if kind == "parquet":
        frame, notes = _read_parquet(path), list[str]()
    else:
        data = read_bytes(path)
        text, notes, bad = decode_text(data)
        if bad:
            line = min(bad)
            raise BadInput(bad[line], path=path, line=line)
        if kind == "list":
            frame = _read_plain_list(path, text)
        elif kind == "csv":
            frame = _read_csv_table(
                path, text, data if not notes else None, separator="\t" if path.suffix.lower() == ".tsv" else ","
            )
        else:
            frame = _read_jsonl_table(path, data)
    if "label" not in frame.columns:
        if need_label:
            raise BadInput("no 'label' column; a references file needs id,label", path=path)
        frame = frame.with_columns(label=pl.lit(None, pl.String))
    frame = frame.select(pl.col("line").cast(pl.Int64), "id", "label")
    empty = frame.filter(pl.col("id").is_null() | (pl.col("id") == ""))
    if empty.height:
        raise BadInput("empty ID; every record needs a non-empty ID", path=path, line=int(empty["line"][0]))
    return frame, notes


def _read_plain_list(path: Path, text: str) -> pl.DataFrame:
    lines = split_lines(text)
    frame = pl.DataFrame({"id": lines}, schema={"id": pl.String}).with_row_index("line", offset=1)
    if frame.height and lines[0] == "id":
        frame = frame.slice(1)
    return frame


def _read_csv_table(path: Path, text: str, raw: bytes | None, *, separator: str) -> pl.DataFrame:
    """``raw``: the file's bytes when they equal ``text`` encoded (saves a copy)."""
    if not text or text.isspace():
        raise BadInput("the file is empty; expected a header with an 'id' column", path=path)
    try:
        frame = pl.read_csv(
            io.BytesIO(raw if raw is not None else text.encode("utf-8")),
            infer_schema=False,
            has_header=True,
            separator=separator,
        )
    except Exception as exc:  # noqa: BLE001
        raise BadInput(f"not readable as CSV: {str(exc).splitlines()[0]}", path=path) from None
    if "id" not in frame.columns:
        raise BadInput(f"no 'id' column in the header (found: {', '.join(frame.columns)})", path=path, line=1)
    cols = ["id"] + (["label"] if "label" in frame.columns else [])
    return frame.select(cols).with_row_index("line", offset=2)


def _read_jsonl_table(path: Path, data: bytes) -> pl.DataFrame:
    from gpusession.core.validation_jsonl import parse_jsonl  # imports this module

    parsed = parse_jsonl(data)
    if parsed.file_problems:
        raise BadInput(parsed.file_problems[0], path=path)
    rec = parsed.records
    # A corpus needs a string ID on every line; a label may be absent or null (no
    # reference) but, when given, must be a string.
    tolerated = pl.col("problem").is_in(["missing field 'label'", "label is a JSON null (null), expected a string"])
    bad = rec.filter(pl.col("id").is_null() | (pl.col("problem").is_not_null() & ~tolerated))
    if bad.height:
        first = bad.row(0, named=True)
        raise BadInput(str(first["problem"] or "no string ID"), path=path, line=int(first["line"]))
    return rec.select("line", "id", "label")


def _read_parquet(path: Path) -> pl.DataFrame:
    try:
        frame = pl.read_parquet(path)
    except FileNotFoundError:
        raise BadInput("file not found", path=path) from None
    except Exception as exc:  # noqa: BLE001
        raise BadInput(f"not readable as Parquet: {str(exc).splitlines()[0]}", path=path) from None
    if "id" not in frame.columns:
        raise BadInput(f"no 'id' column (found: {', '.join(frame.columns)})", path=path)
    if frame.schema["id"] != pl.String:
        raise BadInput(
            f"the id column is {frame.schema['id']}, expected strings "
            "(IDs are strings: '007' is not '7'); store the IDs as text",
            path=path,
            field="id",
        )
    cols = ["id"]
    if "label" in frame.columns:
        if frame.schema["label"] not in (pl.String, pl.Categorical) and not isinstance(
            frame.schema["label"], pl.Enum
        ):
            raise BadInput(f"the label column is {frame.schema['label']}, expected strings", path=path, field="label")
        frame = frame.with_columns(pl.col("label").cast(pl.String))
        cols.append("label")
    return frame.select(cols).with_row_index("line", offset=1)


def read_id_list(source: Path | Sequence[str]) -> tuple[pl.Series, str]:
    """IDs of a train or tune list (V7): a file as in :func:`read_id_table`, or strings.

    Returns:
        ``(ids, description)``; ``ids`` a String series.

    Raises:
        BadInput: an unusable file or a non-string item.
    """
    if isinstance(source, (str, Path)):
        frame, _ = read_id_table(Path(source))
        return frame["id"], str(source)
    items = list(source)
    bad = [x for x in items if not isinstance(x, str)]
    if bad:
        raise BadInput(f"IDs must be strings, got {bad[0]!r}", field="ids")
    return pl.Series("id", items, dtype=pl.String), f"{len(items)} IDs given"
