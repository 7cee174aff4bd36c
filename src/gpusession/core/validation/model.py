"""The values of corpus validation: what is expected, what counts, what was found (V1-V7).

:class:`Protocol` (classes, metric, threshold, tolerance, reference, output format;
fixed before the first measurement, V5), :class:`Expected` (the expected IDs and their
references), and the small values a report carries (:class:`BadRecord`;
:class:`~gpusession.core.validation.metrics.ClassScore` lives with the metrics). Imports
only :mod:`.metrics` of :mod:`gpusession.core.validation`: the readers, the checks and
the report all build on it (read → checks → report).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.validation.metrics import DEFAULT_METRIC, METRICS

OUTPUT_FORMATS = ("jsonl", "csv")
#: How many bad records / offenders a report quotes (V4: "the first bad records").
FIRST_N = 20
#: Floating-point slack when comparing a metric with its threshold (0.91 − 0.01 ≠ 0.9).
EPSILON = 1e-12


def _number(d: Mapping[str, Any], key: str, default: float | None, *, low: float | None = None) -> float | None:
    value = d.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput(f"expected a number, got {shown(value)}", field=f"protocol.{key}")
    if low is not None and value < low:
        raise BadInput(f"expected a number ≥ {low}, got {shown(value)}", field=f"protocol.{key}")
    return float(value)


@dataclass(frozen=True)
class Protocol:
    """What counts as an accepted corpus, fixed before the first measurement (V5).

    Attributes:
        classes: the declared labels; a label outside them is a format error (V4, H-13).
        metric: a name of :data:`~gpusession.core.validation.metrics.METRICS`:
            ``"macro_f1"`` (default) or ``"accuracy"`` (V6).
        threshold: the value the metric must reach, between 0 and 1.
        tolerance: how far below the threshold is still accepted (≥ 0); ``None`` when
            nobody chose one (stored and said as not chosen, read as 0 by the rule: V5).
        reference_value: the metric of a reference configuration, if any.
        max_degradation: how far below ``reference_value`` is still accepted (needs it).
        output_format: ``"jsonl"`` or ``"csv"`` -- the run outputs' format.
    """

    classes: tuple[str, ...]
    metric: str = DEFAULT_METRIC
    threshold: float = 0.9
    tolerance: float | None = None
    reference_value: float | None = None
    max_degradation: float | None = None
    output_format: str = "jsonl"

    def __post_init__(self) -> None:
        """Classes as a tuple, then :meth:`check` (V5).

        Raises:
            BadInput: a field out of range (see :meth:`check`).
        """
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
                raise BadInput(f"class names are non-empty strings, got {shown(c)}", field="protocol.classes")
        dup = sorted({c for c in self.classes if list(self.classes).count(c) > 1})
        if dup:
            raise BadInput(f"class declared twice: {', '.join(map(repr, dup))}", field="protocol.classes")
        if self.metric not in METRICS:
            raise BadInput(f"expected one of {', '.join(METRICS)}, got {shown(self.metric)}", field="protocol.metric")
        if self.output_format not in OUTPUT_FORMATS:
            raise BadInput(
                f"expected one of {', '.join(OUTPUT_FORMATS)}, got {shown(self.output_format)}",
                field="protocol.output_format",
            )
        for key in ("threshold", "reference_value"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0):
                raise BadInput(f"expected a number between 0 and 1, got {shown(v)}", field=f"protocol.{key}")
        for key in ("tolerance", "max_degradation"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0):
                raise BadInput(f"expected a number between 0 and 1, got {shown(v)}", field=f"protocol.{key}")
        if self.max_degradation is not None and self.reference_value is None:
            raise BadInput(
                "a maximum degradation needs the reference value it is measured from",
                field="protocol.reference_value",
            )

    @property
    def tolerance_applied(self) -> float:
        """The tolerance the rule subtracts: the chosen one, else 0 (said as not chosen)."""
        return self.tolerance or 0.0

    def fingerprint(self) -> str:
        """A short stable digest of every field (V5).

        Equal protocols give equal fingerprints; changing any field changes it, so a run
        engine can tell that a changed protocol needs a new experiment id.
        """
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
            raise BadInput(f"expected a list of class names, got {shown(classes)}", field="protocol.classes")
        metric = d.get("metric", DEFAULT_METRIC)
        output_format = d.get("output_format", "jsonl")
        if not isinstance(metric, str):
            raise BadInput(f"expected a string, got {shown(metric)}", field="protocol.metric")
        if not isinstance(output_format, str):
            raise BadInput(f"expected a string, got {shown(output_format)}", field="protocol.output_format")
        return cls(
            classes=tuple(classes),
            metric=metric,
            threshold=_number(d, "threshold", 0.9) or 0.0,
            tolerance=_number(d, "tolerance", None),
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
    #: ``unique``'s ID hashes sorted (``h``, UInt64) and their rows there (``row``, UInt32):
    #: an output's IDs are merged with it, a slice at a time, by an as-of join (V2).
    by_hash: pl.DataFrame = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Find the duplicate IDs (V3) and the first occurrences, once per corpus."""
        # Computed once per corpus: the run engine validates many runs against it. One sort
        # of the hashes serves both: the duplicates are the hashes equal to their neighbour.
        frame = self.frame.with_columns(h=pl.col("id").hash())
        by_hash = _sorted_hashes(frame)
        dup_rows = duplicate_rows(frame, by_hash["h"])
        unique = first_occurrences(frame, dup_rows)
        object.__setattr__(self, "duplicate_rows", dup_rows)
        object.__setattr__(self, "unique", unique)
        object.__setattr__(self, "by_hash", by_hash if unique.height == frame.height else _sorted_hashes(unique))

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
        """Number of expected IDs, duplicates included (V2)."""
        return self.frame.height

    @property
    def has_labels(self) -> bool:
        """Whether at least one expected ID has a reference label."""
        return bool(self.frame["label"].null_count() < self.frame.height)

    def labels_found(self) -> tuple[str, ...]:
        """The distinct reference labels, sorted (used when no classes are declared)."""
        return tuple(sorted(self.frame["label"].drop_nulls().unique().to_list()))


