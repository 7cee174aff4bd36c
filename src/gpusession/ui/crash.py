"""What the TUI leaves behind when it ends on an error (H-23): never exit 0.

Why it exists: an unhandled exception ends a Textual app with a traceback (locals
included) and, through ``App.run()``, no exit status; gpusession then said 0. Here the
error becomes one line on stderr, an incident in the session's journal (trace masked,
S7) and exit 1, with the terminal's modes put back. Who calls it:
:class:`gpusession.ui.app.GpuSessionApp` (recording) and :func:`gpusession.ui.app.run_app`.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass
from typing import Any

#: the ``kind`` of the journal incident a crash of the TUI writes
CRASH_KIND = "tui_crashed"
#: the exit code of a TUI that ended on an error (docs/exit-codes.md)
CRASH_EXIT_CODE = 1
#: modes a crashed app may leave on: mouse reports, hidden cursor, focus events, kitty keys
_MODES_OFF = "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?1004l\x1b[<u\x1b[?25h"
_ALT_SCREEN_OFF = "\x1b[?1049l"


@dataclass(frozen=True)
class AppCrash:
    """The error that ended the app: ``summary`` is ``"Type: message"``, ``trace`` its frames."""

    summary: str
    trace: str | None = None

    @classmethod
    def from_exception(cls, error: BaseException) -> AppCrash:
        """The crash of an exception object (the innermost 8 frames of its traceback)."""
        summary = f"{type(error).__name__}: {error}".rstrip(": ")
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__, limit=-8))
        return cls(summary=summary, trace=trace)

    @classmethod
    def from_renderables(cls, renderables: tuple[Any, ...]) -> AppCrash:
        """The crash of ``App.panic(*renderables)`` (a rich ``Traceback`` from the input thread)."""
        from rich.traceback import Traceback

        for r in renderables:
            if isinstance(r, Traceback) and r.trace.stacks:
                stack = r.trace.stacks[0]  # the exception raised last; its causes follow
                frames = "".join(f'  File "{f.filename}", line {f.lineno}, in {f.name}\n'
                                 for f in stack.frames[-8:])
                summary = f"{stack.exc_type}: {stack.exc_value}".rstrip(": ")
                return cls(summary=summary, trace=f"{frames}{summary}\n")
        text = " ".join(str(r) for r in renderables).strip()
        return cls(summary=text or "the app stopped on an error")


def journal_crash(session: Any, crash: AppCrash) -> str | None:
    """Write ``crash`` as an incident into ``session``'s journal (S7).

    Returns:
        ``None`` once written, else why it could not be (the disk refused: the words).
    """
    from gpusession.core.events import IncidentRecord

    try:
        session.journal(IncidentRecord(kind=CRASH_KIND, message=f"the TUI ended on an error: {crash.summary}",
                                       trace=crash.trace))
    except Exception as exc:  # noqa: BLE001 - the crash is said on stderr whatever the disk does
        return str(exc)
    return None


def crash_line(session: Any, crash: AppCrash, not_written: str | None) -> str:
    """The one stderr line of a crash: what ended the app, where the trace is."""
    from gpusession.core.files.secrets import mask_text

    where = (f"the trace is in {session.journal_path}" if not_written is None
             else f"the journal could not be written ({not_written})")
    text = f"gpusession: error: the TUI ended on an error: {crash.summary} ({where}; please report it)"
    return mask_text(" ".join(text.split()))[0]


def terminal_state() -> list[Any] | None:
    """The termios attributes of stdin (echo, canonical mode…), or ``None`` if not a terminal."""
    try:
        import termios

        return termios.tcgetattr(sys.__stdin__.fileno())  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - not a terminal, not POSIX, stdin closed
        return None


def restore_terminal(saved: list[Any] | None, *, alt_screen: bool) -> None:
    """Put the terminal back as it was before the app (echo on, no mouse reports, cursor shown).

    Args:
        saved: what :func:`terminal_state` returned before the app started.
        alt_screen: also leave the alternate screen (the app did not stop its driver).
    """
    if saved is None:
        return
    try:
        import termios

        termios.tcsetattr(sys.__stdin__.fileno(), termios.TCSANOW, saved)  # type: ignore[union-attr]
        out = sys.__stderr__
        if out is not None:
            out.write((_ALT_SCREEN_OFF if alt_screen else "") + _MODES_OFF)
            out.flush()
    except Exception:  # noqa: BLE001 - the terminal went away: nothing to restore
        pass
