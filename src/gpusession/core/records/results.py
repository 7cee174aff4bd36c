"""The seed's ``resultats-bruts.csv``: 38 columns, one row per run (seed 000 §4; C1-C5).

Rows are appended one at a time as each run finishes, with polars
(``write_csv(include_header=False)`` on a file opened for append), flushed and fsynced
per row; the header is written once (H-09). Reading uses an explicit schema so that an
empty cell is ``null`` ("not measured") and ``0`` stays ``0`` (C3, H-08).

Units: seconds (``elapsed_seconds``), bytes (``*_bytes``), USD cents
(``package_total_usd_minor``), days (``duration_days``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gpusession.core.files.bounds import COLUMN_KINDS, INT64_LIMIT, past_bound
from gpusession.core.files.csvtext import csv_bytes
from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import (
    link_refused,
    open_append,
    open_private,
    refuse_link_or_special,
)
from gpusession.core.files.secrets import is_digest_key, mask_text, shown
from gpusession.core.files.textio import decode_strict, read_plain
from gpusession.core.records.csvkeys import MAX_CELL_CHARS, RUN_KEY_COLUMNS

if TYPE_CHECKING:
    import polars as pl

#: The seed's columns, in the seed's order (C1).
COLUMNS: tuple[str, ...] = (
    "experiment_id",
    "variant_id",
    "corpus_revision",
    "model_revision",
    "tokenizer_revision",
    "seed",
    "gpu_model",
    "gpu_count",
    "device",
    "driver_version",
    "python_version",
    "torch_version",
    "runtime_version",
    "precision",
    "batch",
    "context",
    "phase",
    "run_index",
    "warmup_iterations",
    "expected_ids",
    "observed_ids",
    "ids_match",
    "format_valid",
    "quality_metric",
    "quality_threshold",
    "quality_tolerance",
    "quality_value",
    "corpus_accepted",
    "elapsed_seconds",
    "baseline_allocated_bytes",
    "baseline_reserved_bytes",
    "peak_allocated_bytes",
    "peak_reserved_bytes",
    "duration_days",
    "lots",
    "package_total_usd_minor",
    "accepted_unique_corpora",
    "notes",
)

_INT = "Int64"
_STR = "String"
_FLOAT = "Float64"
_BOOL = "Boolean"

#: Type of each column by polars dtype name (C2: integers for bytes and cents, floats
#: for seconds). ``SCHEMA`` (the polars dtypes) is built from it on first use, so that
#: importing this module does not import polars (it costs ~0.1 s of TUI start-up).
COLUMN_TYPES: dict[str, str] = {
    "experiment_id": _STR,
    "variant_id": _STR,
    "corpus_revision": _STR,
    "model_revision": _STR,
    "tokenizer_revision": _STR,
    "seed": _INT,
    "gpu_model": _STR,
    "gpu_count": _INT,
    "device": _STR,
    "driver_version": _STR,
    "python_version": _STR,
    "torch_version": _STR,
    "runtime_version": _STR,
    "precision": _STR,
    "batch": _INT,
    "context": _INT,
    "phase": _STR,
    "run_index": _INT,
    "warmup_iterations": _INT,
    "expected_ids": _INT,
    "observed_ids": _INT,
    "ids_match": _BOOL,
    "format_valid": _BOOL,
    "quality_metric": _STR,
    "quality_threshold": _FLOAT,
    "quality_tolerance": _FLOAT,
    "quality_value": _FLOAT,
    "corpus_accepted": _BOOL,
    "elapsed_seconds": _FLOAT,
    "baseline_allocated_bytes": _INT,
    "baseline_reserved_bytes": _INT,
    "peak_allocated_bytes": _INT,
    "peak_reserved_bytes": _INT,
    "duration_days": _INT,
    "lots": _INT,
    "package_total_usd_minor": _INT,
    "accepted_unique_corpora": _INT,
    "notes": _STR,
}

HEADER_LINE = ",".join(COLUMNS)

_SCHEMA_CACHE: dict[str, Any] = {}


def polars_schema() -> dict[str, Any]:
    """``{column: polars dtype}`` for the 38 columns (imports polars on first call)."""
    if not _SCHEMA_CACHE:
        import polars as pl

        _SCHEMA_CACHE.update({c: getattr(pl, t) for c, t in COLUMN_TYPES.items()})
    return _SCHEMA_CACHE


def __getattr__(name: str) -> Any:
    if name == "SCHEMA":
        return polars_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: Phases of a run (R3).
PHASES = ("load", "cold", "warm")


@dataclass(frozen=True)
class ResultRow:
    """One run, one row of ``resultats-bruts.csv``. ``None`` = not measured (C3).

    Field names and order are the seed's columns (C1). Units: ``elapsed_seconds`` in
    seconds; ``*_bytes`` in bytes; ``package_total_usd_minor`` in USD cents;
    ``duration_days`` in days. ``accepted_unique_corpora`` is a session-level count and
    must never be summed over rows (K4).
    """

    experiment_id: str | None = None
    variant_id: str | None = None
    corpus_revision: str | None = None
    model_revision: str | None = None
    tokenizer_revision: str | None = None
    seed: int | None = None
    gpu_model: str | None = None
    gpu_count: int | None = None
    device: str | None = None
    driver_version: str | None = None
    python_version: str | None = None
    torch_version: str | None = None
    runtime_version: str | None = None
    precision: str | None = None
    batch: int | None = None
    context: int | None = None
    phase: str | None = None
    run_index: int | None = None
    warmup_iterations: int | None = None
    expected_ids: int | None = None
    observed_ids: int | None = None
    ids_match: bool | None = None
    format_valid: bool | None = None
    quality_metric: str | None = None
    quality_threshold: float | None = None
    quality_tolerance: float | None = None
    quality_value: float | None = None
    corpus_accepted: bool | None = None
    elapsed_seconds: float | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    duration_days: int | None = None
    lots: int | None = None
    package_total_usd_minor: int | None = None
    accepted_unique_corpora: int | None = None
    notes: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The row as ``{column: value}`` in seed order."""
        return {c: getattr(self, c) for c in COLUMNS}

    def replace(self, **changes: Any) -> ResultRow:
        """A copy with ``changes`` applied (the dataclass is frozen)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultRow:
        """Build a row from a mapping; unknown keys raise ``BadInput``."""
        unknown = set(data) - set(COLUMNS)
        if unknown:
            raise BadInput(f"unknown column(s) {sorted(unknown)}; expected the 38 seed columns")
        return cls(**data)


assert tuple(f.name for f in dataclasses.fields(ResultRow)) == COLUMNS
assert len(COLUMNS) == 38


def rows_frame(rows: Iterable[ResultRow | dict[str, Any]]) -> pl.DataFrame:
    """Rows → a polars frame with the explicit 38-column schema."""
    import polars as pl

    dicts = [_masked(r.as_dict() if isinstance(r, ResultRow) else r) for r in rows]
    for d in dicts:
        if tuple(d) != COLUMNS:
            extra = [c for c in d if c not in COLUMNS]
            missing = [c for c in COLUMNS if c not in d]
            raise BadInput(
                "row columns differ from the 38 seed columns"
                + (f"; extra: {extra}" if extra else "")
                + (f"; missing: {missing}" if missing else "")
                + ("; order differs" if not extra and not missing else "")
            )
        _refuse_non_finite(d)
    return pl.DataFrame(dicts, schema=polars_schema(), orient="row") if dicts else pl.DataFrame(schema=polars_schema())


def _masked(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every secret in its text cells hidden (R7: a row keeps its incident).

    Why: ``notes`` carries what a workload said when it failed (its exception text, a
    stderr line), and the CSV is copied home and shared; each cell is masked as one whole
    text (:func:`gpusession.core.files.secrets.mask_text`), a digest column keeps its hex.
    """
    return {k: mask_text(v, digest=is_digest_key(k))[0] if isinstance(v, str) else v
            for k, v in row.items()}


