"""The deliverables in the Validation pane: approved / rejected / still to decide, and ``a`` / ``j`` (S9).

Who calls it: :class:`gpusession.ui.panes.validation.ValidationPane`, which holds one
:class:`DeliverablesBox`. A decision goes through
:func:`gpusession.core.folder.approvals.decide`, the function behind ``gpusession approve``
and ``reject``, so the pane and the CLI record the same thing. ``j`` rejects (``x`` is
the app's Extend key).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from gpusession.core.files.textio import printable
from gpusession.ui.context import UiContext, state_cell

STATE_WORDS = {"approved": "approved", "rejected": "rejected", "changed": "changed after approval",
               "missing": "no longer there", "refused": "there but never read", "to-decide": "still to decide"}

#: Said in the box while a worker reads ``approvals.toml`` and hashes the files.
COUNTING = "Deliverables: counting …"

UNREADABLE = "deliverables unreadable: "

#: Rows handed to the event loop at once: a few thousand deliverables fill the table in
#: several short turns, keys handled in between.
CHUNK_ROWS = 500


def add_rows_in_chunks(app: Any, table: DataTable[Any], rows: Sequence[tuple[Any, ...]],
                       current: Callable[[], bool]) -> None:
    """Add ``rows`` to ``table`` from a thread worker, :data:`CHUNK_ROWS` per turn of the event loop.

    ``current`` is asked on the loop before each chunk: a newer reload (which cleared the
    table) makes the rest of an older one stop.
    """
    def add(chunk: Sequence[tuple[Any, ...]]) -> bool:
        if not current():
            return False
        table.add_rows(chunk)
        return True

    for i in range(0, len(rows), CHUNK_ROWS):
        if not app.call_from_thread(add, rows[i:i + CHUNK_ROWS]):
            return


@dataclass
class DeliverablesRead:
    """What the box shows, read off the event loop by :func:`read_deliverables` (S9, S10)."""

    folder: Any = None
    proposed: bool = False
    states: list[Any] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    status: str = ""
    #: the states the count was made from (a recorded folder), ``None``: the count read its own
    count_states: list[Any] | None = None


def read_deliverables(session: Any) -> DeliverablesRead:
    """The deliverables, their decisions and the count; ``approvals.toml`` parsed once and
    each file hashed once (the count is made from the same states).

    Safe in a thread worker (reads only, and the count's cache for ``status``). A problem
    is said in ``status``, never raised.
    """
    from gpusession.core.files.errors import BadInput
    from gpusession.core.folder.approvals import deliverables_folder, file_states, read_approvals
    from gpusession.core.money.count import session_count
    from gpusession.core.validation.accept_rule import last_accepted_output

    out = DeliverablesRead()
    try:
        doc = read_approvals(session)
        recorded = deliverables_folder(session, doc)
        out.folder = recorded or last_accepted_output(session)
        out.proposed = recorded is None and out.folder is not None
        out.states = file_states(session, proposed=out.folder, doc=doc)
        # the same states as `status` counts once a folder is recorded (S10)
        out.count_states = out.states if recorded is not None else None
        count = session_count(session, cache=True, states=out.count_states)
    except BadInput as exc:
        out.status = printable(f"{UNREADABLE}{exc}", keep="")
        out.states = []
        return out
    # the count's typed facts (S9, S10), never words matched: repeats and conflicts per file
    repeats = {r.path: r.same_as for r in count.same_bytes}
    in_conflict = {p for c in count.conflicts for p in c.paths()}
    out.rows = [row_cells(st, repeats, in_conflict) for st in out.states]
    where = (f" in {out.folder} (the last accepted output: the first decision records it)"
             if out.proposed else "")
    lines = [f"Deliverables{where}: {count.with_source()}; "
             "a: approve, j: reject the selected one", *(c.words() for c in count.conflicts)]
    out.status = "\n".join(printable(line, keep="") for line in lines)  # one line each (H-44)
    return out


def row_cells(st: Any, repeats: dict[str, str] | None = None, in_conflict: set[str] | None = None) -> tuple[Any, ...]:
    """The table's cells of one file's state: path, decision in words, by, when."""
    d = st.decision
    words = STATE_WORDS[st.state]
    red = st.state == "rejected"  # a rejected file in red, as a help; its words say the rest
    if st.state in ("missing", "refused") and d is not None:  # as `deliverables` says it: the decision kept
        words = f"{d.decision}, {words}"
    if in_conflict and st.path in in_conflict:
        words, red = f"{words}: CONFLICT, settle it", False
    elif repeats and st.path in repeats:
        words, red = f"{words}: same bytes as {repeats[st.path]}, counted once", False
    return (printable(st.path, keep=""), state_cell(words, "bad" if red else "plain"),
            printable(d.by, keep="") if d else "-",
            d.at.strftime("%Y-%m-%d %H:%M UTC") if d else "-")


class DeliverablesBox(Vertical):
    """The session's deliverable files with each one's decision (S9); ``a`` approve, ``j`` reject."""

    DEFAULT_CSS = """
    DeliverablesBox { height: auto; max-height: 14; }
    DeliverablesBox #deliv-table { height: auto; max-height: 12; }
    """
    BINDINGS = [
        Binding("a", "approve", "Approve", id="deliverables.approve"),
        Binding("j", "reject", "Reject", id="deliverables.reject"),
    ]

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        self.states: list[Any] = []
        #: the folder listed: the recorded one, else the last accepted output (proposed)
        self.folder: Any = None
        self.proposed = False
        self._generation = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="deliv-status", classes="status")
        table: DataTable[str] = DataTable(id="deliv-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("deliverable", "decision", "by", "when")
        yield table

    def on_mount(self) -> None:
        self.display = False  # shown once a read finds deliverables

    def next_generation(self) -> int:
        """A new read starts: the results of older ones are dropped."""
        self._generation += 1
        return self._generation

    def reload(self) -> None:
        """Re-read ``approvals.toml`` and the deliverables folder in a worker; say the count (S10)."""
        self._read(self.next_generation())

    @work(thread=True, exclusive=True, group="deliverables-read", exit_on_error=False)
    def _read(self, generation: int) -> None:
        self.fill(generation, read_deliverables(self.ctx.session))

    def fill(self, generation: int, read: DeliverablesRead) -> None:
        """Show ``read`` (called from a thread worker): only the rows that changed when the
        files listed are the same (a decision), else the table again, in chunks."""
        mode = self.app.call_from_thread(self._show_head, generation, read)
        if mode == "same":
            self.app.call_from_thread(self._update_rows, generation, read.rows)
        elif mode == "new":
            add_rows_in_chunks(self.app, self.query_one("#deliv-table", DataTable), read.rows,
                               lambda: generation == self._generation)

    def _show_head(self, generation: int, read: DeliverablesRead) -> str | None:
        """The status and the states of ``read``; ``"same"`` when the table lists the same
        files (their cells are compared next), ``"new"`` when it was cleared for new rows,
        ``None`` when nothing more is shown (an older read, or unreadable)."""
        if generation != self._generation:
            return None
        self.query_one("#deliv-status", Static).update(Text(read.status))
        if read.status.startswith(UNREADABLE):
            self.display = True  # said, never hidden
            return None
        table = self.query_one("#deliv-table", DataTable)
        same = ([st.path for st in read.states] == [st.path for st in self.states]
                and table.row_count == len(read.rows))
        self.folder, self.proposed, self.states = read.folder, read.proposed, read.states
        self.display = bool(self.states)
        self.refresh_bindings()  # the pane's a / j appear with the first deliverable
        if same:
            return "same"
        table.clear()
        return "new"

    def _update_rows(self, generation: int, rows: list[tuple[Any, ...]]) -> None:
        """The cells that differ from the table's, changed in place (the cursor stays)."""
        if generation != self._generation:
            return
        table = self.query_one("#deliv-table", DataTable)
        for i, cells in enumerate(rows):
            for j, cell in enumerate(cells):
                if str(table.get_cell_at(Coordinate(i, j))) != str(cell):
                    table.update_cell_at(Coordinate(i, j), cell)

    def current(self) -> Any:
        """The selected deliverable's state, ``None`` when there is none."""
        row = self.query_one("#deliv-table", DataTable).cursor_row
        return self.states[row] if self.states and 0 <= row < len(self.states) else None

    def _decide(self, decision: str) -> None:
        from gpusession.ui.modals import Field, FormModal

        st = self.current()
        if st is None:
            self.app.notify("no deliverable selected")
            return
        label = "Criteria (optional)" if decision == "approved" else "Why (required)"
        verb = "Approve" if decision == "approved" else "Reject"

        def save(result: dict[str, str]) -> None:
            from gpusession.core.folder.approvals import decide

            folder = self.folder
            assert folder is not None  # a listed file has a folder
            with self.ctx.write_lock:  # raises BadInput: the form stays open and says why
                made = decide(self.ctx.session, [folder / st.path], decision=decision, by=result["by"],
                              text=result["text"] or None, deliverables=folder)
            self.app.call_from_thread(self._decided, made)

        # in a thread: decide reads and writes approvals.toml (thousands of decisions)
        self.app.push_screen(FormModal(f"{verb} {printable(st.path, keep='')}",
                                       [Field("by", "Who decides", placeholder="e.g. Ana Reviewer"),
                                        Field("text", label)], on_save=save, save_in_thread=True))

    def _decided(self, made: list[Any]) -> None:
        """The decided file's row says its decision at once; the count, repeats and
        conflicts are read again in a worker, which changes only the cells that differ."""
        from gpusession.core.folder.approvals import FileState

        table = self.query_one("#deliv-table", DataTable)
        for d in made:
            index = next((i for i, s in enumerate(self.states) if s.path == d.path), None)
            if index is None or index >= table.row_count:
                continue
            self.states[index] = FileState(d.path, d.decision, d, d.sha256)
            for j, cell in enumerate(row_cells(self.states[index])):
                table.update_cell_at(Coordinate(index, j), cell)
        self.reload()

    def action_approve(self) -> None:
        """Approve the selected deliverable, as ``gpusession approve``."""
        self._decide("approved")

    def action_reject(self) -> None:
        """Reject the selected deliverable with a reason, as ``gpusession reject``."""
        self._decide("rejected")


__all__ = ["DeliverablesBox"]
