"""The result rows of a run, built from what its worker reported: pure (R3, R4, R7).

Who calls it: :class:`gpusession.bench.runner.Runner`, once per load and per scheduled
run, then it appends the row. Every :class:`~gpusession.core.records.results.ResultRow`
of a run is built here and nowhere else, so a row's fields and its ``notes`` (the words
people read) have one source; no process, no file, no clock: ``tests/bench/test_rows.py``
checks them without starting a worker.

A row's protocol fields (phase, warm-up iterations) come from what the worker reports it
did, never from the experiment's definition (R4). A failed run keeps its row: elapsed
empty, ``corpus_accepted`` empty (its output was never validated), the incident in
``notes`` (R7). Each row's ``notes`` is written from its typed facts
(:class:`~gpusession.core.records.notefacts.RowFacts`, the ``*_facts`` functions), which
the runner also records in the journal: the report reads those, never the words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from gpusession.bench.ranks import error_gist
from gpusession.bench.row_record import applied, record_words
from gpusession.bench.timing import RESERVED_CARRY_NOTE
from gpusession.core.events import WorkerApplied, WorkerIncident, WorkerLoaded, WorkerRunFinished
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.files.secrets import mask_text
from gpusession.core.files.units import format_bytes
from gpusession.core.folder.journal import RunKey
from gpusession.core.records.notefacts import (
    CONCURRENT_LOAD_WORDS,
    LOAD_WORDS,
    NOT_OBSERVED_WORDS,
    TRUNCATED_WORDS,
    UNMEASURED_PASS_WORDS,
    Energy,
    Incident,
    Remark,
    RowFacts,
    notes_cell,
    process_words,
)
from gpusession.core.records.results import ResultRow, refused_cells

#: What a validation gave a run: the row's validation fields and a note, else ``None``
#: (:meth:`gpusession.bench.run_validation.RunValidation.validate`).
Validation = tuple[dict[str, Any], str | None]


def count_words(n: int | None) -> str:
    """``1000`` → ``1,000`` (user text has thousands separators); ``None`` → ``?``."""
    return "?" if n is None else f"{n:,}"


@dataclass(frozen=True)
class LoadSlot:
    """Where a worker's load stands in the results: a load is a timed run too (S7).

    Attributes:
        variant_id: the cold run's variant, or ``"all"`` for the warm worker.
        run_index: the load's 1-based index for that variant in this experiment.
        key: its run key (``<experiment>:load:<variant>:<index>``).
    """

    variant_id: str
    run_index: int
    key: RunKey

    @staticmethod
    def variant_of(group: list[ScheduledRun]) -> str:
        """The variant a group's load is counted under: a cold run's own, ``"all"`` for warm."""
        return group[0].variant_id if group[0].phase == "cold" else "all"

    @classmethod
    def of(cls, experiment_id: str, variant_id: str, run_index: int) -> LoadSlot:
        """The slot of load ``run_index`` of ``variant_id`` (its run key spelled out)."""
        return cls(variant_id, run_index, RunKey(experiment_id, "load", variant_id, run_index))


def base_row(exp: Experiment, *, environment: Mapping[str, Any], revisions: Mapping[str, Any],
             corpus_revision: str | None, duration_days: int | None, lots: int | None,
             package_total_usd_minor: int | None, applied: WorkerApplied | None = None) -> ResultRow:
    """The fields every row of this experiment shares: environment, revisions, package (R10, C1).

    ``seed`` and ``precision`` are what the worker applied (``applied``, A2), never the
    definition's: empty where no worker said so (a command, a worker that died before
    it built the workload).

    Args:
        exp: the experiment.
        environment: what the worker observed (``gpu_model``, ``device``, versions…).
        revisions: the workload's ``model_revision`` / ``tokenizer_revision``.
        corpus_revision: the corpus checked for validation, ``None`` when none.
        duration_days: the session's package length in days.
        lots: the package's lots bought (B200: one lot = two GPUs).
        package_total_usd_minor: the package's total in USD cents, ``None`` when unknown.
        applied: what the worker process applied before its load, ``None`` when it said nothing.
    """
    env = environment
    return ResultRow(
        experiment_id=exp.id,
        corpus_revision=corpus_revision,
        model_revision=revisions.get("model_revision"),
        tokenizer_revision=revisions.get("tokenizer_revision"),
        seed=applied.seed if applied is not None else None,
        gpu_model=env.get("gpu_model"),
        gpu_count=env.get("gpu_count"),
        device=env.get("device"),
        driver_version=env.get("driver_version"),
        python_version=env.get("python_version"),
        torch_version=env.get("torch_version"),
        runtime_version=env.get("runtime_version"),
        precision=applied.precision if applied is not None else None,  # a precision sweep's: none
        duration_days=duration_days,
        lots=lots,
        package_total_usd_minor=package_total_usd_minor,
    )


def load_row(base: ResultRow, slot: LoadSlot, ev: WorkerLoaded, worker: str) -> ResultRow:
    """The row of a load the worker timed (R3): elapsed and the allocator figures (M1).

    Its notes say which GPU the figures come from when several were used, and under
    torchrun what the group's set-up took besides the load (:func:`load_facts`).
    """
    return base.replace(
        variant_id=slot.variant_id, phase="load", run_index=slot.run_index,
        elapsed_seconds=ev.elapsed_s,
        baseline_allocated_bytes=ev.baseline_allocated_bytes,
        baseline_reserved_bytes=ev.baseline_reserved_bytes,
        peak_allocated_bytes=ev.peak_allocated_bytes,
        peak_reserved_bytes=ev.peak_reserved_bytes,
        notes=notes_cell(load_facts(ev, worker)),
    )


def load_facts(ev: WorkerLoaded, worker: str) -> RowFacts:
    """The facts of a timed load's row: the load itself, the GPU the figures are from, the set-up."""
    return RowFacts(remarks=(Remark("load", LOAD_WORDS.format(worker=worker)),
                             *(Remark(k, n) for k, n in (("memory", ev.memory_note), ("setup", ev.setup_note)) if n)))


