"""What every pane is given (attributes down): the session, the clock, the hooks.

Who calls it: :func:`gpusession.ui.app.build_app` builds one :class:`UiContext`; the
screen passes it to each pane's constructor. The small formatters below turn values into
the words every pane uses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.secrets import shown as refused_value
from gpusession.core.files.textio import printable
from gpusession.core.files.units import format_bytes, format_seconds
from gpusession.core.folder.session import Session


@dataclass
class UiContext:
    """Shared, read-mostly state of one app.

    Attributes:
        session: the open session.
        clock: returns an aware UTC datetime (a fake one in tests, S6 countdowns).
        nvml: a pynvml-like object for :func:`gpusession.core.gpu.nvml.read_nvml`
            (``None``: the real pynvml).
        host_memory: returns a ``HostMemory`` (``None``: psutil via core.gpu.host).
        runner_factory: ``(session, experiment_id, on_event, cancel) -> runner`` with a
            blocking ``run()``; ``None``: :class:`gpusession.bench.runner.Runner`.
        poll_s: memory refresh period in seconds; ``0`` samples once (snapshots).
        tz: zone for local times shown (``None``: the machine's zone; UTC in tests).
        write_lock: held around every read-modify-write of a session TOML, so the
            evidence thread and a key press never overwrite each other's change (S7).
        check_host: check the GPU against the order on the first open on this host
            (D8); ``None``: only with the real NVML (a fake one is a test's, not a host).
        monotonic: seconds of a clock that never steps back, for elapsed times shown
            (a run in flight); a fake one in tests, so no test reads a stopwatch (A6).
    """

    session: Session
    clock: Callable[[], datetime] = utcnow
    nvml: Any | None = None
    host_memory: Callable[[], Any] | None = None
    runner_factory: Callable[..., Any] | None = None
    poll_s: float = 1.0
    tz: tzinfo | None = None
    write_lock: threading.Lock = field(default_factory=threading.Lock)
    check_host: bool | None = None
    monotonic: Callable[[], float] = time.monotonic

    def now(self) -> datetime:
        return self.clock()


def fmt_bytes(n: int | float | None) -> str:
    """``1.50 GiB``, ``1 B``; ``not measured`` for ``None`` (C3; H-22: core.units)."""
    return format_bytes(n)


def fmt_left(td: timedelta | None) -> str:
    """``5d 03h 12m left`` / ``ended 2h 05m ago`` / ``not set`` (S6)."""
    from gpusession.core.money.window import short_timedelta

    text = short_timedelta(td)
    return text if td is None or td.total_seconds() < 0 else f"{text} left"  # ended: by the sign, not the words


def fmt_seconds(s: float | None) -> str:
    """``120 ns``, ``2.35 s``; ``not measured`` for ``None`` (R7; H-22: core.units)."""
    return format_seconds(s)


def whole_number(text: str, field: str, *, minimum: int | None = None) -> int:
    """``int(text)`` for a form field, or :class:`BadInput` naming the field.

    Raises:
        BadInput: not a whole number (or below ``minimum``); nothing is written then.
    """
    from gpusession.core.files.errors import BadInput

    try:
        value = int(text.strip())
    except ValueError:
        raise BadInput(f"expected a whole number, got {refused_value(text.strip())}", field=field) from None
    if minimum is not None and value < minimum:
        raise BadInput(f"expected a whole number ≥ {minimum}, got {value}", field=field)
    return value


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 sample`` / ``3 samples`` (``words`` for an irregular plural: corpus → corpora)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def yes_no(value: bool | None, yes: str, no: str, unknown: str = "not measured") -> str:
    """A state in words (H-11): never shown by colour alone."""
    if value is None:
        return unknown
    return yes if value else no


def shown(value: Any, missing: str = "not recorded") -> str:
    """A value read from a session file as text: ``missing`` for an empty one (never
    ``None``), control characters escaped (``\\x1b``; hand-edited files)."""
    if value is None or value == "":
        return missing
    return printable(str(value), keep="")


def run_cell(r: dict[str, Any], *, experiment: bool = False) -> str:
    """A run in a table cell: ``b8 warm 2`` (``sweep b8 warm 2`` with ``experiment``: a
    table of several experiments, whose runs would otherwise read alike); an output
    checked with ``validate --session`` (no phase, no run index): ``by-hand (validate)``."""
    if r.get("phase") is None and r.get("run_index") is None:
        return f"{shown(r.get('variant_id'))} ({shown(r.get('experiment_id'))})"
    keys = ("experiment_id", "variant_id", "phase", "run_index") if experiment else ("variant_id", "phase", "run_index")
    return " ".join(shown(r.get(k), "-") for k in keys)


def run_label(r: dict[str, Any]) -> str:
    """A run in a sentence: ``batch-sweep / b8 / warm run 2``; an output checked with
    ``validate --session``: ``validate / by-hand (checked output, not a timed run)``."""
    head = f"{shown(r.get('experiment_id'))} / {shown(r.get('variant_id'))}"
    if r.get("phase") is None and r.get("run_index") is None:
        return f"{head} (checked output, not a timed run)"
    return f"{head} / {shown(r.get('phase'), 'phase not recorded')} run {shown(r.get('run_index'))}"


#: The styles of a state cell by its tone: a help beside the words (H-11; NO_COLOR strips them).
_TONES = {"good": "green", "bad": "bold red", "unknown": "dim", "plain": ""}


def tone(ok: bool | None) -> str:
    """A verdict's tone: ``good`` (True), ``bad`` (False), ``unknown`` (``None``: not measured)."""
    return "unknown" if ok is None else ("good" if ok else "bad")


def state_cell(word: str, tone_of_word: str) -> Any:
    """A table cell: the word itself, coloured by the typed verdict it says (A1: never by its words).

    Args:
        word: what the cell says (H-11: the state is always in words).
        tone_of_word: ``good``, ``bad``, ``unknown`` or ``plain``, from the typed value the
            words render (:func:`tone`).
    """
    from rich.text import Text

    return Text(word, style=_TONES[tone_of_word])
