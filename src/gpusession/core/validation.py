"""Corpus validation: a corpus is accepted only when every check passes (V1-V8, seed 000 §1).

Who calls it: the run engine (once :func:`load_expected` per experiment, then
:func:`validate_output` per run; fast and free of side effects), the ``validate``
command, and the TUI's Validation pane, which shows :class:`ValidationReport` fields
and :meth:`ValidationReport.summary_lines` -- the same words as the CLI.

The checks, all with polars and no Python loop over rows:

* IDs (V2, V3): missing, extra, duplicated in the output, duplicated in the expected
  list -- sets are compared, equal line counts never count as a match.
* Format per record (V4): parseable, ``id`` and ``label`` present and strings, ID not
  empty, label among the declared classes; encoding problems reported.
* Quality (V6): macro-F1 over the declared classes (a class never predicted scores 0)
  or accuracy, over the well-formed records whose ID is expected and has a reference;
  identical to ``sklearn.metrics.f1_score(y, p, labels=classes, average="macro",
  zero_division=0)``.
* Overlap (V7): training and tuning IDs must not meet the evaluation IDs (or each other).

``corpus_accepted`` is the conjunction (V1); each part keeps its own reason.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.errors import BadInput
from gpusession.core.summary import accepted_unique_corpora
from gpusession.core.validation_checks import duplicate_rows, first_occurrences
from gpusession.core.validation_io import (
    ParsedRecords,
    parse_csv,
    read_bytes,
    read_id_list,
    read_id_table,
)
from gpusession.core.validation_jsonl import parse_jsonl
from gpusession.core.validation_report import ValidationReport

METRICS = ("macro_f1", "accuracy")
OUTPUT_FORMATS = ("jsonl", "csv")
#: How many bad records / offenders a report quotes (V4: "the first bad records").
FIRST_N = 20
#: Floating-point slack when comparing a metric with its threshold (0.91 − 0.01 ≠ 0.9).
EPSILON = 1e-12

__all__ = [
    "Expected",
    "Protocol",
    "ValidationReport",
    "accepted_corpora",
    "load_expected",
    "validate_output",
    "METRICS",
    "OUTPUT_FORMATS",
]


def _number(d: Mapping[str, Any], key: str, default: float | None, *, low: float | None = None) -> float | None:
    value = d.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput(f"expected a number, got {value!r}", field=f"protocol.{key}")
    if low is not None and value < low:
        raise BadInput(f"expected a number ≥ {low}, got {value!r}", field=f"protocol.{key}")
    return float(value)


@dataclass(frozen=True)
class Protocol:
    """What counts as an accepted corpus, fixed before the first measurement (V5).

    Attributes:
        classes: the declared labels; a label outside them is a format error (V4, H-13).
        metric: ``"macro_f1"`` (default) or ``"accuracy"`` (V6).
        threshold: the value the metric must reach, between 0 and 1.
        tolerance: how far below the threshold is still accepted (≥ 0).
        reference_value: the metric of a reference configuration, if any.
        max_degradation: how far below ``reference_value`` is still accepted (needs it).
        output_format: ``"jsonl"`` or ``"csv"`` -- the run outputs' format.
    """

    classes: tuple[str, ...]
    metric: str = "macro_f1"
    threshold: float = 0.9
    tolerance: float = 0.0
    reference_value: float | None = None
    max_degradation: float | None = None
    output_format: str = "jsonl"

    def __post_init__(self) -> None:
        if isinstance(self.classes, list):
            object.__setattr__(self, "classes", tuple(self.classes))
        self.check()
        for key in ("threshold", "tolerance", "reference_value", "max_degradation"):
            value = getattr(self, key)
            if value is not None:
                object.__setattr__(self, key, float(value))

    def check(self) -> None:
        """Raise :class:`BadInput` (naming the ``protocol.*`` field) unless usable."""
        if isinstance(self.classes, str) or not isinstance(self.classes, (tuple, list)):
            raise BadInput("expected a list of class names", field="protocol.classes")
        if not self.classes:
            raise BadInput("no classes declared; declare at least one", field="protocol.classes")
        for c in self.classes:
            if not isinstance(c, str) or c == "":
                raise BadInput(f"class names are non-empty strings, got {c!r}", field="protocol.classes")
        dup = sorted({c for c in self.classes if list(self.classes).count(c) > 1})
        if dup:
            raise BadInput(f"class declared twice: {', '.join(map(repr, dup))}", field="protocol.classes")
        if self.metric not in METRICS:
            raise BadInput(f"expected one of {', '.join(METRICS)}, got {self.metric!r}", field="protocol.metric")
        if self.output_format not in OUTPUT_FORMATS:
            raise BadInput(
                f"expected one of {', '.join(OUTPUT_FORMATS)}, got {self.output_format!r}",
                field="protocol.output_format",
            )
        for key in ("threshold", "reference_value"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0):
                raise BadInput(f"expected a number between 0 and 1, got {v!r}", field=f"protocol.{key}")
        for key in ("tolerance", "max_degradation"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0):
                raise BadInput(f"expected a number between 0 and 1, got {v!r}", field=f"protocol.{key}")
        if self.max_degradation is not None and self.reference_value is None:
            raise BadInput(
                "a maximum degradation needs the reference value it is measured from",
                field="protocol.reference_value",
            )

    def fingerprint(self) -> str:
        """A short stable digest of every field (V5): equal protocols give equal
        fingerprints; changing any field changes it, so a run engine can tell that a
        changed protocol needs a new experiment id."""
        canonical = json.dumps(self.to_toml(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]

    def to_toml(self) -> dict[str, Any]:
        """The ``[protocol]`` table for ``session.toml`` (``None`` fields omitted)."""
        return {
            "classes": list(self.classes),
            "metric": self.metric,
            "threshold": self.threshold,
            "tolerance": self.tolerance,
            "reference_value": self.reference_value,
            "max_degradation": self.max_degradation,
            "output_format": self.output_format,
        }

    @classmethod
    def from_toml(cls, d: Mapping[str, Any]) -> Protocol:
        """Build from a ``[protocol]`` table.

        Raises:
            BadInput: a missing ``classes``, an unknown key, or a value of the wrong
                type or range, naming the ``protocol.*`` field.
        """
        if not isinstance(d, Mapping):
            raise BadInput("expected a table", field="protocol")
        known = {"classes", "metric", "threshold", "tolerance", "reference_value", "max_degradation", "output_format"}
        unknown = sorted(set(d) - known - {"schema"})
        if unknown:
            raise BadInput(f"unknown key(s): {', '.join(unknown)}", field="protocol")
        classes = d.get("classes")
        if classes is None:
            raise BadInput("missing key; declare the classes", field="protocol.classes")
        if not isinstance(classes, (list, tuple)):
            raise BadInput(f"expected a list of class names, got {classes!r}", field="protocol.classes")
        metric = d.get("metric", "macro_f1")
        output_format = d.get("output_format", "jsonl")
        if not isinstance(metric, str):
            raise BadInput(f"expected a string, got {metric!r}", field="protocol.metric")
        if not isinstance(output_format, str):
            raise BadInput(f"expected a string, got {output_format!r}", field="protocol.output_format")
        return cls(
            classes=tuple(classes),
            metric=metric,
            threshold=_number(d, "threshold", 0.9) or 0.0,
            tolerance=_number(d, "tolerance", 0.0) or 0.0,
            reference_value=_number(d, "reference_value", None),
            max_degradation=_number(d, "max_degradation", None),
            output_format=output_format,
        )


@dataclass(frozen=True, eq=False)
class Expected:
    """The expected IDs of a corpus and their references (seed 000 §1).

    Attributes:
        path: the corpus file (or ID list).
        frame: ``line`` (Int64), ``id`` (String), ``label`` (String, null = no reference).
        references_path: the separate ``id,label`` file, if one was given.
        notes: what was tolerated while reading (BOM, CRLF, header line, ...).
    """

    path: Path
    frame: pl.DataFrame
    references_path: Path | None = None
    notes: tuple[str, ...] = ()
    unique: pl.DataFrame = field(init=False, repr=False)
    duplicate_rows: pl.DataFrame = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Computed once per corpus: the run engine validates many runs against it.
        frame = self.frame.with_columns(h=pl.col("id").hash())
        dup_rows = duplicate_rows(frame)
        object.__setattr__(self, "duplicate_rows", dup_rows)
        object.__setattr__(self, "unique", first_occurrences(frame, dup_rows))

    @property
    def has_duplicates(self) -> bool:
        """Whether an ID occurs twice in the expected list (rejects the corpus, V3)."""
        return self.duplicate_rows.height > 0

    @property
    def ids(self) -> pl.Series:
        """Every expected ID, in file order (String, duplicates kept)."""
        return self.frame["id"]

    @property
    def n_ids(self) -> int:
        return self.frame.height

    @property
    def has_labels(self) -> bool:
        """Whether at least one expected ID has a reference label."""
        return bool(self.frame["label"].null_count() < self.frame.height)

    def labels_found(self) -> tuple[str, ...]:
        """The distinct reference labels, sorted (used when no classes are declared)."""
        return tuple(sorted(self.frame["label"].drop_nulls().unique().to_list()))


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
                f"ID {conflict['id'][0]!r} is given more than one label", path=references, line=int(conflict["line"][0])
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


def _read_ids(source: Path | Sequence[str] | None) -> tuple[pl.Series | None, str | None]:
    if source is None:
        return None, None
    return read_id_list(source)


def parse_output(output: Path, output_format: str) -> ParsedRecords:
    """Read a run's output file record by record (V4).

    Raises:
        BadInput: the file is missing or unreadable (content problems are reported).
    """
    data = read_bytes(Path(output))
    return parse_csv(data) if output_format == "csv" else parse_jsonl(data)


def validate_output(
    output: Path,
    expected: Expected,
    protocol: Protocol,
    *,
    train_ids: Path | Sequence[str] | None = None,
    tune_ids: Path | Sequence[str] | None = None,
    classes_source: str = "declared in the protocol",
) -> ValidationReport:
    """Validate one run's output against the expected IDs and the protocol (V1-V7).

    Args:
        output: the run's output file (``protocol.output_format``: JSONL or CSV).
        expected: from :func:`load_expected`.
        protocol: classes, metric, threshold, tolerance, reference, format (V5).
        train_ids, tune_ids: training / tuning IDs (file or strings) for V7.

    Returns:
        The report; nothing is written (call :meth:`ValidationReport.write`).

    Raises:
        BadInput: the output or an ID list is missing or unreadable.
    """
    from gpusession.core.validation_checks import run_checks

    parsed = parse_output(Path(output), protocol.output_format)
    train, train_desc = _read_ids(train_ids)
    tune, tune_desc = _read_ids(tune_ids)
    return run_checks(
        Path(output),
        parsed,
        expected,
        protocol,
        train=train,
        train_desc=train_desc,
        tune=tune,
        tune_desc=tune_desc,
        classes_source=classes_source,
    )


def accepted_corpora(frame: pl.DataFrame) -> int:
    """Distinct ``corpus_revision``s with at least one accepted run (K3, K4); never a
    count of rows. Same as :func:`gpusession.core.summary.accepted_unique_corpora`."""
    return accepted_unique_corpora(frame)

