"""What the journal says about a session's runs, for the summary table (R7, S7).

Why it exists: the summary (:mod:`gpusession.core.records.summary`, a lower floor that
cannot import the record classes) shows rows of an attempt that never measured
anything apart, and says when an experiment's newest run did not run all it scheduled;
both facts come from the journal's typed records, read here once. Who calls it:
:meth:`gpusession.core.folder.session.Session.journal_facts`, which
:func:`gpusession.core.records.summary.session_summary` asks for.

The facts are folded record by record (:class:`FactsFold`), so a fold saved at an offset
of the journal (:mod:`gpusession.core.folder.journal_digest`) is moved by the records
appended since instead of reading a month's journal again (A5); :func:`journal_facts`,
:func:`attempts` and :func:`unfinished` of a whole list of records are that same fold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from gpusession.core.events.actions import ExperimentDefinedRecord
from gpusession.core.events.base import Event
from gpusession.core.events.records import (
    AttemptFailedRecord,
    ExperimentEndedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    ExperimentStoppedRecord,
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
        stopped: ``{experiment id → the runner's words}`` of experiments whose newest
            run the runner stopped on purpose (``experiment_stopped``, D1, D3); one run
            again since is not in it.
    """

    failed_attempts: dict[str, int] = field(default_factory=dict)
    unfinished_words: dict[str, str] = field(default_factory=dict)
    unfinished_groups: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)


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


#: How an attempt the runner stopped on purpose is said in the summary (D1, D3).
_STOPPED_WORDS = {"session-limit": "stopped at the session limit",
                  "first-result": "stopped after the first result"}

#: The records whose run key an attempt wrote (a row's key names its attempt).
_RUN_RECORDS = (LoadStartedRecord, LoadFinishedRecord, RunStartedRecord, RunFinishedRecord)


@dataclass
class _Try:
    """One attempt as folded so far (:class:`FactsFold`).

    ``start``: the ordinal of its ``experiment_started`` among the records folded;
    ``runs``: the run keys it scheduled (``phase:variant:index``); ``resumes``: the
    attempt it resumed; ``keys``: the run keys of its own ``load_*``/``run_*`` records;
    ``finished``: ``(phase, variant, index)`` of its ``run_finished`` records; ``end``:
    its first end (its own ``experiment_ended``, or one naming no experiment) as
    ``(incomplete, cancelled, stopped)``, ``None`` while it has none.
    """

    start: int
    runs: list[str]
    resumes: int | None = None
    keys: set[str] = field(default_factory=set)
    finished: set[tuple[Any, Any, Any]] = field(default_factory=set)
    end: tuple[bool, bool, str | None] | None = None

    def ended_by(self, r: ExperimentEndedRecord) -> None:
        """Its first end, kept; a later one changes nothing."""
        if self.end is None:
            self.end = (isinstance(r, ExperimentIncompleteRecord), bool(r.cancelled),
                        r.stopped if isinstance(r.stopped, str) else None)

    def left(self, killed: bool) -> tuple[str, frozenset[tuple[str, str]]] | None:
        """How it left its scheduled runs (``killed``: recovery's unfinished incident came after it); ``None`` when it ran all."""
        if self.end is not None:  # ended: said when it stopped before its scheduled runs were done
            incomplete, cancelled, stopped = self.end
            if not incomplete:
                return None
            how = ("the run was cancelled" if cancelled else
                   _STOPPED_WORDS.get(stopped or "", "the run stopped before the end"))
        elif killed:
            how = "the run did not finish"  # recovery said so: its process was killed
        else:
            return None  # still running, or killed and not recovered yet
        scheduled = [k.split(":") for k in self.runs]
        missing = frozenset((k[1], k[0]) for k in scheduled if len(k) == 3 and (
            k[0], k[1], int(k[2]) if k[2].isdigit() else k[2]) not in self.finished)
        if self.end is not None and not missing:
            return None  # every scheduled run has its row
        return f"{len(self.finished)} of {len(scheduled)} runs done, {how}", missing

    def as_json(self) -> list[Any]:
        """``[start, runs, resumes, keys, finished, end]``, JSON-ready (the saved fold)."""
        return [self.start, self.runs, self.resumes, sorted(self.keys),
                [list(f) for f in self.finished], None if self.end is None else list(self.end)]

    @classmethod
    def from_json(cls, item: list[Any]) -> _Try:
        """The inverse of :meth:`as_json`. Raises: TypeError, ValueError: another shape."""
        start, runs, resumes, keys, finished, end = item
        if not (isinstance(start, int) and isinstance(runs, list) and all(isinstance(k, str) for k in runs)
                and (resumes is None or isinstance(resumes, int)) and isinstance(keys, list)
                and all(isinstance(k, str) for k in keys) and isinstance(finished, list)):
            raise TypeError("not an attempt's fold")
        ended = None
        if end is not None:
            incomplete, cancelled, stopped = end
            ended = (bool(incomplete), bool(cancelled), stopped if isinstance(stopped, str) else None)
        a, b, c = zip(*finished, strict=True) if finished else ((), (), ())
        return cls(start, list(runs), resumes, set(keys), set(zip(a, b, c, strict=True)), ended)


