"""Benchmark: the memory of validating a JSONL output, as a multiple of its size.

Builds the outputs of ``bench_validation.py`` (a corpus of ``--ids`` IDs; a clean output,
a dirty one with missing, extra and duplicated IDs, and the dirty one with 50 labels
outside the declared classes, whose lines the report quotes), then validates each in a
fresh interpreter and prints::

    extra memory = peak RSS during validate_output - RSS just before it

(after ``import polars``, the corpus read and ``load_expected``; the peak is Linux's
VmHWM, reset through ``/proc/self/clear_refs`` just before the call) and its ratio to
the output's size in bytes. Target: at most 2x on every output.

Usage: ``python benchmarks/bench_validation_memory.py [--ids 2000000]``; ``--smallest``
runs once on 20,000 IDs (CI's smoke run: the ratio means nothing at that size, the
interpreter's own allocations dominate).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_validation import build

#: Run in a fresh interpreter: prints {"before_kib", "peak_kib", "accepted", "records"}.
CHILD = r"""
import json, re, sys
from pathlib import Path
from gpusession.core.validation import Protocol, load_expected, validate_output

def status(key):
    return int(re.search(key + r":\s+(\d+)", Path("/proc/self/status").read_text()).group(1))

corpus, output, train, classes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
expected = load_expected(Path(corpus))
protocol = Protocol(classes=tuple(classes), threshold=0.8)
before = status("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) restarts from here
report = validate_output(Path(output), expected, protocol, train_ids=Path(train))
print(json.dumps({"before_kib": before, "peak_kib": status("VmHWM"),
                  "accepted": report.corpus_accepted, "records": report.records}))
"""


def measure(corpus: Path, output: Path, train: Path, classes: tuple[str, ...]) -> dict[str, float]:
    """Validate ``output`` in a fresh interpreter; its extra memory in MB and as a ratio of its size."""
    got = subprocess.run(
        [sys.executable, "-c", CHILD, str(corpus), str(output), str(train), ",".join(classes)],
        capture_output=True, text=True, check=True,
    )
    row = json.loads(got.stdout.strip().splitlines()[-1])
    extra = (row["peak_kib"] - row["before_kib"]) * 1024
    size = output.stat().st_size
    return {"output_mb": size / 1e6, "extra_mb": extra / 1e6, "ratio": extra / size, "records": row["records"]}


def with_bad_labels(output: Path, n_bad: int) -> Path:
    """A copy of ``output`` whose first ``n_bad`` records have a label outside the classes."""
    bad = output.with_name("bad_labels.jsonl")
    with open(output, encoding="utf-8") as src, open(bad, "w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if i < n_bad:
                rec = json.loads(line)
                line = json.dumps({"id": rec["id"], "label": "not_a_class"}) + "\n"
            dst.write(line)
    return bad


def load_average() -> str:
    """The 1, 5 and 15-minute load averages, printed beside each figure (a shared machine)."""
    return "load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", type=int, default=2_000_000)
    ap.add_argument("--smallest", action="store_true", help="one run on 20,000 IDs (smoke test)")
    args = ap.parse_args()
    n_ids = 20_000 if args.smallest else args.ids
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus, dirty, train, classes = build(folder, n_ids, 20, max(10, n_ids // 5000))
        outputs = {"clean": folder / "clean.jsonl", "dirty": dirty, "bad labels": with_bad_labels(dirty, 50)}
        worst = 0.0
        for name, output in outputs.items():
            m = measure(corpus, output, train, classes)
            worst = max(worst, m["ratio"])
            print(f"{name:>10}: output {m['output_mb']:7.1f} MB, {m['records']:,} records; "
                  f"extra memory {m['extra_mb']:7.1f} MB = {m['ratio']:.2f}x the output ({load_average()})")
    verdict = "not judged (--smallest)" if args.smallest else ("met" if worst <= 2.0 else "NOT met")
    print(f"worst: {worst:.2f}x the output's size (target <= 2x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
