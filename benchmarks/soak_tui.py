"""Soak of the idle TUI against a minimal Textual app: CPU ratio and RSS growth.

Why: an idle TUI left open for a 7-day package must cost about what any Textual app
showing a reading every second costs, and must not grow. Each round runs two children
*at the same time* (the same seconds, so the same load from other programs), both
headless at 80×24:

* the real TUI (``build_app`` on a session opened from disk, real NVML and psutil
  readers, memory refreshed every second), memory pane shown, on a demo-like session
  (the seed's package started now, ``batch-sweep`` measured once by the test runner, an
  order with a payment sent);
* the floor: a minimal Textual app that shows one psutil reading (host RAM) in a
  ``Static`` and a ``Sparkline`` of it, refreshed every second (:data:`FLOOR`).

After ``--warmup`` seconds (default 300, not counted: imports, then the first minutes in
which the 120-sample history and Textual's and Rich's bounded caches fill; measured on
the idle memory pane, RSS grew 0.3 MB in the first 4 minutes and 0.02 MB in the 9 after
the fifth) the parent samples both children's CPU time and RSS every ``--every`` seconds
for ``--minutes``.
Each round prints the CPU of each (% of one core), their ratio (target: the TUI at most
1.25× the floor) and the RSS slope of each (least squares, MB/min; the TUI's target is
< 0.02 MB/min: a 7-day package then grows by under 200 MB); the summary gives the median
over rounds.
CPU figures of a fraction of a percent are noisy on a shared machine: compare the
ratios of one run, over several rounds, and say the load the machine was under.

``--pane N`` leaves pane N shown instead (the memory pane still samples behind it).
``--tracemalloc`` makes the TUI child also print what grew between the end of the
warm-up and the end (top 15 by line; slower: not the figures to report).
``--smoke``: one round of 6 s after a 4 s warm-up, sampled every 2 s (CI runs each
benchmark once at its smallest size; the figures then prove only that it runs).

Run: ``python benchmarks/soak_tui.py [--minutes 10] [--every 10] [--rounds 2] [--pane 3]
[--tracemalloc] [--smoke]`` (with gpusession installed in the active environment).
Exits 0 (a benchmark reports, it does not fail); 1 when a child did not start.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The TUI child: the real TUI, memory pane built (key 3) and then ``pane`` shown (3 by
#: default), until ``total_s`` has passed. With ``trace`` on, tracemalloc compares the
#: end of the warm-up with the end.
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

#: The floor child: a minimal Textual app showing one psutil reading and a Sparkline of
#: it, refreshed every second, run headless at 80×24 like the TUI.
FLOOR = r"""
import sys, time
warmup_s, total_s = float(sys.argv[1]), float(sys.argv[2])
import psutil
from textual.app import App
from textual.widgets import Sparkline, Static

class Floor(App):
    def compose(self):
        yield Static("Host RAM: reading…", id="reading")
        yield Sparkline([], id="spark")

    def on_mount(self):
        self.hist = []
        self.tick()
        self.set_interval(1.0, self.tick)

    def tick(self):
        vm = psutil.virtual_memory()
        self.query_one("#reading", Static).update(
            f"Host RAM used {(vm.total - vm.available) / 2**30:.1f} GiB of {vm.total / 2**30:.1f} GiB")
        self.hist = (self.hist + [(vm.total - vm.available) / vm.total])[-120:]
        self.query_one("#spark", Sparkline).data = self.hist

async def soak(pilot):
    t0 = time.monotonic()
    await pilot.pause(warmup_s)
    print("WARM", flush=True)
    await pilot.pause(max(0.0, total_s - (time.monotonic() - t0)))
    pilot.app.exit(0)

