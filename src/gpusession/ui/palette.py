"""Command palette provider: every action of the app, searchable (ctrl+p).

Who calls it: Textual's command palette, through ``GpuSessionApp.COMMANDS``. Each entry
switches to its pane and runs the same action the pane's key runs, so the palette and
the keys never diverge.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

#: (title, help, pane, pane action or None) — the palette's list of actions.
ACTIONS: tuple[tuple[str, str, str, str | None], ...] = (
    ("Show checklist", "pane 1: the checklist from the need to the retrieval", "checklist", None),
    ("Toggle checklist item done", "space on the checklist", "checklist", "toggle_done"),
    ("Edit checklist note", "n on the checklist", "checklist", "note"),
    ("Add checklist item", "a on the checklist", "checklist", "add"),
    ("Run experiment", "r on the run pane: start the current experiment", "run", "start"),
    ("Run anyway, past a rejected first result or the session limit",
     "R on the run pane: asks y/n, then runs the whole batch even after the limit", "run", "start_anyway"),
    ("Resume experiment where it stopped",
     "u on the run pane: the runs of its schedule not measured yet, in order", "run", "resume"),
    ("Cancel run at the next run boundary", "c on the run pane: the run in flight ends, the rest is skipped", "run", "cancel"),
    ("Pick experiment", "e on the run pane", "run", "pick"),
    ("Define experiment", "d on the run pane: one varied parameter", "run", "define"),
    ("Derive experiment (one change)", "v on the run pane: replay the current experiment with one element changed", "run", "derive"),
    ("Show run summary / live rows", "s on the run pane", "run", "switch_view"),
    ("Show memory", "pane 3: host, GPU (NVML) and allocator figures", "memory", None),
    ("Validate: re-read validation reports", "v on the validation pane", "validation", "revalidate"),
    ("New payment order", "p on the order pane: asset and network together, exact amount", "order", "payment_order"),
    ("Record order event", "e on the order pane: only provider tracking confirms a payment", "order", "add_event"),
    ("Set order", "o on the order pane", "order", "set_order"),
    ("Show cost", "pane 6: package, plan, cost per accepted deliverable", "cost", None),
    ("Export report", "write the session report (gpusession report)", "", "export_report"),
)


class GpuSessionCommands(Provider):
    """Lists :data:`ACTIONS`; the fuzzy matcher ranks them against what is typed."""

    def _run(self, pane: str, action: str | None) -> None:
        app: Any = self.app
        app.run_palette_action(pane, action)

    def _commands(self) -> list[tuple[str, str, Callable[[], None]]]:
        return [(t, h, partial(self._run, p, a)) for t, h, p, a in ACTIONS]

    async def discover(self) -> Hits:
        for title, help_text, cb in self._commands():
            yield DiscoveryHit(title, cb, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, cb in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), cb, text=title, help=help_text)
