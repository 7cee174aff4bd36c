"""Soak of the idle TUI: memory growth and CPU over minutes (issue 12, "Soak").

The real TUI (``build_app`` on a session opened from disk, real NVML and psutil readers,
memory refreshed every second) runs headless at 80×24 in a child process with the
memory pane shown, on a demo-like session (the seed's package started now, the
``batch-sweep`` experiment measured once by the test runner, an order with a payment
sent). The parent samples the child's RSS and CPU time with psutil every ``--every``
seconds (default 10) for ``--minutes`` (default 10), after ``--warmup`` seconds
(default 30: imports and first caches) that are not counted.

Prints every sample, the RSS slope (least squares, MB/min; target < 0.02 MB/min: a
7-day package then grows by under 200 MB) and the CPU used (% of one core; target < 1 %).
``--pane N`` leaves pane N shown instead (the memory pane still refreshes behind it).
``--tracemalloc`` makes the child also print the allocations that grew between the end
of the warm-up and the end (top 15 by line; slower, so its RSS and CPU figures are not
the ones to report).

Run: ``python benchmarks/soak_tui.py [--minutes 10] [--every 10] [--pane 3] [--tracemalloc]`` (with
gpusession installed in the active environment). Not part of CI; exits 0 (a benchmark
reports, it does not fail).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The child: the real TUI, memory pane built (key 3) and then ``pane`` shown (3 by
#: default), until ``total_s`` has passed.
#: With ``trace`` on, tracemalloc compares the end of the warm-up with the end.
CHILD = r"""
import sys, time
root, name, warmup_s, total_s = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
trace, pane = sys.argv[5] == "1", sys.argv[6]
if trace:
    import tracemalloc
    tracemalloc.start(10)
from gpusession.core.folder.session import Session
from gpusession.ui.app import build_app

async def soak(pilot):
    import gc
    await pilot.press("3")  # the memory pane is built and polls from now on
    await pilot.press(pane)
    t0 = time.monotonic()
    await pilot.pause(warmup_s)
    if trace:
        gc.collect()
        first = tracemalloc.take_snapshot()
    print("WARM", flush=True)
    await pilot.pause(max(0.0, total_s - (time.monotonic() - t0)))
    mem = pilot.app.screen.pane("memory")
    print(f"PANE {pilot.app.screen.query_one('#panes').active}", flush=True)
    print(f"SAMPLES {mem.samples} WORKERS {len(pilot.app.workers)}", flush=True)
    if trace:
        gc.collect()
        for stat in tracemalloc.take_snapshot().compare_to(first, "lineno")[:15]:
            print(f"GREW {stat}", flush=True)
    pilot.app.exit(0)

app = build_app(Session.open(root, name))
app.run(headless=True, size=(80, 24), auto_pilot=soak)
"""

CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def demo_like_session(root: Path, name: str = "soak") -> str:
    """The seed's package started now, ``batch-sweep`` measured once, an order sent."""
    import threading
    from datetime import timedelta

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.files.clock import utcnow
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session
    from gpusession.core.money import order
    from gpusession.testing import FakeRunner

    now = utcnow()
    s = Session.create(root, name, package=Package("RTX A5000", 1, 7, now), now=now)
    define_experiment(s, Experiment(
        id="batch-sweep", workload="bbc-news", varied="batch", values=(1, 4, 8),
        runs_per_variant=5, warmup_iterations=2, order="interleaved", scope="processing",
        params={"model_dir": "models"}))
    FakeRunner(s, "batch-sweep", lambda _e: None, threading.Event()).run()
    order.set_order(s, number="ORD-1042", gpu_model="RTX A5000", lots=1, days=7, at=now)
    order.new_payment_order(s, asset="USDT", network="TRC20", amount="55.00",
                            destination="TXyz1234", expires_at=now + timedelta(minutes=45), now=now)
    order.record_event(s, "payment-sent", source="you", note="clicked I have paid", at=now)
    return s.name


def slope_per_min(times_s: list[float], values: list[float]) -> float:
    """Least-squares slope of ``values`` against ``times_s``, per minute (0 with < 2 points)."""
    if len(times_s) < 2:
        return 0.0
    mt, mv = statistics.fmean(times_s), statistics.fmean(values)
    sxx = sum((t - mt) ** 2 for t in times_s)
    sxy = sum((t - mt) * (v - mv) for t, v in zip(times_s, values, strict=True))
    return 60.0 * sxy / sxx if sxx else 0.0


def main() -> int:
    import psutil

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="measured window (after the warm-up)")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between RSS samples")
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds not counted at the start")
    ap.add_argument("--pane", default="3", choices="123456",
                    help="key of the pane left shown after the memory pane was built (default 3)")
    ap.add_argument("--tracemalloc", action="store_true", help="child prints what grew (slower)")
    args = ap.parse_args()
    window_s = 60.0 * args.minutes
    # SIGTERM ends like Ctrl-C: the child is killed and the temporary session removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        name = demo_like_session(root)
        total_s = args.warmup + window_s + 1.0
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), name, str(args.warmup), str(total_s),
             "1" if args.tracemalloc else "0", args.pane],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CHILD_ENV)
        try:
            proc = psutil.Process(child.pid)
            assert child.stdout is not None
            if child.stdout.readline().strip() != "WARM":  # the warm-up has passed
                raise RuntimeError(f"the TUI did not start:\n{child.stderr.read() if child.stderr else ''}")
            t0 = time.monotonic()
            cpu0 = sum(proc.cpu_times()[:2])
            times, rss = [], []
            print(f"{'t (s)':>7} {'RSS (MB)':>9}")
            while True:
                t = time.monotonic() - t0
                times.append(t)
                rss.append(proc.memory_info().rss / 1e6)
                cpu1, wall = sum(proc.cpu_times()[:2]), t
                print(f"{t:7.1f} {rss[-1]:9.2f}", flush=True)
                if t + args.every > window_s + 0.5:
                    break
                time.sleep(max(0.0, args.every - (time.monotonic() - t0 - t)))
            out, err = child.communicate(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    slope = slope_per_min(times, rss)
    cpu_pct = 100.0 * (cpu1 - cpu0) / wall if wall > 0 else 0.0
    for ln in out.splitlines():
        print(ln)
    if child.returncode:
        print(err.strip().splitlines()[-1] if err.strip() else f"child exit {child.returncode}")
    print(f"window {wall / 60:.1f} min, {len(rss)} samples; RSS {rss[0]:.2f} → {rss[-1]:.2f} MB")
    print(f"RSS slope {slope:+.4f} MB/min (least squares; target < 0.02 MB/min: "
          f"{'met' if slope < 0.02 else 'NOT met'}; {slope * 60 * 24 * 7:+.0f} MB over 7 days)")
    print(f"CPU {cpu1 - cpu0:.2f} s over {wall:.0f} s = {cpu_pct:.2f} % of one core "
          f"(target < 1 %: {'met' if cpu_pct < 1.0 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
