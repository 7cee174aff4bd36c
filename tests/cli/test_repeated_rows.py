"""A results row copied by hand: named once as repeating its run, counted once by every reader."""

from __future__ import annotations

import csv
import io
import json
import threading
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session


def _journal_every_row_ended(s: Session) -> None:
    """Journal the end of each row's run, as the runner does after writing the row."""
    from gpusession.core.events.records import RunFinishedRecord

    path = s.folder / "resultats-bruts.csv"
    for row in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")):
        key = ":".join(row[c] for c in ("experiment_id", "phase", "variant_id", "run_index"))
        s.journal(RunFinishedRecord(run_key=key, experiment_id=row["experiment_id"], variant_id=row["variant_id"],
                                    phase=row["phase"], run_index=int(row["run_index"]), ok=True))


def _copy_row(csv_path: Path, data_row: int) -> tuple[int, int]:
    """Append a copy of data row ``data_row`` (0-based); (its line, the copy's line)."""
    lines = csv_path.read_text(encoding="utf-8").splitlines(keepends=True)
    with csv_path.open("a", encoding="utf-8") as fh:
        fh.write(lines[1 + data_row])
    return 2 + data_row, len(lines) + 1


def test_a_row_copied_by_hand_is_named_once_and_counted_once(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = measured_session.name
    _journal_every_row_ended(measured_session)
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


def test_an_experiment_run_twice_keeps_every_row(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each run of a second invocation has the first's key and its own end in the journal."""
    from gpusession.testing import FakeRunner

    rows_once = json.loads(cli(capsys, sessions_root, "show", measured_session.name, "--json")[1])["rows"]
    FakeRunner(measured_session, "batch-sweep", lambda _e: None, threading.Event()).run()
    _journal_every_row_ended(measured_session)  # each key: two rows, two ends
    doc = json.loads(cli(capsys, sessions_root, "show", measured_session.name, "--json")[1])
    assert doc["rows"] == 2 * rows_once and doc["repeated_rows"] == []
    code, line, _ = cli(capsys, sessions_root, "status", measured_session.name)
    assert code == 0 and f" · {2 * rows_once} result rows · " in line


def test_without_a_journaled_end_no_row_is_judged(measured_session: Session) -> None:
    from gpusession.core.records.results import check_rows

    path = measured_session.folder / "resultats-bruts.csv"
    text = path.read_text(encoding="utf-8")
    doubled = text + "".join(text.splitlines(keepends=True)[1:])
    assert check_rows(path, doubled, {}) == [] and check_rows(path, doubled, None) == []
