"""Rows appended between two reads of one reader read as a whole check reads them (A5):
the same rows, the same refusals with the file's own line, the same copies found; an
earlier row edited by hand is read (H-47)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.core.files.errors import BadInput
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
