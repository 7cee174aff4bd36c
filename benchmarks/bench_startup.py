"""Start-up time and idle CPU of the TUI ("Measured, not assumed").

1. Time from process start to the first rendered frame of the app (headless, 80×24, the
   real session-opening path, real NVML/psutil readers), against a bare six-tab Textual
   app (Header, TabbedContent with six TabPanes, Footer) and ``python -c "import textual"``,
   all measured interleaved in the same run (median of ``--runs``, default 10), and the
   same first frame reached through the command line (``gpusession NAME``): that one, as a
   person starts it, is the figure judged against the targets; the app built in the child
   (no command line) is printed beside it.
   The first frame is the same for every child: the first frame Textual renders (outside
   a batch update) that shows the child's own text (:data:`CHILD_PROBE`). For gpusession
   that is the header line and the checklist; the time at which the header also shows
   the GPU and the order (read after the first frame) is printed too.
   Targets: at most 1.3× the six-tab app, under 0.6 s, at each of two sizes of session
   built as ``bench_status.py`` builds them (one real run replicated to 5 experiments,
   100 rows, and to 500 experiments, 10,000 rows, a 15 MB journal and 75,000 files): a
   month-long session opens as fast as a new one; the growth of the ratio from the small
   session to the large one is printed. The first start of each session (opening folds
   its journal once into ``journal-state.json``) is printed apart. On a shared machine
   the wall times are noisy: the median of the paired ratios and the CPU time each child
   had used at its first frame are printed too.
2. CPU used by the UI process while the memory pane refreshes every second for 30 s
   (after start-up), as a percentage of one core. Target: under 2 %.

Run: ``python benchmarks/bench_startup.py [--runs 10] [--experiments 5,500] [--seconds 30] [--quick]
[--against OTHER/src]`` (``--against``: another checkout's ``gpusession NAME`` timed in the same
interleaved rounds, a before/after under one load; the sessions are built by this tree)
(with gpusession installed in the active environment); CI's smoke run: ``--runs 1 --no-idle
--experiments 1,5``. ``--profile``: instead of the figures, one ``gpusession NAME`` per size
under cProfile from the process start (imports included) to the first frame, the functions
with the most cumulative time printed (what grows with the session shows beside its size).
Prints the medians and the ratio, and the load average at the start and after each part
(the machine may be shared); exits 0 (a benchmark reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The same first-frame probe for every child (the same harness for both apps): the time
#: at which Textual sends (outside a batch update) a frame that shows the child's markers
#: (the text a person would look for on that screen). The frame is rendered in full even
#: headless; only the write to the terminal is skipped. Textual's ``auto_pilot`` is not
#: used as the mark: it runs once the app's mount is dispatched, which is before the
#: first screen is laid out and painted (30-150 ms before, measured), by unequal amounts
#: for an app that composes its widgets and one that pushes a screen.
CHILD_PROBE = r"""
import sys, time
import textual.app as _textual_app

MARKS = {}
_display = _textual_app.App._display

def _frame_text(update):
    if hasattr(update, "strips"):  # a full frame
        return "\n".join("".join(s.text for s in line) for line in update.strips)
    if hasattr(update, "chops"):  # the lines that changed
        return "\n".join("".join(s.text for s in chop.values() if s is not None) for chop in update.chops)
    return ""

def _probe(self, screen, update):
    t = time.time()
    _display(self, screen, update)
    if update is None or "FRAME" in MARKS:
        return
    # A frame rendered inside a batch update is sent with the next one, which then
    # carries only the lines changed since: remember what every render showed.
    text = _frame_text(update)
    seen = MARKS.setdefault("seen", set())
    seen.update(m for m in FRAME_MARKERS if m in text)
    if seen == set(FRAME_MARKERS) and not self._batch_count:
        MARKS["FRAME"] = t
        print(f"FRAME {t:.6f}", flush=True)
        print(f"CPU {time.process_time():.6f}", flush=True)  # this process, all threads
        on_first_frame(self)

def on_first_frame(app):
    app.exit(0)

_textual_app.App._display = _probe
"""

CHILD_FIRST_FRAME = CHILD_PROBE + r"""
from gpusession.core.folder.session import Session
from gpusession.ui.app import build_app

root, name = sys.argv[1], sys.argv[2]
# the header's first line and the checklist's first stage (pane 1, shown at start)
FRAME_MARKERS = (f"{name} │", "Stage 1")

