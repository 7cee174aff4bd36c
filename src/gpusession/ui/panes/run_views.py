"""The Run pane's two views: the live rows and the summary, one at a time, side by side when wide.

Who calls it: :class:`gpusession.ui.panes.run.RunPane`, which composes one
:class:`RunViews` under its bars and says which view a state calls for (``s`` switches).
Why a module of its own: hiding the focused table must not lose the focus (and with it
the pane's keys), a rule of the two views alone.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.dom import NoScreen

from gpusession.ui.panes.run_progress import RunRowsTable
from gpusession.ui.panes.run_summary import RunSummaryView

#: from this many columns the live rows and the summary show side by side
WIDE_COLUMNS = 150


class RunViews(Horizontal):
    """The live rows (``#run-rows``) and the summary (``#run-summary``); state classes
    ``-view-rows`` / ``-view-summary`` say which shows, ``-wide`` shows both (``app.tcss``)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.add_class("-view-rows")

    def compose(self) -> ComposeResult:
        yield RunRowsTable(id="run-rows")
        yield RunSummaryView(id="run-summary")

    @property
    def view(self) -> str:
        """``run-rows`` (live rows) or ``run-summary``; both show side by side when wide."""
        return "run-summary" if self.has_class("-view-summary") else "run-rows"

    def focus_main(self) -> None:
        """Focus the table of the view shown."""
        self.query_one("#run-summary-table" if self.view == "run-summary" else "#run-rows").focus()

    def show_view(self, view: str) -> None:
        """Show the live rows or the summary, keeping the focus in the views.

        Hiding the focused table would leave the screen with no focus at all, and with
        it the pane's keys (``c`` to cancel, ``r``) until the person pressed 1 then 2.
        """
        keep = self._holds_focus()
        self.set_class(view == "run-summary", "-view-summary")
        self.set_class(view != "run-summary", "-view-rows")
        if keep:
            self.focus_main()
            self.call_after_refresh(self._ensure_focus)

    def _shown(self) -> bool:
        """Whether these views are on the main screen's active tab."""
        node: Any = self
        while node is not None and node is not self.screen:
            if not node.display:
                return False
            node = node.parent
        return True

    def _holds_focus(self) -> bool:
        """The screen's focus is in these views, or lost while they are shown."""
        try:
            focused = self.screen.focused
        except NoScreen:  # not mounted (yet, or any more)
            return False
        if focused is None:
            return self._shown()
        return self in focused.ancestors_with_self

    def _ensure_focus(self) -> None:
        """After the layout settled: if the focus is gone or hidden, take it back."""
        if not self._holds_focus():
            return
        node: Any = self.screen.focused
        while node is not None and node is not self:
            if not node.display:
                break
            node = node.parent
        if node is not self:
            self.focus_main()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width >= WIDE_COLUMNS, "-wide")


__all__ = ["WIDE_COLUMNS", "RunViews"]
