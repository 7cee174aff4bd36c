"""Benchmark: full corpus validation (polars) against a plain-Python baseline.

Builds a 1,000,000-ID corpus with 20 classes and a JSONL output with a few hundred
missing, extra and duplicated IDs, then times, in the same run:

* gpusession: ``load_expected`` + ``validate_output`` (every check: IDs, format,
  quality, overlap) -- and, separately, writing the report with its ID lists;
* the same on a clean output listing every ID once in corpus order (accepted);
* baseline: ``csv`` + ``json.loads`` per line, Python sets and a Counter, and
  ``sklearn.metrics.f1_score(..., labels=classes, average="macro", zero_division=0)``;
* floor: the least work that reaches the same verdict with the best primitives
  (:func:`floor`): the same checks (line bound, UTF-8, the per-record format, the
  labels, missing/extra/duplicated IDs, macro-F1, the overlap, SHA-256 of the output),
  polars for the parse and the product's hash-join tricks, but no report, no message
  and no line number. gpusession and the floor run interleaved (ours, floor, ours,
  floor, ...) so that load on a shared machine hits both alike; medians are compared.

It asserts the floor and the baseline reach the product's verdict, counts, digest and
macro-F1, and prints the ratios ("× plain Python": the baseline's median over the
product's median). Targets: under 1.5 s for the whole validation and ≥ 10× faster than
the baseline; at most 1.1× the floor, on the dirty and on the clean output.

Usage: ``python benchmarks/bench_validation.py [--ids 1000000] [--repeat 7] [--baseline-runs 3]``;
``--smallest`` runs every step once on 2,000 IDs in a few seconds (CI's smoke run: the
assertions hold, the timings mean nothing).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import polars as pl
from sklearn.metrics import f1_score

from gpusession.core.files.textio import MAX_LINE_BYTES
from gpusession.core.validation import Protocol, load_expected, validate_output


def build(folder: Path, n_ids: int, n_classes: int, n_bad: int, seed: int = 0) -> tuple[Path, Path, Path, tuple[str, ...]]:
    """Write corpus.csv, output.jsonl and train.txt; return their paths and the classes."""
    rng = random.Random(seed)
    classes = tuple(f"class_{k:02d}" for k in range(n_classes))
    ids = [f"{i:07d}" for i in range(n_ids)]
    refs = [classes[rng.randrange(n_classes)] for _ in range(n_ids)]
    corpus = folder / "corpus.csv"
    with open(corpus, "w", encoding="utf-8", newline="") as fh:
        fh.write("id,label\n")
        fh.writelines(f"{i},{r}\n" for i, r in zip(ids, refs, strict=True))
    missing = set(rng.sample(range(n_ids), n_bad))
    preds = [r if rng.random() < 0.93 else classes[rng.randrange(n_classes)] for r in refs]
    rows = [(ids[i], preds[i]) for i in range(n_ids) if i not in missing]
    rows += [(f"x{i:07d}", classes[i % n_classes]) for i in range(n_bad)]  # extra
    rows += [rows[rng.randrange(len(rows))] for _ in range(n_bad)]  # duplicates
    rng.shuffle(rows)
    output = folder / "output.jsonl"
    with open(output, "w", encoding="utf-8") as fh:
        fh.writelines(f'{{"id": "{i}", "label": "{lab}"}}\n' for i, lab in rows)
    clean = folder / "clean.jsonl"  # every ID once, in corpus order: the usual run
    with open(clean, "w", encoding="utf-8") as fh:
        fh.writelines(f'{{"id": "{i}", "label": "{lab}"}}\n' for i, lab in zip(ids, preds, strict=True))
    train = folder / "train.txt"
    train.write_text("".join(f"t{i:07d}\n" for i in range(50_000)), encoding="utf-8")
    return corpus, output, train, classes


def ours(corpus: Path, output: Path, train: Path, protocol: Protocol) -> dict[str, object]:
    expected = load_expected(corpus)
    r = validate_output(output, expected, protocol, train_ids=train)
    return {
        "accepted": r.corpus_accepted,
        "ids_match": r.ids_match,
        "format_valid": r.format_valid,
        "missing": r.missing_count,
        "extra": r.extra_count,
        "dup": r.duplicate_output_count,
        "macro_f1": r.macro_f1,
        "sha256": r.output_sha256,
        "report": r,
    }


def baseline(corpus: Path, output: Path, train: Path, protocol: Protocol) -> dict[str, object]:
    """Plain Python: csv/json per line, sets, Counter, scikit-learn."""
    with open(corpus, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        exp_rows = [(row["id"], row["label"]) for row in reader]
    refs = {}
    for i, lab in exp_rows:
        refs.setdefault(i, lab)
    expected = set(refs)
    classes = set(protocol.classes)
    observed: list[str] = []
    first: dict[str, str | None] = {}  # first record per ID: its label, None if malformed
    bad = 0
    with open(output, encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                bad += 1
                continue
            rid, lab = rec.get("id"), rec.get("label")
            if not isinstance(rid, str) or not rid:
                bad += 1
                continue
            observed.append(rid)
            ok = isinstance(lab, str) and lab in classes
            bad += not ok
            first.setdefault(rid, lab if ok else None)
    seen = set(observed)
    missing = expected - seen
    extra = seen - expected
    dup = [k for k, n in Counter(observed).items() if n > 1]
    dup_exp = [k for k, n in Counter(i for i, _ in exp_rows).items() if n > 1]
    train_ids = set(Path(train).read_text(encoding="utf-8").split("\n")) - {""}
    overlap = train_ids & expected
    # Every expected ID is scored; one without a valid first record counts as a wrong
    # prediction, kept as a label outside the declared classes (H-21).
    wrong = "\x00no valid prediction"
    y_true = list(refs.values())
    y_pred = [first.get(i) or wrong for i in refs]
    macro = float(f1_score(y_true, y_pred, labels=list(protocol.classes), average="macro", zero_division=0))
    ids_match = not missing and not extra and not dup and not dup_exp
    quality = macro + 1e-12 >= protocol.threshold - protocol.tolerance_applied
    return {
        "accepted": ids_match and bad == 0 and quality and not overlap,
        "ids_match": ids_match,
        "format_valid": bad == 0,
        "missing": len(missing),
        "extra": len(extra),
        "dup": len(dup),
        "macro_f1": macro,
    }


_IDS = {"id": pl.String, "label": pl.String}


def _bounded_bytes(path: Path) -> bytes:
    """The file's bytes, refused past a line of ``MAX_LINE_BYTES`` or bytes that are not
    UTF-8 -- the product's reading checks, with the cheapest primitives: one read, a hop
    of one bound at a time to the last newline before it (no loop over lines), ``isascii``
    before a full decode."""
    data = path.read_bytes()
    at = 0
    while len(data) - at > MAX_LINE_BYTES:
        nl = data.rfind(b"\n", at, at + MAX_LINE_BYTES + 1)
        if nl < 0:
            raise ValueError(f"{path}: a line longer than {MAX_LINE_BYTES} bytes")
        at = nl + 1
    if not data.isascii():
        data.decode("utf-8")  # raises on bytes that are not UTF-8
    return data


def _hash_duplicates(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows whose ID occurs more than once: the product's trick (sort the 64-bit hashes,
    compare each with the one before; strings compared only where a hash repeats)."""
    ordered = frame["h"].sort()
    shared = ordered.filter(ordered == ordered.shift(1))
    if shared.len() == 0:
        return frame.clear()
    candidates = frame.filter(pl.col("h").is_in(shared.unique().implode()))
    return candidates.filter(pl.col("id").is_duplicated())