def _sorted_hashes(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame``'s ``h`` sorted (UInt64) beside its row there (``row``, UInt32)."""
    return frame.select("h", row=pl.int_range(0, pl.len(), dtype=pl.UInt32)).sort("h")


def duplicate_rows(frame: pl.DataFrame, ordered: pl.Series | None = None) -> pl.DataFrame:
    """The rows of ``frame`` whose ``id`` occurs more than once, in frame order (V3).

    ``h`` is the ID's 64-bit hash: rows with a unique hash are certainly unique, so
    only the (few) rows sharing a hash are compared as strings. The hashes shared are
    found by sorting (a sort and a shift cost a quarter of ``is_duplicated`` over a
    million rows); ``ordered`` is ``frame["h"]`` already sorted, when the caller has it.
    """
    if ordered is None:
        ordered = frame["h"].sort()
    shared = ordered.filter(ordered == ordered.shift(1))
    if shared.len() == 0:  # the usual corpus: every hash distinct
        return frame.clear()
    candidates = frame.filter(pl.col("h").is_in(shared.unique().implode()))
    return candidates.filter(pl.col("id").is_duplicated())


def first_occurrences(frame: pl.DataFrame, dup_rows: pl.DataFrame) -> pl.DataFrame:
    """``frame`` without the second and later occurrences of each ID (by ``line``)."""
    if dup_rows.height == 0:
        return frame
    later = dup_rows.filter(~pl.col("id").is_first_distinct())["line"]
    return frame.filter(~pl.col("line").is_in(later.implode()))


@dataclass(frozen=True)
class BadRecord:
    """One bad output record (V4): 1-based line, the problem in words, the line quoted."""

    line: int
    problem: str
    text: str
