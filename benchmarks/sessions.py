"""Sessions as a month of real runs leaves them, built once for the benchmarks that grow with a session (A5).

Why: ``bench_status.py``, ``bench_run_boundary.py``, ``bench_pull.py``, ``bench_report.py``
and ``bench_startup.py`` each measure a figure at two sizes of session (5 and 500
experiments); they must measure the same sessions, so the recipe lives here, once.

One real run (``gpusession run --headless`` of a command experiment: 2 variants, 1 cold
and 9 warm runs each, validated; 20 rows, 78 journal lines, about 150 files) is made
once; each session is built from it as a month of such runs would leave it: its
experiment defined again under new ids in ``session.toml``, its rows, journal lines and
``runs/`` and ``validation/`` folders repeated per experiment (files hard-linked), and
``summary.json`` refreshed as the runner leaves it. At 500 experiments: 10,000 rows, a
15 MB journal, about 71,000 files. :func:`deliverables` adds a folder of approved files
beside a session (``bench_pull.py``).

Who calls it: the benchmark scripts, run as ``python benchmarks/X.py`` (this folder is
then on ``sys.path``: ``import sessions``). Run by itself it builds the sessions and prints
their shape: ``python benchmarks/sessions.py [--experiments 5,500] [--deliverables]
[--keep DIR]`` (``--keep``: build into DIR and leave them there, to profile by hand).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: The template experiment's id in the real run.
EXP = "sweep"
#: Rows one experiment of the real run writes (2 variants × (1 cold + 9 warm)).
ROWS_PER_EXPERIMENT = 20
#: Deliverables per experiment (:func:`deliverables`), and the bytes of each.
DELIVERABLES_PER_EXPERIMENT = 4
DELIVERABLE_BYTES = 64 * 1024

#: The program the real run measures: it copies each input's id and label (macro-F1 1.0).
PROGRAM = """\
import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as out:
    for line in src:
        if line.strip():
            rec = json.loads(line)
            out.write(json.dumps({"id": rec["id"], "label": rec["label"]}) + "\\n")
"""


def child_env(state: Path | None = None) -> dict[str, str]:
    """The environment of the benchmarks' child processes.

    Without ``PYTHONDONTWRITEBYTECODE`` (with it every start would recompile gpusession;
    an install has its bytecode), and with ``XDG_STATE_HOME`` set (given, inherited, else a
    new temporary folder) so that the state caches a command keeps are the benchmark's own.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if state is not None:
        env["XDG_STATE_HOME"] = str(state)
    env.setdefault("XDG_STATE_HOME", tempfile.mkdtemp(prefix="gpusession-bench-state-"))
    return env