def _literal_keys_ok(raw: bytes, n_lines: int) -> bool:
    """One ``"id"`` and one ``"label"`` key per line, each a JSON string (byte counts)."""
    for key in (b'"id"', b'"label"'):
        if raw.count(key) != n_lines:
            return False
        if raw.count(key + b': "') + raw.count(key + b':"') != n_lines:
            return False
    return True


def floor(corpus: Path, output: Path, train: Path, protocol: Protocol) -> dict[str, object]:
    """The least work that gives the product's verdict, counts and macro-F1 -- with the best
    primitives: the same checks (line bound, UTF-8, one JSON object per line with a string
    ``id`` and ``label``, the label among the classes, missing/extra/duplicated IDs on both
    sides, macro-F1 with a missing or bad prediction counted wrong, train/eval overlap,
    SHA-256 of the output, no key written with an escape) and the product's tricks (polars
    parses on a thread while the byte counts prove the format; IDs joined on their 64-bit
    hash, the join skipped for an in-order output; duplicates by sort and shift). No report, no per-record messages,
    no line numbers. Covers a well-formed output (the benchmark's two); any other raises."""
    classes = pl.Series("c", list(protocol.classes), dtype=pl.String)
    exp = pl.read_csv(_bounded_bytes(corpus), schema=_IDS).with_columns(h=pl.col("id").hash())
    exp_dups = _hash_duplicates(exp)
    exp_u = exp.unique("id", keep="first", maintain_order=True) if exp_dups.height else exp
    raw = _bounded_bytes(output)
    digest = hashlib.sha256(raw).hexdigest()
    n_lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    got: list[pl.DataFrame] = []
    parsing = threading.Thread(target=lambda: got.append(pl.read_ndjson(io.BytesIO(raw), schema=_IDS)))
    parsing.start()
    # no backslash: no key written with an escape, no lone surrogate (both read otherwise by polars)
    keys_ok = b"\r" not in raw and b"\\" not in raw and _literal_keys_ok(raw, n_lines)
    parsing.join()
    out = got[0]
    if not keys_ok or out.height != n_lines or out.null_count().sum_horizontal().item():
        raise ValueError("the floor covers well-formed outputs only")
    out = out.with_columns(ok=pl.col("label").is_in(classes.implode()) & (pl.col("id") != ""),
                           h=pl.col("id").hash(), line=pl.int_range(out.height))
    bad = out.height - int(out["ok"].sum())
    observed = out.filter(pl.col("id") != "")
    out_dups = _hash_duplicates(observed)
    if out_dups.height:
        later = out_dups.filter(~pl.col("id").is_first_distinct())["line"]
        obs_u = observed.filter(~pl.col("line").is_in(later.implode()))
    else:
        obs_u = observed
    right = exp_u.select(pl.col("id").alias("id_exp"), pl.col("label").alias("ref"), "h")
    if obs_u.height == right.height and bool((obs_u["id"] == right["id_exp"]).all()):
        joined = pl.concat([obs_u.select("id", "label", "ok"), right.drop("h")], how="horizontal")
    else:
        joined = obs_u.select("id", "label", "ok", "h").join(right, on="h", how="full", coalesce=True)
    missing, extra = joined["id"].null_count(), joined["id_exp"].null_count()
    scored = joined.filter(pl.col("id_exp").is_not_null()).select(
        label=pl.when(pl.col("ok").fill_null(False)).then(pl.col("label")), ref="ref")
    pred = scored.group_by("label").agg(n_pred=pl.len()).rename({"label": "c"})
    sup = scored.group_by("ref").agg(n_sup=pl.len()).rename({"ref": "c"})
    tp = scored.filter(pl.col("label") == pl.col("ref")).group_by("label").agg(n_tp=pl.len()).rename({"label": "c"})
    table = classes.to_frame()
    for part in (pred, sup, tp):
        table = table.join(part, on="c", how="left")
    table = table.fill_null(0)
    f1 = [2 * t / (p + s) if p + s else 0.0 for p, s, t in table.select("n_pred", "n_sup", "n_tp").iter_rows()]
    macro = math.fsum(f1) / len(f1)
    train_ids = pl.read_csv(_bounded_bytes(train), has_header=False, new_columns=["id"], schema={"id": pl.String})
    overlap = exp_u.select("id").join(train_ids.unique(), on="id", how="semi").height
    n_dup = out_dups["id"].n_unique() if out_dups.height else 0
    ids_match = missing == 0 and extra == 0 and n_dup == 0 and exp_dups.height == 0
    quality = macro + 1e-12 >= protocol.threshold - protocol.tolerance_applied
    return {
        "accepted": ids_match and bad == 0 and quality and overlap == 0,
        "ids_match": ids_match,
        "format_valid": bad == 0,
        "missing": missing,
        "extra": extra,
        "dup": n_dup,
        "macro_f1": macro,
        "sha256": digest,
    }


