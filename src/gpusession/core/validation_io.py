"""Reading the files corpus validation needs: outputs, expected IDs, references (V2-V4).

Called by :mod:`gpusession.core.validation` only. Everything here turns bytes into
polars frames with explicit ``String`` columns -- IDs are never inferred as numbers
("007" is not "7"; spaces matter) -- and turns problems into *reported* records rather
than exceptions, so that a broken output file gives a clear report, not a crash.

Output files (one per run) are read record by record:

* JSONL: a clean file takes the fast path (``polars.read_ndjson`` plus whole-file
  regular-expression counts that prove every ``id`` and ``label`` is a JSON string);
  any other file is split into lines, the well-shaped lines are read by polars in
  blocks (bisected when a block fails) and only the odd lines are parsed one by one
  with :mod:`json` to say exactly what is wrong with them and on which line.
* CSV: ``polars.read_csv`` with every column a string.

Expected-ID files (corpus, references, train/tune lists) are *inputs a person gives*:
when they are unusable, :class:`~gpusession.core.errors.BadInput` is raised naming the
file and line.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.errors import BadInput

BOM = "\ufeff"
#: The columns of a parsed output: 1-based line, ID, label, first problem (null = fine).
RECORD_SCHEMA: dict[str, Any] = {"line": pl.Int64, "id": pl.String, "label": pl.String, "problem": pl.String}
_JSON_SCHEMA = {"id": pl.String, "label": pl.String}
_ID_KEY = r'"id"\s*:'
_ID_STR = r'"id"\s*:\s*"'
_LABEL_KEY = r'"label"\s*:'
_LABEL_STR = r'"label"\s*:\s*"'
_LEAF = 32  # bisection stops at blocks this small and parses their lines one by one
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
            self.lines = _split_lines(self.text)
        if 1 <= line <= len(self.lines):
            return excerpt(self.lines[line - 1])
        return ""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how long it really was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _split_lines(text: str) -> list[str]:
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


def parse_jsonl(data: bytes) -> ParsedRecords:
    """Read a JSONL output: one ``{"id": "...", "label": "..."}`` object per line (V4).

    Extra fields are allowed and ignored. A record's ID must be a JSON string; an ID
    given as a number (``{"id": 7}``) is a format problem and does not count as an ID.

    Returns:
        The records with a problem per bad line; never raises for bad content.
    """
    text, notes, bad_utf8 = decode_text(data)
    parsed = ParsedRecords(records=pl.DataFrame(schema=RECORD_SCHEMA), notes=notes, text=text)
    parsed.non_utf8_lines = len(bad_utf8)
    if text.strip() == "":
        parsed.file_problems.append(
            "the file is empty: no records" if not text else "the file holds only blank lines: no records"
        )
        return parsed
    raw = data if not notes else None
    fast = None if bad_utf8 else _jsonl_fast(text, raw)
    records = fast if fast is not None else _jsonl_slow(parsed)
    if bad_utf8:
        fix = pl.DataFrame(
            {"line": list(bad_utf8), "utf8_problem": list(bad_utf8.values())},
            schema={"line": pl.Int64, "utf8_problem": pl.String},
        )
        records = (
            records.join(fix, on="line", how="left")
            .with_columns(
                problem=pl.coalesce("utf8_problem", "problem"),
                id=pl.when(pl.col("id").str.contains("\ufffd", literal=True))
                .then(None)
                .otherwise(pl.col("id")),
            )
            .drop("utf8_problem")
        )
    parsed.records = records
    return parsed


def _jsonl_fast(text: str, raw: bytes | None) -> pl.DataFrame | None:
    """The clean-file path: no Python work per line. ``None`` when the file is not clean.

    ``raw`` is the file's bytes when they equal ``text`` encoded (no BOM, no CRLF), to
    save a copy.
    """
    if text.startswith("\n") or "\n\n" in text or "\r" in text:
        return None
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    try:
        frame = pl.read_ndjson(io.BytesIO(raw if raw is not None else text.encode("utf-8")), schema=_JSON_SCHEMA)
    except Exception:  # noqa: BLE001 - any polars parse failure sends us to the careful path
        return None
    if frame.height != n_lines or frame.null_count().sum_horizontal().item() != 0:
        return None
    # Every line has a top-level string id and label; prove there is no second key and
    # that no value was a number (or true/false) that polars turned into a string.
    whole = pl.DataFrame({"t": [text]}, schema={"t": pl.String})
    counts = whole.select(
        pl.col("t").str.count_matches(p).alias(str(i)) for i, p in enumerate((_ID_KEY, _ID_STR, _LABEL_KEY, _LABEL_STR))
    ).row(0)
    if any(c != n_lines for c in counts):
        return None
    return frame.with_columns(
        line=pl.int_range(1, n_lines + 1, dtype=pl.Int64), problem=pl.lit(None, pl.String)
    ).select(list(RECORD_SCHEMA))


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def classify_json_line(line: str) -> tuple[str | None, str | None, str | None]:
    """Parse one JSONL line exactly. Returns ``(id, label, problem)``; ``problem`` is
    ``None`` when the line is a JSON object with a string ``id`` and a string ``label``."""
    if line.strip() == "":
        return None, None, "empty line"
    try:
        obj = json.loads(line, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        return None, None, f"key {exc.args[0]!r} appears twice in one record"
    except json.JSONDecodeError as exc:
        return None, None, f"not JSON ({exc.msg} at column {exc.colno})"
    except (ValueError, RecursionError) as exc:
        return None, None, f"not JSON ({exc})"
    if not isinstance(obj, dict):
        return None, None, f"not a JSON object (a JSON {_json_kind(obj)})"
    problems: list[str] = []
    rid = obj.get("id")
    if "id" not in obj:
        problems.append("missing field 'id'")
    elif not isinstance(rid, str):
        problems.append(
            f"ID is a JSON {_json_kind(rid)} ({excerpt(json.dumps(rid), 40)}), expected a string"
        )
        rid = None
    label = obj.get("label")
    if "label" not in obj:
        problems.append("missing field 'label'")
    elif not isinstance(label, str):
        problems.append(
            f"label is a JSON {_json_kind(label)} ({excerpt(json.dumps(label), 40)}), expected a string"
        )
        label = None
    return rid, label, ("; ".join(problems) or None)


def _jsonl_slow(parsed: ParsedRecords) -> pl.DataFrame:
    """The careful path: polars for well-shaped lines, :mod:`json` for the odd ones."""
    lines = _split_lines(parsed.text)
    parsed.lines = lines
    frame = pl.DataFrame({"text": lines}, schema={"text": pl.String}).with_row_index("line", offset=1)
    txt = pl.col("text")
    shaped = frame.with_columns(
        line=pl.col("line").cast(pl.Int64),
        simple=(
            txt.str.strip_chars().str.starts_with("{")
            & txt.str.strip_chars().str.ends_with("}")
            & (txt.str.count_matches(_ID_KEY) == 1)
            & (txt.str.count_matches(_LABEL_KEY) == 1)
            & txt.str.contains(_ID_STR)
            & txt.str.contains(_LABEL_STR)
            & ~txt.str.contains("\ufffd", literal=True)
        ),
    )
    simple_idx = shaped.filter(pl.col("simple"))["line"].to_list()
    odd_idx = shaped.filter(~pl.col("simple"))["line"].to_list()
    parts: list[pl.DataFrame] = []
    leftovers: list[int] = []
    _bisect_read(lines, simple_idx, parts, leftovers)
    odd = sorted(odd_idx + leftovers)
    if odd:
        rows = [classify_json_line(lines[i - 1]) for i in odd]
        parts.append(
            pl.DataFrame(
                {
                    "line": odd,
                    "id": [r[0] for r in rows],
                    "label": [r[1] for r in rows],
                    "problem": [r[2] for r in rows],
                },
                schema=RECORD_SCHEMA,
            )
        )
    if not parts:
        return pl.DataFrame(schema=RECORD_SCHEMA)
    return pl.concat(parts).sort("line")


def _bisect_read(lines: list[str], idx: list[int], parts: list[pl.DataFrame], leftovers: list[int]) -> None:
    """Read the lines ``idx`` (1-based) with polars; a block that fails is halved until
    it is small, then its lines go to ``leftovers`` for exact one-by-one parsing."""
    stack = [idx]
    while stack:
        block = stack.pop()
        if not block:
            continue
        blob = "\n".join(lines[i - 1] for i in block).encode("utf-8")
        try:
            got = pl.read_ndjson(io.BytesIO(blob), schema=_JSON_SCHEMA)
            ok = got.height == len(block) and got.null_count().sum_horizontal().item() == 0
        except Exception:  # noqa: BLE001 - a bad line somewhere in the block
            ok = False
        if ok:
            parts.append(
                got.with_columns(
                    line=pl.Series(block, dtype=pl.Int64), problem=pl.lit(None, pl.String)
                ).select(list(RECORD_SCHEMA))
            )
        elif len(block) <= _LEAF:
            leftovers.extend(block)
        else:
            mid = len(block) // 2
            stack.append(block[mid:])
            stack.append(block[:mid])


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
        records = records.join(fix, on="line", how="left").with_columns(
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
            frame = _read_csv_table(path, text, separator="\t" if path.suffix.lower() == ".tsv" else ",")
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
    lines = _split_lines(text)
    frame = pl.DataFrame({"id": lines}, schema={"id": pl.String}).with_row_index("line", offset=1)
    if frame.height and lines[0] == "id":
        frame = frame.slice(1)
    return frame


def _read_csv_table(path: Path, text: str, *, separator: str) -> pl.DataFrame:
    if text.strip() == "":
        raise BadInput("the file is empty; expected a header with an 'id' column", path=path)
    try:
        frame = pl.read_csv(
            io.BytesIO(text.encode("utf-8")), infer_schema=False, has_header=True, separator=separator
        )
    except Exception as exc:  # noqa: BLE001
        raise BadInput(f"not readable as CSV: {str(exc).splitlines()[0]}", path=path) from None
    if "id" not in frame.columns:
        raise BadInput(f"no 'id' column in the header (found: {', '.join(frame.columns)})", path=path, line=1)
    cols = ["id"] + (["label"] if "label" in frame.columns else [])
    return frame.select(cols).with_row_index("line", offset=2)


def _read_jsonl_table(path: Path, data: bytes) -> pl.DataFrame:
    parsed = parse_jsonl(data)
    if parsed.file_problems:
        raise BadInput(parsed.file_problems[0], path=path)
    rec = parsed.records
    # A corpus needs an ID on every line; a label is optional (no references).
    bad = rec.filter(
        pl.col("id").is_null()
        | (pl.col("problem").is_not_null() & ~pl.col("problem").str.contains("label"))
    )
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
