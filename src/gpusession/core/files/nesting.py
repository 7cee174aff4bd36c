"""Depth, size and field-length bounds of the TOML and JSON a person may edit by hand (H-39, H-48, S7).

Python's parsers recurse: ``tomllib`` raises ``RecursionError`` on a value nested a few
hundred levels deep, the JSON parser at about a thousand, and everything that walks a
parsed document after them (the writer, the checks, the display) recurses too. So every
reader of a hand-editable file -- the session's TOML files, ``summary.json``, the journal,
the host check -- goes through :func:`loads_toml` or :func:`loads_json`: the text is
scanned for its bracket depth *before* it is parsed (no recursion at all: strings and
comments skipped), refused past :data:`MAX_DEPTH` levels in one line naming the file and
the line, and the parsed document is checked again without recursion (dotted TOML keys
``a.b.c…`` nest without a bracket). ``RecursionError`` never escapes.

Size: a hand-editable TOML file holds at most :data:`MAX_TOML_BYTES` (1 MiB), refused
before a byte of it is parsed (:func:`check_toml_size`); a 50 MB ``host-check.toml`` once
took a minute and 567 MB to be refused later. Within it, every text field (value or key,
at any depth) holds at most the notes' bound, :data:`TEXT_MAX_BYTES` (4 KiB;
:data:`OBSERVED_MAX_BYTES` under ``environment``/``evidence``), checked by the shared
reader (:func:`loads_toml` for :func:`gpusession.core.files.tomlread.read_toml` and
:func:`read_toml_lenient`) so that no reader of a hand-editable file is left out: a
900 KB ``criteria`` in ``approvals.toml`` once took 4.5 s to print. Archives a program
writes (validation reports, which quote the corpus) are read with ``field_bound=False``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.fieldbound import (
    OBSERVED_KEYS,
    OBSERVED_MAX_BYTES,
    TEXT_MAX_BYTES,
    check_field_lengths,
)
from gpusession.core.files.textio import read_plain

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: The deepest nesting of lists/tables/objects accepted in a hand-editable file: 64
#: levels (gpusession itself writes at most four).
MAX_DEPTH = 64
#: The largest hand-editable TOML file accepted, in bytes: 1 MiB (gpusession writes a
#: few KiB; every text field is bounded by the notes' length bound, far below this).
MAX_TOML_BYTES = 1024 * 1024
#: Files that grow with the work, with their own bound (H-56): ``approvals.toml`` keeps
#: one decision per deliverable, about 190 bytes each; 64 MiB holds over 300,000, above
#: the 200,000 files a deliverables folder is walked to (an ordinary job of generated
#: images has 20,000).
MAX_TOML_BYTES_BY_NAME = {"approvals.toml": 64 * 1024 * 1024}


def toml_bound(path: Path | str | None) -> int:
    """The most bytes the TOML file at ``path`` may hold (:data:`MAX_TOML_BYTES`, or its own bound)."""
    return MAX_TOML_BYTES_BY_NAME.get(Path(path).name, MAX_TOML_BYTES) if path is not None else MAX_TOML_BYTES

TOO_DEEP = f"nested too deep (past {MAX_DEPTH} levels)"


_TOML_TOKEN = re.compile(r'"""|\'\'\'|["\'#\[\]{}\n]')
# The rest of a string after its opening quote, matched at once (the unrolled loop
# ``normal* (escape normal*)*``): no Python loop per escape.
_TOML_END = {
    '"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*(?:"|\n|$)', re.S),
    '"""': re.compile(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|$)', re.S),
    "'": re.compile(r"[^'\n]*(?:'|\n|$)"),
    "'''": re.compile(r"[^']*(?:'(?!'')[^']*)*(?:'''|$)"),
}
_JSON_TOKEN = re.compile(r'["\[\]{}\n]')
_JSON_END = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*(?:"|$)', re.S)


def too_deep(path: Path | str | None, line: int | None = None) -> BadInput:
    """The one refusal of a document nested past :data:`MAX_DEPTH` (``file:line: nested too deep…``)."""
    return BadInput(f"{TOO_DEEP}; nothing was read from it", path=path, line=line)


def check_toml_size(size_bytes: int, path: Path | str | None) -> None:
    """Refuse a hand-editable TOML file larger than :data:`MAX_TOML_BYTES` (H-48).

    Raises:
        BadInput: ``PATH: N bytes, larger than the 1 MiB a gpusession TOML file may hold``.
    """
    bound = toml_bound(path)
    if size_bytes > bound:
        raise BadInput(
            f"{size_bytes:,} bytes, larger than the {bound // (1024 * 1024)} MiB "
            f"({bound:,} bytes) a gpusession TOML file may hold; nothing was read from it",
            path=path)


def _scan(text: str, token: re.Pattern[str], ends: dict[str, re.Pattern[str]],
          comment: bool) -> int | None:
    """The 1-based line where the bracket depth first passes :data:`MAX_DEPTH`, else ``None``.

    Iterative over the tokens of ``text``: quoted strings (with their escapes) and, for
    TOML, comments are skipped, so a ``[`` inside a string does not count.
    """
    depth, pos, n = 0, 0, len(text)
    while pos < n:
        m = token.search(text, pos)
        if m is None:
            return None
        tok, pos = m.group(), m.end()
        if tok in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return text.count("\n", 0, m.start()) + 1
        elif tok in "]}":
            depth = max(0, depth - 1)
        elif tok == "#" and comment:
            nl = text.find("\n", pos)
            pos = n if nl < 0 else nl
        elif tok in ends:
            e = ends[tok].match(text, pos)
            pos = e.end() if e else n  # an unterminated string: the parser words it
    return None


def depth_over(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists/dicts more than ``limit`` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children)
    return False


def _bracket_count_small(text: str) -> bool:
    return text.count("[") + text.count("{") <= MAX_DEPTH


def check_toml_depth(text: str, path: Path | str | None) -> None:
    """Refuse TOML text whose brackets nest past :data:`MAX_DEPTH`, before parsing it.

    Raises:
        BadInput: :func:`too_deep`, naming the line where the limit is passed.
    """
    if not _bracket_count_small(text) and (line := _scan(text, _TOML_TOKEN, _TOML_END, True)):
        raise too_deep(path, line)


def check_json_depth(text: str, path: Path | str | None, line: int | None = None) -> None:
    """Refuse JSON text whose brackets nest past :data:`MAX_DEPTH`, before parsing it.

    Args:
        text: the JSON text (one document, or one JSONL record).
        path: the file, named in the refusal.
        line: the line of ``text`` in its file (a JSONL record), else the line is counted.

    Raises:
        BadInput: :func:`too_deep`.
    """
    if _bracket_count_small(text):
        return
    at = _scan(text, _JSON_TOKEN, {'"': _JSON_END}, False)
    if at is not None:
        raise too_deep(path, line if line is not None else at)


def read_toml_text(path: Path) -> str:
    """The text of a hand-editable TOML file, size-bounded (H-48): one byte past the bound is read, never more.

    Raises:
        OSError: missing or unreadable.
        UnicodeDecodeError: not UTF-8 (a lenient caller ignores the file; the strict
            reader words it).
        BadInput: larger than :data:`MAX_TOML_BYTES` (:func:`check_toml_size`), or not a
            plain file.
    """
    bound = toml_bound(path)
    raw = read_plain(path, max_bytes=bound + 1)
    if len(raw) > bound:
        try:
            size = max(Path(path).stat().st_size, len(raw))
        except OSError:
            size = len(raw)
        check_toml_size(size, path)
    return raw.decode("utf-8").lstrip("\ufeff")


def read_toml_lenient(path: Path) -> dict[str, Any] | None:
    """A TOML file read for a display that goes on without it: ``None`` when it is unusable.

    Missing, unreadable, not UTF-8, not TOML, past the size bound, the depth bound or a
    field's length bound (H-48): ``None``, never an exception (S7: a cache or a side file
    never stops a command).
    """
    try:
        return loads_toml(read_toml_text(path), path)
    except (OSError, ValueError, BadInput):  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        return None


def loads_toml(text: str, path: Path | str | None, *, field_bound: bool = True) -> dict[str, Any]:
    """``tomllib.loads`` with the depth bound (H-39) and the field-length bound (H-48).

    Never a ``RecursionError``; never a text field past the notes' bound handed to a
    display (:func:`check_field_lengths`).

    Args:
        text: the TOML text.
        path: the file, named in a refusal.
        field_bound: hold every text field to :data:`TEXT_MAX_BYTES`; ``False`` only for
            an archive a program wrote (a validation report quotes the corpus, e.g. a
            thousand class names on one line).

    Raises:
        tomllib.TOMLDecodeError: a syntax error (the caller words it, with its line).
        BadInput: nested past :data:`MAX_DEPTH` (:func:`too_deep`), an integer too long
            to convert, or a text field past its length bound.
    """
    check_toml_depth(text, path)
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise too_deep(path) from None
    except tomllib.TOMLDecodeError:
        raise
    except ValueError:  # an integer of more than 4,300 digits (H-41): Python will not convert it
        raise BadInput("a number too long to read (more than 4,300 digits); nothing was read "
                       "from it", path=path) from None
    if depth_over(doc):
        raise too_deep(path)
    # a field holds at most the text's length: a text of 1 KiB cannot hold 4 KiB of UTF-8
    if field_bound and len(text) * 4 > TEXT_MAX_BYTES:
        check_field_lengths(doc, path)
    return doc


def loads_json(text: str | bytes, path: Path | str | None, line: int | None = None) -> Any:
    """``json.loads`` with the depth bound (H-39): never a ``RecursionError``.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``; the caller words it).
        BadInput: nested past :data:`MAX_DEPTH` (:func:`too_deep`).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_json_depth(text, path, line)
    try:
        doc = json.loads(text)
    except RecursionError:
        raise too_deep(path, line) from None
    if depth_over(doc):
        raise too_deep(path, line)
    return doc


__all__ = ["MAX_DEPTH", "MAX_TOML_BYTES", "MAX_TOML_BYTES_BY_NAME", "toml_bound", "OBSERVED_KEYS", "OBSERVED_MAX_BYTES", "TEXT_MAX_BYTES", "TOO_DEEP",
           "check_field_lengths", "check_json_depth", "check_toml_depth", "check_toml_size", "depth_over",
           "loads_json", "loads_toml", "read_toml_lenient", "read_toml_text", "too_deep"]
