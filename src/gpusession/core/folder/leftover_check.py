"""Where a run's leftover check may start reading the journal: a sealed offset (H-14, A5, H-47).

Source: H-14 (never trust the lock alone: what an earlier run left alive is ended before
a run starts), A5 (a run's start costs the new work, not the session), H-47, H-78.
Why: the check decoded every process start the journal ever recorded, some 13,000 lines
in a month-long session, at every ``run``; a process ended or found gone once stays gone.

Who calls it: :meth:`gpusession.bench.runner.Runner.run`. :func:`process_records` gives
the records naming a process start (:data:`~gpusession.core.folder.processes.END_RECORDED_EVENTS`)
after the saved offset, and the :class:`CheckedMark` of the journal's line end it read
to; the runner ends what is alive among them
(:func:`~gpusession.core.folder.processes.end_recorded`) and, at its invocation's end
(its groups ended, the run lock still held), keeps that mark (:func:`keep_checked`).
Every process recorded before the mark was then gone or ended by that check; the
invocation's own processes lie after it, so the next run checks them as before, and a
parent killed outright (``kill -9``) keeps nothing: its leftovers are ended by the next run.

``leftover-check.json`` (:data:`gpusession.core.folder.caches.LEFTOVER_CHECK_STATE`,
sealed as every state file is): ``offset`` (bytes, a line end), ``lines`` (the line ends
before it), ``crc`` (CRC-32 of every byte before it, as ``journal-digest.json``), the
journal's ``inode`` and ``device``. A state refused (another shape or version, a forged
seal, another file, a journal shrunk below the offset or edited before it) reads the whole
journal as before (H-47). Written only for a journal of at least
:data:`CHECK_MIN_SAVE_BYTES` (a small session is left as found); a refused write is no error.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpusession.core.events import Event
from gpusession.core.events.reading import read_records_naming, records_naming
from gpusession.core.events.scan import split_at_last_line_end
from gpusession.core.files.names import JOURNAL
from gpusession.core.folder.caches import LEFTOVER_CHECK_STATE, read_state, write_state
from gpusession.core.folder.journal_digest import _prefix_crc
from gpusession.core.folder.journal_state import JOURNAL_REWRITE_BYTES, read_journal_span
from gpusession.core.folder.processes import END_RECORDED_EVENTS, end_recorded

#: The state's own version: a mark written by code that checked otherwise reads as absent.
CHECK_VERSION = 1
#: The smallest journal offset kept (bytes): a smaller journal is read whole in milliseconds.
CHECK_MIN_SAVE_BYTES = JOURNAL_REWRITE_BYTES


@dataclass(frozen=True)
class CheckedMark:
    """A line end of the journal, with the proof of the bytes before it.

    Attributes:
        offset: bytes before the line end.
        lines: line ends before it (the next line is ``lines + 1``).
        crc: CRC-32 of the journal's first ``offset`` bytes.
        inode, device: the journal file's (another file is read whole).
    """

    offset: int
    lines: int
    crc: int
    inode: int
    device: int


def _saved(fd: int, st: os.stat_result, state: dict[str, object] | None) -> CheckedMark | None:
    """The saved mark when it names this journal and its bytes before the offset are unchanged; else ``None``."""
    if state is None or state.get("version") != CHECK_VERSION:
        return None
    fields = [state.get(k) for k in ("offset", "lines", "crc", "inode", "device")]
    counts = [v for v in fields if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    if len(counts) != len(fields):
        return None
    mark = CheckedMark(*counts)
    if (mark.inode, mark.device) != (st.st_ino, st.st_dev) or mark.offset > st.st_size:
        return None
    if _prefix_crc(fd, mark.offset) != mark.crc:  # edited before the offset (H-47)
        return None
    return mark


def process_records(folder: Path) -> tuple[list[Event], CheckedMark | None]:
    """The records naming a process start after the saved mark (the whole journal without one), and the mark read to.

    Args:
        folder: the session folder.

    Returns:
        ``(records, mark)``: the records as
        :func:`~gpusession.core.events.reading.read_records_naming` gives them, oldest
        first; the line end the bytes read reach (``None`` for a missing journal, or one
        read the old way: not a plain file).

    Raises:
        OSError, BadInput: the journal cannot be read, or is not a file (as
            :func:`~gpusession.core.events.reading.iter_journal`).
    """
    path = Path(folder) / JOURNAL
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return [], None
    except OSError:
        return read_records_naming(path, END_RECORDED_EVENTS), None  # says why as before
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return read_records_naming(path, END_RECORDED_EVENTS), None
        saved = _saved(fd, st, read_state(Path(folder), LEFTOVER_CHECK_STATE))
        start, lines, crc = (saved.offset, saved.lines, saved.crc) if saved is not None else (0, 0, 0)
        complete, cut = split_at_last_line_end(read_journal_span(fd, start, st.st_size - start))
        records = records_naming(complete + cut, END_RECORDED_EVENTS, first=lines + 1)
        mark = CheckedMark(start + len(complete), lines + complete.count(b"\n"), zlib.crc32(complete, crc),
                           st.st_ino, st.st_dev)
        return records, mark
    finally:
        os.close(fd)


def end_leftovers(folder: Path, say: Callable[[str], None]) -> CheckedMark | None:
    """End what the journal's process starts after the saved mark name that is still alive (H-14); the mark to keep.

    Args:
        folder: the session folder (its run lock held by the caller).
        say: takes each sentence of :func:`~gpusession.core.folder.processes.end_recorded`
            (the runner journals it as a ``leftover_ended`` incident).

    Returns:
        The line end read to (:func:`process_records`): every process recorded before it
        is now gone or ended; keep it (:func:`keep_checked`) once the invocation ends.

    Raises:
        OSError, BadInput: as :func:`process_records`.
    """
    started, mark = process_records(folder)
    for msg in end_recorded(started, folder):
        say(msg)
    return mark


def keep_checked(folder: Path, mark: CheckedMark | None) -> bool:
    """Keep ``mark`` as the offset before which every recorded process is gone or ended; whether it was written.

    Call only once :func:`~gpusession.core.folder.processes.end_recorded` returned for
    the records :func:`process_records` gave with it (H-14). A mark under
    :data:`CHECK_MIN_SAVE_BYTES` writes nothing.
    """
    if mark is None or mark.offset < CHECK_MIN_SAVE_BYTES:
        return False
    return write_state(Path(folder), LEFTOVER_CHECK_STATE, {
        "version": CHECK_VERSION, "offset": mark.offset, "lines": mark.lines, "crc": mark.crc,
        "inode": mark.inode, "device": mark.device})


__all__ = ["CHECK_MIN_SAVE_BYTES", "CHECK_VERSION", "CheckedMark", "end_leftovers", "keep_checked",
           "process_records"]
