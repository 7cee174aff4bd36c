"""The four checks of corpus validation, in polars (V1-V4, V6, V7; H-13).

Called by :func:`gpusession.core.validation.validate_output` with the parsed output;
builds the :class:`~gpusession.core.validation.report.ValidationReport`. No Python
loop runs over rows: per-row work is polars expressions, loops run over classes or
over the first few offenders only.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from gpusession.core.records.summary import metric_words
from gpusession.core.validation.model import (
    EPSILON,
    FIRST_N,
    BadRecord,
    ClassScore,
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


def _quality(
    scored: pl.DataFrame, protocol: Protocol
) -> tuple[list[ClassScore], float | None, float | None]:
    """Per-class scores, macro-F1 and accuracy over ``scored`` (``label`` vs ``ref``; V6, H-21).

    ``scored`` has one row per expected ID with a reference; ``label`` is null where
    that ID has no valid prediction (missing, malformed, outside the declared classes):
    a wrong prediction, counted in its reference's support and in no class's
    predictions. Same definitions as scikit-learn's ``f1_score(y, p,
    labels=classes, average="macro", zero_division=0)`` with such a prediction kept as
    a label outside ``classes``: precision = tp / predicted, recall = tp / support,
    F1 = 2 tp / (predicted + support), each 0 when its denominator is 0; macro-F1 =
    mean over declared classes; accuracy = right / every scored ID.
    """
    if scored.height == 0:
        return [], None, None
    pred = scored.group_by("label").agg(predicted=pl.len()).rename({"label": "class"})
    ref = scored.group_by("ref").agg(support=pl.len()).rename({"ref": "class"})
    tp = scored.filter(pl.col("label") == pl.col("ref")).group_by("label").agg(tp=pl.len()).rename({"label": "class"})
    table = pl.DataFrame({"class": list(protocol.classes)}, schema={"class": pl.String})
    for part in (pred, ref, tp):
        table = table.join(part, on="class", how="left", maintain_order="left")
    table = table.fill_null(0)
    scores: list[ClassScore] = []
    for c, n_pred, n_sup, n_tp in table.select("class", "predicted", "support", "tp").iter_rows():
        precision = n_tp / n_pred if n_pred else 0.0
        recall = n_tp / n_sup if n_sup else 0.0
        f1 = 2 * n_tp / (n_pred + n_sup) if (n_pred + n_sup) else 0.0
        scores.append(ClassScore(c, precision, recall, f1, int(n_sup), int(n_pred), int(n_tp)))
    macro = math.fsum(s.f1 for s in scores) / len(scores)
    accuracy = float(scored.select((pl.col("label") == pl.col("ref")).fill_null(False).mean()).item())
    return scores, macro, accuracy


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
    """Run every check and build the report (V1). See the module docstring."""
    classes = pl.Series("class", list(protocol.classes), dtype=pl.String)
    rec = _label_normalization_hints(_record_problems(parsed.records, classes), classes)
    observed = rec.filter(pl.col("id").is_not_null() & (pl.col("id") != "")).select(
        "line", "id", "label", ok=pl.col("problem").is_null()
    )

    # -- IDs (V1-V3) ---------------------------------------------------------------
    observed = observed.with_columns(h=pl.col("id").hash())
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
    ids_notes = _id_normalization_notes(missing, extra)
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

    # -- format (V4) ---------------------------------------------------------------
    bad = rec.filter(pl.col("problem").is_not_null()).select("line", "problem").sort("line")
    kinds = bad.group_by(_problem_kind().alias("kind")).agg(n=pl.len()).sort("n", descending=True)
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

    # -- quality (V6) --------------------------------------------------------------
    quality_notes: list[str] = []
    refs = expected.unique.select("label").filter(pl.col("label").is_not_null())
    # Every expected ID with a reference is scored (H-21); one without a valid prediction
    # (missing, malformed, outside the declared classes) keeps a null label: wrong.
    with_ref = joined.filter(pl.col("id_exp").is_not_null() & pl.col("ref").is_not_null())
    valid = pl.col("ok").fill_null(False)
    scored = with_ref.select(label=pl.when(valid).then(pl.col("label")), ref="ref")
    invalid = with_ref.filter(~valid).select("id", "label")
    n_missing_pred = invalid["id"].null_count()
    n_undeclared = invalid.filter(
        pl.col("id").is_not_null() & pl.col("label").is_not_null() & ~pl.col("label").is_in(classes.implode())
    ).height
    n_malformed = invalid.height - n_missing_pred - n_undeclared
    per_class, macro, accuracy = _quality(scored, protocol)
    outside = refs.filter(~pl.col("label").is_in(classes.implode()))
    value = macro if protocol.metric == "macro_f1" else accuracy
    floor = protocol.threshold - protocol.tolerance
    margin = None if value is None else value - floor
    label_set = ", ".join(protocol.classes)
    if not expected.has_labels:
        quality_met, quality_reason = False, "not computed: the expected list has no reference labels"
    elif value is None:  # pragma: no cover - has_labels means at least one expected ID is scored
        quality_met = False
        quality_reason = "not computed: no expected ID has a reference"
    else:
        quality_met = value + EPSILON >= floor
        no_ref = expected.unique.height - scored.height
        over = (
            f"over every expected ID ({scored.height:,})"
            if no_ref == 0
            else f"over the {scored.height:,} expected IDs with a reference ({no_ref:,} of "
            f"{expected.unique.height:,} have none)"
        )
        wrong = ""
        if invalid.height:
            why = [
                f"{n:,} {what}"
                for n, what in (
                    (n_missing_pred, "missing"),
                    (n_malformed, "malformed"),
                    (n_undeclared, "outside the declared classes"),
                )
                if n
            ]
            wrong = f", {invalid.height:,} of them without a valid prediction, counted as wrong ({', '.join(why)})"
        quality_reason = (
            f"{metric_words(protocol.metric)} = {value:.4f} {'≥' if quality_met else '<'} {floor:.4f} "
            f"(threshold {protocol.threshold:.4f} − tolerance {protocol.tolerance:.4f}), "
            f"margin {margin:+.4f}; {over}{wrong}; label set used: {label_set}"
        )
        if no_ref:
            # H-21: a figure over a subset never says "met"; the rule needs a reference for
            # every expected ID (the figure is still reported, for what it is worth).
            quality_met = False
            quality_reason = (
                f"not met: {no_ref:,} of {expected.unique.height:,} expected IDs have no "
                f"reference, so the figure covers a subset only; {quality_reason}"
            )
        if protocol.reference_value is not None:
            drop = protocol.reference_value - value
            if protocol.max_degradation is not None:
                ok = drop <= protocol.max_degradation + EPSILON
                quality_met = quality_met and ok
                quality_reason += (
                    f"; {drop:+.4f} below the reference {protocol.reference_value:.4f} "
                    f"({'within' if ok else 'beyond'} the maximum degradation {protocol.max_degradation:.4f})"
                )
            else:
                quality_reason += f"; reference {protocol.reference_value:.4f} (no maximum degradation set)"
        if outside.height:
            quality_met = False
            found = sorted(outside["label"].unique().to_list())[:FIRST_N]
            quality_reason += (
                f"; FAIL: {outside.height:,} reference label(s) are not declared classes "
                f"({', '.join(map(repr, found))}): the declared classes do not cover the references"
            )
    if per_class:
        unused = [c.label for c in per_class if c.support == 0 and c.predicted == 0]
        if unused:
            quality_notes.append(
                f"class(es) {', '.join(map(repr, unused))} have no reference and no prediction; "
                "they score F1 = 0 and still count in the macro average"
            )
        never = [c.label for c in per_class if c.predicted == 0 and c.support > 0]
        if never:
            quality_notes.append(f"class(es) {', '.join(map(repr, never))} never predicted: F1 = 0 (not skipped)")
    if invalid.height:
        quality_notes.append(
            f"{invalid.height:,} expected ID(s) without a valid prediction count as wrong predictions "
            "(in their class's support, in no class's predictions)"
        )
    if dup_out.height and value is not None:
        quality_notes.append(
            "a duplicated ID is scored once, by its first record (as a wrong prediction if that one is not valid)"
        )

    # -- overlap (V7) --------------------------------------------------------------
    overlap, overlap_checked, overlap_reason = _overlap(expected, train, train_desc, tune, tune_desc)
    no_overlap = overlap.height == 0

    accepted = ids_match and format_valid and quality_met and no_overlap
    return ValidationReport(
        output_path=str(output),
        expected_path=str(expected.path),
        references_path=str(expected.references_path) if expected.references_path else None,
        output_format=protocol.output_format,
        label_set=tuple(protocol.classes),
        classes_source=classes_source,
        ids_match=ids_match,
        ids_reason=ids_reason,
        ids_notes=ids_notes,
        expected_ids=expected.n_ids,
        expected_unique=expected.unique.height,
        observed_ids=observed.height,
        observed_unique=obs_u.height,
        records=rec.height,
        missing_count=missing.height,
        extra_count=extra.height,
        duplicate_output_count=dup_out.height,
        duplicate_expected_count=dup_exp.height,
        missing_ids=missing,
        extra_ids=extra,
        duplicates=pl.concat([dup_out, dup_exp]),
        format_valid=format_valid,
        format_reason=format_reason,
        bad_record_count=bad.height,
        bad_records=bad_first,
        bad_records_all=bad,
        problem_counts=problem_counts,
        file_problems=list(parsed.file_problems),
        encoding_notes=list(parsed.notes),
        quality_met=quality_met,
        quality_reason=quality_reason,
        quality_metric=protocol.metric,
        quality_threshold=protocol.threshold,
        quality_tolerance=protocol.tolerance,
        quality_value=value,
        quality_margin=margin,
        reference_value=protocol.reference_value,
        max_degradation=protocol.max_degradation,
        macro_f1=macro,
        accuracy=accuracy,
        scored_records=scored.height,
        predictions_missing=n_missing_pred,
        predictions_malformed=n_malformed,
        predictions_undeclared=n_undeclared,
        per_class=per_class,
        quality_notes=quality_notes,
        no_overlap=no_overlap,
        overlap_reason=overlap_reason,
        overlap_checked=overlap_checked,
        overlap=overlap,
        corpus_accepted=accepted,
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
