"""A results row copied by hand: named once as repeating its run, counted once by every reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session


def _copy_row(csv_path: Path, data_row: int) -> tuple[int, int]:
    """Append a copy of data row ``data_row`` (0-based); (its line, the copy's line)."""
    lines = csv_path.read_text(encoding="utf-8").splitlines(keepends=True)
    with csv_path.open("a", encoding="utf-8") as fh:
        fh.write(lines[1 + data_row])
    return 2 + data_row, len(lines) + 1


def test_a_row_copied_by_hand_is_named_once_and_counted_once(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = measured_session.name
    before = json.loads(cli(capsys, sessions_root, "show", name, "--json")[1])
    first, copy = _copy_row(measured_session.folder / "resultats-bruts.csv", 3)
    code, out, err = cli(capsys, sessions_root, "show", name)
    assert code == 0, err
    said = [ln for ln in out.splitlines() if "repeats the run" in ln]
    assert len(said) == 1 and f"line {copy} repeats the run of line {first}" in said[0], out
    assert "counted once" in said[0]
    assert f"results   {before['rows']} rows" in out
    after = json.loads(cli(capsys, sessions_root, "show", name, "--json")[1])
    assert after["rows"] == before["rows"] and len(after["repeated_rows"]) == 1
    assert [r["n"] for r in after["summary"]] == [r["n"] for r in before["summary"]]
    code, line, _ = cli(capsys, sessions_root, "status", name)
    assert code == 0 and f" · {before['rows']} result rows · " in line


def test_rows_of_distinct_runs_are_never_taken_for_repeats(measured_session: Session) -> None:
    from gpusession.core.records.results import check_rows

    path = measured_session.folder / "resultats-bruts.csv"
    assert check_rows(path, path.read_text(encoding="utf-8")) == []
