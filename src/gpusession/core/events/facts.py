"""What the journal says about a session's runs, for the summary table (R7, S7).

Why it exists: the summary (:mod:`gpusession.core.records.summary`, a lower floor that
cannot import the record classes) shows rows of an attempt that never measured
anything apart, and says when an experiment's newest run did not run all it scheduled;
both facts come from the journal's typed records, read here once. Who calls it:
:meth:`gpusession.core.folder.session.Session.journal_facts`, which
:func:`gpusession.core.records.summary.session_summary` asks for.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from gpusession.core.events.base import Event
from gpusession.core.events.records import (
    AttemptFailedRecord,
    ExperimentEndedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    IncidentRecord,
    LoadFinishedRecord,
    LoadStartedRecord,
    RunFinishedRecord,
    RunStartedRecord,
)
from gpusession.core.records.summary import UNFINISHED_KIND


@dataclass(frozen=True)
class JournalFacts:
    """The journal's facts the summary table needs (R7, D5).

    Attributes:
        failed_attempts: ``{run key → attempt number}`` of rows that belong to an
            attempt that never measured anything (:func:`failed_attempts`).
        unfinished_words: ``{experiment id → "2 of 10 runs done, the run did not finish"}``.
        unfinished_groups: per such experiment, the ``(variant, phase)`` groups its
            newest run scheduled and did not finish.
        attempts: every attempt of each experiment with the run keys it wrote and how
            it ended (:func:`attempts`): a row's completeness words are its attempt's.
    """

    failed_attempts: dict[str, int] = field(default_factory=dict)
    unfinished_words: dict[str, str] = field(default_factory=dict)
    unfinished_groups: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)


def failed_attempts(records: Iterable[Event]) -> dict[str, int]:
    """Run keys of rows that belong to an attempt that never measured anything (R7).

    Args:
        records: typed journal records (:func:`gpusession.core.events.reading.read_records`).

    Returns:
        ``{run key → attempt number}`` from the ``attempt_failed`` records: the rows
        stay in the CSV (C1), the summary shows them apart (attempt 1 when unnumbered).
    """
    out: dict[str, int] = {}
    for r in records:
        if isinstance(r, AttemptFailedRecord):
            for key in r.run_keys:
                out[str(key)] = r.attempt if r.attempt is not None else 1
    return out


def _attempts(records: Sequence[Event]) -> dict[str, list[int]]:
    """``{experiment id → indexes of its experiment_started records}``, oldest first."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        if isinstance(r, ExperimentStartedRecord) and r.experiment_id is not None:
            out.setdefault(r.experiment_id, []).append(i)
    return out


#: How an attempt the runner stopped on purpose is said in the summary (D1, D3).
_STOPPED_WORDS = {"session-limit": "stopped at the session limit",
                  "first-result": "stopped after the first result"}


@dataclass(frozen=True)
class _Index:
    """Where each experiment's records lie, so an attempt is read from its own records only.

    ``own``: ``{experiment id → indexes of the records naming it}``, in order;
    ``ends``: indexes of the ``experiment_ended`` records naming no experiment (they end
    every one). Why: a session of 500 experiments would otherwise scan the rest of the
    journal once per experiment (A5).
    """

    own: dict[str, list[int]]
    ends: list[int]

    @classmethod
    def of(cls, records: Sequence[Event]) -> _Index:
        """The index of ``records`` (typed, oldest first), in one pass."""
        own: dict[str, list[int]] = {}
        ends: list[int] = []
        for i, r in enumerate(records):
            exp = getattr(r, "experiment_id", None)
            if exp is not None:
                own.setdefault(exp, []).append(i)
            elif isinstance(r, ExperimentEndedRecord):
                ends.append(i)
        return cls(own, ends)

    def between(self, exp_id: str, start: int, stop: int) -> list[int]:
        """Indexes of ``exp_id``'s records strictly after ``start`` and before ``stop``."""
        own = self.own.get(exp_id, [])
        return own[bisect_right(own, start):bisect_left(own, stop)]


def _attempt_words(records: Sequence[Event], exp_id: str, start: int, stop: int,
                   index: _Index | None = None) -> tuple[str, frozenset[tuple[str, str]]] | None:
    """How one attempt (``records[start:stop]``) left its scheduled runs, ``None`` when it ran all."""
    index = _Index.of(records) if index is None else index
    head = records[start]
    assert isinstance(head, ExperimentStartedRecord)
    mine = index.between(exp_id, start, stop)
    after = [records[i] for i in mine]
    ends = [i for i in mine if isinstance(records[i], ExperimentEndedRecord)][:1]
    anonymous = bisect_right(index.ends, start)
    if anonymous < len(index.ends) and index.ends[anonymous] < stop:
        ends.append(index.ends[anonymous])  # an end naming no experiment ends this one too
    end = records[min(ends)] if ends else None
    if end is not None:  # ended: said when it stopped before its scheduled runs were done
        if not isinstance(end, ExperimentIncompleteRecord):
            return None
        how = ("the run was cancelled" if end.cancelled else
               _STOPPED_WORDS.get(end.stopped or "", "the run stopped before the end"))
    elif any(isinstance(r, IncidentRecord) and r.kind == UNFINISHED_KIND
             for r in (records[i] for i in index.between(exp_id, start, len(records)))):
        how = "the run did not finish"  # recovery said so: its process was killed
    else:
        return None  # still running, or killed and not recovered yet
    finished = {(r.phase, r.variant_id, r.run_index) for r in after if isinstance(r, RunFinishedRecord)}
    scheduled = [str(k).split(":") for k in head.runs]
    missing = frozenset((k[1], k[0]) for k in scheduled if len(k) == 3 and (
        k[0], k[1], int(k[2]) if k[2].isdigit() else k[2]) not in finished)
    if end is not None and not missing:
        return None  # every scheduled run has its row
    return f"{len(finished)} of {len(scheduled)} runs done, {how}", missing


