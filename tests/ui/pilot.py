"""Plain helpers of the Pilot tests in ``tests/ui`` (fixtures are in ``tests/ui/conftest.py``).

Imported as ``from ui.pilot import settle, text_of`` (``tests/`` is on pytest's ``pythonpath``).
``workers_done`` is :func:`gpusession.testing.workers_done`, the one wait for workers the
tests and ``benchmarks/bench_tui_stall.py`` share.
"""

from __future__ import annotations

import asyncio
import re
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from textual.geometry import Region
from textual.widgets import Static

from gpusession.testing import workers_done

#: The type of the ``make_app`` fixture: ``make_app(nvml=..., runner_factory=..., poll_s=...)``.
MakeApp = Callable[..., Any]

__all__ = ["MakeApp", "SIZE", "HeldRead", "background_started", "glyphs", "rounds_until", "settle", "shown_on_screen",
           "text_of", "unique", "workers_done"]

#: The smallest tmux pane a person uses.
SIZE = (80, 24)


async def background_started(app: Any, timeout_s: float = 10.0) -> None:
    """Wait until the app has started its after-first-frame reads (GPU words, evidence).

    They start once the first frame is painted, so ``workers.wait_for_complete()`` called
    earlier would find nothing to wait for (a race under load).
    """
    await asyncio.wait_for(app.main.background_started.wait(), timeout_s)


async def settle(pilot: Any, app: Any) -> None:
    """Let workers finish; build the panes not shown yet (they are built on first show)."""
    await pilot.pause(0.05)
    await background_started(app)
    await app.main.build_all_panes()
    await workers_done(pilot, app)
    await pilot.pause(0.05)


def text_of(app: Any, selector: str) -> str:
    """The rendered text of the ``Static`` at ``selector`` on the current screen."""
    return str(app.screen.query_one(selector, Static).render())


def unique(messages: Iterable[Any]) -> list[Any]:
    """The message hook sees a bubbling message once per node; keep each once."""
    out: list[Any] = []
    for m in messages:
        if not any(m is o for o in out):
            out.append(m)
    return out


def shown_on_screen(app: Any, widget: Any) -> bool:
    """The widget is painted somewhere in the terminal (not scrolled or clipped away)."""
    if not widget.display:
        return False
    region = app.screen.find_widget(widget).visible_region
    return bool(region) and region.bottom <= app.size.height and region.right <= app.size.width


def glyphs(widget: Any) -> str:
    """The characters of the first line a (chart) widget draws."""
    return "".join(strip.text for strip in widget.render_lines(Region(0, 0, widget.size.width, 1)))


async def rounds_until(pilot: Any, ok: Callable[[], bool], rounds: int = 400) -> None:
    """Let the loop run until ``ok()`` holds, bounded by ``rounds`` pauses (never a stopwatch).

    Raises:
        AssertionError: ``ok()`` still false after ``rounds`` rounds.
    """
    for _ in range(rounds):
        if ok():
            return
        await pilot.pause()
    raise AssertionError(f"never came in {rounds} rounds")


class HeldRead:
    """``owner.name`` (a read) patched so that each call a pane's module makes is recorded and held.

    ``reads`` gets one entry per call made from a file ``caller`` matches: whether it ran
    on the event loop's thread; the call then waits on ``release`` (at most ``hold_s``
    seconds, a guard against a hang) so a test sees what the pane shows meanwhile.
    """

    def __init__(self, monkeypatch: Any, owner: Any, name: str, caller: re.Pattern[str], hold_s: float) -> None:
        self.release = threading.Event()
        self.reads: list[bool] = []
        real = getattr(owner, name)

        def held(*a: Any, **kw: Any) -> Any:
            if any(caller.search(f.filename) for f in traceback.extract_stack()):
                self.reads.append(threading.current_thread() is threading.main_thread())
                self.release.wait(hold_s)
            return real(*a, **kw)

        monkeypatch.setattr(owner, name, held)
