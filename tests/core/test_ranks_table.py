"""``runs/<experiment>/ranks.csv`` (``core/records/ranks.py``): written, read, matched to a row."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.core.files.errors import BadInput
from gpusession.core.records.ranks import (
    RANK_COLUMNS,
    append_rank_rows,
    ranks_of_row,
    read_rank_rows,
    row_run_key,
)


def _ranks(n: int, **kw: object) -> list[dict[str, object]]:
    return [{"rank": r, "world_size": n, "device": f"cuda:{r}", "ok": True, "elapsed_s": 0.1 * (r + 1), **kw}
            for r in range(n)]


def test_a_row_finds_its_own_ranks_by_run_key(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    path = runs / "e" / "ranks.csv"
    append_rank_rows(path, "load:all:1", "warm", _ranks(2))
    append_rank_rows(path, "warm:batch-4:1", "warm", _ranks(2, peak_reserved_bytes=10))
    append_rank_rows(path, "warm:batch-4:2", "warm", list(reversed(_ranks(2, peak_reserved_bytes=20))))
    row = {"experiment_id": "e", "phase": "warm", "variant_id": "batch-4", "run_index": 2}
    assert row_run_key(row) == "warm:batch-4:2"
    found = ranks_of_row(runs, row)
    assert [r["rank"] for r in found] == [0, 1]  # by rank, whatever the file order
    assert {r["peak_reserved_bytes"] for r in found} == {20}
    assert [r["rank"] for r in ranks_of_row(runs, {**row, "phase": "load", "variant_id": "all", "run_index": 1})] == [0, 1]
    assert ranks_of_row(runs, {**row, "run_index": 3}) == []
    assert ranks_of_row(runs, {**row, "experiment_id": "other"}) == []  # one process: no table
    assert set(read_rank_rows(path)[0]) == set(RANK_COLUMNS)


def test_a_ranks_table_that_is_not_one_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "e" / "ranks.csv"
    path.parent.mkdir(parents=True)
    path.write_text("run_key,rank\nwarm:b:1,zero\n")
    with pytest.raises(BadInput) as err:
        read_rank_rows(path)
    assert "ranks.csv" in str(err.value) and "run_key" in str(err.value)
    assert read_rank_rows(tmp_path / "missing.csv") == []


def test_c2_ranks_csv_writes_plain_decimals_never_scientific_notation(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "e" / "ranks.csv"
    append_rank_rows(path, "warm:batch-4:1", "warm", _ranks(1, elapsed_s=6.353e-6))
    text = path.read_text(encoding="utf-8")
    assert "0.000006353" in text and "e-" not in text
    assert read_rank_rows(path)[0]["elapsed_s"] == pytest.approx(6.353e-6)


def test_c2_every_csv_gpusession_writes_goes_through_the_one_writer() -> None:
    """No ``write_csv`` call in the package but the one in ``core/files/csvtext.py``."""
    import ast

    import gpusession

    root = Path(gpusession.__file__).parent
    calls = [f"{p.relative_to(root)}" for p in root.rglob("*.py")
             for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(n, ast.Attribute) and n.attr == "write_csv"]
    assert calls == ["core/files/csvtext.py"], calls


def test_r10_each_ranks_energy_is_kept_in_joules(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "e" / "ranks.csv"
    append_rank_rows(path, "warm:batch-4:1", "warm", [{**r, "energy_j": 40.5 + r["rank"]} for r in _ranks(2)])
    append_rank_rows(path, "warm:batch-4:2", "warm", _ranks(2))  # not measured: empty, never 0
    assert path.read_text().splitlines()[0].endswith(",energy_j")
    assert [r["energy_j"] for r in read_rank_rows(path)] == [40.5, 41.5, None, None]


def test_r10_a_ranks_table_written_before_energy_keeps_its_columns(tmp_path: Path) -> None:
    import polars as pl

    from gpusession.core.records.ranks import RANK_COLUMNS_BEFORE_ENERGY

    path = tmp_path / "runs" / "e" / "ranks.csv"
    path.parent.mkdir(parents=True)
    old = pl.DataFrame([{c: None for c in RANK_COLUMNS_BEFORE_ENERGY}], schema=dict.fromkeys(RANK_COLUMNS_BEFORE_ENERGY, pl.String))
    old = old.with_columns(pl.lit("load:all:1").alias("run_key"), pl.lit("0").alias("rank"))
    old.write_csv(path)
    append_rank_rows(path, "warm:batch-4:1", "warm", [{**r, "energy_j": 9.0} for r in _ranks(1)])
    lines = path.read_text().splitlines()
    assert {len(line.split(",")) for line in lines} == {len(RANK_COLUMNS_BEFORE_ENERGY)}
    rows = read_rank_rows(path)
    assert [r["run_key"] for r in rows] == ["load:all:1", "warm:batch-4:1"]
    assert [r["energy_j"] for r in rows] == [None, None]