def load_failed_facts(incident: str) -> RowFacts:
    """The facts of a load the worker said failed: ``incident`` is ``"load: Type: message"``."""
    return RowFacts(incidents=(Incident("load_failed", incident),))


def load_failed_row(base: ResultRow, slot: LoadSlot, incident: str) -> ResultRow:
    """The row of a load the worker said failed (R7): ``incident`` is ``"load: Type: message"``.

    No corpus was validated: ``corpus_accepted`` stays empty.
    """
    return base.replace(variant_id=slot.variant_id, phase="load", run_index=slot.run_index,
                        notes=notes_cell(load_failed_facts(incident)))


def died_loading_facts(detail: str) -> RowFacts:
    """The facts of a load cut short by the worker's end: ``detail`` says how it ended."""
    return RowFacts(incidents=(Incident("died_loading", detail),))


def died_loading_row(base: ResultRow, slot: LoadSlot, detail: str) -> ResultRow:
    """The row of a load cut short by the worker's end (R7): ``detail`` says how it ended."""
    return base.replace(variant_id=slot.variant_id, phase="load", run_index=slot.run_index,
                        notes=notes_cell(died_loading_facts(detail)))


def run_row(base: ResultRow, exp: Experiment, run: ScheduledRun, *, phase: str | None,
            warmup_iterations: int, applied: Mapping[str, Any] | None = None) -> ResultRow:
    """The row of ``run`` before its figures, from what the worker reported it did (R3, R4, A2).

    ``phase`` and ``warmup_iterations`` come from the worker's ``run_finished``, never
    from the experiment's announced warm-up; ``phase`` ``None`` falls back to the
    scheduled one. ``applied`` is the run's echo (``WorkerRunFinished.applied``): its
    ``batch``, ``context``, ``seed`` and ``precision`` fill the cells, a setting it does
    not hold stays empty (a command that took no ``{seed}``). ``None`` (a run its worker
    died in, which said nothing of it): the schedule's batch, context and precision,
    the process's seed.
    """
    if applied is None:
        st = exp.setting(run.variant_id)
        took = {"batch": st["batch"], "context": st["context"], "seed": base.seed, "precision": st["precision"]}
    else:
        took = {k: applied.get(k) for k in ("batch", "context", "seed", "precision")}
    return base.replace(
        variant_id=run.variant_id, phase=phase or run.phase, run_index=run.run_index,
        warmup_iterations=warmup_iterations, **took,
    )


