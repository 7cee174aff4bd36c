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
)
from gpusession.core.validation.quality import check_quality
from gpusession.core.validation.read import (
    CompactRecords,
    ParsedRecords,
    compact_records,
    label_code,
    normalization_difference,
    printable,
)
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
        .when(p.str.contains("holds a lone surrogate", literal=True)).then(pl.lit("lone surrogate"))
        .when(p.str.contains("is not a declared class", literal=True)).then(pl.lit("label not a declared class"))
        .otherwise(p)
    )


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


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


#: Observed records hashed, looked up and checked per slice: the arrays made per record
#: (hashes, search positions) stay this long, whatever the output's size (V8: memory).
_SLICE_ROWS = 1 << 16


@dataclass(frozen=True)
class _Matched:
    """The observed IDs matched with the expected ones (V2, V3).

    Attributes:
        match: per expected row, the 0-based row of its first record (UInt32, null when
            the ID is missing).
        extra_rows: the rows of the first record of each ID that is not expected.
        dup_rows: ``r`` (UInt32) and ``id`` of every record whose ID occurs twice or more,
            in file order.
        n_later: how many records repeat an ID seen on an earlier line.
    """

    match: pl.Series
    extra_rows: pl.Series
    dup_rows: pl.DataFrame
    n_later: int


def _dup_frame(rows: pl.Series, ids: pl.Series) -> pl.DataFrame:
    return pl.DataFrame({"r": rows, "id": ids.gather(rows)})


def _match_on_hashes(ids: pl.Series, expected: Expected) -> _Matched | None:
    """Match the observed IDs with the expected ones on their 64-bit hashes (V2, V3).

    The output is taken :data:`_SLICE_ROWS` records at a time: each slice's IDs are
    hashed, sorted and merged (an as-of join) with the expected hashes, sorted once per
    corpus (:attr:`Expected.by_hash`), and every hit is checked against the expected ID
    itself.
    A hit on an expected row already taken (an earlier slice or an earlier record of
    this one) is a later record of a duplicated ID; the IDs not expected are compared
    as strings, and they are few unless the output is wrong. So the memory held per
    record is the match (4 bytes per expected ID), never a hash column or a hash table.

    Returns:
        The match, or ``None`` when two different IDs share a hash (the caller then
        matches the strings).
    """
    exp_u, by_hash = expected.unique, expected.by_hash
    right, exp_ids = by_hash.rename({"h": "h_expected"}), exp_u["id"]
    match = pl.repeat(None, exp_u.height, dtype=pl.UInt32, eager=True).alias("r")
    later_r: list[pl.Series] = []
    later_e: list[pl.Series] = []
    extra_r: list[pl.Series] = []
    for start in range(0, ids.len(), _SLICE_ROWS):
        part = ids.slice(start, _SLICE_ROWS)
        r = pl.int_range(start, start + part.len(), dtype=pl.UInt32, eager=True)
        valid = part.is_not_null() & (part != "")
        if not bool(valid.all()):
            part, r = part.filter(valid), r.filter(valid)
        if by_hash.height == 0:
            extra_r.append(r)
            continue
        # The slice sorted on its hashes (stably: the records of one ID stay in file order)
        # and merged with the expected hashes, sorted too: no hash table, no binary search.
        hit = (
            pl.DataFrame({"r": r, "h": part.hash()})
            .sort("h", maintain_order=True)
            .join_asof(right, left_on="h", right_on="h_expected", strategy="backward")
        )
        found = (hit["h"] == hit["h_expected"]).fill_null(False)
        e, rf = hit["row"].filter(found), hit["r"].filter(found)
        if not bool((ids.gather(rf) == exp_ids.gather(e)).all()):
            return None  # pragma: no cover - a 64-bit hash collision between two real IDs
        extra_r.append(hit["r"].filter(~found))
        # a later record: its expected row taken in an earlier slice, or just before it here
        later = match.gather(e).is_not_null() | (e == e.shift(1)).fill_null(False)
        if bool(later.any()):
            later_r.append(rf.filter(later))
            later_e.append(e.filter(later))
            e, rf = e.filter(~later), rf.filter(~later)
        match = match.scatter(e, rf)
    extra = pl.concat(extra_r) if extra_r else pl.Series("r", [], dtype=pl.UInt32)
    dup_parts: list[pl.DataFrame] = []
    n_later = 0
    if later_r:
        laters = pl.concat(later_r)
        firsts = match.gather(pl.concat(later_e).unique())
        dup_parts.append(_dup_frame(pl.concat([firsts, laters]), ids))
        n_later += laters.len()
    if extra.len():
        ex = _dup_frame(extra, ids)
        ex_dup = ex.filter(pl.col("id").is_duplicated())
        if ex_dup.height:
            ex_later = ex_dup.filter(~pl.col("id").is_first_distinct())["r"]
            extra = extra.filter(~extra.is_in(ex_later.implode()))
            dup_parts.append(ex_dup)
            n_later += ex_later.len()
    dup_rows = pl.concat(dup_parts).sort("r") if dup_parts else pl.DataFrame(schema={"r": pl.UInt32, "id": pl.String})
    return _Matched(match, extra, dup_rows, n_later)


