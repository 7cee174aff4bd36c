"""The runner's two stops at a run boundary: the session limit (D1) and the first result (D3).

Why it exists: a renter must neither start a run that would end after the time kept to
bring the work home (D1), nor push a whole batch after its first result showed a major
defect (D3). Both are decided only between runs: a run in flight is never killed.

Who calls it: :class:`gpusession.bench.runner.Runner`, before each worker group starts
(:meth:`RunStops.may_start` with ``new_worker=True``), at each ``ready`` of a worker
(through :class:`gpusession.bench.supervise.Supervisor`'s ``may_start``), after each
run that ends (:meth:`RunStops.first_run`: the first one stops when it failed or its
result is defective) and for each row it appends (:meth:`RunStops.seen_row`). ``gpusession run`` calls :func:`refuse_past_limit` before
anything runs, before ``--detach`` forks. No torch here (M5).

The expected duration of the next run is measured, never projected (seed 000 §5): the
largest measured duration of that variant and phase in this experiment (cold from cold,
warm from warm), plus the largest measured load and warm-up when a new worker must start
(a command has no load: its process start is inside each measured run); when one of them
was never measured, the experiment's run timeout. A refusal gives both times to the
second ("would end Fri 19:42:10 UTC; stop by Fri 19:42:00 UTC").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gpusession.core.copyhome.limit import SessionLimit, duration_words, session_limit, when_words
from gpusession.core.events import ExperimentStoppedRecord, RunOverrideRecord
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.files.errors import GpusessionError
from gpusession.core.files.units import format_seconds

#: The two reasons of a stop, as journaled (:class:`ExperimentStoppedRecord`).
SESSION_LIMIT = "session-limit"
FIRST_RESULT = "first-result"


class PastLimit(GpusessionError):
    """``run`` refused: the session limit has passed (D1). Exit code 4.

    ``reason`` is the refusal without the CLI's way round it (``past the session limit
    (stop by …)``): the TUI names its own key instead of the flag.
    """

    exit_code = 4

    def __init__(self, message: str, reason: str = "") -> None:
        """``message``: the CLI's words; ``reason``: the refusal alone (default ``message``)."""
        super().__init__(message)
        self.reason = reason or message


def refuse_past_limit(session: Any, experiment_id: str, now: datetime | None = None) -> None:
    """Refuse to start an experiment once the session limit has passed (D1).

    Args:
        session: the open session.
        experiment_id: the experiment about to run (named in what to do).
        now: the instant (aware); default now.

    Raises:
        PastLimit: ``not started: past the session limit (stop by …)``, exit 4.
    """
    limit = session_limit(session, now)
    if limit.passed():
        raise PastLimit(
            f"not started: past the session limit ({limit.stop_by}); retrieve what is useful "
            f"now (gpusession pull from home), or run anyway with `gpusession run {session.name} "
            f"--experiment {experiment_id} --past-limit`",
            reason=f"past the session limit ({limit.stop_by})")


@dataclass(frozen=True)
class Expected:
    """The expected duration of the next run (D1).

    Attributes:
        seconds: how long it is expected to take, from now.
        words: where the figure comes from, e.g. ``"40.0 min: the longest measured warm
            run of batch-1"``.
    """

    seconds: float
    words: str


def defect_words(report: Any) -> str | None:
    """A validation report's major defect in words, ``None`` when it has none (D3).

    Major: IDs that do not match (missing, extra, duplicated), an invalid format, or a
    quality below threshold − tolerance; a split overlap alone is not one.

    Args:
        report: a :class:`gpusession.core.validation.report.ValidationReport`.

    Returns:
        E.g. ``"300 IDs missing"`` or ``"invalid format (12 bad records), quality
        macro_f1 0.412 below 0.9 − 0"``.
    """
    own = getattr(report, "defect_words", None)
    if callable(own):  # an output accepted by a rule says its defect itself (S9)
        return own()
    out: list[str] = []
    if not report.ids_match:
        ids = [f"{report.missing_count:,} IDs missing" if report.missing_count else "",
               f"{report.extra_count:,} extra IDs" if report.extra_count else "",
               f"{report.duplicate_output_count:,} duplicated IDs" if report.duplicate_output_count else ""]
        out.append(", ".join(w for w in ids if w) or f"IDs do not match ({report.ids_reason})")
    if not report.format_valid:
        bad = report.bad_record_count
        out.append(f"invalid format ({bad:,} bad records)" if bad else f"invalid format ({report.format_reason})")
    if not report.quality_met:
        value = report.quality_value
        said = "not scored" if value is None else f"{value:.3f}"
        out.append(f"quality {report.quality_metric} {said} below {report.quality_threshold:g} − "
                   f"{report.quality_tolerance:g}")
    return ", ".join(out) or None


