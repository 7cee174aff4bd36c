"""The expected IDs, references and train/tune lists: inputs a person gives (V2, V3, V7).

Called by :func:`gpusession.core.validation.load_expected` and
:func:`gpusession.core.validation.validate_output`. Reads CSV / TSV / JSONL / Parquet
tables or plain ID lists (the format is chosen here, by suffix, so that
:mod:`.read` never needs :mod:`.read_jsonl`), strictly: an unusable file raises
:class:`~gpusession.core.files.errors.BadInput` naming the file and line. IDs are always
strings ("007" is not "7").
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.files.textio import MAX_LINE_BYTES, decode_strict, read_bytes
from gpusession.core.validation.model import Expected
from gpusession.core.validation.read import (
    drop_trailing_empty_lines,
    record_start_lines,
    split_lines,
    trailing_empty_note,
)
from gpusession.core.validation.read_jsonl import parse_jsonl

TABLE_SUFFIXES = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


def read_id_table(path: Path, *, need_label: bool = False) -> tuple[pl.DataFrame, list[str]]:
    """Read an ID file (V2, V4).

    CSV / JSONL / Parquet with an ``id`` column (and ``label`` if present), or a plain
    list with one ID per line (any other suffix; a first line that is exactly ``id`` is
    taken as a header). Empty lines at the very end are ignored with a note (H-20); an
    empty line elsewhere is an empty ID, refused with its line number.

    Returns:
        ``(frame, notes)``: columns ``line`` (Int64, 1-based line or row), ``id``
        (String) and ``label`` (String, null where absent).

    Raises:
        BadInput: unreadable, not a regular file (a FIFO, a device), a line longer than
            :data:`~gpusession.core.files.textio.MAX_LINE_BYTES`, not UTF-8, no ``id`` column,
            an empty or non-string ID, a label required but absent; names file and line.
    """
    path = Path(path)
    kind = TABLE_SUFFIXES.get(path.suffix.lower(), "list")
    if kind == "parquet":
        frame, notes = _read_parquet(path), list[str]()
    else:
        data = read_bytes(path, max_line_bytes=MAX_LINE_BYTES)
        decoded = decode_strict(data, path=path, crlf=True)
        text, notes = decoded.text, decoded.notes()
        text, n_empty = drop_trailing_empty_lines(text)
        if n_empty:
            notes.append(trailing_empty_note(n_empty))
        if kind == "list":
            frame = _read_plain_list(path, text)
        elif kind == "csv":
            frame = _read_csv_table(
                path, text, data if not notes else None, separator="\t" if path.suffix.lower() == ".tsv" else ","
            )
        else:
            frame = _read_jsonl_table(path, data)
    if "label" not in frame.columns:
        if need_label:
            raise BadInput("no 'label' column; a references file needs id,label", path=path)
        frame = frame.with_columns(label=pl.lit(None, pl.String))
    frame = frame.select(pl.col("line").cast(pl.Int64), "id", "label")
    empty = frame.filter(pl.col("id").is_null() | (pl.col("id") == ""))
    if empty.height:
        raise BadInput("empty ID; every record needs a non-empty ID", path=path, line=int(empty["line"][0]))
    return frame, notes


def _read_plain_list(path: Path, text: str) -> pl.DataFrame:
    lines = split_lines(text)
    frame = pl.DataFrame({"id": lines}, schema={"id": pl.String}).with_row_index("line", offset=1)
    if frame.height and lines[0] == "id":
        frame = frame.slice(1)
    return frame


def _read_csv_table(path: Path, text: str, raw: bytes | None, *, separator: str) -> pl.DataFrame:
    """``raw``: the file's bytes when they equal ``text`` encoded (saves a copy)."""
    if not text or text.isspace():
        raise BadInput("the file is empty; expected a header with an 'id' column", path=path)
    try:
        frame = pl.read_csv(
            io.BytesIO(raw if raw is not None else text.encode("utf-8")),
            infer_schema=False,
            has_header=True,
            separator=separator,
        )
    except Exception as exc:  # noqa: BLE001 - the user's file: whatever polars' CSV parser raises is reported as bad input (V4)
        raise BadInput(f"not readable as CSV: {str(exc).splitlines()[0]}", path=path) from None
    if "id" not in frame.columns:
        raise BadInput(f"no 'id' column in the header (found: {', '.join(frame.columns)})", path=path, line=1)
    cols = ["id"] + (["label"] if "label" in frame.columns else [])
    return frame.select(cols).with_columns(record_start_lines(text, frame.height, separator=separator)).select(
        "line", *cols)