def gpusession(env: dict[str, str], cwd: Path, *args: str) -> None:
    """Run ``python -m gpusession ARGS`` in ``cwd``; exit the benchmark with its stderr when it fails."""
    done = subprocess.run([sys.executable, "-m", "gpusession", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"gpusession {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")


def real_run(work: Path, env: dict[str, str]) -> Path:
    """One session with one experiment run for real (``run --headless``) under ``work/template``; its folder."""
    with open(work / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i in range(40):
            label = "a" if i % 2 == 0 else "b"
            fh.write(json.dumps({"id": f"t-{i:03d}", "text": f"{label} w w", "label": label}) + "\n")
    (work / "ids_labels.py").write_text(PROGRAM)
    root = work / "template"
    home = {**env, "GPUSESSION_HOME": str(root)}
    gpusession(home, work, "new", "real", "--gpu", "RTX A5000", "--lots", "1", "--days", "30")
    gpusession(home, work, "experiment", "real", "define", "--id", EXP, "--workload", "command",
               "--values", "1,2", "--runs", "9", "--warmup", "0", "--corpus", str(work / "corpus.jsonl"),
               "--classes", "a,b", "--threshold", "0.5",
               "--command", f"{sys.executable} {work / 'ids_labels.py'} {{corpus}} {{output}}")
    gpusession(home, work, "run", "real", "--headless")
    return root / "real"


def replicate(template: Path, root: Path, name: str, experiments: int) -> Path:
    """A session ``root/name`` holding ``experiments`` copies of the template's experiment, as runs leave it."""
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


def deliverables(folder: Path, experiments: int) -> Path:
    """A folder ``NAME-out`` of approved deliverables beside the session (distinct bytes each); its path.

    :data:`DELIVERABLES_PER_EXPERIMENT` files of :data:`DELIVERABLE_BYTES` per experiment,
    one sub-folder per experiment.
    """
    out = folder.parent / f"{folder.name}-out"
    for k in range(experiments * DELIVERABLES_PER_EXPERIMENT):
        sub = out / f"exp-{k // DELIVERABLES_PER_EXPERIMENT:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        head = f"deliverable {k}\n".encode()
        (sub / f"chart-{k:05d}.bin").write_bytes(head + bytes(DELIVERABLE_BYTES - len(head)))
    return out


@dataclass(frozen=True)
class Built:
    """One session built for a benchmark.

    Attributes:
        experiments: how many copies of the real run's experiment it holds.
        root: its sessions folder (``GPUSESSION_HOME``).
        folder: the session folder (``root/name``).
        rows: rows of its ``resultats-bruts.csv``.
        journal_bytes: size of its ``journal.jsonl``.
        built_s: seconds the replication took.
    """

    experiments: int
    root: Path
    folder: Path
    rows: int
    journal_bytes: int
    built_s: float

    @property
    def name(self) -> str:
        """The session's name (``bench-N``)."""
        return self.folder.name

    def home_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with ``GPUSESSION_HOME`` set to this session's sessions folder."""
        return {**env, "GPUSESSION_HOME": str(self.root)}

    def shape(self) -> str:
        """``500 experiments, 10,000 rows, journal 15.0 MB`` (the line a benchmark prints)."""
        return (f"{self.experiments} experiments, {self.rows:,} rows, journal "
                f"{self.journal_bytes / 1e6:.1f} MB")


@contextlib.contextmanager
def _state_home(env: dict[str, str]) -> Iterator[None]:
    """This process's ``$XDG_STATE_HOME`` set to the children's while the block runs.

    Why: ``replicate`` writes ``summary.json`` in this process, sealed under the key of
    ``$XDG_STATE_HOME``; sealed under another key than the children's, every ``status`` of
    the benchmark would read it as a stranger's and recount the session (not what a user's
    runs leave).
    """
    before = os.environ.get("XDG_STATE_HOME")
    if "XDG_STATE_HOME" in env:
        os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = before


def build(work: Path, env: dict[str, str], sizes: list[int]) -> Iterator[Built]:
    """One real run replicated to each size of ``sizes``, under ``work/sN/bench-N``, one at a time.

    Prints the time of the real run. A generator: a benchmark measures each session as it
    is built (the next one is built when asked for).
    """
    t = time.perf_counter()
    template = real_run(work, env)
    print(f"one real run: {time.perf_counter() - t:.1f} s")
    for n in sizes:
        t = time.perf_counter()
        with _state_home(env):  # summary.json sealed under the key the children read (H-78)
            folder = replicate(template, work / f"s{n}", f"bench-{n}", n)
        rows = sum(1 for _ in open(folder / "resultats-bruts.csv", "rb")) - 1
        yield Built(n, work / f"s{n}", folder, rows, (folder / "journal.jsonl").stat().st_size,
                    time.perf_counter() - t)


def main() -> int:
    """Build the sessions, print the shape of each; keep them with ``--keep``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", default="5,500",
                    help="experiments per session, comma-separated (20 rows each; default 5,500)")
    ap.add_argument("--deliverables", action="store_true",
                    help="a folder of approved deliverables beside each session, and its manifest")
    ap.add_argument("--keep", type=Path, help="build into this folder (new or empty) and leave the sessions there")
    args = ap.parse_args()
    sizes = [int(x) for x in args.experiments.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep.absolute() if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = child_env(work / "state" if args.keep else None)
        for b in build(work, env, sizes):
            extra = ""
            if args.deliverables:
                out = deliverables(b.folder, b.experiments)
                gpusession(b.home_env(env), work, "manifest", b.name, "--deliverables", str(out))
                extra = f", {b.experiments * DELIVERABLES_PER_EXPERIMENT:,} deliverables in {out}"
            files = sum(len(f) for _, _, f in os.walk(b.folder))
            print(f"{b.folder}: {b.shape()}, {files:,} files{extra} (built in {b.built_s:.1f} s)")
        if args.keep:
            print(f"kept; XDG_STATE_HOME={env['XDG_STATE_HOME']} GPUSESSION_HOME={work}/sN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
