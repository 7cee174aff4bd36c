"""What the CLI and the report show of hand-measured and hand-edited values: durations and
byte counts never shown as zero (H-22), control characters shown escaped (H-17)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow


def _tiny_row_session(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> Session:
    code, _, err = cli(capsys, sessions_root, "new", "base", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    assert code == 0, err
    s = Session.open(sessions_root, "base")
    s.results.append(ResultRow(
        experiment_id="e1", variant_id="tiny", phase="warm", run_index=1, device="cuda:0",
        elapsed_seconds=1.2e-7, baseline_allocated_bytes=0, baseline_reserved_bytes=0,
        peak_allocated_bytes=1, peak_reserved_bytes=1,
    ))
    s.results.append(ResultRow(experiment_id="e1", variant_id="lost", phase="warm", run_index=1))
    return s


def test_h22_show_and_report_never_show_a_tiny_measured_value_as_zero(
    capsys: pytest.CaptureFixture[str], sessions_root: Path
) -> None:
    s = _tiny_row_session(sessions_root, capsys)
    assert "0.00000012" in (s.folder / "resultats-bruts.csv").read_text()  # full precision kept
    code, out, err = cli(capsys, sessions_root, "show", "base")
    assert code == 0, err
    assert "120 ns" in out and "120–120 ns" in out
    assert "0.000000" not in out
    code, _, err = cli(capsys, sessions_root, "report", "base")
    assert code == 0, err
    report = (s.folder / "report.md").read_text(encoding="utf-8")
    assert "| 120 ns | 120–120 ns |" in report
    assert "| 1 B | 1 B |" in report
    import re

    assert not re.findall(r".{60}0\.000000.{20}", report)


def _hand_edited_note(s: Session) -> None:
    """The note of ``g1.sample`` edited by hand to hold ESC ``[31m`` and NUL (H-17)."""
    toml = s.checklist_toml
    text = toml.read_text(encoding="utf-8")
    assert 'note = "hard cases"' in text, text
    toml.write_text(text.replace('note = "hard cases"', 'note = "\\u001b[31mhard cases\\u0000"'), encoding="utf-8")


def test_h17_control_characters_of_a_hand_edited_note_are_shown_escaped(
    capsys: pytest.CaptureFixture[str], sessions_root: Path
) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "base", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.sample", "hard cases")
    assert code == 0, err
    s = Session.open(sessions_root, "base")
    _hand_edited_note(s)
    code, out, err = cli(capsys, sessions_root, "checklist", "base")
    assert code == 0, err
    assert "\\x1b[31mhard cases\\x00" in out
    assert "\x1b" not in out and "\x00" not in out
    code, _, err = cli(capsys, sessions_root, "report", "base")
    assert code == 0, err
    report = (s.folder / "report.md").read_text(encoding="utf-8")
    assert "\\x1b\\[31mhard cases\\x00" in report  # escaped, and inert Markdown (H-45)
    assert "\x1b" not in report and "\x00" not in report
    # writing such a note through gpusession stays refused
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.sample", "\x1b[31mred")
    assert code == 2 and "control character" in err


def test_h17_control_characters_of_hand_edited_order_notes_are_shown_escaped(
    capsys: pytest.CaptureFixture[str], sessions_root: Path
) -> None:
    for step in (["new", "base", "--gpu", "RTX A5000", "--lots", "1", "--days", "7"],
                 ["order", "base", "set", "--number", "ORD-1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7"]):
        code, _, err = cli(capsys, sessions_root, *step)
        assert code == 0, (step, err)
    s = Session.open(sessions_root, "base")
    toml = s.folder / "order.toml"
    text = toml.read_text(encoding="utf-8")
    assert 'note = "' in text, text
    toml.write_text(text.replace('note = "', 'note = "\\u001b[31m\\u0000', 1), encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "order", "base", "show")
    assert code == 0, err
    assert "\\x1b[31m\\x00" in out and "\x1b" not in out and "\x00" not in out
