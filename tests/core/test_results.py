"""resultats-bruts.csv: C1–C5, H-08, H-09, 1,000 appends, summary (R6)."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusession.core.files.errors import BadInput
from gpusession.core.records.results import COLUMNS, HEADER_LINE, ResultRow, ResultsFile, summarize

SEED_COLUMNS = (
    "experiment_id, variant_id, corpus_revision, model_revision, tokenizer_revision, seed, "
    "gpu_model, gpu_count, device, driver_version, python_version, torch_version, "
    "runtime_version, precision, batch, context, phase, run_index, warmup_iterations, "
    "expected_ids, observed_ids, ids_match, format_valid, quality_metric, quality_threshold, "
    "quality_tolerance, quality_value, corpus_accepted, elapsed_seconds, "
    "baseline_allocated_bytes, baseline_reserved_bytes, peak_allocated_bytes, "
    "peak_reserved_bytes, duration_days, lots, package_total_usd_minor, "
    "accepted_unique_corpora, notes"
)


def full_row(i: int = 0, **kw: object) -> ResultRow:
    base = dict(
        experiment_id="batch-sweep",
        variant_id="batch=4",
        corpus_revision="sha256:abc",
        model_revision="m1",
        tokenizer_revision="t1",
        seed=1234,
        gpu_model="RTX A5000",
        gpu_count=1,
        device="cuda:0",
        driver_version="535.104.05",
        python_version="3.11.7",
        torch_version="2.13.0",
        runtime_version="CUDA 12.4",
        precision="fp32",
        batch=4,
        context=512,
        phase="warm",
        run_index=i,
        warmup_iterations=2,
        expected_ids=1000,
        observed_ids=1000,
        ids_match=True,
        format_valid=True,
        quality_metric="macro_f1",
        quality_threshold=0.9,
        quality_tolerance=0.01,
        quality_value=0.9612345678901234,
        corpus_accepted=True,
        elapsed_seconds=0.123456789 + i * 1e-9,
        baseline_allocated_bytes=0,
        baseline_reserved_bytes=2097152,
        peak_allocated_bytes=123456789012,
        peak_reserved_bytes=134217728000,
        duration_days=7,
        lots=1,
        package_total_usd_minor=5500,
        accepted_unique_corpora=1,
        notes=f"run {i}, fine",
    )
    base.update(kw)
    return ResultRow(**base)  # type: ignore[arg-type]


def test_c1_header_is_the_38_seed_columns_in_order(tmp_path: Path) -> None:
    expected = tuple(c.strip() for c in SEED_COLUMNS.split(","))
    assert COLUMNS == expected and len(COLUMNS) == 38
    f = ResultsFile(tmp_path / "r.csv")
    f.append(full_row())
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0] == ",".join(expected)
    assert len(lines) == 2


def test_c1_csv_with_a_different_header_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    bad = HEADER_LINE.replace("elapsed_seconds", "elapsed_ms") + "\n"
    p.write_text(bad)
    with pytest.raises(BadInput) as exc:
        ResultsFile(p).append(full_row())
    assert "elapsed_ms" in str(exc.value) and ":1:" in str(exc.value)
    assert p.read_text() == bad
    with pytest.raises(BadInput):
        ResultsFile(p).read()


def test_c2_decimal_point_no_scientific_notation_exact_round_trip(tmp_path: Path) -> None:
    # durations within a year (a longer one means nothing: refused, H-41), still exact
    values = [1e-7, 1.5e-12, 12345678.123456789, 0.1 + 0.2, 3.0, 31535999.5]
    f = ResultsFile(tmp_path / "r.csv")
    for i, v in enumerate(values):
        f.append(full_row(i, elapsed_seconds=v))
    text = (tmp_path / "r.csv").read_text()
    body = text.split("\n", 1)[1]
    assert "e-" not in body and "e+" not in body and "E" not in body.replace("RTX A5000", "")
    back = f.read()["elapsed_seconds"].to_list()
    assert back == values  # exact float round trip
    assert f.read()["package_total_usd_minor"].dtype == pl.Int64


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False))
def test_c2_any_duration_round_trips_exactly(tmp_path_factory: pytest.TempPathFactory, v: float) -> None:
    p = tmp_path_factory.mktemp("c2") / "r.csv"
    f = ResultsFile(p)
    f.append(full_row(elapsed_seconds=v))
    assert f.read()["elapsed_seconds"][0] == v


def test_c3_empty_is_null_and_zero_stays_zero(tmp_path: Path) -> None:
    f = ResultsFile(tmp_path / "r.csv")
    f.append(full_row(0, peak_allocated_bytes=0, elapsed_seconds=0.0, quality_value=None, device=None))
    f.append(full_row(1, peak_allocated_bytes=None, elapsed_seconds=None))
    df = f.read()
    assert df["peak_allocated_bytes"].to_list() == [0, None]
    assert df["elapsed_seconds"].to_list() == [0.0, None]
    assert df["quality_value"][0] is None
    assert df["device"][0] is None
    row1 = (tmp_path / "r.csv").read_text().splitlines()[2].split(",")
    assert row1[COLUMNS.index("elapsed_seconds")] == ""


def test_c4_notes_with_commas_quotes_newlines_read_back_identical(tmp_path: Path) -> None:
    notes = ['a,b', 'say "hi"', "line1\nline2", "crlf\r\nend", "  spaces  ", "é ü 中文", ""]
    f = ResultsFile(tmp_path / "r.csv")
    for i, n in enumerate(notes):
        f.append(full_row(i, notes=n))
    assert f.read()["notes"].to_list() == notes
    assert '"a,b"' in (tmp_path / "r.csv").read_text()


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40))
def test_c4_any_note_round_trips(tmp_path_factory: pytest.TempPathFactory, note: str) -> None:
    p = tmp_path_factory.mktemp("c4") / "r.csv"
    f = ResultsFile(p)
    f.append(full_row(notes=note))
    assert f.read()["notes"][0] == note


def test_c5_booleans_are_true_false(tmp_path: Path) -> None:
    f = ResultsFile(tmp_path / "r.csv")
    f.append(full_row(0, ids_match=True, format_valid=False, corpus_accepted=None))
    line = (tmp_path / "r.csv").read_text().splitlines()[1].split(",")
    assert line[COLUMNS.index("ids_match")] == "true"
    assert line[COLUMNS.index("format_valid")] == "false"
    assert line[COLUMNS.index("corpus_accepted")] == ""
    df = f.read()
    assert df["ids_match"].dtype == pl.Boolean
    assert df["format_valid"][0] is False and df["corpus_accepted"][0] is None


def test_h08_null_versus_empty_and_quoted_comma(tmp_path: Path) -> None:
    f = ResultsFile(tmp_path / "r.csv")
    f.append(full_row(0, elapsed_seconds=1.5, notes="a,b"))
    f.append(full_row(1, elapsed_seconds=None, notes=""))
    raw = (tmp_path / "r.csv").read_text().splitlines()
    cells = raw[2].split(",")
    assert cells[COLUMNS.index("elapsed_seconds")] == ""  # bare empty = not measured
    df = f.read()
    assert df["elapsed_seconds"].to_list() == [1.5, None]
    assert df["notes"].to_list() == ["a,b", ""]


def test_h09_exactly_one_header_after_appends(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    f = ResultsFile(p)
    f.append(full_row(1))
    f.append(full_row(2))
    assert p.read_text().count(HEADER_LINE) == 1
    assert f.read().height == 2


def test_h09_row_with_different_columns_is_refused_never_misaligned(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    f = ResultsFile(p)
    f.append(full_row(1))
    before = p.read_bytes()
    d = full_row(2).as_dict()
    d["extra_col"] = 1
    with pytest.raises(BadInput):
        f.append(d)
    d2 = full_row(2).as_dict()
    del d2["notes"]
    with pytest.raises(BadInput):
        f.append(d2)
    reordered = dict(reversed(list(full_row(2).as_dict().items())))
    with pytest.raises(BadInput):
        f.append(reordered)
    assert p.read_bytes() == before


def test_non_utf8_csv_is_refused_with_its_line(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    f = ResultsFile(p)
    f.append(full_row(0))
    with open(p, "ab") as fh:
        fh.write("x,y,caf\xe9\n".encode("latin-1"))
    before = p.read_bytes()
    with pytest.raises(BadInput) as exc:
        f.read()
    assert "UTF-8" in str(exc.value) and ":3" in str(exc.value)
    assert p.read_bytes() == before


def test_thousand_appends_read_back_row_for_row(tmp_path: Path) -> None:
    f = ResultsFile(tmp_path / "r.csv")
    written = [
        full_row(
            i,
            elapsed_seconds=None if i % 97 == 0 else i / 7,
            notes='n,"q"\n' if i % 5 == 0 else None,
            peak_allocated_bytes=0 if i % 3 == 0 else i * 1024,
            ids_match=bool(i % 2),
        )
        for i in range(1000)
    ]
    for row in written:
        f.append(row)
    assert f.rows() == written


def test_r6_summary_median_min_max_failures_no_p95_below_20(tmp_path: Path) -> None:
    f = ResultsFile(tmp_path / "r.csv")
    for i, v in enumerate([0.5, 0.1, 0.3, None, 0.2]):
        f.append(full_row(i, elapsed_seconds=v, phase="warm"))
    f.append(full_row(0, elapsed_seconds=2.0, phase="cold"))
    s = summarize(f.read()).to_dicts()
    warm = next(r for r in s if r["phase"] == "warm")
    assert warm["n"] == 4 and warm["failed"] == 1 and warm["runs"] == 5
    assert math.isclose(warm["median_seconds"], 0.25)
    assert warm["min_seconds"] == 0.1 and warm["max_seconds"] == 0.5
    assert warm["p95_seconds"] is None
    cold = next(r for r in s if r["phase"] == "cold")
    assert cold["n"] == 1 and cold["median_seconds"] == 2.0  # phases never mixed (R3)
    assert [r["phase"] for r in s] == ["cold", "warm"]


def test_r6_p95_only_from_20_observations(tmp_path: Path) -> None:
    f = ResultsFile(tmp_path / "r.csv")
    f.append_many([full_row(i, elapsed_seconds=float(i)) for i in range(20)])
    s = summarize(f.read()).to_dicts()[0]
    assert s["n"] == 20 and s["p95_seconds"] is not None


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("column", ["elapsed_seconds", "quality_value"])
def test_c2_c3_nan_and_inf_refused_when_a_row_is_written(tmp_path: Path, value: float, column: str) -> None:
    """NaN or ±inf is refused at append, naming the column; nothing is written, and the
    file written before stays readable (it used to be written, then the whole file was
    refused on read)."""
    rf = ResultsFile(tmp_path / "resultats-bruts.csv")
    rf.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1, elapsed_seconds=0.5))
    before = rf.path.read_bytes()
    bad = ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=2, elapsed_seconds=0.5)
    with pytest.raises(BadInput) as err:
        rf.append(bad.replace(**{column: value}))
    assert err.value.field == column and "not written" in str(err.value)
    with pytest.raises(BadInput):
        rf.append_many([bad, bad.replace(**{column: value})])
    assert rf.path.read_bytes() == before
    assert rf.read().height == 1
