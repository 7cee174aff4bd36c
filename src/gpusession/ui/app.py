"""The gpusession Textual app and the factory the CLI and the tests share.

Who calls it: ``gpusession [NAME]`` / ``gpusession open`` (:mod:`gpusession.commands.tui`)
and ``gpusession demo`` call :func:`run_app`; tests and ``benchmarks/bench_startup.py``
call :func:`build_app` with a fake clock, a fake NVML and a fake runner.

The app itself is thin: it holds the :class:`~gpusession.ui.context.UiContext`, has
one :class:`~gpusession.ui.screens.MainScreen` as its default screen, loads ``app.tcss``
and offers the command palette. It never imports torch (M5).

Signals (H-14): SIGHUP (the terminal or ssh connection went away) and SIGTERM
end the run started from the Run pane at once (its worker groups are killed, the journal
says at which run, the runner releases the lock), then the app exits cleanly, so the
terminal gets its normal screen back (no alternate screen, no mouse mode left on); the
exit code is 128 + the signal's number. The Run pane runs the runner in a Textual thread
worker whose thread forks the workers and lives until the run returns, as the
parent-death signal needs (:mod:`gpusession.bench.lifetime`).

Ctrl-C (the key, or SIGINT when the terminal sends signals) cancels the run in flight at
the next run boundary, as ``c`` and the CLI's first Ctrl-C do, and otherwise says how to
quit. Input survives any byte (H-23, :mod:`gpusession.ui.driver`); an error that ends the
app is recorded (:mod:`gpusession.ui.crash`) and :func:`run_app` exits 1 with one line,
an incident in the journal and the terminal restored — never 0. The recording overrides
two Textual internals, ``App._handle_exception`` and ``App._fatal_error`` (Textual is
pinned; ``tests/ui/test_driver.py`` fails when they change).
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.widgets import TabbedContent

from gpusession.core.files.clock import utcnow
from gpusession.core.folder.processes import ENDING_SIGNALS, interrupt_all
from gpusession.core.folder.session import Session
from gpusession.ui.context import UiContext
from gpusession.ui.crash import (
    CRASH_EXIT_CODE,
    AppCrash,
    crash_line,
    journal_crash,
    restore_terminal,
    terminal_state,
)
from gpusession.ui.palette import GpuSessionCommands
from gpusession.ui.screens import MainScreen


def _terminal_gone() -> bool:
    """True when none of stdin/stdout/stderr is a terminal any more (a hang-up: EIO)."""
    try:
        import termios
    except ImportError:  # not POSIX: no hang-up to detect
        return False
    for fd in (0, 1, 2):
        try:
            termios.tcgetattr(fd)
            return False
        except (termios.error, OSError, ValueError):
            continue
    return True


class GpuSessionApp(App[int]):
    """One session in one screen. Quit is the only priority binding (design.md, style point 7)."""

    CSS_PATH = "app.tcss"
    TITLE = "gpusession"
    ESCAPE_TO_MINIMIZE = False  # H-11
    COMMANDS = App.COMMANDS | {GpuSessionCommands}
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
        Binding("q", "quit_q", "Quit", show=False, id="app.quit_q"),
        # Textual's own ctrl+c only says how to quit; here it also cancels a run (the CLI's Ctrl-C)
        Binding("ctrl+c", "interrupt", "Cancel run", show=False, id="app.interrupt"),
        # shown only while the header warns that the package ends soon or ended.
        Binding("x", "extension", "Extend?", id="app.extension"),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the extension key unless the header shows an end-of-package warning."""
        if action == "interrupt":
            return True
        if action == "extension":
            try:
                return self.main.header.warning is not None
            except (StopIteration, NoMatches):
                return False
        return True

    async def action_extension(self) -> None:
        """Open the Cost pane on its extension options: the table near its end."""
        await self.main.action_show_pane("cost")
        self.main.pane("cost").query_one("#cost-out").scroll_end(animate=False)

    def __init__(self, ctx: UiContext) -> None:
        super().__init__(driver_class=_terminal_driver())
        self.ctx = ctx
        self.title = f"gpusession — {ctx.session.name}"
        self._quit_armed = False
        self._ending_signal: str | None = None
        self._signals_installed: list[int] = []
        #: the error that ended the app (H-23), ``None`` while none did
        self.crash: AppCrash | None = None
        #: a run was in flight when the app crashed (its cancel was requested)
        self.crash_left_a_run = False
        #: the cyclic GC is paused until the first frame (:meth:`pause_gc_until_first_frame`)
        self.gc_paused = False
        #: what the first reads and each run's end reload read is frozen (:meth:`freeze_after_reads`);
        #: set by :meth:`pause_gc_until_first_frame`, i.e. by :func:`run_app` only
        self.freezes_reads = False
        #: the freezes :meth:`freeze_after_reads` made so far (a count, for the tests)
        self.reads_frozen = 0

    def pause_gc_until_first_frame(self) -> None:
        """Freeze what start-up made and pause the cyclic GC until the first frame is painted (A5).

        Why: before its first frame ``gpusession NAME`` holds about 60,000 long-lived objects
        (modules, the session's document, the widgets); the full collection that start-up
        triggered walked them all while the first frame was laid out (20-35 ms of CPU,
        measured at 100 and 10,000 rows). :func:`gc.freeze` moves them out of every later
        collection (they live as long as the app), and the collector waits for the first
        frame, as Textual pauses it for a smooth scroll (``App.PAUSE_GC_ON_SCROLL``).
        Resumed by :meth:`resume_gc` once the frame is painted, or when the app ends before
        (the command line pauses it earlier, from the TUI's first import: it is on after the
        first frame either way). What a reference cycle made garbage before the freeze stays
        (a one-off, small). Called by :func:`run_app` only: a test's process builds many apps
        and keeps its collector as it is.
        """
        gc.freeze()
        gc.disable()
        self.gc_paused = True
        self.freezes_reads = True

    def resume_gc(self) -> None:
        """Resume the cyclic GC if :meth:`pause_gc_until_first_frame` paused it."""
        if self.gc_paused:
            self.gc_paused = False
            gc.enable()

    #: workers a freeze does not wait for: a run lasts as long as it lasts; a freeze's own
    FREEZE_SKIPS_GROUPS = frozenset({"run", "gc-freeze"})

    def freeze_after_reads(self) -> None:
        """Freeze what the reads in flight make, once they have ended (A5); the collector stays on.

        Why: a long-lived TUI over a large session holds every object of what its panes read
        (the session's record, the Validation and Run tables, the checklist and its
        evidence) as long as it runs; each full pass of the cyclic GC walked them all on the
        event loop, the longest tick of a key (80-136 ms of loop CPU on 2 cores,
        ``benchmarks/bench_tui_stall.py``). :func:`gc.freeze` moves them out of every later
        pass. Called once the first frame's background reads have started and after each
        run's end reload: the workers then in flight (not a run, not a freeze) are awaited,
        then one :func:`gc.freeze`. Only an app started by :func:`run_app` freezes (a
        test's process builds many apps). What a reference cycle made garbage before a
        freeze stays until the app ends (one-offs, as with start-up's freeze).
        """
        if not self.freezes_reads:
            return
        reads = [w for w in self.workers if not w.is_finished and w.group not in self.FREEZE_SKIPS_GROUPS]
        self.run_worker(self._freeze_when_read(reads), group="gc-freeze", exit_on_error=False)

    async def _freeze_when_read(self, reads: list[Any]) -> None:
        await asyncio.gather(*(w.wait() for w in reads), return_exceptions=True)  # failed or cancelled: read
        gc.freeze()
        self.reads_frozen += 1

    def on_run_pane_run_finished(self, _msg: Any) -> None:
        """A run ended: the screen started its reload (the message bubbles up from it); freeze after."""
        self.freeze_after_reads()

    def on_run_pane_followed_run_ended(self, _msg: Any) -> None:
        """A run followed from another process ended: as :meth:`on_run_pane_run_finished`."""
        self.freeze_after_reads()

    def get_default_screen(self) -> MainScreen:
        # The main screen is the bottom of the stack: no blank default screen composed,
        # laid out and painted before it (start-up time).
        # NO_COLOR is honoured by Textual itself (App.no_color strips colour); every
        # state is also written in words (H-11), so nothing is lost without colour.
        return MainScreen(self.ctx)

    def on_mount(self) -> None:
        self._install_signal_handlers()

    def on_unmount(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._signals_installed:
            loop.remove_signal_handler(sig)
        self._signals_installed = []

    def _install_signal_handlers(self) -> None:
        """SIGHUP/SIGTERM end the run at once and the app cleanly; SIGINT is Ctrl-C."""
        if threading.current_thread() is not threading.main_thread():
            return  # the loop of a test harness thread: signals are the main thread's
        loop = asyncio.get_running_loop()
        handlers: list[tuple[int, Callable[..., object], tuple[object, ...]]] = [
            (int(sig), self.end_on_signal, (int(sig),)) for sig in ENDING_SIGNALS]
        handlers.append((int(signal.SIGINT), self.action_interrupt, ()))
        for sig, handler, args in handlers:
            try:
                loop.add_signal_handler(sig, handler, *args)
            except (NotImplementedError, RuntimeError, ValueError):
                continue
            self._signals_installed.append(sig)

    def action_interrupt(self) -> None:
        """Ctrl-C: cancel the run in flight at the next run boundary, else say how to quit."""
        if self.run_in_flight():
            pane = self.main.pane("run")
            if pane.cancel_event.is_set():
                self.notify("Cancel already requested: the run stops at the next run boundary. "
                            "Press q to quit.", title="Ctrl-C")
                return
            pane.action_cancel()
            self.notify("Cancel requested: the run stops at the next run boundary "
                        "(as c does). Press q to quit.", title="Ctrl-C", severity="warning")
            return
        self.notify("Press q to quit (ctrl+q from a form).", title="Ctrl-C")

    # -- crashes (H-23) ----------------------------------------------------------
    def _note_crash(self, crash: AppCrash) -> None:
        """Keep the first error that ends the app; ask a run in flight to stop."""
        if self.crash is not None:
            return
        self.crash = crash
        try:
            if self.run_in_flight():
                self.main.pane("run").cancel_event.set()  # the UI is going: stop at the next boundary
                self.crash_left_a_run = True
        except Exception:  # noqa: BLE001 - the app is already broken; the crash is what is said
            pass

    def _handle_exception(self, error: Exception) -> None:
        """Textual's one funnel of unhandled errors: record the error, then let Textual end."""
        self._note_crash(AppCrash.from_exception(error))
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        """No traceback with locals on the terminal (secrets): run_app says one line."""
        self.bell()
        self.panic()

    def panic(self, *renderables: Any) -> None:
        """End the app on an error; a traceback (e.g. the input thread's) is recorded, not printed."""
        from rich.traceback import Traceback

        self._note_crash(AppCrash.from_renderables(renderables))
        super().panic(*(r for r in renderables if not isinstance(r, Traceback)))

    def end_on_signal(self, signum: int) -> None:
        """SIGHUP or SIGTERM arrived: end the run now, then leave the app (H-14).

        Called on the event loop (``loop.add_signal_handler``). The run's worker groups
        are killed, the runner journals "interrupted by …" and releases the lock; once
        the Run pane's thread worker returned, the app exits with 128 + ``signum``, which
        restores the terminal. A second signal while ending changes nothing.
        """
        if self._ending_signal is not None:
            return
        self._ending_signal = signal.Signals(signum).name
        self.run_worker(self._end_after_signal(self._ending_signal, 128 + signum),
                        group="signal", exclusive=True, exit_on_error=False)

    async def _end_after_signal(self, name: str, code: int) -> None:
        await asyncio.to_thread(interrupt_all, name)
        runs = [w for w in self.workers if w.group == "run" and not w.is_finished]
        for w in runs:
            try:
                await asyncio.wait_for(w.wait(), timeout=30.0)
            except Exception:  # noqa: BLE001 - the run's own failure is in the journal; leave anyway
                pass
        if not self.is_headless and _terminal_gone():
            # The terminal hung up (ssh drop): there is no screen to restore, and the
            # driver would wait forever to write to it. The run has ended and the lock is
            # released (the journal is fsynced record by record): leave now.
            os._exit(code)
        self.exit(code, return_code=code)

    def on_ready(self) -> None:
        # Ready: the first screen is laid out; after the next refresh it is painted.
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        self.resume_gc()
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                screen.after_first_frame()
        self.freeze_after_reads()  # the reads after_first_frame started

    @property
    def main(self) -> MainScreen:
        return next(s for s in self.screen_stack if isinstance(s, MainScreen))

    def run_palette_action(self, pane: str, action: str | None) -> None:
        """Run a palette entry: show its pane (built if not shown yet), then its action."""
        if action == "export_report":
            self.export_report()
            return
        self.call_later(self._show_and_act, pane, action)

    async def _show_and_act(self, pane: str, action: str | None) -> None:
        main = self.main
        await main.action_show_pane(pane)
        if action:
            getattr(main.pane(pane), f"action_{action}")()

    @work(thread=True, group="report", exclusive=True, exit_on_error=False)
    def export_report(self) -> None:
        """``gpusession report NAME`` in a subprocess (the report module's own CLI)."""
        import subprocess

        s = self.ctx.session
        cmd = [sys.executable, "-m", "gpusession", "--sessions-dir", str(s.folder.parent), "report", s.name]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.call_from_thread(self.notify, str(exc), title="report not written", severity="error")
            return
        line = (done.stdout + done.stderr).strip() or f"exit {done.returncode}"
        sev = "information" if done.returncode == 0 else "error"
        self.call_from_thread(self.notify, line, title="export report", severity=sev)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """Save an SVG of the screen into ``screenshots/`` of the session folder; say where in plain words.

        Textual's own delivery saves to ``~/Downloads``, absent on a rented server
        ("Failed to save screenshot"), and says the path through a markup tag that our
        plain-text toasts would show raw. Here the file is
        ``<session>/screenshots/<pane>-<UTC time of the app's clock>.svg`` (mode 0600, the
        folder 0700, never through a link, never over an earlier one: ``-2``, ``-3`` …),
        the session folder's conventions (S7). The palette's "Save screenshot" and
        ``action_screenshot`` both come here.

        Args:
            filename: a file name for the SVG (its last part only); default the pane and time.
            path: ignored: a screenshot belongs to the session it shows.
            time_format: ignored (the name's time is always ``%Y%m%dT%H%M%SZ``, UTC).

        Returns:
            The path written, ``None`` when it could not be (the toast says why).
        """
        from gpusession.core.files.errors import BadInput
        from gpusession.core.files.safefile import open_private

        folder = self.ctx.session.folder
        try:
            pane = self.main.query_one(TabbedContent).active or "screen"
        except (StopIteration, NoMatches):
            pane = "screen"
        stem = os.path.basename(filename or "").removesuffix(".svg") or \
            f"{pane}-{self.ctx.now().strftime('%Y%m%dT%H%M%SZ')}"
        svg = self.export_screenshot().encode("utf-8")
        target = folder / "screenshots" / f"{stem}.svg"
        try:
            for n in range(2, 1000):
                try:  # 0600, screenshots/ made 0700; a linked folder or file is refused
                    fd = open_private(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, root=folder)
                    break
                except FileExistsError:
                    target = folder / "screenshots" / f"{stem}-{n}.svg"
            else:
                raise BadInput("holds 999 screenshots of that name already", path=target.parent)
            with os.fdopen(fd, "wb") as fh:
                fh.write(svg)
        except (BadInput, OSError) as exc:
            self.notify(f"not saved: {exc}", title="Screenshot", severity="error")
            return None
        self.notify(f"Saved to {target}", title="Screenshot")
        return str(target)

    def run_in_flight(self) -> bool:
        try:
            return bool(self.main.pane("run").running)
        except (StopIteration, NoMatches):  # no main screen, or the run pane never shown
            return False

    def action_quit_q(self) -> None:
        """Plain ``q`` quits from the main screen only (in a form it would lose the form)."""
        if isinstance(self.screen, MainScreen):
            self.action_quit()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast as plain text: what it says is never read as markup.

        A toast often holds words from elsewhere (an error, an incident, a path, a hint
        such as ``pip install -e '.[demo]'``); as Textual markup, ``[demo]`` would be
        swallowed and ``[b]`` would restyle it. So ``markup`` is ignored (always off),
        for every pane's ``notify`` too (a widget's goes through here).
        """
        kw: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        super().notify(message, title=title, severity=severity, markup=False, **kw)

    def action_quit(self) -> None:  # type: ignore[override]
        """Quit; during a run, the first press only asks the run to stop (H-12)."""
        if self.run_in_flight():
            self.main.pane("run").action_cancel()
            if not self._quit_armed:
                self._quit_armed = True
                self.notify(
                    "A run is in progress: it stops at the next run boundary. Press q again "
                    "to leave now; gpusession then waits for the run in flight to end.",
                    title="quit",
                    severity="warning",
                )
                return
        self.exit(0)


def build_app(
    session: Session,
    *,
    clock: Callable[[], datetime] | None = None,
    nvml: Any | None = None,
    runner_factory: Callable[..., Any] | None = None,
    host_memory: Callable[[], Any] | None = None,
    poll_s: float = 1.0,
    tz: tzinfo | None = None,
    check_host: bool | None = None,
    monotonic: Callable[[], float] | None = None,
) -> GpuSessionApp:
    """Build the app for ``session`` (the CLI and the tests use this same factory).

    Args:
        session: an open :class:`~gpusession.core.folder.session.Session`.
        clock: returns "now" as an aware UTC datetime (default :func:`utcnow`).
        nvml: a pynvml-like object for NVML readings (default: the real pynvml).
        runner_factory: ``(session, experiment_id, on_event, cancel) -> runner`` whose
            blocking ``run()`` returns the outcome (default: the bench Runner).
        host_memory: returns a ``HostMemory`` (default: psutil).
        poll_s: memory refresh period in seconds (``0``: one reading, for snapshots).
        tz: zone for local times (default: the machine's).
        check_host: check the GPU against the order on the first open on this host
            (default: only with the real NVML).
        monotonic: seconds that never step back, for elapsed times shown (default
            :func:`time.monotonic`).
    """
    ctx = UiContext(
        session=session,
        clock=clock or utcnow,
        nvml=nvml,
        host_memory=host_memory,
        runner_factory=runner_factory,
        poll_s=poll_s,
        tz=tz,
        check_host=check_host,
        monotonic=monotonic or time.monotonic,
    )
    return GpuSessionApp(ctx)


def _terminal_driver() -> Any:
    """The driver whose input survives any byte on POSIX (H-23); ``None``: Textual's choice.

    ``TEXTUAL_DRIVER`` (Textual's own setting) still wins.
    """
    from textual import constants

    if os.name != "posix" or constants.DRIVER:
        return None
    from gpusession.ui.driver import TerminalDriver

    return TerminalDriver


def run_app(session: Session) -> int:
    """Run the TUI on ``session`` in this terminal; returns the exit code.

    Returns:
        0 on quit; 128 + the signal after SIGHUP/SIGTERM; 1 when the app ended on an
        error (H-23): one line on stderr, an incident in the journal, the terminal's
        modes restored, and a run in flight asked to stop at the next run boundary.
    """
    app = build_app(session)
    saved = terminal_state()
    app.pause_gc_until_first_frame()
    try:
        result = app.run()
    except KeyboardInterrupt:
        restore_terminal(saved, alt_screen=True)
        raise
    except Exception as exc:  # noqa: BLE001 - an error Textual did not catch: the same as a crash
        restore_terminal(saved, alt_screen=True)
        app._note_crash(AppCrash.from_exception(exc))
        result = None
    finally:
        app.resume_gc()  # an app ended before its first frame
    if app._ending_signal is not None:  # ended by SIGHUP/SIGTERM: the run has ended too
        return int(result or 1)
    if app.crash is None and app.return_code not in (None, 0):
        app._note_crash(AppCrash(summary=f"the app ended with code {app.return_code}"))
    if app.crash is not None:
        restore_terminal(saved, alt_screen=False)
        print(crash_line(session, app.crash, journal_crash(session, app.crash)), file=sys.stderr)
        if app.crash_left_a_run:
            print("gpusession: waiting for the run in flight to end (cancel requested at the next "
                  "run boundary)…", file=sys.stderr)
        return CRASH_EXIT_CODE
    if app.run_in_flight():
        print(
            "gpusession: waiting for the run in flight to end (cancel requested at the next "
            "run boundary)…",
            file=sys.stderr,
        )
    return int(result or 0)
