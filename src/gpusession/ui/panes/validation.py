"""Validation pane: per run, the four checks in words, the offenders, the quality rule.

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 4). The verdicts come from
the results CSV (``ids_match``, ``format_valid``, ``quality_*``, ``corpus_accepted``) and
the detail from the report files ``<session>/validation/*.toml`` written by
:mod:`gpusession.core.validation` (V1, V2, V8). Every check is a word (passed/failed,
accepted/rejected, not measured), never a colour alone (H-11). The top line says the
session's count in its unit with its source from its one record
(:func:`gpusession.core.retrieval.session_facts.session_facts`, A1, S10), as ``cost``
does. Everything is read in a thread worker; ``v`` re-reads after a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_toml, read_toml_text
from gpusession.core.files.textio import printable
from gpusession.ui.context import (
    UiContext,
    plural,
    run_cell,
    run_label,
    shown,
    state_cell,
    tone,
    yes_no,
)


def quality_words(r: dict[str, Any]) -> str:
    """``macro-F1 0.9512 vs threshold 0.9000 − tolerance 0.0100: met (margin +0.0612)``
    or why not measured; the metric named for people (``metric_words``)."""
    from gpusession.core.records.summary import metric_words

    value, thr = r.get("quality_value"), r.get("quality_threshold")
    metric = metric_words(r.get("quality_metric"))
    if value is None:  # no metric recorded either: not "quality: quality: not measured"
        return f"{metric}: not measured" if r.get("quality_metric") else "not measured"
    if thr is None:
        return f"{metric} {value:.4f} (no threshold recorded)"
    chosen = r.get("quality_tolerance")
    margin = value - (thr - (chosen or 0.0))
    verdict = "met" if margin >= 0 else "not met"
    tol = "tolerance not chosen" if chosen is None else f"tolerance {chosen:.4f}"
    return f"{metric} {value:.4f} vs threshold {thr:.4f} − {tol}: {verdict} (margin {margin:+.4f})"


def stored_quality(path: Path | None) -> dict[str, Any] | None:
    """The ``[quality]`` table of a stored report: the same verdict and words as the CLI."""
    if path is None:
        return None
    try:
        # size- and depth-bounded (H-39, H-48); an archive quotes the corpus: no field bound
        doc = loads_toml(read_toml_text(path), path, field_bound=False)
    except (OSError, ValueError, BadInput):  # unreadable, not UTF-8 or not TOML: the CSV's verdict stands
        return None
    q = doc.get("quality")
    return q if isinstance(q, dict) else None


#: A report name of ``validate --session --name`` (never a path).
_REPORT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def report_file(folder: Path, r: dict[str, Any]) -> Path | None:
    """The stored report of a run, if written: ``validation/<experiment>/<variant>/<phase>-<index>.toml``
    for a timed run, ``validation/<name>.toml`` for an output checked with
    ``validate --session`` (its row: experiment ``validate``, variant ``<name>``, no phase)."""
    exp, variant, phase, index = (r.get(k) for k in ("experiment_id", "variant_id", "phase", "run_index"))
    if exp == "validate" and phase is None and index is None:
        name = str(variant or "")
        if not _REPORT_NAME.fullmatch(name) or ".." in name:  # a hand-edited row: never a path
            return None
        path = folder / f"{name}.toml"
    elif any(p is None for p in (exp, variant, phase, index)):
        return None
    else:
        path = folder / str(exp) / str(variant) / f"{phase}-{index}.toml"
    return path if path.is_file() else None


SECTIONS = (("ids", "IDs"), ("format", "format"), ("quality", "quality rule"), ("overlap", "split overlap"))


def detail_lines(path: Path | None) -> list[str]:
    """The stored report in words: each check passed/failed with its reason, counts,
    first offenders (V2, V4), the per-class table (V6) and the label set used."""
    if path is None:
        return ["No report file for this run in validation/ (the verdict above is from the results CSV)."]
    try:
        # size- and depth-bounded (H-39, H-48); an archive quotes the corpus: no field bound
        doc = loads_toml(read_toml_text(path), path, field_bound=False)
    except (OSError, ValueError, BadInput) as exc:  # unreadable, not UTF-8 (UnicodeDecodeError) or not TOML
        return [f"{path.name}: unreadable ({exc})"]
    lines = [f"Report {path.parent.name}/{path.name}: {doc.get('verdict', '')}"]
    for key, title in SECTIONS:
        sec = doc.get(key)
        if not isinstance(sec, dict):
            continue
        state = "not checked" if sec.get("checked") is False else ("passed" if sec.get("passed") else "FAILED")
        lines.append(f"  {title}: {state} — {sec.get('reason', '')}")
        if key == "ids":
            counts = ", ".join(f"{k.replace('_', ' ')} {sec.get(k, 0)}" for k in
                               ("missing", "extra", "duplicated_in_output", "duplicated_in_expected"))
            lines.append(f"    {counts}")
            for k in ("first_missing", "first_extra", "first_duplicates"):
                if sec.get(k):
                    lines.append(f"    {k.replace('_', ' ')}: {_short(sec[k])}")
        if key == "format" and sec.get("first_bad_records"):
            for bad in sec["first_bad_records"][:5]:
                lines.append(f"    {_short(bad)}")
        if key == "quality" and sec.get("per_class"):
            lines.append(f"    {'class':<16} {'precision':>9} {'recall':>7} {'F1':>6} {'support':>8}")
            for c in sec["per_class"]:
                lines.append(
                    f"    {shown(c.get('label'), '-'):<16} {_num(c.get('precision')):>9} {_num(c.get('recall')):>7} "
                    f"{_num(c.get('f1')):>6} {str(c.get('support', '')):>8}"
                )
    if doc.get("label_set"):
        lines.append(f"  label set used: {', '.join(map(str, doc['label_set']))} ({doc.get('classes_source', '')})")
    return lines


def _num(v: Any) -> str:
    return "-" if v is None else f"{float(v):.3f}"


def _short(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, dict):
        return ", ".join(f"{k} {_short(x)}" for k, x in v.items())
    if isinstance(v, list):
        head = ", ".join(str(x) for x in v[:5])
        return f"{head}{' …' if len(v) > 5 else ''} ({len(v)} listed)"
    return str(v)


#: Said in the status line while a worker reads the results and the reports.
COUNTING = "counting runs and deliverables …"


@dataclass
class RunsRead:
    """The runs table read off the event loop by :func:`read_runs`."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    cells: list[tuple[Any, ...]] = field(default_factory=list)
    accepted_corpora: int = 0
    status: str = ""
    problem: str = ""
    #: runs of several experiments: each run's cell names its experiment
    several: bool = False


