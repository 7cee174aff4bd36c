"""The Run pane's progress: the overall bar, one bar per variant, and the live rows table.

Who calls it: :class:`gpusession.ui.panes.run.RunPane`, which composes one
:class:`RunProgressView` under its status line and one :class:`RunRowsTable` beside the
summary, and tells them what its run (or a followed one) did. Why a module of its own:
the bars and the rows only draw what they are told; what runs and when stays in the pane.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Label, ProgressBar

from gpusession.core.events import corpus_verdict
from gpusession.core.folder.journal import RunProgress
from gpusession.ui.context import fmt_seconds, shown, state_cell, tone
from gpusession.ui.panes.run_words import accepted_words, peak_words

#: the overall bar while idle: a determinate, empty bar (no indeterminate pulse)
IDLE_TOTAL = 100

#: the phases a variant's bar counts (a load row is no run of the schedule)
MEASURED = ("cold", "warm")


def bar_id(vid: Any) -> str:
    """A variant's bar id, ``bar-b_1`` for ``b/1`` (an id holds letters, digits, ``-`` and ``_``)."""
    return "bar-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in str(vid))


class RunRowsTable(DataTable[str]):
    """The live rows, newest last: variant, phase, run, elapsed, peak allocated / reserved
    (one cell, never added: M2), the corpus verdict in words (H-11)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        # allocated and reserved side by side in one cell, so the last column stays whole at 80 columns
        self.add_columns("variant", "phase", "run", "elapsed", "peak alloc / reserved", "corpus")

    def add_result(self, r: dict[str, Any]) -> None:
        """Add one row (the results CSV's column names; ``None``: not measured) and select it."""
        failed = r.get("elapsed_seconds") is None and r.get("phase") != "load"
        self.add_row(
            shown(r.get("variant_id"), "-"),
            shown(r.get("phase"), "-"),
            shown(r.get("run_index"), "-"),
            "failed" if failed else fmt_seconds(r.get("elapsed_seconds")),
            peak_words(r.get("peak_allocated_bytes"), r.get("peak_reserved_bytes")),
            state_cell(accepted_words(r), tone(corpus_verdict(r))),
        )
        self.move_cursor(row=self.row_count - 1)

    def show_rows(self, rows: list[dict[str, Any]]) -> None:
        """Show ``rows`` (oldest first) in place of what was shown."""
        self.clear()
        for r in rows:
            self.add_result(r)


class RunProgressView(Vertical):
    """The overall bar (``#run-overall``, ``#run-bar``) and one bar per variant
    (``#run-variants``, shown while a run of the pane goes)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        #: runs expected per variant of the run in flight; measured rows counted per variant
        self.expected: dict[str, int] = {}
        self._done: Counter[str] = Counter()

    def compose(self) -> ComposeResult:
        with Horizontal(id="run-overall"):
            yield Label("overall ", classes="bar-label")
            yield ProgressBar(total=IDLE_TOTAL, show_eta=False, id="run-bar")  # idle: empty, no pulse
        yield Vertical(id="run-variants")

    @property
    def bar(self) -> ProgressBar:
        return self.query_one("#run-bar", ProgressBar)

    def start(self, expected: dict[str, int]) -> None:
        """A run starts: the overall bar pulses until the first progress, one empty bar
        per variant of ``expected`` (runs per variant)."""
        self.bar.update(total=None, progress=0)
        box = self.query_one("#run-variants", Vertical)
        box.remove_children()
        self.expected, self._done = dict(expected), Counter()
        for vid, total in self.expected.items():
            box.mount(
                Horizontal(
                    Label(f"{vid:<8.8} ", classes="bar-label"),
                    ProgressBar(total=total, show_eta=False, id=bar_id(vid)),
                    classes="variant-bar",
                )
            )

    def advance(self, done: int, total: int) -> None:
        """The runner's progress: ``done`` of ``total`` runs (``0`` total: nothing said)."""
        if total:
            self.bar.update(total=total, progress=done)

    def row_landed(self, r: dict[str, Any]) -> None:
        """A row of the run in flight landed: its variant's bar moves on a measured run."""
        vid = r.get("variant_id")
        if vid not in self.expected or r.get("phase") not in MEASURED:
            return
        self._done[vid] += 1
        try:
            self.query_one(f"#{bar_id(vid)}", ProgressBar).update(progress=self._done[vid])
        except NoMatches:  # the bars are being rebuilt (another experiment picked)
            pass

    def ended(self) -> None:
        """The run ended: no pulsing ``--%`` left behind when nothing ran."""
        if self.bar.total is None:
            self.bar.update(total=IDLE_TOTAL, progress=0)

    def followed(self, done: int | None, total: int | None) -> None:
        """A run in another process: ``done`` of ``total`` runs as its journal says (``None``: unsaid)."""
        if total:
            self.bar.update(total=total, progress=done or 0)
        else:
            self.bar.update(total=IDLE_TOTAL, progress=0)

    def show_state(self, *, running: bool, stands: bool, last_run: RunProgress | None, runs_recorded: int) -> None:
        """The bars true to the state: the variants' bars while ``running``; the overall bar
        as it stands while ``stands`` (a run here or followed, or the words of its end);
        else the last run's share done (never 0 % above its summary), hidden when runs
        are recorded without a journal record of how many were scheduled, empty when
        nothing ran yet."""
        self.query_one("#run-variants").display = running
        overall = self.query_one("#run-overall")
        if stands:
            overall.display = True
            return
        if last_run is not None and last_run.runs_scheduled:
            overall.display = True
            self.bar.update(total=last_run.runs_scheduled, progress=last_run.runs_done)
        elif runs_recorded:
            overall.display = False
        else:
            overall.display = True
            self.bar.update(total=IDLE_TOTAL, progress=0)


__all__ = ["IDLE_TOTAL", "RunProgressView", "RunRowsTable", "bar_id"]
