"""A re-pull that finds nothing new against a plain ``rsync -a`` of the same tree, at two sizes (S4, A5).

``gpusession pull`` copies a session and its deliverables home and proves the copy (every
session file reads back, every deliverable has its manifest's SHA-256). A month-long
session is pulled again and again; when nothing changed, the pull should cost little more
than the rsync that finds nothing: goal **≤ 2×** ``rsync -a`` of the same folders.

Sessions are built by ``sessions.py`` (as for ``bench_status.py``): one real run (a command experiment,
20 rows, 150 files) replicated to 5 experiments (100 rows) and 500 experiments (10,000
rows, a 15 MB journal, about 71,000 files), plus a deliverables folder of 4 files of
64 KiB per experiment and the manifest ``gpusession manifest`` writes of it (so the
server's journal records it, as on a rental). The source is a local folder (``pull``
takes one: rsync without ssh), the same for both commands.

Per size: the first pull (it proves everything) is timed apart; then ``--runs`` rounds,
each one ``rsync -a`` of the session folder and of the deliverables folder into a
folder of its own that already holds them (nothing to copy), then one ``gpusession pull``
into its copy home that already holds them (nothing new), both as child processes,
interleaved. Printed: the medians, the ratio and "≤ 2×: met" or "not met", the CPU time
(user + system, children included) of each; then the growth of the ratio from the small
session to the large one. ``--profile`` profiles one more re-pull of the large session
in this process (the walk of the copy runs in a thread beside rsync: not in the profile).

Run: ``python benchmarks/bench_pull.py [--runs 7] [--experiments 5,500] [--profile]``;
``--smoke`` for CI (1 and 2 experiments, one round); ``--beside /path/to/other/src`` times
that tree's pull in the same rounds (main beside a branch, under the same load), from a
hard-linked copy of the server's session of its own (each pull writes its throughput to
its server; on a shared one each would fetch the other's every round). Exits 0 (a benchmark
reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import sessions  # noqa: E402  (the sessions' recipe, beside this file)

#: The ratio to ``rsync -a`` a re-pull with nothing new must stay under.
TARGET = 2.0


def _timed(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process; it must exit with a code in ``ok``."""
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode("utf-8", "replace") if child.stderr else ""
    if child.stderr:
        child.stderr.close()
    if code not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {code}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def _load() -> str:
    """The 1-, 5- and 15-minute load averages, as ``uptime`` prints them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _measure(session: Path, out: Path, work: Path, runs: int, env: dict[str, str],
             profile: bool, beside: Path | None = None) -> float:
    """Print the figures of a re-pull of ``session`` with nothing new; its ratio to ``rsync -a``.

    ``beside``: another tree's ``src`` (main's, say), whose pull is timed in the same
    rounds into a copy home of its own, so the two are compared under the same load.
    """
    home, base = work / "home", work / "base"
    base.mkdir()
    pull = [sys.executable, "-m", "gpusession", "pull", str(session), "--to", str(home)]
    pulls = {"pull": (pull, env)}
    if beside is not None:
        # a server session of its own (hard links: the same bytes and times): a pull writes its
        # throughput into the server's retrieval.toml, which the other pull would then fetch
        # each round, and neither would be a re-pull that finds nothing new
        own = work / "beside-server" / session.name
        own.parent.mkdir()
        subprocess.run(["cp", "-al", str(session), str(own)], check=True)
        other_env = dict(env, PYTHONPATH=str(beside))
        pulls["beside"] = ([*pull[:3], "pull", str(own), "--to", str(work / "home-beside")], other_env)
    plain = [["rsync", "-a", f"{session}/", f"{base / session.name}/"],
             ["rsync", "-a", f"{out}/", f"{base / (session.name + '-deliverables')}/"]]
    print(f"  load average at the start: {_load()}")
    for what, (cmd, cmd_env) in pulls.items():
        first, first_cpu = _timed(cmd, cmd_env)
        print(f"  first pull{' (' + str(beside) + ')' if what == 'beside' else ''} (proves every file): "
              f"{first:6.2f} s (CPU {first_cpu:.2f} s)")
    for cmd in plain:
        _timed(cmd, env)
    walls: dict[str, list[float]] = {"pull": [], "rsync": [], "beside": []}
    cpus: dict[str, list[float]] = {"pull": [], "rsync": [], "beside": []}
    for _ in range(runs):
        w = c = 0.0
        for cmd in plain:
            dw, dc = _timed(cmd, env)
            w, c = w + dw, c + dc
        walls["rsync"].append(w)
        cpus["rsync"].append(c)
        for what, (cmd, cmd_env) in pulls.items():
            dw, dc = _timed(cmd, cmd_env)
            walls[what].append(dw)
            cpus[what].append(dc)
    if beside is not None:
        m_b, c_b = statistics.median(walls["beside"]), statistics.median(cpus["beside"])
        print(f"  pull of {beside}, nothing new:  median {m_b * 1000:8.1f} ms, "
              f"{m_b / statistics.median(walls['rsync']):.2f}x rsync -a (CPU {c_b * 1000:.0f} ms, "
              f"{c_b / max(statistics.median(cpus['rsync']), 1e-9):.2f}x)")
    m_pull, m_rsync = statistics.median(walls["pull"]), statistics.median(walls["rsync"])
    c_pull, c_rsync = statistics.median(cpus["pull"]), statistics.median(cpus["rsync"])
    ratio = m_pull / m_rsync
    print(f"  rsync -a, session + deliverables: median {m_rsync * 1000:8.1f} ms ({runs} runs)")
    print(f"  gpusession pull, nothing new:     median {m_pull * 1000:8.1f} ms ({runs} runs)")
    print(f"  ratio {ratio:.2f}x (≤ {TARGET:g}x: {'met' if ratio <= TARGET else 'not met'}); "
          f"paired ratios {', '.join(f'{p / r:.2f}' for p, r in zip(walls['pull'], walls['rsync'], strict=True))}")
    print(f"  CPU time (user + system, children included), medians: pull {c_pull * 1000:.0f} ms, "
          f"rsync -a {c_rsync * 1000:.0f} ms, ratio {c_pull / max(c_rsync, 1e-9):.2f}x")
    print(f"  load average at the end: {_load()}")
    if profile:
        from gpusession.core.copyhome.pull import parse_source
        from gpusession.core.copyhome.pull import pull as run_pull

        prof = cProfile.Profile()
        prof.enable()
        run_pull(parse_source(str(session)), to=home)
        prof.disable()
        print("  profile of one more re-pull (in this process; cumulative):")
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
    return ratio


def main() -> int:
    """Build the sessions, measure each, print the ratios and their growth."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="rounds per size (one of each per round)")
    ap.add_argument("--experiments", default="5,500",
                    help="experiments per session, comma-separated (20 rows each; default 5,500)")
    ap.add_argument("--profile", action="store_true", help="profile one more re-pull of the largest session")
    ap.add_argument("--smoke", action="store_true", help="CI: 1 and 2 experiments, one round")
    ap.add_argument("--beside", type=Path, default=None,
                    help="another tree's src folder (e.g. main's): its pull timed in the same rounds")
    args = ap.parse_args()
    if args.smoke:
        args.runs, args.experiments = 1, "1,2"
    sizes = [int(x) for x in args.experiments.split(",")]
    env = sessions.child_env()
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]  # the profiled pull reads the same record
    ratios: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for b in sessions.build(work, env, sizes):
            t = time.perf_counter()
            out = sessions.deliverables(b.folder, b.experiments)
            sessions.gpusession(b.home_env(env), work, "manifest", b.name, "--deliverables", str(out))
            files = sum(len(f) for _, _, f in os.walk(b.folder))
            print(f"{b.experiments} experiments, {b.rows:,} rows, {files:,} session files, "
                  f"{b.experiments * sessions.DELIVERABLES_PER_EXPERIMENT:,} deliverables "
                  f"(built in {b.built_s + time.perf_counter() - t:.1f} s):")
            (work / f"run{b.experiments}").mkdir()
            ratios.append((b.rows, _measure(b.folder, out, work / f"run{b.experiments}", args.runs, env,
                                            args.profile and b.experiments == max(sizes), args.beside)))
    if len(ratios) > 1:
        (small_rows, small), (large_rows, large) = ratios[0], ratios[-1]
        print(f"growth of the ratio from {small_rows:,} to {large_rows:,} rows: {large / small:.2f}x "
              f"({small:.2f}x → {large:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
