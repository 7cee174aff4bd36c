"""The main screen: header line, six panes in a tab bar, footer (design.md §UI).

Who calls it: :class:`gpusession.ui.app.GpuSessionApp` pushes one :class:`MainScreen`.
Attributes down, messages up (style.md §4): panes post messages; this screen reacts by
redrawing the header and telling the other panes to reload (a run landed → memory,
validation and cost re-read; an order changed → header).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from gpusession.ui.context import UiContext
from gpusession.ui.header import SessionHeader
from gpusession.ui.panes.checklist import ChecklistPane

if TYPE_CHECKING:
    from gpusession.ui.panes.cost import CostPane
    from gpusession.ui.panes.memory import MemoryPane
    from gpusession.ui.panes.order import OrderPane
    from gpusession.ui.panes.run import RunPane

#: (tab id, title, module under gpusession.ui.panes, class) in key order 1–6.
PANES: tuple[tuple[str, str, str, str], ...] = (
    ("checklist", "Checklist", "checklist", "ChecklistPane"),
    ("run", "Run", "run", "RunPane"),
    ("memory", "Memory", "memory", "MemoryPane"),
    ("validation", "Validation", "validation", "ValidationPane"),
    ("order", "Order", "order", "OrderPane"),
    ("cost", "Cost", "cost", "CostPane"),
)


class PanePlaceholder(Static):
    """Stands in for a hidden pane until the first frame is drawn (start-up time).

    It then imports the pane's module (and the widgets only that pane uses), mounts
    the pane in its place and removes itself.
    """

    def __init__(self, ctx: UiContext, tab: str, module: str, cls: str) -> None:
        super().__init__("loading…")
        self.ctx, self.tab, self.module, self.cls = ctx, tab, module, cls

    def on_mount(self) -> None:
        self.call_after_refresh(self._materialize)

    async def _materialize(self) -> None:
        mod = importlib.import_module(f"gpusession.ui.panes.{self.module}")
        pane = getattr(mod, self.cls)(self.ctx, id=f"{self.tab}-pane")
        parent = self.parent
        if parent is not None:
            await parent.mount(pane, after=self)  # type: ignore[attr-defined]
            await self.remove()


class MainScreen(Screen[None]):
    """One session: header, the six panes (keys 1–6), footer with the bindings."""

    ESCAPE_TO_MINIMIZE = False  # H-11: a split arrow key must not act as Escape

    BINDINGS = [
        Binding(str(i + 1), f"show_pane('{tab}')", title, id=f"pane.{tab}", show=False)
        for i, (tab, title, _, _) in enumerate(PANES)
    ]

    def __init__(self, ctx: UiContext) -> None:
        super().__init__()
        self.ctx = ctx

    def compose(self) -> ComposeResult:
        yield SessionHeader(self.ctx, id="session-header")
        with TabbedContent(id="panes", initial="checklist"):
            for i, (tab, title, module, cls) in enumerate(PANES):
                with TabPane(f"{i + 1} {title}", id=tab):
                    if i == 0:
                        yield ChecklistPane(self.ctx, id=f"{tab}-pane")
                    else:  # hidden panes come right after the first frame (start-up time)
                        yield PanePlaceholder(self.ctx, tab, module, cls)
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(30.0, self.header.refresh_line, name="header-clock")
        self.call_after_refresh(self.pane("checklist").focus_main)

    @property
    def header(self) -> SessionHeader:
        return self.query_one(SessionHeader)

    def pane(self, tab: str) -> Any:
        return self.query_one(f"#{tab}-pane")

    def maybe_pane(self, tab: str) -> Any | None:
        """The pane, or ``None`` in the instant before a lazy pane is mounted."""
        found = self.query(f"#{tab}-pane")
        return found.first() if found else None

    def action_show_pane(self, tab: str) -> None:
        """Switch to a pane and put the focus in it (keys 1–6)."""
        self.query_one(TabbedContent).active = tab
        pane = self.maybe_pane(tab)
        if pane is None:
            self.call_after_refresh(self.action_show_pane, tab)
        elif hasattr(pane, "focus_main"):
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
        for tab in ("validation", "cost", "memory"):
            pane = self.maybe_pane(tab)
            if pane is not None:
                pane.reload()
        self.pane("checklist").collect_evidence()
        self.header.refresh_line()
