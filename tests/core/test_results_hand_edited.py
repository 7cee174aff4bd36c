"""A hand-edited ``resultats-bruts.csv`` is refused with its line and column
instead of being padded, misread or summarised into nonsense (C1-C5, R3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.core.files.errors import BadInput
from gpusession.core.records.results import COLUMNS, ResultRow, ResultsFile


@pytest.fixture
def csv_file(tmp_path: Path) -> ResultsFile:
    rf = ResultsFile(tmp_path / "resultats-bruts.csv")
    rf.append_many([
        ResultRow(experiment_id="e1", variant_id="batch-1", phase="warm", run_index=i,
                  elapsed_seconds=0.5 + i, lots=1, corpus_accepted=True, notes="a, \"b\"\nc")
        for i in range(1, 4)
    ])
    return rf


def set_cell(rf: ResultsFile, row: int, column: str, value: str) -> None:
    """Rewrite one cell of data row ``row`` (1-based) by hand, as a person would."""
    import csv
    import io

    records = list(csv.reader(io.StringIO(rf.path.read_text(), newline="")))
    records[row][COLUMNS.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(records)
    rf.path.write_text(buf.getvalue())


def data_line(rf: ResultsFile, row: int) -> int:
    """1-based line where data row ``row`` starts (each note above spans two lines)."""
    return 2 + (row - 1) * 2


@pytest.mark.parametrize(
    "column, value, words",
    [
        ("elapsed_seconds", "1e-5", "no exponent"),
        ("elapsed_seconds", "NaN", "no exponent"),
        ("elapsed_seconds", "inf", "no exponent"),
        ("elapsed_seconds", "fast", "decimal number"),
        ("elapsed_seconds", "0,5", "decimal number"),
    ],
)
def test_c2_numbers_are_decimal_without_exponent(
    csv_file: ResultsFile, column: str, value: str, words: str
) -> None:
    set_cell(csv_file, 2, column, value)
    with pytest.raises(BadInput) as exc:
        csv_file.read()
    assert exc.value.line == data_line(csv_file, 2)
    assert exc.value.field == column and words in exc.value.message


def test_c3_a_negative_duration_is_not_a_measurement(csv_file: ResultsFile) -> None:
    set_cell(csv_file, 3, "elapsed_seconds", "-1")
    with pytest.raises(BadInput, match="≥ 0") as exc:
        csv_file.read()
    assert exc.value.line == data_line(csv_file, 3)


@pytest.mark.parametrize("value", ["yes", "True", "1"])
def test_c5_booleans_are_true_or_false(csv_file: ResultsFile, value: str) -> None:
    set_cell(csv_file, 1, "corpus_accepted", value)
    with pytest.raises(BadInput, match="true or false") as exc:
        csv_file.read()
    assert exc.value.field == "corpus_accepted" and exc.value.line == 2


def test_c1_a_short_row_is_refused_not_padded(csv_file: ResultsFile) -> None:
    lines = csv_file.path.read_text().split("\n")
    csv_file.path.write_text("\n".join(lines) + "e1,batch-1,,,\n")
    with pytest.raises(BadInput, match="5 fields, expected the 38") as exc:
        csv_file.read()
    assert exc.value.line == 8


def test_c1_an_extra_field_in_one_row_names_its_line(csv_file: ResultsFile) -> None:
    set_cell(csv_file, 3, "notes", "x")  # row 3 now fits on line 6
    text = csv_file.path.read_text().split("\n")
    text[5] = text[5] + ",extra"
    csv_file.path.write_text("\n".join(text))
    with pytest.raises(BadInput, match="39 fields") as exc:
        csv_file.read()
    assert exc.value.line == 6


def test_c1_blank_line_is_not_a_phantom_run(csv_file: ResultsFile) -> None:
    csv_file.path.write_text(csv_file.path.read_text() + "\n")
    with pytest.raises(BadInput, match="blank line") as exc:
        csv_file.read()
    assert exc.value.line == 8


def test_c4_unterminated_quote_is_refused_with_its_line(csv_file: ResultsFile) -> None:
    csv_file.path.write_text(csv_file.path.read_text() + "e1,batch-1" + "," * 36 + '"open note\n')
    with pytest.raises(BadInput, match="quoted field") as exc:
        csv_file.read()
    assert exc.value.line == 8


def test_c4_multiline_notes_still_read_back_identical(csv_file: ResultsFile) -> None:
    rows = csv_file.rows()
    assert [r.notes for r in rows] == ['a, "b"\nc'] * 3
    assert [r.elapsed_seconds for r in rows] == [1.5, 2.5, 3.5]


def test_r3_unknown_phase_is_refused(csv_file: ResultsFile) -> None:
    set_cell(csv_file, 1, "phase", "lukewarm")
    with pytest.raises(BadInput, match="load, cold, warm") as exc:
        csv_file.read()
    assert exc.value.field == "phase"


def test_c1_show_on_a_bad_row_is_one_line_with_file_and_line(run_cli, sessions_root: Path) -> None:  # type: ignore[no-untyped-def]
    from gpusession.core.folder.session import Session

    s = Session.create(sessions_root, "t1")
    s.results.append(ResultRow(experiment_id="e1", variant_id="batch-1", phase="warm",
                               run_index=1, elapsed_seconds=0.25))
    set_cell(s.results, 1, "elapsed_seconds", "1e-5")
    before = s.results.path.read_bytes()
    r = run_cli("show", "t1")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "resultats-bruts.csv:2: elapsed_seconds" in r.stderr
    assert s.results.path.read_bytes() == before


def test_c3_show_prints_an_empty_cell_as_dash_not_none(run_cli, sessions_root: Path) -> None:  # type: ignore[no-untyped-def]
    from gpusession.core.folder.session import Session

    s = Session.create(sessions_root, "t1")
    s.results.append(ResultRow(experiment_id="e1", notes="variant and phase not recorded"))
    r = run_cli("show", "t1")
    assert r.returncode == 0, r.stderr
    assert "None" not in r.stdout
    assert any(line.split()[:3] == ["e1", "-", "-"] for line in r.stdout.splitlines())
