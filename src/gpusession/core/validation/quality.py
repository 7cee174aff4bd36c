"""The quality check of corpus validation: the scored IDs, the metric, the rule in words (V6, H-21).

Called by :func:`gpusession.core.validation.checks.run_checks` with the IDs check's match;
computes every metric of :data:`~gpusession.core.validation.metrics.METRICS` and judges
the protocol's one against threshold − tolerance and the reference's maximum
degradation. Every expected ID with a reference is scored; one without a valid
prediction (missing, malformed, outside the declared classes) counts as wrong (H-21).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from gpusession.core.records.summary import metric_words
from gpusession.core.validation.metrics import METRICS, ClassScore, tally
from gpusession.core.validation.model import EPSILON, FIRST_N, Expected, Protocol


@dataclass(frozen=True)
class _Scored:
    """The expected IDs scored (V6, H-21) and why some count as wrong.

    ``frame``: one row per expected ID with a reference, ``label`` (null: no valid
    prediction) and ``ref``. ``wrong``: how many have no valid prediction; of them
    ``missing`` (no record), ``malformed`` and ``undeclared`` (label outside the classes).
    """

    frame: pl.DataFrame
    wrong: int
    missing: int
    malformed: int
    undeclared: int


def _scored(scoring: pl.DataFrame, n_classes: int) -> _Scored:
    """Every expected ID with a reference, its first record's label when valid (H-21).

    ``scoring``: one row per distinct expected ID, ``ref`` and ``pred`` as class codes
    (:func:`~gpusession.core.validation.read.label_code`: ``n_classes`` for a label
    outside the classes) and ``ok`` (null when the ID is missing).
    """
    # One without a valid prediction (missing, malformed, outside the declared classes)
    # keeps a null label: a wrong prediction.
    # Lazy, so that the filter moves only the columns each result keeps.
    with_ref = scoring.lazy().filter(pl.col("ref").is_not_null())
    valid = pl.col("ok").fill_null(False)
    scored, counts = pl.collect_all([
        with_ref.select(label=pl.when(valid).then(pl.col("pred")), ref="ref"),
        with_ref.select(
            wrong=(~valid).sum(),
            missing=pl.col("ok").is_null().sum(),
            undeclared=(pl.col("ok").is_not_null() & ~valid & (pl.col("pred") == n_classes).fill_null(False)).sum(),
        ),
    ])
    wrong, n_missing, n_undeclared = (int(v) for v in counts.row(0))
    return _Scored(scored, wrong, n_missing, wrong - n_missing - n_undeclared, n_undeclared)


def tolerance_words(tolerance: float | None) -> str:
    """``tolerance 0.0100``, or ``tolerance not chosen (read as 0)`` (V5: nobody chose 0)."""
    return "tolerance not chosen (read as 0)" if tolerance is None else f"tolerance {tolerance:.4f}"


def _quality_reason(value: float, scored: _Scored, expected: Expected, protocol: Protocol) -> tuple[bool, str]:
    """Whether ``value`` meets the rule, and why in words (V6; H-21; reference, max degradation)."""
    floor = protocol.threshold - protocol.tolerance_applied
    quality_met = value + EPSILON >= floor
    n_scored = scored.frame.height
    no_ref = expected.unique.height - n_scored
    over = (
        f"over every expected ID ({n_scored:,})"
        if no_ref == 0
        else f"over the {n_scored:,} expected IDs with a reference ({no_ref:,} of "
        f"{expected.unique.height:,} have none)"
    )
    wrong = ""
    if scored.wrong:
        why = [
            f"{n:,} {what}"
            for n, what in (
                (scored.missing, "missing"),
                (scored.malformed, "malformed"),
                (scored.undeclared, "outside the declared classes"),
            )
            if n
        ]
        wrong = f", {scored.wrong:,} of them without a valid prediction, counted as wrong ({', '.join(why)})"
    reason = (
        f"{metric_words(protocol.metric)} = {value:.4f} {'≥' if quality_met else '<'} {floor:.4f} "
        f"(threshold {protocol.threshold:.4f} − {tolerance_words(protocol.tolerance)}), "
        f"margin {value - floor:+.4f}; {over}{wrong}; label set used: {', '.join(protocol.classes)}"
    )
    if no_ref:
        # H-21: a figure over a subset never says "met"; the rule needs a reference for
        # every expected ID (the figure is still reported, for what it is worth).
        quality_met = False
        reason = (
            f"not met: {no_ref:,} of {expected.unique.height:,} expected IDs have no "
            f"reference, so the figure covers a subset only; {reason}"
        )
    if protocol.reference_value is not None:
        drop = protocol.reference_value - value
        if protocol.max_degradation is not None:
            ok = drop <= protocol.max_degradation + EPSILON
            quality_met = quality_met and ok
            reason += (
                f"; {drop:+.4f} below the reference {protocol.reference_value:.4f} "
                f"({'within' if ok else 'beyond'} the maximum degradation {protocol.max_degradation:.4f})"
            )
        else:
            reason += f"; reference {protocol.reference_value:.4f} (no maximum degradation set)"
    return quality_met, reason


def _quality_notes(per_class: tuple[ClassScore, ...], scored: _Scored, *, dup_scored: bool) -> list[str]:
    """What the figure counts that a reader might not expect (V6: F1 = 0, not skipped; H-21)."""
    notes: list[str] = []
    unused = [c.label for c in per_class if c.support == 0 and c.predicted == 0]
    if unused:
        notes.append(
            f"class(es) {', '.join(map(repr, unused))} have no reference and no prediction; "
            "they score F1 = 0 and still count in the macro average"
        )
    never = [c.label for c in per_class if c.predicted == 0 and c.support > 0]
    if never:
        notes.append(f"class(es) {', '.join(map(repr, never))} never predicted: F1 = 0 (not skipped)")
    if scored.wrong:
        notes.append(
            f"{scored.wrong:,} expected ID(s) without a valid prediction count as wrong predictions "
            "(in their class's support, in no class's predictions)"
        )
    if dup_scored:
        notes.append(
            "a duplicated ID is scored once, by its first record (as a wrong prediction if that one is not valid)"
        )
    return notes


def check_quality(
    scoring: pl.DataFrame, expected: Expected, protocol: Protocol, classes: pl.Series, *, duplicated_in_output: bool
) -> dict[str, Any]:
    """The quality rule (V6): every metric of :data:`METRICS` computed, the protocol's one judged.

    Args:
        scoring: one row per distinct expected ID (from the IDs check): ``ref`` and
            ``pred`` (its first record's label), both class codes
            (:func:`~gpusession.core.validation.read.label_code`), and ``ok`` (that
            record is valid; null when the ID is missing).
        expected: the expected IDs and references.
        protocol: metric, threshold, tolerance, reference, maximum degradation (V5).
        classes: the declared classes.
        duplicated_in_output: whether an ID appears twice in the output (said in a note).

    Returns:
        The quality fields of :class:`~gpusession.core.validation.report.ValidationReport`.
    """
    scored = _scored(scoring, len(protocol.classes))
    counts = tally(scored.frame, protocol.classes)
    values = {name: (None if counts is None else metric(counts)) for name, metric in METRICS.items()}
    value = values[protocol.metric]
    if not expected.has_labels:
        quality_met, reason = False, "not computed: the expected list has no reference labels"
    elif value is None:  # pragma: no cover - has_labels means at least one expected ID is scored
        quality_met, reason = False, "not computed: no expected ID has a reference"
    else:
        quality_met, reason = _quality_reason(value, scored, expected, protocol)
        refs = expected.unique.select("label").filter(pl.col("label").is_not_null())
        outside = refs.filter(~pl.col("label").is_in(classes.implode()))
        if outside.height:
            quality_met = False
            found = sorted(outside["label"].unique().to_list())[:FIRST_N]
            reason += (
                f"; FAIL: {outside.height:,} reference label(s) are not declared classes "
                f"({', '.join(map(repr, found))}): the declared classes do not cover the references"
            )
    per_class = () if counts is None else counts.per_class
    return {
        "quality_met": quality_met,
        "quality_reason": reason,
        "quality_metric": protocol.metric,
        "quality_threshold": protocol.threshold,
        "quality_tolerance": protocol.tolerance,
        "quality_value": value,
        "quality_margin": None if value is None else value - (protocol.threshold - protocol.tolerance_applied),
        "reference_value": protocol.reference_value,
        "max_degradation": protocol.max_degradation,
        "metric_values": values,
        "scored_records": scored.frame.height,
        "predictions_missing": scored.missing,
        "predictions_malformed": scored.malformed,
        "predictions_undeclared": scored.undeclared,
        "per_class": list(per_class),
        "quality_notes": _quality_notes(per_class, scored, dup_scored=duplicated_in_output and value is not None),
    }
