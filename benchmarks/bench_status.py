"""Time of ``gpusession status --format tmux`` against a bare ``python -c pass``, at two sizes of session (A5).

tmux runs ``#(gpusession status --format tmux)`` every few seconds (``status-interval``),
so the command must cost little more than starting Python, however long the session has
run. One real run (a command experiment: 2 variants, a load each and one for the warm
worker, 1 cold and 9 warm runs per variant, validated: 20 rows, 78 journal lines, 150
files) is made once; each session is built from it as a month of such runs would leave
it: its experiment defined again under new ids in ``session.toml``, its rows, journal
lines and ``runs/`` and ``validation/`` folders repeated per experiment (files hard-linked:
status never opens them), and ``summary.json`` refreshed as the runner leaves it. Sizes:
5 experiments (100 rows) and 500 experiments (10,000 rows, a 15 MB journal, 75,000 files).

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
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The ratio to ``python -c pass`` the tmux line must stay under.
TARGET = 5.0
#: The template experiment's id in the real run.
EXP = "sweep"

#: The program the real run measures: it copies each input's id and label (macro-F1 1.0).
PROGRAM = """\
import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as out:
    for line in src:
        if line.strip():
            rec = json.loads(line)
            out.write(json.dumps({"id": rec["id"], "label": rec["label"]}) + "\\n")
"""


def _gpusession(env: dict[str, str], cwd: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "gpusession", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"gpusession {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")


def _real_run(work: Path, env: dict[str, str]) -> Path:
    """One session with one experiment run for real (``run --headless``); its folder."""
    with open(work / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i in range(40):
            label = "a" if i % 2 == 0 else "b"
            fh.write(json.dumps({"id": f"t-{i:03d}", "text": f"{label} w w", "label": label}) + "\n")
    (work / "ids_labels.py").write_text(PROGRAM)
    root = work / "template"
    home = {**env, "GPUSESSION_HOME": str(root)}
    _gpusession(home, work, "new", "real", "--gpu", "RTX A5000", "--lots", "1", "--days", "30")
    _gpusession(home, work, "experiment", "real", "define", "--id", EXP, "--workload", "command",
                "--values", "1,2", "--runs", "9", "--warmup", "0", "--corpus", str(work / "corpus.jsonl"),
                "--classes", "a,b", "--threshold", "0.5",
                "--command", f"{sys.executable} {work / 'ids_labels.py'} {{corpus}} {{output}}")
    _gpusession(home, work, "run", "real", "--headless")
    return root / "real"


def _replicate(template: Path, root: Path, name: str, experiments: int) -> Path:
    """A session ``name`` holding ``experiments`` copies of the template's experiment, as runs leave it."""
    import tomli_w
    import tomllib

    from gpusession.core.retrieval.status import refresh_counts

    folder = root / name
    folder.mkdir(parents=True, mode=0o700)
    ids = [f"{EXP}-{k:03d}" for k in range(experiments)]
    for f in ("checklist.toml", "order.toml"):
        if (template / f).is_file():
            shutil.copy2(template / f, folder / f)
    doc = tomllib.loads((template / "session.toml").read_text("utf-8"))
    doc["name"] = name
    one = doc["experiments"].pop(EXP)
    doc["experiments"] = {i: one for i in ids}
    (folder / "session.toml").write_text(tomli_w.dumps(doc), "utf-8")
    header, *rows = (template / "resultats-bruts.csv").read_bytes().splitlines(keepends=True)
    assert all(r.startswith(f"{EXP},".encode()) for r in rows), "a row over two lines: replicate by the csv module"
    with open(folder / "resultats-bruts.csv", "wb") as fh:
        fh.write(header)
        for i in ids:
            fh.write(b"".join(i.encode() + r[len(EXP):] for r in rows))
    lines = (template / "journal.jsonl").read_text("utf-8").splitlines(keepends=True)
    first = next(n for n, ln in enumerate(lines) if '"experiment_started"' in ln)
    own = re.compile(rf'"{EXP}([":])')
    with open(folder / "journal.jsonl", "w", encoding="utf-8") as fh:
        fh.write("".join(lines[:first]).replace(f'"experiment_id": "{EXP}"', f'"experiment_id": "{ids[0]}"'))
        for i in ids:  # the runs of each experiment, as its run wrote them
            fh.write("".join(own.sub(rf'"{i}\1', ln) for ln in lines[first:]))
    for sub in ("runs", "validation"):
        for i in ids:
            shutil.copytree(template / sub / EXP, folder / sub / i, copy_function=os.link)
    for p in folder.rglob("*"):
        os.chmod(p, 0o700 if p.is_dir() else 0o600)
    refresh_counts(folder)  # summary.json as the runner leaves it after each row
    return folder


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
    # With PYTHONDONTWRITEBYTECODE set every start would recompile gpusession (an
    # install has its bytecode): the children run without it, as bench_startup's do.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("XDG_STATE_HOME", tempfile.mkdtemp(prefix="gpusession-bench-state-"))
    ratios: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        template = _real_run(work, env)
        print(f"one real run: {time.perf_counter() - t:.1f} s")
        for n in sizes:
            t = time.perf_counter()
            folder = _replicate(template, work / f"s{n}", f"bench-{n}", n)
            journal_mb = (folder / "journal.jsonl").stat().st_size / 1e6
            rows = sum(1 for _ in open(folder / "resultats-bruts.csv", "rb")) - 1
            print(f"{n} experiments, {rows:,} rows, journal {journal_mb:.1f} MB "
                  f"(built in {time.perf_counter() - t:.1f} s):")
            ratios.append((rows, _measure(work / f"s{n}", folder.name, args.runs, env)))
    if len(ratios) > 1:
        (small_rows, small), (large_rows, large) = ratios[0], ratios[-1]
        print(f"growth of the ratio from {small_rows:,} to {large_rows:,} rows: {large / small:.2f}x "
              f"({small:.2f}x → {large:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