def on_first_frame(app):
    # what the header says in the first frame; then wait (bounded) until the GPU and the
    # order are read, for the "header complete" figure
    header = app.screen.query_one("#session-header")
    print("HEADER-AT-FRAME " + str(header.content).replace("\n", " / "), flush=True)
    def check():
        line = str(header.content)
        if "not read yet" not in line and "reading…" not in line:
            print(f"HEADER {time.time():.6f}", flush=True)
            app.exit(0)
    app.set_interval(0.005, check)
    app.set_timer(10.0, app.exit)

# opened as `gpusession NAME` opens it (commands/tui.py): a bad file is said in its pane
app = build_app(Session.open(root, name, check_files=False))
app.run(headless=True, size=(80, 24))
"""

CHILD_MINIMAL_APP = CHILD_PROBE + r"""
from textual.app import App
from textual.widgets import Static

FRAME_MARKERS = ("hello",)

class Hello(App):
    def compose(self):
        yield Static("hello")

Hello().run(headless=True, size=(80, 24))
"""

#: The same first frame reached as a person starts it, ``gpusession --sessions-dir ROOT
#: NAME``: the command line is parsed before the app is built (headless here, 80×24).
CHILD_CLI = CHILD_PROBE + r"""
root, name = sys.argv[1], sys.argv[2]
FRAME_MARKERS = (f"{name} │", "Stage 1")
_run = _textual_app.App.run

def _headless(self, *args, **kwargs):
    kwargs.update(headless=True, size=(80, 24))
    return _run(self, *args, **kwargs)

_textual_app.App.run = _headless
from gpusession.cli import main
main(["--sessions-dir", root, name])
"""

#: ``gpusession NAME`` under cProfile from the first line to the first frame; the stats
#: are written to ``argv[3]`` (``pstats`` reads them).
CHILD_PROFILE = r"""
import cProfile
_PROFILE = cProfile.Profile()
_PROFILE.enable()
""" + CHILD_CLI.replace("root, name = sys.argv[1], sys.argv[2]", r"""root, name = sys.argv[1], sys.argv[2]

def on_first_frame(app):
    _PROFILE.disable()
    _PROFILE.dump_stats(sys.argv[3])
    app.exit(0)
""")

CHILD_SIX_TABS = CHILD_PROBE + r"""
from textual.app import App
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

FRAME_MARKERS = ("Tab 6", "pane 1")

class SixTabs(App):
    BINDINGS = [(str(i), f"show('t{i}')", f"tab {i}") for i in range(1, 7)]

    def compose(self):
        yield Header()
        with TabbedContent(initial="t1"):
            for i in range(1, 7):
                with TabPane(f"{i} Tab {i}", id=f"t{i}"):
                    yield Static(f"pane {i}")
        yield Footer()

    def action_show(self, tab):
        self.query_one(TabbedContent).active = tab

SixTabs().run(headless=True, size=(80, 24))
"""

CHILD_IDLE_CPU = r"""
import resource, sys, time
from gpusession.core.folder.session import Session
from gpusession.ui.app import build_app

root, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

async def idle(pilot):
    await pilot.press("3")  # the memory pane, refreshing every second
    await pilot.pause(1.0)
    mem = pilot.app.screen.pane("memory")
    c0, t0, s0 = cpu(), time.monotonic(), mem.samples
    await pilot.pause(seconds)
    c1, t1, s1 = cpu(), time.monotonic(), mem.samples
    print(f"CPU {c1 - c0:.6f} {t1 - t0:.6f} {s1 - s0}", flush=True)
    pilot.app.exit(0)

