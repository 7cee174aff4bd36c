"""The Run pane's messages: what a run, a form or a followed run tells the screen.

Who calls it: :class:`gpusession.ui.panes.run.RunPane` inherits :class:`RunMessages`
(``RunPane.RowLanded`` …, handled as ``on_run_pane_…``, namespace ``run_pane``); its
launcher (:mod:`~gpusession.ui.panes.run_launch`) posts the run's, and they bubble
through the pane to the screen. Why a module of its own: the pane, its launcher and
the screen name them, and none of those imports the others' modules for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message
from textual.notifications import SeverityLevel


class RunMessages:
    """The messages of :class:`gpusession.ui.panes.run.RunPane` (a base class: their names are the pane's)."""

    @dataclass
    class RunRequested(Message, namespace="run_pane"):
        """The pane starts ``experiment_id``."""

        experiment_id: str


    @dataclass
    class ProgressMade(Message, namespace="run_pane"):
        """Runs done of ``total`` in the run in flight, and where it is (variant, phase)."""

        done: int
        total: int
        variant_id: str | None
        phase: str | None

        def can_replace(self, message: Message) -> bool:  # a flood of progress: keep the last
            return isinstance(message, RunMessages.ProgressMade)


    @dataclass
    class RowLanded(Message, namespace="run_pane"):
        """A row the runner appended, as a dict of the CSV's columns."""

        row: dict[str, Any]


    @dataclass
    class InFlightChanged(Message, namespace="run_pane"):
        """What is in flight now (``""``: nothing), as headless ``run`` names it."""

        what: str


    @dataclass
    class IncidentReported(Message, namespace="run_pane"):
        """An incident's words (secrets hidden, controls escaped); the journal keeps it."""

        message: str


    @dataclass
    class NodesAwaited(Message, namespace="run_pane"):
        """A group over several nodes waits for the other nodes: what, and how to start them."""

        message: str


    @dataclass
    class RunFinished(Message, namespace="run_pane"):
        """The run ended: its outcome (``None`` when it stopped on ``error``) and, read by the
        worker from the rows it wrote, whether every run failed (R7) and the variants'
        verdict count (``"; variants: 2 accepted, 1 REJECTED"`` or ``""``, D5).
        ``refused_past_limit``: nothing started, the session limit had passed (D1): the
        footer offers "run anyway" first, decided by this field, never by ``error``'s words."""

        experiment_id: str
        outcome: Any
        error: str | None
        cancelled: bool
        all_failed: bool = False
        verdicts: str = ""
        refused_past_limit: bool = False

    @dataclass
    class NotStarted(Message, namespace="run_pane"):
        """The launcher's worker refused a start before the runner (``session.toml`` no
        longer reads, nothing to resume): the words of the toast, its title and severity."""

        words: str
        title: str
        severity: SeverityLevel = "information"

    @dataclass
    class FollowedRunEnded(Message, namespace="run_pane"):
        """A run followed in another process ended (its lock released): the rows it wrote
        are final, as after a run of the pane ends (the screen reloads the panes)."""

        experiment_id: str | None
        pid: int


__all__ = ["RunMessages"]
