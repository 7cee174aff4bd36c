"""H-01 on a real GPU: synchronized vs unsynchronized timing of a large matmul.

Times ``a @ b`` (default 8192×8192, fp32) three ways in the same process:

* **unsynchronized**: ``perf_counter_ns`` around the call only (what a naive script does);
* **harness**: :class:`gpusession.bench.timing.SyncTimer` with ``TorchCudaOps``
  (synchronize the device before the start and before the stop reading, R8);
* **CUDA events**: the device's own elapsed time for the same work.

Prints the medians and the ratios harness/unsynchronized and harness/events. Expected:
the unsynchronized reading is a small fraction of the real work (kernel launch only);
harness ≈ events. Exits 2 (with a message) when no GPU is visible.

    python benchmarks/bench_gpu_timing.py [--size 8192] [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()
    import torch

    from gpusession.bench.timing import SyncTimer, TorchCudaOps

    if not torch.cuda.is_available():
        print("no CUDA/ROCm device visible to torch; nothing to measure", file=sys.stderr)
        return 2
    dev = torch.device(args.device)
    a = torch.randn(args.size, args.size, device=dev)
    b = torch.randn(args.size, args.size, device=dev)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize(dev)
    ops = TorchCudaOps(torch)
    timer = SyncTimer([args.device], ops, event_factory=ops.event_pair(args.device))
    unsync: list[float] = []
    synced: list[float] = []
    events: list[float] = []
    for _ in range(args.runs):
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter_ns()
        a @ b
        unsync.append((time.perf_counter_ns() - t0) / 1e9)
        torch.cuda.synchronize(dev)  # let the unsynchronized work drain before the next
        m = timer.measure(lambda: a @ b)
        synced.append(m.elapsed_s)
        if m.event_elapsed_s is not None:
            events.append(m.event_elapsed_s)
    mu, ms = statistics.median(unsync), statistics.median(synced)
    me = statistics.median(events) if events else float("nan")
    print(f"GPU {torch.cuda.get_device_name(dev)}; matmul {args.size}x{args.size} fp32; {args.runs} runs")
    print(f"unsynchronized median {mu * 1e3:10.4f} ms")
    print(f"harness (synced)      {ms * 1e3:10.4f} ms   harness/unsynchronized = {ms / mu:8.1f}x")
    print(f"CUDA events           {me * 1e3:10.4f} ms   harness/events         = {ms / me:8.4f}")
    flops = 2 * args.size**3 / ms
    print(f"throughput (harness)  {flops / 1e12:10.2f} TFLOP/s")
    ok = ms >= me * 0.98
    print("H-01: harness never faster than the device's own timing: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
