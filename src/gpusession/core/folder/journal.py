"""The session's append-only journal, the run key and the run lock (S7).

Why it exists: the journal (``journal.jsonl``), the key that names one timed run in it
and the lock that says "a process is running experiments here" are one job, used by the
runner (:mod:`gpusession.bench.runner`) while it runs, by crash recovery
(:mod:`gpusession.core.folder.recovery`) on reopen and by :class:`gpusession.core.folder.session.Session`
(whose ``journal()`` / ``read_journal()`` delegate here). No textual, no torch.

On disk: one JSON object per line, ``{"at": <UTC ISO 8601>, "event": <name>, "v": <protocol
version>, ...fields}``, appended and fsynced line by line. A line cut by a crash or a full
disk is skipped on reading and never swallows the next record.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusession.core.events.base import Event, GenericRecord
from gpusession.core.events.reading import JournalRead, read_journal, read_objects
from gpusession.core.events.reading import read_records as typed
from gpusession.core.events.records import (
    ExperimentEndedRecord,
    ExperimentFinishedRecord,
    ExperimentStartedRecord,
    RunFinishedRecord,
)
from gpusession.core.events.registry import check_writable
from gpusession.core.experiment.keys import PHASES, RunKey
from gpusession.core.files import clock
from gpusession.core.files.errors import Failure
from gpusession.core.files.names import JOURNAL, RUN_LOCK
from gpusession.core.files.safefile import open_append, write_private_bytes
from gpusession.core.files.secrets import mask_record


def _now() -> str:
    return clock.utcnow().isoformat()


def append(path: Path, record: Event) -> None:
    """Append ``{"at", "event", "v", ...}`` as one line to the journal at ``path`` and fsync.

    A last line cut by a crash or a full disk is terminated first, so it never swallows
    this record (S7).

    Raises:
        BadInput: the journal is a symbolic link (nothing written).
        OSError: the write failed; the message names the journal.
        TypeError: ``record`` is a typed event the journal's registry does not read back
            (:func:`gpusession.core.events.registry.check_writable`; nothing written).
    """
    append_many(path, [record])


def append_many(path: Path, records: list[Event]) -> None:
    """Append one line per record in one write and one fsync (:func:`append`'s guarantees).

    Why: 20,000 decisions recorded at once (a folder of generated images, H-56) took one
    fsync each; the lines are written together, after every record was checked.
    """
    for record in records:
        check_writable(record)
    at = _now()
    # a secret never reaches the journal: each string masked whole, stderr lines as one text
    line = b"".join((json.dumps(mask_record({"at": at, **r.to_json()}), default=str, ensure_ascii=False)
                     + "\n").encode("utf-8") for r in records)
    if not line:
        return
    try:
        with open_append(path, read=True) as fh:  # 0600, never through a link
            if fh.seek(0, os.SEEK_END) > 0:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    line = b"\n" + line
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def record(event: str, fields: Mapping[str, Any]) -> GenericRecord:
    """A journal record for ``event`` with ``fields`` (for events with no own type)."""
    return GenericRecord(event=event, fields=dict(fields))


def read(path: Path) -> list[dict[str, Any]]:
    """Every readable journal record as the dict written (``{"at", "event", "v", ...}``), oldest first.

    Read by the one typed reader (:func:`gpusession.core.events.reading.read_objects`),
    so a line that does not read is left out here as there; kept for the callers that
    still take dicts (``bench/runner.py``). New code reads typed records.
    """
    return read_objects(Path(path))


def read_records(path: Path) -> list[Event]:
    """Every journal line as a typed record (:func:`gpusession.core.events.reading.read_journal`).

    Free-form records of the first release and unknown events come back as
    :class:`~gpusession.core.events.GenericRecord`; a line that does not read (cut,
    wrongly typed, nested too deep) is left out -- :func:`read_all` gives its note.
    """
    return typed(Path(path))


def read_all(path: Path) -> JournalRead:
    """The whole journal: typed records with their line numbers and one note per unreadable line (S7)."""
    return read_journal(Path(path))


# -- progress of a run, read back (a detached run followed) ------------------------
@dataclass(frozen=True)
class RunProgress:
    """How far the newest invocation (of one experiment, or of any) in a journal got.

    Attributes:
        experiment_id: the experiment of its ``experiment_started`` record.
        runs_done: scheduled runs finished since it (ok or failed; one row each); the
            end record's count when it has one.
        runs_scheduled: runs it scheduled (loads not counted).
        started_at: ISO 8601 UTC time of its ``experiment_started`` record, if known.
        ended: an ``experiment_finished``/``experiment_incomplete`` record follows it.
        state: ``running_or_stopped`` while no end record follows (running, or its
            process stopped without one), else ``finished`` (every scheduled run ran),
            ``cancelled`` (at a run boundary) or ``incomplete`` (stopped early otherwise).
    """

    experiment_id: str | None
    runs_done: int
    runs_scheduled: int
    started_at: str | None
    ended: bool
    state: str = "running_or_stopped"


def run_progress(records: list[Event], experiment_id: str | None = None) -> RunProgress | None:
    """The progress of the newest invocation in ``records`` (follow a run).

    Args:
        records: typed journal records, oldest first (:func:`read_records`).
        experiment_id: the newest invocation of this experiment; ``None``: of any.

    Returns:
        A :class:`RunProgress`, or ``None`` when no such invocation was ever started.
    """
    start = next((i for i in range(len(records) - 1, -1, -1)
                  if isinstance(records[i], ExperimentStartedRecord)
                  and (experiment_id is None or records[i].experiment_id == experiment_id)), None)  # type: ignore[attr-defined]
    if start is None:
        return None
    head = records[start]
    assert isinstance(head, ExperimentStartedRecord)
    done, scheduled = 0, len(head.runs)
    for rec in records[start + 1:]:
        if isinstance(rec, RunFinishedRecord) and rec.experiment_id == head.experiment_id:
            done += 1
        elif isinstance(rec, ExperimentEndedRecord) and rec.experiment_id in (None, head.experiment_id):
            state = ("finished" if isinstance(rec, ExperimentFinishedRecord)
                     else "cancelled" if rec.cancelled else "incomplete")
            return RunProgress(head.experiment_id, rec.runs_done if rec.runs_done is not None else done,
                               rec.runs_scheduled if rec.runs_scheduled is not None else scheduled,
                               head.at, True, state)
    return RunProgress(head.experiment_id, done, scheduled, head.at, False)


# -- the run lock ----------------------------------------------------------------------
def _lock_text() -> str:
    """What the run lock holds: ``"<pid> <host>"`` (the host: a folder shared by nodes)."""
    return f"{os.getpid()} {platform.node()}"


def lock_host(folder: Path) -> str | None:
    """The host named in ``folder``'s run lock when it is not this one, else ``None``."""
    try:
        words = (Path(folder) / RUN_LOCK).read_text().split()
    except OSError:
        return None
    return words[1] if len(words) > 1 and words[1] != platform.node() else None


def lock_holder(folder: Path) -> int | None:
    """PID of a live process running experiments in ``folder``, else ``None`` (S7).

    Gone, reused (started after the lock was written) and zombie PIDs hold nothing (H-37).

    The lock holds ``"<pid> <host>"`` (older locks: the PID alone). A lock taken on
    another host (a session folder shared by the nodes of a torchrun group) is
    held: its process cannot be looked at from here, and taking it for a crash would
    record the other node's runs as lost.
    """
    lock = Path(folder) / RUN_LOCK
    try:
        words = lock.read_text().split()
        pid = int(words[0])
        written = lock.stat().st_mtime
    except (OSError, ValueError, IndexError):
        return None
    if len(words) > 1 and words[1] != platform.node():
        return pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    # A crashed runner's PID may since belong to a process started after the lock
    # was written: that process does not hold it (else recovery would wait forever).
    # A zombie holds nothing either: a runner killed in a container whose PID 1 never
    # reaps stays one forever, and it runs nothing (H-37).
    try:
        import psutil

        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE or proc.create_time() > written + 1.0:
            return None
    except Exception:  # noqa: BLE001 - no psutil answer: trust the PID
        pass
    return pid


def running_words(folder: Path) -> str | None:
    """Say that another process runs experiments in ``folder``, and how far it got.

    ``run in progress (pid 4242): 3 of 15 runs done`` while another live process holds
    the run lock, else ``None`` (a detached run followed from ``show``). The counts come from the journal's newest invocation; without one, the PID only.
    """
    holder = lock_holder(folder)
    if holder is None or holder == os.getpid():
        return None
    progress = run_progress(read_records(Path(folder) / JOURNAL))
    if progress is None or progress.ended:
        return f"run in progress (pid {holder})"
    return (f"run in progress (pid {holder}): {progress.runs_done} of "
            f"{progress.runs_scheduled} runs done")


def take_lock(folder: Path, session_name: str) -> Path:
    """Create the run lock atomically, so one ``run`` at a time touches a session (S7).

    A hard link fails if its target exists: of two ``run`` commands started at the same
    instant on one session, exactly one runs. A lock this process already holds is kept
    as it is (``run`` holds it before it prints what it runs; its runner takes it again),
    so no other process can take it in between. The PID is written to a temporary file first, then hard-linked into place, so the
    lock never exists empty.

    Returns:
        The lock's path (give it to :func:`release_lock`).

    Raises:
        Failure: a live process holds the lock (exit 1: not the person's input).
        OSError: the lock could not be written; nothing was run.
    """
    lock = Path(folder) / RUN_LOCK
    tmp = lock.with_name(f"{lock.name}.{os.getpid()}.tmp")
    try:

        write_private_bytes(tmp, _lock_text().encode())  # 0600 like every session file, never through a link
    except OSError as exc:  # the write that failed is named, and what it was for
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, f"{exc.strerror} (writing the run lock); nothing was run", str(tmp)) from exc
    try:
        for _ in range(2):
            try:
                os.link(tmp, lock)
                return lock
            except FileExistsError:
                holder, host = lock_holder(folder), lock_host(folder)
                if holder is not None and (holder != os.getpid() or host):
                    raise lock_busy(holder, session_name, host) from None
                if holder is not None and _names_this_host(lock):  # held here already: kept, never freed
                    return lock
                lock.unlink(missing_ok=True)  # stale: its process is gone
        raise Failure(f"could not take the run lock {lock}; another run is starting")
    finally:
        tmp.unlink(missing_ok=True)


