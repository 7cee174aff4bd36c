"""The one reader of a session's ``journal.jsonl``: typed records, with their line numbers.

Why it exists: every reader of the journal (recovery, the summary, the report, the
evidence of the checklist, ``pull``, ``status``, the TUI) got dicts and compared
``rec.get("event")`` strings by hand; here a line becomes a typed record
(:mod:`gpusession.core.events`) or, when it does not read, one note "unreadable journal
line N: why" -- never an exception (S7: a damaged journal still opens). Who calls it:
:mod:`gpusession.core.folder.journal` (which re-exports :func:`read_records`), the
session, recovery and the retrieval modules; ``status`` and ``Session.needs_recovery``
use the cheap look of :mod:`gpusession.core.events.scan` (no record class imported, so
that ``status --format tmux`` stays fast), re-exported here.

What reads: a JSON object per line, at most :data:`MAX_LINE_BYTES` bytes and
:data:`MAX_DEPTH` levels deep. A record of a known event whose fields have the wrong
type (``run_key`` an object, ``run_index`` ``"nine"`` or past 64 bits, ``experiment_id``
a list) is unreadable; an unknown event (a free-form record of the first release, or of
a newer one) reads back as a :class:`~gpusession.core.events.GenericRecord` with every
field. Python's JSON parser raises ``RecursionError`` on very deep nesting and
``ValueError`` on an integer of more than 4,300 digits: both are caught here, line by
line. A blank line is skipped without a note.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

from gpusession.core.events.base import GenericRecord
from gpusession.core.events.registry import event_types
from gpusession.core.events.scan import (  # the cheap look, re-exported
    _INT_MAX,
    _INT_MIN,
    CUT_KIND,
    INCIDENT,
    INVOCATION_ENDS,
    INVOCATION_START,
    MAX_LINE_BYTES,
    RUN_CLOSES,
    RUN_OPENS,
    UNREADABLE_KIND,
    OpenWork,
    open_work,
)
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import MAX_DEPTH as NESTING_MAX_DEPTH
from gpusession.core.files.nesting import TOO_DEEP, check_json_depth, depth_over
from gpusession.core.files.textio import read_plain

if TYPE_CHECKING:
    from gpusession.core.events.base import Event

#: Deepest nesting of objects and lists read (a typed record nests 3 levels, an
#: experiment's settings 5): the bound of every hand-editable file (H-39).
MAX_DEPTH = NESTING_MAX_DEPTH


@dataclass(frozen=True)
class Unreadable:
    """A journal line that does not read as a record (S7: noted, never raised).

    Attributes:
        line: its 1-based line number in ``journal.jsonl``.
        reason: why, in words ("not JSON", "field run_index: expected an integer, got str").
    """

    line: int
    reason: str

    @property
    def note(self) -> str:
        """``"unreadable journal line 7: not JSON"``: the words shown to people."""
        return f"unreadable journal line {self.line}: {self.reason}"


@dataclass(frozen=True)
class JournalRead:
    """A whole journal read once.

    Attributes:
        records: the typed records, oldest first.
        lines: the 1-based line number of each record (same order as ``records``).
        unreadable: the lines that did not read, in file order.
    """

    records: list[Event] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        """One "unreadable journal line N: why" per line that did not read."""
        return [u.note for u in self.unreadable]


def _type_words(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer out of range" if len(str(abs(value))) > 18 else "an integer"
    return {str: "a string", float: "a number", list: "a list", dict: "an object",
            type(None): "null"}.get(type(value), type(value).__name__)


def _fits(value: Any, hint: Any) -> bool:
    """Whether the JSON value ``value`` fits the field annotation ``hint``."""
    return _checker(hint)(value)


#: The check of each annotation, worked out once: the journal's reader checks every field
#: of every record, 39,000 records in a month-long session (A5).
_CHECKERS: dict[Any, Callable[[Any], bool]] = {}


def _checker(hint: Any) -> Callable[[Any], bool]:
    """The check of one annotation (:func:`_fits`), made on first use and kept."""
    try:
        return _CHECKERS[hint]
    except KeyError:
        check = _CHECKERS[hint] = _compile(hint)
        return check
    except TypeError:  # an unhashable annotation: made each time
        return _compile(hint)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and _INT_MIN <= value <= _INT_MAX


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and (
        not isinstance(value, int) or _INT_MIN <= value <= _INT_MAX)


def _compile(hint: Any) -> Callable[[Any], bool]:
    """Whether a JSON value fits ``hint``: ``Any``, unions, ``None``, bool, int, float, str, lists, dicts, classes."""
    if hint is Any:
        return lambda value: True
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        args = get_args(hint)
        if len(args) == 2 and type(None) in args:  # ``X | None``, most fields
            other = _checker(next(a for a in args if a is not type(None)))
            return lambda value: value is None or other(value)
        parts = tuple(_checker(arg) for arg in args)

        def any_part(value: Any) -> bool:
            for part in parts:
                if part(value):
                    return True
            return False

        return any_part
    if hint is type(None):
        return lambda value: value is None
    if hint is bool:
        return lambda value: isinstance(value, bool)
    if hint is int:
        return _is_int
    if hint is float:
        return _is_number
    if hint is str:
        return lambda value: isinstance(value, str)
    if origin is list:
        (item,) = get_args(hint) or (Any,)
        each = _checker(item)
        return lambda value: isinstance(value, list) and all(each(v) for v in value)
    if origin is dict:
        key, item = get_args(hint) or (Any, Any)
        key_fits, item_fits = _checker(key), _checker(item)
        return lambda value: isinstance(value, dict) and all(
            key_fits(k) and item_fits(v) for k, v in value.items())
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: True


_EXPECTED = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type[Event]) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = {k: v for k, v in get_type_hints(cls).items() if k not in ("v", "EVENT", "CHANNEL")}
    return _HINTS[cls]


#: Each record class's fields with their checks (:func:`_checker`), worked out once.
_CHECKS: dict[type, list[tuple[str, Any, Callable[[Any], bool]]]] = {}


def _misfit(cls: type[Event], data: dict[str, Any]) -> str | None:
    """The first field of ``data`` whose value does not fit ``cls``, in words; ``None`` if all fit."""
    checks = _CHECKS.get(cls)
    if checks is None:
        checks = _CHECKS[cls] = [(name, hint, _checker(hint)) for name, hint in _hints(cls).items()]
    for name, hint, fits in checks:
        if name in data and not fits(data[name]):
            simple = [a for a in get_args(hint) if a is not type(None)] or [hint]
            want = _EXPECTED.get(simple[0], str(hint).replace("typing.", "")) if len(simple) == 1 else str(hint)
            return f"field {name}: expected {want}, got {_type_words(data[name])}"
    return None


def _parse(text: str | bytes, line: int) -> dict[str, Any] | Unreadable | None:
    """The JSON object of one line, bounded in size and depth; ``None`` when blank."""
    if isinstance(text, bytes):
        if len(text) > MAX_LINE_BYTES:
            return Unreadable(line, f"longer than {MAX_LINE_BYTES} bytes")
        text = text.decode("utf-8", errors="replace")
    elif len(text) > MAX_LINE_BYTES:
        return Unreadable(line, f"longer than {MAX_LINE_BYTES} characters")
    if not text.strip():
        return None

    try:
        check_json_depth(text, None, line)  # before parsing: no recursion at all (H-39)
        data = json.loads(text)
    except (RecursionError, BadInput):
        return Unreadable(line, TOO_DEEP)
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
        why = "an integer too long to read" if "integer string conversion" in str(exc) else "not JSON"
        return Unreadable(line, why)
    if not isinstance(data, dict):
        return Unreadable(line, f"expected a JSON object, got {_type_words(data)}")
    if depth_over(data, MAX_DEPTH):
        return Unreadable(line, f"nested too deep (past {MAX_DEPTH} levels)")
    return data


def _typed(data: dict[str, Any], line: int) -> Event | Unreadable:
    """The typed record of one parsed line, or why its fields do not fit."""
    name = data.get("event")
    if not isinstance(name, str):
        return Unreadable(line, f"field event: expected a string, got {_type_words(name)}")
    cls = event_types("journal").get(name)
    if cls is None:
        return GenericRecord.from_json(data)  # a free-form record: every field kept
    misfit = _misfit(cls, data)
    if misfit is not None:
        return Unreadable(line, f"{name} record, {misfit}")
    try:
        return cls.from_json(data)
    except (TypeError, ValueError) as exc:
        return Unreadable(line, f"{name} record does not read ({exc})")


def decode_line(text: str | bytes, line: int) -> Event | Unreadable | None:
    """One journal line as a typed record, an :class:`Unreadable`, or ``None`` when blank.

    Args:
        text: the line, without or with its end of line.
        line: its 1-based number (for the note).

    Returns:
        The record (the journal channel's type for its ``event``, a
        :class:`~gpusession.core.events.GenericRecord` for an unknown one), or why it
        does not read. Never raises on content.
    """
    data = _parse(text, line)
    return data if data is None or isinstance(data, Unreadable) else _typed(data, line)


def _raw(path: Path) -> bytes:

    try:
        return read_plain(path)  # never waits on a FIFO
    except FileNotFoundError:
        return b""


def iter_journal(path: Path) -> Iterator[tuple[int, Event | Unreadable]]:
    """``(line number, record or Unreadable)`` for each non-blank line of the journal.

    A missing journal yields nothing.

    Raises:
        OSError: the journal exists and cannot be read.
        BadInput: it is a folder, FIFO, device or socket, not a journal.
    """
    yield from _decode(_raw(Path(path)))


def _decode(raw: bytes) -> Iterator[tuple[int, Event | Unreadable]]:
    """:func:`iter_journal` of the journal's bytes ``raw``."""
    return decode_lines(raw)


