"""The in-flight line of ``gpusession run --headless``: a run that lasts says it still runs.

Why it exists: a run of minutes printed nothing between its start and its row, and a
person watching a rented GPU cannot tell a long run from a hung one. While a run (or a
worker's load, or its warm-up before its first run) has been in flight for ``interval_s`` or more, one line every
``interval_s`` says which and for how long: rewritten in place on a terminal, a plain
line each time in a log (so a log shows the same progress). ``--quiet`` prints none.

Who calls it: :func:`gpusession.commands.run_cmds.run_headless`, which gives it every
runner event and prints its own lines through :meth:`InFlight.say` (one lock for both).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable

from gpusession.core.events import RunnerEvent
from gpusession.core.events.words import ENDED, elapsed_words, in_flight
from gpusession.core.files.textio import fit_columns

__all__ = ["INTERVAL_S", "InFlight", "elapsed_words"]

#: seconds between two in-flight lines, and before the first (the seed's "progress on long work")
INTERVAL_S = 10.0

_CLEAR = "\r\x1b[K"  # to the line's start, erase it: the terminal's in-place line


class InFlight:
    """What is in flight since when, and its line every ``interval_s`` (a thread of its own).

    Args:
        write: writes text to the output as it is (no newline added), flushed.
        terminal: the output is a terminal: the line is rewritten in place and erased
            before the next line; otherwise each tick is a line of its own.
        interval_s: seconds between lines (``None``: :data:`INTERVAL_S`); the first comes
            ``interval_s`` after the start.
        clock: monotonic seconds (a fake in tests).
        columns: the terminal's width now (default :func:`shutil.get_terminal_size`, which
            reads ``$COLUMNS`` first): the in-place line is cut to fit, so it never wraps
            and leaves no stale row behind in a narrow pane (H-66).
    """

    def __init__(self, write: Callable[[str], object], *, terminal: bool,
                 interval_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 columns: Callable[[], int] | None = None) -> None:
        """Nothing in flight yet; the thread starts on ``with``."""
        self._write = write
        self._columns = columns or (lambda: shutil.get_terminal_size().columns)
        self._terminal = terminal
        self.interval_s = INTERVAL_S if interval_s is None else interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._what: str | None = None
        self._since = 0.0
        self._next = 0.0  # when the next line is due
        self._shown = False  # an in-place line is on the terminal now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def on_event(self, ev: RunnerEvent) -> None:
        """Follow one runner event: a run or a load starts, or what was in flight ended."""
        what = in_flight(ev)  # the Run pane names it the same way
        if what is None:
            return
        with self._lock:
            self._erase()  # a stale line goes at once; a new one comes at the next interval
            if what == ENDED:
                self._what = None
                return
            self._what = what
            self._since = self._clock()
            self._next = self._since + self.interval_s

    def say(self, line: str) -> None:
        """Print ``line`` (and a newline), erasing an in-place line first."""
        with self._lock:
            self._erase()
            self._write(line + "\n")

    def tick(self) -> str | None:
        """Print the in-flight line when the next one is due (each ``interval_s``); the line."""
        with self._lock:
            now = self._clock()
            if self._what is None or now < self._next:
                return None
            elapsed_s = now - self._since
            while self._next <= now:  # one line, however late the tick
                self._next += self.interval_s
            head, tail = f"{self._what} in flight", f": {elapsed_words(elapsed_s)}"
            line = head + tail
            if self._terminal:  # asked each time: the pane may have been resized
                self._write(_CLEAR + fit_columns(head, self._columns(), keep=tail))
                self._shown = True
            else:
                self._write(line + "\n")
            return line

    def _erase(self) -> None:
        if self._shown:
            self._write(_CLEAR)
            self._shown = False

    def __enter__(self) -> InFlight:
        """Start the thread that looks, five times per ``interval_s`` (at most each second)."""
        poll_s = min(1.0, self.interval_s / 5)

        def loop() -> None:
            while not self._stop.wait(poll_s):
                self.tick()

        self._thread = threading.Thread(target=loop, name="gpusession-inflight", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the thread and erase an in-place line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._erase()
