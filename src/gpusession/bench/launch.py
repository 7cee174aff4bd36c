"""What starts a worker group: its spec file, its environment, its command line, its launcher.

Who calls it: :class:`gpusession.bench.runner.Runner`, once per worker group. The spec
says what the worker runs (its runs, its warm-up, where its output goes); the command
line is plain ``python -m gpusession.bench.worker --spec FILE``, or the same through
torchrun for a rank group (:mod:`gpusession.bench.ranks`).

The runner receives a :class:`Launcher` (the seam between the engine and its processes,
after hyperfine's ``Executor``): :class:`ProcessLauncher` starts the real subprocess
(:class:`~gpusession.bench.process.WorkerProcess`); a test passes one whose workers
replay typed events in the same process (``tests/fake_launcher.py``), so scheduling,
stops, resume and recording are tested without a subprocess. No torch here (M5).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import deque
from pathlib import Path
from queue import Queue
from typing import Any, Protocol

from gpusession.bench.process import WorkerProcess
from gpusession.bench.ranks import LEADER_ENV, join_timeout_s, rendezvous_id, torchrun_argv
from gpusession.bench.rows import LoadSlot
from gpusession.bench.stacks import STACK_DIR_ENV
from gpusession.core.experiment.form import resolve_corpus
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.files.safefile import make_private_dir, write_private_bytes
from gpusession.core.folder.processes import ProcessId
from gpusession.core.folder.recovery import SPEC_PREFIX
from gpusession.core.folder.session import Session
from gpusession.core.validation.accept_rule import output_suffix


class WorkerHandle(Protocol):
    """A started worker as the runner and its supervisor see it.

    Attributes:
        events: its typed worker events (:mod:`gpusession.core.events`) as they come,
            then :data:`~gpusession.bench.process.EOF_EVENT` once it said all.
        stderr: its last stderr lines.
        ident: its PID and start time, as journaled (H-14).
        ended: what was ended after it exited, ``(pid, name)`` each (H-25).
    """

    events: Queue[Any]
    stderr: deque[str]
    ident: ProcessId
    ended: list[tuple[int, str]]

    def send(self, text: str) -> None:
        """Write ``"go"`` / ``"stop"`` to the worker (a run boundary, H-12)."""

    def last_stderr(self) -> str | None:
        """Its last stderr line that says something, secrets hidden; ``None`` when none."""

    def finish(self, timeout: float = 30.0) -> int | None:
        """Wait for the exit (ending it after ``timeout`` seconds); the exit code."""

    def end_group(self) -> list[int]:
        """End it and everything it started, now; the PIDs signalled."""


class Launcher(Protocol):
    """What starts a worker: the runner's only way to one (a seam for tests)."""

    def start(self, argv: list[str], env: dict[str, str], spec: dict[str, Any]) -> WorkerHandle:
        """Start the worker of ``spec`` with ``argv`` (no shell) and ``env``.

        Raises:
            OSError: the program cannot be started.
        """


class ProcessLauncher:
    """Starts each worker as a subprocess of its own (:class:`WorkerProcess`, H-14)."""

    def start(self, argv: list[str], env: dict[str, str], spec: dict[str, Any]) -> WorkerProcess:
        """The started subprocess (``spec`` is already in the file ``argv`` names)."""
        return WorkerProcess(argv, env)


#: What a torchrun environment of the caller's shell would leave a plain worker: it would
#: take itself for a rank.
_RANK_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
             "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", LEADER_ENV)


def worker_spec(session: Session, exp: Experiment, name: str, group: list[ScheduledRun],
                device: str | None) -> dict[str, Any]:
    """The worker's spec (JSON-ready): the group's runs, its warm-up, its paths.

    Args:
        session: the open session (corpus and output folders).
        exp: the experiment.
        name: the worker's name.
        group: the group's scheduled runs, in order.
        device: the device override of this invocation, ``None`` for the experiment's.
    """
    def path(value: str | None) -> Path | None:
        return resolve_corpus(session.folder, value) if value else None

    runs = [{"phase": r.phase, "variant_id": r.variant_id, "run_index": r.run_index,
             "run_key": r.run_key, **exp.setting(r.variant_id)} for r in group]
    warm = group[0].phase == "warm"
    params = {k: (str(path(v)) if k.endswith("_dir") else v) for k, v in exp.params.items()}
    return {
        "worker": name,
        "experiment": {**exp.to_toml(), "id": exp.id, "params": params},
        "device": device or exp.device,
        "corpus": str(path(exp.corpus)) if exp.corpus else None,
        "output_dir": str(session.runs_dir / exp.id),
        "output_suffix": output_suffix(exp.protocol),
        "runs": runs,
        "warmup": ([{"variant_id": v, **exp.setting(v)} for v in exp.variant_ids] if warm else []),
        "warmup_iterations": exp.warmup_iterations if warm else 0,
        "code_dir": str(Path(__file__).resolve().parent) if exp.workload in ("bbc-news", "synthetic-mlp")
        else exp.params.get("code_dir"),
    }


def write_spec(session: Session, exp: Experiment, name: str, spec: dict[str, Any],
               slot: LoadSlot) -> Path:
    """Write the group's worker spec, private, under ``runs/<experiment>/``; return its path."""
    spec_dir = session.runs_dir / exp.id
    make_private_dir(spec_dir, root=session.folder)  # 0700, never through a link
    spec_path = spec_dir / f"{SPEC_PREFIX}{name}.json"
    spec["load_run_key"] = slot.key.local  # the load's key in ranks.csv
    write_private_bytes(spec_path, json.dumps(spec, default=str).encode())
    return spec_path


def worker_env(ranked: bool) -> tuple[dict[str, str], str | None]:
    """The worker's environment (this package first on ``PYTHONPATH``) and its stack folder.

    A torchrun group (``ranked``) gets a fresh folder where each rank says where it stands
    when a run times out (:mod:`gpusession.bench.stacks`); one process gets ``None``.
    """
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    stack_dir = tempfile.mkdtemp(prefix="gpusession-stacks-") if ranked else None
    env.pop(STACK_DIR_ENV, None)
    if stack_dir is not None:
        env[STACK_DIR_ENV] = stack_dir
    return env, stack_dir


def worker_argv(python: str, exp: Experiment, spec_path: Path, env: dict[str, str], *,
                ranked: bool) -> list[str]:
    """The worker's command line: plain, or through torchrun when ``ranked``.

    A plain worker never inherits a torchrun environment of the caller's shell
    (``RANK``, ``WORLD_SIZE``…): it would take itself for a rank. ``env`` is changed
    in place.
    """
    module = ["-m", "gpusession.bench.worker", "--spec", str(spec_path)]
    for k in _RANK_ENV:
        env.pop(k, None)
    if not ranked:
        return [python, *module]
    env[LEADER_ENV] = "1"  # this node's local rank 0 talks to the runner
    return torchrun_argv(python, exp.gpus, module, nodes=exp.nodes,
                         rendezvous=exp.rendezvous,
                         run_id=rendezvous_id(exp.id, spec_path.stem.removeprefix(SPEC_PREFIX)),
                         join_timeout_s=join_timeout_s(exp.run_timeout_s))


__all__ = ["Launcher", "ProcessLauncher", "WorkerHandle", "worker_argv", "worker_env",
           "worker_spec", "write_spec"]