def died_run_facts(detail: str) -> RowFacts:
    """The facts of a run whose worker died during it: ``detail`` says how the worker ended."""
    return RowFacts(incidents=(Incident("died_run", detail),))


def died_run_row(base: ResultRow, exp: Experiment, run: ScheduledRun,
                 warm_done: Mapping[str, int], detail: str) -> ResultRow:
    """The row of a run whose worker died during it (R7); ``detail`` says how it ended.

    Its warm-up report is all the worker said it did (``warm_done``, per variant; a cold
    run did none). Its output was never validated: ``corpus_accepted`` stays empty,
    never false.
    """
    done = warm_done.get(run.variant_id, 0) if run.phase == "warm" else 0
    return run_row(base, exp, run, phase=run.phase, warmup_iterations=done).replace(
        notes=notes_cell(died_run_facts(detail)))


def failure_incident_kind(ev: WorkerRunFinished) -> str:
    """The journal's kind of a failed run's incident (``IncidentRecord.kind``, R7).

    ``"out_of_memory"``, ``"output_refused"`` or ``"exception"``: the typed twin of
    :func:`failure_kind`, from the same fields of the worker's ``run_finished``.
    """
    return ("out_of_memory" if ev.oom else "output_refused" if ev.error_type == "BadInput"
            else "exception")


def worker_incident_kind(ev: WorkerIncident) -> str:
    """The journal's kind of an exception the worker reported (``IncidentRecord.kind``, R7)."""
    return "out_of_memory" if ev.oom else "load_failed" if ev.where == "load" else "exception"


def failure_kind(ev: WorkerRunFinished) -> str:
    """What failed a run, in words: out of memory, a refused output, or the workload.

    A refused output file (a link) is the harness's refusal (``BadInput``), not the
    workload's.
    """
    return ("out of memory" if ev.oom else "output refused" if ev.error_type == "BadInput"
            else "exception in the workload")


def finished_run_row(row: ResultRow, run: ScheduledRun, ev: WorkerRunFinished, *,
                     validation: Validation | None, ended: str | None,
                     load_note: str | None) -> tuple[ResultRow, str | None]:
    """The row of a run the worker reported finished, and its incident sentence (R3, R7, M1).

    Args:
        row: :func:`run_row` of the run, from ``ev``'s phase and warm-up iterations.
        run: the scheduled run.
        ev: the worker's ``run_finished``.
        validation: what validating its output gave (only read when ``ev.ok``).
        ended: for a run whose rank failed under torchrun, how the group ended with it.
        load_note: the concurrent load at the start, in words; ``None`` when there was none.

    Returns:
        The row (figures, validation fields, ``notes`` from :func:`finished_run_facts`)
        and, for a failed run, the incident sentence
        ``"run KEY: kind: Type: message[; ended]"``, else ``None``.
    """
    facts, incident = finished_run_facts(row, run, ev, validation=validation, ended=ended,
                                         load_note=load_note)
    if ev.ok:
        row = row.replace(
            elapsed_seconds=ev.elapsed_s,
            baseline_allocated_bytes=ev.baseline_allocated_bytes,
            baseline_reserved_bytes=ev.baseline_reserved_bytes,
            peak_allocated_bytes=ev.peak_allocated_bytes,
            peak_reserved_bytes=ev.peak_reserved_bytes,
        )
        fields = validation[0] if validation is not None else {}
        row = row.replace(**fields)
    # a failed run has no output to validate: corpus_accepted stays empty, never false
    return row.replace(notes=notes_cell(facts)), incident