@dataclass
class FactsFold:
    """The journal's facts (:class:`JournalFacts`) folded record by record, oldest first (R7, S7, D5, A5).

    Why: the summary's facts of a month's journal (39,000 records) were worked out from
    every record at every ``show`` and ``report``; folded, they move by the records
    appended since a saved fold (:meth:`as_json`, :meth:`from_json`). Each record is
    seen once: an attempt collects its experiment's records until the next
    ``experiment_started`` of that experiment.

    Attributes:
        count: records folded (the ordinal of the next one).
        tries: ``{experiment id → its attempts}``, in the order first started.
        killed_at: ``{experiment id → ordinal of its newest unfinished-run incident}``
            (recovery's :data:`UNFINISHED_KIND`).
        failed: :func:`failed_attempts` so far.
        stopped: :attr:`JournalFacts.stopped` so far.
    """

    count: int = 0
    tries: dict[str, list[_Try]] = field(default_factory=dict)
    killed_at: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)

    def feed(self, records: Iterable[Event]) -> FactsFold:
        """Fold ``records`` (typed, in journal order, after those already folded); returns itself."""
        for r in records:
            self._one(r)
            self.count += 1
        return self

    def _one(self, r: Event) -> None:
        if isinstance(r, AttemptFailedRecord):
            for key in r.run_keys:
                self.failed[str(key)] = r.attempt if r.attempt is not None else 1
        if isinstance(r, ExperimentStartedRecord) and r.experiment_id:
            self.stopped.pop(r.experiment_id, None)
        elif isinstance(r, ExperimentStoppedRecord) and r.experiment_id and r.message:
            self.stopped[r.experiment_id] = r.message
        exp = getattr(r, "experiment_id", None)
        if exp is None:
            if isinstance(r, ExperimentEndedRecord):  # an end naming no experiment ends every one
                for each in self.tries.values():
                    each[-1].ended_by(r)
            return
        if isinstance(r, ExperimentStartedRecord):
            resumes = r.resumes if isinstance(r.resumes, int) and not isinstance(r.resumes, bool) else None
            self.tries.setdefault(exp, []).append(_Try(self.count, [str(k) for k in r.runs], resumes))
            return
        if isinstance(r, IncidentRecord) and r.kind == UNFINISHED_KIND:
            self.killed_at[exp] = self.count
        tries = self.tries.get(exp)
        if not tries:
            return
        now = tries[-1]
        if isinstance(r, _RUN_RECORDS) and r.run_key:
            now.keys.add(str(r.run_key))
        if isinstance(r, RunFinishedRecord):
            now.finished.add((r.phase, r.variant_id, r.run_index))
        if isinstance(r, ExperimentEndedRecord):
            now.ended_by(r)

    def _left(self, exp_id: str, a: _Try) -> tuple[str, frozenset[tuple[str, str]]] | None:
        return a.left(self.killed_at.get(exp_id, -1) > a.start)

    def unfinished(self) -> dict[str, tuple[str, frozenset[tuple[str, str]]]]:
        """:func:`unfinished` of the records folded."""
        out: dict[str, tuple[str, frozenset[tuple[str, str]]]] = {}
        for exp_id, tries in self.tries.items():
            left = self._left(exp_id, tries[-1])
            if left is not None:
                out[exp_id] = left
        return out

    def attempts(self) -> dict[str, list[Attempt]]:
        """:func:`attempts` of the records folded."""
        out: dict[str, list[Attempt]] = {}
        for exp_id, tries in self.tries.items():
            found = []
            for n, a in enumerate(tries, start=1):
                keys = {f"{exp_id}:{k}" for k in a.runs} | a.keys
                found.append(Attempt(n, frozenset(keys), *(self._left(exp_id, a) or (None, frozenset()))))
            out[exp_id] = _with_resumes(found, [a.resumes for a in tries])
        return out

    def facts(self) -> JournalFacts:
        """:class:`JournalFacts` of the records folded."""
        left = self.unfinished()
        return JournalFacts(dict(self.failed), {e: w for e, (w, _) in left.items()},
                            {e: g for e, (_, g) in left.items()}, self.attempts(), dict(self.stopped))

    def as_json(self) -> dict[str, Any]:
        """The fold, JSON-ready (kept in the saved digest of the journal)."""
        return {"count": self.count, "tries": {e: [a.as_json() for a in t] for e, t in self.tries.items()},
                "killed_at": self.killed_at, "failed": self.failed, "stopped": self.stopped}

    @classmethod
    def from_json(cls, doc: Any) -> FactsFold:
        """The inverse of :meth:`as_json`.

        Raises:
            TypeError, ValueError, KeyError, AttributeError: another shape (the caller folds anew).
        """
        count, tries = doc["count"], doc["tries"]
        killed, failed, stopped = doc["killed_at"], doc["failed"], doc["stopped"]
        if not (isinstance(count, int) and all(isinstance(v, int) for v in killed.values())
                and all(isinstance(v, int) for v in failed.values())
                and all(isinstance(v, str) for v in stopped.values())):
            raise TypeError("not a fold of the journal's facts")
        return cls(count, {str(e): [_Try.from_json(a) for a in t] for e, t in tries.items()},
                   dict(killed), dict(failed), dict(stopped))


