"""The Run pane's follower: a run started elsewhere (``gpusession run NAME --detach``).

Who calls it: :class:`gpusession.ui.panes.run.RunPane`, which composes one
:class:`RunFollowView` and calls :meth:`RunFollowView.tick` about once a second while
its own run is not going. Another live process holding the session's run lock is
followed: a size/mtime check of the journal and the results CSV first, and only when
they changed the journal's progress and the experiment's summary are read, in a thread
worker (both grow with the session: never on the event loop). What it finds crosses to
the pane as messages (:class:`RunFollowView.Followed`, :class:`RunFollowView.Ended`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from textual import work
from textual.message import Message
from textual.widget import Widget

from gpusession.core.files.errors import BadInput
from gpusession.core.folder.journal import read_records, run_progress
from gpusession.ui.context import UiContext
from gpusession.ui.panes.run_summary import SummaryRead, read_summary
from gpusession.ui.panes.run_words import follow_words


def local_hm(iso: str | None, tz: Any) -> str:
    """``12:00 UTC`` in ``tz`` from an ISO time; ``""`` when missing or unreadable."""
    if not iso:
        return ""
    try:
        t = datetime.fromisoformat(iso).astimezone(tz)
    except (TypeError, ValueError):
        return ""
    return t.strftime("%H:%M %Z").strip()


def other_run_holder(session: Any) -> int | None:
    """PID of another live process holding ``session``'s run lock, else ``None`` (this
    process's own run is not another's)."""
    holder = session.run_lock_holder()
    return holder if holder is not None and holder != os.getpid() else None


class RunFollowView(Widget):
    """Watches the run lock for a run in another process; draws nothing itself (the pane's
    status line, bars and tables say what it reads)."""

    @dataclass
    class Followed(Message):
        """What a followed run has done so far, read off the event loop.

        Attributes:
            pid: the process running it.
            words: the status line's words (``a run is in progress in another process …``).
            done, total: its runs done and scheduled, ``None`` when the journal does not say.
            experiment_id: the experiment shown (the journal's, when defined here).
            summary: that experiment's summary as :func:`read_summary` read it.
        """

        pid: int
        words: str
        done: int | None
        total: int | None
        experiment_id: str | None
        summary: SummaryRead | None

    @dataclass
    class Ended(Message):
        """The followed run ended (its lock released): the rows it wrote are final."""

        pid: int

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        #: PID of the process followed, else ``None``
        self.pid: int | None = None
        self._marks: tuple[Any, ...] = ()
        #: the newest read (an older worker's result is dropped)
        self._generation = 0

    def holder(self) -> int | None:
        """PID of another live process holding this session's run lock, else ``None``."""
        return other_run_holder(self.ctx.session)

    def file_marks(self) -> tuple[Any, ...]:
        """Size and mtime of the journal and the results CSV: the cheap check before a re-read."""
        out: list[Any] = []
        for path in (self.ctx.session.journal_path, self.ctx.session.results.path):
            try:
                st = path.stat()
                out.append((st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def tick(self, experiment_ids: set[str], current: str | None) -> None:
        """Look once: a new holder or new bytes start a read (``experiment_ids``: the
        experiments defined here; ``current``: the one shown); a holder gone ends the follow."""
        holder = self.holder()
        if holder is None:
            if self.pid is not None:
                pid, self.pid, self._marks = self.pid, None, ()
                self._generation += 1  # a read still under way is about the run that ended
                self.post_message(self.Ended(pid))
            return
        marks = self.file_marks()
        if holder == self.pid and marks == self._marks:
            return  # nothing new since the last look
        self.pid, self._marks = holder, marks
        self._generation += 1
        self._read(self._generation, holder, experiment_ids, current)

    @work(thread=True, exclusive=True, group="run-follow", exit_on_error=False)
    def _read(self, generation: int, holder: int, experiment_ids: set[str], current: str | None) -> None:
        try:
            progress = run_progress(read_records(self.ctx.session.journal_path))
        except (OSError, BadInput):  # gone, or no longer a plain file: nothing followed
            progress = None
        done = total = None
        started = ""
        if progress is not None and not progress.ended:
            done, total = progress.runs_done, progress.runs_scheduled
            if progress.experiment_id in experiment_ids:
                current = progress.experiment_id
            started = local_hm(progress.started_at, self.ctx.tz)
        found = self.Followed(holder, follow_words(holder, started, done, total), done, total, current,
                              read_summary(self.ctx.session, current))
        self.app.call_from_thread(self._deliver, generation, found)

    def _deliver(self, generation: int, found: Followed) -> None:
        if generation == self._generation and found.pid == self.pid:
            self.post_message(found)


__all__ = ["RunFollowView", "local_hm", "other_run_holder"]
