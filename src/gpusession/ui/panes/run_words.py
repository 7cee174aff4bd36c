"""The Run pane's words: a row's verdict, peaks, errors, a followed run, the last run, a run's end.

Who calls it: :mod:`gpusession.ui.panes.run` and its views (and ``run`` checks in the CLI
tests); the same sentences as headless ``gpusession run`` (H-11: words, never a colour alone).
"""

from __future__ import annotations

from typing import Any

from gpusession.core.events import corpus_verdict
from gpusession.core.files.errors import BadInput, Failure
from gpusession.core.folder.corpus_pin import REVISION_CHANGED
from gpusession.core.folder.journal import RunProgress
from gpusession.core.records.summary import SummaryRow
from gpusession.ui.context import fmt_bytes, plural, state_cell, yes_no


def row_dict(row: Any) -> dict[str, Any]:
    """A runner's row (a dict, a record with ``as_dict`` or a plain object) as a dict."""
    if isinstance(row, dict):
        return row
    if hasattr(row, "as_dict"):
        return dict(row.as_dict())
    return dict(vars(row))


def accepted_words(row: dict[str, Any]) -> str:
    """``accepted`` / ``rejected`` / ``not validated`` (H-11: words, not colour)."""
    return yes_no(corpus_verdict(row), "accepted", "rejected", "not validated")


def peak_words(allocated: int | None, reserved: int | None) -> str:
    """``1.20 GiB / 2.00 GiB`` (peak allocated / peak reserved, never added, M2);
    ``not measured`` when neither was (M4: a CPU run)."""
    if allocated is None and reserved is None:
        return "not measured"
    return f"{fmt_bytes(allocated)} / {fmt_bytes(reserved)}"


def error_words(exc: BaseException) -> str:
    """One line for an error that stopped a run: the message of the project's own errors
    (never their class name: "Failure: ..."), the class name only for the others."""
    if isinstance(exc, (BadInput, Failure, OSError)):
        return str(exc) or "the run could not start"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def follow_words(pid: int, started: str, done: int | None, total: int | None) -> str:
    """``a run is in progress in another process (pid 4242, started 12:00 UTC)`` plus
    ``\n3 of 15 runs done`` when the journal says how far it got."""
    head = f"a run is in progress in another process (pid {pid}{', started ' + started if started else ''})"
    if total:
        return f"{head}\n{done or 0} of {plural(total, 'run')} done — its rows show here as they land"
    return f"{head}\nits rows show here as they land"


#: how each end of an invocation reads in the status line
_ENDS = {
    "finished": "finished",
    "cancelled": "was cancelled at a run boundary",
    "incomplete": "stopped early",
    "running_or_stopped": "stopped without finishing",
}


def last_run_words(last: RunProgress | None, runs_recorded: int, who: str = "last run") -> str:
    """The status line of an experiment that is not running (fault: "idle" above a summary).

    ``last run finished — 18 of 18 runs done; r: run again``, ``… stopped early — 7 of
    18 runs done, incomplete; …``; without a journal record of its runs, ``18 runs
    recorded; r: run again``; ``not run yet — r: start`` when nothing was recorded.
    ``who`` names the run (``the run in the other process`` right after following it).
    """
    if last is not None:
        if last.state != "finished" and last.runs_done < last.runs_scheduled:  # cut short: resume first
            keys = "u: resume, r: a new attempt"
        else:
            keys = "r: run again"
        tail = "" if last.state == "finished" else ", incomplete"
        return (f"{who} {_ENDS[last.state]} — {last.runs_done} of {plural(last.runs_scheduled, 'run')} "
                f"done{tail}; {keys}")
    if runs_recorded:
        return f"{plural(runs_recorded, 'run')} recorded; r: run again"
    return "not run yet — r: start"


def verdict_cell(line: SummaryRow) -> Any:
    """The verdict column's cell of one summary line: its words, a rejection in bold red as a help (H-11, D5).

    The colour and the tail follow the line's typed verdict (``any_rejected``,
    ``measured_in_full``), never its words (A1). A group not measured in full adds how,
    after the verdict: ``accepted; 2 of 5 runs failed``.
    """
    from rich.text import Text

    words = line.verdict_words()
    if not line.measured_in_full:
        words = f"{words}; {line.outcome_words()}"
    if line.any_rejected:
        return Text(words, style="bold red")
    if line.failed and not line.unfinished and line.attempt is None and not line.is_validation:
        return state_cell(words, "bad")  # runs failed (kept; the report says why), R7
    if line.measured_in_full and line.all_accepted:
        return state_cell(words, "good")
    return state_cell(words, "unknown" if line.validated == 0 else "plain")


def outcome_words(outcome: Any, error: str | None, cancelled: bool, *, all_failed: bool = False,
                  refused: bool = False) -> str:
    """One sentence for the end of a run (the CLI's words: ``every run failed`` when none measured).

    ``refused``: nothing started (D1, the session limit): ``error`` is said as it is, never
    as a failed run (typed by the run's end, not found in ``error``'s words).
    """
    if error:  # a refusal before anything ran is no failure of a run
        return error if refused else f"run failed: {error}"
    complete = getattr(outcome, "completed", getattr(outcome, "complete", None))
    incidents = list(getattr(outcome, "incidents", None) or [])
    tail = f"; {plural(len(incidents), 'incident')} kept in the journal" if incidents else ""
    if cancelled or getattr(outcome, "cancelled", False):
        return f"run cancelled at a run boundary — partial result, marked incomplete{tail}"
    if getattr(outcome, "stopped", None) == REVISION_CHANGED:  # R1: refused at its load, nothing appended
        return f"not run: {getattr(outcome, 'stopped_words', '')}"
    if stopped := getattr(outcome, "stopped_words", None):  # D1, D3: the rows stand
        return f"run {stopped}{tail}"
    if complete is False:
        return f"run stopped early — incomplete{tail}"
    if all_failed:
        return f"run finished — every run failed{tail}"
    return f"run finished — complete{tail}"


__all__ = ["accepted_words", "error_words", "follow_words", "last_run_words", "outcome_words", "peak_words",
           "row_dict", "verdict_cell"]