def decode_lines(raw: bytes, first: int = 1) -> Iterator[tuple[int, Event | Unreadable]]:
    """``(line number, record or Unreadable)`` of each non-blank line of ``raw``, numbered from ``first``.

    ``raw`` is the whole journal (``first`` 1) or the bytes after a line end a saved fold
    reached (``first``: the number of the line that follows it, A5). A last line without
    an end of line that does not read is said cut short (a crash, a full disk).
    """
    lines = raw.split(b"\n")
    last = first + len(lines) - 1
    for number, text in enumerate(lines, start=first):
        item = decode_line(text, number)
        if isinstance(item, Unreadable) and number == last:  # no end of line: cut
            item = Unreadable(number, f"cut short, no end of line (crash or full disk): {item.reason}")
        if item is not None:
            yield number, item


#: The last journal decoded: ``{"last": (path, its bytes, what they read as)}``. The report
#: reads the journal for each of its sections; the same bytes are decoded once.
_LAST: dict[str, tuple[Path, bytes, JournalRead]] = {}


def read_journal(path: Path) -> JournalRead:
    """The whole journal at ``path``: typed records, their line numbers, the unreadable lines (S7).

    A missing journal reads as empty. The file is read each time; bytes equal to the last
    journal's are not decoded again (the lists returned are new, the records the same
    frozen objects). Same errors as :func:`iter_journal`.
    """
    path = Path(path)
    raw = _raw(path)
    last = _LAST.get("last")
    if last is not None and last[0] == path and last[1] == raw:
        got = last[2]
    else:
        got = JournalRead()
        for number, item in _decode(raw):
            if isinstance(item, Unreadable):
                got.unreadable.append(item)
            else:
                got.records.append(item)
                got.lines.append(number)
        _LAST["last"] = (path, raw, got)
    return JournalRead(list(got.records), list(got.lines), list(got.unreadable))


