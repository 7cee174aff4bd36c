"""The journal's fold kept at an offset, read and moved by the bytes appended since (S7, A5).

Source: A5 (a refresh costs the new work, not the session), S7, H-47.
Why: ``status`` (tmux, every few seconds) and opening a session
(:meth:`gpusession.core.folder.session.Session.needs_recovery`) must know what the journal
left open -- runs, invocations, unsaid unreadable lines -- and re-reading a 15 MB journal
each time made both O(session). One fold, one state file, for both.

``journal-state.json`` (:data:`gpusession.core.folder.caches.JOURNAL_STATE`, sealed) holds
the fold of :class:`gpusession.core.events.scan.JournalFold` at a line end (``offset``,
``lines``, the open ``run_keys``, the ``unended`` invocations, the unreadable ``bad`` lines
and the ``said`` ones, the ``last`` experiment started), the journal's ``stat`` signature
then and the CRC-32 of its first and last :data:`JOURNAL_WINDOW_BYTES` before the offset.
While they hold, only the bytes after the offset are read and folded; otherwise the whole
journal is folded once and the state written again. Standard library only (tmux's call).
"""

from __future__ import annotations

import binascii
import os
import stat
from pathlib import Path
from typing import Any

from gpusession.core.events.scan import JournalFold, OpenWork, split_at_last_line_end
from gpusession.core.files.names import JOURNAL
from gpusession.core.folder.caches import JOURNAL_STATE, read_state, write_state
from gpusession.core.records.csvkeys import UNFINISHED_KIND

#: Bytes just before the saved offset (and at the journal's start) whose CRC-32 the state
#: keeps: a line inserted or removed before the offset shifts them, so the fold is redone.
JOURNAL_WINDOW_BYTES = 4096
#: New journal bytes folded before the state is written again: a refresh reads at most
#: this much besides the two windows, and tmux's call rarely writes.
JOURNAL_REWRITE_BYTES = 64 * 1024
#: Bytes read per ``pread`` (memory stays flat on a long journal).
_CHUNK_BYTES = 1024 * 1024
#: The largest count the state may hold (lines, bytes): more is a hand edit, refolded.
_COUNT_MAX = 10**15


def read_journal_span(fd: int, start: int, length: int) -> bytes:
    """``length`` bytes of the open journal ``fd`` from ``start`` (fewer at its end).

    The one place the saved fold reads the journal's bytes, so a test counts them (A5).
    """
    out = bytearray()
    while len(out) < length:
        chunk = os.pread(fd, min(length - len(out), _CHUNK_BYTES), start + len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _signature(st: os.stat_result) -> list[int]:
    """``[size, mtime_ns, ctime_ns, inode, device]``: an equal one means the same bytes (ctime moves on every write)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _journal_windows(fd: int, offset: int) -> tuple[int, int]:
    """The CRC-32 of the journal's first and last :data:`JOURNAL_WINDOW_BYTES` before ``offset``."""
    if offset <= 2 * JOURNAL_WINDOW_BYTES:
        prefix = read_journal_span(fd, 0, offset)
        return (binascii.crc32(prefix[:JOURNAL_WINDOW_BYTES]),
                binascii.crc32(prefix[max(0, offset - JOURNAL_WINDOW_BYTES):]))
    head = read_journal_span(fd, 0, JOURNAL_WINDOW_BYTES)
    tail = read_journal_span(fd, offset - JOURNAL_WINDOW_BYTES, JOURNAL_WINDOW_BYTES)
    return binascii.crc32(head), binascii.crc32(tail)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _COUNT_MAX


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in value)


def _strs(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def _resumed(fd: int, st: os.stat_result, state: dict[str, Any] | None) -> tuple[JournalFold, int] | None:
    """The fold the state holds and its offset, when the journal before it is still what was folded.

    Refused (``None``: the whole journal is folded again, H-47) for a state of another
    shape (one written before a field was kept), another file (inode, device), one that
    shrank, one rewritten in place at the same size (its ``stat`` signature moved without
    growing), or whose first or last bytes before the offset changed (a line added,
    removed or edited there shifts or changes them).
    """
    if state is None:
        return None
    offset, lines, sig, last = state.get("offset"), state.get("lines"), state.get("stat"), state.get("last")
    if not (_count(offset) and _count(lines) and isinstance(sig, list) and _ints(sig) and len(sig) == 5
            and _strs(state.get("run_keys")) and _strs(state.get("unended"))
            and (last is None or isinstance(last, str))
            and _ints(state.get("bad")) and _ints(state.get("said"))):
        return None
    assert isinstance(offset, int) and isinstance(lines, int)  # _count said so
    now = _signature(st)
    if sig[3:] != now[3:] or offset > st.st_size or st.st_size < sig[0]:
        return None  # another file, or one that shrank
    if now != sig:
        if st.st_size == sig[0]:
            return None  # rewritten in place: the same size, not one byte appended
        if [state.get("head_crc"), state.get("tail_crc")] != list(_journal_windows(fd, offset)):
            return None
    fold = JournalFold(UNFINISHED_KIND)
    fold.lines, fold.keys, fold.last = lines, set(state["run_keys"]), last
    fold.unended = dict.fromkeys(state["unended"], True)
    fold.bad, fold.said = set(state["bad"]), set(state["said"])
    return fold, offset


def journal_open_work(folder: Path, *, min_save_bytes: int = 0) -> OpenWork | None:
    """What the journal left open, from its saved fold and the bytes since (S7, A5).

    The same answer as :func:`gpusession.core.events.scan.open_work` over the whole file
    with :data:`UNFINISHED_KIND`; the state is written again when it was refused or after
    :data:`JOURNAL_REWRITE_BYTES` of new lines (never an error when the disk refuses).

    Args:
        folder: the session folder.
        min_save_bytes: fewer journal bytes folded than this write no state: opening a
            session passes :data:`JOURNAL_REWRITE_BYTES`, so a command on a small session
            (one refused included) leaves its folder as it found it, while a large one
            saves its fold once; ``status`` passes 0 (its state is the tmux line's).

    Returns:
        ``None`` when the journal is missing, unreadable or not a plain file (never
        waited on: a FIFO in its place is not opened for a read that blocks).
    """
    path = Path(folder) / JOURNAL
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        resumed = _resumed(fd, st, read_state(folder, JOURNAL_STATE))
        fold, offset = resumed if resumed is not None else (JournalFold(UNFINISHED_KIND), 0)
        complete, cut = split_at_last_line_end(read_journal_span(fd, offset, st.st_size - offset))
        fold.feed(complete)
        if (resumed is None or len(complete) >= JOURNAL_REWRITE_BYTES) and len(complete) >= min_save_bytes:
            end = offset + len(complete)
            head, tail = _journal_windows(fd, end)
            write_state(folder, JOURNAL_STATE, {
                "offset": end, "lines": fold.lines, "stat": _signature(st), "head_crc": head, "tail_crc": tail,
                "run_keys": sorted(fold.keys), "unended": sorted(e for e, on in fold.unended.items() if on),
                "last": fold.last, "bad": sorted(fold.bad), "said": sorted(fold.said)})
        return fold.result(cut)
    except OSError:
        return None
    finally:
        os.close(fd)


__all__ = ["JOURNAL_REWRITE_BYTES", "JOURNAL_WINDOW_BYTES", "journal_open_work", "read_journal_span"]
