"""Time of ``gpusession compare`` of ten sessions (and ``compare --html``) against ``show``.

Deciding which card to rent is done at home on sessions copied back: comparing them must
take about as long as reading one. The sessions: ten, each one command experiment of two
variants × three warm runs (a real ``run`` of a ``cp`` command, validated, as in
``bench_report.py``), on the same corpus and protocol (the same work, so ``compare``
ranks them), each with a package of its own (RTX A5000, 1-5 lots, 3 or 7 days: ten
different prices). Each command is run as a child process, as a person runs it,
interleaved (one of each per round, so a busy machine slows all alike); the median of
each is printed with its ratio to ``show`` of one of the sessions, wall time and CPU time
(user + system: on a busy machine a short process's wall time is mostly waiting), and the
time to the first line printed (the table is printed before the page is written).
"plain install" hides matplotlib from the child (as an install without the ``report``
extra has it: the page then says in one line how to get its chart). Goals:
``compare`` of ten sessions ≤ 1 s; ``compare --html --out FILE`` ≤ 1.5 s.

Run: ``python benchmarks/bench_compare.py [--runs 7]``. Exits 0 (a benchmark reports, it
does not fail CI).
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

from bench_report import child_envs, command_session, timed_child  # benchmarks/ is on the path

#: The ten packages ``(lots, days)`` of an RTX A5000 (both prices are in the bundled rates).
PACKAGES = tuple((lots, days) for days in (3, 7) for lots in range(1, 6))

#: How ``compare`` says it ranked the sessions (the same work): checked once, before timing.
RANKED_WORDS = "Ranked by cost per accepted deliverable"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _verdict(seconds: float, goal: float) -> str:
    return f"{seconds:.2f} s: {'met' if seconds <= goal else 'NOT met'}"


def main() -> int:
    """Measure, print the medians, the ratios and the goals."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="rounds (one of each per round)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = tmp / "sessions"
        t0 = time.perf_counter()
        names = [command_session(root, tmp, f"a5000-{lots}lot-{days}d", lots=lots, days=days)
                 for lots, days in PACKAGES]
        print(f"{len(names)} sessions run for real in {time.perf_counter() - t0:.1f} s; "
              f"load average at the start {_load()} on {os.cpu_count()} cores")
        env, bare = child_envs(tmp)
        gs = [sys.executable, "-m", "gpusession", "--sessions-dir", str(root)]
        page = tmp / "compare.html"  # removed before each run: compare never writes over a file
        cases = {
            "show": (gs + ["show", names[0]], env),
            "compare": (gs + ["compare", *names], env),
            "compare --html": (gs + ["compare", *names, "--html", "--out", str(page)], env),
            "compare --html, plain": (gs + ["compare", *names, "--html", "--out", str(page)], bare),
        }
        said = subprocess.run(cases["compare"][0], capture_output=True, text=True, env=env, check=True)
        if RANKED_WORDS not in said.stdout:  # the ten must be comparable (the same work)
            raise SystemExit(f"compare did not rank the sessions:\n{said.stdout}")

        def one(key: str) -> tuple[float, float, float]:
            page.unlink(missing_ok=True)
            cmd, e = cases[key]
            return timed_child(cmd, e)

        for k in cases:  # warm the caches once
            one(k)
        times: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for k in cases:
                times[k].append(one(k))
        charted = "<svg" in page.read_text(encoding="utf-8") if page.exists() else False
    show = statistics.median(w for w, _, _ in times["show"])
    show_cpu = statistics.median(c for _, c, _ in times["show"])
    for k, ts in times.items():
        wall, cpu = statistics.median(w for w, _, _ in ts), statistics.median(c for _, c, _ in ts)
        first = statistics.median(f for _, _, f in ts)
        print(f"{k:<22} median {wall * 1000:6.0f} ms ({wall / show:.2f}× show), CPU {cpu * 1000:5.0f} ms "
              f"({cpu / show_cpu:.2f}× show), first line at {first * 1000:5.0f} ms, {len(ts)} runs")
    med = {k: statistics.median(w for w, _, _ in ts) for k, ts in times.items()}
    print(f"(the plain install's page has {'a' if charted else 'no'} chart; the last page written)")
    print(f"goal compare of {len(names)} sessions ≤ 1 s: {_verdict(med['compare'], 1.0)}")
    print(f"goal compare --html ≤ 1.5 s: {_verdict(med['compare --html'], 1.5)}; "
          f"plain install: {_verdict(med['compare --html, plain'], 1.5)}")
    print(f"load average at the end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
