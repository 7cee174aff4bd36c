"""Time of ``gpusession report`` (with and without charts) against ``gpusession show``.

The report is read at home on a session copied back; it must cost little more than
``show`` of the same session. The session: one command experiment of two variants ×
three warm runs (a real ``run`` of a ``cp`` command, validated). Each command is run as a
child process, interleaved (one of each per round, so a busy machine slows all alike);
the median of each is printed with its ratio to ``show``, wall time and CPU time (user +
system: on a busy machine a short process's wall time is mostly waiting), and the time to
the first line printed (the report prints its answer before it draws the charts). "report NAME
(as typed)" is what a person types: the report into the session folder, charts drawn when
the extra is installed; it is judged beside the others. "--no-charts"
is the report without charts requested; "plain install" hides matplotlib from the child
(as an install without the ``report`` extra has it). Goals: the report without
charts requested, and the report on a plain install, ≤ 1 s and ≤ 1.5× show; ``report
--html`` ≤ 1.5 s.

Then the growth with the session (A5): sessions of 100 rows / 5 experiments and of 10,000
rows / 500 experiments, built as ``bench_status.py`` builds them (one real run replicated:
its experiment defined again under new ids, its rows, journal lines and run and
validation folders repeated, ``summary.json`` refreshed). ``show`` and ``report
--no-charts`` are timed on each, interleaved, and their time at the large size ÷ at the
small one is judged: **≤ 5×** for 100× the rows. ``report`` with charts is run once on the
large session and its peak memory judged (the child's RSS high-water, ``ru_maxrss`` of
``wait4``): **< 300 MB**.

Run: ``python benchmarks/bench_report.py [--runs 7] [--experiments 5,500]``
(``--experiments 0``: the growth left out; with ``--runs 1``, CI's smoke run, the sizes
default to 1,5 experiments). Exits 0 (a benchmark reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: A ``sitecustomize`` that makes ``import matplotlib`` fail, as where it is not installed.
NO_MATPLOTLIB = (
    "import sys\n"
    "class _Hide:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'matplotlib' or name.startswith('matplotlib.'):\n"
    "            raise ModuleNotFoundError(name)\n"
    "sys.meta_path.insert(0, _Hide())\n"
)


def command_session(root: Path, tmp: Path, name: str = "bench", *, lots: int = 1, days: int = 7) -> str:
    """One command experiment, two variants × three warm runs, run for real; its name.

    The same corpus (revision) and experiment in every session made, so that ``compare``
    ranks them (``bench_compare.py`` makes ten, one per RTX A5000 package).
    """
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.files.clock import utcnow
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session

    s = Session.create(root, name, package=Package(gpu_model="RTX A5000", lots=lots, days=days, start=utcnow()))
    corpus = s.folder / "corpus" / "eval.jsonl"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("".join(json.dumps({"id": f"t-{i:03d}", "text": "a b", "label": "ab"[i % 2]}) + "\n"
                              for i in range(8)), encoding="utf-8")
    script = tmp / "copy.sh"
    script.write_text("#!/bin/sh\ncp \"$1\" \"$2\"\n", encoding="utf-8")
    script.chmod(0o700)
    define_experiment(s, Experiment(
        id="e", workload="command", corpus="corpus/eval.jsonl", varied="batch", values=(1, 2),
        runs_per_variant=3, cold_runs_per_variant=0, warmup_iterations=0, device="cpu",
        scope="full-chain", params={"command": [str(script), "{corpus}", "{output}"]},
        protocol={"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.0, "tolerance": 0.0}))
    subprocess.run([sys.executable, "-m", "gpusession", "--sessions-dir", str(root), "run", s.name,
                    "--experiment", "e", "--headless"], check=True, stdout=subprocess.DEVNULL)
    return s.name


def child_envs(tmp: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The children's environments: as installed, and as a plain install (matplotlib hidden).

    Without ``PYTHONDONTWRITEBYTECODE``: an install has its bytecode (as bench_startup's
    children). The plain one puts a ``sitecustomize`` (:data:`NO_MATPLOTLIB`) from ``tmp``
    first on ``PYTHONPATH``.
    """
    hide = tmp / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(NO_MATPLOTLIB, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    bare = dict(env, PYTHONPATH=os.pathsep.join([str(hide), *filter(None, [env.get("PYTHONPATH")])]))
    return env, bare


def timed_child(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """``(wall s, CPU s, s to the first line printed)`` of one child run."""
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    assert child.stdout is not None
    child.stdout.readline()  # the first line: the report's answer, compare's table, show's session
    first = time.perf_counter() - t
    child.stdout.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    child.stdout.close()
    if os.waitstatus_to_exitcode(status):
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), cmd)
    return wall, usage.ru_utime + usage.ru_stime, first


