"""The deliverables in the Validation pane: approved / rejected / still to decide, and ``a`` / ``j`` (S9).

Who calls it: :class:`gpusession.ui.panes.validation.ValidationPane`, which holds one
:class:`DeliverablesBox`. A decision goes through
:func:`gpusession.core.folder.approvals.decide`, the function behind ``gpusession approve``
and ``reject``, so the pane and the CLI record the same thing. ``j`` rejects (``x`` is
the app's Extend key).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from gpusession.core.files.textio import printable
from gpusession.ui.context import UiContext, state_cell

STATE_WORDS = {"approved": "approved", "rejected": "rejected", "changed": "changed after approval",
               "missing": "no longer there", "refused": "there but never read", "to-decide": "still to decide"}


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

    def compose(self) -> ComposeResult:
        yield Static("", id="deliv-status", classes="status")
        table: DataTable[str] = DataTable(id="deliv-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("deliverable", "decision", "by", "when")
        yield table

    def reload(self) -> None:
        """Re-read ``approvals.toml`` and the deliverables folder; say the count (S10)."""
        from gpusession.core.files.errors import BadInput
        from gpusession.core.folder.approvals import deliverables_folder, file_states
        from gpusession.core.money.count import session_count
        from gpusession.core.validation.accept_rule import last_accepted_output

        table = self.query_one("#deliv-table", DataTable)
        table.clear()
        status = self.query_one("#deliv-status", Static)
        try:
            recorded = deliverables_folder(self.ctx.session)
            self.folder = recorded or last_accepted_output(self.ctx.session)
            self.proposed = recorded is None and self.folder is not None
            self.states = file_states(self.ctx.session, proposed=self.folder)
            count = session_count(self.ctx.session, cache=True)  # status says what this pane says (S10)
        except BadInput as exc:
            status.update(Text(printable(f"deliverables unreadable: {exc}", keep="")))
            return
        self.display = bool(self.states)
        self.refresh_bindings()  # the pane's a / j appear with the first deliverable
        # the count's typed facts (S9, S10), never words matched: repeats and conflicts per file
        repeats = {r.path: r.same_as for r in count.same_bytes}
        in_conflict = {p for c in count.conflicts for p in c.paths()}
        for st in self.states:
            d = st.decision
            words = STATE_WORDS[st.state]
            if st.state in ("missing", "refused") and d is not None:  # as `deliverables` says it: the decision kept
                words = f"{d.decision}, {words}"
            if st.path in in_conflict:
                words = f"{words}: CONFLICT, settle it"
            elif st.path in repeats:
                words = f"{words}: same bytes as {repeats[st.path]}, counted once"
            table.add_row(printable(st.path, keep=""), state_cell(words),
                          printable(d.by, keep="") if d else "-",
                          d.at.strftime("%Y-%m-%d %H:%M UTC") if d else "-")
        where = (f" in {self.folder} (the last accepted output: the first decision records it)"
                 if self.proposed else "")
        lines = [f"Deliverables{where}: {count.words()} ({count.source_words()}); "
                 "a: approve, j: reject the selected one", *(c.words() for c in count.conflicts)]
        status.update(Text("\n".join(printable(line, keep="") for line in lines)))  # one line each (H-44)

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
                decide(self.ctx.session, [folder / st.path], decision=decision, by=result["by"],
                       text=result["text"] or None, deliverables=folder)
            self.reload()

        self.app.push_screen(FormModal(f"{verb} {printable(st.path, keep='')}",
                                       [Field("by", "Who decides", placeholder="e.g. Ana Reviewer"),
                                        Field("text", label)], on_save=save))

    def action_approve(self) -> None:
        """Approve the selected deliverable, as ``gpusession approve``."""
        self._decide("approved")

    def action_reject(self) -> None:
        """Reject the selected deliverable with a reason, as ``gpusession reject``."""
        self._decide("rejected")


__all__ = ["DeliverablesBox"]
