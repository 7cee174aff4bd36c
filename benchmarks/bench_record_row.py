"""The bookkeeping of one recorded row, at two sizes of session (A5).

After each row the recorder appends to ``resultats-bruts.csv`` (fsynced) and brings
``summary.json`` up to date for ``gpusession status``. Three ways are timed per row,
interleaved in one process on the same session (a busy machine slows all alike):

* **append**: ``ResultsFile.append`` alone (the baseline: O(1), one fsync);
* **recount**: append, then ``refresh_counts`` (reads the whole CSV and the whole journal);
* **recorded**: append, then ``count_appended_row`` (what the recorder does: the row alone).

At a small session (100 rows) and one a month would fill (10,000 rows, with a journal
ending each run), the medians and the ratios to the baseline are printed, so how the
cost grows with the session is seen. Goal: **recorded** the same at both sizes (it reads
``summary.json`` and writes it atomically, so about 2× the append); **recount** grows with
the session.

Run: ``python benchmarks/bench_record_row.py [--rows 20] [--sizes 100,10000]``. Exits 0
(a benchmark reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _row(i: int) -> dict[str, object]:
    from gpusession.core.records.results import COLUMNS

    row: dict[str, object] = dict.fromkeys(COLUMNS)
    row.update(experiment_id=f"sweep-{i // 20}", variant_id=f"batch-{1 + i % 3}", phase="warm",
               run_index=1 + i % 20, corpus_revision=f"rev{i % 4}", corpus_accepted=i % 2 == 0,
               elapsed_seconds=0.5 + i / 1000, notes="ok, kept")
    return row


def _session(root: Path, rows: int) -> object:
    """A session with ``rows`` rows, a journal ending each of their runs, and its summary."""
    from gpusession.core.events.records import ExperimentStartedRecord
    from gpusession.core.files.clock import utcnow
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session
    from gpusession.core.records.results import ResultsFile
    from gpusession.core.retrieval.status import refresh_counts

    s = Session.create(root, f"bench-{rows}", package=Package(gpu_model="RTX A5000", lots=1, days=30,
                                                              start=utcnow()))
    all_rows = [_row(i) for i in range(rows)]
    ResultsFile(s.folder / "resultats-bruts.csv").append_many(all_rows)
    s.journal(ExperimentStartedRecord(experiment_id="sweep-0"))  # a journal of the real shape
    ends = []
    for r in all_rows:  # one run end per row, as the runner journals them
        key = f"{r['experiment_id']}:{r['phase']}:{r['variant_id']}:{r['run_index']}"
        ends.append(json.dumps({"at": utcnow().isoformat(), "event": "run_finished", "v": 1, "run_key": key,
                                "experiment_id": r["experiment_id"], "variant_id": r["variant_id"],
                                "phase": r["phase"], "run_index": r["run_index"], "ok": True}))
    with open(s.folder / "journal.jsonl", "a", encoding="utf-8") as fh:
        fh.write("\n".join(ends) + "\n")
    refresh_counts(s.folder)
    return s


def _measure(session: object, rows: int, start: int) -> dict[str, list[float]]:
    from gpusession.core.retrieval.status import count_appended_row, csv_signature, refresh_counts

    results = session.results  # type: ignore[attr-defined]
    folder = session.folder  # type: ignore[attr-defined]
    out: dict[str, list[float]] = {"append": [], "recount": [], "recorded": []}
    i = start
    for _ in range(rows):
        for way in out:
            row = _row(i)
            i += 1
            t = time.perf_counter()
            before = csv_signature(folder)
            results.append(row)
            if way == "recount":
                refresh_counts(folder)
            elif way == "recorded":
                count_appended_row(folder, before, str(row["corpus_revision"]) if row["corpus_accepted"] else None)
            out[way].append(time.perf_counter() - t)
        refresh_counts(folder)  # each round starts from a summary of the whole file
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20, help="rows recorded per way and size")
    ap.add_argument("--sizes", default="100,10000", help="rows in the session before, comma-separated")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"per recorded row, median of {args.rows} (ms); ratio to the append alone")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            root = Path(tmp) / f"s{n}"
            root.mkdir()
            s = _session(root, n)
            got = _measure(s, args.rows, n)
            base = statistics.median(got["append"])
            cells = "  ".join(f"{way} {statistics.median(v) * 1000:7.2f} ms ({statistics.median(v) / base:5.2f}×)"
                              for way, v in got.items())
            print(f"{n:>7,} rows: {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
