"""The session's answer to "what did each accepted deliverable cost?", decided once (A1; K1-K4, S8, S10).

One typed record, :class:`CostAnswer`: the package total (K1), the one count of accepted
deliverables in the session's unit with its source (:func:`gpusession.core.money.count.session_count`,
S10), and the cost per deliverable from the one formula
(:func:`gpusession.core.money.cost.cost_per_accepted`, rounded once half-up, K2-K3).
``cost``, ``report`` (its summary and its cost section), ``compare`` and the Cost pane
render this record; none of them chooses a divisor of its own.

Why: the same session once said ``3.06 USD per visual`` in a report's first lines and
"no count of distinct accepted results" in its cost section, each front end picking its
own count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpusession.core.files.errors import BadInput
from gpusession.core.money.cost import (
    NO_VALIDATED_RUN,
    CostPerAccepted,
    SessionCostInputs,
    cost_per_accepted,
    session_cost_inputs,
)
from gpusession.core.money.count import CORPORA, DeliverableCount, cost_line, session_count

if TYPE_CHECKING:
    import polars as pl

    from gpusession.core.folder.approvals import FileState
    from gpusession.core.folder.session import Session


@dataclass(frozen=True)
class CostAnswer:
    """What a session's package cost and what each accepted deliverable cost (A1).

    Attributes:
        inputs: the package and the rates in force (K7); ``None`` when the rates file
            does not read (``problem`` says why).
        count: the one count in the session's unit with its source (S10); ``None`` when
            it does not read (``count_problem`` names the file).
        per: the cost per deliverable, or why it is not shown (K3), from ``count.n``.
        count_problem: why the count does not read, one line naming the file.
        problem: why nothing could be priced (the rates file), one line.
    """

    inputs: SessionCostInputs | None
    count: DeliverableCount | None
    per: CostPerAccepted
    count_problem: str | None = None
    problem: str | None = None
    errors: tuple[BadInput, ...] = field(default=(), compare=False, repr=False)

    def checked(self) -> CostAnswer:
        """This answer, or the first refusal behind ``problem`` / ``count_problem`` raised as read.

        For ``cost NAME``, which stops on a file that does not read (exit 2); the report
        and the panes say the problem and go on.

        Raises:
            BadInput: the rates file, ``approvals.toml`` or the results do not read.
        """
        if self.errors:
            raise self.errors[0]
        return self

    @property
    def accepted(self) -> int | None:
        """The count every cost divides by; ``None`` when not measured (K3)."""
        return None if self.count is None else self.count.n

    @property
    def in_unit(self) -> bool:
        """Whether the count is said in a unit of the session's own (approved, rule, or a declared unit)."""
        return self.count is not None and (self.count.source != CORPORA or self.count.unit.declared)

    def source_words(self, session_name: str | None = None) -> str:
        """Where the count comes from, in words (``distinct accepted corpora in session s1``).

        ``no validated run yet`` while a corpora count is not measured (K3); the file
        that does not read when the count does not.
        """
        where = f" in session {session_name}" if session_name else ""
        if self.count is None:
            return f"count unreadable: {self.count_problem}"
        if self.count.n is None and self.count.source == CORPORA:
            return f"{NO_VALIDATED_RUN}{where}"
        return f"{self.count.source_words()}{where}"

    def per_unit_line(self) -> str | None:
        """``55.00 USD ÷ 18 approved visuals = 3.06 USD per visual``; ``None`` without a count in a unit.

        The figure is :attr:`per`'s (one formula); only the words are the unit's.
        """
        if self.count is None or not self.in_unit:
            return None
        return cost_line(self.per.total_usd_minor, self.count)


def session_answer(session: Session, rates_path: Path | None = None, *,
                   frame: pl.DataFrame | None = None, cache: bool = False,
                   states: list[FileState] | None = None) -> CostAnswer:
    """The session's :class:`CostAnswer`: the one place a count is chosen and divided by (A1, S10).

    Args:
        session: the open session.
        rates_path: a rates file given for this call, in place of the session's; the user's
            own file and the bundled one lie under either (K7).
        frame: the results rows when already read.
        cache: keep the count for ``status`` (writers: ``cost``, ``approve``, a run's end).
        states: the deliverables' file states when the caller has them (the Validation
            pane lists them too: ``approvals.toml`` parsed and each file hashed once).

    Returns:
        The record. A rates file or results file that does not read is said in
        ``problem`` / ``count_problem``, never raised: the package cost is still shown
        where it can be.

    Raises:
        Nothing of its own; an OSError of the disk passes through.
    """
    problem = None
    errors: list[BadInput] = []
    try:
        inputs: SessionCostInputs | None = session_cost_inputs(session, rates_path, count_accepted=False)
    except BadInput as exc:
        inputs, problem = None, str(exc)
        errors.append(exc)
    count: DeliverableCount | None
    count_problem = None
    try:
        count = session_count(session, frame, cache=cache, states=states)
    except BadInput as exc:
        count, count_problem = None, str(exc)
        errors.append(exc)
    total = inputs.package_total() if inputs is not None else None
    total_usd_minor = total.total_usd_minor if total is not None else None
    per = cost_per_accepted(total_usd_minor, None if count is None else count.n)
    return CostAnswer(inputs, count, per, count_problem, problem, tuple(errors))


__all__ = ["CostAnswer", "session_answer"]