app = build_app(Session.open(root, name))
app.run(headless=True, size=(80, 24), auto_pilot=idle)
"""


#: Children run as an installed gpusession runs for its user: bytecode is cached after the
#: first start (the warm-up run below writes it), like Textual's own in site-packages.
#: With ``PYTHONDONTWRITEBYTECODE`` set, every start would recompile gpusession only.
#: (``main`` sets ``XDG_STATE_HOME`` to its folder: the CLI child remembers its sessions
#: folder there, not in the user's state.)
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_import_textual(module: str = "textual") -> float:
    t0 = time.time()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=CHILD_ENV)
    return time.time() - t0


def child_marks(root: Path, name: str, child: str = CHILD_FIRST_FRAME,
                env: dict[str, str] | None = None) -> dict[str, str]:
    """Run one child; its marks (``FRAME``, ``HEADER``: seconds since the process start; ``CPU``: seconds)."""
    t0 = time.time()
    done = subprocess.run([sys.executable, "-c", child, str(root), name],
                          capture_output=True, text=True, check=True, timeout=120, env=env or CHILD_ENV)
    marks: dict[str, str] = {}
    for ln in done.stdout.splitlines():
        key, _, value = ln.partition(" ")
        if key in ("FRAME", "HEADER"):
            marks[key] = f"{float(value) - t0:.6f}"
        elif key.isupper():
            marks[key] = value
    if "FRAME" not in marks:
        raise RuntimeError(f"no first frame seen:\n{done.stdout}\n{done.stderr}")
    return marks


def time_first_frame(root: Path, name: str, child: str = CHILD_FIRST_FRAME) -> float:
    return float(child_marks(root, name, child)["FRAME"])


def idle_cpu(root: Path, name: str, seconds: float) -> tuple[float, float, int]:
    done = subprocess.run([sys.executable, "-c", CHILD_IDLE_CPU, str(root), name, str(seconds)],
                          capture_output=True, text=True, check=True, timeout=seconds + 120, env=CHILD_ENV)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("CPU"))
    _, cpu_s, wall_s, samples = line.split()
    return float(cpu_s), float(wall_s), int(samples)


def _load() -> str:
    """The 1, 5 and 15 min load averages (the machine may be shared: read the figures with it)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build_sessions(work: Path, sizes: list[int], copies: int = 1) -> list[tuple[Path, str, int]]:
    """The sessions measured, as ``bench_status.py`` builds them: ``(root, name, rows)`` per size.

    One real run (``run --headless`` of a command experiment: 20 rows, its journal, its
    ``runs/`` and ``validation/`` folders) replicated to ``n`` experiments each (``n × 20``
    rows; at 500 a 15 MB journal and 75,000 files), once per benchmark run. ``copies``: that
    many sessions per size, each under its own root (the second for ``--against``: the
    state an open keeps, ``session-toml.json``, names the checking code that made it, so two
    checkouts opening one folder in turn would each parse it again).
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sessions import real_run as _real_run
    from sessions import replicate as _replicate

    t = time.perf_counter()
    template = _real_run(work, CHILD_ENV)
    print(f"one real run: {time.perf_counter() - t:.1f} s")
    out = []
    for n in sizes:
        for copy in range(copies):
            root = work / (f"s{n}" if copy == 0 else f"s{n}-copy{copy}")
            folder = _replicate(template, root, f"bench-{n}", n)
            rows = sum(1 for _ in open(folder / "resultats-bruts.csv", "rb")) - 1
            out.append((root, folder.name, rows))
    return out


def profile_first_frame(root: Path, name: str, rows: int, top: int = 40) -> None:
    """Print where ``gpusession NAME``'s first frame goes: cProfile's top ``top`` by cumulative time."""
    import io
    import pstats

    time_first_frame(root, name, CHILD_CLI)  # the first open folds the journal once: not profiled
    stats_path = root / "first-frame.prof"
    t0 = time.time()
    subprocess.run([sys.executable, "-c", CHILD_PROFILE, str(root), name, str(stats_path)],
                   capture_output=True, text=True, check=True, timeout=120, env=CHILD_ENV)
    out = io.StringIO()
    stats = pstats.Stats(str(stats_path), stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    print(f"{name}: {rows:,} rows; first frame under cProfile (wall {time.time() - t0:.2f} s, load {_load()})")
    print("\n".join(ln for ln in out.getvalue().splitlines() if ln.strip())[-12000:])


def against_env(src: Path) -> dict[str, str]:
    """The children's environment with ``src`` (another checkout's ``src`` folder) first on the path."""
    return dict(CHILD_ENV, PYTHONPATH=os.pathsep.join([str(src), *filter(None, [CHILD_ENV.get("PYTHONPATH")])]))


def first_frames(root: Path, name: str, runs: int, rows: int, against: Path | None = None,
                 against_root: Path | None = None) -> tuple[float, float]:
    """Print the first-frame figures of session ``name``; its ratios to the six-tab app (medians, paired).

    ``against``: another checkout's ``src`` folder; its ``gpusession NAME`` is run in each
    interleaved round too (before/after in the same run, under the same load), on the same
    session's copy under ``against_root``.
    """
    t0 = time.time()
    first = time_first_frame(root, name, CHILD_CLI)  # its first open folds the journal once (journal-state.json)
    print(f"{name}: {rows:,} rows; the first start (opening folds the journal once): {first:.3f} s "
          f"(wall {time.time() - t0:.1f} s)")
    time_import_textual()  # warm the OS file cache for both
    time_first_frame(root, name)
    time_first_frame(root, name, CHILD_SIX_TABS)
    other_env = against_env(against) if against is not None else None
    other_root = against_root or root
    if other_env is not None:  # its first start (the journal folded once), its bytecode written
        child_marks(other_root, name, CHILD_CLI, other_env)
        child_marks(other_root, name, CHILD_CLI, other_env)
    base, app, hello, six, header, cli, other = [], [], [], [], [], [], []
    cpu_app, cpu_six, cpu_cli, cpu_other = [], [], [], []  # CPU seconds of the child at its first frame
    at_frame = ""
    for _ in range(runs):  # interleaved, so drift hits all alike
        base.append(time_import_textual())
        hello.append(time_first_frame(root, name, CHILD_MINIMAL_APP))
        six_marks = child_marks(root, name, CHILD_SIX_TABS)
        six.append(float(six_marks["FRAME"]))
        cpu_six.append(float(six_marks["CPU"]))
        marks = child_marks(root, name)
        app.append(float(marks["FRAME"]))
        cpu_app.append(float(marks["CPU"]))
        if "HEADER" in marks:
            header.append(float(marks["HEADER"]))
        at_frame = marks.get("HEADER-AT-FRAME", "")
        cli_marks = child_marks(root, name, CHILD_CLI)
        cli.append(float(cli_marks["FRAME"]))
        cpu_cli.append(float(cli_marks["CPU"]))
        if other_env is not None:
            other_marks = child_marks(other_root, name, CHILD_CLI, other_env)
            other.append(float(other_marks["FRAME"]))
            cpu_other.append(float(other_marks["CPU"]))
    b, a, h = statistics.median(base), statistics.median(app), statistics.median(hello)
    t6 = statistics.median(six)
    print(f"  python -c 'import textual'      median {b:.3f} s  (min {min(base):.3f}, max {max(base):.3f}, n={len(base)})")
    print(f"  minimal Textual app, 1st frame  median {h:.3f} s  (min {min(hello):.3f}, max {max(hello):.3f}; "
          f"{h / b:.2f}× the import: Textual's own floor)")
    print(f"  process start → first frame    median {a:.3f} s  (min {min(app):.3f}, max {max(app):.3f}, n={len(app)})")
    print(f"    its header then said: {at_frame}")
    if header:
        print(f"    header complete (GPU, order)  median {statistics.median(header):.3f} s  (n={len(header)})")
    c = statistics.median(cli)
    print(f"    through the CLI (gpusession NAME) median {c:.3f} s  (min {min(cli):.3f}, max {max(cli):.3f}; "
          f"{c / a:.2f}× the app alone: the command line's parse)")
    print(f"  bare six-tab app, 1st frame     median {t6:.3f} s  (min {min(six):.3f}, max {max(six):.3f}, n={len(six)})")
    # judged as a person starts it: `gpusession NAME`, the command line parsed first
    print(f"  ratio first frame (gpusession NAME) / import {c / b:.2f}×   (absolute target < 0.6 s: "
          f"{'met' if c < 0.6 else 'NOT met'})")
    print(f"  ratio gpusession NAME / six-tab app  {c / t6:.2f}×   (≤ 1.3×: "
          f"{'met' if c / t6 <= 1.3 else 'not met'}; the app alone, no command line: {a / t6:.2f}×)")
    # Less sensitive to a loaded machine: the ratio within each interleaved pair, and
    # the CPU time each child had used at its first frame (all its threads).
    paired = statistics.median(x / y for x, y in zip(cli, six, strict=True))
    ca, c6 = statistics.median(cpu_app), statistics.median(cpu_six)
    print(f"    same, median of the {len(cli)} paired ratios {paired:.2f}× (≤ 1.3×: "
          f"{'met' if paired <= 1.3 else 'not met'}; aim ≤ 1.15×: {'met' if paired <= 1.15 else 'not yet'}); "
          f"CPU time at the first frame (the app alone): gpusession {ca:.3f} s, six-tab app {c6:.3f} s, "
          f"ratio {ca / c6:.2f}×")
    # the CPU ratio of the figure judged: `gpusession NAME` as typed, command line included
    cc = statistics.median(cpu_cli)
    cpu_paired = statistics.median(x / y for x, y in zip(cpu_cli, cpu_six, strict=True))
    print(f"    CPU time at the first frame of gpusession NAME: {cc:.3f} s (min {min(cpu_cli):.3f}, "
          f"max {max(cpu_cli):.3f}), ratio to the six-tab app {cc / c6:.2f}× (paired {cpu_paired:.2f}×; ≤ 1.3×: "
          f"{'met' if cc / c6 <= 1.3 else 'not met'}); the six-tab app's CPU min {min(cpu_six):.3f}, "
          f"max {max(cpu_six):.3f}")
    if other:
        o, co = statistics.median(other), statistics.median(cpu_other)
        print(f"  against {against} (gpusession NAME, same rounds): median {o:.3f} s, CPU {co:.3f} s; "
              f"this tree ÷ that one: wall {c / o:.2f}× (paired "
              f"{statistics.median(x / y for x, y in zip(cli, other, strict=True)):.2f}×), CPU {cc / co:.2f}× "
              f"(paired {statistics.median(x / y for x, y in zip(cpu_cli, cpu_other, strict=True)):.2f}×); "
              f"its CPU ratio to the six-tab app {co / c6:.2f}× (paired "
              f"{statistics.median(x / y for x, y in zip(cpu_other, cpu_six, strict=True)):.2f}×)")
    print(f"  load average after these figures: {_load()} on {os.cpu_count()} cores")
    return c / t6, paired


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="start-up measurements of each kind, per size")
    ap.add_argument("--experiments", default="5,500",
                    help="experiments per session, comma-separated (20 rows each; default 5,500)")
    ap.add_argument("--seconds", type=float, default=30.0, help="idle window for the CPU figure")
    ap.add_argument("--no-idle", action="store_true", help="skip the idle CPU measurement")
    ap.add_argument("--quick", action="store_true", help="only the first-frame figures")
    ap.add_argument("--profile", action="store_true",
                    help="cProfile of one first frame per size instead of the figures")
    ap.add_argument("--against", type=Path, metavar="SRC",
                    help="another checkout's src folder (e.g. main's): its `gpusession NAME` is timed in "
                         "the same interleaved rounds, and this tree's figures are divided by its own")
    args = ap.parse_args()
    sizes = [int(x) for x in args.experiments.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        CHILD_ENV["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        print(f"load average at the start: {_load()} on {os.cpu_count()} cores")
        copies = 2 if args.against and not args.profile else 1
        built = build_sessions(Path(tmp), sizes, copies)
        sessions, others = built[::copies], built[1::copies] if copies > 1 else [None] * len(sizes)
        if args.profile:
            for root, name, rows in sessions:
                profile_first_frame(root, name, rows)
            return 0
        against = args.against.resolve() if args.against else None
        ratios = [(rows, first_frames(root, name, args.runs, rows, against, other[0] if other else None))
                  for (root, name, rows), other in zip(sessions, others, strict=True)]
        if len(ratios) > 1:
            (small_rows, (small, small_p)), (large_rows, (large, large_p)) = ratios[0], ratios[-1]
            print(f"growth of the ratio from {small_rows:,} to {large_rows:,} rows: {large / small:.2f}× "
                  f"({small:.2f}× → {large:.2f}×; paired {small_p:.2f}× → {large_p:.2f}×: {large_p / small_p:.2f}×)")
        if args.quick:
            return 0
        parts = {m: statistics.median(time_import_textual(m) for _ in range(args.runs))
                 for m in ("textual.app", "polars", "gpusession.core.folder.session", "gpusession.ui.app")}
        print("where the start-up goes (median process time of `python -c 'import X'`): "
              + ", ".join(f"{m} {t:.3f} s" for m, t in parts.items()))
        if args.no_idle:
            return 0
        root, name, _rows = sessions[0]
        cpu_s, wall_s, samples = idle_cpu(root, name, args.seconds)
        pct = 100.0 * cpu_s / wall_s
        print(f"idle CPU, memory pane refreshing: {cpu_s:.3f} s CPU over {wall_s:.1f} s "
              f"({samples} samples) = {pct:.2f} % of one core (target < 2 %: "
              f"{'met' if pct < 2.0 else 'NOT met'})")
        print(f"load average after the idle figure: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
