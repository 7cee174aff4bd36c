"""Several ranks in one run: shards, the torchrun command line, a failed group.

Who calls it: the runner (:func:`torchrun_argv`, :func:`torchrun_root_cause`; a
torchrun group is ended like any worker, by
:meth:`gpusession.bench.process.WorkerProcess.end_group`, which reaches the ranks in
their own sessions) and the worker (:func:`rank_env`, :func:`shard_bounds`); both sides
read stderr with :func:`is_decoration` (a module that neither side owns: the two sides
of ``bench`` never import each other).
No torch here (M5: the runner and the UI import it); the process group and the protocol
across ranks, which need torch, are in :mod:`gpusession.bench.rank_group`.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass

from gpusession.core.events import WorkerIncident, event_from_json
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_json


class DeviceUnavailable(RuntimeError):
    """The device the experiment asks for is not there (no GPU, or fewer than its ranks).

    Raised in a worker or a rank before anything is loaded; every worker of the run would
    fail the same way, so the runner stops the experiment at the first one
    (:data:`gpusession.bench.runner.UNMENDABLE_LOAD_ERRORS`).
    """


def shard_bounds(n_items: int, world_size: int, rank: int) -> tuple[int, int]:
    """The contiguous, deterministic shard ``[start, stop)`` of ``rank``.

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
        leader_claim: ``True`` for local rank 0 of the node the runner started
            (:data:`LEADER_ENV` is ``"1"``), ``False`` on another node, ``None`` when
            the variable is absent (then rank 0 leads).
    """

    rank: int
    world_size: int
    local_rank: int
    leader_claim: bool | None = None

    @property
    def speaks_first(self) -> bool:
        """Whether this rank talks to the runner before the group has formed."""
        return self.leader_claim if self.leader_claim is not None else self.rank == 0


#: Set to ``"1"`` by the runner for the torchrun agent it starts: that node's local rank 0
#: leads the group (talks to the runner, gathers the outputs), wherever the rendezvous
#: puts global rank 0 (c10d orders nodes by address and PID, not by who started first).
LEADER_ENV = "GPUSESSION_LEADER_NODE"


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
    local_rank = int(env.get("LOCAL_RANK", env["RANK"]))
    flag = env.get(LEADER_ENV)
    claim = None if flag is None else (flag == "1" and local_rank == 0)
    return RankEnv(rank=int(env["RANK"]), world_size=int(env["WORLD_SIZE"]),
                   local_rank=local_rank, leader_claim=claim)


def torchrun_argv(python: str, nproc_per_node: int, module_argv: list[str], *, nodes: int = 1,
                  rendezvous: str | None = None, run_id: str | None = None,
                  host: bool = True, join_timeout_s: int | None = None) -> list[str]:
    """The command line that starts ``nproc_per_node`` ranks of a module through torchrun.

    Args:
        python: the interpreter (``sys.executable``).
        nproc_per_node: ranks on this node (the experiment's ``gpus``).
        module_argv: ``["-m", "gpusession.bench.worker", "--spec", FILE]``.
        nodes: nodes in the group (the experiment's ``nodes``).
        rendezvous: ``"host:port"`` of the c10d rendezvous, needed when ``nodes > 1``.
        run_id: the rendezvous id, the same on every node (one per worker group).
        host: this agent hosts the rendezvous store (the runner's node) — ``False``
            for the command of the other nodes.
        join_timeout_s: seconds the rendezvous waits for every node (c10d's
            ``join_timeout``; torch's default, 600 s, when ``None``).

    Returns:
        One node: ``[python, "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node", N, *module_argv]`` (a free local port). Several nodes:
        ``--nnodes``, ``--rdzv-backend c10d``, ``--rdzv-endpoint``, ``--rdzv-id`` and
        ``--rdzv-conf is_host=1|0`` instead of ``--standalone``.

    Raises:
        ValueError: ``nodes > 1`` without a rendezvous endpoint or id.
    """
    head = [python, "-m", "torch.distributed.run"]
    if nodes <= 1:
        return [*head, "--standalone", "--nproc-per-node", str(nproc_per_node), *module_argv]
    if not rendezvous or not run_id:
        raise ValueError("several nodes need a rendezvous endpoint (host:port) and an id")
    return [*head, "--nnodes", str(nodes), "--nproc-per-node", str(nproc_per_node),
            "--rdzv-backend", "c10d", "--rdzv-endpoint", rendezvous, "--rdzv-id", run_id,
            "--rdzv-conf", f"is_host={1 if host else 0}"
            + (f",join_timeout={int(join_timeout_s)}" if join_timeout_s else ""), *module_argv]


#: The longest a group's rendezvous waits for every node (torch's default join timeout).
JOIN_TIMEOUT_MAX_S = 600


def join_timeout_s(run_timeout_s: float) -> int:
    """Seconds a group over several nodes waits for the other nodes: the run timeout, at most 600."""
    return max(1, int(min(run_timeout_s, JOIN_TIMEOUT_MAX_S)))


def rendezvous_timed_out(stderr_lines: list[str]) -> bool:
    """Whether a torchrun agent's stderr says the other nodes never joined (c10d's join timeout)."""
    return any("RendezvousTimeoutError" in line for line in stderr_lines)


def rendezvous_id(experiment_id: str, worker: str) -> str:
    """The rendezvous id of one worker group, the same on every node: ``"batch-sweep.warm"``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{experiment_id}.{worker}")


#: The exit code of a rank whose measured run failed (it raised, out of memory included):
#: the group ends with that run, torchrun names this rank as the root cause, and the
#: runner starts a fresh group for the runs left.
RUN_FAILED_EXIT = 5


@dataclass(frozen=True)
class RankFailure:
    """The rank torchrun names as the root cause of a failed group.

    Attributes:
        rank: the global rank.
        exitcode: its exit code, negative for a signal (as :mod:`subprocess` gives it).
        error: its error in one line when its stderr says it, else ``None``
            (:func:`error_gist`: no source location, no banner).
        lost_peer: the rank is a survivor: its error says a peer closed or reset the
            connection (:func:`lost_peer`), so the rank that really failed is another
            one, on another node when torchrun names no other failed rank here.
    """

    rank: int
    exitcode: int
    error: str | None = None
    lost_peer: bool = False


_ROOT_CAUSE = "Root Cause (first observed failure)"
_FAILURES = "Failures:"
_ENTRY_LINE = re.compile(r"^\s*\[\d+\]:\s*$")
_RANK_LINE = re.compile(r"^\s*rank\s*:\s*(\d+)")
_EXIT_LINE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")
_RANK_TAG = re.compile(r"^\[rank\d+\]:\s*")
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit))\b:?\s*(.*)$")
#: What a rank says when the rank at the other end of its connection is gone: gloo's
#: "Connection closed by peer", a reset connection, NCCL's "remote process exited".
_LOST_PEER = re.compile(r"(?i)connection (?:closed|reset) by peer|remote process exited"
                        r"|remote worker crash")
#: A C++ source location in front of torch's messages: ``[/…/gloo/transport/tcp/pair.cc:553] ``.
_SOURCE_LOCATION = re.compile(r"\[[^\]\s]*\.(?:cc|cpp|cu|h|hpp|c):\d+\]\s*")
#: Where a torch message stops saying what happened and starts advising (or greeting):
#: gloo's "This is typically caused by…", "Check the logs…", "GLHF! 🏖️".
_MESSAGE_TAIL = re.compile(r"\s*(?:This is typically caused by|Check the logs of|GLHF!).*$")


def lost_peer(error: str | None) -> bool:
    """Whether an error says the rank lost its connection to a peer rank.

    Args:
        error: a rank's error message (one line or several), ``None`` when unknown.

    Returns:
        ``True`` for "Connection closed by peer", "Connection reset by peer" and NCCL's
        "remote process exited": the rank that raised it survived another one.
    """
    return bool(error) and _LOST_PEER.search(error or "") is not None


#: Lines of a launcher's stderr that say nothing about a failure: torchrun's banner on
#: ``OMP_NUM_THREADS`` and the rules of asterisks (or dashes, equal signs) around it.
_BANNER_PREFIXES = ("Setting OMP_NUM_THREADS",)


def is_decoration(line: str) -> bool:
    """Whether a stderr line is only decoration, never an error worth quoting.

    Args:
        line: one stderr line.

    Returns:
        ``True`` for a blank line, a line of punctuation only (``*****``, ``=====``,
        ``-----``) and torchrun's "Setting OMP_NUM_THREADS…" banner.
    """
    text = line.strip()
    if not text or not any(ch.isalnum() for ch in text):
        return True
    return text.startswith(_BANNER_PREFIXES)


def error_gist(text: str | None, limit: int = 300) -> str | None:
    """The first meaningful line of an error, without torch's decoration, secrets hidden.

    Blank and decoration lines (:func:`gpusession.bench.process.is_decoration`) are
    skipped; a C++ source location (``[…/pair.cc:553] ``) and torch's advice
    and greeting after the message ("This is typically caused by…", "GLHF! 🏖️") are
    cut off.

    Args:
        text: an error message or a stderr line, ``None`` when there is none.
        limit: the most characters returned (longer: cut, ending in "…").

    Returns:
        e.g. ``"RuntimeError: Connection closed by peer [10.0.0.2]:18312."``; ``None``
        when nothing meaningful is left. A secret anywhere in ``text`` reads
        ``[HIDDEN: <kind>]`` (:func:`gpusession.core.files.secrets.mask_text`, H-35).
    """
    from gpusession.core.files.secrets import mask_text

    # the whole text masked before a line is picked and cut: a cut key is no longer seen
    for raw in mask_text(text or "")[0].splitlines():
        if is_decoration(raw):
            continue
        line = _MESSAGE_TAIL.sub("", _SOURCE_LOCATION.sub("", " ".join(raw.split()))).strip()
        if not line or is_decoration(line):
            continue
        return line if len(line) <= limit else line[: limit - 1] + "…"
    return None


def _summary_entries(lines: list[str]) -> list[tuple[bool, int, int]]:
    """``(root cause?, rank, exit code)`` of every failed rank in torchrun's last summary."""
    try:
        start = max(i for i, line in enumerate(lines) if _ROOT_CAUSE in line)
    except ValueError:
        return []
    head = max((i for i, line in enumerate(lines[:start]) if line.strip() == _FAILURES), default=start)
    entries: list[tuple[bool, int, int]] = []
    rank = code = None
    root = False
    for i, line in enumerate(lines[head:], head):
        if _ENTRY_LINE.match(line) or _ROOT_CAUSE in line or line.strip().startswith("====="):
            if rank is not None and code is not None:
                entries.append((root, rank, code))
            rank = code = None
            root = root or _ROOT_CAUSE in line
            if line.strip().startswith("=====") and i > start:
                break
        elif rank is None and (m := _RANK_LINE.match(line)):
            rank = int(m.group(1))
        elif code is None and (m := _EXIT_LINE.match(line)):
            code = int(m.group(1))
    if rank is not None and code is not None:
        entries.append((root, rank, code))
    return entries


def _rank_error(lines: list[str], rank: int, known: Mapping[int, str]) -> str | None:
    """The error of rank ``rank`` in one line, ``None`` when nothing says it.

    Its incident line (``rank N: {...}``), else the last exception line torch prefixed
    with ``[rankN]: ``, else what ``known`` says of it.
    """
    prefix = f"rank {rank}: "
    tagged = f"[rank{rank}]: "
    error = raised = None
    for line in lines:
        if line.startswith(prefix + "{"):
            try:
                doc = loads_json(line[len(prefix):], None)  # bounded (H-39)
            except (ValueError, BadInput):  # not JSON, an integer too long, nested too deep
                continue
            error = error_gist(f"{doc.get('error_type')}: {doc.get('message')}")
        elif line.startswith(tagged) and _EXC_LINE.match(line[len(tagged):].strip()):
            raised = error_gist(line[len(tagged):]) or raised
    return error or raised or error_gist(known.get(rank))


def rank_incident(lines: list[str], rank: int) -> WorkerIncident | None:
    """The last incident rank ``rank`` wrote on stderr (``rank N: {...}``).

    A rank that fails before its group has formed cannot reach the runner: it says its
    incident on stderr (the worker's silent rank). When it ends first, torchrun ends the
    leader before the leader says its own, so this line is the only word of the failure.

    Args:
        lines: the launcher's stderr lines.
        rank: the global rank.

    Returns:
        The typed incident, ``None`` when the rank wrote none that parses.
    """
    prefix = f"rank {rank}: "
    found: WorkerIncident | None = None
    for line in lines:
        if line.startswith(prefix + "{"):
            try:
                doc = loads_json(line[len(prefix):], None)  # bounded (H-39)
            except (ValueError, BadInput):  # not JSON, an integer too long, nested too deep
                continue
            ev = event_from_json(doc, "worker") if isinstance(doc, dict) else None
            if isinstance(ev, WorkerIncident):
                found = ev
    return found


def torchrun_root_cause(lines: list[str], known: Mapping[int, str] | None = None) -> RankFailure | None:
    """Read torchrun's failure summary on stderr: which rank failed first, its exit code.

    torchrun names as its root cause the first rank *it saw* end; when that rank only
    lost its connection to a peer (:func:`lost_peer`), the rank that really failed is
    the other failed rank of the summary that did not lose a peer and was not ended by
    torchrun (SIGTERM); when there is none here (it was on another node, or its end
    went unseen), the failure says ``lost_peer``.

    Args:
        lines: the launcher's stderr lines (the ranks' stderr is interleaved there).
        known: errors of ranks the caller heard otherwise, by global rank (the leader's
            last incident: it speaks to the runner, not on stderr).

    Returns:
        ``None`` when torchrun reported no failed rank. The error is the rank's
        incident line (``rank N: {...}``) when it sent one, else the last exception
        line of stderr that is not torchrun's own, reduced to its gist
        (:func:`error_gist`).
    """
    entries = _summary_entries(lines)
    roots = [e for e in entries if e[0]]
    if not roots:
        return None
    _, rank, code = roots[0]
    known = known or {}
    error = _rank_error(lines, rank, known)
    if error is None:
        for line in lines:
            m = _EXC_LINE.match(_RANK_TAG.sub("", line.strip()))
            if m and "ChildFailedError" not in m.group(1):
                error = error_gist(_RANK_TAG.sub("", line.strip())) or error
    if not lost_peer(error):
        return RankFailure(rank=rank, exitcode=code, error=error)
    for _, other, other_code in entries:
        other_error = _rank_error(lines, other, known)
        if other != rank and other_code != -signal.SIGTERM and not lost_peer(other_error):
            return RankFailure(rank=other, exitcode=other_code, error=other_error)
    return RankFailure(rank=rank, exitcode=code, error=error, lost_peer=True)


__all__ = [
    "RankEnv",
    "RankFailure",
    "LEADER_ENV",
    "RUN_FAILED_EXIT",
    "error_gist",
    "is_decoration",
    "lost_peer",
    "rank_env",
    "rank_incident",
    "rendezvous_id",
    "shard_bounds",
    "torchrun_argv",
    "torchrun_root_cause",
]