def unfinished(records: Sequence[Event]) -> dict[str, tuple[str, frozenset[tuple[str, str]]]]:
    """Experiments whose newest run did not run all it scheduled: words and groups left (S7).

    The newest ``experiment_started`` of the experiment, then either no end record after
    it and the :data:`~gpusession.core.records.summary.UNFINISHED_KIND` incident crash
    recovery recorded after it ("the run did not finish"), or an
    ``experiment_incomplete`` end with scheduled runs left ("the run was cancelled" /
    "the run stopped before the end": a hang-up, a SIGTERM).

    Args:
        records: typed journal records, oldest first.

    Returns:
        ``{experiment id → ("2 of 10 runs done, the run did not finish", groups)}``
        where ``groups`` are the ``(variant, phase)`` pairs scheduled and not finished;
        a run still going (no end, no such incident yet) and a run that ran all it
        scheduled are not in it.
    """
    out: dict[str, tuple[str, frozenset[tuple[str, str]]]] = {}
    index = _Index.of(records)
    for exp_id, starts in _attempts(records).items():
        left = _attempt_words(records, exp_id, starts[-1], len(records), index)
        if left is not None:
            out[exp_id] = left
    return out


@dataclass(frozen=True)
class Attempt:
    """One invocation of an experiment, as the journal tells it (D5: a row's words are its own).

    Attributes:
        number: 1 for the experiment's first ``experiment_started``, 2 for the next…
        keys: the run keys it scheduled or ran (``exp:phase:variant:index``, loads included).
        words: ``"2 of 18 runs done, the run was cancelled"`` when it left scheduled runs
            (``"…; resumed by attempt 3"`` when a later ``run --resume`` continued its
            schedule), ``None`` when it ran all (or still runs).
        left: the ``(variant, phase)`` groups it scheduled and did not finish.
    """

    number: int
    keys: frozenset[str]
    words: str | None = None
    left: frozenset[tuple[str, str]] = frozenset()


def attempts(records: Sequence[Event]) -> dict[str, list[Attempt]]:
    """Every attempt of every experiment, oldest first, with the run keys it wrote (D5, S7).

    A row belongs to the attempt whose scheduled runs, ``run_*`` or ``load_*`` records
    name its run key (run indexes continue over attempts, so a key names one attempt).

    Args:
        records: typed journal records, oldest first.

    Returns:
        ``{experiment id → [Attempt 1, Attempt 2, …]}``.
    """
    out: dict[str, list[Attempt]] = {}
    index = _Index.of(records)
    for exp_id, starts in _attempts(records).items():
        found: list[Attempt] = []
        for n, start in enumerate(starts, start=1):
            stop = starts[n] if n < len(starts) else len(records)
            head = records[start]
            assert isinstance(head, ExperimentStartedRecord)
            keys = {f"{exp_id}:{k}" for k in head.runs}
            keys |= {str(r.run_key) for r in (records[i] for i in index.between(exp_id, start, stop))
                     if isinstance(r, LoadStartedRecord | LoadFinishedRecord | RunStartedRecord
                                   | RunFinishedRecord) and r.run_key}
            left = _attempt_words(records, exp_id, start, stop, index)
            found.append(Attempt(n, frozenset(keys), *(left or (None, frozenset()))))
        out[exp_id] = _with_resumes(found, [records[i] for i in starts])
    return out


def _with_resumes(found: list[Attempt], heads: Sequence[Event]) -> list[Attempt]:
    """An attempt a later one resumed (``run --resume``) says so after its own words (D5).

    Its words stay its own ("7 of 18 runs done, the run did not finish"); the resume is
    added, never put in their place: ``"…; resumed by attempt 2"``.
    """
    by: dict[int, list[int]] = {}
    for a, head in zip(found, heads, strict=True):
        resumes = getattr(head, "resumes", None)
        if isinstance(resumes, int):
            by.setdefault(resumes, []).append(a.number)
    return [replace(a, words=a.words + "; resumed by attempt " + ", ".join(map(str, by[a.number])))
            if a.words is not None and a.number in by else a for a in found]


def journal_facts(records: Sequence[Event]) -> JournalFacts:
    """:class:`JournalFacts` of ``records`` (typed, oldest first), read once."""
    left = unfinished(records)
    return JournalFacts(failed_attempts(records), {e: w for e, (w, _) in left.items()},
                        {e: g for e, (_, g) in left.items()}, attempts(records))


__all__ = ["Attempt", "JournalFacts", "attempts", "failed_attempts", "journal_facts", "unfinished"]