def finished_run_facts(row: ResultRow, run: ScheduledRun, ev: WorkerRunFinished, *,
                       validation: Validation | None, ended: str | None,
                       load_note: str | None) -> tuple[RowFacts, str | None]:
    """The facts of a finished run's row and its incident sentence (as :func:`finished_run_row`).

    Its incident, energy reading, truncation, ranks, validation note, how the group
    ended and the concurrent load, each a typed fact; the cell is written from them.
    """
    remarks: list[Remark] = []
    incidents: list[Incident] = []
    incident = None
    truncated = ev.truncated
    if truncated:
        remarks.append(Remark("truncated", TRUNCATED_WORDS.format(
            truncated=f"{truncated:,}", inputs=count_words(ev.n_inputs), context=count_words(row.context))))
    elif truncated is None and row.context is not None:  # passed, never stated as applied (A2, R9)
        remarks.append(Remark("truncated", NOT_OBSERVED_WORDS.format(context=count_words(row.context))))
    if ev.report_note:  # what of a command's report was refused (never the value)
        remarks.append(Remark("report", ev.report_note))
    if ev.cpu_user_s is not None or ev.cpu_system_s is not None or ev.max_rss_bytes is not None:
        remarks.append(Remark("process", process_words(ev.cpu_user_s, ev.cpu_system_s, ev.max_rss_bytes)))
    if ev.rank_note:  # elapsed between barriers, peaks the maximum over ranks
        remarks.append(Remark("ranks", ev.rank_note))
    if ev.throttled:
        remarks.append(Remark("throttled", ev.throttled))
    energy = Energy.of_worker(ev.energy_j, ev.energy_words,  # failed runs drew energy too
                              unsupported=bool(ev.energy_unsupported))
    if ev.ok:
        if ev.message:
            incidents.append(Incident("workload_said", ev.message))
        remarks.extend(_ok_remarks(ev))
        vnote = validation[1] if validation is not None else None
        if vnote:
            remarks.append(Remark("validation", vnote))
    else:
        kind = failure_kind(ev)
        said = error_gist(ev.message) or mask_text(ev.message or "")[0]  # never torch's banner
        incidents.append(Incident("run_failed", f"{kind}: {ev.error_type}: {said}"))
        if ev.failed_peak_allocated_bytes is not None or ev.failed_peak_reserved_bytes is not None:
            remarks.append(Remark("failure_peaks", failure_peaks_words(ev)))
        ended = "; ".join(e for e in (ev.worker_ends, ended) if e) or None
        if ended:
            remarks.append(Remark("ended", ended))
        incident = f"run {run.run_key}: {kind}: {ev.error_type}: {said}" + (f"; {ended}" if ended else "")
    if load_note:
        remarks.append(Remark("concurrent_load", CONCURRENT_LOAD_WORDS.format(load=load_note)))
    return RowFacts(tuple(incidents), energy, tuple(remarks)), incident


class IncidentSink(Protocol):
    """Where a row's incident is journalled and shown: :meth:`gpusession.bench.recorder.Recorder.incident`."""

    def __call__(self, message: str, *, kind: str, run_key: str | None = None,
                 what: str | None = None) -> object:
        """Journal ``message`` with its typed ``kind``, ``run_key`` and ``what`` (R7)."""


def within_bounds(row: ResultRow, facts: RowFacts, *,
                  say: IncidentSink) -> tuple[ResultRow, RowFacts]:
    """``row`` with every figure its reader would refuse left empty, as a failed run (A4, H-65).

    A figure past its column's bound (an ``elapsed_seconds`` of 1e20: :func:`refused_cells`)
    written once made every reader refuse the whole CSV. Its cell is left empty (not
    measured), the corpus verdict too (a failed run holds none, R7), and the row carries
    one incident naming each figure.

    Args:
        row: the row about to be appended.
        facts: its notes' facts; the incidents gain one per figure left out.
        say: called with one line per figure left out (the recorder's incident), typed
            ``past_bound`` with the row's run key and the row incident's words.

    Returns:
        ``(row, facts)``, unchanged when every figure reads back.
    """
    refused = refused_cells(row)
    if not refused:
        return row, facts
    row = row.replace(**{c: None for c, _ in refused}, corpus_accepted=None)
    facts = replace(facts, incidents=facts.incidents + tuple(Incident("past_bound", w) for _, w in refused))
    key = f"{row.experiment_id} {row.phase} {row.variant_id} run {row.run_index}"
    exp, phase, variant, index = row.experiment_id, row.phase, row.variant_id, row.run_index
    run_key = (RunKey(exp, phase, variant, index).format()
               if exp is not None and phase is not None and variant is not None and index is not None else None)
    for _, w in refused:
        say(f"{key}: {w}; left empty, the run counts as failed", kind="past_bound", run_key=run_key, what=w)
    return row, facts


