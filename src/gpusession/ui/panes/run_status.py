"""The Run pane's head: the status line (what the experiment is, what runs, how it ended), the Keep line, the footer's keys.

Who calls it: :class:`gpusession.ui.panes.run.RunPane`, which composes one
:class:`RunStatusView` at its top and hands it the words its state calls for; the
sentences are the ones headless ``gpusession run`` prints (the in-flight line, the time
left) and the report's Keep line (D5, D7). Why a module of its own: the words of one
experiment (its settings, lineage, GPUs left idle) are read in one place, whoever shows them;
the keys a state needs first are chosen beside the words that state says.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from gpusession.core.files.errors import BadInput
from gpusession.core.files.names import ORDER_TOML
from gpusession.core.folder.journal import RunProgress
from gpusession.ui.context import plural

#: :func:`idle_gpus_words`'s words by the signature of what they were read from (bounded).
_IDLE_WORDS: dict[tuple[Any, ...], str] = {}
_IDLE_WORDS_MAX = 64


def _stat_mark(path: Path) -> tuple[int, int, int] | None:
    """(size, mtime in ns, inode) of ``path``, ``None`` when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def idle_gpus_words(session: Any, exp: Any) -> str:
    """``"\\nwarning: uses 1 of 2 GPUs of this B200 lot (define it with more GPUs …)"`` or ``""``.

    A hint only: an unreadable order or rates file says nothing (never hides the status).
    Read once per signature of what it depends on (the experiment's GPUs and device, the
    package, and the size/mtime/inode of ``order.toml``, the session's and the user's
    ``rates.toml``): the status line is drawn on every change, on the event loop, and a
    stat is all it costs then; an edited file is read again.
    """
    from gpusession.core.money.rates import RATES_FILENAME, user_rates_file
    from gpusession.core.retrieval.evidence import gpu_mismatch

    gpus = int(getattr(exp, "gpus", 1)) * int(getattr(exp, "nodes", 1))
    device = getattr(exp, "device", None)
    try:
        pkg = session.package
    except BadInput:  # session.toml's package unreadable: the hint says nothing
        return ""
    folder = Path(session.folder)
    key = (str(folder), gpus, device, pkg.gpu_model, pkg.lots,
           *(_stat_mark(p) for p in (folder / ORDER_TOML, folder / RATES_FILENAME, user_rates_file())))
    said = _IDLE_WORDS.get(key)
    if said is not None:
        return said
    try:
        found = gpu_mismatch(session, gpus, device)
    except (BadInput, OSError):
        found = None
    fix = "fewer" if found is not None and found.asks_more else "more"  # by the counts, not the words
    said = f"\nwarning: {found.words} (define it with {fix} GPUs to measure them all)" if found is not None else ""
    if len(_IDLE_WORDS) >= _IDLE_WORDS_MAX:
        _IDLE_WORDS.clear()
    _IDLE_WORDS[key] = said
    return said


def describe(session: Any, exp: Any, experiments: list[Any]) -> str:
    """One experiment in words: ``ID: varied = values; N runs, W warm-up, order, scope``,
    its GPU use, its lineage among ``experiments`` (D4) and the GPUs it leaves idle."""
    from gpusession.core.experiment.derive import derived_words
    from gpusession.core.experiment.plan import value_text
    from gpusession.core.retrieval.evidence import gpu_use_words

    values = ", ".join(value_text(v) for v in exp.values)
    lineage = derived_words(exp, {e.id: e for e in experiments})
    return (
        f"{exp.id}: {exp.varied} = {values}; {plural(exp.runs_per_variant, 'run')}, "
        f"{exp.warmup_iterations} warm-up, {exp.order}, {exp.scope}"
        + gpu_use_words(exp)
        + (f"\n{lineage} (v: derive again)" if lineage else "")
        + idle_gpus_words(session, exp)
    )


def running_text(head: str, inflight_what: str, inflight_elapsed_s: float, time_left_text: str) -> str:
    """The status while a run of the pane runs: ``head`` (what it runs), what is in flight
    for how long (``inflight_elapsed_s`` seconds) and the time left."""
    text = head
    if inflight_what:  # the in-flight line headless `run` prints, each second here
        from gpusession.core.events.words import elapsed_words

        text += f"\n{inflight_what} in flight: {elapsed_words(inflight_elapsed_s)}"
    if time_left_text:  # the estimate headless `run` prints
        text += f"\n{time_left_text}"
    return text


def footer_order(*, running: bool, following: bool, defined: bool, refused_past_limit: bool,
                 last_run: RunProgress | None) -> tuple[str, ...]:
    """The Run pane's actions shown in the footer, the ones this state needs first (80
    columns hold five): running: cancel; following another process: the view and pick;
    no experiment: define; refused past the session limit: run anyway first; cut short:
    resume before a new attempt."""
    if running:
        return ("cancel", "switch_view")
    if following:
        return ("switch_view", "pick")
    if not defined:
        return ("define",)
    if refused_past_limit:  # typed by the run's end (RunFinished), never read from its words
        return ("start_anyway", "start", "pick", "define", "switch_view")
    if (last_run is not None
            and last_run.state != "finished" and last_run.runs_done < last_run.runs_scheduled):
        return ("resume", "start", "pick", "define", "switch_view")
    return ("start", "pick", "define", "derive", "switch_view")


def arrange_keys(node: Widget, order: tuple[str, ...]) -> None:
    """Show the actions of ``order`` in the footer, in that order, and hide the others of
    ``node``'s bindings; every key still works. Bindings are rewritten only when they change."""
    table = node._bindings.key_to_bindings
    rank = {a: i for i, a in enumerate(order)}

    def first(item: tuple[str, list[Binding]]) -> int:
        return min((rank.get(b.action, len(order)) for b in item[1]), default=len(order))

    before = [(k, [b.show for b in bs]) for k, bs in table.items()]
    arranged = {k: [replace(b, show=b.action in rank) for b in bs]
                for k, bs in sorted(table.items(), key=first)}
    if [(k, [b.show for b in bs]) for k, bs in arranged.items()] != before:
        node._bindings.key_to_bindings = arranged
        node.refresh_bindings()


class RunStatusView(Vertical):
    """The status line (``#run-status``) and the report's Keep line (``#run-keep``, noise words first)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="run-status", classes="status")
        yield Static("", id="run-keep")

    def say(self, text: str) -> None:
        """The status line's words."""
        self.query_one("#run-status", Static).update(text)

    def keep(self, text: str, shown: bool) -> None:
        """The Keep line's words (D5, D7); hidden when empty or not ``shown`` (while a run goes)."""
        line = self.query_one("#run-keep", Static)
        line.update(text)
        line.display = bool(text) and shown


__all__ = ["RunStatusView", "arrange_keys", "describe", "footer_order", "idle_gpus_words", "running_text"]
