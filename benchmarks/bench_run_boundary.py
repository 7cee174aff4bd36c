"""20 runs of a new experiment, ``run`` as typed, at two sizes of session (A5).

What a run costs at its boundaries (preparing it, recording each row, the closing
summary) must be the new work, not the session: a month-long session of 500 experiments
runs a new one as fast as a fresh session of 5. One real run (a command experiment: 2
variants, 1 cold and 9 warm runs each, validated; 20 rows) is made once and replicated as
a month of such runs would leave it (:mod:`sessions`: ``session.toml`` with every
experiment, rows, journal, ``runs/`` and ``validation/``, ``summary.json``): 5 experiments
(100 rows) and 500 experiments (10,000 rows). In each, one new experiment of the same
cheap CPU program is defined (``experiment define``, one call) and run as typed
(``gpusession run NAME --headless --quiet`` in a child process: 2 variants × (1 cold + 9
warm) = 20 runs). The sizes are run interleaved, one new experiment per size per round,
so a busy machine slows both alike.

Printed: the medians at each size, the ratio large ÷ small with its target (≤ 1.5×) and
"met" or "not met", and the load. ``--profile`` runs the large size once more under
cProfile and prints where it spends (cumulative, then own time).

Run: ``python benchmarks/bench_run_boundary.py [--rounds 3] [--experiments 5,500]
[--profile]``; ``--smoke`` (CI): one round at 1 and 2 experiments. Exits 0 (a benchmark
reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sessions  # noqa: E402  (the sessions as real runs leave them)

#: The ratio of the large session's 20 runs to the small one's that must not be passed.
TARGET = 1.5


def _child(env: dict[str, str], cwd: Path, *args: str) -> float:
    """Run ``gpusession ARGS`` in a child process; its wall time in seconds."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpusession", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if done.returncode:
        raise SystemExit(f"gpusession {' '.join(args)} failed ({done.returncode}): "
                         f"{done.stderr[-2000:]}{done.stdout[-2000:]}")
    return elapsed


def _define(env: dict[str, str], work: Path, name: str, exp: str) -> None:
    """Define ``exp`` in session ``name``: the template's program, 2 variants × (1 cold + 9 warm)."""
    _child(env, work, "experiment", name, "define", "--id", exp, "--workload", "command",
           "--values", "1,2", "--runs", "9", "--warmup", "0", "--corpus", str(work / "corpus.jsonl"),
           "--classes", "a,b", "--threshold", "0.5",
           "--command", f"{sys.executable} {work / 'ids_labels.py'} {{corpus}} {{output}}")


def _run_args(name: str, exp: str) -> list[str]:
    return ["run", name, "--experiment", exp, "--headless", "--quiet"]


def _profile(env: dict[str, str], work: Path, name: str, exp: str) -> None:
    """Run ``exp`` of ``name`` once in this process under cProfile; print where it spends."""
    from gpusession.cli import main as cli_main

    os.environ["GPUSESSION_HOME"] = env["GPUSESSION_HOME"]
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]  # the children's key: their states read as ours
    prof = cProfile.Profile()
    prof.enable()
    try:
        cli_main(_run_args(name, exp))
    except SystemExit:
        pass
    finally:
        prof.disable()
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(25)
        print(f"--- profile of the large session's 20 runs, by {key} ---")
        print("\n".join(ln for ln in out.getvalue().splitlines() if ln.strip())[:6000])


def main() -> int:
    """Build the sessions, time a new experiment's 20 runs in each, print the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="new experiments run per size (default 3)")
    ap.add_argument("--experiments", default="5,500",
                    help="experiments per session before, comma-separated (20 rows each; default 5,500)")
    ap.add_argument("--profile", action="store_true", help="profile one more run of the largest size")
    ap.add_argument("--smoke", action="store_true", help="one round at 1 and 2 experiments (CI)")
    args = ap.parse_args()
    if args.smoke:
        args.rounds, args.experiments = 1, "1,2"
    sizes = [int(x) for x in args.experiments.split(",")]
    # One $XDG_STATE_HOME (its seal key) for the children, the caches this process seals
    # while it builds the sessions, and --profile's run: each reads the others' states.
    os.environ.setdefault("XDG_STATE_HOME", tempfile.mkdtemp(prefix="gpusession-bench-state-"))
    env = sessions.child_env()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        homes: dict[int, dict[str, str]] = {}
        for b in sessions.build(work, env, sizes):
            homes[b.experiments] = b.home_env(env)
            print(f"{b.shape()}, session.toml {(b.folder / 'session.toml').stat().st_size / 1e3:.0f} kB "
                  f"(built in {b.built_s:.1f} s)")
        times: dict[int, list[float]] = {n: [] for n in sizes}
        for r in range(args.rounds):
            for n in sizes:  # interleaved: one new experiment per size per round
                exp = f"new-{r}"
                _define(homes[n], work, f"bench-{n}", exp)
                times[n].append(_child(homes[n], work, *_run_args(f"bench-{n}", exp)))
        print(f"20 runs of a new experiment (`run --headless --quiet` as typed), median of {args.rounds}:")
        for n in sizes:
            print(f"  {n:>4} experiments ({n * 20:>6,} rows): {statistics.median(times[n]):6.2f} s "
                  f"(each: {', '.join(f'{x:.2f}' for x in times[n])})")
        small, large = statistics.median(times[sizes[0]]), statistics.median(times[sizes[-1]])
        ratio = large / small
        print(f"  ratio {sizes[-1] * 20:,} rows ÷ {sizes[0] * 20:,} rows: {ratio:.2f}× "
              f"(target ≤ {TARGET:g}×): {'met' if ratio <= TARGET else 'not met'}")
        print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.profile:
            n = sizes[-1]
            _define(homes[n], work, f"bench-{n}", "profiled")
            _profile(homes[n], work, f"bench-{n}", "profiled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
