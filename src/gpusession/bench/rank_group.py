"""The process group of a rank and the protocol across ranks.

Who calls it: the worker (:mod:`gpusession.bench.worker`) when it runs under torchrun.
torch is imported inside functions only; the UI never imports this module (M5).

The protocol of one measured run across ranks::

    barrier                                  # every rank has arrived
    t_a = clock()                            # this rank's start of the run
    SyncTimer.measure(work on its own shard) # sync own device → start → work → sync → stop
    barrier                                  # the slowest rank decides
    t_b = clock()                            # this rank's stop of the run
    all_gather(status, own duration, memory) # outside the clock
    gather(outputs) to the leader, in corpus order

The leader is rank 0 on one node; over several nodes it is local rank 0 of the node the
runner started (:data:`gpusession.bench.ranks.LEADER_ENV`). The run's elapsed seconds
are the longest ``t_b − t_a`` over the ranks (each rank leaves a barrier at its own
instant, so one rank's interval between the barriers can be shorter than another's own
work; the longest holds every rank's), and every rank's own duration (its
:class:`~gpusession.bench.timing.SyncTimer` interval) is kept beside it. A
rank whose work raises (out of memory included) still reaches the second barrier: the
run fails for every rank (the failure names the rank), the leader reports it, and the
group ends with that run (the failed rank exits with
:data:`~gpusession.bench.ranks.RUN_FAILED_EXIT`); the runner starts a fresh group for the
runs left (R7). A rank that *dies* ends the group too: torchrun tears it down and the
runner records the incident.

Barriers, gathers and the go/stop decision travel over a gloo group (CPU), also when
the work runs on NCCL, so each is a host-side rendezvous.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpusession.bench.ranks import DeviceUnavailable, RankEnv, shard_bounds
from gpusession.bench.timing import SyncTimer
from gpusession.core.files.units import format_seconds


@dataclass
class RankRun:
    """One measured run across ranks, as every rank sees it after the protocol.

    Attributes:
        elapsed_s: wall seconds between the two barriers, the longest over the ranks
            (``None`` when a rank failed); never shorter than any rank's own duration.
        per_rank: one dict per rank
            (:data:`gpusession.core.records.ranks.RANK_COLUMNS` less ``run_key``/``worker``), by
            rank.
        failure: the failure fields of the first failed rank (``error_type``,
            ``message`` prefixed with ``rank N``, ``oom``, ``ok=False``, ``rank``);
            empty when every rank succeeded.
        result: this rank's own result (its shard's labels), ``None`` on failure.
        measurement: this rank's own measurement, ``None`` on failure.
    """

    elapsed_s: float | None
    per_rank: list[dict[str, Any]]
    failure: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    measurement: Any = None

    def max_of(self, key: str) -> tuple[int | None, int | None]:
        """``(maximum, rank holding it)`` of a per-rank figure; ``(None, None)`` when none has it."""
        best: tuple[int | None, int | None] = (None, None)
        for r in self.per_rank:
            v = r.get(key)
            if v is not None and (best[0] is None or v > best[0]):
                best = (v, r["rank"])
        return best


class RankGroup:
    """This process's torch.distributed group.

    ``init_process_group`` with NCCL when the rank works on a GPU, else gloo; the
    device is ``cuda:LOCAL_RANK`` or ``cpu``. A gloo side group carries the barriers,
    the gathers and the go/stop decision.

    Args:
        env: this rank's place (:func:`rank_env`).
        requested: the experiment's device (``"cpu"``, ``"cuda"`` or ``None`` = cuda
            when torch sees one).
        clock: the nanosecond clock of the set-up's two figures (default
            ``time.perf_counter_ns``).

    Attributes:
        context_s: seconds to select the GPU and create its CUDA context, first thing
            (``set_device``, then a synchronize by name, as one process does at the
            start of its load clock); ``None`` on CPU. The worker adds it to the load,
            so one-process and torchrun load rows hold the same work (R3).
        join_s: seconds to join the group (the rendezvous, NCCL's start with
            ``device_id``, the gloo side group): named in the load row's notes, never
            in the load.

    Raises:
        DeviceUnavailable: ``cuda`` requested and torch sees no GPU, or fewer GPUs than
            local ranks.
        RuntimeError: the group cannot be joined (from torch).
    """

    def __init__(self, env: RankEnv, requested: str | None,
                 clock: Callable[[], int] = time.perf_counter_ns) -> None:
        """Join the group (blocks until every rank has joined)."""
        import torch
        import torch.distributed as dist

        stopwatch = SyncTimer([], clock=clock)  # the one stopwatch; each step synchronizes itself
        self.context_s: float | None = None
        self.env = env
        self.rank, self.world_size = env.rank, env.world_size
        use_cuda = torch.cuda.is_available() if requested in (None, "", "auto") else requested != "cpu"
        if use_cuda:
            if not torch.cuda.is_available():
                raise DeviceUnavailable(f"device {requested} requested but torch sees no CUDA/ROCm device")
            if env.local_rank >= torch.cuda.device_count():
                raise DeviceUnavailable(f"local rank {env.local_rank} has no GPU: torch sees "
                                        f"{torch.cuda.device_count()} on this node")
            self.device = f"cuda:{env.local_rank}"
            self.context_s = stopwatch.measure(lambda: _create_context(torch, env.local_rank, self.device),
                                               presync=False).elapsed_s
            self.join_s = stopwatch.measure(lambda: _join_nccl(torch, dist, self.device),
                                            presync=False).elapsed_s
            self.ctl: Any = dist.new_group(backend="gloo")
        else:
            self.device = "cpu"
            self.join_s = stopwatch.measure(lambda: dist.init_process_group(backend="gloo"),
                                            presync=False).elapsed_s
            self.ctl = None  # the default (gloo) group
        self._dist = dist
        # The leader talks to the runner and gathers: the runner's node's local rank 0
        # when some rank claims it (LEADER_ENV), else rank 0.
        claims = self.all_gather(env.leader_claim is True)
        self.leader: int = next((r for r, c in enumerate(claims) if c), 0)
        self.is_leader = self.rank == self.leader

    # -- collectives over the gloo group ------------------------------------------------
    def barrier(self) -> None:
        """Wait until every rank has arrived (host side)."""
        self._dist.barrier(group=self.ctl)

    def all_gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, by rank, on every rank."""
        out: list[Any] = [None] * self.world_size
        self._dist.all_gather_object(out, obj, group=self.ctl)
        return out

    def gather_to_first(self, items: list[Any]) -> list[Any] | None:
        """Concatenate every rank's ``items`` by rank on the leader (corpus order); ``None`` elsewhere."""
        out: list[Any] | None = [None] * self.world_size if self.is_leader else None
        self._dist.gather_object(items, out, dst=self.leader, group=self.ctl)
        if out is None:
            return None
        return [x for part in out for x in (part or [])]

    def broadcast_from_first(self, obj: Any) -> Any:
        """The leader's ``obj`` on every rank."""
        box = [obj if self.is_leader else None]
        self._dist.broadcast_object_list(box, src=self.leader, group=self.ctl)
        return box[0]

    def shard(self, n_items: int) -> tuple[int, int]:
        """This rank's :func:`shard_bounds`."""
        return shard_bounds(n_items, self.world_size, self.rank)

    def close(self) -> None:
        """Leave the group (``destroy_process_group``); never raises."""
        try:
            self._dist.destroy_process_group()
        except Exception:  # noqa: BLE001, S110 - leaving is best effort at exit
            pass

    # -- the protocol ---------------------------------------------------------------------
    def measure(self, timer: Any, work: Callable[[], Any], *, gpu_uuid: str | None = None,
                on_failure: Callable[[BaseException], dict[str, Any]] | None = None,
                clock: Callable[[], int] = time.perf_counter_ns) -> RankRun:
        """One measured run across ranks (see the module doc).

        Args:
            timer: this rank's :class:`~gpusession.bench.timing.SyncTimer` (the one
                stopwatch: it synchronizes the rank's own device around its interval).
            work: this rank's share of the run.
            gpu_uuid: this rank's GPU UUID, kept in its per-rank record.
            on_failure: turns an exception of ``work`` into failure fields (``ok``,
                ``oom``, ``error_type``, ``message``); default type and first line.
            clock: a nanosecond clock read after each barrier (every rank's; the longest
                interval counts).

        Returns:
            The same :class:`RankRun` figures on every rank (its own ``result`` aside).
        """
        fail = on_failure or _failure
        self.barrier()
        t_a = clock()
        own: dict[str, Any] = {}
        m = None
        try:
            m = timer.measure(work)
        except Exception as exc:  # noqa: BLE001 - the user's workload can raise anything: the run fails for all ranks (R7)
            own = fail(exc)
        self.barrier()
        t_b = clock()
        mine = {
            "rank": self.rank, "world_size": self.world_size, "device": self.device,
            "gpu_uuid": gpu_uuid, "ok": m is not None,
            "error": (f"{own.get('error_type')}: {own.get('message')}" if own else None),
            "elapsed_s": m.elapsed_s if m is not None else None,
            "baseline_allocated_bytes": getattr(m, "baseline_allocated_bytes", None),
            "baseline_reserved_bytes": getattr(m, "baseline_reserved_bytes", None),
            "peak_allocated_bytes": getattr(m, "peak_allocated_bytes", None),
            "peak_reserved_bytes": getattr(m, "peak_reserved_bytes", None),
            "_failure": own or None,
            "_between_s": (t_b - t_a) / 1e9,
        }
        per_rank = self.all_gather(mine)
        # The slowest rank decides: each rank's own time between the two barriers holds
        # its own interval, and the barriers are not left at the same instant on every
        # rank, so the leader's interval alone can be shorter than another rank's own.
        t0 = max(r.pop("_between_s") for r in per_rank)
        failure: dict[str, Any] = {}
        for r in per_rank:
            f = r.pop("_failure", None)
            if f and not failure:
                failure = {**f, "rank": r["rank"],
                           "message": f"rank {r['rank']} of {self.world_size}: {f.get('message')}"}
        return RankRun(elapsed_s=None if failure else float(t0), per_rank=per_rank, failure=failure,
                       result=None if m is None else m.result, measurement=m)


