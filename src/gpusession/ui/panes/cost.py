"""Cost pane: package total, plan coverage, cost per accepted deliverable, extensions.

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 6). Figures come from
:func:`gpusession.core.money.cost.cost_report` (exact decimals, K1/K2); the accepted count is
the session's *distinct* accepted corpora (K3/K4) — with none measured only the package
cost is shown. Every edit of GPU, lots, days or plan recomputes at once; the session's
package is changed only by the "Save as package" button.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, OptionList, Static

from gpusession.core.files.errors import BadInput
from gpusession.core.money.cost import NO_VALIDATED_RUN, NOT_MEASURED_WORDS
from gpusession.ui.context import UiContext, plural, whole_number
from gpusession.ui.modals import Choice

if TYPE_CHECKING:
    from gpusession.core.money.cost import SessionCostInputs

DAYS = ("3", "7", "30")

#: Shell hints of core's cost texts said as this pane does it: the accepted count here is
#: the session's own, so the CLI's ``--accepted-results`` has no place in the TUI.
_PANE_WORDS = (
    ("(validate a corpus, or give --accepted-results N)",
     "(none validated yet: runs are validated as they land, key 4)"),
)


def pane_words(text: str) -> str:
    """``text`` with the ``gpusession cost`` option hints said for this pane."""
    for cli, here in _PANE_WORDS:
        text = text.replace(cli, here)
    return text


def measured_accepted(inputs: SessionCostInputs) -> tuple[int | None, str]:
    """``(count, source)``; ``None`` when no run was validated yet (K3)."""
    n = inputs.accepted_measured
    if n is None:
        return None, NO_VALIDATED_RUN
    return n, plural(n, "accepted corpus", "accepted corpora").split(" ", 1)[1] + " of this session"


def load_inputs(session: Any) -> tuple[SessionCostInputs | None, str | None]:
    """The session's cost inputs (core) and, when the results cannot be read, why.

    An unreadable results file still leaves the package cost shown; an unreadable rates
    file leaves ``(None, reason)``.
    """
    from gpusession.core.money.cost import session_cost_inputs

    try:
        return session_cost_inputs(session), None
    except BadInput as exc:
        first = exc
    try:
        return session_cost_inputs(session, count_accepted=False), f"results unreadable: {first}"
    except BadInput as exc:
        return None, str(exc)


class CostPane(Vertical):
    """Pane 6: what the package costs and what each accepted deliverable costs."""

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
        self.inputs: SessionCostInputs | None = None
        self._inputs_problem: str | None = None
        self._others: list[str] = []

    def compose(self) -> ComposeResult:
        pkg = self.ctx.session.package
        with Horizontal(id="cost-form"):
            yield Label("GPU ")
            yield Input(pkg.gpu_model or "", placeholder="e.g. RTX A5000", id="cost-gpu")
            yield Label(" lots ")
            yield Input(str(pkg.lots or 1), id="cost-lots", type="integer")
            yield Label(" days ")
            yield Choice(DAYS, str(pkg.days or 7), id="cost-days")
        with Horizontal(id="cost-form2"):
            yield Label("plan (days per task) ")
            yield Input("", placeholder="e.g. 0.25,1,1,0.5,0.5", id="cost-plan")
            yield Button("Save as package", id="cost-save")
        yield Static("tab: edit a field (recomputed as you type); enter: done, keys 1–6 work again", classes="status")
        with VerticalScroll(id="cost-out", can_focus=True):
            yield Static("", id="cost-report")

    def on_mount(self) -> None:
        self.reload()

    def focus_main(self) -> None:
        self.query_one("#cost-out").focus()

    def reload(self) -> None:
        """Re-read the session's cost inputs (a run landed), then recompute."""
        self.inputs, self._inputs_problem = load_inputs(self.ctx.session)
        self._others = self._other_sessions()
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
            out.update(f"lots: expected a whole number ≥ 1, got {lots_text!r}")
            return
        inputs = self.inputs
        if inputs is None:
            accepted, source = None, self._inputs_problem or "not read"
            self.lines = [f"cannot compute: {self._inputs_problem}"]
        else:
            accepted, source = measured_accepted(inputs)
            if self._inputs_problem:
                accepted, source = None, self._inputs_problem
            try:
                plan = parse_plan(plan_text) if plan_text else None
                report = cost_report(
                    inputs.rates, gpu, int(days_text), lots, accepted=accepted, plan=plan, accepted_source=source
                )
                self.lines = [pane_words(line) for line in report.lines()]
            except (BadInput, ValueError) as exc:  # one line, what was expected
                self.lines = [f"cannot compute: {exc}"]
        if accepted is None and not any(line.startswith("Accepted deliverables:") for line in self.lines):
            self.lines.insert(0, f"Accepted deliverables: {NOT_MEASURED_WORDS} ({source}) — only the package cost is shown (a cost per deliverable needs a measured count).")
        self.lines.extend(self._idle_gpus())
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
        """``warning: experiment E uses 1 of 2 GPUs of this B200 lot`` lines."""
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

        gpu, lots_text, days_text, _ = self._inputs()
        try:
            old = self.ctx.session.package
            new = Package(gpu_model=gpu or old.gpu_model, lots=whole_number(lots_text, "lots"),
                          days=whole_number(days_text, "days"), start=old.start)
            Package.from_toml(new.to_toml())  # checks lots ≥ 1, days in 3/7/30
            self.ctx.session.set_package(new)
        except (BadInput, OSError) as exc:  # bad input, or the disk refused the write
            self.notify(str(exc), title="package not saved", severity="error")
            return
        self.notify(f"package saved: {new.gpu_model}, {plural(new.lots or 0, 'lot')}, {new.days} days", title="cost")
        self.post_message(self.PackageSaved())
