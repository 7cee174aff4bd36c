"""The four checks of corpus validation, in polars (V1-V4, V6, V7; H-13).

Called by :func:`gpusession.core.validation.validate_output` with the parsed output;
builds the :class:`~gpusession.core.validation.report.ValidationReport`. Records in,
check results out: :func:`run_checks` adds the protocol's per-record problems, then
each check is one function returning its part of the report (:func:`_check_ids`,
:func:`_check_format`, :func:`_check_quality`, :func:`_overlap`). No Python loop runs
over rows: per-row work is polars expressions, loops run over classes or over the
first few offenders only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.records.summary import metric_words
from gpusession.core.validation.metrics import METRICS, ClassScore, tally
from gpusession.core.validation.model import (
    EPSILON,
    FIRST_N,
    BadRecord,
    Expected,
    Protocol,
    duplicate_rows,
    first_occurrences,
)
from gpusession.core.validation.read import ParsedRecords, normalization_difference, printable
from gpusession.core.validation.report import ValidationReport

_LABEL_SHOWN = 40


def _shown(col: str) -> pl.Expr:
    c = pl.col(col)
    return pl.when(c.str.len_chars() > _LABEL_SHOWN).then(c.str.slice(0, _LABEL_SHOWN) + "…").otherwise(c)


def _record_problems(rec: pl.DataFrame, classes: pl.Series) -> pl.DataFrame:
    """Add the per-record format problems that need the protocol (V4, H-13)."""
    label, rid = pl.col("label"), pl.col("id")
    return rec.with_columns(
        problem=pl.coalesce(
            "problem",
            pl.when(rid.is_null() | (rid == "")).then(pl.lit("empty ID")),
            pl.when(label.is_null() | (label == "")).then(pl.lit("empty label")),
            pl.when(label.is_not_null() & ~label.is_in(classes.implode())).then(
                pl.format('label "{}" is not a declared class', _shown("label"))
            ),
        )
    )


def _label_normalization_hints(rec: pl.DataFrame, classes: pl.Series) -> pl.DataFrame:
    """Say when an undeclared label differs from a declared class only in normalization (H-16).

    The comparison stays exact (an NFD ``café`` is not the declared NFC ``café``); this
    adds to such a record's problem the normal forms and code points of both, so that
    the report never shows two strings that print identically. Runs only over the
    distinct undeclared labels, and only when a record has a problem.
    """
    if rec["problem"].null_count() == rec.height:
        return rec
    undeclared = (
        rec.filter(pl.col("label").is_not_null() & ~pl.col("label").is_in(classes.implode()))
        .select(pl.col("label").unique())
    )
    if undeclared.height == 0:
        return rec
    declared = pl.DataFrame({"declared": classes}).with_columns(k=pl.col("declared").str.normalize("NFC"))
    pairs = (
        undeclared.with_columns(k=pl.col("label").str.normalize("NFC"))
        .join(declared, on="k", how="inner")
        .select("label", "declared")
    )
    if pairs.height == 0:
        return rec
    hints = pl.DataFrame(
        {
            "label": pairs["label"],
            "hint": [f"; it {normalization_difference(f, w, 'declared class')}" for f, w in pairs.iter_rows()],
        },
        schema={"label": pl.String, "hint": pl.String},
    )
    return (
        rec.join(hints, on="label", how="left", maintain_order="left")
        .with_columns(
            problem=pl.when(pl.col("hint").is_not_null() & pl.col("problem").str.ends_with("is not a declared class"))
            .then(pl.col("problem") + pl.col("hint"))
            .otherwise(pl.col("problem"))
        )
        .drop("hint")
    )


def _id_normalization_notes(missing: pl.DataFrame, extra: pl.DataFrame) -> list[str]:
    """Extra IDs that differ from a missing expected ID only in normalization (H-16).

    The ID comparison stays exact; the note gives both normal forms and code points.
    """
    if missing.height == 0 or extra.height == 0:
        return []
    pairs = (
        extra.with_columns(k=pl.col("id").str.normalize("NFC"))
        .join(missing.with_columns(k=pl.col("id").str.normalize("NFC")), on="k", how="inner", suffix="_expected")
        .sort("line")
    )
    if pairs.height == 0:
        return []
    notes = [
        f"the output's ID {printable(found)!r} (line {line}) "
        f"{normalization_difference(found, wanted, 'expected ID')} (expected at line {eline})"
        for found, line, wanted, eline in pairs.select("id", "line", "id_expected", "expected_line").head(FIRST_N).iter_rows()
    ]
    if pairs.height > FIRST_N:
        notes.append(f"… {pairs.height - FIRST_N:,} more extra IDs differ from a missing one only in Unicode normalization")
    return notes


def _problem_kind() -> pl.Expr:
    p = pl.col("problem")
    return (
        pl.when(p.str.starts_with("not valid UTF-8")).then(pl.lit("not valid UTF-8"))
        .when(p.str.starts_with("not JSON")).then(pl.lit("not JSON"))
        .when(p.str.starts_with("not a JSON object")).then(pl.lit("not a JSON object"))
        .when(p.str.contains("appears twice")).then(pl.lit("key appears twice"))
        .when(p.str.starts_with("ID is a JSON")).then(pl.lit("ID is not a string"))
        .when(p.str.starts_with("missing field")).then(pl.lit("missing field"))
        .when(p.str.starts_with("label is a JSON")).then(pl.lit("label is not a string"))
        .when(p.str.contains("is not a declared class", literal=True)).then(pl.lit("label not a declared class"))
        .otherwise(p)
    )


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _join_ids(obs_u: pl.DataFrame, exp_u: pl.DataFrame) -> pl.DataFrame:
    """Full join of the distinct observed and expected IDs (V2).

    Joins on the 64-bit hash of the ID (several times faster than on strings) and
    checks every matched pair against the IDs themselves; if two different IDs ever
    share a hash, the join is redone on the strings. Columns: ``id``, ``line``,
    ``label``, ``ok`` (observed side), ``id_exp``, ``expected_line``, ``ref``.
    """
    left = obs_u.select("id", "line", "label", "ok", "h")
    right = exp_u.select(
        pl.col("id").alias("id_exp"), pl.col("line").alias("expected_line"), pl.col("label").alias("ref"), "h"
    )
    if left.height == right.height and bool((left["id"] == right["id_exp"]).all()):
        # The usual run: the output lists the expected IDs in corpus order.
        return pl.concat([left, right.drop("h")], how="horizontal")
    joined = left.lazy().join(right.lazy(), on="h", how="full", coalesce=True).collect()
    clash = joined.select(
        (pl.col("id").is_not_null() & pl.col("id_exp").is_not_null() & (pl.col("id") != pl.col("id_exp"))).any()
    ).item()
    if clash:  # pragma: no cover - a 64-bit hash collision between two real IDs
        joined = left.drop("h").join(right.drop("h"), left_on="id", right_on="id_exp", how="full", coalesce=False)
    return joined


def _duplicates(dup_rows: pl.DataFrame, where: str) -> pl.DataFrame:
    """Per duplicated ID (from :func:`duplicate_rows`): id, found_in, count, first lines (V3)."""
    return (
        dup_rows.group_by("id", maintain_order=True)
        .agg(
            count=pl.len().cast(pl.Int64),
            lines=pl.col("line").sort().head(FIRST_N).cast(pl.String).str.join(";"),
        )
        .with_columns(found_in=pl.lit(where))
        .select("id", "found_in", "count", "lines")
    )


@dataclass(frozen=True)
class _Ids:
    """The IDs check (V1-V3): its report fields, and what the quality check needs."""

    fields: dict[str, Any]
    joined: pl.DataFrame  # the full join of distinct observed and expected IDs (_join_ids)
    duplicated_in_output: bool


def _check_ids(rec: pl.DataFrame, expected: Expected) -> _Ids:
    """Missing, extra and duplicated IDs, sets compared, never line counts (V1-V3, H-16)."""
    observed = rec.filter(pl.col("id").is_not_null() & (pl.col("id") != "")).select(
        "line", "id", "label", ok=pl.col("problem").is_null(), h=pl.col("id").hash()
    )
    out_dup_rows = duplicate_rows(observed)
    obs_u = first_occurrences(observed, out_dup_rows)
    joined = _join_ids(obs_u, expected.unique)
    missing = (
        joined.filter(pl.col("id").is_null())
        .select(pl.col("id_exp").alias("id"), "expected_line")
        .sort("expected_line")
    )
    extra = joined.filter(pl.col("id_exp").is_null()).select("id", "line").sort("line")
    empty_dups = pl.DataFrame(schema={"id": pl.String, "found_in": pl.String, "count": pl.Int64, "lines": pl.String})
    dup_out = _duplicates(out_dup_rows, "output") if out_dup_rows.height else empty_dups
    dup_exp = _duplicates(expected.duplicate_rows, "expected list") if expected.has_duplicates else empty_dups
    ids_match = missing.height == 0 and extra.height == 0 and dup_out.height == 0 and dup_exp.height == 0
    counts = (
        f"{expected.n_ids:,} expected, {observed.height:,} observed: {missing.height:,} missing, "
        f"{extra.height:,} extra, {dup_out.height:,} duplicated in the output, "
        f"{dup_exp.height:,} duplicated in the expected list"
    )
    if ids_match:
        ids_reason = f"every expected ID is present exactly once and no other ID appears ({counts})"
    else:
        ids_reason = counts
        if observed.height == expected.n_ids:
            ids_reason += " (equal counts, different IDs)"
    fields = {
        "ids_match": ids_match,
        "ids_reason": ids_reason,
        "ids_notes": _id_normalization_notes(missing, extra),
        "expected_ids": expected.n_ids,
        "expected_unique": expected.unique.height,
        "observed_ids": observed.height,
        "observed_unique": obs_u.height,
        "missing_count": missing.height,
        "extra_count": extra.height,
        "duplicate_output_count": dup_out.height,
        "duplicate_expected_count": dup_exp.height,
        "missing_ids": missing,
        "extra_ids": extra,
        "duplicates": pl.concat([dup_out, dup_exp]),
    }
    return _Ids(fields, joined, dup_out.height > 0)


def _check_format(rec: pl.DataFrame, parsed: ParsedRecords, protocol: Protocol) -> dict[str, Any]:
    """Per-record format (V4): the report fields, the first bad records quoted with their lines."""
    bad = rec.filter(pl.col("problem").is_not_null()).select("line", "problem").sort("line")
    # The commonest kind first; kinds as common as each other in the order of their names
    # (group_by keeps no order: without it the reason changed from run to run).
    kinds = bad.group_by(_problem_kind().alias("kind")).agg(n=pl.len()).sort(["n", "kind"], descending=[True, False])
    problem_counts = {str(k): int(n) for k, n in kinds.iter_rows()}
    bad_first = [
        BadRecord(int(line), printable(str(p)), parsed.line_text(int(line))) for line, p in bad.head(FIRST_N).iter_rows()
    ]
    format_valid = bad.height == 0 and not parsed.file_problems and parsed.non_utf8_lines == 0
    if format_valid:
        format_reason = f"all {_plural(rec.height, 'record')} are well-formed, with labels among the declared classes"
    else:
        parts = [p for p in parsed.file_problems]
        if bad.height:
            parts.append(
                f"{_plural(bad.height, 'bad record')} of {rec.height:,} ("
                + ", ".join(f"{k}: {n:,}" for k, n in problem_counts.items())
                + ")"
            )
        format_reason = "; ".join(parts)
    format_reason += f"; declared classes: {', '.join(map(repr, protocol.classes))}"
    return {
        "records": rec.height,
        "format_valid": format_valid,
        "format_reason": format_reason,
        "bad_record_count": bad.height,
        "bad_records": bad_first,
        "bad_records_all": bad,
        "problem_counts": problem_counts,
        "file_problems": list(parsed.file_problems),
        "encoding_notes": list(parsed.notes),
    }


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


def _scored(joined: pl.DataFrame, classes: pl.Series) -> _Scored:
    """Every expected ID with a reference, its first record's label when valid (H-21)."""
    # One without a valid prediction (missing, malformed, outside the declared classes)
    # keeps a null label: a wrong prediction.
    with_ref = joined.filter(pl.col("id_exp").is_not_null() & pl.col("ref").is_not_null())
    valid = pl.col("ok").fill_null(False)
    scored = with_ref.select(label=pl.when(valid).then(pl.col("label")), ref="ref")
    invalid = with_ref.filter(~valid).select("id", "label")
    n_missing = invalid["id"].null_count()
    n_undeclared = invalid.filter(
        pl.col("id").is_not_null() & pl.col("label").is_not_null() & ~pl.col("label").is_in(classes.implode())
    ).height
    return _Scored(scored, invalid.height, n_missing, invalid.height - n_missing - n_undeclared, n_undeclared)