def _create_context(torch: Any, index: int, device: str) -> None:
    """Select GPU ``index`` (``device``) and create its CUDA context: one process's first step in its load (R3)."""
    torch.cuda.set_device(index)
    torch.cuda.synchronize(torch.device(device))  # needs, so creates, the context


def _join_nccl(torch: Any, dist: Any, device: str) -> None:
    """Join the NCCL group, starting NCCL at once on ``device`` where torch can (2.3 and later)."""
    try:
        dist.init_process_group(backend="nccl", device_id=torch.device(device))
    except TypeError:  # torch < 2.3: no device_id
        dist.init_process_group(backend="nccl")


def setup_words(context_s: float | None, join_s: float | None) -> str | None:
    """A torchrun load row's note on the group's set-up (R3), ``None`` when nothing was timed.

    Example: ``"the CUDA context (412 ms, created as the rank joined its torchrun group)
    is in the load; joining the group took 1.20 s more, not in the load"``.
    """
    words = []
    if context_s is not None:
        words.append(f"the CUDA context ({format_seconds(context_s)}, created as the rank joined "
                     "its torchrun group) is in the load")
    if join_s is not None:
        words.append(f"joining the group{' (rendezvous, NCCL start)' if context_s is not None else ''} "
                     f"took {format_seconds(join_s)} more, not in the load")
    return "; ".join(words) or None


