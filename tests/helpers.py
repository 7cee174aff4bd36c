"""Helpers the test folders share (``tests/`` is on pytest's ``pythonpath``: ``from helpers import ...``).

Fixtures live in ``tests/conftest.py``; plain functions and constants live here, so a test
can call them with its own arguments. Fake workloads (imported by worker subprocesses)
are in ``tests/fake_workloads.py``; the UI's fake clock, NVML and runner are in
:mod:`gpusession.testing`.
"""

from __future__ import annotations

import hashlib
import re
import signal
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from subprocess import CompletedProcess

    from gpusession.core.folder.session import Session

#: Start of the package of the ``session`` fixture: fixed, so dates in assertions do not move.
SESSION_START = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)

#: The "now" of every test (``$GPUSESSION_NOW``, set by ``conftest._clock``): an hour into
#: the package of the ``session`` fixture, so no test depends on today's date (A6).
TEST_NOW = SESSION_START + timedelta(hours=1)

#: The type of the ``run_cli`` fixture: ``run_cli("show", name, env=..., timeout=...)``.
RunCli = Callable[..., "CompletedProcess[str]"]

#: The type of the ``new_session`` fixture: ``new_session(name="visuals-test-01", package=...)``.
NewSession = Callable[..., "Session"]


def cli(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    """Run ``gpusession --sessions-dir ROOT ARGS...`` in this process: (exit code, stdout, stderr)."""
    from gpusession.cli import main

    try:
        code = main(["--sessions-dir", str(root), *args])
    except SystemExit as exc:  # argparse refuses an argument with exit 2
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    """The one line of ``err`` (asserting there is exactly one and no traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def digest(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` by relative path: compare before/after."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


#: The ids of docs/rules.md (V1–V8, R1–R11, M1–M5, C1–C5, K1–K7, S1–S7, D1–D9) and
#: H-01…H-38. GPU names (A5000, H100, V100) do not match: a letter then one or two
#: digits, alone.
#: Also section references (``G§2``, ``§4``) and seed documents (``seed 003``): a rule
#: said by its source, not in words. A random seed (``seed 0``) is words and passes.
RULE_ID = re.compile(r"(?<![\w-])(?:[VRMCKSD]\d{1,2}|H-\d{2})(?![\w-])|\w*§[\w–-]*|\b[Ss]eed 0\d\d")


def ids_in(text: str) -> list[str]:
    """The rule ids named in ``text`` (sorted, each once): what a person must never read."""
    return sorted({m.group(0) for m in RULE_ID.finditer(text)})


def wait_for(what: Callable[[], object], timeout_s: float = 30.0, step_s: float = 0.05) -> object:
    """Poll ``what()`` until it returns something true; that value (AssertionError after ``timeout_s``)."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(step_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def hangup_default() -> None:
    """A child's ``preexec_fn``: SIGHUP ends it, whatever the suite inherited (``nohup pytest``)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def alive(pid: int, create_time_s: float | None) -> bool:
    """Whether the process recorded as (PID, start time) still runs (not a zombie, not a reused PID)."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        return create_time_s is None or abs(p.create_time() - create_time_s) < 0.05
    except psutil.Error:
        return False


def processes_naming(path: Path | str) -> list[object]:
    """Live processes (psutil) with ``path`` in an argument of their command line (zombies left out)."""
    import psutil

    out: list[object] = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and any(str(path) in a for a in (p.info["cmdline"] or [])):
                out.append(p)
        except psutil.Error:
            pass
    return out


def rank_experiment(session: Session, exp_id: str, **kw: object) -> object:
    """Define an experiment of the ``fake_workloads:RankEcho`` workload on a 9-text corpus.

    Defaults: batch 2 and 4, one warm run each, no warm-up, no cold run, accuracy ≥ 0.9 over
    classes a/b, on the CPU, 120 s run timeout; ``kw`` overrides any field of
    :class:`gpusession.core.experiment.plan.Experiment` (``gpus``, ``nodes``, ``rendezvous``…).
    """
    from fake_workloads import write_corpus

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=9, words=3)
    base: dict[str, object] = dict(
        id=exp_id, workload="fake_workloads:RankEcho", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(2, 4), runs_per_variant=1, warmup_iterations=0,
        cold_runs_per_variant=0, protocol={"classes": ["a", "b"], "metric": "accuracy",
                                           "threshold": 0.9, "tolerance": 0.0},
        device="cpu", run_timeout_s=120.0,
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))  # type: ignore[arg-type]


#: A command that writes ``v-1.png`` … ``v-N.png`` into its ``{output}`` folder (rule experiments).
RENDER = """\
import sys, pathlib
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
for i in range(1, n + 1):
    (out / f"v-{i}.png").write_bytes(b"\\x89PNG\\r\\n\\x1a\\n" + bytes([i]) * 20)
"""
RULE = """\
import sys, pathlib
pathlib.Path(sys.argv[2]).write_text("ran")
print(sys.argv[3])
sys.exit(int(sys.argv[4]))
"""


def define_render_rule(capsys: pytest.CaptureFixture[str], root: Path, s: Session, *, exit_code: int, count: int = 3,
            extra: tuple[str, ...] = ()) -> tuple[int, str, str]:
    """Define ``render`` in ``s``: a command writing ``count`` PNG files, names listed in
    ``expected.txt``, the png format, and a rule that prints its reason and exits ``exit_code``
    (S9). Returns ``cli``'s ``(exit code, stdout, stderr)``."""
    (s.folder / "render.py").write_text(RENDER)
    (s.folder / "rule.py").write_text(RULE)
    (s.folder / "expected.txt").write_text("v-1.png\nv-2.png\nv-3.png\n")
    marker = s.folder / "rule-ran"
    return cli(capsys, root, "experiment", s.name, "define", "--id", "render", "--workload", "command",
               "--values", "1,2", "--runs", "2", "--warmup", "0",
               "--command", f"{sys.executable} render.py {{output}} {count}",
               "--expected-outputs", "expected.txt", "--deliverable-format", "png",
               "--accept", f"{sys.executable} rule.py {{output}} {marker} 'text cut at the edge' {exit_code}",
               *extra)


def run_rule_experiment(capsys: pytest.CaptureFixture[str], root: Path, s: Session) -> None:
    """Declare the unit ``visual``, define :func:`define_render_rule` (a rule that accepts) and run it."""
    assert cli(capsys, root, "package", s.name, "--unit", "visual")[0] == 0
    assert define_render_rule(capsys, root, s, exit_code=0)[0] == 0
    code, out, err = cli(capsys, root, "run", s.name, "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
