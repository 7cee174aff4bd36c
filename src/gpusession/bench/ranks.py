"""Several ranks in one run (issue 13): shards, the torchrun command line, a failed group.

Who calls it: the runner (:func:`torchrun_argv`, :func:`end_process_tree`,
:func:`torchrun_root_cause`) and the worker (:func:`rank_env`, :func:`shard_bounds`).
No torch here (M5: the runner and the UI import it); the process group and the protocol
across ranks, which need torch, are in :mod:`gpusession.bench.rank_group`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass


def shard_bounds(n_items: int, world_size: int, rank: int) -> tuple[int, int]:
    """The contiguous, deterministic shard ``[start, stop)`` of ``rank`` (issue 13).

    The first ``n_items % world_size`` ranks hold one item more; shards follow the
    rank order, so concatenating them by rank gives back the corpus order.

    Args:
        n_items: items in the corpus, ≥ 0.
        world_size: ranks, ≥ 1.
        rank: ``0 … world_size − 1``.

    Returns:
        ``(start, stop)`` indices; an empty shard is ``(k, k)``.

    Raises:
        ValueError: a negative count, a world size under 1, a rank outside the world.
    """
    if n_items < 0:
        raise ValueError(f"expected n_items ≥ 0, got {n_items}")
    if world_size < 1:
        raise ValueError(f"expected world_size ≥ 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"expected 0 ≤ rank < {world_size}, got {rank}")
    base, extra = divmod(n_items, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


@dataclass(frozen=True)
class RankEnv:
    """Where this process stands in a torchrun group (from its environment).

    Attributes:
        rank: global rank, 0-based.
        world_size: ranks in the group.
        local_rank: rank on this node; the GPU index it binds to.
    """

    rank: int
    world_size: int
    local_rank: int


def rank_env(environ: Mapping[str, str] | None = None) -> RankEnv | None:
    """The torchrun variables of this process, or ``None`` when it is not a rank.

    Args:
        environ: default ``os.environ``.

    Returns:
        ``None`` without ``WORLD_SIZE``/``RANK`` (a plain worker).

    Raises:
        ValueError: a variable that is not a whole number.
    """
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env or "RANK" not in env:
        return None
    return RankEnv(rank=int(env["RANK"]), world_size=int(env["WORLD_SIZE"]),
                   local_rank=int(env.get("LOCAL_RANK", env["RANK"])))


def torchrun_argv(python: str, nproc_per_node: int, module_argv: list[str]) -> list[str]:
    """The command line that starts ``nproc_per_node`` ranks of a module through torchrun.

    Args:
        python: the interpreter (``sys.executable``).
        nproc_per_node: ranks on this node (the experiment's ``gpus``).
        module_argv: ``["-m", "gpusession.bench.worker", "--spec", FILE]``.

    Returns:
        ``[python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", N,
        *module_argv]`` (single node, rendezvous on a free local port; issue 13).
    """
    return [python, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", str(nproc_per_node), *module_argv]


def end_process_tree(pid: int, grace_s: float = 5.0) -> None:
    """End a torchrun launcher and its ranks, ranks first (issue 13).

    torchrun starts each rank in its own session, so ending the launcher's process
    group does not reach them. The descendants are read (psutil) before anything is
    signalled, sent SIGTERM with the launcher, and killed after ``grace_s``.

    TODO(issue 13, signals): a rank should also end when its launcher dies
    (parent-death signal set in the rank) — hook the ``signals`` helper here.

    Args:
        pid: the launcher's PID.
        grace_s: seconds between SIGTERM and SIGKILL.
    """
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace_s)


@dataclass(frozen=True)
class RankFailure:
    """The rank torchrun names as the root cause of a failed group.

    Attributes:
        rank: the global rank.
        exitcode: its exit code, negative for a signal (as :mod:`subprocess` gives it).
        error: its error in one line when its stderr says it, else ``None``.
    """

    rank: int
    exitcode: int
    error: str | None = None


_ROOT_CAUSE = "Root Cause (first observed failure)"
_RANK_LINE = re.compile(r"^\s*rank\s*:\s*(\d+)")
_EXIT_LINE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit))\b:?\s*(.*)$")


def torchrun_root_cause(lines: list[str]) -> RankFailure | None:
    """Read torchrun's failure summary on stderr: which rank failed first, its exit code.

    Args:
        lines: the launcher's stderr lines (the ranks' stderr is interleaved there).

    Returns:
        ``None`` when torchrun reported no failed rank. The error is the rank's
        incident line (``rank N: {...}``) when it sent one, else the last exception
        line of stderr that is not torchrun's own.
    """
    try:
        start = max(i for i, line in enumerate(lines) if _ROOT_CAUSE in line)
    except ValueError:
        return None
    rank = code = None
    for line in lines[start:]:
        if rank is None and (m := _RANK_LINE.match(line)):
            rank = int(m.group(1))
        elif code is None and (m := _EXIT_LINE.match(line)):
            code = int(m.group(1))
    if rank is None or code is None:
        return None
    error = None
    prefix = f"rank {rank}: "
    for line in lines:
        if line.startswith(prefix + "{"):
            try:
                doc = json.loads(line[len(prefix):])
            except json.JSONDecodeError:
                continue
            error = f"{doc.get('error_type')}: {doc.get('message')}"
    if error is None:
        for line in lines:
            m = _EXC_LINE.match(line.strip())
            if m and "ChildFailedError" not in m.group(1):
                error = line.strip()
    return RankFailure(rank=rank, exitcode=code, error=error)


__all__ = [
    "RankEnv",
    "RankFailure",
    "end_process_tree",
    "rank_env",
    "shard_bounds",
    "torchrun_argv",
    "torchrun_root_cause",
]
