"""The main screen: header line, six panes in a tab bar, footer (design.md §UI).

Who calls it: :class:`gpusession.ui.app.GpuSessionApp` has one :class:`MainScreen` (its default screen).
Attributes down, messages up (design.md, style point 4): panes post messages; this screen
reacts by redrawing the header and telling the other panes to reload (a run landed →
memory, validation and cost re-read; an order changed → header).

Start-up time: only the first pane is built before the first frame; every other pane
(and the modules only it needs: polars tables, core modules) is built the first time it
is shown (:func:`make_pane`, :meth:`MainScreen.ensure_pane`). A pane not built yet has
nothing to update, so the reactions above skip it; it reads fresh data when built.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static, TabbedContent, TabPane

from gpusession.ui.context import UiContext
from gpusession.ui.header import SessionHeader

if TYPE_CHECKING:
    from gpusession.ui.panes.cost import CostPane
    from gpusession.ui.panes.memory import MemoryPane
    from gpusession.ui.panes.order import OrderPane
    from gpusession.ui.panes.run import RunPane

#: (tab id, title) in key order 1–6.
PANES: tuple[tuple[str, str], ...] = (
    ("checklist", "Checklist"),
    ("run", "Run"),
    ("memory", "Memory"),
    ("validation", "Validation"),
    ("order", "Order"),
    ("cost", "Cost"),
)


def make_pane(tab: str, ctx: UiContext) -> Widget:
    """Build the pane of ``tab``; its module (and what only it uses) is imported now.

    Start-up time: only the visible pane is built before the first frame; each other
    pane is built the first time it is shown (:meth:`MainScreen.ensure_pane`).
    """
    pane_id = f"{tab}-pane"
    if tab == "checklist":
        from gpusession.ui.panes.checklist import ChecklistPane

        return ChecklistPane(ctx, id=pane_id)
    if tab == "run":
        from gpusession.ui.panes.run import RunPane

        return RunPane(ctx, id=pane_id)
    if tab == "memory":
        from gpusession.ui.panes.memory import MemoryPane

        return MemoryPane(ctx, id=pane_id)
    if tab == "validation":
        from gpusession.ui.panes.validation import ValidationPane

        return ValidationPane(ctx, id=pane_id)
    if tab == "order":
        from gpusession.ui.panes.order import OrderPane

        return OrderPane(ctx, id=pane_id)
    if tab == "cost":
        from gpusession.ui.panes.cost import CostPane

        return CostPane(ctx, id=pane_id)
    raise ValueError(f"no pane called {tab!r}")


class PanePlaceholder(Static):
    """Stands in for a pane not shown yet; :meth:`MainScreen.ensure_pane` replaces it."""

    def __init__(self, tab: str) -> None:
        super().__init__("loading…", id=f"{tab}-placeholder")
        self.tab = tab
        self.building = False


class MainScreen(Screen[None]):
    """One session: header, the six panes (keys 1–6), footer with the bindings."""

    ESCAPE_TO_MINIMIZE = False  # H-11: a split arrow key must not act as Escape

    BINDINGS = [
        Binding(str(i + 1), f"show_pane('{tab}')", title, id=f"pane.{tab}", show=False)
        for i, (tab, title) in enumerate(PANES)
    ]

    def __init__(self, ctx: UiContext) -> None:
        super().__init__()
        self.ctx = ctx
        #: Set once the background reads (header GPU words, checklist evidence) have been
        #: started after the first painted frame; a test awaits it before waiting for workers.
        self.background_started = asyncio.Event()

    def compose(self) -> ComposeResult:
        yield SessionHeader(self.ctx, id="session-header")
        with TabbedContent(id="panes", initial="checklist"):
            for i, (tab, title) in enumerate(PANES):
                with TabPane(f"{i + 1} {title}", id=tab):
                    if i == 0:
                        yield make_pane(tab, self.ctx)
                    else:  # built when first shown (start-up time)
                        yield PanePlaceholder(tab)
        yield Footer()

    #: Below this many columns the footer drops its spacing and the palette hint, so the
    #: keys of the busiest pane (Run: r c e d s, ^q) are never cut mid-word (60×20).
    NARROW_COLUMNS = 72

    def on_mount(self) -> None:
        self.set_interval(30.0, self.header.refresh_line, name="header-clock")
        self._fit_footer(self.size.width)
        self.call_after_refresh(self._focus_first_pane)

    def _focus_first_pane(self) -> None:
        """Focus the checklist, unless a key already chose another pane (focus in a hidden
        pane would bring its tab back)."""
        if self.query_one(TabbedContent).active == "checklist":
            self.pane("checklist").focus_main()

    def on_resize(self, event: events.Resize) -> None:
        self._fit_footer(event.size.width)

    def _fit_footer(self, width: int) -> None:
        """Compact footer without the palette hint in a narrow terminal (^p still works)."""
        narrow = 0 < width < self.NARROW_COLUMNS
        footer = self.query_one(Footer)
        footer.compact = narrow
        footer.show_command_palette = not narrow

    def after_first_frame(self) -> None:
        """Start what the first frame does not wait for (the app calls this once it is painted).

        The checklist's whole list with the product's facts (the count reads the results
        CSV), the header's order line (core.order) and GPU words (an NVML reading) and the
        checklist's evidence (NVML, polars) are read in threads; started earlier, their
        imports would hold the GIL while the first frame is laid out and rendered.
        """
        checklist = self.pane("checklist")
        checklist.load_in_background()  # the whole list with its facts (the first frame showed what fits)
        self.header.read_order()
        self._read_gpus()
        checklist.collect_evidence()
        check_host = self.ctx.check_host
        if check_host is None:  # a fake NVML is a test's, not a host to check
            check_host = self.ctx.nvml is None
        if check_host:
            self._check_host()
        self.background_started.set()

    @work(thread=True, group="header-gpu", exit_on_error=False)
    def _read_gpus(self) -> None:
        """One NVML reading for the header's GPU words, before the memory pane is shown."""
        from gpusession.core.gpu.nvml import read_nvml

        snap = read_nvml(self.ctx.nvml)
        self.app.call_from_thread(self._gpus_read, snap)

    @work(thread=True, group="host-check", exit_on_error=False)
    def _check_host(self) -> None:
        """The first open on a server: the GPU found, checked against the order (D8).

        The NVML part only, cheap; the probe is left to the first run or ``check-host``
        (it would take the GPU for 10 s behind the person's back). Nothing happens on a
        machine without a GPU, on a copy checked elsewhere, or when this host was checked.
        """
        from gpusession.core.files.errors import GpusessionError
        from gpusession.core.money.host_check import check_on_open

        s = self.ctx.session
        try:
            with self.ctx.write_lock:
                check = check_on_open(s, nvml=self.ctx.nvml)
        except (GpusessionError, OSError) as exc:
            self.app.call_from_thread(self.app.notify, f"GPU not checked against the order: {exc}",
                                      title="GPU check", severity="warning")
            return
        if check is None:
            return
        words = (f"{check.order_words}. For the probe's figures: gpusession check-host {s.name} "
                 "(the first run does it too).")
        self.app.call_from_thread(self.app.notify, words, title="GPU check",
                                  severity="warning" if check.deviation else "information",
                                  timeout=30 if check.deviation else 8)

    def _gpus_read(self, snapshot: Any) -> None:
        if self.header.snapshot is None:  # the memory pane's reading is newer
            self.header.show_gpus(snapshot)

    @property
    def header(self) -> SessionHeader:
        return self.query_one(SessionHeader)

    def pane(self, tab: str) -> Any:
        return self.query_one(f"#{tab}-pane")

    def maybe_pane(self, tab: str) -> Any | None:
        """The pane, or ``None`` while it has not been shown yet (nothing to update then)."""
        found = self.query(f"#{tab}-pane")
        return found.first() if found else None

    def ensure_pane(self, tab: str) -> AwaitComplete:
        """Build the pane of ``tab`` in place of its placeholder (once); await to have it mounted."""
        found = self.query(PanePlaceholder).filter(f"#{tab}-placeholder")
        holder = found.first() if found else None
        if holder is None or holder.building or holder.parent is None:
            return AwaitComplete.nothing()
        holder.building = True
        parent = holder.parent
        assert isinstance(parent, Widget)
        return AwaitComplete(parent.mount(make_pane(tab, self.ctx), before=holder), holder.remove())

    async def build_all_panes(self) -> None:
        """Build every pane not shown yet (tests that look into hidden panes)."""
        for tab, _ in PANES:
            await self.ensure_pane(tab)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab chosen with the mouse: build its pane if it was not shown yet."""
        if event.pane.id:
            self.ensure_pane(event.pane.id)

    async def action_show_pane(self, tab: str) -> None:
        """Switch to a pane and put the focus in it (keys 1–6)."""
        self.query_one(TabbedContent).active = tab
        await self.ensure_pane(tab)
        pane = self.pane(tab)
        if hasattr(pane, "focus_main"):
            pane.focus_main()
        else:
            pane.focus()

    # -- messages up -------------------------------------------------------------------
    def on_memory_pane_sampled(self, msg: MemoryPane.Sampled) -> None:
        self.header.show_gpus(msg.nvml)

    def on_order_pane_order_changed(self, msg: OrderPane.OrderChanged) -> None:
        self.header.refresh_line()

    def on_cost_pane_package_saved(self, msg: CostPane.PackageSaved) -> None:
        self.header.refresh_line()

    def on_run_pane_row_landed(self, msg: RunPane.RowLanded) -> None:
        mem = self.maybe_pane("memory")
        if mem is not None:
            mem.show_row(msg.row)

    def on_run_pane_run_finished(self, msg: RunPane.RunFinished) -> None:
        self.reload_after_run()

    def on_run_pane_followed_run_ended(self, msg: RunPane.FollowedRunEnded) -> None:
        self.reload_after_run()

    def reload_after_run(self) -> None:
        """A run ended — started in the Run pane, or in another process and followed
        there: its rows are final; the panes that read them re-read, the checklist
        gathers its evidence again and the header its line."""
        for tab in ("validation", "cost", "memory"):
            pane = self.maybe_pane(tab)
            if pane is not None:
                pane.reload()
        self.pane("checklist").collect_evidence()
        self.header.refresh_line()
