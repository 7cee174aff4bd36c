"""The four checks of corpus validation, in polars (V1-V4, V6, V7; H-13).

Called by :func:`gpusession.core.validation.validate_output` with the parsed output;
builds the :class:`~gpusession.core.validation.report.ValidationReport`. Records in,
check results out: :func:`run_checks` adds the protocol's per-record problems, then
each check is one function returning its part of the report (:func:`_check_ids`,
:func:`_check_format`, :func:`gpusession.core.validation.quality.check_quality`,
:func:`_overlap`). No Python loop runs
over rows: per-row work is polars expressions, loops run over classes or over the
first few offenders only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.validation.model import (
    FIRST_N,
    BadRecord,
    Expected,
    Protocol,
    duplicate_rows,
    first_occurrences,
)
from gpusession.core.validation.quality import check_quality
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
    both = joined.lazy()  # lazy: each filter moves only the two columns its list keeps
    missing, extra = pl.collect_all([
        both.filter(pl.col("id").is_null()).select(pl.col("id_exp").alias("id"), "expected_line").sort("expected_line"),
        both.filter(pl.col("id_exp").is_null()).select("id", "line").sort("line"),
    ])
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
    quality = check_quality(ids.joined, expected, protocol, classes, duplicated_in_output=ids.duplicated_in_output)
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


#: What a report says when V7 had nothing to check against (never a silent pass).
NO_TRAINING_SET = "overlap not checked: no training set given (--train-ids, --tune-ids)"


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
        return empty, False, NO_TRAINING_SET
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