def _failure(exc: BaseException) -> dict[str, Any]:
    text = str(exc).strip()
    return {"ok": False, "oom": False, "error_type": type(exc).__name__,
            "message": text.splitlines()[0] if text else ""}


def rank_notes(run: RankRun) -> str:
    """Words for a row's ``notes``: ranks, the slowest, where the peaks were.

    Example: ``"2 ranks: slowest rank 1 (520 ms own of 530 ms between barriers); peak
    reserved on rank 0 (maximum over ranks)"`` (durations as :func:`format_seconds`:
    never in scientific notation).
    """
    n = len(run.per_rank)
    words = f"{n} rank" + ("s" if n != 1 else "")
    if run.failure:
        return f"{words}: rank {run.failure.get('rank')} failed, the run ended for every rank"
    slow, slow_rank = _max_float(run.per_rank, "elapsed_s")
    if slow is not None:
        words += f": slowest rank {slow_rank} ({format_seconds(slow)} own"
        words += f" of {format_seconds(run.elapsed_s)} between barriers)" if run.elapsed_s is not None else ")"
    peak, peak_rank = run.max_of("peak_reserved_bytes")
    if peak is not None:
        words += f"; peak reserved on rank {peak_rank} (maximum over ranks)"
    return words


def _max_float(rows: list[dict[str, Any]], key: str) -> tuple[float | None, int | None]:
    best: tuple[float | None, int | None] = (None, None)
    for r in rows:
        v = r.get(key)
        if v is not None and (best[0] is None or v > best[0]):
            best = (float(v), r["rank"])
    return best


__all__ = [
    "RankGroup",
    "RankRun",
    "rank_notes",
    "setup_words",
]