def _refuse_non_finite(row: dict[str, Any]) -> None:
    """Refuse NaN and ±inf before a row is written (C2, C3).

    Written, they made the whole file unreadable (the reader refuses them); an empty
    cell is how "not measured" is said.

    Raises:
        BadInput: naming the first column holding NaN or an infinity.
    """
    for column in COLUMNS:
        value = row[column]
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInput(
                f"{value} is not a measured value; leave the cell empty (not measured) or "
                "give a finite number — the row was not written",
                field=column,
            )


def _value_words(value: object) -> str:
    """A refused number, short: ``1e+20``, or ``a number of 400 digits`` (never 400 digits)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 24 else f"a number of {len(text.lstrip('-')):,} digits"


def refused_cells(row: ResultRow) -> list[tuple[str, str]]:
    """The cells of ``row`` the reader would refuse once written: ``(column, words)`` (A4, H-65).

    Each cell is written as :meth:`ResultsFile.append` writes it and judged by the
    reader's own check (:func:`_cell_problem`: the bounds of :data:`COLUMN_KINDS`, signs,
    the unit interval), so the writer and the reader can never disagree; a NaN or an
    infinity is refused too. Why: one row past a bound (an ``elapsed_seconds`` of 1e20)
    made every reader refuse the whole CSV.

    Returns:
        ``[("elapsed_seconds", "elapsed_seconds 1e+20: expected a duration under a year
        (31,536,000 s), got a larger number")]``; empty when the row reads back.
    """
    d = row.as_dict()
    out: list[tuple[str, str]] = []
    for c in COLUMNS:  # what no cell can hold: not even formatted
        v = d[c]
        if isinstance(v, float) and not math.isfinite(v):
            out.append((c, f"{c} {_value_words(v)}: not a finite number"))
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) >= INT64_LIMIT:
            out.append((c, f"{c} {_value_words(v)}: expected a whole number within 64 bits"))
    finite = {k: (None if any(k == c for c, _ in out) else v) for k, v in d.items()}
    text = _csv_bytes(rows_frame([finite]), header=False).decode("utf-8")
    cells = next(csv.reader(io.StringIO(text)))
    for column, cell in zip(COLUMNS, cells, strict=True):
        problem = _cell_problem(column, cell)
        if problem is not None:
            out.append((column, f"{column} {_value_words(d[column])}: {problem}"))
    return out


def _csv_bytes(frame: pl.DataFrame, *, header: bool) -> bytes:



    return csv_bytes(frame, header=header)


def _refuse_unreadable(data: bytes, *, header: bool) -> None:
    """Refuse rows whose cells the reader would refuse, before any byte is written (A4, H-65).

    Raises:
        BadInput: naming the first such column; the row was not written.
    """
    records = csv.reader(io.StringIO(data.decode("utf-8")))
    if header:
        next(records, None)
    for cells in records:
        for column, cell in zip(COLUMNS, cells, strict=False):
            problem = _cell_problem(column, cell)
            if problem is not None:
                raise BadInput(f"{problem}; the row was not written (its reader would refuse the "
                               "whole file)", field=column)


def _check_utf8(path: Path, raw: bytes) -> str:
    """``raw`` as text (a BOM ignored), or ``BadInput`` naming the line and byte."""
    return decode_strict(raw, path=path, must="resultats-bruts.csv must be UTF-8").text


def check_header(path: Path, first_line: str) -> None:
    """Refuse a CSV whose header is not exactly the 38 seed columns (C1, H-09).

    Raises:
        BadInput: naming the first column that differs.
    """
    got = first_line.rstrip("\r\n").lstrip("\ufeff").split(",")
    if tuple(got) == COLUMNS:
        return
    for i, (want, have) in enumerate(zip(COLUMNS, got, strict=False)):
        if want != have:
            raise BadInput(
                f"header column {i + 1} is {shown(have)}, expected {shown(want)} "
                f"(the 38 seed columns in order)",
                path=path,
                line=1,
            )
    raise BadInput(
        f"header has {len(got)} columns, expected the 38 seed columns", path=path, line=1
    )


_INT_RE = re.compile(r"-?[0-9]+")
_FLOAT_RE = re.compile(r"-?[0-9]+(\.[0-9]+)?")
#: Columns that cannot be negative: a measured duration, byte counts, cents, counts.
_NON_NEGATIVE = {
    "elapsed_seconds", "baseline_allocated_bytes", "baseline_reserved_bytes",
    "peak_allocated_bytes", "peak_reserved_bytes", "package_total_usd_minor",
    "accepted_unique_corpora", "gpu_count", "expected_ids", "observed_ids",
}


def _cell_problem(column: str, cell: str) -> str | None:
    """Why ``cell`` is not a valid written value of ``column`` (C2, C3, C5), or ``None``."""
    if cell == "":
        return None  # not measured (C3)
    dtype = COLUMN_TYPES[column]
    if dtype == _INT:
        if not _INT_RE.fullmatch(cell):
            return f"expected a whole number, got {shown(cell)}"
        return past_bound(cell, COLUMN_KINDS.get(column, "whole")) or _sign_problem(column, cell)
    if dtype == _FLOAT:
        if not _FLOAT_RE.fullmatch(cell):
            return (f"expected a decimal number with a point and no exponent "
                    f"(e.g. 0.00001), got {shown(cell)}")
        # bounded by what it means (H-41): never converted past it (inf, 1e+25 s)
        return past_bound(cell, COLUMN_KINDS.get(column, "count")) or _sign_problem(column, cell)
    if dtype == _BOOL:
        if cell not in ("true", "false"):
            return f"expected true or false, got {shown(cell)}"
    elif column == "phase" and cell not in PHASES:
        return f"expected one of {', '.join(PHASES)}, got {shown(cell)}"
    return _sign_problem(column, cell)


#: Quality figures: macro-F1 and accuracy lie from 0 to 1 (H-41: bounded by what they mean).
_UNIT_INTERVAL = {"quality_value", "quality_threshold", "quality_tolerance"}


def _sign_problem(column: str, cell: str) -> str | None:
    if (column in _NON_NEGATIVE or column in _UNIT_INTERVAL) and cell.startswith("-"):
        return "expected a value ≥ 0, got a negative one"
    if column in _UNIT_INTERVAL:
        whole, _, frac = cell.partition(".")
        if whole.lstrip("0") not in ("", "1") or (whole.lstrip("0") == "1" and frac.strip("0")):
            return "expected a figure from 0 to 1 (macro-F1, accuracy), got a larger one"
    return None


# MAX_CELL_CHARS (the longest cell, 16 Mi characters) and RUN_KEY_COLUMNS (the cells
# naming a run, S7) live in csvkeys, light enough for `status`; imported above, kept here.


@dataclass(frozen=True)
class RepeatedRun:
    """A row whose run an earlier row already records (a row copied by hand): counted once.

    Attributes:
        row_index: the row's 0-based index among the data rows (the one left out).
        line: the physical line where the row starts (1-based).
        first_line: the line of the row that records the run first (the one kept).
        key: ``(experiment_id, phase, variant_id, run_index)``.
    """

    row_index: int
    line: int
    first_line: int
    key: tuple[str, str, str, str]

    def words(self) -> str:
        """``line 14 repeats the run of line 5 (batch-sweep, warm, variant 4, run 2): counted once``."""
        exp, phase, variant, index = self.key
        return (f"line {self.line} repeats the run of line {self.first_line} "
                f"({exp}, {phase}, variant {variant}, run {index}): counted once")


@dataclass(frozen=True)
class MissingRow:
    """A run the journal ended more often than the CSV has rows for it (a row deleted by hand).

    The runner (and crash recovery) write a run's row before journaling its end, so an
    end without its row was taken out of the file afterwards (S7). A worker's load is
    never judged: its end can be journaled without a row.

    Attributes:
        key: the journal's run key, ``"e:warm:batch-2:2"``.
        ends: how many times the journal ended it (≥ 1).
        rows: how many rows the CSV holds for it (< ``ends``).
    """

    key: str
    ends: int
    rows: int

    def words(self) -> str:
        """``run e:warm:batch-2:2 finished per the journal but has no row in resultats-bruts.csv (deleted by hand?)``."""
        if self.rows == 0:
            return (f"run {self.key} finished per the journal but has no row in "
                    "resultats-bruts.csv (deleted by hand?)")
        return (f"run {self.key} ended {self.ends} times per the journal but has "
                f"{self.rows} row{'s' if self.rows > 1 else ''} in resultats-bruts.csv (deleted by hand?)")


@dataclass(frozen=True)
class RowCheck:
    """What :func:`check_rows` found besides bad rows: rows copied by hand, rows deleted by hand.

    Attributes:
        repeated: the rows left out as copies, in file order.
        missing: the runs ended in the journal with fewer rows, in journal key order.
    """

    repeated: list[RepeatedRun] = dataclasses.field(default_factory=list)
    missing: list[MissingRow] = dataclasses.field(default_factory=list)


def check_rows(path: Path, text: str, run_ends: Mapping[str, int] | None = None) -> RowCheck:
    """Check every data row of a results CSV: 38 fields, each cell of its column's kind.

    Polars alone would pad a short row with empty cells and read ``1e-5``, ``NaN`` or a
    blank line without a word; a hand-edited file is refused instead, naming the line
    and column (C1-C5). Only the standard library is used (``gpusession status`` runs it
    without polars). The runner writes one row per run end (``run_ends``), so a run with
    more rows than ends holds a row copied by hand: the copy is a row whose every field
    is that of an earlier row of the run (:func:`_copies`); a row differing from every
    earlier one -- a measurement beside the incident row of the run's cut start -- is
    never left out. A run with fewer rows than ends had a row deleted (:class:`MissingRow`).
    A run the journal never ended (rows of a session without a journal) is never judged.

    Args:
        path: the CSV, named in errors.
        text: its decoded text.
        run_ends: ``{journal run key: ends}`` (:func:`gpusession.core.events.scan.run_end_counts`);
            ``None``: no row is judged.

    Returns:
        The repeated rows (file order) and the runs missing rows (both empty for a file
        the runner alone wrote).

    Raises:
        BadInput: with the 1-based line where the bad row starts: a blank line, a row
            of another width, a cell not of its column's kind, a cell longer than
            :data:`MAX_CELL_CHARS`, a quoted field without its closing quote.
    """
    csv.field_size_limit(MAX_CELL_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    key_at = [COLUMNS.index(c) for c in RUN_KEY_COLUMNS]
    rows_of: dict[tuple[str, ...], list[tuple[int, int, list[str]]]] = {}
    # cells already found valid, by column: most repeat from row to row (device, phase,
    # true, a corpus revision), so a 10,000-row file is not judged cell by cell (A5)
    valid: set[tuple[str, str]] = set()
    start = 1
    try:
        for i, record in enumerate(reader):
            line = start
            start = reader.line_num + 1
            if i == 0:
                continue
            if not record:
                raise BadInput("blank line; expected one row of 38 fields per run (delete the line)",
                               path=path, line=line)
            if len(record) != len(COLUMNS):
                raise BadInput(f"row has {len(record)} fields, expected the 38 seed columns",
                               path=path, line=line)
            for column, cell in zip(COLUMNS, record, strict=True):
                if not cell or (column, cell) in valid:
                    continue  # an empty cell is "not measured" (C3)
                problem = _cell_problem(column, cell)
                if problem:
                    raise BadInput(problem, path=path, line=line, field=column)
                if len(cell) <= 64:
                    valid.add((column, cell))
            key = tuple(record[j] for j in key_at)
            if all(key):  # a row naming no whole run is never judged
                rows_of.setdefault(key, []).append((i - 1, line, record))
    except csv.Error as exc:
        if "field limit" in str(exc):
            raise BadInput(f"a cell of this row is longer than {MAX_CELL_CHARS:,} characters, "
                           "the longest a cell may hold; shorten it", path=path,
                           line=start) from None
        raise BadInput(f"not valid CSV ({exc}); a quoted field must end with a quote",
                       path=path, line=start) from None
    if run_ends is None:
        return RowCheck()
    return _judge(rows_of, run_ends)


def _judge(rows_of: Mapping[tuple[str, ...], list[tuple[int, int, list[str]]]],
           run_ends: Mapping[str, int]) -> RowCheck:
    """Rows copied by hand and runs whose rows were deleted, from each run's rows and ends (S7).

    Args:
        rows_of: ``{run key cells: [(row index, line, cells), ...]}`` in file order.
        run_ends: ``{journal run key: ends}``.
    """
    repeated: list[RepeatedRun] = []
    kept: dict[str, int] = {}
    for key, rows in rows_of.items():
        joined = ":".join(key)
        ends = run_ends.get(joined, 0)
        copies = _copies(rows, len(rows) - ends) if ends > 0 else []
        repeated += [RepeatedRun(i, line, first, key) for i, line, first in copies]  # type: ignore[arg-type]
        kept[joined] = len(rows) - len(copies)
    missing = [MissingRow(key, ends, kept.get(key, 0)) for key, ends in run_ends.items()
               if key.rsplit(":", 3)[-3:-2] != ["load"] and kept.get(key, 0) < ends]
    return RowCheck(sorted(repeated, key=lambda r: r.row_index), missing)


def _copies(rows: list[tuple[int, int, list[str]]], excess: int) -> list[tuple[int, int, int]]:
    """The last ``excess`` rows whose every field is that of an earlier row: ``(row index, line, line of the first)``.

    Why fields, not order: a hand copy can sit before the row the runner wrote next
    (the measured row after an incident row), which counting in file order left out.
    """
    first_line: dict[tuple[str, ...], int] = {}
    found: list[tuple[int, int, int]] = []
    for index, line, record in rows:
        cells = tuple(record)
        if cells in first_line:
            found.append((index, line, first_line[cells]))
        else:
            first_line[cells] = line
    return found[-excess:] if excess > 0 else []


@dataclass(frozen=True)
class _Read:
    """One checked read of a results CSV: the bytes and journal ends it was judged on, what it gave."""

    path: Path
    raw: bytes
    ends: Mapping[str, int] | None
    frame: pl.DataFrame
    repeated: tuple[RepeatedRun, ...]
    missing: tuple[MissingRow, ...]


#: The last results CSV read: ``{"last": _Read}``. ``show`` and the report ask for the rows
#: in many sections (and each probe of the evidence); the same bytes, judged against the
#: same journal ends, are checked and parsed once (A5), however many times they are read.
_LAST_READ: dict[str, _Read] = {}


class CleanRows(Protocol):
    """Where a results CSV's clean check is remembered across processes (a sealed state, A5, H-47)."""

    def known(self, raw: bytes, ends: Mapping[str, int]) -> bool:
        """Whether ``raw`` passed :func:`check_rows` against ``ends`` with nothing repeated or missing."""
        ...

    def keep(self, raw: bytes, ends: Mapping[str, int]) -> None:
        """Remember that ``raw`` did (never raises: a cache)."""
        ...


class ResultsFile:
    """``resultats-bruts.csv`` of one session: append one row at a time, read back.

    Args:
        path: the CSV file; created with its header on the first append.
    """

    def __init__(self, path: Path, run_ends: Callable[[], Mapping[str, int]] | None = None,
                 clean: CleanRows | None = None) -> None:
        """Keep the path (and how to read the journal's run ends); nothing is read or written yet.

        Args:
            path: the CSV.
            run_ends: gives ``{journal run key: ends}`` when the rows are checked, so a row
                copied by hand is counted once (:func:`check_rows`); ``None``: none is judged.
            clean: remembers the bytes whose every row passed :func:`check_rows` against
                the same run ends with nothing repeated or missing, so an unchanged CSV is
                not checked row by row again (A5); ``None``: every read checks.
        """
        self.path = Path(path)
        self.run_ends = run_ends
        self.clean = clean
        #: the rows the last check found repeating an earlier row's run (left out by :meth:`read`)
        self.repeated: list[RepeatedRun] = []
        #: the runs the last check found ended in the journal with fewer rows (deleted by hand)
        self.missing: list[MissingRow] = []

    def exists(self) -> bool:
        """Whether the file exists and is not empty (an empty file has no header yet)."""
        return self.path.exists() and self.path.stat().st_size > 0

    def check(self) -> None:
        """Check header and encoding of an existing file.

        Raises:
            BadInput: a symbolic link (never read nor written through; the words of
                ``gpusession status``), a FIFO, device or folder (never
                waited on), not UTF-8, or a header that is not the 38 seed
                columns.
        """
        refuse_link_or_special(self.path)
        if not self.exists():
            return
        with open(self.path, "rb") as fh:
            first = fh.readline()
        check_header(self.path, _check_utf8(self.path, first))

    def checked_text(self) -> tuple[bytes, str]:
        """The whole file, checked as every reader checks it, with the standard library only.

        UTF-8, the header, then every row (:func:`check_rows`). Used by :meth:`read` and
        by ``gpusession status`` (which never imports polars), so both refuse a file with
        the same line. The rows repeating an earlier row's run are kept in
        :attr:`repeated`, the runs whose rows were deleted in :attr:`missing`.

        Returns:
            The file's bytes and its text (a BOM removed).

        Raises:
            BadInput: not a plain file (never waited on), not UTF-8, a wrong header, a
                bad row (with its line).
            OSError: the file cannot be read.
        """
        raw = read_plain(self.path)
        return raw, self._checked(raw, self.run_ends() if self.run_ends is not None else None)

    def _checked(self, raw: bytes, ends: Mapping[str, int] | None) -> str:
        """``raw`` checked (UTF-8, header, rows against ``ends``) and decoded; same errors as :meth:`checked_text`."""
        text = _check_utf8(self.path, raw)
        check_header(self.path, text.split("\n", 1)[0])
        if self.clean is not None and ends is not None and self.clean.known(raw, ends):
            self.repeated, self.missing = [], []  # these bytes, these ends: checked clean before
            return text
        found = check_rows(self.path, text, ends)
        self.repeated, self.missing = found.repeated, found.missing
        if self.clean is not None and ends is not None and not found.repeated and not found.missing:
            self.clean.keep(raw, ends)
        return text

    def append(self, row: ResultRow | dict[str, Any]) -> None:
        """Append one row; write the header first if the file is new (H-09).

        The row is flushed and fsynced before returning, so a crash afterwards cannot
        lose it (S7).

        Raises:
            BadInput: the row's columns differ from the seed's, the existing file's
                header differs, or the file is a symbolic link (nothing is written then).
        """
        self.append_many([row])

    def append_many(self, rows: Sequence[ResultRow | dict[str, Any]]) -> None:
        """Append several rows in one write; same guarantees as :meth:`append`."""
        frame = rows_frame(rows)
        if self.path.is_symlink():  # said before reading through it (the append refuses it too)
            raise link_refused(self.path)
        new = not self.exists()
        if not new:
            self.check()
        data = _csv_bytes(frame, header=new)
        _refuse_unreadable(data, header=new)
        if not new:
            with open(self.path, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    raise BadInput(
                        "last line is incomplete (a crash during a write?); reopen the "
                        "session to recover it before appending",
                        path=self.path,
                    )
        try:
            with open_append(self.path) as fh:  # 0600, never through a link
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:  # a cut row is recovered when the session is next opened
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc

    def read(self) -> pl.DataFrame:
        """Read every row with the explicit schema (C3: empty cell → null).

        Returns:
            A frame with the 38 columns, each run once (a row repeating an earlier row's
            run is left out and named in :attr:`repeated`; a run ended without its row is
            named in :attr:`missing`); empty when the file does not exist. Bytes equal to
            the last read's, judged against the same journal ends, are not checked nor
            parsed again: the same frame is returned (A5: the report's sections and
            probes ask for the rows many times; polars frames are not changed in place).

        Raises:
            BadInput: not UTF-8, wrong header, or a row that does not parse (with its
                line when polars reports one).
        """
        import polars as pl

        if not self.exists():  # every run the journal ended lost its row
            found = _judge({}, self.run_ends()) if self.run_ends is not None else RowCheck()
            self.repeated, self.missing = found.repeated, found.missing
            return pl.DataFrame(schema=polars_schema())
        raw = read_plain(self.path)
        ends = self.run_ends() if self.run_ends is not None else None
        last = _LAST_READ.get("last")
        if last is not None and last.path == self.path and last.raw == raw and last.ends == ends:
            self.repeated, self.missing = list(last.repeated), list(last.missing)
            return last.frame
        self._checked(raw, ends)
        try:
            frame = pl.read_csv(
                io.BytesIO(raw),
                schema=polars_schema(),
                has_header=True,
                infer_schema=False,
                raise_if_empty=False,
            )
        except (pl.exceptions.ComputeError, pl.exceptions.PolarsError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BadInput(f"a row does not match the 38-column schema: {first}", path=self.path) from None
        if self.repeated:
            left_out = [r.row_index for r in self.repeated]
            frame = frame.with_row_index("_row").filter(~pl.col("_row").is_in(left_out)).drop("_row")
        _LAST_READ["last"] = _Read(self.path, raw, ends, frame, tuple(self.repeated), tuple(self.missing))
        return frame

    def rows(self) -> list[ResultRow]:
        """Every row as :class:`ResultRow`, in file order."""
        return [ResultRow(**d) for d in self.read().iter_rows(named=True)]

    def run_keys(self) -> set[tuple[str, str, str, int]]:
        """The run of every row: ``(experiment_id, phase, variant_id, run_index)`` (S7)."""
        return set(self.run_key_counts())

    def run_key_counts(self) -> dict[tuple[str, str, str, int], int]:
        """How many rows each run has: ``{(experiment_id, phase, variant_id, run_index) → rows}`` (S7).

        What crash recovery checks before it writes an incident row, so that each start
        of a run is in the file exactly once (a run measured again by ``run --resume``
        has the row of its cut start and the row of its new one). Read with the csv
        module, tolerant: a row without the four cells (or a cut last line) names no
        run; nothing raises on a file that :meth:`read` would refuse for another reason.
        """
        if not self.exists():
            return {}
        text = self.path.read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff")
        idx = [COLUMNS.index(c) for c in ("experiment_id", "phase", "variant_id", "run_index")]
        keys: dict[tuple[str, str, str, int], int] = {}
        try:
            for i, rec in enumerate(csv.reader(io.StringIO(text, newline=""))):
                if i == 0 or len(rec) != len(COLUMNS):
                    continue
                exp, phase, variant, index = (rec[j] for j in idx)
                if index.isascii() and index.isdigit():
                    key = (exp, phase, variant, int(index))
                    keys[key] = keys.get(key, 0) + 1
        except csv.Error:
            pass  # keys read so far stand; the rest of the file is refused by read()
        return keys

    def complete_last_row(
            self, finished: Container[tuple[str, str, str, int]]) -> tuple[str, str, str, int] | None:
        """Keep a last row that lacks only its final newline, adding the newline (S7).

        A hand edit can drop the file's last newline. Such a row is complete, not cut by a
        crash, when it parses as one full row of the 38 columns (each cell of its column's
        kind, a closed quote) *and* its run is in ``finished``: the runner writes and
        fsyncs a row before it journals the end of that run, so a journaled end proves the
        row was written whole. Anything else is left to :meth:`recover_partial_tail`.

        Args:
            finished: the ``(experiment_id, phase, variant_id, run_index)`` of every run
                the journal records as finished (``run_finished``, ``load_finished``).

        Returns:
            The run of the row kept (its newline now written and fsynced), or ``None``
            when nothing was changed (the file ends cleanly, or its last line is not such
            a row).
        """
        if not self.exists():
            return None
        raw = self.path.read_bytes()
        if raw.endswith(b"\n"):
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        lines = list(io.StringIO(text, newline=""))
        reader = csv.reader(iter(lines), strict=True)
        record: list[str] = []
        count = 0
        try:
            for rec in reader:
                record, count = rec, count + 1
        except csv.Error:  # an unclosed quote at the end: a row cut inside a quoted field
            return None
        if count < 2 or len(record) != len(COLUMNS):  # the header alone, or a short row
            return None
        if any(_cell_problem(c, cell) for c, cell in zip(COLUMNS, record, strict=True)):
            return None
        exp, phase, variant, index = (record[COLUMNS.index(c)]
                                      for c in ("experiment_id", "phase", "variant_id", "run_index"))
        if not (index.isascii() and index.isdigit()) or (exp, phase, variant, int(index)) not in finished:
            return None
        with open_append(self.path) as fh:
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        return (exp, phase, variant, int(index))

    def recover_partial_tail(self) -> bytes | None:
        """Cut an incomplete last line left by a crash mid-write, returning its bytes.

        The caller keeps the bytes (journal + a ``.partial`` file), so nothing is lost
        (S7). Returns ``None`` when the file ends cleanly.
        """
        if not self.exists():
            return None
        raw = self.path.read_bytes()
        if raw.endswith(b"\n"):
            return None
        cut = raw.rfind(b"\n") + 1
        tail = raw[cut:]
        with os.fdopen(open_private(self.path, os.O_RDWR), "r+b") as fh:
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
        return tail


def elapsed_statistics() -> list[pl.Expr]:
    """The per-group statistics of ``elapsed_seconds`` (R6, R7), for a ``group_by().agg``.

    Returns:
        Expressions for ``runs`` (rows), ``n`` (measured), ``failed`` (null elapsed, never
        counted as 0), ``median_seconds``, ``min_seconds``, ``max_seconds`` and ``_p95``
        (the caller keeps it only from 20 observations). Used by :func:`summarize` and
        :func:`gpusession.core.records.summary.summary_rows`.
    """
    import polars as pl

    e = pl.col("elapsed_seconds")
    return [
        pl.len().alias("runs"),
        e.count().alias("n"),
        e.null_count().alias("failed"),
        e.median().alias("median_seconds"),
        e.min().alias("min_seconds"),
        e.max().alias("max_seconds"),
        e.quantile(0.95, interpolation="linear").alias("_p95"),
    ]


def summarize(frame: pl.DataFrame) -> pl.DataFrame:
    """Per (experiment, variant, phase): n, median, min, max of ``elapsed_seconds`` (R6).

    Failed runs (``elapsed_seconds`` null) are counted in ``failed`` and left out of the
    statistics, never replaced by 0 (R7). ``p95_seconds`` is null below 20 observations
    (R6: five runs do not justify a p95).

    Args:
        frame: rows as read by :meth:`ResultsFile.read`.

    Returns:
        Columns ``experiment_id, variant_id, phase, runs, n, failed, median_seconds,
        min_seconds, max_seconds, p95_seconds``, sorted by experiment, variant, phase.
    """
    import polars as pl

    if frame.height == 0:
        return pl.DataFrame(
            schema={
                "experiment_id": pl.String,
                "variant_id": pl.String,
                "phase": pl.String,
                "runs": pl.UInt32,
                "n": pl.UInt32,
                "failed": pl.UInt32,
                "median_seconds": pl.Float64,
                "min_seconds": pl.Float64,
                "max_seconds": pl.Float64,
                "p95_seconds": pl.Float64,
            }
        )
    out = (
        frame.group_by(["experiment_id", "variant_id", "phase"], maintain_order=True)
        .agg(*elapsed_statistics())
        .with_columns(
            pl.when(pl.col("n") >= 20).then(pl.col("_p95")).otherwise(None).alias("p95_seconds")
        )
        .drop("_p95")
    )
    phase_order = {p: i for i, p in enumerate(PHASES)}
    return out.with_columns(
        pl.col("phase").replace_strict(phase_order, default=99, return_dtype=pl.Int64).alias("_po")
    ).sort(["experiment_id", "variant_id", "_po"]).drop("_po")