def _read_jsonl_table(path: Path, data: bytes) -> pl.DataFrame:
    parsed = parse_jsonl(data)
    if parsed.file_problems:
        raise BadInput(parsed.file_problems[0], path=path)
    rec = parsed.records
    # A corpus needs a string ID on every line; a label may be absent or null (no
    # reference) but, when given, must be a string.
    tolerated = pl.col("problem").is_in(["missing field 'label'", "label is a JSON null (null), expected a string"])
    bad = rec.filter(pl.col("id").is_null() | (pl.col("problem").is_not_null() & ~tolerated))
    if bad.height:
        first = bad.row(0, named=True)
        raise BadInput(str(first["problem"] or "no string ID"), path=path, line=int(first["line"]))
    return rec.select("line", "id", "label")


def _read_parquet(path: Path) -> pl.DataFrame:
    data = read_bytes(path)  # a regular file only: a FIFO or a device is refused
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - the user's file: whatever polars' Parquet reader raises is reported as bad input (V4)
        raise BadInput(f"not readable as Parquet: {str(exc).splitlines()[0]}", path=path) from None
    if "id" not in frame.columns:
        raise BadInput(f"no 'id' column (found: {', '.join(frame.columns)})", path=path)
    if frame.schema["id"] != pl.String:
        raise BadInput(
            f"the id column is {frame.schema['id']}, expected strings "
            "(IDs are strings: '007' is not '7'); store the IDs as text",
            path=path,
            field="id",
        )
    cols = ["id"]
    if "label" in frame.columns:
        if frame.schema["label"] not in (pl.String, pl.Categorical) and not isinstance(
            frame.schema["label"], pl.Enum
        ):
            raise BadInput(f"the label column is {frame.schema['label']}, expected strings", path=path, field="label")
        frame = frame.with_columns(pl.col("label").cast(pl.String))
        cols.append("label")
    return frame.select(cols).with_row_index("line", offset=1)


def read_id_list(source: Path | Sequence[str]) -> tuple[pl.Series, str]:
    """IDs of a train or tune list (V7): a file as in :func:`read_id_table`, or strings.

    Returns:
        ``(ids, description)``; ``ids`` a String series.

    Raises:
        BadInput: an unusable file or a non-string item.
    """
    if isinstance(source, (str, Path)):
        frame, _ = read_id_table(Path(source))
        return frame["id"], str(source)
    items = list(source)
    bad = [x for x in items if not isinstance(x, str)]
    if bad:
        raise BadInput(f"IDs must be strings, got {shown(bad[0])}", field="ids")
    return pl.Series("id", items, dtype=pl.String), f"{len(items)} IDs given"


def load_expected(corpus: Path, *, references: Path | None = None) -> Expected:
    """Read the expected IDs (and references) of a corpus.

    Args:
        corpus: CSV / TSV / JSONL / Parquet with an ``id`` column (and optionally
            ``label``), or a plain list, one ID per line (any other suffix).
        references: a separate ``id,label`` file (same formats); it replaces the
            corpus labels. An expected ID it does not cover has no reference.

    Returns:
        An :class:`Expected`; duplicated IDs are kept (they reject the corpus, V3).

    Raises:
        BadInput: unreadable file, no ``id`` column, an empty ID, non-string IDs,
            a references file without labels or with one ID given two labels.
    """
    corpus = Path(corpus)
    frame, notes = read_id_table(corpus)
    if frame.height == 0:
        raise BadInput("no expected IDs: the corpus holds no record", path=corpus)
    notes = [f"{corpus.name}: {n}" for n in notes]
    if references is not None:
        references = Path(references)
        refs, ref_notes = read_id_table(references, need_label=True)
        notes += [f"{references.name}: {n}" for n in ref_notes]
        conflict = (
            refs.filter(pl.col("label").is_not_null())
            .group_by("id")
            .agg(pl.col("label").n_unique().alias("n"), pl.col("line").min())
            .filter(pl.col("n") > 1)
            .sort("line")
        )
        if conflict.height:
            raise BadInput(
                f"ID {shown(conflict['id'][0])} is given more than one label", path=references, line=int(conflict["line"][0])
            )
        if frame["label"].null_count() < frame.height:
            notes.append(f"the labels of {corpus.name} were replaced by those of {references.name}")
        refs_u = refs.filter(pl.col("label").is_not_null()).unique(subset="id", keep="first").select("id", "label")
        frame = frame.drop("label").join(refs_u, on="id", how="left", maintain_order="left")
        uncovered = frame["label"].null_count()
        if uncovered:
            notes.append(f"{uncovered:,} expected ID(s) have no reference in {references.name}")
    unlabelled = frame["label"].null_count()
    if references is None and 0 < unlabelled < frame.height:
        notes.append(f"{unlabelled:,} expected ID(s) of {corpus.name} have no label: they are not scored")
    return Expected(path=corpus, frame=frame, references_path=references, notes=tuple(notes))
