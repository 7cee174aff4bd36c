"""Time of ``gpusession status --format tmux`` against a bare ``python -c pass``.

tmux runs ``#(gpusession status --format tmux)`` every few seconds (``status-interval``),
so the command must cost little more than starting Python. Both are run as child
processes, interleaved (one of each per round, so a busy machine slows both alike), on
a session with 200 result rows and its ``summary.json``; the median of each is printed
with the ratio, and the CPU time of each (a busy machine inflates the wall time of a short
process with waiting). Target: at most 5× ``python -c pass``.

Run: ``python benchmarks/bench_status.py [--runs 30]`` (gpusession importable by the
active Python). Exits 0 (a benchmark reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _session(root: Path) -> None:
    """A session with 200 rows (a validated run's shape) and its summary."""
    from gpusession.core.files.clock import utcnow
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session
    from gpusession.core.records.results import COLUMNS, ResultsFile
    from gpusession.core.retrieval.status import refresh_counts

    s = Session.create(root, "bench", package=Package(gpu_model="RTX A5000", lots=1, days=7, start=utcnow()))
    rows = []
    for i in range(200):
        row: dict[str, object] = dict.fromkeys(COLUMNS)
        row.update(experiment_id="batch-sweep", variant_id=str(1 + i % 3), phase="warm",
                   run_index=i, corpus_revision=f"rev{i % 4}", corpus_accepted=i % 2 == 0,
                   elapsed_seconds=0.5 + i / 1000, notes="ok, kept")
        rows.append(row)
    ResultsFile(s.folder / "resultats-bruts.csv").append_many(rows)
    refresh_counts(s.folder)


#: CPU seconds (user + system) of each child of the last rounds, beside the wall time: on a
#: shared, busy machine the wall time of a short process is mostly waiting for a core.
CPU_S: dict[str, list[float]] = {}


def _time(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - t
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, cmd)
    CPU_S.setdefault(" ".join(cmd[-3:]), []).append(usage.ru_utime + usage.ru_stime)
    return elapsed


def main() -> int:
    """Measure, print the medians and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="rounds (one of each per round)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sessions"
        _session(root)
        # With PYTHONDONTWRITEBYTECODE set every start would recompile gpusession (an
        # install has its bytecode): the children run without it, as bench_startup's do.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["GPUSESSION_HOME"] = str(root)
        status = [sys.executable, "-m", "gpusession", "status", "--format", "tmux"]
        bare = [sys.executable, "-c", "pass"]
        print(subprocess.run(status, capture_output=True, text=True, env=env).stdout.strip())
        _time(status, env)
        _time(bare, env)  # warm the file cache for both
        t_status: list[float] = []
        t_bare: list[float] = []
        CPU_S.clear()
        for _ in range(args.runs):
            t_bare.append(_time(bare, env))
            t_status.append(_time(status, env))
    m_status, m_bare = statistics.median(t_status), statistics.median(t_bare)
    ratio = m_status / m_bare
    print(f"python -c pass:                  median {m_bare * 1000:7.1f} ms ({args.runs} runs)")
    print(f"gpusession status --format tmux: median {m_status * 1000:7.1f} ms ({args.runs} runs)")
    print(f"ratio {ratio:.2f}x (target ≤ 5x): {'met' if ratio <= 5 else 'NOT met'}")
    cpu_status, cpu_bare = (statistics.median(CPU_S[" ".join(c[-3:])]) for c in (status, bare))
    print(f"CPU time (user + system), medians: status {cpu_status * 1000:.1f} ms, python -c pass "
          f"{cpu_bare * 1000:.1f} ms, ratio {cpu_status / max(cpu_bare, 1e-9):.2f}x")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
