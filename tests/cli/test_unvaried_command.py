"""A command that never receives the varied value is said at define time (R1).

``--varied batch`` with ``./predict.sh {corpus} {output}`` runs the same thing for every
variant; the comparison would then rank identical runs. ``new``'s hint carries the value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session

WARNING = "warning: the command never receives the varied batch: no {batch} in its arguments"


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session, command: str,
            values: str = "1,4") -> str:
    (s.folder / "c.jsonl").write_text('{"id": "a", "text": "x", "label": "a"}\n')
    code, out, err = cli(capsys, root, "experiment", s.name, "define", "--id", "e", "--workload", "command",
                         "--command", command, "--corpus", "c.jsonl", "--varied", "batch",
                         "--values", values, "--classes", "a,b", "--threshold", "0.9")
    assert code == 0, err
    return out


def test_a_command_without_the_varied_placeholder_is_warned(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    out = _define(capsys, sessions_root, session, "python3 p.py {corpus} {output}")
    assert WARNING in out and "$GPUSESSION_BATCH" in out


def test_r1_one_value_varies_nothing_and_is_not_warned(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    out = _define(capsys, sessions_root, session, "python3 p.py {corpus} {output}", values="1")
    assert "never receives" not in out


def test_a_command_with_the_varied_placeholder_is_not_warned(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    out = _define(capsys, sessions_root, session, "python3 p.py {corpus} {output} --batch={batch}")
    assert "never receives" not in out


def test_news_hint_passes_the_varied_batch(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, sessions_root, "new", "hint-01", "--gpu", "RTX A5000", "--days", "3")
    assert code == 0
    hint = next(line for line in out.splitlines() if "--varied batch" in line)
    assert "{batch}" in hint
