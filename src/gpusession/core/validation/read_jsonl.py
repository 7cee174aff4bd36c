"""JSONL outputs read record by record, fast when clean, exact when not (V4).

Called by :mod:`gpusession.core.validation` (run outputs) and
:mod:`gpusession.core.validation.expected` (JSONL corpora); builds on
:mod:`gpusession.core.validation.read`, which never imports this module. A clean file takes the fast path:
``polars.read_ndjson`` plus whole-file regular-expression counts proving that every
``id`` and ``label`` is a JSON string. Any other file is split into lines; lines shaped
like one object are read by polars in blocks (a failing block is halved until small)
and classified with polars expressions -- a missing field, an ID given as a number --
so that even a million bad lines cost no Python loop. Only lines polars cannot read
(not JSON, nested or repeated keys) are parsed one by one with :mod:`json`, which says
exactly what is wrong; past :data:`EXACT_LIMIT` such lines the rest get a generic reason.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import TOO_DEEP, check_json_depth
from gpusession.core.validation.read import (
    RECORD_SCHEMA,
    CompactRecords,
    ParsedRecords,
    RawLines,
    decode_text,
    excerpt,
    is_plain_text,
    label_code,
    split_lines,
)

_JSON_SCHEMA = {"id": pl.String, "label": pl.String}
_ID_KEY = r'"id"\s*:'
_ID_STR = r'"id"\s*:\s*"'
_LABEL_KEY = r'"label"\s*:'
_LABEL_STR = r'"label"\s*:\s*"'
#: A JSON string holding an escape, then ``:``: a key written with an escape (``"\u0069d"``
#: is ``"id"``), which the byte counts above cannot see and polars reads as the key.
_ESCAPED_KEY = r'"(?:[^"\\]|\\.)*\\(?:[^"\\]|\\.)*"\s*:'
#: The escapes of a high and a low surrogate: alone (not a pair), polars reads one as NUL.
_HIGH_ESC = r"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW_ESC = r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LEAF = 32  # bisection stops at blocks this small and parses their lines one by one
#: Lines parsed one by one with :mod:`json` at most; later odd lines get a generic reason.
EXACT_LIMIT = 20_000


def parse_jsonl(data: bytes, classes: Sequence[str] | None = None) -> ParsedRecords:
    """Read a JSONL output: one ``{"id": "...", "label": "..."}`` object per line (V4).

    Extra fields are allowed and ignored. A record's ID must be a JSON string; an ID
    given as a number (``{"id": 7}``) is a format problem and does not count as an ID.
    A file whose bytes are exactly its text (:func:`~gpusession.core.validation.read.is_plain_text`) is read from them,
    and no decoded copy is made unless the careful path needs it: the memory of a clean
    1 GB output is its bytes and polars' records, not three copies of the file.

    Given the declared ``classes``, a clean file is read by polars' streaming engine
    into :class:`~gpusession.core.validation.read.CompactRecords` (``compact``; V8: the
    labels become class codes as each morsel is read and no string column but the IDs
    outlives it), and ``records`` stays empty; any other file is read into ``records``
    as without them.

    Returns:
        The records with a problem per bad line; never raises for bad content.
    """
    plain = is_plain_text(data)
    if plain and classes is not None and (compact := _jsonl_fast_compact(data, classes)) is not None:
        return ParsedRecords(records=pl.DataFrame(schema=RECORD_SCHEMA), raw=RawLines(data), compact=compact)
    if plain and (fast := _jsonl_fast(data)) is not None:
        return ParsedRecords(records=fast, raw=RawLines(data))
    text, notes, bad_utf8 = decode_text(data)
    parsed = ParsedRecords(records=pl.DataFrame(schema=RECORD_SCHEMA), notes=notes, text=text)
    parsed.non_utf8_lines = len(bad_utf8)
    if not text or text.isspace():
        parsed.file_problems.append(
            "the file is empty: no records" if not text else "the file holds only blank lines: no records"
        )
        return parsed
    # the plain bytes were already tried; else the text (BOM, end lines dropped), encoded
    fast = None if plain or bad_utf8 or "\r" in text else _jsonl_fast(text.encode("utf-8"))
    records = fast if fast is not None else _jsonl_slow(parsed)
    if bad_utf8:
        fix = pl.DataFrame(
            {"line": list(bad_utf8), "utf8_problem": list(bad_utf8.values())},
            schema={"line": pl.Int64, "utf8_problem": pl.String},
        )
        records = (
            records.join(fix, on="line", how="left", maintain_order="left")
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


def _jsonl_fast(raw: bytes) -> pl.DataFrame | None:
    """The clean-file path: no Python work per line. ``None`` when the file is not clean.

    ``raw`` is the text encoded (the file's bytes when they are exactly its text). An
    empty or blank line needs no search of its own: polars skips it, so the file then
    holds fewer records than lines (each record takes at least a line, and two objects
    on one line are refused), and the careful path reports it.
    """
    if b"\r" in raw:
        return None
    read, n_lines, literal = _read_beside_counts(raw, lambda out: _read_into(io.BytesIO(raw), out))
    if not read:  # polars could not parse it: the careful path says why, line by line
        return None
    frame = read[0]
    if frame.height != n_lines or frame.null_count().sum_horizontal().item() != 0:
        return None
    if not _keys_proved(raw, n_lines, literal):
        return None
    return frame.with_columns(
        line=pl.int_range(1, n_lines + 1, dtype=pl.Int64), problem=pl.lit(None, pl.String)
    ).select(list(RECORD_SCHEMA))


def _jsonl_fast_compact(raw: bytes, classes: Sequence[str]) -> CompactRecords | None:
    """:func:`_jsonl_fast` for the checks, reduced as it is read (V4, V8: memory).

    polars' streaming engine parses the bytes a morsel at a time and reduces each at
    once to the ID, the label's class code and the ``ok`` flag, so that no label string
    outlives its morsel: the memory held is the IDs and two small integers per record.
    The records that are not ``ok`` (an empty ID, a label outside ``classes``) are read
    again, alone, with their line and strings into ``bad``. ``None`` when the file is
    not clean (the careful path reads it).
    """
    if b"\r" in raw:
        return None
    out, n_lines, literal = _read_beside_counts(raw, lambda out: _read_compact_into(raw, tuple(classes), out))
    if not out or out[0].n != n_lines:  # polars could not parse it, or skipped a blank line
        return None
    return out[0] if _keys_proved(raw, n_lines, literal) else None


def _read_beside_counts(raw: bytes, read: Callable[[list[Any]], None]) -> tuple[list[Any], int, bool]:
    """``read`` (a polars read appending its result) on a thread, the byte counts on this one.

    polars parses on its thread (releasing the GIL at once) while this one makes the
    byte counts (Python methods holding it), so the proof costs next to nothing on a
    machine with two cores.

    Returns:
        ``(what read appended, the file's lines, whether the literal counts passed)``.
    """
    n_lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    out: list[Any] = []
    parsing = threading.Thread(target=read, args=(out,), daemon=True)
    parsing.start()
    literal = _literal_counts_ok(raw, n_lines)
    parsing.join()
    return out, n_lines, literal


def _keys_proved(raw: bytes, n_lines: int, literal: bool) -> bool:
    """Every line polars read holds one top-level ``id`` and one ``label``, each a JSON string.

    ``literal``: :func:`_literal_counts_ok` passed (else the regular expressions count any
    spacing). No key may be written with an escape, and no lone surrogate escaped: polars
    reads both otherwise than :mod:`json` (:func:`_escape_traps`).
    """
    return (literal or _regex_counts_ok(raw, n_lines)) and not _escape_traps_in(raw)


def _read_compact_into(raw: bytes, classes: tuple[str, ...], out: list[CompactRecords]) -> None:
    """The reading of :func:`_jsonl_fast_compact`, into ``out``.

    Appends one :class:`CompactRecords`; nothing when polars fails or a value is null.
    """
    k = len(classes)
    ok = (pl.col("id") != "") & (label_code(pl.col("label"), classes) < k)
    try:
        frame = (
            pl.scan_ndjson(raw, schema=_JSON_SCHEMA)
            .select("id", code=label_code(pl.col("label"), classes), ok=ok)
            .collect(engine="streaming")
        )
        if frame.null_count().sum_horizontal().item() != 0:
            return
        bad = pl.DataFrame(schema=RECORD_SCHEMA)
        if not frame["ok"].all():
            bad = (
                pl.scan_ndjson(raw, schema=_JSON_SCHEMA)
                .with_row_index("line", offset=1)
                .filter(~ok)
                .select(pl.col("line").cast(pl.Int64), "id", "label", problem=pl.lit(None, pl.String))
                .collect(engine="streaming")
            )
    except Exception:  # noqa: BLE001 - any polars parse failure sends us to the careful path
        return
    out.append(CompactRecords(frame, bad, classes))


def _read_into(source: io.BytesIO, out: list[pl.DataFrame]) -> None:
    """``pl.read_ndjson`` of ``source`` appended to ``out``; nothing appended when it fails."""
    try:
        out.append(pl.read_ndjson(source, schema=_JSON_SCHEMA))
    except Exception:  # noqa: BLE001 - any polars parse failure sends us to the careful path
        return


def _literal_counts_ok(raw: bytes, n_lines: int) -> bool:
    """The usual spellings (``"id": "`` and ``"id":"``), counted as bytes: cheap.

    Every line has a top-level key (polars decoded a value for it), so exactly
    ``n_lines`` occurrences of ``"id"`` anywhere mean one per line, that key; and as
    many followed by ``: "`` or ``:"`` mean each value is a JSON string.
    """
    for key in (b'"id"', b'"label"'):
        if raw.count(key) != n_lines:
            return False
        strings = raw.count(key + b': "')
        if strings != n_lines and strings + raw.count(key + b':"') != n_lines:
            return False
    return True


def _regex_counts_ok(raw: bytes, n_lines: int) -> bool:
    """Any spacing: one key per line, each followed by a string (polars regex)."""
    counts = _one_text(raw).select(
        pl.col("t").str.count_matches(p).alias(str(i)) for i, p in enumerate((_ID_KEY, _ID_STR, _LABEL_KEY, _LABEL_STR))
    ).row(0)
    return all(c == n_lines for c in counts)


def _escape_traps(text: pl.Expr) -> pl.Expr:
    r"""Whether a text holds a key written with an escape or a lone surrogate's escape.

    Either is read by polars otherwise than by :mod:`json` (a second ``id`` key unseen, a
    number taken for a string, a lone ``\ud800`` read as NUL), so such a line is parsed
    by :func:`classify_json_line`, which says what is wrong (V4).
    """
    pairs = text.str.count_matches(_HIGH_ESC + _LOW_ESC)
    return (text.str.contains(_ESCAPED_KEY) | (text.str.count_matches(_HIGH_ESC) != pairs)
            | (text.str.count_matches(_LOW_ESC) != pairs))


def _escape_traps_in(raw: bytes) -> bool:
    """:func:`_escape_traps` over a whole clean file; no search at all without a backslash."""
    if b"\\" not in raw:
        return False
    return bool(_one_text(raw).select(_escape_traps(pl.col("t"))).item())


def _one_text(raw: bytes) -> pl.DataFrame:
    """The whole file as one string, column ``t``: one polars regular expression over it."""
    return pl.DataFrame({"t": [raw.decode("utf-8")]}, schema={"t": pl.String})


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
    """Parse one JSONL line exactly (V4).

    Returns:
        ``(id, label, problem)``; ``problem`` is ``None`` when the line is a JSON object
        with a string ``id`` and a string ``label``, else it says what is wrong in words.
    """
    if line.strip() == "":
        return None, None, "empty line"
    try:
        check_json_depth(line, None)  # before parsing: no recursion at all (H-39)
    except BadInput:
        return None, None, TOO_DEEP
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
    elif _LONE_SURROGATE.search(rid):
        problems.append(f"ID holds a lone surrogate ({excerpt(json.dumps(rid), 40)}), not text")
        rid = None
    label = obj.get("label")
    if "label" not in obj:
        problems.append("missing field 'label'")
    elif not isinstance(label, str):
        problems.append(
            f"label is a JSON {_json_kind(label)} ({excerpt(json.dumps(label), 40)}), expected a string"
        )
        label = None
    elif _LONE_SURROGATE.search(label):
        problems.append(f"label holds a lone surrogate ({excerpt(json.dumps(label), 40)}), not text")
        label = None
    return rid, label, ("; ".join(problems) or None)


#: A lone half of a surrogate pair, as :mod:`json` decodes ``"\\ud800"``: no text (V4).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _kind(next_char: pl.Expr) -> pl.Expr:
    """The JSON type of a value, from its first character."""
    return (
        pl.when(next_char.str.contains(r"^[-0-9]")).then(pl.lit("number"))
        .when(next_char.is_in(["t", "f"])).then(pl.lit("boolean"))
        .when(next_char == "n").then(pl.lit("null"))
        .when(next_char == "{").then(pl.lit("object"))
        .when(next_char == "[").then(pl.lit("array"))
        .otherwise(pl.lit("value"))
    )


def _field(name: str, word: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """For field ``name``: (value kept, problem, consistent).

    Built from the regex facts and the value polars decoded (which turns numbers and
    booleans into strings).
    """
    keys, nxt, dec = pl.col(f"{name}_keys"), pl.col(f"{name}_next"), pl.col(f"{name}_dec")
    is_ok = (keys == 1) & (nxt == '"') & dec.is_not_null()
    missing = (keys == 0) & dec.is_null()
    wrong = (keys == 1) & nxt.is_not_null() & (nxt != '"') & (dec.is_not_null() | (nxt == "n"))
    shown = (
        pl.when(dec.is_null()).then(pl.lit("null"))
        .when(dec.str.len_chars() > 40).then(dec.str.slice(0, 40) + "…")
        .otherwise(dec)
    )
    problem = (
        pl.when(missing).then(pl.lit(f"missing field '{name}'"))
        .when(wrong).then(pl.format(f"{word} is a JSON {{}} ({{}}), expected a string", _kind(nxt), shown))
    )
    value = pl.when(is_ok).then(dec)
    return value, problem, (is_ok | missing | wrong).fill_null(False)


def _jsonl_slow(parsed: ParsedRecords) -> pl.DataFrame:
    """The careful path, for a file the fast path refused.

    polars reads and classifies the lines shaped like one object; :mod:`json` parses
    the odd ones, one by one (at most :data:`EXACT_LIMIT`).
    """
    lines = split_lines(parsed.text)
    parsed.lines = lines
    txt = pl.col("text")
    frame = (
        pl.DataFrame({"text": lines}, schema={"text": pl.String})
        .with_row_index("line", offset=1)
        .with_columns(pl.col("line").cast(pl.Int64))
        .with_columns(
            blank=txt.str.strip_chars() == "",
            id_keys=txt.str.count_matches(_ID_KEY),
            label_keys=txt.str.count_matches(_LABEL_KEY),
            id_next=txt.str.extract(r'"id"\s*:\s*(\S)', 1),
            label_next=txt.str.extract(r'"label"\s*:\s*(\S)', 1),
        )
        .with_columns(
            shaped=~pl.col("blank")
            & txt.str.strip_chars().str.starts_with("{")
            & txt.str.strip_chars().str.ends_with("}")
            & (pl.col("id_keys") <= 1)
            & (pl.col("label_keys") <= 1)
            & ~txt.str.contains("\ufffd", literal=True)
            & ~(txt.str.contains("\\", literal=True) & _escape_traps(txt))
        )
    )
    parts: list[pl.DataFrame] = [
        frame.filter(pl.col("blank")).select(
            "line", id=pl.lit(None, pl.String), label=pl.lit(None, pl.String), problem=pl.lit("empty line")
        )
    ]
    shaped = frame.filter(pl.col("shaped"))
    decoded, leftovers = _bisect_read(shaped.select("line", "text"))
    odd = frame.filter(~pl.col("blank") & ~pl.col("shaped"))["line"].to_list() + leftovers
    if decoded.height:
        id_val, id_prob, id_ok = _field("id", "ID")
        label_val, label_prob, label_ok = _field("label", "label")
        classified = shaped.join(decoded, on="line", how="inner").select(
            "line",
            id=id_val,
            label=label_val,
            problem=pl.concat_str([id_prob, label_prob], separator="; ", ignore_nulls=True),
            consistent=id_ok & label_ok,
        )
        odd += classified.filter(~pl.col("consistent"))["line"].to_list()
        parts.append(
            classified.filter(pl.col("consistent"))
            .with_columns(problem=pl.when(pl.col("problem") != "").then(pl.col("problem")))
            .select(list(RECORD_SCHEMA))
        )
    if odd:
        odd.sort()
        exact, rest = odd[:EXACT_LIMIT], odd[EXACT_LIMIT:]
        rows = [classify_json_line(lines[i - 1]) for i in exact]
        reason = f"not a well-formed record (more than {EXACT_LIMIT:,} such lines; not examined one by one)"
        parts.append(
            pl.DataFrame(
                {
                    "line": exact + rest,
                    "id": [r[0] for r in rows] + [None] * len(rest),
                    "label": [r[1] for r in rows] + [None] * len(rest),
                    "problem": [r[2] for r in rows] + [reason] * len(rest),
                },
                schema=RECORD_SCHEMA,
            )
        )
    return pl.concat([p.select(list(RECORD_SCHEMA)) for p in parts]).sort("line")


def _bisect_read(shaped: pl.DataFrame) -> tuple[pl.DataFrame, list[int]]:
    """Read the lines of ``shaped`` (line, text) with polars, in blocks.

    A block that fails is halved until it is small, then its lines are returned as
    leftovers.

    Returns:
        ``(decoded, leftovers)``: ``decoded`` has ``line``, ``id_dec``, ``label_dec``.
    """
    parts: list[pl.DataFrame] = []
    leftovers: list[int] = []
    stack = [(0, shaped.height)]
    while stack:
        lo, n = stack.pop()
        if n == 0:
            continue
        block = shaped.slice(lo, n)
        blob = block["text"].str.join("\n").item().encode("utf-8")
        try:
            got = pl.read_ndjson(io.BytesIO(blob), schema=_JSON_SCHEMA)
            ok = got.height == n
        except Exception:  # noqa: BLE001 - a bad line somewhere in the block
            ok = False
        if ok:
            parts.append(
                got.select(
                    line=block["line"], id_dec=pl.col("id"), label_dec=pl.col("label")
                )
            )
        elif n <= _LEAF:
            leftovers.extend(block["line"].to_list())
        else:
            half = n // 2
            stack.append((lo + half, n - half))
            stack.append((lo, half))
    if not parts:
        return pl.DataFrame(schema={"line": pl.Int64, "id_dec": pl.String, "label_dec": pl.String}), leftovers
    return pl.concat(parts), leftovers
