"""The cost of running a measurement as a torchrun group ("Measured, not assumed").

On CPU (gloo), the same total work — ``--items`` small matmuls per run — in one process
and in a group of 2 ranks (each its contiguous shard, :func:`gpusession.bench.ranks.shard_bounds`),
every run through the protocol across ranks (:meth:`gpusession.bench.rank_group.RankGroup.measure`:
barrier → own SyncTimer interval → barrier → all_gather of the figures). Printed:

1. the fixed cost per run that the protocol adds: elapsed between the barriers minus the
   slowest rank's own interval (median over ``--runs``), for empty work and for the real
   work. Target: under 5 ms per run on this machine.
2. the elapsed per run: one plain process (SyncTimer only), a group of one rank and a
   group of two ranks (medians).
3. the launch cost of a torchrun group: from starting ``python -m torch.distributed.run``
   to every rank having joined the process group (wall clock), against starting one
   plain ``python -c "import torch"``.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_ranks.py [--runs 30] [--items 2000]``
(gpusession importable, e.g. ``PYTHONPATH=src``). Exits 0 (a benchmark reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"


def _work(torch: Any, a: Any, n: int) -> None:
    for _ in range(n):
        a = torch.mm(a, a).clamp_(-1, 1)


def child(args: argparse.Namespace) -> int:
    """One rank (under torchrun) or the plain process: time ``--runs`` runs, print JSON on rank 0."""
    started_wall = time.time()
    import torch

    from gpusession.bench.ranks import rank_env, shard_bounds
    from gpusession.bench.timing import SyncTimer

    torch.set_num_threads(1)
    timer = SyncTimer([])
    a = torch.rand(64, 64)
    env = rank_env()
    out: dict[str, Any] = {"started_wall": started_wall}
    if env is None:  # the plain process: the stopwatch only
        runs = [timer.measure(lambda: _work(torch, a, args.items)).elapsed_s for _ in range(args.runs)]
        out.update(plain_elapsed_s=statistics.median(runs))
        print(json.dumps(out), flush=True)
        return 0
    from gpusession.bench.rank_group import RankGroup

    group = RankGroup(env, "cpu")
    group.barrier()
    out["joined_wall"] = time.time()  # every rank has joined the group
    lo, hi = shard_bounds(args.items, group.world_size, group.rank)
    _work(torch, a, hi - lo)  # one unmeasured pass
    empty, full = [], []
    for _ in range(args.runs):
        rr = group.measure(timer, lambda: None)
        empty.append((rr.elapsed_s, max(r["elapsed_s"] for r in rr.per_rank)))
    for _ in range(args.runs):
        rr = group.measure(timer, lambda lo=lo, hi=hi: _work(torch, a, hi - lo))
        full.append((rr.elapsed_s, max(r["elapsed_s"] for r in rr.per_rank)))
    if group.rank == 0:
        out.update(
            world_size=group.world_size,
            empty_elapsed_s=statistics.median(e for e, _ in empty),
            empty_extra_s=statistics.median(e - own for e, own in empty),
            elapsed_s=statistics.median(e for e, _ in full),
            slowest_own_s=statistics.median(own for _, own in full),
            extra_s=statistics.median(e - own for e, own in full),
        )
        print(json.dumps(out), flush=True)
    group.close()
    return 0


def _launch(argv: list[str]) -> tuple[dict[str, Any], float, float]:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OMP_NUM_THREADS", "1")
    t0 = time.time()
    res = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    total = time.time() - t0
    if res.returncode != 0:
        raise SystemExit(f"{argv[:6]} exited {res.returncode}:\n{res.stderr[-2000:]}")
    line = [x for x in res.stdout.splitlines() if x.startswith("{")][-1]
    return json.loads(line), t0, total


def main() -> int:
    """Parent: the plain process, groups of 1 and 2 ranks, the bare torch import; print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--items", type=int, default=2000, help="64×64 matmuls per run (the whole corpus)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    me = [str(Path(__file__).resolve()), "--child", "--runs", str(args.runs), "--items", str(args.items)]
    py = sys.executable
    t0 = time.time()
    subprocess.run([py, "-c", "import torch"], check=True)
    bare_s = time.time() - t0
    plain, _t, plain_total = _launch([py, *me])
    groups = {}
    for n in (1, 2):
        doc, t_start, total = _launch([py, "-m", "torch.distributed.run", "--standalone",
                                       "--nproc-per-node", str(n), *me])
        groups[n] = (doc, doc["joined_wall"] - t_start, total)
    print(f"bench_ranks: {args.items} matmuls 64x64 per run, {args.runs} runs, CPU, gloo, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} cores")
    print(f"  plain process        elapsed/run {plain['plain_elapsed_s'] * 1e3:9.2f} ms")
    for n, (doc, _join, _total) in groups.items():
        print(f"  group of {n} rank{'s' if n > 1 else ' '}     elapsed/run {doc['elapsed_s'] * 1e3:9.2f} ms "
              f"(slowest rank's own {doc['slowest_own_s'] * 1e3:.2f} ms)")
    print("  fixed cost per run added by the protocol (between barriers − slowest own), median:")
    for n, (doc, _join, _total) in groups.items():
        print(f"    {n} rank{'s' if n > 1 else ' '}: empty work {doc['empty_extra_s'] * 1e3:6.3f} ms, "
              f"with work {doc['extra_s'] * 1e3:6.3f} ms   (target < 5 ms)")
    print("  launch cost:")
    print(f"    python -c 'import torch'                 {bare_s:6.2f} s")
    print(f"    plain process start→exit                 {plain_total:6.2f} s")
    for n, (_doc, join, total) in groups.items():
        print(f"    torchrun {n} rank{'s' if n > 1 else ' '}: start→group joined {join:6.2f} s, start→exit {total:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
