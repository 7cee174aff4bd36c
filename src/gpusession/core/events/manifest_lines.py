"""The journal's ``manifest_written`` records, read without the record classes (S4, A5).

Why it exists: a pull looks in the copied journal for the newest manifest the server
wrote; the typed reader (:mod:`gpusession.core.events.reading`) loads the registry of every
event class for that one kind of line, a fixed cost of every re-pull. Here only the
lines that can record a manifest (its name, or a JSON escape that could spell it) are
parsed, with the standard library, bounded as the typed reader bounds a line, and kept
only when every field fits :class:`~gpusession.core.events.actions.ManifestWrittenRecord`
as the typed reader checks it: the two agree (``tests/core/test_manifest_lines.py``).
Who calls it: :func:`gpusession.core.copyhome.pull.manifest_records`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gpusession.core.events.scan import MAX_LINE_BYTES
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import MAX_DEPTH, check_json_depth, depth_over

#: The record's name (``ManifestWrittenRecord.EVENT``).
MANIFEST_WRITTEN = "manifest_written"
#: The bytes every line recording a manifest holds, or a line whose JSON escapes a
#: character (``\\u006d``…): only those lines are parsed.
_LINE_MARKS = (MANIFEST_WRITTEN.encode(), b"\\u")
#: The record's fields and their JSON types, as ``ManifestWrittenRecord`` declares them
#: (optional: a string or an integer; ``v`` that is no integer reads as 0 there, never refused).
_TEXT_FIELDS = ("at", "path", "deliverables", "copy_in_deliverables")
_INT_FIELDS = ("files", "total_bytes", "skipped")
#: Integer fields hold 64-bit signed values (the typed reader's bound).
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class ManifestLine:
    """One ``manifest_written`` record of the journal: what a pull uses of it.

    Attributes:
        line: its 1-based line number in the journal.
        at: when it was written (ISO 8601 text, as recorded), ``None`` when absent.
        path: the manifest's path on the server, ``None`` when absent.
        deliverables: the deliverables folder it hashed, ``None`` when absent.
        copy_in_deliverables: the manifest's copy in that folder, ``None`` when none.
    """

    line: int
    at: str | None
    path: str | None
    deliverables: str | None
    copy_in_deliverables: str | None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and _INT_MIN <= value <= _INT_MAX


def _fits(data: dict[str, Any]) -> bool:
    """Whether the record's fields fit ``ManifestWrittenRecord`` (the typed reader's check)."""
    if any(data.get(k) is not None and not isinstance(data[k], str) for k in _TEXT_FIELDS):
        return False
    return not any(data.get(k) is not None and not _is_int(data[k]) for k in _INT_FIELDS)


def _record(text: bytes, number: int) -> ManifestLine | None:
    """The record of one line when it is a ``manifest_written`` whose fields fit; else ``None``."""
    if len(text) > MAX_LINE_BYTES:
        return None
    decoded = text.decode("utf-8", errors="replace")
    try:
        check_json_depth(decoded, None, number)  # before parsing: no recursion (H-39)
        data = json.loads(decoded)
    except (RecursionError, BadInput, ValueError):
        return None
    if not isinstance(data, dict) or data.get("event") != MANIFEST_WRITTEN or depth_over(data, MAX_DEPTH):
        return None
    if not _fits(data):
        return None
    return ManifestLine(number, data.get("at"), data.get("path"), data.get("deliverables"),
                        data.get("copy_in_deliverables"))


def manifest_lines(raw: bytes) -> list[ManifestLine]:
    """The ``manifest_written`` records of the journal's bytes ``raw``, oldest first.

    Why: a month's journal holds tens of thousands of lines and a handful of manifests;
    the lines holding a mark are found by a bytes search, and only they are parsed.
    Never raises on content: a line that does not read, or whose fields do not fit,
    counts for nothing (as the typed reader makes it an unreadable line).
    """
    starts: set[int] = set()
    for mark in _LINE_MARKS:
        at = raw.find(mark)
        while at >= 0:
            start = raw.rfind(b"\n", 0, at) + 1
            starts.add(start)
            end = raw.find(b"\n", at)
            at = raw.find(mark, end) if end >= 0 else -1
    out: list[ManifestLine] = []
    number, counted = 1, 0
    for start in sorted(starts):
        number += raw.count(b"\n", counted, start)
        counted = start
        end = raw.find(b"\n", start)
        rec = _record(raw[start:] if end < 0 else raw[start:end], number)
        if rec is not None:
            out.append(rec)
    return out


__all__ = ["MANIFEST_WRITTEN", "ManifestLine", "manifest_lines"]