def read_runs(session: Any, states: list[Any] | None = None) -> RunsRead:
    """The runs of the results CSV (loads left out), each one's cells (the stored report's
    quality verdict when there is one, so the TUI says what the CLI says) and the status
    line: the runs and the session's one count in its unit with its source
    (:meth:`SessionFacts.count_words`, A1, S10: ``4 approved charts (approved by a
    person, …)``); an unreadable CSV is said in ``problem``, never raised. ``states``: the
    deliverables' file states the box read (the files hashed once per reload). Safe in a
    thread worker (it builds the record, never on the event loop)."""
    from gpusession.core.events.words import corpus_verdict
    from gpusession.core.retrieval.session_facts import session_facts

    try:
        frame = session.results.read()
    except BadInput as exc:
        return RunsRead(problem=f"results unreadable: {exc}")
    rows = [r for r in frame.to_dicts() if r.get("phase") != "load"]
    folder = session.validation_dir
    # several experiments: each run names its own (two "batch-4 cold 1" read alike)
    several = len({r.get("experiment_id") for r in rows if r.get("phase") is not None}) > 1
    cells: list[tuple[Any, ...]] = []
    for r in rows:
        # the verdict of the stored report when there is one (it also applies the maximum
        # degradation rule)
        q = stored_quality(report_file(folder, r))
        if q is not None and "passed" in q:
            met = bool(q["passed"])
        else:
            met = r.get("quality_value") is not None and r.get("quality_threshold") is not None and (
                r["quality_value"] >= r["quality_threshold"] - (r.get("quality_tolerance") or 0.0)
            )
        cells.append((
            run_cell(r, experiment=several),
            state_cell(yes_no(corpus_verdict(r), "accepted", "rejected", "not validated"), tone(corpus_verdict(r))),
            state_cell(yes_no(r.get("ids_match"), "match", "mismatch"), tone(r.get("ids_match"))),
            state_cell(yes_no(r.get("format_valid"), "valid", "invalid"), tone(r.get("format_valid"))),
            state_cell("not measured" if r.get("quality_value") is None else ("met" if met else "not met"),
                       tone(None if r.get("quality_value") is None else met)),
        ))
    # the session's one count in its unit with its source, as `cost` says it (A1, S8, S10):
    # approved charts, a rule's outputs or distinct accepted corpora, never chosen here
    facts = session_facts(session, frame=frame, states=states)
    n = facts.accepted_corpora or 0
    return RunsRead(rows, cells, n, f"{plural(len(rows), 'run')}; {facts.count_words()}. v: re-read",
                    several=several)


