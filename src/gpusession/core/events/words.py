"""The one place where a runner event becomes words.

Why it exists: ``gpusession run --headless`` printed and the Run pane notified the same
events, each with its own wording; :func:`describe` is now the only renderer. Who calls
it: the CLI progress printer (:mod:`gpusession.commands.run_cmds`) and the Run pane,
through :mod:`gpusession.core.events`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpusession.core.events.base import Event
from gpusession.core.events.records import RunInterruptedRecord
from gpusession.core.events.runner import (
    EnvironmentObserved,
    Finished,
    IncidentReported,
    Loaded,
    Progress,
    RowAppended,
    RunStarted,
    WorkerStarted,
)
from gpusession.core.files.units import format_seconds
from gpusession.core.records.kinds import row_kind
from gpusession.core.records.summary import variant_words


def _seconds(value: float | None, absent: str) -> str:
    """3 significant digits with a unit, never a measured value as 0 (H-22)."""
    return format_seconds(value, absent)


def _other_frameworks(frameworks: Any) -> str:
    """The frameworks besides torch (said already as ``torch 2.x``), ``""`` when none."""
    parts = [p for p in str(frameworks or "").split(", ") if p and not p.startswith("torch ")]
    return ", ".join(parts)


def _environment_words(env: Mapping[str, Any]) -> str:
    def said(key: str, absent: str = "not recorded") -> str:
        value = env.get(key)
        return absent if value is None or value == "" else str(value)

    reason = env.get("nvml_reason")
    driver = env.get("driver_version") or ("not read" + (f" ({reason})" if reason else ""))
    runtime = env.get("runtime_version") or ("none (CPU)" if env.get("device") == "cpu" else "not recorded")
    return (f"environment: device {said('device')}, GPU {said('gpu_model', 'none')}, "
            f"GPUs used {said('gpu_count')}, torch {said('torch_version', 'not used')}, "
            + (f"frameworks {others}, " if (others := _other_frameworks(env.get("frameworks"))) else "")
            + f"runtime {runtime}, driver {driver}")


_ACCEPTED_WORDS = {True: "accepted", False: "REJECTED", None: "not validated"}

#: The row fields that only a validation fills (V1): all empty = never validated.
_VALIDATION_FIELDS = ("ids_match", "format_valid", "quality_value")


def corpus_verdict(row: Any) -> bool | None:
    """Whether a row's corpus was accepted, ``None`` when it was never validated.

    A failed, interrupted or recovered run leaves ``corpus_accepted`` empty (its output
    was never validated). A CSV written by an older version holds ``false`` there: with
    no elapsed time and no validation field, such a row reads "not validated", never
    "rejected". A finished run whose output could not be read (elapsed measured) stays
    rejected.

    Args:
        row: a :class:`~gpusession.core.records.results.ResultRow` or a row as a mapping.

    Returns:
        ``True`` accepted, ``False`` rejected by a validation, ``None`` not validated.
    """
    def get(key: str) -> Any:
        return row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)

    accepted = get("corpus_accepted")
    if accepted is False and get("elapsed_seconds") is None and all(
            get(k) is None for k in _VALIDATION_FIELDS):
        return None
    return None if accepted is None else bool(accepted)

#: What each ending signal means to a person.
_SIGNAL_WORDS = {"SIGHUP": "the hang-up (SIGHUP: terminal or ssh connection closed)",
                 "SIGTERM": "SIGTERM (asked to stop)",
                 "SIGINT": "a second Ctrl-C (SIGINT)"}


def interrupted_words(signal_name: str | None, run_key: str | None) -> str:
    """``"interrupted by SIGHUP at e:warm:b4:2"``: a run ended at once by a signal.

    Args:
        signal_name: ``"SIGHUP"``, ``"SIGTERM"`` (other names are said as they are).
        run_key: the run in flight, ``None`` between runs.
    """
    where = f"at {run_key}" if run_key else "between runs"
    return f"interrupted by {signal_name or 'a signal'} {where}"


def describe(event: Event) -> str | None:
    """The one line a person reads for a runner event.

    Used by ``gpusession run --headless`` (printed) and the Run pane (notified). A row
    says its phase, variant, run, elapsed seconds (empty elapsed reads "not measured" or
    "failed", never 0; R7) and whether the corpus was accepted (V1).

    Args:
        event: any runner event, or a :class:`RunInterruptedRecord`.

    Returns:
        The line, or ``None`` when the event is not told in words (progress moves a
        bar; the end has its own summary).
    """
    if isinstance(event, RowAppended):
        r = event.row
        if r.phase == "load":
            return (f"          load  {variant_words(r.variant_id, r.phase):<10} "
                    f"{_seconds(r.elapsed_seconds, 'failed')}")
        el = _seconds(r.elapsed_seconds, "not measured")
        done = "?" if event.done is None else event.done
        return (f"[{done:>3}/{event.total or '?'}] {r.phase:<5} {r.variant_id:<10} "
                f"run {r.run_index:<3} {el}, "
                # what was judged is named by its kind: an output accepted by a rule is no corpus (S9)
                f"{row_kind(r.quality_metric).singular} {_ACCEPTED_WORDS[corpus_verdict(r)]}")
    if isinstance(event, EnvironmentObserved):
        return _environment_words(event.environment)
    if isinstance(event, IncidentReported):
        return f"incident: {event.message}"
    if isinstance(event, WorkerStarted):
        return event.waiting_for_nodes  # said only for a group over several nodes
    if isinstance(event, RunInterruptedRecord):
        said = _SIGNAL_WORDS.get(event.signal or "", event.signal or "a signal")
        words = interrupted_words(event.signal, event.run_key)
        return f"{words}: the run was ended at once by {said}"
    return None




#: What ``in_flight`` returns for an event that ends what was in flight.
ENDED = ""


def in_flight(event: Event) -> str | None:
    """What is in flight from ``event`` on, in words (``ENDED``: nothing; ``None``: unchanged).

    One naming for ``run --headless``'s in-flight line and the Run pane's: a run
    (``[  3/18] warm batch-8 run 3``), a worker's load (``worker w1 loading``) and, after
    it, its warm-up before its first run (``worker w1 warm-up``). A row, a progress step,
    an incident or the end ends it.
    """
    if isinstance(event, RunStarted):
        total = f"/{event.total}" if event.total else ""
        index = event.run_index if event.run_index is not None else "?"
        return f"[{event.done + 1:>3}{total}] {event.phase or ''} {event.variant_id or ''} run {index}"
    if isinstance(event, WorkerStarted):
        return f"worker {event.worker or ''} loading".replace("  ", " ")
    if isinstance(event, Loaded):
        return f"worker {event.worker or ''} warm-up".replace("  ", " ")
    if isinstance(event, (RowAppended, Progress, IncidentReported, Finished)):
        return ENDED
    return None


def elapsed_words(elapsed_s: float) -> str:
    """``20 s``, ``1 min 05 s``, ``2 h 03 min``: whole seconds, the field's short units."""
    whole = int(elapsed_s)
    if whole < 60:
        return f"{whole} s"
    minutes, seconds = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