Floor().run(headless=True, size=(80, 24), auto_pilot=soak)
"""

CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

#: Targets: the TUI's idle CPU at most this many times the floor's; RSS slope below this.
CPU_RATIO_TARGET = 1.25
RSS_SLOPE_TARGET_MB_PER_MIN = 0.02


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


@dataclass
class Round:
    """One round's figures: CPU % of one core of each child, the TUI's RSS samples."""

    tui_cpu_pct: float
    floor_cpu_pct: float
    window_s: float
    times_s: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    floor_rss_mb: list[float] = field(default_factory=list)
    tui_out: str = ""

    @property
    def ratio(self) -> float:
        return self.tui_cpu_pct / self.floor_cpu_pct if self.floor_cpu_pct > 0 else float("inf")

    @property
    def slope_mb_per_min(self) -> float:
        return slope_per_min(self.times_s, self.rss_mb)

    @property
    def floor_slope_mb_per_min(self) -> float:
        return slope_per_min(self.times_s, self.floor_rss_mb)


def _wait_warm(child: subprocess.Popen[str], what: str) -> None:
    assert child.stdout is not None
    if child.stdout.readline().strip() != "WARM":
        err = child.stderr.read() if child.stderr else ""
        raise RuntimeError(f"the {what} did not start:\n{err[-3000:]}")


def _cpu_s(proc: Any) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


def one_round(root: Path, name: str, args: argparse.Namespace, window_s: float) -> Round:
    """Run the TUI and the floor side by side for ``window_s`` after the warm-up."""
    import psutil

    total_s = args.warmup + window_s + 1.0
    tui = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), name, str(args.warmup), str(total_s),
         "1" if args.tracemalloc else "0", args.pane],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CHILD_ENV)
    floor = subprocess.Popen(
        [sys.executable, "-c", FLOOR, str(args.warmup), str(total_s)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CHILD_ENV)
    try:
        p_tui, p_floor = psutil.Process(tui.pid), psutil.Process(floor.pid)
        _wait_warm(tui, "TUI")
        _wait_warm(floor, "floor app")
        t0 = time.monotonic()
        tui0, floor0 = _cpu_s(p_tui), _cpu_s(p_floor)
        times, rss, floor_rss = [], [], []
        while True:
            t = time.monotonic() - t0
            times.append(t)
            rss.append(p_tui.memory_info().rss / 1e6)
            floor_rss.append(p_floor.memory_info().rss / 1e6)
            tui1, floor1, wall = _cpu_s(p_tui), _cpu_s(p_floor), t
            if args.verbose:
                print(f"    {t:7.1f} s  RSS {rss[-1]:9.2f} MB", flush=True)
            if t + args.every > window_s + 0.5:
                break
            time.sleep(max(0.0, args.every - (time.monotonic() - t0 - t)))
        # tracemalloc's comparison of two snapshots takes minutes on a loaded machine
        out, err = tui.communicate(timeout=900 if args.tracemalloc else 120)
        floor.communicate(timeout=120)
    finally:
        for child in (tui, floor):
            if child.poll() is None:
                child.kill()
                child.wait()
    if tui.returncode:
        out += "\n" + (err.strip().splitlines()[-1] if err.strip() else f"TUI exit {tui.returncode}")
    return Round(
        tui_cpu_pct=100.0 * (tui1 - tui0) / wall if wall > 0 else 0.0,
        floor_cpu_pct=100.0 * (floor1 - floor0) / wall if wall > 0 else 0.0,
        window_s=wall, times_s=times, rss_mb=rss, floor_rss_mb=floor_rss, tui_out=out,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="measured window per round")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=300.0,
                    help="seconds not counted at the start (default 300: see the module docstring)")
    ap.add_argument("--rounds", type=int, default=2, help="paired rounds (TUI and floor side by side)")
    ap.add_argument("--pane", default="3", choices="123456",
                    help="key of the pane left shown after the memory pane was built (default 3)")
    ap.add_argument("--tracemalloc", action="store_true", help="TUI child prints what grew (slower)")
    ap.add_argument("--smoke", action="store_true", help="one 6 s round (CI: proves it runs)")
    ap.add_argument("--verbose", action="store_true", help="print every RSS sample")
    args = ap.parse_args()
    if args.smoke:
        args.minutes, args.every, args.warmup, args.rounds = 0.1, 2.0, 4.0, 1
    window_s = 60.0 * args.minutes
    # SIGTERM ends like Ctrl-C: the children are killed and the temporary session removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        load = os.getloadavg()
        print(f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    except OSError:
        pass
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        name = demo_like_session(root)
        for i in range(args.rounds):
            try:
                r = one_round(root, name, args, window_s)
            except RuntimeError as exc:
                print(exc)
                return 1
            rounds.append(r)
            print(f"round {i + 1}: {r.window_s:.0f} s; CPU TUI {r.tui_cpu_pct:.3f} %, floor "
                  f"{r.floor_cpu_pct:.3f} % of one core; ratio {r.ratio:.2f}; RSS "
                  f"{r.rss_mb[0]:.2f} → {r.rss_mb[-1]:.2f} MB, slope {r.slope_mb_per_min:+.4f} MB/min "
                  f"(floor's {r.floor_slope_mb_per_min:+.4f})",
                  flush=True)
            for ln in r.tui_out.splitlines():
                if not ln.startswith("GREW") or args.tracemalloc:
                    print(f"    {ln}")
    ratio = statistics.median(r.ratio for r in rounds)
    slope = statistics.median(r.slope_mb_per_min for r in rounds)
    tui_pct = statistics.median(r.tui_cpu_pct for r in rounds)
    floor_pct = statistics.median(r.floor_cpu_pct for r in rounds)
    try:
        load = os.getloadavg()
        print(f"load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    except OSError:
        pass
    print(f"median over {len(rounds)} round(s): CPU TUI {tui_pct:.3f} %, floor {floor_pct:.3f} % "
          f"of one core; ratio {ratio:.2f} (target ≤ {CPU_RATIO_TARGET}: "
          f"{'met' if ratio <= CPU_RATIO_TARGET else 'NOT met'})")
    print(f"median RSS slope {slope:+.4f} MB/min (target < {RSS_SLOPE_TARGET_MB_PER_MIN}: "
          f"{'met' if slope < RSS_SLOPE_TARGET_MB_PER_MIN else 'NOT met'}; "
          f"{slope * 60 * 24 * 7:+.0f} MB over 7 days)")
    if args.smoke:
        print("smoke mode: the figures prove the benchmark runs, not the targets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