class RunStops:
    """The session limit (D1) and the first-result gate (D3) of one invocation.

    The limit is read again at each run boundary (:meth:`current_limit`): a reserve or a
    limit set while the experiment runs (``checklist evidence --reserve-hours``,
    ``package --limit``, a pull that measured the link) takes effect at the next run.

    Args:
        session: the open session.
        exp: the experiment being run.
        frame: the results CSV as read at the start (polars frame).
        records: the journal's typed records at the start.
        journal: writes a typed record to the session's journal.
        clock: returns now (aware UTC); a fake clock in tests.
        past_limit: runs may end after the limit (recorded; D1).
        continue_on_reject: a defective first result does not stop the batch (recorded; D3).
    """

    def __init__(self, session: Any, exp: Experiment, *, frame: Any, records: list[Any],
                 journal: Callable[[Any], None], clock: Callable[[], datetime],
                 past_limit: bool = False, continue_on_reject: bool = False) -> None:
        """Read the limit and the measured durations (the limit is read again at each boundary)."""
        self.exp = exp
        self._session = session
        self.clock = clock
        self.past_limit = past_limit
        self._journal = journal
        self.limit: SessionLimit = session_limit(session, clock())
        #: ``(reason, words)`` once the experiment is stopped, else ``None``
        self.stop: tuple[str, str] | None = None
        #: the gate waits for the first validated result of this invocation (D3)
        self.gate_armed = not continue_on_reject
        self.past_limit_note: str | None = None
        self._report_path: Path | None = None
        self._said = False
        self._runs_s: dict[tuple[str, str], float] = {}
        self._loads_s: dict[str, float] = {}
        self._warmup_s: float | None = None
        self._loaded_at: datetime | None = None
        self._rows(frame)
        self._warmups(records)
        for override, on, words in (
                ("past-limit", past_limit, f"runs may end after the session limit ({self.limit.stop_by}): "
                 "--past-limit"),
                ("continue-on-reject", continue_on_reject, "a defective first result does not stop "
                 "the batch: --continue-on-reject")):
            if on:
                journal(RunOverrideRecord(experiment_id=exp.id, override=override, message=words))

    # -- what was measured ------------------------------------------------------------
    def _rows(self, frame: Any) -> None:
        mine = frame.filter(frame["experiment_id"] == self.exp.id) if frame.height else frame
        for r in mine.iter_rows(named=True):
            self.seen_row(r["phase"], r["variant_id"], r["elapsed_seconds"])

    def seen_row(self, phase: str | None, variant: str | None, elapsed_s: float | None) -> None:
        """Keep a row's measured duration (the largest per variant and phase, loads apart)."""
        if elapsed_s is None or phase is None or variant is None:
            return
        if phase == "load":
            self._loads_s[variant] = max(self._loads_s.get(variant, 0.0), float(elapsed_s))
        else:
            key = (phase, variant)
            self._runs_s[key] = max(self._runs_s.get(key, 0.0), float(elapsed_s))

    def _warmups(self, records: list[Any]) -> None:
        """The longest warm-up of this experiment: from a worker's ``worker_loaded`` to its ``warmup_done``."""
        from gpusession.core.events import WarmupDoneRecord, WorkerLoadedRecord

        loaded: dict[str | None, datetime] = {}
        for r in records:
            if getattr(r, "experiment_id", None) != self.exp.id:
                continue
            at = _when(getattr(r, "at", None))
            if isinstance(r, WorkerLoadedRecord) and at is not None:
                loaded[r.worker] = at
            elif isinstance(r, WarmupDoneRecord) and at is not None and r.worker in loaded:
                self._warm_took((at - loaded.pop(r.worker)).total_seconds())

    def _warm_took(self, seconds: float) -> None:
        self._warmup_s = max(self._warmup_s or 0.0, max(0.0, seconds))

    def worker_loaded(self) -> None:
        """A worker loaded now: its warm-up is timed from here."""
        self._loaded_at = self.clock()

    def warmup_done(self) -> None:
        """The worker's warm-up ended now: its duration is measured."""
        if self._loaded_at is not None:
            self._warm_took((self.clock() - self._loaded_at).total_seconds())
            self._loaded_at = None

    # -- the session limit (D1) -------------------------------------------------------
    def current_limit(self, now: datetime) -> SessionLimit:
        """The session limit as ``session.toml`` and ``retrieval.toml`` say it now (D1, D2).

        Read at each run boundary, so a limit changed during the run applies at the next
        one: ``session.toml`` as the session reads it (parsed again only when its bytes
        changed, :func:`~gpusession.core.folder.session.session_toml_view`, A5) and ``retrieval.toml`` (the folder's size comes from
        ``summary.json``). A ``session.toml`` that does not read now keeps the limit read last.

        Args:
            now: the instant (aware; the runner's clock).

        Returns:
            The limit, also kept as :attr:`limit`.
        """
        from gpusession.core.copyhome.limit import limit_of
        from gpusession.core.folder.session_toml import session_toml_view

        try:
            doc = session_toml_view(self._session.session_toml)
        except (OSError, GpusessionError):
            return self.limit
        self.limit = limit_of(self._session.folder, doc, now)
        return self.limit

    def expected(self, run: ScheduledRun, *, new_worker: bool) -> Expected:
        """How long ``run`` is expected to take from now (D1; measured, never projected)."""
        exp = self.exp
        timeout = Expected(exp.run_timeout_s, f"{format_seconds(exp.run_timeout_s)}: the experiment's "
                           "run timeout, as nothing is measured yet for {what}")
        run_s = self._runs_s.get((run.phase, run.variant_id))
        if run_s is None:
            return Expected(timeout.seconds, timeout.words.format(what=f"{run.phase} runs of {run.variant_id}"))
        total, parts = run_s, [f"the longest measured {run.phase} run of {run.variant_id}, {format_seconds(run_s)}"]
        if new_worker and exp.workload == "command":
            # no load row: a command's process start is inside each of its measured runs
            parts.append("no load (a command's start is in its runs' time)")
            if run.phase == "warm" and exp.warmup_iterations:
                warm = self._warmup_s if self._warmup_s is not None else self._warmup_estimate()
                if warm is None:
                    return Expected(timeout.seconds, timeout.words.format(what="the warm-up"))
                total += warm
                parts.append(f"its warm-up, {format_seconds(warm)}")
        elif new_worker:
            load = self._loads_s.get(run.variant_id, max(self._loads_s.values(), default=None))
            if load is None:
                return Expected(timeout.seconds, timeout.words.format(what="the load"))
            total += load
            parts.append(f"a new worker's load, {format_seconds(load)}")
            if run.phase == "warm" and exp.warmup_iterations:
                warm = self._warmup_s if self._warmup_s is not None else self._warmup_estimate()
                if warm is None:
                    return Expected(timeout.seconds, timeout.words.format(what="the warm-up"))
                total += warm
                parts.append(f"its warm-up, {format_seconds(warm)}")
        return Expected(total, f"{duration_words(total)}: " + " + ".join(parts))

    def _warmup_estimate(self) -> float | None:
        """Warm-up iterations × the longest measured warm run of each variant; ``None`` if one is unmeasured."""
        runs = [self._runs_s.get(("warm", v)) for v in self.exp.variant_ids]
        if any(r is None for r in runs):
            return None
        return self.exp.warmup_iterations * sum(r for r in runs if r is not None)

    def may_start(self, run: ScheduledRun, *, new_worker: bool) -> bool:
        """Whether ``run`` may start now: no stop yet, and it ends by the limit (D1, D3).

        A run that would end past the limit is not started and the experiment stops
        there (journaled), unless ``past_limit``: then it starts and every row from
        here on says so in its notes.
        """
        if self.stop is not None:
            self._say_first_result(run)
            return False
        now = self.clock()
        if not self.current_limit(now).known:  # read again: a reserve set since applies here
            return True
        expected = self.expected(run, new_worker=new_worker)
        if self.limit.fits(now, expected.seconds):
            return True
        if self.past_limit:
            if self.past_limit_note is None:
                self.past_limit_note = f"started past the session limit ({self.limit.stop_by}; --past-limit)"
            return True
        end = now + timedelta(seconds=expected.seconds)
        stop_by = (f"stop by {when_words(self.limit.at, now, seconds=True)}" if self.limit.at
                   else self.limit.stop_by)
        words = (f"stopped at the session limit ({stop_by}): {run.run_key} is expected to "
                 f"take {expected.words}, and would end {when_words(end, now, seconds=True)}; the rows "
                 "measured stand; `--past-limit` runs past it")
        self.stop = (SESSION_LIMIT, words)
        self._journal(ExperimentStoppedRecord(
            experiment_id=self.exp.id, reason=SESSION_LIMIT, run_key=run.key(self.exp.id).format(),
            message=words, limit_at=self.limit.at.isoformat() if self.limit.at else None,
            expected_s=expected.seconds))
        return False

    # -- the first result (D3) --------------------------------------------------------
    def first_run(self, run: ScheduledRun, *, failed: str | None = None, report: Any = None,
                  report_path: Path | None = None) -> None:
        """Look at the first run of the invocation to end; stop when it failed or its result is defective (D3).

        The first result is the first run this invocation ends (the cold run of the
        first variant drawn, as scheduled): a run that failed (exit non-zero, out of
        memory, an exception, its worker died or timed out) or whose output could not
        be validated at all (no file, an unreadable one) stops the experiment at the next
        run boundary, as a major defect of its report does. Only that run is looked at:
        a later run that fails after one succeeded is data (R7), never a stop. Nothing
        is looked at once the gate is off (``--continue-on-reject``).

        Args:
            run: the run that ended.
            failed: what failed, in words (the worker's message with the command's
                stderr tail, or why its output could not be validated), ``None`` when the
                run returned and its output, if validated, was read.
            report: its validation report, ``None`` when none was made.
            report_path: where the report was archived.
        """
        if not self.gate_armed:
            return
        if failed is None:
            self.first_result(run, report, report_path)
            self.gate_armed = False  # a run that returned, validated or not, is the first result
            return
        self.gate_armed = False
        if self.stop is not None:
            return
        words = (f"stopped after the first result: {run.run_key} failed ({failed}) — fix and run "
                 "again; its row is kept with the incident; `run --continue-on-reject` runs the "
                 "whole batch anyway")
        self.stop = (FIRST_RESULT, words)
        self._report_path = None  # journaled at the first run it keeps from starting

    def first_result(self, run: ScheduledRun, report: Any, report_path: Path | None) -> None:
        """Look at the first validated result of the invocation; stop on a major defect (D3).

        An output that could not be validated at all holds no report: :meth:`first_run`
        stops on it as on a failed run.

        Args:
            run: the run whose output was validated.
            report: its validation report, ``None`` when none was made.
            report_path: where the report was archived.
        """
        if not self.gate_armed or report is None:
            return
        self.gate_armed = False  # only the first validated result is looked at
        defect = defect_words(report)
        if defect is None or self.stop is not None:
            return
        where = f" (validation report: {report_path})" if report_path is not None else ""
        words = (f"stopped after the first result: {defect} — fix and run again{where}; "
                 "`run --resume` runs the rest of its schedule and keeps the rejected first "
                 "result as measured; a plain `run` measures the whole batch anew (a program "
                 "changed since is measured as a new experiment: `define --id NEW`, R10)")
        self.stop = (FIRST_RESULT, words)
        self._report_path = report_path  # journaled at the first run it keeps from starting

    def _say_first_result(self, run: ScheduledRun) -> None:
        """Journal the first-result stop once, naming the run it did not start (D3)."""
        if self.stop is None or self.stop[0] != FIRST_RESULT or self._said:
            return
        self._said = True
        path = self._report_path
        self._journal(ExperimentStoppedRecord(
            experiment_id=self.exp.id, reason=FIRST_RESULT, run_key=run.key(self.exp.id).format(),
            message=self.stop[1], report=str(path) if path is not None else None))


def _when(text: Any) -> datetime | None:
    """An ISO 8601 ``at`` of a journal record, ``None`` when it does not read."""
    if isinstance(text, datetime):
        return text
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


__all__ = ["FIRST_RESULT", "SESSION_LIMIT", "Expected", "PastLimit", "RunStops", "defect_words",
           "refuse_past_limit"]
