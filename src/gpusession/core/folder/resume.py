"""What ``run --resume`` still has to measure: read from the CSV and the journal (S7).

Why it exists: an experiment that ended early (a crash, a hang-up, the session limit,
the first-result stop, a cancel) is continued at the next missing run of its stored
schedule, so each (variant, phase, run index) of that schedule ends with exactly one
measured row; what is missing is read from the files, never from a process's memory.

Who calls it: ``gpusession run --resume`` (before anything runs: nothing to resume, never
run) and :class:`gpusession.bench.runner.Runner` (the runs it schedules). No torch, no
textual.

The stored schedule is the ``runs`` of the experiment's newest ``experiment_started``
of a plain run (a resume journals only what it continues, with ``resumes`` naming that
attempt). A run is measured when a cold or warm row of the CSV for its
(phase, variant, run index) has an ``elapsed_seconds``; an incident row (a run in
flight when the process was killed, a failed run) stays in the CSV, and the run is
measured again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusession.core.events import Event, ExperimentStartedRecord
from gpusession.core.experiment.keys import RunKey
from gpusession.core.experiment.plan import ScheduledRun
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.folder.experiments import get_experiment

if TYPE_CHECKING:  # the session module is this one's neighbour on the floor; a type only
    import polars as pl

    from gpusession.core.folder.session import Session


@dataclass(frozen=True)
class ResumePlan:
    """Where an experiment's stored schedule stands.

    Attributes:
        experiment_id: the experiment.
        attempt: the number of the attempt whose schedule is continued (1 = the
            experiment's first ``experiment_started``).
        scheduled: every run of that schedule, in its order.
        missing: the runs of it without a measured row, in the same order.
    """

    experiment_id: str
    attempt: int
    scheduled: tuple[ScheduledRun, ...]
    missing: tuple[ScheduledRun, ...]

    @property
    def measured(self) -> int:
        """Runs of the schedule that have their measured row."""
        return len(self.scheduled) - len(self.missing)

    def nothing_words(self) -> str:
        """``"nothing to resume: all 18 runs of e are measured"``."""
        n = len(self.scheduled)
        if n == 1:
            return f"nothing to resume: the one run of {self.experiment_id} is measured"
        return f"nothing to resume: all {n} runs of {self.experiment_id} are measured"

    def words(self) -> str:
        """What the resume does, for the journal and the terminal.

        Example: ``"resuming attempt 1 of e at warm:batch-2:2: 11 of 18 runs missing, the
        7 measured stand; a new worker loads and warms up again before the warm runs"``.
        """
        first = self.missing[0].run_key if self.missing else "-"
        warm = any(r.phase == "warm" for r in self.missing)
        cold = any(r.phase == "cold" for r in self.missing)
        return (f"resuming attempt {self.attempt} of {self.experiment_id} at {first}: "
                f"{len(self.missing)} of {len(self.scheduled)} runs missing, the {self.measured} "
                "measured stand"
                + ("; a new worker loads and warms up again before the warm runs" if warm else "")
                + ("; each cold run in a fresh process" if cold else ""))


def scheduled_run(local_key: str) -> ScheduledRun:
    """The run of a stored schedule's key ``"warm:batch-4:2"``, with its worker.

    A cold run gets a fresh worker of its own (``cold-batch-4-1``), the warm runs share
    one (``warm``), as :func:`gpusession.core.experiment.plan.schedule` names them.

    Raises:
        BadInput: not ``phase:variant:index`` of a cold or warm run.
    """
    key = RunKey.parse(f"e:{local_key}")
    if key.phase not in ("cold", "warm"):
        raise BadInput(f"expected a cold or warm run in the stored schedule, got {shown(local_key)}")
    worker = f"cold-{key.variant_id}-{key.run_index}" if key.phase == "cold" else "warm"
    return ScheduledRun(key.phase, key.variant_id, key.run_index, worker)


def measured_slots(frame: pl.DataFrame, experiment_id: str) -> set[tuple[str, str, int]]:
    """``(phase, variant, run index)`` of the cold and warm rows of ``experiment_id`` with a measured time.

    Args:
        frame: the results CSV as read (polars frame, 38 columns).
        experiment_id: the experiment.
    """
    if frame.height == 0:
        return set()
    out: set[tuple[str, str, int]] = set()
    mine = frame.filter(frame["experiment_id"] == experiment_id)
    for r in mine.select("phase", "variant_id", "run_index", "elapsed_seconds").iter_rows(named=True):
        if r["phase"] in ("cold", "warm") and r["elapsed_seconds"] is not None and r["run_index"] is not None:
            out.add((str(r["phase"]), str(r["variant_id"]), int(r["run_index"])))
    return out


def resume_plan(records: Sequence[Event], measured: Iterable[tuple[str, str, int]],
                experiment_id: str, session_name: str = "NAME") -> ResumePlan:
    """The stored schedule of ``experiment_id`` and its runs still to measure.

    Args:
        records: the journal's typed records, oldest first.
        measured: :func:`measured_slots` of the results CSV.
        experiment_id: the experiment.
        session_name: named in what to do when it never ran.

    Returns:
        The :class:`ResumePlan` of the newest plain run of the experiment.

    Raises:
        BadInput: the experiment never ran (no ``experiment_started`` of a plain run):
            nothing to resume, run it with plain ``run``.
    """
    starts = [r for r in records if isinstance(r, ExperimentStartedRecord)
              and r.experiment_id == experiment_id]
    plain = [(n, r) for n, r in enumerate(starts, start=1) if r.resumes is None]
    if not plain:
        raise BadInput(f"nothing to resume: {experiment_id} has never run; start it with "
                       f"`gpusession run {session_name} --experiment {experiment_id} --headless`")
    attempt, head = plain[-1]
    scheduled = tuple(scheduled_run(k) for k in head.runs)
    done = set(measured)
    missing = tuple(r for r in scheduled if (r.phase, r.variant_id, r.run_index) not in done)
    return ResumePlan(experiment_id, attempt, scheduled, missing)


def session_resume_plan(session: Session, experiment_id: str) -> ResumePlan:
    """:func:`resume_plan` of an open session, read from its journal and results CSV now.

    Raises:
        BadInput: the experiment never ran; a run left names a variant the experiment
            no longer has (it was defined again before anything was measured); an
            unreadable results CSV.
    """
    frame = session.results.read()
    plan = resume_plan(session.journal_records(), measured_slots(frame, experiment_id),
                       experiment_id, session.name)
    variants = get_experiment(session, experiment_id).variant_ids
    gone = sorted({r.variant_id for r in plan.missing} - set(variants))
    if gone:
        raise BadInput(f"nothing resumed: the stored schedule of {experiment_id} has variant(s) "
                       f"{', '.join(gone)} that it no longer defines; run it with plain "
                       f"`gpusession run {session.name} --experiment {experiment_id} --headless`")
    return plan


__all__ = ["ResumePlan", "measured_slots", "resume_plan", "scheduled_run", "session_resume_plan"]
