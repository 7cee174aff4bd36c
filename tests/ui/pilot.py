"""Plain helpers of the Pilot tests in ``tests/ui`` (fixtures are in ``tests/ui/conftest.py``).

Imported as ``from ui.pilot import settle, text_of`` (``tests/`` is on pytest's ``pythonpath``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from textual.geometry import Region
from textual.widgets import Static

#: The type of the ``make_app`` fixture: ``make_app(nvml=..., runner_factory=..., poll_s=...)``.
MakeApp = Callable[..., Any]

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


async def workers_done(pilot: Any, app: Any, rounds: int = 200) -> None:
    """Wait until no worker of the app runs and what they handed to the event loop is shown.

    The panes read the session in thread workers, some started after a refresh: each
    round waits for the workers running now, then lets the loop handle what they posted
    (and start what that starts). Bounded by ``rounds``, never by a stopwatch; a worker
    replaced by a newer one (exclusive) counts as done. Raises ``AssertionError`` when
    workers still run after ``rounds`` rounds.
    """
    from textual.worker import WorkerState

    for _ in range(rounds):
        await pilot.pause()
        busy = [w for w in app.workers if not w.is_finished]
        if not busy:
            return
        await asyncio.gather(*(w.wait() for w in busy if w.state != WorkerState.PENDING),
                             return_exceptions=True)
    raise AssertionError(f"workers still running after {rounds} rounds: {list(app.workers)}")


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
