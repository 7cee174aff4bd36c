"""Properties of corpus validation, checked with hypothesis (V1-V3, V6, H-21)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from gpusession.core.validation import Protocol, ValidationReport, load_expected, validate_output

CLASSES = ("a", "b", "c", "d")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# IDs: short strings, including look-alikes ("007" / "7"), spaces and non-ASCII.
ids_st = st.lists(
    st.text(alphabet="07ab é", min_size=1, max_size=5).filter(lambda s: "\n" not in s),
    min_size=1,
    max_size=30,
    unique=True,
)


@st.composite
def corpora(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """(ids, references, predictions) with every ID predicted once."""
    ids = draw(ids_st)
    refs = draw(st.lists(st.sampled_from(CLASSES), min_size=len(ids), max_size=len(ids)))
    preds = draw(st.lists(st.sampled_from(CLASSES), min_size=len(ids), max_size=len(ids)))
    return ids, refs, preds


def check(ids: list[str], refs: list[str], out_rows: list[tuple[str, str]], **proto: object) -> ValidationReport:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus.jsonl"
        corpus.write_text("".join(json.dumps({"id": i, "label": r}) + "\n" for i, r in zip(ids, refs, strict=True)))
        out = folder / "out.jsonl"
        out.write_text("".join(json.dumps({"id": i, "label": p}) + "\n" for i, p in out_rows))
        protocol = Protocol(classes=CLASSES, **proto)  # type: ignore[arg-type]
        return validate_output(out, load_expected(corpus), protocol)


def verdict(r: ValidationReport) -> tuple[object, ...]:
    return (r.ids_match, r.format_valid, r.quality_met, r.corpus_accepted, r.missing_count, r.extra_count,
            r.duplicate_output_count, r.quality_value)


@SETTINGS
@given(data=corpora(), seed=st.randoms(use_true_random=False))
def test_v2_permuting_output_lines_never_changes_the_verdict(data: tuple[list[str], list[str], list[str]], seed) -> None:  # type: ignore[no-untyped-def]
    ids, refs, preds = data
    rows = list(zip(ids, preds, strict=True))
    shuffled = rows[:]
    seed.shuffle(shuffled)
    a, b = check(ids, refs, rows, threshold=0.5), check(ids, refs, shuffled, threshold=0.5)
    assert verdict(a)[:-1] == verdict(b)[:-1]
    assert a.quality_value is not None and b.quality_value is not None
    assert abs(a.quality_value - b.quality_value) < 1e-12


@SETTINGS
@given(data=corpora(), pick=st.integers(min_value=0), where=st.integers(min_value=0))
def test_v3_adding_one_duplicate_always_rejects(data: tuple[list[str], list[str], list[str]], pick: int, where: int) -> None:
    ids, refs, preds = data
    rows = list(zip(ids, refs, strict=True))  # perfect predictions: accepted before
    assert check(ids, refs, rows, threshold=0.0).corpus_accepted
    dup = rows[pick % len(rows)]
    rows.insert(where % (len(rows) + 1), dup)
    r = check(ids, refs, rows, threshold=0.0)
    assert not r.corpus_accepted and not r.ids_match and r.duplicate_output_count == 1
    assert r.missing_count == 0 and r.extra_count == 0  # sets equal, still rejected


@SETTINGS
@given(data=corpora(), pick=st.integers(min_value=0))
def test_v2_dropping_one_id_always_rejects(data: tuple[list[str], list[str], list[str]], pick: int) -> None:
    ids, refs, _ = data
    rows = list(zip(ids, refs, strict=True))
    dropped = rows.pop(pick % len(rows))
    r = check(ids, refs, rows, threshold=0.0)
    assert not r.corpus_accepted and not r.ids_match
    assert r.missing_ids["id"].to_list() == [dropped[0]]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=corpora())
def test_v6_macro_f1_and_accuracy_equal_scikit_learn(data: tuple[list[str], list[str], list[str]]) -> None:
    ids, refs, preds = data
    r = check(ids, refs, list(zip(ids, preds, strict=True)), threshold=0.0)
    want = f1_score(refs, preds, labels=list(CLASSES), average="macro", zero_division=0)
    assert r.macro_f1 is not None and abs(r.macro_f1 - want) < 1e-12
    assert r.accuracy is not None and abs(r.accuracy - accuracy_score(refs, preds)) < 1e-12
    per = f1_score(refs, preds, labels=list(CLASSES), average=None, zero_division=0)
    assert [round(c.f1, 12) for c in r.per_class] == [round(float(x), 12) for x in per]
    assert r.label_set == CLASSES


@SETTINGS
@given(data=corpora())
def test_v4_csv_and_jsonl_outputs_give_the_same_verdict(data: tuple[list[str], list[str], list[str]]) -> None:
    import polars as pl

    ids, refs, preds = data
    jsonl_report = check(ids, refs, list(zip(ids, preds, strict=True)), threshold=0.5)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus.jsonl"
        corpus.write_text("".join(json.dumps({"id": i, "label": r}) + "\n" for i, r in zip(ids, refs, strict=True)))
        out = folder / "out.csv"
        pl.DataFrame({"id": ids, "label": preds}, schema={"id": pl.String, "label": pl.String}).write_csv(out)
        csv_report = validate_output(out, load_expected(corpus), Protocol(classes=CLASSES, threshold=0.5, output_format="csv"))
    assert verdict(csv_report) == verdict(jsonl_report)


#: Kept in place of a prediction that is not valid: a label outside CLASSES (H-21).
WRONG = "\x00no valid prediction"
# What an output holds for one expected ID: a declared label, an undeclared one (an NFD
# look-alike included), a malformed record (label a number), or nothing at all.
predictions_st = st.one_of(
    st.sampled_from(CLASSES),
    st.sampled_from(("zz", "A", "a ", "e\u0301")),
    st.just(7),
    st.none(),
)


@st.composite
def outputs(draw: st.DrawFn) -> tuple[list[str], list[str], list[tuple[str, object]], list[object]]:
    """(ids, refs, output rows, first prediction per ID) with invalid and missing predictions.

    Duplicates: up to three IDs get a later record (any label) after their first one;
    the first record is the one scored.
    """
    ids = draw(ids_st)
    refs = draw(st.lists(st.sampled_from(CLASSES), min_size=len(ids), max_size=len(ids)))
    firsts = draw(st.lists(predictions_st, min_size=len(ids), max_size=len(ids)))
    rows = [(i, p) for i, p in zip(ids, firsts, strict=True) if p is not None]
    seconds = draw(st.lists(st.tuples(st.integers(min_value=0), predictions_st.filter(lambda p: p is not None)), max_size=3))
    for pick, label in seconds:
        if rows:
            k = pick % len(rows)
            rows.insert(k + 1 + pick % (len(rows) - k), (rows[k][0], label))
    return ids, refs, rows, firsts


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=outputs())
def test_h21_quality_equals_scikit_learn_with_invalid_and_missing_as_wrong(
    data: tuple[list[str], list[str], list[tuple[str, object]], list[object]],
) -> None:
    """Every expected ID is scored; missing, malformed or undeclared = a wrong label.

    A duplicated ID is scored by its first record (V3 rejects the corpus anyway).
    """
    ids, refs, rows, firsts = data
    r = check(ids, refs, rows, threshold=0.0)
    y_pred = [p if isinstance(p, str) and p in CLASSES else WRONG for p in firsts]
    want = f1_score(refs, y_pred, labels=list(CLASSES), average="macro", zero_division=0)
    assert r.macro_f1 is not None and abs(r.macro_f1 - want) < 1e-12
    assert r.accuracy is not None and abs(r.accuracy - accuracy_score(refs, y_pred)) < 1e-12
    per = f1_score(refs, y_pred, labels=list(CLASSES), average=None, zero_division=0)
    assert [round(c.f1, 12) for c in r.per_class] == [round(float(x), 12) for x in per]
    assert r.scored_records == len(ids)
    assert r.predictions_missing == sum(p is None for p in firsts)
    assert r.predictions_malformed == sum(p == 7 for p in firsts)
    assert r.predictions_undeclared == sum(isinstance(p, str) and p not in CLASSES for p in firsts)
    if WRONG in y_pred:
        assert not r.corpus_accepted and "counted as wrong" in r.quality_reason


@SETTINGS
@given(
    n=st.integers(min_value=1, max_value=8),
    blanks=st.lists(st.tuples(st.integers(min_value=0, max_value=8), st.sampled_from(["", " ", "\t", "  "])),
                    min_size=1, max_size=3),
)
def test_v4_a_blank_line_anywhere_but_the_end_is_reported_at_its_line(n: int, blanks: list[tuple[int, str]]) -> None:
    """A blank line before or between records (never one only at the end) is a bad record
    at its own line, and every record keeps its line number, whichever path reads the file."""
    from gpusession.core.validation.read_jsonl import parse_jsonl

    lines = [json.dumps({"id": f"r{i}", "label": "a"}) for i in range(n)]
    for at, blank in blanks:
        lines.insert(min(at, len(lines) - 1), blank)  # before the last record at most
    rec = parse_jsonl(("\n".join(lines) + "\n").encode("utf-8")).records
    got = {int(line): (rid, problem) for line, rid, problem in rec.select("line", "id", "problem").iter_rows()}
    want = {k + 1: ((None, "empty line") if text.strip() == "" else (json.loads(text)["id"], None))
            for k, text in enumerate(lines)}
    assert got == want


def _ids_fields(r: ValidationReport) -> tuple[object, ...]:
    return (r.observed_ids, r.observed_unique, r.missing_ids.rows(), r.extra_ids.rows(), r.duplicates.rows(),
            r.ids_reason, r.quality_value, r.quality_reason, r.corpus_accepted)


@SETTINGS
@given(
    data=corpora(),
    extra=st.lists(st.sampled_from(["x", "y", "7a", ""]), max_size=6),
    repeats=st.lists(st.integers(min_value=0, max_value=60), max_size=8),
    seed=st.randoms(use_true_random=False),
    slice_rows=st.sampled_from([1, 2, 3, 7]),
)
def test_v3_ids_matched_a_slice_at_a_time_or_on_strings_give_one_report(
        data: tuple[list[str], list[str], list[str]], extra: list[str], repeats: list[int], seed, slice_rows: int) -> None:  # type: ignore[no-untyped-def]
    """V2, V3, V8: the hash match taken in slices of any size, and the exact string match
    (the path taken on a 64-bit hash collision), report the same IDs, lines and macro-F1."""
    from gpusession.core.validation import checks

    ids, refs, preds = data
    rows = [(i, p) for i, p in zip(ids, preds, strict=True) if seed.random() < 0.8]  # some missing
    rows += [(e, "a") for e in extra]  # not expected, empty, and repeated among themselves
    rows += [rows[k % len(rows)] for k in repeats] if rows else []  # duplicated records
    seed.shuffle(rows)
    whole = check(ids, refs, rows, threshold=0.5)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checks, "_SLICE_ROWS", slice_rows)
        sliced = check(ids, refs, rows, threshold=0.5)
        mp.setattr(checks, "_match_on_hashes", lambda ids, expected: None)
        on_strings = check(ids, refs, rows, threshold=0.5)
    assert _ids_fields(sliced) == _ids_fields(whole) == _ids_fields(on_strings)
