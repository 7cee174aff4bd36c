"""Each row's typed facts from the journal, and the session's incidents grouped (R7, S7).

Why it exists: the report says every incident once and the session's energy from what
was recorded, never from the words of the ``notes`` cell (rewording a note must change
nothing but what people read). Each row's facts (:class:`~gpusession.core.records.notefacts.RowFacts`)
are in the journal record that ended its run; :func:`row_facts` pairs them with the
results rows, :func:`session_incidents` groups the rows' incidents with the journal's
``incident`` records. Who calls it: :mod:`gpusession.core.retrieval.report`.

Rows written before the facts were typed (or whose record a crash cut) have none: their
incidents are shown as their notes say them, ungrouped, each on its own, with one line
saying so (:data:`PREDATES_LINE`); that display of old rows is the only place the notes'
words are read (:func:`legacy_incident_notes`, :func:`legacy_remarks`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gpusession.core.events import (
    Event,
    IncidentRecord,
    LoadFinishedRecord,
    RunFinishedRecord,
    RunRecoveredRecord,
)
from gpusession.core.events.reading import JournalRead
from gpusession.core.experiment.keys import RunKey
from gpusession.core.files.errors import BadInput
from gpusession.core.records.notefacts import RowFacts, remarks_words

#: Who a row is about: ``(experiment_id, variant_id, phase, run_index)``.
RunWho = tuple[Any, Any, Any, Any]

#: The line said once under the incidents when some rows have no typed facts.
PREDATES_LINE = ("{n} row(s) predate typed incidents (written by an older gpusession, or their "
                 "journal record was cut by a crash): their incidents are shown as their notes "
                 "say them, one per row, not grouped.")

#: A worker's or run's name inside a journal sentence, which does not make it another incident.
_WHO = r"(?: of worker \S+|^worker \S+: |^run \S+: |^incident: |; elapsed not measured$| during this run$)"


def _facts_key(rec: Event) -> tuple[str, str, str, int] | None:
    """``(experiment, phase, variant, index)`` of the row a record ends, ``None`` if unnamed."""
    exp = getattr(rec, "experiment_id", None)
    phase = getattr(rec, "phase", None)
    variant = getattr(rec, "variant_id", None)
    index = getattr(rec, "run_index", None)
    if exp is not None and phase is not None and variant is not None and isinstance(index, int):
        return str(exp), str(phase), str(variant), index
    try:
        key = RunKey.parse(str(getattr(rec, "run_key", None)))
    except BadInput:
        return None
    return key.experiment_id, key.phase, key.variant_id, key.run_index


def row_facts(frame: pl.DataFrame, records: Sequence[Event]) -> list[RowFacts | None]:
    """The typed facts of each row of ``frame``, in its order; ``None`` for a row without.

    A row's facts are those of the journal record that ended its run
    (``run_finished``, ``load_finished``, ``run_recovered``). A run measured again
    (``run --resume``) has several rows and records: they pair from the newest, so rows
    older than typed facts are the ones left without.
    """
    queues: dict[tuple[str, str, str, int], list[RowFacts]] = {}
    for rec in records:
        if isinstance(rec, (RunFinishedRecord, LoadFinishedRecord, RunRecoveredRecord)):
            facts = RowFacts.from_record(rec)
            key = _facts_key(rec) if facts is not None else None
            if facts is not None and key is not None:
                queues.setdefault(key, []).append(facts)
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


def journal_incident_key(text: str) -> str:
    """The words of a journal incident without who said it: the same failure said once."""
    key = text.strip()
    for _ in range(3):  # prefixes nest: "worker warm: run …: …"
        key = re.sub(_WHO, "", key).strip()
    return key


@dataclass
class IncidentGroup:
    """One incident: the rows it concerns and the times the journal recorded it."""

    runs: list[RunWho] = field(default_factory=list)
    times: list[str | None] = field(default_factory=list)


@dataclass
class SessionIncidents:
    """The session's incidents, each once (R7, S7).

    Attributes:
        groups: ``{words → group}``: each typed incident of a row grouped with the
            journal's ``incident`` records that say the same failure; a journal line
            that does not read is one too.
        legacy: ``(who, notes)`` of each row without typed facts whose notes hold an
            incident, as written (ungrouped).
    """

    groups: dict[str, IncidentGroup] = field(default_factory=dict)
    legacy: list[tuple[RunWho, str]] = field(default_factory=list)

    def __len__(self) -> int:
        """How many incidents: the groups and each old row's own."""
        return len(self.groups) + len(self.legacy)