def every_row_facts(row: ResultRow, facts: RowFacts, exp: Experiment, environment: Mapping[str, Any], *,
                    resume_notes: Mapping[str, str], past_limit_note: str | None,
                    reported: Mapping[str, str] | None = None, offered: Sequence[str] | None = None,
                    params: Mapping[str, Any] | None = None,
                    say: IncidentSink) -> tuple[ResultRow, RowFacts]:
    """A row as appended, its notes written from ``facts`` and what every row of the run adds (R11).

    What a command received and reported (:func:`gpusession.bench.row_record.applied`;
    ``reported``: its run's checked ``$GPUSESSION_REPORT`` values, ``None`` when none;
    ``offered``: the settings its run got only as a variable, as its worker said), the
    record (:func:`~gpusession.bench.row_record.record_words`; ``params``: the keyword
    arguments the Python workload's factory got, as its worker said, ``{}`` when none
    said, A2), the session-limit override it started under (D1) and, for a resumed
    attempt, what its rows say by phase.

    A figure its reader would refuse is left out first (:func:`within_bounds`, said through
    ``say``, H-65).

    Returns:
        The row (its notes :func:`notes_cell` of the facts) and those facts.
    """
    row, facts = within_bounds(row, facts, say=say)
    row, offered_notes = applied(row, exp, reported, offered)
    taken = tuple(k for k in (reported or {}) if exp.workload == "command")
    facts = facts.plus(*(Remark("offered", n) for n in offered_notes),
                       Remark("record", record_words(exp, environment.get("code_revision"), reported=taken,
                                                     variant=str(row.variant_id), params=params)))
    if past_limit_note:  # D1: the override is in every row it let start
        facts = facts.plus(Remark("past_limit", past_limit_note))
    if resume_notes:  # a resumed attempt says so in each of its rows
        facts = facts.plus(Remark("resumed", resume_notes.get(str(row.phase), resume_notes["load"])))
    return row.replace(notes=notes_cell(facts)), facts


def failure_peaks_words(ev: WorkerRunFinished) -> str:
    """The allocator peaks a failed run reached before it failed, in words (M1, R7).

    Example: ``"allocator peaks before the failure: allocated 3.2 GiB, reserved 3.5 GiB"``;
    they stay out of the figures' columns (the run measured nothing).
    """
    return (f"allocator peaks before the failure: allocated {format_bytes(ev.failed_peak_allocated_bytes)}, "
            f"reserved {format_bytes(ev.failed_peak_reserved_bytes)}")


def _ok_remarks(ev: WorkerRunFinished) -> list[Remark]:
    """The remarks of a run that returned: an unmeasured pass, the GPU of the figures, the carry (M1)."""
    out: list[Remark] = []
    if ev.unmeasured_pass:
        out.append(Remark("unmeasured_pass", UNMEASURED_PASS_WORDS.format(why=ev.unmeasured_pass)))
    if ev.memory_note:  # several GPUs used: the largest peak, named
        out.append(Remark("memory", ev.memory_note))
    if ev.phase == "warm" and ev.peak_reserved_bytes is not None:
        # the caching allocator keeps blocks between interleaved variants (M1)
        out.append(Remark("reserved_carry", RESERVED_CARRY_NOTE))
    return out


__all__ = [
    "LoadSlot", "Validation", "base_row", "count_words", "died_loading_facts", "died_loading_row",
    "died_run_facts", "died_run_row", "every_row_facts", "failure_kind", "failure_peaks_words", "finished_run_facts",
    "finished_run_row", "load_failed_facts", "load_failed_row", "load_facts", "load_row", "run_row",
]
