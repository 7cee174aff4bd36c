"""What an open recovers after a crash is said, never hidden (S7, R7).

A cut last CSV row is moved aside on the next open; ``show`` must say so on stderr (it
would otherwise show one run fewer without a word) and the report lists the journal's
incidents for the person who approves the work.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session


def test_s7_cut_csv_row_recovered_is_said_by_show_and_listed_in_the_report(
    measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    s = measured_session
    csv = s.folder / "resultats-bruts.csv"
    rows_before = len(s.results.rows())
    data = csv.read_bytes()
    csv.write_bytes(data[:-40])  # the last row cut mid-write
    code, out, err = cli(capsys, sessions_root, "show", s.name)
    assert code == 0
    assert "recovered after an interruption" in err and "moved to" in err
    assert len(Session.open(sessions_root, s.name).results.rows()) == rows_before - 1
    # said once: the next open has nothing more to recover
    code, out, err = cli(capsys, sessions_root, "show", s.name)
    assert code == 0 and "recovered" not in err
    report = tmp_path / "r.md"
    code, out, err = cli(capsys, sessions_root, "report", s.name, "--out", str(report))
    assert code == 0
    text = report.read_text(encoding="utf-8")
    assert "Incidents recorded in the journal" in text and "moved to" in text


def test_s7_show_keeps_a_finished_last_row_missing_only_its_newline(
    measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    s = measured_session
    rows = s.results.rows()
    last = rows[-1]
    s.journal("run_finished", run_key=f"{last.experiment_id}:{last.phase}:{last.variant_id}:{last.run_index}",
              experiment_id=last.experiment_id, variant_id=last.variant_id, phase=last.phase,
              run_index=last.run_index, ok=True)
    csv = s.folder / "resultats-bruts.csv"
    data = csv.read_bytes()
    csv.write_bytes(data[:-1])  # a hand edit dropped the final newline
    code, out, err = cli(capsys, sessions_root, "show", s.name)
    assert code == 0 and "moved to" not in err and "recovered" not in err, err
    assert csv.read_bytes() == data
    assert Session.open(sessions_root, s.name).results.rows() == rows