def _match_on_strings(ids: pl.Series, exp_u: pl.DataFrame) -> _Matched:
    """:func:`_match_on_hashes` by joins on the ID strings (V2, V3): exact, slower, larger."""
    observed = pl.DataFrame({"r": pl.int_range(0, ids.len(), dtype=pl.UInt32, eager=True), "id": ids}).filter(
        pl.col("id").is_not_null() & (pl.col("id") != "")
    )
    dup_rows = observed.filter(pl.col("id").is_duplicated())
    obs_u = observed.filter(pl.col("id").is_first_distinct())
    match = exp_u.select("id").join(obs_u, on="id", how="left", maintain_order="left")["r"]
    extra = obs_u.filter(~pl.col("id").is_in(exp_u["id"].implode()))["r"]
    return _Matched(match, extra, dup_rows, observed.height - obs_u.height)


@dataclass(frozen=True)
class _Ids:
    """The IDs check (V1-V3): its report fields, and what the quality check needs."""

    fields: dict[str, Any]
    #: One row per distinct expected ID: ``ref``, ``pred`` (class codes, :func:`label_code`)
    #: and ``ok`` (its first record is valid; null when the ID is missing).
    scoring: pl.DataFrame
    duplicated_in_output: bool


def _check_ids(rec: CompactRecords, expected: Expected) -> _Ids:
    """Missing, extra and duplicated IDs, sets compared, never line counts (V1-V3, H-16).

    Works on fixed-width columns (row numbers, 64-bit hashes, class codes); ID strings
    are copied only for the offenders listed and, a slice at a time, to check the hash
    matches.
    """
    ids, code, ok = rec.frame["id"], rec.frame["code"], rec.frame["ok"]
    valid = ids.is_not_null() & (ids != "")
    n_observed = int(valid.sum())
    exp_u = expected.unique
    ref = exp_u.select(ref=label_code(pl.col("label"), rec.classes))["ref"]
    empty_dups = pl.DataFrame(schema={"id": pl.String, "found_in": pl.String, "count": pl.Int64, "lines": pl.String})
    if n_observed == rec.n == exp_u.height and bool((ids == exp_u["id"]).all()):
        # The usual run: the output lists the expected IDs in corpus order, once each.
        scoring = pl.DataFrame({"ref": ref, "pred": code, "ok": ok})
        missing = exp_u.clear().select("id", expected_line="line")
        extra = pl.DataFrame(schema={"id": pl.String, "line": pl.Int64})
        dup_out, n_later = empty_dups, 0
    else:
        found = _match_on_hashes(ids, expected)
        if found is None:  # pragma: no cover - a 64-bit hash collision between two real IDs
            found = _match_on_strings(ids, exp_u)
        match, extra_rows, n_later = found.match, found.extra_rows, found.n_later
        dup_out = empty_dups
        if found.dup_rows.height:
            dup_out = _duplicates(found.dup_rows.with_columns(line=rec.lines(found.dup_rows["r"])), "output")
        scoring = pl.DataFrame({"ref": ref, "pred": code.gather(match), "ok": ok.gather(match)})
        missing = exp_u.filter(match.is_null()).select("id", expected_line="line").sort("expected_line")
        extra = pl.DataFrame({"id": ids.gather(extra_rows), "line": rec.lines(extra_rows)}).sort("line")
    dup_exp = _duplicates(expected.duplicate_rows, "expected list") if expected.has_duplicates else empty_dups
    ids_match = missing.height == 0 and extra.height == 0 and dup_out.height == 0 and dup_exp.height == 0
    counts = (
        f"{expected.n_ids:,} expected, {n_observed:,} observed: {missing.height:,} missing, "
        f"{extra.height:,} extra, {dup_out.height:,} duplicated in the output, "
        f"{dup_exp.height:,} duplicated in the expected list"
    )
    if ids_match:
        ids_reason = f"every expected ID is present exactly once and no other ID appears ({counts})"
    else:
        ids_reason = counts
        if n_observed == expected.n_ids:
            ids_reason += " (equal counts, different IDs)"
    fields = {
        "ids_match": ids_match,
        "ids_reason": ids_reason,
        "ids_notes": _id_normalization_notes(missing, extra),
        "expected_ids": expected.n_ids,
        "expected_unique": exp_u.height,
        "observed_ids": n_observed,
        "observed_unique": n_observed - n_later,
        "missing_count": missing.height,
        "extra_count": extra.height,
        "duplicate_output_count": dup_out.height,
        "duplicate_expected_count": dup_exp.height,
        "missing_ids": missing,
        "extra_ids": extra,
        "duplicates": pl.concat([dup_out, dup_exp]),
    }
    return _Ids(fields, scoring, dup_out.height > 0)