def _quality_reason(value: float, scored: _Scored, expected: Expected, protocol: Protocol) -> tuple[bool, str]:
    """Whether ``value`` meets the rule, and why in words (V6; H-21; reference, max degradation)."""
    floor = protocol.threshold - protocol.tolerance
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
        f"(threshold {protocol.threshold:.4f} − tolerance {protocol.tolerance:.4f}), "
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


def _check_quality(ids: _Ids, expected: Expected, protocol: Protocol, classes: pl.Series) -> dict[str, Any]:
    """The quality rule (V6): every metric of :data:`METRICS`, the protocol's one judged."""
    scored = _scored(ids.joined, classes)
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
        "quality_margin": None if value is None else value - (protocol.threshold - protocol.tolerance),
        "reference_value": protocol.reference_value,
        "max_degradation": protocol.max_degradation,
        "metric_values": values,
        "scored_records": scored.frame.height,
        "predictions_missing": scored.missing,
        "predictions_malformed": scored.malformed,
        "predictions_undeclared": scored.undeclared,
        "per_class": list(per_class),
        "quality_notes": _quality_notes(per_class, scored, dup_scored=ids.duplicated_in_output and value is not None),
    }


def run_checks(
    output: Path,
    parsed: ParsedRecords,
    expected: Expected,
    protocol: Protocol,
    *,
    train: pl.Series | None,
    train_desc: str | None,
    tune: pl.Series | None,
    tune_desc: str | None,
    classes_source: str = "declared in the protocol",
) -> ValidationReport:
    """Run every check on the parsed output and build the report (V1-V7).

    Args:
        output: the run's output file (named in the report).
        parsed: its records (:mod:`.read`, :mod:`.read_jsonl`).
        expected: the expected IDs and references.
        protocol: classes, metric, threshold, tolerance, reference (V5).
        train: the training IDs (V7), ``None`` when not given.
        train_desc: where they came from, in words.
        tune: the tuning IDs (V7), ``None`` when not given.
        tune_desc: where they came from, in words.
        classes_source: where the classes came from, in words.

    Returns:
        The report; ``corpus_accepted`` is the conjunction of the four checks (V1), each
        keeping its own reason. Nothing is written and nothing raised for bad content.
    """
    classes = pl.Series("class", list(protocol.classes), dtype=pl.String)
    rec = _label_normalization_hints(_record_problems(parsed.records, classes), classes)
    ids = _check_ids(rec, expected)
    fmt = _check_format(rec, parsed, protocol)
    quality = _check_quality(ids, expected, protocol, classes)
    overlap, overlap_checked, overlap_reason = _overlap(expected, train, train_desc, tune, tune_desc)
    return ValidationReport(
        output_path=str(output),
        expected_path=str(expected.path),
        references_path=str(expected.references_path) if expected.references_path else None,
        output_format=protocol.output_format,
        label_set=tuple(protocol.classes),
        classes_source=classes_source,
        **ids.fields,
        **fmt,
        **quality,
        no_overlap=overlap.height == 0,
        overlap_reason=overlap_reason,
        overlap_checked=overlap_checked,
        overlap=overlap,
        corpus_accepted=(ids.fields["ids_match"] and fmt["format_valid"] and quality["quality_met"]
                         and overlap.height == 0),
        notes=list(expected.notes),
    )


