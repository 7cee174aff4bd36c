"""At 80×24 and 60×20 no pane shows a word cut at the right edge.

A text that does not fit wraps at a word or ends with "…"; a word cut by the edge
("x Exten", "1 failed (kept; th") reads as another word. The test renders each pane,
the Define form and the panes after a rejected run at the two small sizes and at a wide
one (the same app, resized): every line that reaches the right edge must end with a
word that the wide rendering also shows whole, or with "…".
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from ui.pilot import MakeApp, settle

SMALL_SIZES = [(80, 24), (60, 20)]
WIDE = (220, 70)
#: Glyphs of scrollbars, bars and sparklines: not text.
_NOT_TEXT = "▁▂▃▄▅▆▇█▏▎▊▍▌▋▐▔━╸╺─│ "
_WORD = re.compile(r"[A-Za-z][\w'’.-]*[A-Za-z0-9]|[A-Za-z]")


def _lines(app: Any) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def _vocabulary(lines: list[str]) -> set[str]:
    return {m.group(0) for line in lines for m in _WORD.finditer(line)}


def _cut_words(lines: list[str], width: int, whole: set[str]) -> list[str]:
    """Lines whose text runs into the right edge with a word the wide view never shows."""
    bad = []
    for line in lines:
        text = line.rstrip(_NOT_TEXT)
        if len(text) < width - 3 or text.endswith("…"):
            continue  # ends before the edge (and its scrollbar), or says it was shortened
        last = text.split()[-1] if text.split() else ""
        words = _WORD.findall(last)
        if words and words[-1] not in whole and last[-1].isalpha():
            bad.append(line)
    return bad


async def _check_here(pilot: Any, app: Any, what: str) -> list[str]:
    found = []
    await pilot.resize_terminal(*WIDE)
    await pilot.pause(0.2)
    whole = _vocabulary(_lines(app))
    for width, height in SMALL_SIZES:
        await pilot.resize_terminal(width, height)
        await pilot.pause(0.2)
        found += [f"{what} at {width}×{height}: {line!r}"
                  for line in _cut_words(_lines(app), width, whole)]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("accepted", [True, False], ids=["accepted-run", "rejected-run"])
async def test_no_pane_cuts_a_word_at_80x24_or_60x20(session: Any, make_app: MakeApp, accepted: bool) -> None:
    from gpusession.testing import FakeRunner

    app = make_app(runner_factory=FakeRunner.factory(step_s=0.0, accepted=accepted))
    found: list[str] = []
    async with app.run_test(size=SMALL_SIZES[0]) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        await pilot.pause(0.5)
        await app.workers.wait_for_complete()
        for key in "123456":
            await pilot.press(key)
            await pilot.pause(0.1)
            found += await _check_here(pilot, app, f"pane {key}")
        if accepted:
            await pilot.press("2", "d")
            await pilot.pause(0.3)
            found += await _check_here(pilot, app, "the Define form")
    assert not found, "\n".join(found)


def test_the_check_finds_a_cut_word() -> None:
    """The check itself: a footer cut to "x Exten" is found, "…" and a wrapped line are not."""
    whole = {"Extend", "Quit", "package"}
    assert _cut_words([" ^q Quit  x Exten"], 17, whole) == [" ^q Quit  x Exten"]
    assert _cut_words([" ^q Quit  x Exte…"], 17, whole) == []
    assert _cut_words([" ^q Quit  x       "], 18, whole) == []
    assert _cut_words([" ^q Quit  x Extend"], 18, whole) == []