def read_records(path: Path) -> list[Event]:
    """The journal's typed records, oldest first; unreadable lines left out (:func:`read_journal`)."""
    return read_journal(path).records


def read_records_naming(path: Path, needles: Iterable[str]) -> list[Event]:
    """The typed records of the journal's lines that hold one of ``needles`` as a JSON string, oldest first.

    A run boundary needs the records of one experiment (its id) or of a few events
    (``"worker_started"``); decoding every line of a month's journal grew with the
    session (A5), so the lines are picked by their bytes first and only those decoded.
    A line not picked is never judged (an unreadable one is left out as in
    :func:`read_records`).

    Args:
        path: the journal.
        needles: experiment ids or event names, each matched as a quoted JSON string
            (``"sweep"`` never matches the run key ``"sweep:warm:b1:2"``).

    Returns:
        Every readable record among the lines picked: a superset of those whose fields
        equal a needle, to be filtered by the caller.

    Raises:
        OSError, BadInput: as :func:`iter_journal`.
    """
    return records_naming(_raw(Path(path)), needles)


def records_naming(raw: bytes, needles: Iterable[str], first: int = 1) -> list[Event]:
    """:func:`read_records_naming` of the journal bytes ``raw``, its first line numbered ``first``.

    ``raw`` is the whole journal or the bytes after a line end a saved check reached
    (:mod:`gpusession.core.folder.leftover_check`, A5); never raises on content.
    """
    picks = {form.encode("utf-8") for n in needles
             for form in (json.dumps(n), json.dumps(n, ensure_ascii=False))}
    starts: set[int] = set()  # each line holding a pick, found by a search of the bytes, not a split
    for pick in picks:
        at = raw.find(pick)
        while at >= 0:
            starts.add(raw.rfind(b"\n", 0, at) + 1)
            end = raw.find(b"\n", at)
            at = raw.find(pick, end) if end >= 0 else -1
    out: list[Event] = []
    number, counted = first, 0
    for start in sorted(starts):
        number += raw.count(b"\n", counted, start)
        counted = start
        end = raw.find(b"\n", start)
        item = decode_line(raw[start:end if end >= 0 else len(raw)], number)
        if item is not None and not isinstance(item, Unreadable):
            out.append(item)
    return out


