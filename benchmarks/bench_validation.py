"""Benchmark: full corpus validation (polars) against a plain-Python baseline (issue 4).

Builds a 1,000,000-ID corpus with 20 classes and a JSONL output with a few hundred
missing, extra and duplicated IDs, then times, in the same run:

* gpusession: ``load_expected`` + ``validate_output`` (every check: IDs, format,
  quality, overlap) -- and, separately, writing the report with its ID lists;
* the same on a clean output listing every ID once in corpus order (accepted);
* baseline: ``csv`` + ``json.loads`` per line, Python sets and a Counter, and
  ``sklearn.metrics.f1_score(..., labels=classes, average="macro", zero_division=0)``.

It asserts both reach the same verdict, counts and metric, and prints the ratio.
Target (issue 4): under 1.5 s for the whole validation and ≥ 10× faster than the baseline.

Usage: ``python benchmarks/bench_validation.py [--ids 1000000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

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
    scored = [i for i, lab in first.items() if lab is not None and i in refs]
    y_true = [refs[i] for i in scored]
    y_pred = [first[i] for i in scored]
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


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", type=int, default=1_000_000)
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--bad", type=int, default=300, help="missing, extra and duplicated IDs each")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        corpus, output, train, classes = build(folder, args.ids, args.classes, args.bad)
        print(f"built {args.ids:,} IDs, {args.classes} classes, {args.bad} missing/extra/duplicated "
              f"({output.stat().st_size / 1e6:.1f} MB output) in {time.perf_counter() - t0:.1f} s")
        protocol = Protocol(classes=classes, threshold=0.8)
        ours_s = []
        got: dict[str, object] = {}
        for _ in range(args.repeat):
            s, got = timed(ours, corpus, output, train, protocol)
            ours_s.append(s)
        base_s, want = timed(baseline, corpus, output, train, protocol)
        report = got.pop("report")
        w_s, _ = timed(report.write, folder / "validation", "bench")  # type: ignore[attr-defined]
        for key in ("accepted", "ids_match", "format_valid", "missing", "extra", "dup"):
            assert got[key] == want[key], (key, got[key], want[key])
        assert abs(float(got["macro_f1"]) - float(want["macro_f1"])) < 1e-12, (got["macro_f1"], want["macro_f1"])  # type: ignore[arg-type]
        best = min(ours_s)
        print(f"verdict: accepted={got['accepted']} missing={got['missing']} extra={got['extra']} "
              f"duplicated={got['dup']} macro_f1={float(got['macro_f1']):.6f} (same in both)")  # type: ignore[arg-type]
        print(f"gpusession validation: best {best:.3f} s of {args.repeat} "
              f"({', '.join(f'{s:.3f}' for s in ours_s)})")
        print(f"plain-Python baseline: {base_s:.3f} s")
        print(f"ratio: {base_s / best:.1f}x faster")
        print(f"writing the report + ID lists: {w_s:.3f} s")
        clean_s = []
        for _ in range(args.repeat):
            s, clean = timed(ours, corpus, folder / "clean.jsonl", train, protocol)
            clean_s.append(s)
        assert clean["accepted"] is True
        print(f"clean in-order output (accepted): best {min(clean_s):.3f} s of {args.repeat}")
        ok = best < 1.5 and base_s / best >= 10
        print("target (<1.5 s and >=10x): " + ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
