"""The per-rank table of runs across ranks: ``runs/<experiment>/ranks.csv``.

Who calls it: the leader rank of a torchrun group writes it
(:func:`append_rank_rows`, from :mod:`gpusession.bench.worker`); the Memory pane and
the report read it (:func:`ranks_of_row`). No torch, no textual here (M5): polars only.

One row per rank and run. ``run_key`` is the run's local key, the same as the results
row's ``phase:variant_id:run_index`` (``"warm:batch-4:2"``, ``"load:all:1"``), so a
results row finds its ranks. The results CSV keeps one row per run with the maximum over
ranks (its ``notes`` name the rank); this table keeps what each rank measured.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpusession.core.files.csvtext import csv_bytes
from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import make_private_dir, open_append

#: Columns of ``runs/<experiment>/ranks.csv``, in file order.
RANK_COLUMNS = (
    "run_key", "worker", "rank", "world_size", "device", "gpu_uuid", "ok", "error",
    "elapsed_s", "baseline_allocated_bytes", "baseline_reserved_bytes",
    "peak_allocated_bytes", "peak_reserved_bytes", "energy_j",
)
#: The columns before ``energy_j`` was added: a table written then is still read and
#: appended to with them (its new rows leave the energy out rather than break the file).
RANK_COLUMNS_BEFORE_ENERGY = RANK_COLUMNS[:-1]

#: The file's name in ``runs/<experiment>/``.
RANKS_FILE = "ranks.csv"


def _schema() -> dict[str, Any]:
    import polars as pl

    ints = ("rank", "world_size", "baseline_allocated_bytes", "baseline_reserved_bytes",
            "peak_allocated_bytes", "peak_reserved_bytes")
    kinds: dict[str, Any] = {c: pl.String for c in RANK_COLUMNS}
    kinds.update({c: pl.Int64 for c in ints}, ok=pl.Boolean, elapsed_s=pl.Float64, energy_j=pl.Float64)
    return kinds


def _header_of(path: Path) -> tuple[str, ...] | None:
    """The column names in a table's first line; ``None`` when there is no such line."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            first = fh.readline().strip()
    except OSError:
        return None
    return tuple(first.split(",")) if first else None


def row_run_key(row: dict[str, Any]) -> str:
    """The local run key of a results row: ``"<phase>:<variant_id>:<run_index>"``."""
    return f"{row.get('phase')}:{row.get('variant_id')}:{row.get('run_index')}"


def append_rank_rows(path: Path, run_key: str, worker: str, per_rank: list[dict[str, Any]], *,
                     root: Path | None = None) -> None:
    """Append one row per rank to ``ranks.csv`` (polars).

    The header is written when the file is new; existing rows are never rewritten. The
    file is created mode 0600 and never appended to through a symbolic link.

    Args:
        path: the CSV path, ``runs/<experiment>/ranks.csv``.
        run_key: the run's local key, ``"warm:batch-4:2"`` (a load: ``"load:all:1"``).
        worker: the worker's name (``"warm"``, ``"cold-batch-4-1"``).
        per_rank: one dict per rank with the columns after ``worker`` (missing keys are
            empty cells); bytes in bytes, ``elapsed_s`` in seconds, ``energy_j`` in
            joules (``None``: not measured). A table written without ``energy_j`` keeps
            its columns.
        root: the session folder: no folder between it and ``path`` may be a link either
            (missing ones are created 0700); ``None`` checks the file only.

    Raises:
        BadInput: ``path`` (or, with ``root``, a folder on its way) is a symbolic link;
            nothing written, its target untouched.
        OSError: the file cannot be written.
    """
    import polars as pl

    columns = RANK_COLUMNS_BEFORE_ENERGY if _header_of(path) == RANK_COLUMNS_BEFORE_ENERGY else RANK_COLUMNS
    rows = [{"run_key": run_key, "worker": worker, **{k: r.get(k) for k in columns[2:]}}
            for r in per_rank]
    frame = pl.DataFrame(rows, schema={c: k for c, k in _schema().items() if c in columns})

    if root is None:
        make_private_dir(path.parent, parents=True)
    with open_append(path, root=root) as fh:
        new = os.fstat(fh.fileno()).st_size == 0  # of the file opened, not of a name
        fh.write(csv_bytes(frame, header=new))


def read_rank_frame(path: Path) -> Any:
    """A ``ranks.csv`` as a polars DataFrame with :data:`RANK_COLUMNS` (empty when there is no file).

    Raises:
        BadInput: the file is not a ranks table (header or a cell of the wrong kind),
            naming the file.
    """
    import polars as pl


    if not path.is_file():
        return pl.DataFrame(schema=_schema())
    older = _header_of(path) == RANK_COLUMNS_BEFORE_ENERGY
    schema = {c: k for c, k in _schema().items() if c != "energy_j"} if older else _schema()
    try:
        frame = pl.read_csv(path, schema=schema, has_header=True, raise_if_empty=False)
        return frame.with_columns(pl.lit(None, dtype=pl.Float64).alias("energy_j")) if older else frame
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadInput(f"not a ranks table with the columns {', '.join(RANK_COLUMNS)}: {first}",
                       path=path) from None


def read_rank_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a ``ranks.csv``, in file order (``[]`` when there is no file).

    Raises:
        BadInput: as :func:`read_rank_frame`.
    """
    rows: list[dict[str, Any]] = read_rank_frame(path).to_dicts()
    return rows


def ranks_of_row(runs_dir: Path, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The ranks of one results row, by rank (``[]`` for a one-process run).

    Args:
        runs_dir: the session's ``runs/`` folder.
        row: a results row (``experiment_id``, ``phase``, ``variant_id``, ``run_index``).

    Returns:
        The rows of ``runs/<experiment_id>/ranks.csv`` whose ``run_key`` is the row's; the
        last group's when a run key was written twice (a group that was torn down and
        started again writes new keys, so this only guards a hand-edited file).

    Raises:
        BadInput: the table cannot be read (see :func:`read_rank_rows`).
    """
    exp = row.get("experiment_id")
    if not exp:
        return []
    key = row_run_key(row)
    found = [r for r in read_rank_rows(runs_dir / str(exp) / RANKS_FILE) if r.get("run_key") == key]
    by_rank: dict[Any, dict[str, Any]] = {}
    for r in found:
        by_rank[r.get("rank")] = r
    return [by_rank[k] for k in sorted(by_rank, key=lambda k: (k is None, k if k is not None else 0))]


__all__ = [
    "RANKS_FILE",
    "RANK_COLUMNS",
    "append_rank_rows",
    "ranks_of_row",
    "read_rank_frame",
    "read_rank_rows",
    "row_run_key",
]