def _has_matplotlib() -> bool:
    """Whether the report extra is installed here (then ``report NAME`` draws its charts)."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


#: The growth allowed from the small session to the large one (100× the rows).
GROWTH_TARGET = 5.0
#: The peak memory allowed to ``report`` with charts on the large session, in bytes.
CHARTS_PEAK_BYTES = 300 * 1000 * 1000


def timed_peak(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """``(wall s, peak resident bytes)`` of one child run (``ru_maxrss`` of ``wait4``, KiB on Linux)."""
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), cmd)
    scale = 1 if sys.platform == "darwin" else 1024  # macOS gives bytes, Linux KiB
    return wall, usage.ru_maxrss * scale


def growth(tmp: Path, sizes: list[int], runs: int) -> None:
    """Build a session per size (``bench_status.py``'s builders) and print the growth of ``show`` and ``report``."""
    import sessions  # benchmarks/ is on the path

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("XDG_STATE_HOME", str(tmp / "state"))
    work = tmp / "growth"
    work.mkdir()
    t = time.perf_counter()
    template = sessions.real_run(work, env)
    print(f"growth: one real run {time.perf_counter() - t:.1f} s; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    built: list[tuple[int, int, list[str]]] = []  # (experiments, rows, the gpusession command's head)
    for n in sizes:
        root = work / f"s{n}"
        folder = sessions.replicate(template, root, f"bench-{n}", n)
        rows = sum(1 for _ in open(folder / "resultats-bruts.csv", "rb")) - 1
        built.append((n, rows, [sys.executable, "-m", "gpusession", "--sessions-dir", str(root)]))
    out = str(tmp / "growth.md")
    cases = {(n, what): gs + args
             for n, _rows, gs in built
             for what, args in (("show", ["show", f"bench-{n}"]),
                                ("report --no-charts", ["report", f"bench-{n}", "--out", out, "--force",
                                                        "--no-charts"]))}
    for cmd in cases.values():  # the first call of each folds what later calls read (status's state)
        timed_child(cmd, env)
    times: dict[tuple[int, str], list[tuple[float, float, float]]] = {k: [] for k in cases}
    for _ in range(runs):
        for k, cmd in cases.items():
            times[k].append(timed_child(cmd, env))
    med = {k: (statistics.median(w for w, _, _ in ts), statistics.median(c for _, c, _ in ts))
           for k, ts in times.items()}
    for n, rows, _gs in built:
        for what in ("show", "report --no-charts"):
            wall, cpu = med[(n, what)]
            print(f"  {rows:>6,} rows, {n:>3} experiments: {what:<19} median {wall * 1000:7.0f} ms, "
                  f"CPU {cpu * 1000:7.0f} ms ({runs} runs)")
    (small, small_rows, _), (large, large_rows, gs) = built[0], built[-1]
    for what in ("show", "report --no-charts"):
        ratio = med[(large, what)][0] / med[(small, what)][0]
        cpu = med[(large, what)][1] / med[(small, what)][1]
        print(f"goal {what} at {large_rows:,} rows ÷ at {small_rows:,} rows ≤ {GROWTH_TARGET:g}×: "
              f"{ratio:.2f}× (CPU {cpu:.2f}×): {'met' if ratio <= GROWTH_TARGET else 'not met'}")
    if not _has_matplotlib():
        print("goal report with charts < 300 MB: not judged (matplotlib not installed)")
    else:
        wall, peak = timed_peak(gs + ["report", f"bench-{large}", "--out", out, "--force"], env)
        print(f"goal report with charts at {large_rows:,} rows < {CHARTS_PEAK_BYTES / 1e6:.0f} MB: peak RSS "
              f"{peak / 1e6:.0f} MB in {wall:.1f} s: {'met' if peak < CHARTS_PEAK_BYTES else 'not met'}")
    print(f"growth: load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> int:
    """Measure, print the medians and the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="rounds (one of each per round)")
    ap.add_argument("--experiments", default=None,
                    help="experiments of the small and large sessions of the growth, 20 rows each "
                         "(default 5,500; 1,5 with --runs 1; 0: no growth)")
    args = ap.parse_args()
    spec = args.experiments or ("1,5" if args.runs == 1 else "5,500")
    sizes = [int(x) for x in spec.split(",") if int(x) > 0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = tmp / "sessions"
        name = command_session(root, tmp)
        print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} cores")
        env, bare = child_envs(tmp)
        gs = [sys.executable, "-m", "gpusession", "--sessions-dir", str(root)]
        out = str(tmp / "r.md")
        cases = {
            "show": (gs + ["show", name], env),
            # as a person types it: into the session folder, charts drawn when matplotlib is there
            "report NAME (as typed)": (gs + ["report", name], env),
            "report --no-charts": (gs + ["report", name, "--out", out, "--force", "--no-charts"], env),
            "report, plain install": (gs + ["report", name, "--out", out, "--force"], bare),
            "report, charts": (gs + ["report", name, "--out", out, "--force"], env),
            "report --html": (gs + ["report", name, "--out", out, "--force", "--html"], env),
        }
        for cmd, e in cases.values():  # warm the caches once
            timed_child(cmd, e)
        times: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for k, (cmd, e) in cases.items():
                times[k].append(timed_child(cmd, e))
    show = statistics.median(w for w, _, _ in times["show"])
    show_cpu = statistics.median(c for _, c, _ in times["show"])
    for k, ts in times.items():
        wall, cpu = statistics.median(w for w, _, _ in ts), statistics.median(c for _, c, _ in ts)
        first = statistics.median(f for _, _, f in ts)
        print(f"{k:<22} median {wall * 1000:6.0f} ms ({wall / show:.2f}× show), CPU {cpu * 1000:5.0f} ms "
              f"({cpu / show_cpu:.2f}× show), first line at {first * 1000:5.0f} ms, {len(ts)} runs")
    med = {k: statistics.median(w for w, _, _ in ts) for k, ts in times.items()}
    typed = med["report NAME (as typed)"]
    print(f"goal report NAME as typed (charts {'drawn' if _has_matplotlib() else 'not installed'}) "
          f"≤ 1.5× show: {typed:.2f} s, {typed / show:.2f}×: {'met' if typed / show <= 1.5 else 'NOT met'}")
    plain = med["report --no-charts"]
    print(f"goal report --no-charts ≤ 1 s and ≤ 1.5× show: {plain:.2f} s, {plain / show:.2f}×: "
          f"{'met' if plain <= 1 and plain / show <= 1.5 else 'NOT met'}")
    bare = med["report, plain install"]
    print(f"goal report on a plain install (no matplotlib) ≤ 1 s and ≤ 1.5× show: {bare:.2f} s, "
          f"{bare / show:.2f}×: {'met' if bare <= 1 and bare / show <= 1.5 else 'NOT met'}")
    print(f"goal report --html ≤ 1.5 s: {med['report --html']:.2f} s: "
          f"{'met' if med['report --html'] <= 1.5 else 'NOT met'}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if len(sizes) >= 2:
        with tempfile.TemporaryDirectory() as tmp_name:
            growth(Path(tmp_name), sizes, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