def _check_format(n_records: int, bad_rows: pl.DataFrame, parsed: ParsedRecords, protocol: Protocol) -> dict[str, Any]:
    """Per-record format (V4): the report fields, the first bad records quoted with their lines.

    ``bad_rows``: ``line`` and ``problem`` (in words) of every bad record.
    """
    bad = bad_rows.select("line", "problem").sort("line")
    # The commonest kind first; kinds as common as each other in the order of their names
    # (group_by keeps no order: without it the reason changed from run to run).
    kinds = bad.group_by(_problem_kind().alias("kind")).agg(n=pl.len()).sort(["n", "kind"], descending=[True, False])
    problem_counts = {str(k): int(n) for k, n in kinds.iter_rows()}
    bad_first = [
        BadRecord(int(line), printable(str(p)), parsed.line_text(int(line))) for line, p in bad.head(FIRST_N).iter_rows()
    ]
    format_valid = bad.height == 0 and not parsed.file_problems and parsed.non_utf8_lines == 0
    if format_valid:
        format_reason = f"all {_plural(n_records, 'record')} are well-formed, with labels among the declared classes"
    else:
        parts = [p for p in parsed.file_problems]
        if bad.height:
            parts.append(
                f"{_plural(bad.height, 'bad record')} of {n_records:,} ("
                + ", ".join(f"{k}: {n:,}" for k, n in problem_counts.items())
                + ")"
            )
        format_reason = "; ".join(parts)
    format_reason += f"; declared classes: {', '.join(map(repr, protocol.classes))}"
    return {
        "records": n_records,
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
    rec = parsed.compact if parsed.compact is not None else compact_records(parsed.records, protocol.classes)
    bad = _label_normalization_hints(_record_problems(rec.bad, classes), classes)
    ids = _check_ids(rec, expected)
    fmt = _check_format(rec.n, bad, parsed, protocol)
    quality = check_quality(ids.scoring, expected, protocol, classes, duplicated_in_output=ids.duplicated_in_output)
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
            both = big.filter(pl.col("id").is_in(small["id"].implode()))
            parts.append(both.sort("id").with_columns(between=pl.lit(f"{a} and {b}")))
    overlap = pl.concat(parts) if parts else empty
    given = ", ".join(d for d in (train_desc and f"training: {train_desc}", tune_desc and f"tuning: {tune_desc}") if d)
    if overlap.height == 0:
        return overlap, True, f"training, tuning and evaluation IDs are disjoint ({given})"
    by = overlap.group_by("between", maintain_order=True).agg(n=pl.len())
    detail = ", ".join(f"{n:,} ID(s) in both {w}" for w, n in by.iter_rows())
    return overlap, True, f"{detail} ({given})"