#: What the floor must agree on with the product (macro-F1 to 1e-12).
VERDICT_KEYS = ("accepted", "ids_match", "format_valid", "missing", "extra", "dup", "sha256")


def same_verdict(got: dict[str, object], fl: dict[str, object]) -> None:
    """Assert the floor and the product agree: verdict, counts, digest and macro-F1."""
    for key in VERDICT_KEYS:
        assert got[key] == fl[key], (key, got[key], fl[key])
    assert abs(float(got["macro_f1"]) - float(fl["macro_f1"])) < 1e-12, (got["macro_f1"], fl["macro_f1"])  # type: ignore[arg-type]


def interleaved(corpus: Path, output: Path, train: Path, protocol: Protocol, repeat: int) -> tuple[list[float], list[float], dict[str, object]]:
    """``repeat`` pairs (gpusession, floor), alternating which runs first."""
    ours_s: list[float] = []
    floor_s: list[float] = []
    got: dict[str, object] = {}
    for k in range(repeat):
        order = (0, 1) if k % 2 == 0 else (1, 0)
        for which in order:
            if which == 0:
                s, got = timed(ours, corpus, output, train, protocol)
                ours_s.append(s)
            else:
                s, fl = timed(floor, corpus, output, train, protocol)
                floor_s.append(s)
    same_verdict(got, fl)
    return ours_s, floor_s, got