def _overlap(
    expected: Expected,
    train: pl.Series | None,
    train_desc: str | None,
    tune: pl.Series | None,
    tune_desc: str | None,
) -> tuple[pl.DataFrame, bool, str]:
    """V7: training, tuning and evaluation IDs must be disjoint."""
    empty = pl.DataFrame(schema={"id": pl.String, "between": pl.String})
    if train is None and tune is None:
        return empty, False, "not checked: no training or tuning ID list given"
    sets = {"evaluation": expected.unique.select("id")}
    if train is not None:
        sets["training"] = pl.DataFrame({"id": train.unique()})
    if tune is not None:
        sets["tuning"] = pl.DataFrame({"id": tune.unique()})
    names = list(sets)
    parts = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            big, small = sorted((sets[a], sets[b]), key=lambda f: f.height, reverse=True)
            both = big.join(small, on="id", how="semi")
            parts.append(both.sort("id").with_columns(between=pl.lit(f"{a} and {b}")))
    overlap = pl.concat(parts) if parts else empty
    given = ", ".join(d for d in (train_desc and f"training: {train_desc}", tune_desc and f"tuning: {tune_desc}") if d)
    if overlap.height == 0:
        return overlap, True, f"training, tuning and evaluation IDs are disjoint ({given})"
    by = overlap.group_by("between", maintain_order=True).agg(n=pl.len())
    detail = ", ".join(f"{n:,} ID(s) in both {w}" for w, n in by.iter_rows())
    return overlap, True, f"{detail} ({given})"
