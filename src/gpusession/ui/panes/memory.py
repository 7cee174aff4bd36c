"""Memory pane: host RAM/swap, GPU memory per device and per process, allocator peaks.

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 3). The pane's own poller
thread reads a sample every ``ctx.poll_s`` seconds and posts it (``MemoryPane.Sampled``),
so cancelling a run never stops the poller and a slow NVML call never blocks the event
loop (H-12); with ``poll_s`` 0 one reading is made in a thread worker (group ``memory``).
Readings come from NVML (:mod:`gpusession.core.gpu.nvml`) and psutil
(:mod:`gpusession.core.gpu.host`) only — the UI process never imports torch (M5).

Labels follow M2, M3 and H-04: NVML figures are "device total" (every process, CUDA
context included); the last run's allocator figures are "PyTorch allocator, this process
only" (the worker that ran), shown one by one, never added, and their difference is never
called a cache. A run across ranks shows each rank's own figures, read from
``runs/<experiment>/ranks.csv``, under its device and GPU UUID.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from gpusession.core.experiment.placeholders import COMMAND_DEVICE
from gpusession.core.gpu.host import HostMemoryReader
from gpusession.core.gpu.nvml import NvmlSession
from gpusession.ui.charts import Bars, bar_glyphs
from gpusession.ui.context import UiContext, fmt_bytes, plural, run_label, shown

NOT_COVERED_HEAD = (
    "Not covered by the allocator figures: other processes, and memory outside the "
    "PyTorch allocator (CUDA context, library workspaces)"
)
NOT_COVERED = f"{NOT_COVERED_HEAD} — the NVML device total above includes them."


def not_covered(snap: Any) -> str:
    """What the allocator figures leave out, and where it shows — by what is shown above.

    ``snap``: the latest NVML reading (``None``: not read yet). The device total is named
    "above" only when a GPU's device total is shown there (M3, H-18).
    """
    if snap is None:
        return f"{NOT_COVERED_HEAD} — the NVML device total includes them (not read yet)."
    if not snap.available:
        return f"{NOT_COVERED_HEAD} — no device total is shown: NVML is not available here."
    if not any(g.memory_used_bytes is not None for g in snap.gpus):
        return f"{NOT_COVERED_HEAD} — no device total is shown: NVML read no GPU memory."
    return NOT_COVERED


def host_lines(host: Any) -> list[str]:
    """Host RAM, swap and cgroup limit in words (psutil figures, not GPU memory)."""
    if host is None:
        return ["Host memory: not read"]
    if host.cgroup_limit_bytes is None:
        limit = "no container memory limit"
    elif host.container_limited:
        limit = f"container limit {fmt_bytes(host.cgroup_limit_bytes)} (tighter than host RAM)"
    else:
        limit = f"container limit {fmt_bytes(host.cgroup_limit_bytes)} (looser than host RAM)"
    return [
        f"Host RAM   used {fmt_bytes(host.used_bytes)} of {fmt_bytes(host.total_bytes)}"
        f" (available {fmt_bytes(host.available_bytes)}); {limit}",
        f"Swap       used {fmt_bytes(host.swap_used_bytes)} of {fmt_bytes(host.swap_total_bytes)}",
    ]


def gpu_lines(snap: Any) -> list[str]:
    """Per GPU (by UUID, H-05): device total used/total; per process from NVML."""
    if snap is None:
        return ["GPU memory: not read yet"]
    if not snap.available:
        return [f"GPU memory: not available — {snap.reason}. Host memory is still shown."]
    if not snap.gpus:
        return ["GPU memory: NVML works but sees no GPU."]
    out = [f"NVIDIA driver {snap.driver_version or 'unknown'}; figures are NVML device totals"]
    for g in snap.gpus:
        name = g.name or f"name unknown ({g.why_unread('name') or 'not read'})"
        uuid = g.uuid or f"UUID unknown ({g.why_unread('uuid') or 'not read'})"
        if g.memory_used_bytes is None or g.memory_total_bytes is None:
            # H-18: the GPU is kept; its memory is unknown, with NVML's reason.
            memory = g.memory_words()
        else:
            memory = (f"device total used {fmt_bytes(g.memory_used_bytes)} of "
                      f"{fmt_bytes(g.memory_total_bytes)}")
        out.append(f"GPU {g.index} {name} ({uuid}): {memory}")
        if not g.processes_known:
            reason = g.why_unread("processes") or g.why_unread("handle") or "not read"
            out.append(f"    processes unknown (NVML could not list them: {reason})")
        elif not g.processes:
            out.append("    no compute process seen by NVML")
        for p in g.processes:
            out.append(f"    {p.words()}: {fmt_bytes(p.used_bytes)} (NVML, whole process)")
    return out


_ALLOCATOR_KEYS = (
    ("baseline allocated", "baseline_allocated_bytes"),
    ("baseline reserved ", "baseline_reserved_bytes"),
    ("peak allocated    ", "peak_allocated_bytes"),
    ("peak reserved     ", "peak_reserved_bytes"),
)
_NOT_MEASURED = "not measured (no GPU allocator in that run, e.g. on CPU: empty, not 0)"


def allocator_lines(row: dict[str, Any] | None, snap: Any = None,
                    ranks: list[dict[str, Any]] | str | None = None) -> list[str]:
    """The last run's four allocator figures, each on its own (M1, M2, M4).

    ``snap``: the latest NVML reading, for the words on what the figures leave out
    (:func:`not_covered`). ``ranks``: :func:`rank_rows_of` for a run across ranks:
    each rank's own four figures are shown, under its device and GPU UUID,
    and the words say the results row keeps the largest; a sentence when they cannot be
    shown (then the row's figures, named as the largest over ranks, and why).
    """
    if isinstance(ranks, list) and ranks:
        return _rank_allocator_lines(row or {}, snap, ranks)
    head = "Last run — PyTorch allocator, this process only (the worker that ran it):"
    if isinstance(ranks, str) and ranks:
        head = f"Last run — PyTorch allocator, the largest over its ranks (each rank's own: {ranks}):"
    if row is None:
        return [head, "    no run recorded yet", not_covered(snap)]
    device = row.get("device")
    where = f"a device {COMMAND_DEVICE}" if device == COMMAND_DEVICE else shown(device, "device not recorded")
    which = f"    {run_label(row)} on {where}"
    lines = [head, which]
    if all(row.get(k) is None for _, k in _ALLOCATOR_KEYS):
        lines.append(f"    {_NOT_MEASURED}")
    else:
        lines += [f"    {label} {fmt_bytes(row.get(k))}" for label, k in _ALLOCATOR_KEYS]
    lines.append(not_covered(snap))
    return lines


def _rank_allocator_lines(row: dict[str, Any], snap: Any, ranks: list[dict[str, Any]]) -> list[str]:
    """Per-rank allocator figures of one run across ranks (M1, M2)."""
    n = len(ranks)
    lines = [
        f"Last run — PyTorch allocator, each rank's own process ({plural(n, 'rank')};"
        " the results row keeps the largest peaks):",
        f"    {run_label(row)}",
    ]
    unmeasured = all(all(r.get(k) is None for _, k in _ALLOCATOR_KEYS) and r.get("ok") is not False for r in ranks)
    if unmeasured:  # e.g. ranks on the CPU: one line, not one per rank
        where = ", ".join(dict.fromkeys(shown(r.get("device"), "device not recorded") for r in ranks))
        lines.append(f"    every rank on {where}: {_NOT_MEASURED}")
        return [*lines, not_covered(snap)]
    for r in ranks:
        where = shown(r.get("device"), "device not recorded")
        if r.get("gpu_uuid"):
            where += f" ({shown(r.get('gpu_uuid'))})"
        status = "" if r.get("ok") is not False else f" — failed: {shown(r.get('error'), 'error not recorded')}"
        lines.append(f"    rank {shown(r.get('rank'))} on {where}{status}")
        if all(r.get(k) is None for _, k in _ALLOCATOR_KEYS):
            lines.append("        not measured: the run failed on this rank" if status
                         else f"        {_NOT_MEASURED}")
        else:
            lines += [f"        {label} {fmt_bytes(r.get(k))}" for label, k in _ALLOCATOR_KEYS]
    lines.append(not_covered(snap))
    return lines


def rank_rows_of(session: Any, row: dict[str, Any] | None) -> list[dict[str, Any]] | str:
    """The ranks of ``row`` from ``ranks.csv``.

    Returns:
        The rows by rank; ``[]`` for a one-process run (its experiment has no
        ``ranks.csv``); a sentence when the experiment ran across ranks but this run's
        ranks cannot be shown (the table is unreadable, or has no row for the run).
    """
    from gpusession.core.files.errors import BadInput
    from gpusession.core.records.ranks import RANKS_FILE, ranks_of_row

    if row is None or not row.get("experiment_id"):
        return []
    table = session.runs_dir / str(row["experiment_id"]) / RANKS_FILE
    if not table.exists():
        return []
    try:
        found = ranks_of_row(session.runs_dir, row)
    except (BadInput, OSError) as exc:
        return f"{table.name} could not be read ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    return found or f"{table.name} has no row for this run"


def span(fractions: list[float]) -> str:
    """``31%`` or ``29%–31%`` (the lowest and highest of a history of 0–1 fractions)."""
    lo, hi = f"{min(fractions):.0%}", f"{max(fractions):.0%}"
    return lo if lo == hi else f"{lo}–{hi}"


def gpu_in_use(gpus: Any) -> Any:
    """The GPU whose memory the history bar follows: the one in use, never a sum of all.

    Why: summed over an 8-GPU host, one full GPU reads 12%. The GPU in use is the one
    with a compute process (the fullest when several have one), else the fullest; a GPU
    whose memory NVML could not read is never chosen (H-18). ``None`` when none is read.
    """
    known = [g for g in gpus or () if g.memory_used_bytes is not None and g.memory_total_bytes]
    busy = [g for g in known if g.processes] or known
    if not busy:
        return None
    return max(busy, key=lambda g: (g.memory_used_bytes / g.memory_total_bytes, -g.index))


#: The allocator part while the last run's row is read in a worker (the pane's first show).
READING_ALLOC = "PyTorch allocator: reading the last run's row …"


def last_allocator_row(session: Any) -> dict[str, Any] | None:
    """The last measured row of the results CSV (prefers one with allocator figures)."""
    from gpusession.core.files.errors import BadInput

    try:
        rows = session.results.read().to_dicts()
    except BadInput:  # an unreadable results CSV: the allocator part says "no run yet"
        return None
    rows = [r for r in rows if r.get("phase") is not None]  # a validation ran nothing: no phase
    with_mem = [r for r in rows if r.get("peak_reserved_bytes") is not None]
    if with_mem:
        return with_mem[-1]
    return rows[-1] if rows else None


class MemoryPane(VerticalScroll, can_focus=True):
    """Pane 3: live memory readout, refreshed every ``ctx.poll_s`` seconds.

    Idle cost: one thread reads host memory and NVML every ``poll_s`` seconds, NVML kept
    open (:class:`~gpusession.core.gpu.nvml.NvmlSession`) and the cgroup found once
    (:class:`~gpusession.core.gpu.host.HostMemoryReader`), and posts one message per
    reading; the event loop then redraws only the widgets whose text or bars changed,
    without a layout when their height cannot change, and nothing while the pane is
    hidden (the readings and history go on: the header and H-12 need them).
    """

    @dataclass
    class Sampled(Message):
        """A reading landed (posted from the sampling thread)."""

        host: Any
        nvml: Any

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        self.host: Any = None
        self.snapshot: Any = None
        self.samples = 0
        self._host_hist: deque[float] = deque(maxlen=120)
        self._gpu_hist: deque[float] = deque(maxlen=120)  # the GPU in use's, shown
        self._gpu_hists: dict[int, deque[float]] = {}  # each GPU's, by NVML index
        self._gpu_shown: Any = None
        self.alloc_row: dict[str, Any] | None = None
        self.alloc_ranks: list[dict[str, Any]] | str = []
        #: the allocator figures were read (before: :data:`READING_ALLOC`); the newest read's number
        self._alloc_known = False
        self._alloc_generation = 0
        self.nvml = NvmlSession(ctx.nvml)
        self._host_reader = HostMemoryReader()
        self._texts: dict[str, str] = {}
        self._glyphs: dict[str, tuple[int, str]] = {}
        self._stale = False
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None

    def compose(self) -> ComposeResult:
        yield Static("Host memory: reading…", id="mem-host")
        yield Static("GPU memory: reading…", id="mem-gpu")
        yield Static("", id="mem-hist-label", classes="section")
        yield Bars(list(self._host_hist), low=0.0, high=1.0, id="mem-spark-host")  # 0–100 %
        yield Bars(list(self._gpu_hist), low=0.0, high=1.0, id="mem-spark-gpu")
        yield Static(READING_ALLOC, id="mem-alloc")

    def on_mount(self) -> None:
        self.reload()
        if self.ctx.poll_s > 0:
            self._poller = threading.Thread(target=self._poll, name="memory-poll", daemon=True)
            self._poller.start()
        else:
            self._read_once()

    def on_unmount(self) -> None:
        self._stop.set()  # the poller thread closes NVML as it ends
        if self._poller is None:
            self.nvml.close()

    def on_show(self) -> None:
        if self._stale or self._glyphs:
            self._glyphs.clear()  # bars given data while hidden were not painted
            self._redraw()

    def reload(self) -> None:
        """Re-read the last run's allocator figures in a thread worker (the pane's first show,
        after a run lands): the results CSV grows with the session, so the loop never reads
        it (A5); the text says so until the first read is in, then keeps the last one."""
        self._alloc_generation += 1
        self._read_alloc(self._alloc_generation)

    @work(thread=True, group="memory-alloc", exclusive=True, exit_on_error=False)
    def _read_alloc(self, generation: int) -> None:
        row = last_allocator_row(self.ctx.session)
        ranks = rank_rows_of(self.ctx.session, row)
        self.app.call_from_thread(self._alloc_read, generation, row, ranks)

    def _alloc_read(self, generation: int, row: dict[str, Any] | None, ranks: list[dict[str, Any]] | str) -> None:
        if generation != self._alloc_generation:  # a newer read, or a row landed since
            return
        self.alloc_row, self.alloc_ranks, self._alloc_known = row, ranks, True
        self._set("#mem-alloc", self._alloc_text(self.snapshot))

    def _alloc_text(self, snapshot: Any) -> str:
        """The allocator part: its lines, or :data:`READING_ALLOC` before the first read."""
        if not self._alloc_known:
            return READING_ALLOC
        return "\n".join(allocator_lines(self.alloc_row, snapshot, self.alloc_ranks))

    def show_row(self, row: dict[str, Any]) -> None:
        """A run just landed: show its allocator figures (or why there are none)."""
        if row.get("peak_reserved_bytes") is not None or self.alloc_row is None or (
            self.alloc_row.get("peak_reserved_bytes") is None
        ):
            self._alloc_generation += 1  # a read under way is older than this row
            self.alloc_row, self._alloc_known = row, True
            self.alloc_ranks = rank_rows_of(self.ctx.session, row)
            self._set("#mem-alloc", self._alloc_text(self.snapshot))

    def _reading(self) -> Sampled:
        """One host and one NVML reading (in a thread: NVML may be slow, H-12)."""
        host = self.ctx.host_memory() if self.ctx.host_memory else None
        if host is None:
            host = self._host_reader.read()
        return self.Sampled(host, self.nvml.read())

    @work(thread=True, group="memory", exit_on_error=False)
    def _read_once(self) -> None:
        """The one reading of a pane that does not poll (``poll_s`` 0: snapshots)."""
        self.post_message(self._reading())

    def _poll(self) -> None:
        """The poller thread: a reading now, then one every ``poll_s`` s until unmounted.

        A plain thread rather than a Textual worker per tick: a worker costs a task and
        three state messages each second, and a worker that never ends would keep
        ``workers.wait_for_complete()`` waiting for ever.
        """
        try:
            while not self._stop.is_set():
                try:
                    msg = self._reading()
                except Exception:  # noqa: BLE001 - a failing reading is skipped, the poller goes on
                    msg = None
                if msg is not None and not self.post_message(msg):
                    break  # the pane is closing
                self._stop.wait(self.ctx.poll_s)
        except RuntimeError:  # the app's event loop closed under us
            pass
        finally:
            self.nvml.close()

    def on_memory_pane_sampled(self, msg: Sampled) -> None:
        self.samples += 1
        host_changed = msg.host != self.host
        nvml_changed = msg.nvml is not self.snapshot and msg.nvml != self.snapshot
        self.host, self.snapshot = msg.host, msg.nvml
        if msg.host is not None and msg.host.total_bytes:
            self._host_hist.append(msg.host.used_bytes / msg.host.total_bytes)
        self._sample_gpus(getattr(msg.nvml, "gpus", ()) or ())
        if host_changed:
            self._set("#mem-host", "\n".join(host_lines(msg.host)))
        if nvml_changed:
            self._set("#mem-gpu", "\n".join(gpu_lines(msg.nvml)))
            self._set("#mem-alloc", self._alloc_text(msg.nvml))
        self._draw_history()

    def _sample_gpus(self, gpus: Any) -> None:
        """Each GPU's used fraction into its own history; the bar shows the GPU in use's."""
        for g in gpus:  # a GPU whose memory NVML could not read is left out (H-18)
            if g.memory_used_bytes is not None and g.memory_total_bytes:
                hist = self._gpu_hists.setdefault(g.index, deque(maxlen=120))
                hist.append(g.memory_used_bytes / g.memory_total_bytes)
        chosen = gpu_in_use(gpus)
        if chosen is not None:
            self._gpu_shown = (chosen.index, len(gpus))
            self._gpu_hist = self._gpu_hists[chosen.index]

    def _redraw(self) -> None:
        """Everything from the latest reading (the pane shown again after a while hidden)."""
        self._stale = False
        self._set("#mem-host", "\n".join(host_lines(self.host)))
        self._set("#mem-gpu", "\n".join(gpu_lines(self.snapshot)))
        self._set("#mem-alloc", self._alloc_text(self.snapshot))
        self._draw_history()

    def _draw_history(self) -> None:
        gpus = getattr(self.snapshot, "gpus", ()) or ()
        self._set_bars("#mem-spark-host", self._host_hist)
        spark_gpu = self._set_bars("#mem-spark-gpu", self._gpu_hist)
        if spark_gpu.display != bool(gpus):
            spark_gpu.display = bool(gpus)
        h = self._host_hist
        label = f"History, last {plural(len(h), 'sample')} (bars 0–100%): host RAM used {span(list(h))}" if h else "History: no sample yet"
        if gpus and self._gpu_hist:
            index, count = self._gpu_shown
            which = "GPU" if count == 1 else f"GPU {index}"
            label += f" (top); {which} device total used {span(list(self._gpu_hist))} (bottom"
            label += ")" if count == 1 else f"; the GPU in use, of {count})"
        elif gpus:
            label += " (top); GPU device total: not read (bottom)"
        self._set("#mem-hist-label", label)

    def _set_bars(self, selector: str, hist: deque[float]) -> Bars:
        """Give a bar chart the history; redraw it only when its glyphs change."""
        bars = self.query_one(selector, Bars)
        data = list(hist)
        width = bars.size.width
        drawn = (width, bar_glyphs(data, width, low=bars.low, high=bars.high))
        if width and self._glyphs.get(selector) == drawn:
            bars.set_reactive(Bars.data, data)  # kept for the next resize; nothing to paint
        else:
            self._glyphs[selector] = drawn
            bars.data = data
        return bars

    def _set(self, selector: str, text: str) -> None:
        """Update a Static only when its text changed; lay out only if its height may change.

        Hidden (another pane shown), the text is kept without a layout: showing the pane
        lays it out anyway.
        """
        old = self._texts.get(selector)
        if old == text:
            return
        self._texts[selector] = text
        widget = self.query_one(selector, Static)
        shown = self.is_on_screen
        if not shown:
            self._stale = True
        widget.update(text, layout=shown and not _same_height(old, text, widget.content_size.width))


def _same_height(old: str | None, new: str, width: int) -> bool:
    """Whether ``new`` surely takes as many rows as ``old`` in a Static ``width`` cells wide.

    Line by line: both fit in the width (no wrapping) or are the same length. Text with
    markup (``[``) may render shorter than it reads: never assumed the same.
    """
    if old is None or width <= 0 or "[" in old or "[" in new:
        return False
    old_lines, new_lines = old.split("\n"), new.split("\n")
    if len(old_lines) != len(new_lines):
        return False
    return all(
        cell_len(a) == cell_len(b) or (cell_len(a) <= width and cell_len(b) <= width)
        for a, b in zip(old_lines, new_lines, strict=True)
    )
