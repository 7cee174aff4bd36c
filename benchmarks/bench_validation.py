"""Benchmark: full corpus validation (polars) against a plain-Python baseline.

Builds a 1,000,000-ID corpus with 20 classes and a JSONL output with a few hundred
missing, extra and duplicated IDs, then times, in the same run:

* gpusession: ``load_expected`` + ``validate_output`` (every check: IDs, format,
  quality, overlap) -- and, separately, writing the report with its ID lists;
* the same on a clean output listing every ID once in corpus order (accepted);
* baseline: ``csv`` + ``json.loads`` per line, Python sets and a Counter, and
  ``sklearn.metrics.f1_score(..., labels=classes, average="macro", zero_division=0)``;
* floor: a bare polars read of the same files (corpus, output, training IDs), the
  expected-vs-output join, the training-vs-expected join and a duplicate count -- what
  no validation can go below. gpusession and the floor run interleaved (ours, floor,
  ours, floor, ...) so that load on a shared machine hits both alike; medians are
  compared.

It asserts both reach the same verdict, counts and metric, and prints the ratios.
Targets: under 1.5 s for the whole validation and ≥ 10× faster than the baseline; at
most 1.2× the floor, on the dirty and on the clean output.

Usage: ``python benchmarks/bench_validation.py [--ids 1000000] [--repeat 7]``;
``--smallest`` runs every step once on 2,000 IDs in a few seconds (CI's smoke run: the
assertions hold, the timings mean nothing).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import polars as pl
from sklearn.metrics import f1_score

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
    quality = macro + 1e-12 >= protocol.threshold - protocol.tolerance
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


def floor(corpus: Path, output: Path, train: Path) -> dict[str, int]:
    """Bare polars: read the three files, join expected with output and training with
    expected, count duplicated output IDs. No per-record checks, no report."""
    exp = pl.read_csv(corpus, schema=_IDS)
    out = pl.read_ndjson(output, schema=_IDS)
    tr = pl.read_csv(train, has_header=False, new_columns=["id"], schema={"id": pl.String})
    joined = exp.select("id").join(out.select("id"), on="id", how="full", coalesce=False)
    return {
        "missing": joined["id_right"].null_count(),
        "extra": joined["id"].null_count(),
        "dup": out.filter(pl.col("id").is_duplicated())["id"].n_unique(),
        "overlap": tr.join(exp, on="id", how="semi").height,
    }


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
                s, fl = timed(floor, corpus, output, train)
                floor_s.append(s)
    for key in ("missing", "extra", "dup"):
        assert got[key] == fl[key], (key, got[key], fl[key])
    return ours_s, floor_s, got


def show_floor(name: str, ours_s: list[float], floor_s: list[float]) -> float:
    """Print the medians and the ratio gpusession / floor; return the ratio."""
    ours_m, floor_m = statistics.median(ours_s), statistics.median(floor_s)
    pairs = statistics.median(o / f for o, f in zip(ours_s, floor_s, strict=True))
    ratio = ours_m / floor_m
    print(f"{name}: gpusession median {ours_m:.3f} s ({min(ours_s):.3f}-{max(ours_s):.3f}), "
          f"floor median {floor_m:.3f} s ({min(floor_s):.3f}-{max(floor_s):.3f}), "
          f"ratio {ratio:.2f}x (median of pairs {pairs:.2f}x)")
    return ratio


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def judged(ok: bool, smoke: bool) -> str:
    """``met`` / ``NOT met``; a smoke run's timings are not judged (startup costs dominate)."""
    return "not judged (--smallest: a smoke run)" if smoke else ("met" if ok else "NOT met")


#: The smoke run's sizes (``--smallest``): every code path, checked, in seconds.
SMALLEST = {"ids": 2_000, "bad": 20, "repeat": 1}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", type=int, default=1_000_000)
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--bad", type=int, default=300, help="missing, extra and duplicated IDs each")
    ap.add_argument("--repeat", type=int, default=7, help="interleaved pairs (gpusession, floor)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the slow plain-Python baseline")
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
              f"({', '.join(f'{s:.3f}' for s in ours_s)})")
        ratio = show_floor("output with missing/extra/duplicated IDs", ours_s, floor_s)
        print(f"writing the report + ID lists: {w_s:.3f} s")
        clean_ours, clean_floor, clean = interleaved(corpus, folder / "clean.jsonl", train, protocol, args.repeat)
        assert clean["accepted"] is True
        clean_ratio = show_floor("clean in-order output (accepted)", clean_ours, clean_floor)
        print("target (gpusession <= 1.2x the floor): " + judged(max(ratio, clean_ratio) <= 1.2, args.smallest))
        if not args.no_baseline:
            base_s, want = timed(baseline, corpus, output, train, protocol)
            for key in ("accepted", "ids_match", "format_valid", "missing", "extra", "dup"):
                assert got[key] == want[key], (key, got[key], want[key])
            assert abs(float(got["macro_f1"]) - float(want["macro_f1"])) < 1e-12, (got["macro_f1"], want["macro_f1"])  # type: ignore[arg-type]
            print(f"plain-Python baseline: {base_s:.3f} s (same verdict, counts and macro-F1)")
            print(f"ratio: {base_s / best:.1f}x faster")
            ok = best < 1.5 and base_s / best >= 10
            print("target (<1.5 s and >=10x): " + judged(ok, args.smallest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
