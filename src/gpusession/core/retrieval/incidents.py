"""Each row's typed facts from the journal, and the session's incidents grouped (R7, S7).

Why it exists: the report says every incident once and the session's energy from what
was recorded, never from the words of the ``notes`` cell (rewording a note must change
nothing but what people read). Each row's facts (:class:`~gpusession.core.records.notefacts.RowFacts`)
are in the journal record that ended its run; :func:`row_facts` pairs them with the
results rows, :func:`session_incidents` groups the rows' incidents with the journal's
``incident`` records by their typed fields (the run a record cut, its kind and words) into
:class:`SessionIncident` records, which the report renders. Who calls it:
:mod:`gpusession.core.retrieval.report`.

A journal ``incident`` record written before incidents were typed (no ``kind``, no
``what``) is read by its sentence in one adapter, :func:`~gpusession.core.records.old_words.incident_group_from_old_words`.

Rows written before the facts were typed (or whose record a crash cut) have none: their
incidents are shown as their notes say them, ungrouped, each on its own, with one line
saying so (:data:`PREDATES_LINE`); that display of old rows is the only place the notes'
words are read, by the old-folder adapter (:mod:`gpusession.core.records.old_words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gpusession.core.events import Event, IncidentRecord
from gpusession.core.events.reading import JournalRead
from gpusession.core.experiment.keys import RunKey
from gpusession.core.folder.journal_digest import RowKey, row_facts_entry
from gpusession.core.records.notefacts import RowFacts, remarks_words
from gpusession.core.records.old_words import (
    incident_group_from_old_words,
    legacy_incident_notes,
    legacy_remarks,
)

#: Who a row is about: ``(experiment_id, variant_id, phase, run_index)``.
RunWho = tuple[Any, Any, Any, Any]

#: The line said once under the incidents when some rows have no typed facts.
PREDATES_LINE = ("{n} row(s) predate typed incidents (written by an older gpusession, or their "
                 "journal record was cut by a crash): their incidents are shown as their notes "
                 "say them, one per row, not grouped.")

def row_facts(frame: pl.DataFrame, records: Sequence[Event]) -> list[RowFacts | None]:
    """The typed facts of each row of ``frame``, in its order; ``None`` for a row without.

    A row's facts are those of the journal record that ended its run
    (``run_finished``, ``load_finished``, ``run_recovered``). A run measured again
    (``run --resume``) has several rows and records: they pair from the newest, so rows
    older than typed facts are the ones left without.
    """
    queues: dict[RowKey, list[RowFacts]] = {}
    for rec in records:
        entry = row_facts_entry(rec)
        facts = RowFacts.from_record(rec) if entry is not None else None  # type: ignore[arg-type]
        if entry is not None and facts is not None:
            queues.setdefault(entry[0], []).append(facts)
    return pair_row_facts(frame, queues)


def pair_row_facts(frame: pl.DataFrame, queues: dict[RowKey, list[RowFacts]]) -> list[RowFacts | None]:
    """:func:`row_facts` of each row of ``frame`` from each row key's facts, oldest first (emptied as paired).

    ``queues`` as :meth:`gpusession.core.folder.journal_digest.JournalDigest.row_facts_queues`
    gives them from the journal's saved digest (A5).
    """
    out: list[RowFacts | None] = [None] * frame.height
    if not queues or not frame.height:
        return out
    cols = frame.select("experiment_id", "phase", "variant_id", "run_index").iter_rows()
    keys = list(cols)
    for i in range(frame.height - 1, -1, -1):
        exp, phase, variant, index = keys[i]
        if index is None:
            continue
        queue = queues.get((str(exp), str(phase), str(variant), int(index)))
        if queue:
            out[i] = queue.pop()
    return out


@dataclass(frozen=True)
class SessionIncident:
    """One incident of the session, said once (R7, S7): what the report renders.

    Built from typed fields only -- the rows' typed incidents (their journal record's
    ``incidents``) and the journal's ``incident`` records (``kind``, ``run_key``,
    ``what``) -- except where :attr:`from_old_words` says an old record was read by
    :func:`~gpusession.core.records.old_words.incident_group_from_old_words`.

    Attributes:
        words: what failed, without who said it (the row incident's group words, or the
            journal record's ``what``).
        kind: the kind of incident (a row incident's kind, ``"run_failed"``…, or the
            journal record's, ``"out_of_memory"``…); ``None`` for an old record without one.
        runs: who it concerns, ``(experiment, variant, phase, run index)`` per row.
        times: when the journal recorded it (ISO 8601; ``None`` where a record has no time).
        from_old_words: grouped by the words of a record written before incidents were
            typed (the old-journal adapter).
    """

    words: str
    kind: str | None = None
    runs: tuple[RunWho, ...] = ()
    times: tuple[str | None, ...] = ()
    from_old_words: bool = False


@dataclass
class _Group:
    """An incident being gathered (:class:`SessionIncident` once done)."""

    kind: str | None
    runs: list[RunWho] = field(default_factory=list)
    times: list[str | None] = field(default_factory=list)
    old: bool = False


@dataclass
class SessionIncidents:
    """The session's incidents, each once (R7, S7).

    Attributes:
        incidents: each typed incident of a row grouped with the journal's ``incident``
            records about the same run, in the order first seen; a journal line that
            does not read is one too.
        legacy: ``(who, notes)`` of each row without typed facts whose notes hold an
            incident, as written (ungrouped).
    """

    incidents: tuple[SessionIncident, ...] = ()
    legacy: list[tuple[RunWho, str]] = field(default_factory=list)

    def __len__(self) -> int:
        """How many incidents: the grouped ones and each old row's own."""
        return len(self.incidents) + len(self.legacy)


def _who(r: dict[str, Any]) -> RunWho:
    return (r["experiment_id"], r["variant_id"], r["phase"], r["run_index"])


def _run_key_text(who: RunWho) -> str | None:
    """The journal's run key of a row (``e:warm:batch-4:2``), ``None`` when the row names none."""
    exp, variant, phase, index = who
    if exp is None or variant is None or phase is None or index is None:
        return None
    return RunKey(str(exp), str(phase), str(variant), int(index)).format()


def session_incidents(frame: pl.DataFrame, facts: Sequence[RowFacts | None], read: JournalRead) -> SessionIncidents:
    """Every incident once: the rows' typed incidents and the journal's, grouped (R7, S7).

    A row's incidents group by their typed words (two runs that failed alike are one
    incident); a journal ``incident`` record joins the incident of the row of its
    ``run_key`` (the run it cut) with its ``what``, else that row's first incident, else
    the one with its ``what``. Records older than typed incidents go through
    :func:`~gpusession.core.records.old_words.incident_group_from_old_words`.

    Args:
        frame: the results rows.
        facts: :func:`row_facts` of ``frame``.
        read: the journal read once.
    """
    legacy: list[tuple[RunWho, str]] = []
    groups: dict[str, _Group] = {}
    by_run: dict[str, str] = {}  # a row's run key → the key of its (first) incident's group
    by_what: dict[tuple[str, str], str] = {}  # (run key, the incident's words) → its group's key
    for r, f in zip(frame.iter_rows(named=True), facts, strict=True):
        if f is None:
            said = legacy_incident_notes(r.get("notes"))
            if said is not None:
                legacy.append((_who(r), said))
            continue
        for incident in f.incidents:
            key = incident.key()
            groups.setdefault(key, _Group(incident.kind)).runs.append(_who(r))
            if (run := _run_key_text(_who(r))) is not None:
                by_run.setdefault(run, key)
                by_what.setdefault((run, incident.what), key)
    for rec in (x for x in read.records if isinstance(x, IncidentRecord)):
        if rec.kind is None and rec.what is None:
            key = incident_group_from_old_words(str(rec.message or ""), groups)
            groups.setdefault(key, _Group(None, old=True))
        else:
            run = rec.run_key or ""
            key = (by_what.get((run, rec.what or "")) or by_run.get(run)
                   or str(rec.what if rec.what is not None else rec.message or ""))
            groups.setdefault(key, _Group(rec.kind))
        groups[key].times.append(rec.at)
    for u in read.unreadable:  # said once: recovery's incident already names most of them
        groups.setdefault(u.note, _Group(None))
    incidents = tuple(SessionIncident(words, g.kind, tuple(g.runs), tuple(g.times), g.old)
                      for words, g in groups.items())
    return SessionIncidents(incidents, legacy)


def row_remarks(row: dict[str, Any], facts: RowFacts | None) -> str:
    """What a row says besides its incidents, its load remark and its record (the report's notes).

    The record (``scope=…; code=…``) repeats on every row; the report says it once, in its
    environment section.

    From the typed facts; an old row's from its notes (the old-folder adapter,
    :func:`~gpusession.core.records.old_words.legacy_remarks`: a worker's name cut, a lone
    load remark read as nothing, as the typed facts leave the load out).
    """
    if facts is None:
        return legacy_remarks(row.get("notes"))
    plain = RowFacts(energy=facts.energy, remarks=tuple(r for r in facts.remarks if r.kind not in ("load", "record")))
    return remarks_words(plain)


__all__ = [
    "PREDATES_LINE", "RunWho", "SessionIncident", "SessionIncidents", "row_facts", "row_remarks",
    "session_incidents",
]
