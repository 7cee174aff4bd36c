"""Rows appended between two reads of one reader read as a whole check reads them (A5):
the same rows, the same refusals with the file's own line, the same copies found; an
earlier row edited by hand is read (H-47)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.core.files.errors import BadInput
from gpusession.core.folder import session_journal as session_module
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow, ResultsFile


def _row(i: int) -> ResultRow:
    return ResultRow(experiment_id="e1", variant_id="batch-1", phase="warm", run_index=i,
                     elapsed_seconds=0.5 + i, lots=1, corpus_accepted=True, notes="a, \"b\"\nc")


def test_a5_rows_appended_since_the_last_read_read_as_a_whole_check_reads_them(tmp_path: Path) -> None:
    rf = ResultsFile(tmp_path / "resultats-bruts.csv", lambda: {})
    rf.append_many([_row(i) for i in range(1, 41)])
    assert rf.read().height == 40
    rf.append(_row(41))
    frame = rf.read()
    assert frame.height == 41 and frame["run_index"].to_list() == list(range(1, 42))
    fresh = ResultsFile(rf.path, lambda: {})
    assert fresh.read().equals(frame)  # as a whole check reads it


def test_a5_an_appended_bad_row_is_refused_with_the_files_own_line(tmp_path: Path) -> None:
    rf = ResultsFile(tmp_path / "resultats-bruts.csv")
    rf.append_many([_row(i) for i in range(1, 4)])
    rf.read()
    with open(rf.path, "a", encoding="utf-8") as fh:
        fh.write("e1,batch-1\n")  # a row cut short by hand
    with pytest.raises(BadInput) as got:
        rf.read()
    assert got.value.line == 2 + 3 * 2  # each row above spans two lines (its note)
    with pytest.raises(BadInput) as whole:
        ResultsFile(rf.path).read()
    assert whole.value.message == got.value.message and whole.value.line == got.value.line


def test_h47_a_row_copied_by_hand_after_a_read_is_counted_once(tmp_path: Path) -> None:
    ends = {f"e1:warm:batch-1:{i}": 1 for i in range(1, 4)}
    rf = ResultsFile(tmp_path / "resultats-bruts.csv", lambda: ends)
    rf.append_many([_row(i) for i in range(1, 4)])
    assert rf.read().height == 3
    text = rf.path.read_text("utf-8")
    header, first = text.split("\n", 1)[0], text.split("\n", 1)[1]
    with open(rf.path, "a", encoding="utf-8") as fh:
        fh.write(first.split("\ne1,", 1)[0] + "\n")  # the first row (two lines) copied at the end
    assert header.startswith("experiment_id")
    assert rf.read().height == 3
    assert [(r.line, r.first_line) for r in rf.repeated] == [(8, 2)]


def test_h47_an_earlier_row_edited_by_hand_after_a_read_is_read(tmp_path: Path) -> None:
    rf = ResultsFile(tmp_path / "resultats-bruts.csv")
    rf.append_many([_row(i) for i in range(1, 4)])
    rf.read()
    rf.path.write_text(rf.path.read_text("utf-8").replace(",1.5,", ",1.25,", 1), "utf-8")
    assert rf.read()["elapsed_seconds"].to_list()[0] == 1.25


def _end(i: int) -> str:
    return ('{"v": 1, "at": "2026-11-29T14:00:00+00:00", "event": "run_finished", '
            f'"run_key": "e1:warm:batch-1:{i}", "experiment_id": "e1", "variant_id": "batch-1", '
            f'"phase": "warm", "run_index": {i}, "ok": true}}\n')


def test_a5_run_ends_count_the_lines_appended_and_h47_a_hand_edit_whole(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    with open(session.journal_path, "a", encoding="utf-8") as fh:
        fh.write(_end(1) + _end(2))
    assert session._run_ends() == {"e1:warm:batch-1:1": 1, "e1:warm:batch-1:2": 1}
    counted: list[bytes] = []
    real = session_module.run_end_counts

    def count(raw: bytes) -> dict[str, int]:
        counted.append(raw)
        return real(raw)

    monkeypatch.setattr(session_module, "run_end_counts", count)
    with open(session.journal_path, "a", encoding="utf-8") as fh:
        fh.write(_end(2))
    assert session._run_ends()["e1:warm:batch-1:2"] == 2
    assert counted == [_end(2).encode()]  # the line appended alone
    text = session.journal_path.read_text("utf-8")
    session.journal_path.write_text(text.replace(_end(1), ""), "utf-8")  # an end deleted by hand
    assert session._run_ends() == {"e1:warm:batch-1:2": 2}
    assert len(counted) == 2 and counted[1] == session.journal_path.read_bytes()  # counted whole

