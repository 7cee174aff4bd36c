"""Time of ``gpusession status --format tmux`` against a bare ``python -c pass``, at two sizes of session (A5).

tmux runs ``#(gpusession status --format tmux)`` every few seconds (``status-interval``),
so the command must cost little more than starting Python, however long the session has
run. The sessions are those of ``sessions.py`` (one real run of a command experiment,
20 rows, replicated as a month of such runs would leave it): 5 experiments (100 rows)
and 500 experiments (10,000 rows, a 15 MB journal, 75,000 files).

Both commands are run as child processes, interleaved (one of each per round, so a busy
machine slows both alike); the first ``status`` of each session folds its journal and
checks its files once (timed and printed apart: the state it keeps is what later calls
read). Printed per size: the medians, the ratio with its target (≤ 5×) and "met" or "not
met", the CPU time of each (a busy machine inflates the wall time of a short process with
waiting); then the growth of the ratio from the small session to the large one.

Run: ``python benchmarks/bench_status.py [--runs 30] [--experiments 5,500]`` (gpusession
importable by the active Python). Exits 0 (a benchmark reports, it does not fail CI).
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

import sessions  # the sessions' recipe, beside this file (benchmarks/ is on the path)

#: The ratio to ``python -c pass`` the tmux line must stay under.
TARGET = 5.0

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


def _measure(root: Path, name: str, runs: int, env: dict[str, str]) -> float:
    """Print the figures of ``status --format tmux`` on ``name``; its ratio to ``python -c pass``."""
    env = {**env, "GPUSESSION_HOME": str(root)}
    status = [sys.executable, "-m", "gpusession", "status", name, "--format", "tmux"]
    bare = [sys.executable, "-c", "pass"]
    first = _time(status, env)  # folds the journal, checks the TOML files: the state later calls read
    print(subprocess.run(status, capture_output=True, text=True, env=env).stdout.strip())
    _time(bare, env)  # warm the file cache for both
    t_status: list[float] = []
    t_bare: list[float] = []
    CPU_S.clear()
    for _ in range(runs):
        t_bare.append(_time(bare, env))
        t_status.append(_time(status, env))
    m_status, m_bare = statistics.median(t_status), statistics.median(t_bare)
    ratio = m_status / m_bare
    cpu_status, cpu_bare = (statistics.median(CPU_S[" ".join(c[-3:])]) for c in (status, bare))
    print(f"  first status (folds the journal once): {first * 1000:7.1f} ms")
    print(f"  python -c pass:                  median {m_bare * 1000:7.1f} ms ({runs} runs)")
    print(f"  gpusession status --format tmux: median {m_status * 1000:7.1f} ms ({runs} runs)")
    print(f"  ratio {ratio:.2f}x (target ≤ {TARGET:g}x): {'met' if ratio <= TARGET else 'not met'}")
    print(f"  CPU time (user + system), medians: status {cpu_status * 1000:.1f} ms, python -c pass "
          f"{cpu_bare * 1000:.1f} ms, ratio {cpu_status / max(cpu_bare, 1e-9):.2f}x")
    print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return ratio


def main() -> int:
    """Build the sessions, measure each, print the ratios and their growth."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="rounds per size (one of each per round)")
    ap.add_argument("--experiments", default="5,500",
                    help="experiments per session, comma-separated (20 rows each; default 5,500)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.experiments.split(",")]
    env = sessions.child_env()
    ratios: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for b in sessions.build(Path(tmp), env, sizes):
            print(f"{b.shape()} (built in {b.built_s:.1f} s):")
            ratios.append((b.rows, _measure(b.root, b.name, args.runs, env)))
    if len(ratios) > 1:
        (small_rows, small), (large_rows, large) = ratios[0], ratios[-1]
        print(f"growth of the ratio from {small_rows:,} to {large_rows:,} rows: {large / small:.2f}x "
              f"({small:.2f}x → {large:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
