"""The host check's fixed probe, in a worker process: matmul throughput and copy bandwidth (D8).

Why it exists: the renter keeps, beside the order, what the GPU rented actually did on a
fixed piece of work, to compare rentals with. The work is fixed (a float16 matmul of
8192 × 8192 matrices, 256 MiB pinned copies each way) and lasts about
:data:`PROBE_S` seconds in all, shared among the visible GPUs. No figure is judged: there
is no table of expected figures. Without a GPU torch can see, nothing runs and nothing
is made up.

Who calls it: :func:`run_probe` (``check-host``, ``run`` on a first open) starts
``python -m gpusession.bench.hostprobe``, which prints one JSON line. torch is imported
in that worker only; the parent needs none.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_json
from gpusession.core.gpu.hostfacts import ProbeGpu, ProbeResult

#: The probe's whole duration in seconds, shared among the GPUs.
PROBE_S = 10.0
MATRIX_N = 8192
COPY_BYTES = 256 * 1024**2
DTYPE = "float16"
NO_GPU = "no GPU visible: no probe"
#: Seconds the parent waits for the worker (CUDA start-up included) before ending it.
PROBE_TIMEOUT_S = 120.0


def _matmul_tflops(torch: Any, dev: Any, budget_s: float) -> float:
    """Dense float16 matmul throughput on ``dev`` over ``budget_s`` seconds, in TFLOP/s."""
    a = torch.randn(MATRIX_N, MATRIX_N, dtype=torch.float16, device=dev)
    b = torch.randn(MATRIX_N, MATRIX_N, dtype=torch.float16, device=dev)
    c = torch.empty_like(a)
    for _ in range(3):  # warm-up: cuBLAS picks its kernel, clocks rise
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize(dev)
    done, t0 = 0, time.perf_counter()
    while True:
        for _ in range(10):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize(dev)
        done += 10
        elapsed = time.perf_counter() - t0
        if elapsed >= budget_s:
            return 2 * MATRIX_N**3 * done / elapsed / 1e12


def _copy_gb_per_s(torch: Any, src: Any, dst: Any, dev: Any, budget_s: float) -> float:
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize(dev)
    done, t0 = 0, time.perf_counter()
    while True:
        for _ in range(4):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize(dev)
        done += 4
        elapsed = time.perf_counter() - t0
        if elapsed >= budget_s:
            return COPY_BYTES * done / elapsed / 1e9


def _probe_one(torch: Any, i: int, share_s: float) -> dict[str, Any]:
    dev = torch.device("cuda", i)
    props = torch.cuda.get_device_properties(i)
    uuid = getattr(props, "uuid", None)
    tflops = _matmul_tflops(torch, dev, share_s * 0.6)
    host = torch.empty(COPY_BYTES, dtype=torch.uint8, pin_memory=True)
    on_dev = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev)
    h2d = _copy_gb_per_s(torch, host, on_dev, dev, share_s * 0.2)
    d2h = _copy_gb_per_s(torch, on_dev, host, dev, share_s * 0.2)
    del host, on_dev
    torch.cuda.empty_cache()
    return {"uuid": f"GPU-{uuid}" if uuid is not None else None, "name": props.name,
            "matmul_tflops": round(tflops, 3), "h2d_gb_per_s": round(h2d, 3),
            "d2h_gb_per_s": round(d2h, 3)}


def probe(total_s: float = PROBE_S) -> dict[str, Any]:
    """Run the fixed probe on every GPU torch sees (in this process: a worker only).

    Returns:
        A JSON-ready dict with the fields of :class:`ProbeResult`; ``status`` ``no-gpu``
        (nothing measured) when torch sees no GPU, ``failed`` with the error in words.
    """
    import torch

    base = {"dtype": DTYPE, "matrix_n": MATRIX_N, "copy_bytes": COPY_BYTES,
            "torch_version": torch.__version__}
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return {**base, "status": "no-gpu", "words": NO_GPU}
    n = torch.cuda.device_count()
    t0 = time.perf_counter()
    try:
        gpus = [_probe_one(torch, i, total_s / n) for i in range(n)]
    except Exception as exc:  # noqa: BLE001 - an out-of-memory, a CUDA error: said, nothing made up
        return {**base, "status": "failed", "words": f"probe failed: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")}
    took = time.perf_counter() - t0
    return {**base, "status": "measured", "words": f"measured {n} GPU(s) in {took:.1f} s",
            "seconds": round(took, 3), "gpus": gpus}


def result_from(d: dict[str, Any]) -> ProbeResult:
    """The worker's JSON as a :class:`ProbeResult` (D8).

    Raises:
        KeyError, TypeError, ValueError: not the worker's output.
    """
    gpus = tuple(ProbeGpu(g.get("uuid"), g.get("name"), g.get("matmul_tflops"),
                          g.get("h2d_gb_per_s"), g.get("d2h_gb_per_s")) for g in d.get("gpus", ()))
    return ProbeResult(str(d["status"]), str(d["words"]), d.get("seconds"), d.get("dtype"),
                       d.get("matrix_n"), d.get("copy_bytes"), d.get("torch_version"), gpus)


def run_probe(timeout_s: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Run the probe in a worker process and read its one JSON line; never raises (D8).

    Returns:
        The result; ``failed`` with the reason when this Python has no torch, the worker
        timed out, or printed no result.
    """
    if importlib.util.find_spec("torch") is None:
        return ProbeResult("failed", f"no probe: this Python ({sys.executable}) has no torch")
    cmd = [sys.executable, "-m", "gpusession.bench.hostprobe"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return ProbeResult("failed", f"probe failed: no result within {timeout_s:.0f} s")
    except OSError as exc:
        return ProbeResult("failed", f"probe failed: could not start the worker ({exc})")
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    try:
        return result_from(loads_json(lines[-1], None))  # bounded (H-39)
    except (IndexError, KeyError, TypeError, ValueError, BadInput):
        err = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return ProbeResult("failed", f"probe failed: {err}")


def main() -> int:
    """The worker: print the probe's one JSON line (exit 0 even when nothing was measured)."""
    print(json.dumps(probe()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
