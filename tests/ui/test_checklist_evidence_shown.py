"""The Checklist pane paints a bounded evidence per item, whatever the session's size (A5).

One line per experiment (``p1.fixed-before`` of 500 experiments: 45 KB) was wrapped and
painted on the first frame; the pane shows the first lines and says how many are left and
where the whole text is.
"""

from __future__ import annotations

from types import SimpleNamespace

from gpusession.ui.panes.checklist import (
    EVIDENCE_SHOWN_CHARS,
    EVIDENCE_SHOWN_LINES,
    item_prompt,
    shown_evidence,
)


def _item() -> SimpleNamespace:
    return SimpleNamespace(done=False, text="Fix the protocol before measuring", at=None, note="")


def test_a5_a_short_evidence_is_shown_whole() -> None:
    text = "sweep-000: protocol stored 2026-12-01T00:00:00+00:00, before the first run"
    assert shown_evidence(text) == text
    assert item_prompt(_item(), text).plain.endswith(f"evidence: {text}")


def test_a5_an_evidence_of_500_lines_is_shown_by_its_first_lines_and_what_is_left() -> None:
    lines = [f"sweep-{k:03d}: protocol stored 2026-12-01T00:00:00+00:00, before the first run" for k in range(500)]
    shown = item_prompt(_item(), "\n".join(lines)).plain
    assert lines[0] in shown and lines[EVIDENCE_SHOWN_LINES - 1] in shown and lines[EVIDENCE_SHOWN_LINES] not in shown
    assert f"{500 - EVIDENCE_SHOWN_LINES} more lines: `gpusession checklist` prints the whole evidence" in shown
    assert len(shown) < EVIDENCE_SHOWN_CHARS + 300  # the same at 5,000 lines


def test_a5_one_long_line_is_cut_at_a_word() -> None:
    text = " ".join(f"word{k}" for k in range(2_000))
    shown = shown_evidence(text)
    assert len(shown) < EVIDENCE_SHOWN_CHARS + 100 and shown.startswith("word0 word1 ")
    assert "(the rest of the line: `gpusession checklist` prints the whole evidence)" in shown
    assert shown.split(" … ")[0].split(" ")[-1].startswith("word")  # no word cut in half