class ValidationPane(Vertical):
    """Pane 4: validation verdicts per run and the session's count in its unit (S10)."""

    BINDINGS = [
        Binding("v", "revalidate", "Re-read reports", id="validation.reload"),
        # S9: a / j reach the deliverables from anywhere in the pane (the selected one, or
        # the first); shown only while there are deliverables to decide
        Binding("a", "approve", "Approve", id="validation.approve"),
        Binding("j", "reject", "Reject", id="validation.reject"),
        # the runs and the deliverables are two tables: one key between them, named in
        # the footer (Textual's own Tab also stops on the report box in between)
        Binding("tab", "next_table", "Next table", id="validation.next_table"),
        Binding("shift+tab", "next_table", "Previous table", show=False, id="validation.previous_table"),
    ]

    @dataclass
    class Reloaded(Message):
        runs: int
        accepted_corpora: int

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        self.rows: list[dict[str, Any]] = []
        #: the newest reload; a worker's result from an older one is dropped
        self._generation = 0
        self._several = False
        self._cells: list[tuple[Any, ...]] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="val-status", classes="status")
        table: DataTable[str] = DataTable(id="val-table", cursor_type="row", zebra_stripes=True)
        # The verdict (corpus) right after the run: visible without scrolling sideways in
        # a 60-column terminal, whatever the width of the other cells.
        table.add_columns("run", "corpus", "IDs match", "format", "quality rule")
        yield table
        with VerticalScroll(id="val-detail-box"):
            yield Static("", id="val-detail")
        from gpusession.ui.panes.deliverables import DeliverablesBox

        yield DeliverablesBox(self.ctx, id="val-deliverables")  # S9: a person's decisions, a / j

    def on_mount(self) -> None:
        self.call_after_refresh(self.reload)

    def _tables(self) -> list[DataTable[str]]:
        """The pane's tables shown now: the runs, and the deliverables when there are any."""
        tables = [self.query_one("#val-table", DataTable)]
        box = self.query_one("#val-deliverables")
        if box.display:
            tables.append(box.query_one("#deliv-table", DataTable))
        return tables

    def focus_main(self) -> None:
        """Focus the first table that has rows (the runs, else the deliverables), so the
        arrow keys move a cursor that shows; the runs table when neither has any."""
        tables = self._tables()
        next((t for t in tables if t.row_count), tables[0]).focus()

    def _holds_focus(self) -> bool:
        focused = self.screen.focused if self.is_attached else None
        return focused is not None and self in focused.ancestors_with_self

    def action_next_table(self) -> None:
        """Tab / shift+Tab: the focus to the pane's other table (two at most)."""
        tables = self._tables()
        focused = self.screen.focused
        here = next((i for i, t in enumerate(tables) if t is focused), -1)
        tables[(here + 1) % len(tables)].focus()

    def action_revalidate(self) -> None:
        self.reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``a`` / ``j`` only while the deliverables box lists files (hidden otherwise)."""
        if action in ("approve", "reject"):
            from gpusession.ui.panes.deliverables import DeliverablesBox

            return bool(self.query_one("#val-deliverables", DeliverablesBox).states)
        if action == "next_table":  # one table only: Tab is Textual's own again
            return len(self._tables()) > 1
        return True

    def action_approve(self) -> None:
        """Approve the selected deliverable, as ``gpusession approve`` (S9)."""
        from gpusession.ui.panes.deliverables import DeliverablesBox

        self.query_one("#val-deliverables", DeliverablesBox).action_approve()

    def action_reject(self) -> None:
        """Reject the selected deliverable with a reason, as ``gpusession reject`` (S9)."""
        from gpusession.ui.panes.deliverables import DeliverablesBox

        self.query_one("#val-deliverables", DeliverablesBox).action_reject()

    def reload(self) -> None:
        """Re-read the runs and the deliverables in a thread worker ("counting …" meanwhile);
        a newer reload replaces an older one."""
        from gpusession.ui.panes.deliverables import DeliverablesBox

        self._generation += 1
        box_generation = self.query_one("#val-deliverables", DeliverablesBox).next_generation()
        self.query_one("#val-status", Static).update(COUNTING)
        self._load(self._generation, box_generation)

    @work(thread=True, exclusive=True, group="validation-load", exit_on_error=False)
    def _load(self, generation: int, box_generation: int) -> None:
        """Read off the event loop (the deliverables' states first: the count is made from
        them), shown in turns: the runs (in chunks), then the deliverables."""
        from gpusession.ui.panes.deliverables import (
            DeliverablesBox,
            add_rows_in_chunks,
            read_deliverables,
        )

        # the deliverables first: the count is made from the states they read (hashed once)
        deliverables = read_deliverables(self.ctx.session)
        read = read_runs(self.ctx.session, deliverables.count_states)
        shown_rows, shown_cells = self.rows, self._cells  # replaced, never changed in place
        n = len(shown_rows)  # compared off the loop: the rows and what their cells say (a report re-read)
        same = n if read.rows[:n] == shown_rows and read.cells[:n] == shown_cells else 0
        kept = self.app.call_from_thread(self._show_runs_head, generation, read, shown_rows, same)
        if kept is None:
            return
        # after a run: only its new rows are added (the rows shown stay, cursor included)
        add_rows_in_chunks(self.app, self.query_one("#val-table", DataTable), read.cells[kept:],
                           lambda: generation == self._generation)
        self.app.call_from_thread(self._runs_shown, generation)
        box = self.query_one("#val-deliverables", DeliverablesBox)
        box.fill(box_generation, deliverables)
        self.app.call_from_thread(self._loaded, generation, read)

    def _show_runs_head(self, generation: int, read: RunsRead, shown_rows: list[dict[str, Any]],
                        kept: int) -> int | None:
        """The status of ``read``; the rows of the table that stay: its first ``kept``
        when they are ``read``'s first ones, shown alike, else none (cleared). ``None``
        when nothing more is shown (an older read, or unreadable)."""
        if generation != self._generation:
            return None
        status = self.query_one("#val-status", Static)
        if read.problem:  # the results CSV is unreadable: said in the pane
            status.update(read.problem)
            return None
        table = self.query_one("#val-table", DataTable)
        # a second experiment names each run's experiment: every row is written again
        if not (kept and self.rows is shown_rows and table.row_count == kept and read.several == self._several):
            table.clear()
            kept = 0
        self.rows, self._cells, self._several = read.rows, read.cells, read.several
        status.update(read.status)
        return kept

    def _runs_shown(self, generation: int) -> None:
        if generation == self._generation:
            self.show_detail(0 if self.rows else None)
            self._focus_rows()

    def _loaded(self, generation: int, read: RunsRead) -> None:
        if generation != self._generation:
            return
        self.refresh_bindings()  # Tab between tables appears with the deliverables
        self._focus_rows()
        self.post_message(self.Reloaded(len(read.rows), read.accepted_corpora))

    def _focus_rows(self) -> None:
        focused = self.screen.focused if self.is_attached else None
        if self._holds_focus() and isinstance(focused, DataTable) and not focused.row_count:
            self.focus_main()  # the rows arrived after the focus: never an invisible cursor

    def show_detail(self, index: int | None) -> None:
        box = self.query_one("#val-detail", Static)
        if index is None or index >= len(self.rows):
            box.update("No validated run yet. Runs are validated as they land.")
            return
        from gpusession.core.events.words import corpus_verdict

        r = self.rows[index]
        verdict = corpus_verdict(r)  # an older CSV's false on a failed run: not validated
        self.set_class(verdict is False, "-rejected")
        self.set_class(verdict is True, "-accepted")
        head = [
            f"{run_label(r)}: "
            f"corpus {yes_no(verdict, 'ACCEPTED', 'REJECTED', 'NOT VALIDATED')}",
            f"  IDs: expected {shown(r.get('expected_ids'), 'not measured')}, "
            f"observed {shown(r.get('observed_ids'), 'not measured')}"
            f" — {yes_no(r.get('ids_match'), 'every ID exactly once', 'missing, extra or duplicate IDs')}",
            f"  format: {yes_no(r.get('format_valid'), 'valid', 'invalid')}",
            f"  quality: {quality_words(r)}",
        ]
        q = stored_quality(report_file(self.ctx.session.validation_dir, r))
        if q is not None and q.get("reason"):
            head[-1] = f"  quality: {'met' if q.get('passed') else 'NOT MET'} — {q['reason']}"
        if r.get("notes"):
            head.append(f"  notes: {r['notes']}")
        lines = head + detail_lines(report_file(self.ctx.session.validation_dir, r))
        # Free text read from files a person may edit (CSV notes, report TOMLs): control
        # characters escaped, and plain text, never Rich markup.
        box.update(Text("\n".join(printable(line, keep="") for line in lines)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "val-table":
            self.show_detail(event.cursor_row)
