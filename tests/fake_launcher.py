"""An in-process launcher for the runner: each worker replays typed events, no subprocess.

It stands behind the same interface as :class:`gpusession.bench.launch.ProcessLauncher`
(:class:`gpusession.bench.launch.Launcher`): the runner writes the spec, builds the command
line and the environment as for a real worker, then :meth:`ReplayLauncher.start` hands
back a :class:`ReplayWorker` that follows the worker's protocol (H-12): its preamble
(environment, loaded), then ``ready`` before each run; ``go`` replays that run's events,
``stop`` says ``stopped`` and ends. What a run does is a function of the spec: by default
it writes the corpus back as its output (every ID, every label: a valid result), as the
``command`` tests' copy script does.

Tests of scheduling, stops, resume and recording use it; a small set of end-to-end tests
keeps the real processes (every workload kind, torchrun, signals, kills).
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gpusession.bench.runner as runner_module
from gpusession.bench.process import EOF_EVENT
from gpusession.core.events import (
    WorkerApplied,
    WorkerDone,
    WorkerEnvironment,
    WorkerLoaded,
    WorkerReady,
    WorkerRunFinished,
    WorkerRunStarted,
    WorkerStopped,
    WorkerWarmupDone,
)
from gpusession.core.folder.processes import ProcessId

#: ``(spec, run, output path, order)`` → the events of one run after its ``go``
#: (``run_started`` is sent before them, as the real worker does).
RunScript = Callable[[dict[str, Any], dict[str, Any], Path, int], list[Any]]
#: ``spec`` → the events before the first ``ready``.
LoadScript = Callable[[dict[str, Any]], list[Any]]


_DEAD_PID: list[int] = []


def dead_pid() -> int:
    """A PID no process held since the tests began (what the journal records for a replayed worker).

    One short child, once: a later run never ends a process that reused it, since the
    journal records no start time for it (:func:`gpusession.core.folder.processes.end_recorded`
    skips such records).
    """
    if not _DEAD_PID:
        proc = subprocess.Popen(["true"])
        proc.wait()
        _DEAD_PID.append(proc.pid)
    return _DEAD_PID[0]


def loaded(spec: dict[str, Any]) -> list[Any]:
    """The default preamble, as the real worker says it: the environment on the CPU, the load
    (half a second; none for a ``command`` workload, which loads nothing), then the warm-up
    a warm worker announces, every iteration done."""
    exp = spec["experiment"]
    command = exp.get("workload") == "command"
    out: list[Any] = [] if command else [WorkerApplied(
        seed=exp.get("seed", 0), seeded=["random", "torch"],
        precision=None if exp.get("varied") == "precision" else exp.get("precision", "fp32"),
        context_limit=exp.get("context_limit"), params=dict(exp.get("params", {})))]
    out += [WorkerEnvironment(environment={"device": "cpu", "python_version": "3"}),
            WorkerLoaded(elapsed_s=None if command else 0.5, revisions={})]
    n = spec.get("warmup_iterations", 0)
    if n:
        per = {w["variant_id"]: n for w in spec["warmup"]}
        out.append(WorkerWarmupDone(iterations=n, runs=sum(per.values()), per_variant=per))
    return out


def copy_corpus(spec: dict[str, Any], run: dict[str, Any], out: Path, order: int,
                *, elapsed_s: float = 0.25) -> list[Any]:
    """A run that writes the corpus back (every ID with its label) and took ``elapsed_s``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(spec["corpus"], encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for line in src:
            if line.strip():
                rec = json.loads(line)
                dst.write(json.dumps({"id": rec["id"], "label": rec["label"]}) + "\n")
    warm = spec.get("warmup_iterations", 0) if run["phase"] == "warm" else 0
    took, offered = echo(spec, run)
    return [WorkerRunFinished(run_key=run["run_key"], ok=True, elapsed_s=elapsed_s, output=str(out),
                              phase=run["phase"], scope="full-chain", order=order,
                              warmup_iterations=warm, applied=took, offered=offered)]


def echo(spec: dict[str, Any], run: dict[str, Any]) -> tuple[dict[str, Any], list[str] | None]:
    """What the real worker echoes of one run (A2): a Python workload every setting; a command
    those its arguments take (``{batch}``, ``{seed}``…), the others offered as variables."""
    exp = spec["experiment"]
    values = {"batch": run["batch"], "context": run.get("context"), "seed": exp.get("seed"),
              "precision": run.get("precision", exp.get("precision"))}
    if exp.get("workload") != "command":
        return {**values, "params": dict(run.get("params", exp.get("params", {})))}, None
    argv = [str(a) for a in exp.get("params", {}).get("command", [])]
    took = {k: v for k, v in values.items() if v is not None and any(f"{{{k}}}" in a for a in argv)}
    return took, [k for k, v in values.items() if v is not None and k not in took]


def session_of(spec: dict[str, Any]) -> Path:
    """The session folder of a worker's spec (its output folder is ``runs/<experiment>``)."""
    return Path(spec["output_dir"]).parent.parent


def keeping(n: int, *, when: Callable[[dict[str, Any]], bool] = lambda _spec: True) -> RunScript:
    """A run that writes only the corpus's first ``n`` records back (``when`` the spec says so).

    The ``command`` tests' script that drops IDs, as a replayed run: the output then fails
    validation (V1), the first-result gate's case (D3).
    """
    def run(spec: dict[str, Any], run: dict[str, Any], out: Path, order: int) -> list[Any]:
        events = copy_corpus(spec, run, out, order)
        if when(spec):
            kept = out.read_text(encoding="utf-8").splitlines()[:n]
            out.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        return events

    return run


class ReplayWorker:
    """One replayed worker: the surface of :class:`~gpusession.bench.process.WorkerProcess`.

    Args:
        spec: the worker's spec as the runner wrote it.
        pid: the PID journaled for it (one no process holds).
        load: the preamble.
        run: each run's events.
        stderr: its stderr lines.
        code: its exit code; ``None``: 0, or ``-SIGKILL`` when it was ended.
    """

    def __init__(self, spec: dict[str, Any], pid: int, *, load: LoadScript, run: RunScript,
                 stderr: list[str], code: int | None) -> None:
        self.spec = spec
        self.ident = ProcessId(pid=pid, create_time_s=None)
        self.events: queue.Queue[Any] = queue.Queue()
        self.stderr: deque[str] = deque(stderr, maxlen=200)
        self.ended: list[tuple[int, str]] = []
        self.sent: list[str] = []
        self._run = run
        self._code = code
        self._killed = False
        self._order = 0
        self._done = False
        for ev in load(spec):
            self.events.put(ev)
        self._next_ready()

    def _next_ready(self) -> None:
        runs = self.spec["runs"]
        if self._order < len(runs):
            self.events.put(WorkerReady(run_key=runs[self._order]["run_key"]))
        else:
            self._end(WorkerDone())

    def _end(self, last: Any) -> None:
        if not self._done:
            self._done = True
            self.events.put(last)
            self.events.put(EOF_EVENT)

    def send(self, text: str) -> None:
        """The runner's ``go`` replays the next run; ``stop`` ends the worker (H-12)."""
        self.sent.append(text)
        if self._done or self._killed:
            return
        run = self.spec["runs"][self._order]
        if text != "go":
            self._end(WorkerStopped(run_key=run["run_key"]))
            return
        self._order += 1
        out = Path(self.spec["output_dir"]) / run["variant_id"] / f"{run['phase']}-{run['run_index']}.jsonl"
        self.events.put(WorkerRunStarted(run_key=run["run_key"]))
        for ev in self._run(self.spec, run, out, self._order):
            self.events.put(ev)
        self._next_ready()

    def last_stderr(self) -> str | None:
        """The last stderr line that says something, as the real worker's."""
        from gpusession.bench.process import WorkerProcess

        return WorkerProcess.last_stderr(self)  # type: ignore[arg-type]

    def finish(self, timeout: float = 30.0) -> int | None:
        """The exit code: the script's, else 0 (``-SIGKILL`` once ended)."""
        if self._code is not None:
            return self._code
        return -signal.SIGKILL if self._killed else 0

    def end_group(self) -> list[int]:
        """Ended from outside (a timeout, an interrupt): what is left unsaid is lost."""
        if not self._done:
            self._killed = True
            self._done = True
            self.events.put(EOF_EVENT)
        return []


class ReplayLauncher:
    """Starts :class:`ReplayWorker` s (the :class:`gpusession.bench.launch.Launcher` interface).

    Args:
        load: each worker's preamble (default :func:`loaded`).
        run: each run's events (default :func:`copy_corpus`).
        stderr: each worker's stderr lines.
        code: each worker's exit code (``None``: 0, or ``-SIGKILL`` once ended).

    Attributes:
        workers: every worker started, in order (its ``spec``, what it was ``sent``).
    """

    def __init__(self, *, load: LoadScript = loaded, run: RunScript = copy_corpus,
                 stderr: list[str] | None = None, code: int | None = None) -> None:
        self.load = load
        self.run = run
        self.stderr = stderr or []
        self.code = code
        self.workers: list[ReplayWorker] = []

    def start(self, argv: list[str], env: dict[str, str], spec: dict[str, Any]) -> ReplayWorker:
        """A replayed worker for ``spec`` (``argv`` and ``env`` are built as for a real one)."""
        assert "--spec" in argv and env.get("PYTHONPATH")
        w = ReplayWorker(spec, dead_pid(), load=self.load, run=self.run, stderr=list(self.stderr),
                         code=self.code)
        self.workers.append(w)
        return w


def replay_everywhere(monkeypatch: pytest.MonkeyPatch, launcher: ReplayLauncher) -> ReplayLauncher:
    """Every :class:`~gpusession.bench.runner.Runner` made without a launcher gets ``launcher``.

    For the tests that run through the CLI or the TUI, which build their own runner.
    """
    monkeypatch.setattr(runner_module, "default_launcher", lambda: launcher)
    return launcher
