"""Cost pane: package total, plan coverage, cost per accepted deliverable, extensions.

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 6). Figures come from
:func:`gpusession.core.money.cost.cost_report` (exact decimals, K1/K2); the count with its
unit and source, the cost per deliverable and the variant to keep are the session's one
record (:func:`gpusession.core.retrieval.session_facts.session_facts`, A1, S10), built in a
thread worker, as ``cost NAME`` and the report render it — with none measured only the
package cost is shown. The plan field starts with the plan kept with the package (K6), as
``cost NAME`` prices it. Every edit of GPU, lots, days or plan recomputes at once; the
session's package (and the plan typed, kept with it) is changed only by the "Save as
package" button.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, OptionList, Static

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.files.textio import printable
from gpusession.core.money.cost import NOT_MEASURED_WORDS
from gpusession.ui.context import UiContext, plural, whole_number
from gpusession.ui.modals import Choice

if TYPE_CHECKING:
    from gpusession.core.money.answer import CostAnswer
    from gpusession.core.retrieval.session_facts import SessionFacts

DAYS = ("3", "7", "30")

#: Said where the figures go while a worker reads them (the event loop never waits on a read).
COUNTING = "counting accepted deliverables …"
COMPARING = "comparing with other sessions …"

#: How this pane says to get a count (core's ``count_hint``): the accepted count here is the
#: session's own, so the CLI's ``--accepted-results`` has no place in the TUI.
PANE_COUNT_HINT = "none validated yet: runs are validated as they land, key 4"


def accepted_words(answer: CostAnswer, session_name: str) -> tuple[int | None, str]:
    """``(count, source)`` the pane divides by and says, in ``cost NAME``'s words (A1, S10).

    Both are the record's (``distinct accepted corpora in session s1``; ``count
    unreadable: …`` naming the file; ``no validated run yet in session s1``, K3).
    """
    return answer.accepted, answer.source_words(session_name)


def load_facts(session: Any) -> SessionFacts:
    """The session's :class:`SessionFacts`, as ``cost NAME`` reads it (a problem is said, never raised).

    Slow on a large session (the results, approvals and their files): called in a worker.
    """
    from gpusession.core.retrieval.session_facts import session_facts

    return session_facts(session)


def keep_lines_of(facts: SessionFacts) -> list[str]:
    """``Keep: …`` per experiment measured warm, the record's variant to keep (D5, D7); ``[]`` unreadable."""
    try:
        return [f"Keep: {k.words()}." for k in facts.keep]
    except BadInput:  # unreadable rows: the Run pane says so
        return []