def _who(r: dict[str, Any]) -> RunWho:
    return (r["experiment_id"], r["variant_id"], r["phase"], r["run_index"])


def session_incidents(frame: pl.DataFrame, facts: Sequence[RowFacts | None], read: JournalRead) -> SessionIncidents:
    """Every incident once: the rows' typed incidents and the journal's, grouped (R7, S7).

    Args:
        frame: the results rows.
        facts: :func:`row_facts` of ``frame``.
        read: the journal read once.
    """
    out = SessionIncidents()
    groups = out.groups
    for r, f in zip(frame.iter_rows(named=True), facts, strict=True):
        if f is None:
            said = legacy_incident_notes(r.get("notes"))
            if said is not None:
                out.legacy.append((_who(r), said))
            continue
        for incident in f.incidents:
            key = journal_incident_key(incident.key())
            groups.setdefault(key, IncidentGroup()).runs.append(_who(r))
    for rec in (x for x in read.records if isinstance(x, IncidentRecord)):
        key = journal_incident_key(str(rec.message))
        same = next((k for k in groups if k and (k in key or key in k)), key)
        groups.setdefault(same, IncidentGroup()).times.append(rec.at)
    for u in read.unreadable:  # said once: recovery's incident already names most of them
        groups.setdefault(u.note, IncidentGroup())
    return out


def legacy_incident_notes(notes: Any) -> str | None:
    """An old row's notes when they hold an incident (shown as written), else ``None``.

    Only for the display of rows without typed facts (:data:`PREDATES_LINE`).
    """
    text = str(notes or "")
    return text if "incident: " in text else None


#: Where an old row's incident ends inside its notes: the notes that follow it are others.
_INCIDENT_END = ("; elapsed not measured", "; concurrent load at start: ", "; preceded by ", "; truncated ")


def legacy_remarks(notes: Any) -> str:
    """An old row's notes without its incidents, for the report's notes said once.

    Only for the display of rows without typed facts: each ``incident: …`` part is cut
    up to the next note the old rows wrote after one (``; elapsed not measured`` dropped).
    """
    rest: list[str] = []
    head, sep, tail = str(notes or "").partition("incident: ")
    rest.append(head.rstrip("; "))
    while sep:
        ends = [i for i in (tail.find(e) for e in _INCIDENT_END) if i >= 0]
        cut = min(ends) if ends else len(tail)
        after = tail[cut:].removeprefix("; elapsed not measured")
        head, sep, tail = after.partition("incident: ")
        rest.append(head.strip("; "))
    return "; ".join(r for r in rest if r)


def row_remarks(row: dict[str, Any], facts: RowFacts | None) -> str:
    """What a row says besides its incidents, its load remark and its record (the report's notes).

    The record (``scope=…; code=…``) repeats on every row; the report says it once, in its
    environment section.

    From the typed facts; an old row's from its notes (:func:`legacy_remarks`).
    """
    if facts is None:
        return legacy_remarks(row.get("notes"))
    plain = RowFacts(energy=facts.energy, remarks=tuple(r for r in facts.remarks if r.kind not in ("load", "record")))
    return remarks_words(plain)


__all__ = [
    "PREDATES_LINE", "IncidentGroup", "RunWho", "SessionIncidents", "journal_incident_key",
    "legacy_incident_notes", "legacy_remarks", "row_facts", "row_remarks", "session_incidents",
]