def read_objects(path: Path) -> list[dict[str, Any]]:
    """The JSON object of every line :func:`read_journal` reads, as written (every key kept).

    For the callers that still take dicts; an unreadable line is left out as there.
    Same errors as :func:`iter_journal`.
    """
    out: list[dict[str, Any]] = []
    for number, text in enumerate(_raw(Path(path)).split(b"\n"), start=1):
        data = _parse(text, number)
        if isinstance(data, dict) and not isinstance(_typed(data, number), Unreadable):
            out.append(data)
    return out


_SALVAGE_STR = re.compile(r'"(at|event|run_key|experiment_id|variant_id|phase)": "([^"\\]*)"')
_SALVAGE_INDEX = re.compile(r'"run_index": (\d+)[,}]')


def cut_run_start(text: str) -> dict[str, Any]:
    """What a journal line cut by a crash still says, when it starts a run (S7).

    A cut ``run_started`` / ``load_started`` line still names its run, so recovery can
    record the run in flight like any other.

    Args:
        text: the cut line (not JSON).

    Returns:
        The string fields found (``at``, ``event``, ``run_key``, ``experiment_id``,
        ``variant_id``, ``phase``) and ``run_index``; ``{}`` unless it starts a run and
        names its key.
    """
    fields: dict[str, Any] = dict(_SALVAGE_STR.findall(text))
    m = _SALVAGE_INDEX.search(text)
    if m and len(m.group(1)) <= 18:
        fields["run_index"] = int(m.group(1))
    if fields.get("event") not in RUN_OPENS or "run_key" not in fields:
        return {}
    return fields


__all__ = [
    "CUT_KIND", "INCIDENT", "INVOCATION_ENDS", "INVOCATION_START", "MAX_DEPTH", "MAX_LINE_BYTES", "RUN_CLOSES",
    "RUN_OPENS", "UNREADABLE_KIND", "JournalRead", "OpenWork", "Unreadable", "cut_run_start", "decode_line",
    "decode_lines", "iter_journal",
    "open_work", "read_objects",
    "read_journal", "read_records", "read_records_naming", "records_naming",
]
