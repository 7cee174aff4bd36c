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
    assert f"results   {before['result_rows']} rows" in out
    after = json.loads(cli(capsys, sessions_root, "show", name, "--json")[1])
    assert after["result_rows"] == before["result_rows"] and len(after["repeated_rows"]) == 1
    assert [r["n"] for r in after["summary"]] == [r["n"] for r in before["summary"]]
    code, line, _ = cli(capsys, sessions_root, "status", name)
    assert code == 0 and f" · {before['result_rows']} result rows · " in line


def test_an_experiment_run_twice_keeps_every_row(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each run of a second invocation has the first's key and its own end in the journal."""
    from gpusession.testing import FakeRunner

    rows_once = json.loads(cli(capsys, sessions_root, "show", measured_session.name, "--json")[1])["result_rows"]
    FakeRunner(measured_session, "batch-sweep", lambda _e: None, threading.Event()).run()
    _journal_every_row_ended(measured_session)  # each key: two rows, two ends
    doc = json.loads(cli(capsys, sessions_root, "show", measured_session.name, "--json")[1])
    assert doc["result_rows"] == 2 * rows_once and doc["repeated_rows"] == []
    code, line, _ = cli(capsys, sessions_root, "status", measured_session.name)
    assert code == 0 and f" · {2 * rows_once} result rows · " in line


def test_without_a_journaled_end_no_row_is_judged(measured_session: Session) -> None:
    from gpusession.core.records.results import RowCheck, check_rows

    path = measured_session.folder / "resultats-bruts.csv"
    text = path.read_text(encoding="utf-8")
    doubled = text + "".join(text.splitlines(keepends=True)[1:])
    assert check_rows(path, doubled, {}) == RowCheck() and check_rows(path, doubled, None) == RowCheck()


def _incident_then_measured(s: Session) -> tuple[str, str]:
    """Put an incident row of data row 0's run (its cut start) before its measured row; journal both ends.

    Returns the run's journal key and the measured row's elapsed cell.
    """
    from gpusession.core.events.records import RunRecoveredRecord

    path = s.folder / "resultats-bruts.csv"
    _journal_every_row_ended(s)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    cells = next(csv.reader([lines[1]]))
    measured = dict(zip(lines[0].rstrip("\n").split(","), cells, strict=True))
    incident = dict.fromkeys(measured, "")
    incident.update({c: measured[c] for c in ("experiment_id", "phase", "variant_id", "run_index")})
    incident["notes"] = "incident: run in flight when gpusession stopped (crash, kill or power loss)"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(incident.values())
    path.write_text(lines[0] + out.getvalue() + "".join(lines[1:]), encoding="utf-8")
    key = ":".join(measured[c] for c in ("experiment_id", "phase", "variant_id", "run_index"))
    s.journal(RunRecoveredRecord(run_key=key, message="cut"))
    return key, measured["elapsed_seconds"]


def test_a_copied_incident_row_is_the_one_left_out_never_the_measured_row(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two ends (the cut start, the new measurement), three rows: the field-for-field copy is the repeat."""
    name = measured_session.name
    elapsed = _incident_then_measured(measured_session)[1]
    before = json.loads(cli(capsys, sessions_root, "show", name, "--json")[1])
    assert before["repeated_rows"] == [] and before["missing_rows"] == []
    path = measured_session.folder / "resultats-bruts.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join([*lines[:2], lines[1], *lines[2:]]), encoding="utf-8")  # copy right after itself
    code, out, err = cli(capsys, sessions_root, "show", name)
    assert code == 0, err
    said = [ln for ln in out.splitlines() if "repeats the run" in ln]
    assert len(said) == 1 and "line 3 repeats the run of line 2" in said[0], out
    assert f"results   {before['result_rows']} rows" in out
    after = json.loads(cli(capsys, sessions_root, "show", name, "--json")[1])
    assert [r["n"] for r in after["summary"]] == [r["n"] for r in before["summary"]]
    kept = measured_session.results.read()
    assert kept.height == before["result_rows"]
    assert float(elapsed) in kept["elapsed_seconds"].to_list()  # the measured row stays


def test_a_measured_row_deleted_by_hand_is_named_by_show(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The journal ended the run; its row is gone: show and show --json say which run."""
    name = measured_session.name
    _journal_every_row_ended(measured_session)
    path = measured_session.folder / "resultats-bruts.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = dict(zip(lines[0].rstrip("\n").split(","), next(csv.reader([lines[4]])), strict=True))
    key = ":".join(row[c] for c in ("experiment_id", "phase", "variant_id", "run_index"))
    path.write_text("".join(lines[:4] + lines[5:]), encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "show", name)
    words = f"run {key} finished per the journal but has no row in resultats-bruts.csv (deleted by hand?)"
    assert code == 0 and words in out, out + err
    doc = json.loads(cli(capsys, sessions_root, "show", name, "--json")[1])
    assert doc["missing_rows"] == [words] and doc["result_rows"] == len(lines) - 2
