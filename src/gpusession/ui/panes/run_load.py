"""The Run pane's reader: the defined experiments and the current one's summary, in a thread worker.

Who calls it: :class:`gpusession.ui.panes.run.RunPane`, which composes one
:class:`RunLoader` (it draws nothing) and asks it to read when it opens, when another
experiment is picked or defined, and when a run ends. Why: ``session.toml``, the results
CSV, the journal and the summary grow with the session, so they are never read on the
event loop (a key answers meanwhile); the newest read wins, an older one is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textual import work
from textual.widget import Widget

from gpusession.core.files.errors import BadInput
from gpusession.ui.context import UiContext
from gpusession.ui.panes.run_summary import SummaryRead, read_summary


@dataclass
class Loaded:
    """What one read found.

    Attributes:
        defined: the experiments defined, in definition order.
        experiment_id: the one read (the one asked for, else the newest defined, as
            ``gpusession run`` without ``--experiment``; ``None`` when none is defined).
        summary: its summary as :func:`read_summary` read it.
        problem: ``experiments unreadable: …`` when ``session.toml`` does not read (a hand
            edit: said in the pane), else ``""``.
    """

    defined: list[Any] = field(default_factory=list)
    experiment_id: str | None = None
    summary: SummaryRead | None = None
    problem: str = ""


class RunLoader(Widget):
    """Reads for the pane off the event loop and hands the newest read to ``on_loaded``
    (called on the event loop); draws nothing."""

    def __init__(self, ctx: UiContext, on_loaded: Callable[[Loaded], None], **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        self.on_loaded = on_loaded
        #: the newest read (an older worker's result is dropped)
        self._generation = 0

    def load(self, experiment_id: str | None) -> None:
        """Read the experiments and ``experiment_id``'s summary; replaces a read under way."""
        self._generation += 1
        self._read(self._generation, experiment_id)

    @work(thread=True, exclusive=True, group="run-load", exit_on_error=False)
    def _read(self, generation: int, experiment_id: str | None) -> None:
        from gpusession.core.folder import experiments

        try:
            defined = list(experiments.load_experiments(self.ctx.session))
        except BadInput as exc:  # session.toml hand-edited: said in the pane
            self.app.call_from_thread(self._deliver, generation, Loaded(problem=f"experiments unreadable: {exc}"))
            return
        ids = [e.id for e in defined]
        if experiment_id not in ids:
            experiment_id = ids[-1] if ids else None
        found = Loaded(defined, experiment_id, read_summary(self.ctx.session, experiment_id))
        self.app.call_from_thread(self._deliver, generation, found)

    def _deliver(self, generation: int, found: Loaded) -> None:
        if generation == self._generation:
            self.on_loaded(found)


__all__ = ["Loaded", "RunLoader"]