class CostPane(Vertical):
    """Pane 6: what the package costs and what each accepted deliverable costs."""

    #: Tab from the report (focused when the pane opens) enters the first field, as the
    #: pane's hint says, rather than leaving the pane for the tab bar.
    BINDINGS = [Binding("tab", "edit_fields", "Edit a field", id="cost.edit_fields", show=False)]

    @dataclass
    class Recomputed(Message):
        """The report was recomputed (after an edit)."""

        lines: list[str]

    @dataclass
    class PackageSaved(Message):
        """The edited lots/days/GPU were written to the session's package."""

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        self.lines: list[str] = []
        #: the session's one record (A1) and its cost answer, once the worker has read them
        self.facts: SessionFacts | None = None
        self.answer: CostAnswer | None = None
        self._others: list[str] = [COMPARING]
        self._keep: list[str] = []
        #: the idle-GPU warnings, read in a worker (each experiment against the order and the
        #: rates: O(experiments) reads, never on the loop nor per keystroke, A5)
        self._idle: list[str] = []
        self._idle_generation = 0
        #: the newest reload; a worker's result from an older one is dropped (a run landed meanwhile)
        self._generation = 0
        #: the session's own figures are being read (the report says "counting …")
        self.counting = True

    def compose(self) -> ComposeResult:
        pkg = self.ctx.session.package
        with Horizontal(id="cost-form"):
            yield Label("GPU ")
            yield Input(pkg.gpu_model or "", placeholder="e.g. RTX A5000", id="cost-gpu")
            yield Label(" lots ")
            yield Input(str(pkg.lots or 1), id="cost-lots")  # kept as typed, refused in words
            yield Label(" days ")
            yield Choice(DAYS, str(pkg.days or 7), id="cost-days")
        with Horizontal(id="cost-form2"):
            yield Label("plan (days per task) ")
            yield Input(self._kept_plan_text(), placeholder="e.g. 0.25,1,1,0.5,0.5", id="cost-plan")
            yield Button("Save as package", id="cost-save")
        yield Static("tab: edit a field (recomputed as you type); enter: done, keys 1–6 work again", classes="status")
        with VerticalScroll(id="cost-out", can_focus=True):
            yield Static("", id="cost-report")

    def _kept_plan_text(self) -> str:
        """The plan kept with the package (``package NAME --plan``), as typed; "" when none (K6)."""
        from gpusession.core.money.kept_plan import session_plan

        try:
            kept = session_plan(self.ctx.session)
        except BadInput:  # a [plan] broken by hand: `cost NAME` says why
            return ""
        return kept.text() if kept is not None else ""

    def _plan_source(self, plan_text: str) -> str | None:
        """Where the plan shown comes from, in the words of ``cost NAME`` (K6)."""
        if not plan_text:
            return None
        kept, name = self._kept_plan_text(), self.ctx.session.name
        if plan_text == kept:
            return f"the plan kept with the package of session {name}"
        if kept:
            return f"typed here for this view; the plan kept with session {name} is {kept}"
        return f"typed here; session {name} keeps no plan (gpusession package {name} --plan …)"

    def on_mount(self) -> None:
        self.reload()

    def focus_main(self) -> None:
        self.query_one("#cost-out").focus()

    def action_edit_fields(self) -> None:
        """Tab: from the report into the GPU field; from a field, the next one as usual."""
        if self.app.focused is self.query_one("#cost-out"):
            self.query_one("#cost-gpu", Input).focus()
        else:
            self.screen.focus_next()

    def reload(self) -> None:
        """Re-read the session's cost inputs (a run landed), then recompute.

        The reads run in thread workers (the session's own count and Keep lines; the other
        sessions of the folder, seconds to a minute beside large ones), so keys, the clock
        and the memory readout never wait on them; a newer reload replaces an older one
        (exclusive workers; a late result of the older one is dropped by its generation).
        """
        self._generation += 1
        self.counting = self.answer is None
        self._others = [COMPARING]
        self.recompute()
        self._read_own(self._generation)
        self._read_others(self._generation)
        self.read_idle_gpus()

    def read_idle_gpus(self) -> None:
        """Read the idle-GPU warnings in a thread worker, then recompute (a reload, a package saved)."""
        self._idle_generation += 1
        self._read_idle(self._idle_generation)

    @work(thread=True, exclusive=True, group="cost-idle", exit_on_error=False)
    def _read_idle(self, generation: int) -> None:
        idle = self._idle_gpus()
        self.app.call_from_thread(self._idle_read, generation, idle)

    def _idle_read(self, generation: int, idle: list[str]) -> None:
        if generation != self._idle_generation:
            return
        self._idle = idle
        self.recompute()

    @work(thread=True, exclusive=True, group="cost-own", exit_on_error=False)
    def _read_own(self, generation: int) -> None:
        """The session's record (the count `cost NAME` divides by, S10, A1; the Keep lines), read off the event loop."""
        facts = load_facts(self.ctx.session)
        keep = keep_lines_of(facts)
        self.app.call_from_thread(self._own_read, generation, facts, keep)

    def _own_read(self, generation: int, facts: SessionFacts, keep: list[str]) -> None:
        if generation != self._generation:  # a newer reload is reading
            return
        self.facts, self.answer, self._keep, self.counting = facts, facts.answer, keep, False
        self.recompute()

    @work(thread=True, exclusive=True, group="cost-others", exit_on_error=False)
    def _read_others(self, generation: int) -> None:
        """The comparison with the folder's other sessions, read off the event loop (D6)."""
        others = self._other_sessions()
        self.app.call_from_thread(self._others_read, generation, others)

    def _others_read(self, generation: int, others: list[str]) -> None:
        if generation != self._generation:
            return
        self._others = others
        self.recompute()

    def _inputs(self) -> tuple[str, str, str, str]:
        gpu = self.query_one("#cost-gpu", Input).value.strip()
        lots = self.query_one("#cost-lots", Input).value.strip()
        days = self.query_one("#cost-days", Choice).value
        plan = self.query_one("#cost-plan", Input).value.strip()
        return gpu, lots, days, plan

    def recompute(self) -> None:
        """Rebuild the report from the fields now (K1–K7)."""
        from gpusession.core.money.cost import cost_report, parse_plan

        out = self.query_one("#cost-report", Static)
        gpu, lots_text, days_text, plan_text = self._inputs()
        if not gpu:
            out.update("Enter the GPU model as ordered (e.g. RTX A5000).")
            return
        try:
            lots = int(lots_text)
        except ValueError:
            out.update(f"lots: expected a whole number ≥ 1, got {shown(lots_text)}")
            return
        if self.counting:  # the first read has not come back yet: the fields work meanwhile
            self.lines = [COUNTING, "", *self._others]
            out.update("\n".join(self.lines))
            return
        answer = self.answer
        kept = False  # whether the cost report was made (it places the Keep lines itself)
        inputs = answer.inputs if answer is not None else None
        if answer is None or inputs is None:
            problem = answer.problem if answer is not None else "not read"
            accepted, source = None, problem or "not read"
            self.lines = [f"cannot compute: {problem}"]
        else:
            # the record's count and source, in cost NAME's words; a count that does not read names its file (H-39)
            accepted, source = accepted_words(answer, self.ctx.session.name)
            try:
                plan = parse_plan(plan_text) if plan_text else None
                report = cost_report(
                    inputs.rates, gpu, int(days_text), lots, accepted=accepted, plan=plan, accepted_source=source,
                    plan_source=self._plan_source(plan_text), count_hint=PANE_COUNT_HINT,
                )
                self.lines = report.lines(after_answer=self._keep, shell=False)
                kept = True
                if answer.in_unit and answer.count is not None:  # "55.00 USD ÷ 18 approved visuals = 3.06 USD per visual"
                    from gpusession.core.money.count import cost_line

                    self.lines.insert(0, cost_line(report.total.total_usd_minor, answer.count))
                    # S9 conflicts to settle, S10 repeats counted once: the count's facts, as `cost` says them
                    from rich.markup import escape

                    self.lines[1:1] = [escape(printable(f"  {w}", keep="")) for w in answer.count.said()]
            except (BadInput, ValueError) as exc:  # one line, what was expected
                self.lines = [f"cannot compute: {exc}"]
        if accepted is None and not (kept and source):  # the report says a count not measured when it has a source
            self.lines.insert(0, f"Accepted deliverables: {NOT_MEASURED_WORDS} ({source}) — only the package cost is shown (a cost per deliverable needs a measured count).")
        if not kept:
            self.lines.extend(self._keep)
        self.lines.extend(self._idle)
        if self._others:
            self.lines.extend(["", *self._others])
        out.update("\n".join(self.lines))
        self.post_message(self.Recomputed(list(self.lines)))

    def _other_sessions(self) -> list[str]:
        """The other sessions of the folder in the same terms as ``gpusession compare`` (D6).

        Read when the pane loads or a run lands, not at each keystroke.
        """
        from gpusession.core.retrieval.compare import folder_comparison_lines

        try:
            return folder_comparison_lines(
                self.ctx.session, allow_hint="compare them on the command line to rank them anyway")
        except (BadInput, OSError) as exc:  # a comparison only: never hides this session's cost
            return [f"other sessions not compared: {exc}"]

    def _idle_gpus(self) -> list[str]:
        """``warning: experiment E uses 1 of 2 GPUs of this B200 lot`` lines (in :meth:`_read_idle`'s worker)."""
        from gpusession.core.retrieval.evidence import idle_gpu_warnings

        try:
            return [f"warning: {w} — the package price covers them all" for w in idle_gpu_warnings(self.ctx.session)]
        except (BadInput, OSError):  # a hint only: an unreadable order or rates file must not hide the report
            return []

    @on(Input.Changed)
    @on(OptionList.OptionHighlighted)
    def _changed(self) -> None:
        self.recompute()

    @on(Input.Submitted)
    def _done_editing(self) -> None:
        self.focus_main()

    @on(Button.Pressed, "#cost-save")
    def save_package(self) -> None:
        from gpusession.core.folder.package import Package
        from gpusession.core.money.kept_plan import keep_plan, make_plan

        gpu, lots_text, days_text, plan_text = self._inputs()
        warnings: list[str] = []
        plan = None
        try:
            old = self.ctx.session.package
            new = Package(gpu_model=gpu or old.gpu_model, lots=whole_number(lots_text, "lots"),
                          days=whole_number(days_text, "days"), start=old.start)
            Package.from_toml(new.to_toml())  # checks lots ≥ 1, days in 3/7/30
            plan = make_plan(plan_text) if plan_text and plan_text != self._kept_plan_text() else None
            self.ctx.session.set_package(new)
            if plan is not None:  # K6: kept with the package, as `package NAME --plan` keeps it
                warnings = keep_plan(self.ctx.session, plan)
        except (BadInput, OSError) as exc:  # bad input, or the disk refused the write
            self.notify(str(exc), title="package not saved", severity="error")
            return
        kept = f"; plan {plan_text} kept" if plan is not None else ""
        self.notify(f"package saved: {new.gpu_model}, {plural(new.lots or 0, 'lot')}, {new.days} days{kept}",
                    title="cost")
        for w in warnings:  # a longer plan, or one the package does not cover: said, never shrunk
            self.notify(w, title="plan", severity="warning")
        self.recompute()
        self.read_idle_gpus()  # the package's GPUs may have changed
        self.post_message(self.PackageSaved())
