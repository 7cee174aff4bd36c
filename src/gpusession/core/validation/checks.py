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
from gpusession.core.validation.read import ParsedRecords, printable
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
        .when(p.str.ends_with("is not a declared class")).then(pl.lit("label not a declared class"))
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
    """Per-class scores, macro-F1 and accuracy over ``scored`` (``label`` vs ``ref``).

    Same definitions as scikit-learn with ``labels=classes, zero_division=0``:
    precision = tp / predicted, recall = tp / support, F1 = 2 tp / (predicted +
    support), each 0 when its denominator is 0; macro-F1 = mean over declared classes.
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
    accuracy = float(scored.select((pl.col("label") == pl.col("ref")).mean()).item())
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
    rec = _record_problems(parsed.records, classes)
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
    scored = joined.filter(
        pl.col("id").is_not_null() & pl.col("id_exp").is_not_null() & pl.col("ok") & pl.col("ref").is_not_null()
    ).select("id", "label", "ref")
    per_class, macro, accuracy = _quality(scored, protocol)
    outside = refs.filter(~pl.col("label").is_in(classes.implode()))
    value = macro if protocol.metric == "macro_f1" else accuracy
    floor = protocol.threshold - protocol.tolerance
    margin = None if value is None else value - floor
    label_set = ", ".join(protocol.classes)
    if not expected.has_labels:
        quality_met, quality_reason = False, "not computed: the expected list has no reference labels"
    elif value is None:
        quality_met = False
        quality_reason = "not computed: no well-formed output record has an expected ID with a reference"
    else:
        quality_met = value + EPSILON >= floor
        quality_reason = (
            f"{protocol.metric} = {value:.4f} {'≥' if quality_met else '<'} {floor:.4f} "
            f"(threshold {protocol.threshold:.4f} − tolerance {protocol.tolerance:.4f}), "
            f"margin {margin:+.4f}; over {scored.height:,} scored record(s) of "
            f"{expected.unique.height:,} expected; label set used: {label_set}"
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
    not_scored = expected.unique.height - scored.height
    if value is not None and not_scored:
        quality_notes.append(
            f"{not_scored:,} expected ID(s) not scored (missing, malformed or without reference)"
        )
    if dup_out.height and value is not None:
        quality_notes.append("a duplicated ID is scored once, by its first record (not at all if that one is malformed)")

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
