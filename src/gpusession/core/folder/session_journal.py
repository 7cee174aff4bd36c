"""A session's journal and run-end bookkeeping, its results table, and crash recovery's cheap look (S7, A5).

Source: S7, A5. Why: :class:`gpusession.core.folder.session.Session` held the folder's
files, its TOML documents, the journal, the run ends counted for every read of the
results CSV and the look for what a crash left; one class of 450 lines. This mixin is
the journal's part, inherited by ``Session`` (its API unchanged); ``session.toml`` is
read and written by :mod:`gpusession.core.folder.session_toml`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.core.events.scan import run_end_counts
from gpusession.core.files.errors import BadInput
from gpusession.core.files.names import JOURNAL, RESULTS_CSV, RUN_LOCK
from gpusession.core.files.textio import read_plain
from gpusession.core.files.tomlio import is_tmp_name
from gpusession.core.folder.caches import (
    file_signature,
    keep_results_clean,
    keep_run_ends,
    results_clean,
    saved_run_ends,
)
from gpusession.core.folder.journal_state import JOURNAL_REWRITE_BYTES, journal_open_work

if TYPE_CHECKING:  # typed records load when the journal is written, not at start-up
    from gpusession.core.events import Event
    from gpusession.core.events.facts import JournalFacts
    from gpusession.core.events.reading import JournalRead
    from gpusession.core.records.results import ResultsFile


class SessionJournal:
    """The journal, the results table it judges, and crash recovery of one session folder (a mixin of ``Session``).

    Attributes:
        folder: the session folder (set by ``Session``).
    """

    folder: Path
    #: the journal's run ends, by its stat signature, and beside the bytes counted (:meth:`_run_ends`)
    _run_ends_cache: tuple[tuple[int, int, int, int], dict[str, int]] | None = None
    _run_ends_kept: tuple[bytes, dict[str, int]] | None = None
    #: the journal's facts, by its stat signature (:meth:`journal_facts`)
    _facts_cache: tuple[list[int] | None, JournalFacts] | None = None

    def locked(self, what: str = "the change") -> AbstractContextManager[None]:
        """The session folder's lock (``Session.locked``, which this mixin's user defines)."""
        raise NotImplementedError

    @cached_property
    def results(self) -> ResultsFile:
        """``resultats-bruts.csv``, the results table (C1); its module loads on first use."""
        from gpusession.core.records.results import ResultsFile  # not before the TUI's first frame

        return ResultsFile(self.folder / RESULTS_CSV, self._run_ends, _CleanRows(self.folder))

    @property
    def journal_path(self) -> Path:
        """``journal.jsonl``: the append-only record of what happened (S7)."""
        return self.folder / JOURNAL

    def _run_ends(self) -> dict[str, int]:
        """How many times the journal ended each run, so a results row copied by hand counts once.

        An unreadable journal (or one that is no plain file, never waited on) judges no row.
        Why kept: every read of the results CSV asks, and the journal only grows, so it is
        not read again while its size, mtime and inode stay, and only the lines appended
        after the bytes last counted are counted (A5): in this process, and across processes
        from the sealed ``run-ends.json`` (:func:`gpusession.core.folder.caches.saved_run_ends`,
        for a journal of 64 KiB or more); any other change (a hand edit of an earlier line,
        H-47) is counted whole.
        """
        try:
            st = self.journal_path.stat()
            sig = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
            cached = self._run_ends_cache
            if cached is not None and cached[0] == sig:
                return cached[1]
            raw = read_plain(self.journal_path)
        except (OSError, BadInput):
            return {}
        kept = self._run_ends_kept
        if kept is not None and kept[0].endswith(b"\n") and raw.startswith(kept[0]):
            ends = dict(kept[1])
            for key, n in run_end_counts(raw[len(kept[0]):]).items():
                ends[key] = ends.get(key, 0) + n
        else:
            ends = self._run_ends_saved(raw)
        self._run_ends_kept = (raw, ends)
        self._run_ends_cache = (sig, ends)
        return ends

    def _run_ends_saved(self, raw: bytes) -> dict[str, int]:
        """The run ends of ``raw`` from the saved counts and the bytes after them; the state kept again when it moved 64 KiB."""
        saved = saved_run_ends(self.folder, raw)
        offset, ends = (saved[0], dict(saved[1])) if saved is not None else (0, {})
        end = raw.rfind(b"\n") + 1  # the last line end: what follows is counted, never kept
        for key, n in run_end_counts(raw[offset:end]).items():
            ends[key] = ends.get(key, 0) + n
        if end >= JOURNAL_REWRITE_BYTES and end - offset >= (JOURNAL_REWRITE_BYTES if saved is not None else 1):
            keep_run_ends(self.folder, raw[:end], ends)
        if end < len(raw):  # a last line without its newline counts as the whole journal counts it
            for key, n in run_end_counts(raw[end:]).items():
                ends[key] = ends.get(key, 0) + n
        return ends

    # -- journal (core/folder/journal.py) -----------------------------------------------
    def journal(self, event: str | Event, **fields: Any) -> None:
        """Append one record to ``journal.jsonl`` and fsync (:func:`gpusession.core.folder.journal.append`).

        Args:
            event: a typed record (:mod:`gpusession.core.events`); a name with
                ``fields`` writes a free-form record (left for ``bench/demo.py`` only:
                every other writer journals a typed record, S7).
            **fields: the fields of a free-form record (JSON-ready values).

        Raises:
            TypeError: ``fields`` given with a typed record.
            OSError: the journal could not be written.
        """
        from gpusession.core.folder import journal

        if isinstance(event, str):
            event = journal.record(event, fields)
        elif fields:
            raise TypeError("fields are given with an event name, not with a typed record")
        journal.append(self.journal_path, event)

    def journal_many(self, events: list[Event]) -> None:
        """Append typed records in one write and one fsync (:func:`gpusession.core.folder.journal.append_many`).

        Raises:
            OSError: the journal could not be written (nothing of it was).
        """
        from gpusession.core.folder import journal

        journal.append_many(self.journal_path, events)

    def read_journal(self) -> list[dict[str, Any]]:
        """Every readable journal record as a dict (for ``bench/runner.py``, which still takes dicts).

        Read through the typed reader; new code uses :meth:`journal_records`.
        """
        from gpusession.core.folder import journal

        return journal.read(self.journal_path)

    def journal_records(self) -> list[Event]:
        """Every readable journal record, typed, oldest first (:mod:`gpusession.core.events.reading`).

        A line that does not read is left out; :meth:`journal_read` gives its note.
        """
        from gpusession.core.events.reading import read_records

        return read_records(self.journal_path)

    def journal_facts(self) -> JournalFacts:
        """What the journal says about the runs, for the summary table (R7; :mod:`gpusession.core.events.facts`).

        From the journal's saved digest and the lines appended since
        (:func:`gpusession.core.folder.journal_digest.journal_digest`, A5); a journal that
        cannot be read as a plain file is read as before (its error said there). ``show``
        asks three times: worked out once per journal bytes (its ``stat`` signature).
        """
        from gpusession.core.events.facts import journal_facts
        from gpusession.core.folder.journal_digest import journal_digest

        sig = file_signature(self.journal_path)
        if sig is not None and self._facts_cache is not None and self._facts_cache[0] == sig:
            return self._facts_cache[1]
        digest = journal_digest(self.folder)
        facts = digest.journal_facts() if digest is not None else journal_facts(self.journal_records())
        self._facts_cache = (sig, facts)
        return facts

    def journal_read(self) -> JournalRead:
        """The whole journal: typed records, their line numbers, one note per unreadable line (S7)."""
        from gpusession.core.events.reading import read_journal

        return read_journal(self.journal_path)

    # -- crash recovery (core/folder/recovery.py, S7) -------------------------------------
    def run_lock_holder(self) -> int | None:
        """PID of a live process running experiments in this session, else ``None``."""
        from gpusession.core.folder import journal

        return journal.lock_holder(self.folder)

    def needs_recovery(self) -> bool:
        """Whether a crash may have left something for :meth:`recover` (S7), in O(1) of the session's size (A5).

        A cheap look, without the lock and without loading the record classes: a run lock
        file, a journal or results CSV whose last line is cut, a temporary file of an
        atomic write or a worker spec file (``.worker-*.json``) where gpusession's writers
        can leave one outside a run (:func:`_left_files`), or a journal with a run (or
        worker load) started and never ended, an invocation started and never ended that
        recovery has not said yet, or a run line that does not read and that no incident
        has said yet -- from the journal's saved fold and the bytes appended since
        (:func:`gpusession.core.folder.journal_state.journal_open_work`; a changed prefix
        folds it whole again). It errs towards ``True``: when it says ``False``,
        :meth:`recover` would find nothing to do (so :meth:`open` skips it and start-up
        does not load the recovery machinery).

        Returns:
            ``False`` when there is certainly nothing to recover.
        """
        if (self.folder / RUN_LOCK).exists():
            return True
        for path in (self.journal_path, self.folder / RESULTS_CSV):
            try:
                with open(path, "rb") as fh:
                    if fh.seek(0, os.SEEK_END) > 0:
                        fh.seek(-1, os.SEEK_END)
                        if fh.read(1) != b"\n":
                            return True
            except FileNotFoundError:
                continue
        # runs and invocations started, never ended; a small journal's fold is not saved
        work = journal_open_work(self.folder, min_save_bytes=JOURNAL_REWRITE_BYTES)
        if work is not None and (work.run_keys or work.experiments or work.unsaid_lines):
            return True
        return _left_files(self.folder, None if work is None else work.last_experiment)

    def recover(self) -> list[str]:
        """Recover what a crash left behind and record it as incidents (S7).

        Two opens at once recover once, not twice (a lock on the folder); what is
        recovered is described in :func:`gpusession.core.folder.recovery.recover_locked`.

        Returns:
            One sentence per incident recovered.
        """
        from gpusession.core.folder.recovery import recover_locked

        with self.locked("recovering after a crash"):
            return recover_locked(self)


#: The folders where a writer outside a run may leave a temporary name (S7), relative to
#: the session folder: the TOML files, caches, reports and manifests at the top, and
#: ``validate --session``'s report, ID lists and archived output in ``validation/``.
TEMP_FOLDERS = (".", "validation")


def _left_files(folder: Path, last_experiment: str | None) -> bool:
    """Whether a temporary file of an atomic write or a worker spec is left where one can be (S7).

    Only :data:`TEMP_FOLDERS` and ``runs/<last_experiment>/`` are listed, not walked
    (docs/session-folder.md, "Where a crash leaves a temporary name"): every other write
    under ``runs/`` and ``validation/<experiment>/`` happens while the runner holds
    ``.run.lock``, which a crash leaves behind, and whose presence alone says "recover"
    (the recovery then walks the whole folder). A worker spec is written and removed
    under that lock too; the newest experiment's folder is listed for one whose
    removal failed. Bounded: three folder listings, whatever the session's size.
    """
    places = [folder / sub for sub in TEMP_FOLDERS]
    if last_experiment and "/" not in last_experiment and last_experiment not in (".", ".."):
        places.append(folder / "runs" / last_experiment)
    for place in places:
        try:
            with os.scandir(place) as entries:
                if any(is_tmp_name(e.name) or _is_worker_spec(e.name) for e in entries):
                    return True
        except OSError:  # missing, not a folder, unreadable: nothing of ours there
            continue
    return False


def _is_worker_spec(name: str) -> bool:
    """A worker spec file's name (``recovery.SPEC_PREFIX``; a test checks they agree)."""
    return name.startswith(".worker-") and name.endswith(".json")


class _CleanRows:
    """The results CSV's clean check kept in the folder's sealed state (:func:`gpusession.core.folder.caches.results_clean`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def known(self, raw: bytes, ends: Mapping[str, int]) -> bool:
        """Whether ``raw`` was found clean against ``ends`` (A5); a hand edit is a new digest (H-47)."""
        return results_clean(self.folder, raw, ends)

    def keep(self, raw: bytes, ends: Mapping[str, int]) -> None:
        """Keep that ``raw`` was found clean against ``ends`` (a cache: a refused write is no error)."""
        keep_results_clean(self.folder, raw, ends)