def show_floor(name: str, ours_s: list[float], floor_s: list[float]) -> float:
    """Print the medians and the ratio gpusession / floor; return the ratio."""
    ours_m, floor_m = statistics.median(ours_s), statistics.median(floor_s)
    pairs = statistics.median(o / f for o, f in zip(ours_s, floor_s, strict=True))
    ratio = ours_m / floor_m
    print(f"{name}: gpusession median {ours_m:.3f} s ({min(ours_s):.3f}-{max(ours_s):.3f}), "
          f"floor median {floor_m:.3f} s ({min(floor_s):.3f}-{max(floor_s):.3f}), "
          f"ratio {ratio:.2f}x (median of pairs {pairs:.2f}x; {load_average()})")
    return ratio


def load_average() -> str:
    """The 1, 5 and 15-minute load averages, printed beside each figure (a shared machine)."""
    return "load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def judged(ok: bool, smoke: bool) -> str:
    """``met`` / ``NOT met``; a smoke run's timings are not judged (startup costs dominate)."""
    return "not judged (--smallest: a smoke run)" if smoke else ("met" if ok else "NOT met")


#: The smoke run's sizes (``--smallest``): every code path, checked, in seconds.
SMALLEST = {"ids": 2_000, "bad": 20, "repeat": 1, "baseline_runs": 1}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", type=int, default=1_000_000)
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--bad", type=int, default=300, help="missing, extra and duplicated IDs each")
    ap.add_argument("--repeat", type=int, default=7, help="interleaved pairs (gpusession, floor)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the slow plain-Python baseline")
    ap.add_argument("--baseline-runs", type=int, default=3, help="runs of the baseline (its median is compared)")
    ap.add_argument("--smallest", action="store_true",
                    help=f"smoke run: {SMALLEST['ids']:,} IDs, {SMALLEST['bad']} bad, one pair (overrides those options)")
    args = ap.parse_args(argv)
    if args.smallest:
        vars(args).update(SMALLEST)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        corpus, output, train, classes = build(folder, args.ids, args.classes, args.bad)
        print(f"built {args.ids:,} IDs, {args.classes} classes, {args.bad} missing/extra/duplicated "
              f"({output.stat().st_size / 1e6:.1f} MB output) in {time.perf_counter() - t0:.1f} s")
        protocol = Protocol(classes=classes, threshold=0.8)
        ours_s, floor_s, got = interleaved(corpus, output, train, protocol, args.repeat)
        report = got.pop("report")
        w_s, _ = timed(report.write, folder / "validation", "bench")  # type: ignore[attr-defined]
        best = min(ours_s)
        print(f"verdict: accepted={got['accepted']} missing={got['missing']} extra={got['extra']} "
              f"duplicated={got['dup']} macro_f1={float(got['macro_f1']):.6f}")  # type: ignore[arg-type]
        print(f"gpusession validation: best {best:.3f} s of {args.repeat} "
              f"({', '.join(f'{s:.3f}' for s in ours_s)}; {load_average()})")
        ratio = show_floor("output with missing/extra/duplicated IDs", ours_s, floor_s)
        print(f"writing the report + ID lists: {w_s:.3f} s ({load_average()})")
        clean_ours, clean_floor, clean = interleaved(corpus, folder / "clean.jsonl", train, protocol, args.repeat)
        assert clean["accepted"] is True
        clean_ratio = show_floor("clean in-order output (accepted)", clean_ours, clean_floor)
        print("target (gpusession <= 1.1x the floor): " + judged(max(ratio, clean_ratio) <= 1.1, args.smallest))
        if not args.no_baseline:
            base_runs = []
            for _ in range(args.baseline_runs):
                base_s, want = timed(baseline, corpus, output, train, protocol)
                base_runs.append(base_s)
            for key in ("accepted", "ids_match", "format_valid", "missing", "extra", "dup"):
                assert got[key] == want[key], (key, got[key], want[key])
            assert abs(float(got["macro_f1"]) - float(want["macro_f1"])) < 1e-12, (got["macro_f1"], want["macro_f1"])  # type: ignore[arg-type]
            base_m, ours_m = statistics.median(base_runs), statistics.median(ours_s)
            print(f"plain-Python baseline: median {base_m:.3f} s of {len(base_runs)} "
                  "(same verdict, counts and macro-F1)")
            print(f"ratio: {base_m / ours_m:.1f}x faster (median over median; {load_average()})")
            ok = ours_m < 1.5 and base_m / ours_m >= 10
            print("target (<1.5 s and >=10x): " + judged(ok, args.smallest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