def _names_this_host(lock: Path) -> bool:
    """Whether ``lock`` reads ``"<pid> <this host>"`` (an older PID-only lock is taken anew)."""
    try:
        words = lock.read_text().split()
    except OSError:
        return False
    return len(words) == 2 and words[1] == platform.node()


def lock_busy(holder: int, session_name: str, host: str | None = None) -> Failure:
    """The error for a run refused because process ``holder`` runs experiments (S7).

    Args:
        holder: PID of the live process holding the run lock.
        session_name: the session's name, for the message.
        host: the host of that process when it is not this one (:func:`lock_host`).

    Returns:
        A :class:`Failure` (exit 1: not the person's input), to raise.
    """
    where = f" on {host}" if host else ""
    return Failure(f"another gpusession process (pid {holder}{where}) is running experiments in "
                   f"{session_name}; nothing was run")


def release_lock(folder: Path) -> None:
    """Remove the run lock of ``folder`` (no error when it is already gone)."""
    (Path(folder) / RUN_LOCK).unlink(missing_ok=True)


__all__ = [
    "JOURNAL", "PHASES", "RUN_LOCK", "RunKey", "RunProgress", "append", "lock_holder", "read", "read_all",
    "lock_host", "read_records", "record", "release_lock", "run_progress", "running_words", "take_lock",
]