def _instant(value: Any) -> datetime | None:
    """An ISO 8601 time as an aware datetime (UTC when it names no zone); ``None`` when it does not read."""
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


@dataclass
class ProtocolFold:
    """When each experiment's protocol was stored and first measured, as the journal says (V5), folded.

    Why: the checklist's evidence ``p1.fixed-before`` compares them for every experiment,
    and read every record of a month's journal to find them (A5); folded, they move by
    the records appended since a saved fold.

    Attributes:
        first_run: ``{experiment id → the earliest ``at`` of its ``run_started`` records}``.
        defined: ``{experiment id → the ``at`` of its first ``experiment_defined``}``.
        stored: ``{experiment id → the protocol its last ``experiment_defined`` before its
            first run stored}`` (as written).
    """

    first_run: dict[str, str] = field(default_factory=dict)
    defined: dict[str, str] = field(default_factory=dict)
    stored: dict[str, Any] = field(default_factory=dict)

    def feed(self, records: Iterable[Event]) -> ProtocolFold:
        """Fold ``records`` (typed, in journal order); returns itself."""
        for rec in records:
            if not isinstance(rec, RunStartedRecord | ExperimentDefinedRecord):
                continue
            exp, at = rec.experiment_id, _instant(rec.at)
            if exp is None or at is None:
                continue
            if isinstance(rec, RunStartedRecord):
                first = self.first_run.get(exp)
                if first is None or at < (_instant(first) or at):
                    self.first_run[exp] = str(rec.at)
            else:
                self.defined.setdefault(exp, str(rec.at))
                if exp not in self.first_run:
                    self.stored[exp] = rec.settings.get("protocol")
        return self

    def as_json(self) -> dict[str, Any]:
        """The fold, JSON-ready."""
        return {"first_run": self.first_run, "defined": self.defined, "stored": self.stored}

    @classmethod
    def from_json(cls, doc: Any) -> ProtocolFold:
        """The inverse of :meth:`as_json`. Raises: TypeError, KeyError, AttributeError: another shape."""
        first, defined, stored = doc["first_run"], doc["defined"], doc["stored"]
        if not (all(isinstance(v, str) for v in first.values()) and all(isinstance(v, str) for v in defined.values())
                and isinstance(stored, dict)):
            raise TypeError("not a fold of the protocols' times")
        return cls(dict(first), dict(defined), dict(stored))


def failed_attempts(records: Iterable[Event]) -> dict[str, int]:
    """Run keys of rows that belong to an attempt that never measured anything (R7).

    Args:
        records: typed journal records (:func:`gpusession.core.events.reading.read_records`).

    Returns:
        ``{run key → attempt number}`` from the ``attempt_failed`` records: the rows
        stay in the CSV (C1), the summary shows them apart (attempt 1 when unnumbered).
    """
    return FactsFold().feed(records).failed


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
    return FactsFold().feed(records).unfinished()


def attempts(records: Sequence[Event]) -> dict[str, list[Attempt]]:
    """Every attempt of every experiment, oldest first, with the run keys it wrote (D5, S7).

    A row belongs to the attempt whose scheduled runs, ``run_*`` or ``load_*`` records
    name its run key (run indexes continue over attempts, so a key names one attempt).

    Args:
        records: typed journal records, oldest first.

    Returns:
        ``{experiment id → [Attempt 1, Attempt 2, …]}``.
    """
    return FactsFold().feed(records).attempts()


def _with_resumes(found: list[Attempt], resumes: Sequence[int | None]) -> list[Attempt]:
    """An attempt a later one resumed (``run --resume``) says so after its own words (D5).

    Its words stay its own ("7 of 18 runs done, the run did not finish"); the resume is
    added, never put in their place: ``"…; resumed by attempt 2"``.
    """
    by: dict[int, list[int]] = {}
    for a, resumed in zip(found, resumes, strict=True):
        if resumed is not None:
            by.setdefault(resumed, []).append(a.number)
    return [replace(a, words=a.words + "; resumed by attempt " + ", ".join(map(str, by[a.number])))
            if a.words is not None and a.number in by else a for a in found]


def journal_facts(records: Sequence[Event]) -> JournalFacts:
    """:class:`JournalFacts` of ``records`` (typed, oldest first), read once (:class:`FactsFold`)."""
    return FactsFold().feed(records).facts()


__all__ = ["Attempt", "FactsFold", "JournalFacts", "ProtocolFold", "attempts", "failed_attempts", "journal_facts", "unfinished"]
