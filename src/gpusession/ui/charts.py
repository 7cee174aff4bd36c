"""One-row bar charts scaled from a fixed floor, so small differences look small.

Who calls it: the run pane (warm-run durations per variant, floor 0 s) and the memory
pane (host RAM / GPU memory used, 0–100 %). Textual's own ``Sparkline`` scales each
chart from its minimum to its maximum: warm runs of 0.067 s and 0.068 s, or RAM at 4 %
and 4.4 %, would then span the whole height, from an empty bar to a full one. Here the
bar height is ``(value − low) / (high − low)``, with ``low`` fixed (0 by default) and
``high`` fixed or the largest value, so 0.067 and 0.068 s are bars of the same height.
The figures themselves are always printed beside the chart in words (H-11).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

BARS = "▁▂▃▄▅▆▇█"


def bar_glyphs(data: Sequence[float], width: int, *, low: float = 0.0, high: float | None = None) -> str:
    """``width`` bar characters for ``data`` in order (each value gets an equal share).

    Args:
        data: the values, oldest first (any unit; ``low``/``high`` in the same unit).
        width: the number of characters wanted (≥ 0).
        low: the value drawn as the lowest bar ``▁`` (the floor; 0 by default).
        high: the value drawn as the full bar ``█`` (default: ``max(data)``).

    Returns:
        A string of exactly ``width`` characters, or ``width`` spaces when ``data`` is
        empty (nothing measured yet is not drawn as zero, C3).
    """
    if width <= 0:
        return ""
    if not data:
        return " " * width
    top = max(data) if high is None else high
    extent = top - low
    out: list[str] = []
    n = len(data)
    for col in range(width):
        start = col * n // width
        end = max(start + 1, (col + 1) * n // width)
        value = max(data[start:end])
        ratio = 1.0 if extent <= 0 else min(1.0, max(0.0, (value - low) / extent))
        out.append(BARS[min(len(BARS) - 1, int(ratio * len(BARS)))])
    return "".join(out)


class Bars(Widget):
    """A one-row bar chart from a fixed floor (see the module docstring).

    Args:
        data: the values, oldest first.
        low: the floor (drawn as ``▁``).
        high: the full-scale value, or ``None`` for the largest value.
    """

    DEFAULT_CSS = """
    Bars {
        height: 1;
        color: $accent;
    }
    """

    data: reactive[list[float]] = reactive(list, always_update=True)

    def __init__(self, data: Sequence[float] = (), *, low: float = 0.0, high: float | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.low = low
        self.high = high
        self.set_reactive(Bars.data, list(data))

    def render(self) -> Text:
        return Text(bar_glyphs(self.data, self.size.width, low=self.low, high=self.high))
