"""The Run pane's summary view: the summary table (R6), the duration charts, read in a worker.

Who calls it: :class:`gpusession.ui.panes.run.RunPane`, which composes one
:class:`RunSummaryView` beside the live rows and reads :func:`read_summary` in a thread
worker (the results CSV, the journal and the summary grow with the session: never on
the event loop). The summary lines with their verdicts and the variant to keep are the
session's one record's (:func:`gpusession.core.retrieval.session_facts.session_facts`,
A1, D5), as ``show`` and the report render them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Label, Static

from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.files.units import format_seconds_range
from gpusession.core.folder.journal import RunProgress, run_progress
from gpusession.ui.charts import Bars
from gpusession.ui.context import fmt_seconds, shown
from gpusession.ui.panes.run_words import verdict_cell

#: Said under the summary until the pane's first read of the session is shown.
COUNTING = "counting …"


@dataclass
class SummaryRead:
    """What the Run pane shows of one experiment, read off the event loop by :func:`read_summary`.

    Attributes:
        problem: the results CSV does not read (said in the pane), else ``""``.
        tail: the newest 500 rows (dicts), oldest first.
        height: the experiment's rows.
        runs_recorded: its cold/warm rows; ``last_run``: its newest invocation in the journal.
        keep_text: the report's Keep line (D5, D7), ``""`` before a warm run.
        table: the summary table's cells (R6), one tuple per line.
        chart_label: the words above the duration charts.
        warm: ``(variant, warm durations in s)`` in run order, per variant.
    """

    problem: str = ""
    tail: list[dict[str, Any]] = field(default_factory=list)
    height: int = 0
    runs_recorded: int = 0
    last_run: RunProgress | None = None
    keep_text: str = ""
    table: list[tuple[Any, ...]] = field(default_factory=list)
    chart_label: str = ""
    warm: list[tuple[Any, list[float]]] = field(default_factory=list)


def read_summary(session: Any, experiment_id: str | None) -> SummaryRead | None:
    """The Run pane's view of ``experiment_id`` (``None`` when there is none); safe in a
    thread worker: it reads the results CSV, the journal and the session's record
    (:class:`SessionFacts`: the summary lines, their verdicts and the variant to keep,
    A1, D5), writes nothing."""
    if experiment_id is None:
        return None
    import polars as pl

    from gpusession.core.folder.journal import read_records
    from gpusession.core.retrieval.session_facts import session_facts

    try:
        everything = session.results.read()
    except BadInput as exc:
        return SummaryRead(problem=f"results unreadable: {exc}")
    frame = everything.filter(pl.col("experiment_id") == experiment_id)
    facts = session_facts(session, frame=everything)
    out = SummaryRead(tail=frame.tail(500).to_dicts(), height=frame.height)
    out.runs_recorded = frame.filter(pl.col("phase").is_in(["cold", "warm"])).height
    try:
        records = read_records(session.journal_path)
    except (OSError, BadInput):  # unreadable journal (not a plain file): the rows alone are said
        records = []
    out.last_run = run_progress(records, experiment_id)
    try:
        out.keep_text = printable(" ".join(f"Keep: {k.words()}." for k in facts.keep
                                           if str(k.experiment_id) == str(experiment_id)))
        lines = [line for line in facts.summary if str(line.experiment_id) == str(experiment_id)]
    except BadInput:  # unreadable rows: the summary says so
        out.keep_text, lines = "", []
    out.table = [
        (shown(line.variant_words(), "-"), shown(line.phase, "-"), str(line.n),  # the quality beside the times
         fmt_seconds(line.median_seconds), format_seconds_range(line.min_seconds, line.max_seconds),
         line.quality_words(), verdict_cell(line))  # D5
        for line in lines
    ]
    warm = frame.filter(pl.col("phase") == "warm")
    out.chart_label = ("Warm run durations in run order (bars from 0 s to the slowest):"
                       if warm.height else "No warm runs yet.")
    out.warm = [(vid, [x for x in part["elapsed_seconds"].to_list() if x is not None])
                for (vid,), part in warm.group_by(["variant_id"], maintain_order=True)]
    return out


def end_verdicts(session: Any, experiment_id: str | None, rows_written: int, *, resumed: bool) -> tuple[bool, str]:
    """How the run that just ended is judged, from one read of the results CSV (in the run
    worker: never on the event loop).

    Returns:
        ``(all_failed, verdicts)``: whether no run of the ``rows_written`` rows it wrote
        measured anything (the CLI's words, R7), and ``"; variants: 2 accepted, 1 REJECTED"``
        (D5), ``""`` when it wrote no row. A plain run is judged by the rows it wrote; a
        resume continues the experiment's schedule, so every row of the experiment is
        judged, as ``show`` and ``run --resume`` judge them (a rejected first result
        stays). An unreadable CSV: ``(False, "")`` (the summary says so).
    """
    if not rows_written or experiment_id is None:
        return False, ""
    import polars as pl

    from gpusession.core.records.summary import (
        every_run_failed,
        variant_verdicts,
        verdict_count_words,
    )

    try:
        frame = session.results.read().filter(pl.col("experiment_id") == experiment_id)
    except BadInput:
        return False, ""
    mine = frame.tail(rows_written)
    judged = frame if resumed else mine
    return every_run_failed(mine), "; " + verdict_count_words(*variant_verdicts(judged))


class SummaryTable(DataTable[str]):
    """A DataTable that draws again, caches cleared, once its column widths are measured.

    Why: Textual (8.2) measures widths when idle after ``add_rows``, but its render caches
    are keyed without the width, so a header drawn in between keeps its label widths
    (seen when the rows come from a worker). A narrow patch over the library's idle hook.
    """

    async def _on_idle(self, event: events.Idle) -> None:
        pending = bool(getattr(self, "_updated_cells", None) or getattr(self, "_require_update_dimensions", False))
        await super()._on_idle(event)
        if pending and hasattr(self, "_clear_caches"):
            self._clear_caches()
            self.refresh()


class RunSummaryView(VerticalScroll):
    """The summary table of the current experiment and one duration chart per variant."""

    def compose(self) -> ComposeResult:
        summ: DataTable[str] = SummaryTable(id="run-summary-table", cursor_type="row")
        # 80 columns hold the figures and the verdict; a group not measured in full says how
        # in its verdict cell ("accepted; 2 of 5 runs failed"), never in a column cut away (D5)
        summ.add_columns("variant", "phase", "n", "median", "min–max", "quality", "verdict")
        yield summ
        yield Static("", id="run-chart-label", classes="section")
        yield Vertical(id="run-charts")

    def counting(self) -> None:
        """Say "counting …" until the first read is shown."""
        self.query_one("#run-chart-label", Static).update(COUNTING)

    def show(self, read: SummaryRead | None) -> None:
        """The table and the charts of ``read`` (``None``: no experiment; a problem is said)."""
        table = self.query_one("#run-summary-table", DataTable)
        table.clear()
        charts = self.query_one("#run-charts", Vertical)
        charts.remove_children()
        label = self.query_one("#run-chart-label", Static)
        if read is None or read.problem:  # the results CSV is unreadable: said in the pane
            label.update(read.problem if read is not None else "")
            return
        table.add_rows(read.table)
        label.update(read.chart_label)
        slowest = max((max(d) for _, d in read.warm if d), default=None)
        for vid, data in read.warm:
            if not data:
                continue
            charts.mount(  # one scale for every variant: 0 s to the slowest warm run
                Horizontal(
                    Label(f"{str(vid):<8.8} ", classes="bar-label"),
                    Bars(data, low=0.0, high=slowest, classes="duration-spark"),
                    Label(f" {format_seconds_range(min(data), max(data))}", classes="spark-range"),
                    classes="chart-row",
                )
            )


__all__ = ["COUNTING", "RunSummaryView", "SummaryRead", "end_verdicts", "read_summary"]
