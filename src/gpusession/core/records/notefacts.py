"""What a result row's ``notes`` cell says, as typed facts, and the one writer of that cell (R7, R10).

Why it exists: the ``notes`` cell is for people; what the report groups (incidents) and
sums (energy) must not depend on its words. Each row's facts -- its incidents, its
energy reading, its other remarks -- are recorded as typed fields of the journal's
record that ends the run (``run_finished``, ``load_finished``, ``run_recovered``), and
the cell is written from them by :func:`notes_cell`, so rewording a note changes what
people read and nothing else. Who calls it: :mod:`gpusession.bench.rows` and the runner
build the facts, :mod:`gpusession.core.folder.recovery` those of a lost run, the report
(:mod:`gpusession.core.retrieval.incidents`) and :mod:`gpusession.core.records.energy`
read them back from the journal.

The JSON shape written in the journal (:meth:`RowFacts.record_fields`):
``incidents`` a list of ``{"kind", "what"}``, ``energy_j`` joules or absent,
``energy_unread`` why there is no reading, ``energy_unsupported`` whether the GPU has no
counter, ``remarks`` a list of ``{"kind", "text"}`` in the order the cell says them.
A record without ``incidents`` predates typed facts (or was not the end of a row).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

#: What separates the facts inside one ``notes`` cell.
SEPARATOR = "; "

#: How each kind of incident is said in a row's notes (R7); ``{what}`` is the incident's words.
INCIDENT_WORDINGS: Mapping[str, str] = {
    "load_failed": "incident: load failed: {what}",
    "died_loading": "incident: {what} while loading",
    "run_failed": "incident: {what}; elapsed not measured",
    "died_run": "incident: {what} during this run",
    "workload_said": "incident: {what}",
    "run_lost": ("incident: run in flight when gpusession stopped (crash, kill or power loss); "
                 "started {what}; recovered on reopen; elapsed not measured"),
    "past_bound": "incident: {what}; left empty, the run counts as failed",
}
#: The words the report groups each kind of incident under: the failure itself, without
#: the row it is in (a run's failure and the journal's sentence about it are one incident).
INCIDENT_KEYS: Mapping[str, str] = {
    "load_failed": "load failed: {what}",
    "died_loading": "{what} while loading",
    "run_failed": "{what}",
    "died_run": "{what}",
    "workload_said": "{what}",
    "run_lost": ("run in flight when gpusession stopped (crash, kill or power loss); "
                 "started {what}; recovered on reopen"),
    "past_bound": "{what}",
}

#: A load row's own remark: ``{worker}`` names the worker process.
LOAD_WORDS = "load of worker {worker} (model to device, timed once per process)"
#: Inputs cut at the context limit (R9).
TRUNCATED_WORDS = "truncated {truncated} of {inputs} inputs at the context limit of {context} tokens"
#: A context limit passed to a workload that counts no truncation (A2: never stated as applied).
NOT_OBSERVED_WORDS = "context limit of {context} tokens passed to the workload; truncation not observed"
#: The concurrent load at a run's start (R10); ``{load}`` is the host and GPU load in words.
CONCURRENT_LOAD_WORDS = "concurrent load at start: {load}"
#: What a run that returned after an unmeasured pass says (M1).
UNMEASURED_PASS_WORDS = "preceded by one unmeasured pass {why}"
#: What a row says where the GPU has no energy counter (before Volta, some vGPUs); the
#: same words as :data:`gpusession.core.gpu.nvml.ENERGY_UNSUPPORTED` (a test ties them).
ENERGY_UNSUPPORTED = "energy not supported by this GPU"
#: What a GPU row says when its energy was not read and no reason came with it.
ENERGY_NOT_MEASURED = "energy not measured"
#: A command's CPU time and peak memory, as the kernel accounted them (``os.wait4``).
PROCESS_WORDS = "process: CPU {user} s user, {system} s system; peak resident {rss} (the command and the children it waited for)"


def process_words(user_s: float | None, system_s: float | None, max_rss_bytes: int | None) -> str:
    """``"process: CPU 1.234 s user, 0.056 s system; peak resident 12,345,678 bytes (…)"``.

    A figure not measured reads ``not measured`` (C3: never 0).
    """
    def secs(v: float | None) -> str:
        return "not measured" if v is None else f"{v:.3f}"

    rss = "not measured" if max_rss_bytes is None else f"{max_rss_bytes:,} bytes"
    return PROCESS_WORDS.format(user=secs(user_s), system=secs(system_s), rss=rss)


#: The largest reading kept (J): a 700 W GPU for 40 years is under 1e12 J; above is a hand edit.
ENERGY_MAX_J = 1e15


def energy_figure(joules: float) -> str:
    """Joules as the notes write them: one decimal from 10 J, millijoules (3 decimals) below."""
    return f"{joules:.1f}" if joules >= 10 else f"{joules:.3f}"


def energy_note(joules: float) -> str:
    """``"energy 123.4 J"``: the words a run's notes carry for its reading."""
    return f"energy {energy_figure(joules)} J"


@dataclass(frozen=True)
class Incident:
    """One incident of a row (R7, S7).

    Attributes:
        kind: one of :data:`INCIDENT_WORDINGS` (``"run_failed"``, ``"load_failed"``…).
        what: the incident's own words (``"out of memory: OutOfMemoryError: …"``; for
            ``run_lost`` the time the run started).
    """

    kind: str
    what: str

    def words(self) -> str:
        """The incident as the row's notes say it (:data:`INCIDENT_WORDINGS`)."""
        return INCIDENT_WORDINGS.get(self.kind, "incident: {what}").format(what=self.what)

    def key(self) -> str:
        """The words the report groups it under (:data:`INCIDENT_KEYS`)."""
        return INCIDENT_KEYS.get(self.kind, "{what}").format(what=self.what)

    def as_json(self) -> dict[str, str]:
        """``{"kind", "what"}`` as the journal keeps it."""
        return {"kind": self.kind, "what": self.what}


@dataclass(frozen=True)
class Energy:
    """A GPU run's energy (R10): a reading in joules, or why there is none.

    Attributes:
        joules: NVML's counter over the run, every GPU it held; ``None`` when unread.
        unread: why it was not read, in words (``None`` when read).
        unsupported: the GPU has no energy counter (NVML: Not Supported).
    """

    joules: float | None
    unread: str | None = None
    unsupported: bool = False

    def words(self) -> str:
        """``"energy 123.4 J"``, or why there is none."""
        if self.joules is None:
            return self.unread or ENERGY_NOT_MEASURED
        return energy_note(self.joules)

    @classmethod
    def of_worker(cls, joules: float | None, words: str | None, *, unsupported: bool = False) -> Energy | None:
        """The energy the worker reported (``energy_j``, ``energy_words``, ``energy_unsupported``); ``None`` on CPU.

        ``unsupported`` is the worker's typed flag (a GPU without an energy counter), never
        found in ``words`` (A1).
        """
        if joules is None and words is None:
            return None
        if joules is not None:
            return cls(float(joules))
        return cls(None, words, unsupported=unsupported)


@dataclass(frozen=True)
class Remark:
    """Any other fact a row's notes say: ``kind`` names it, ``text`` is its words.

    Kinds written: ``load``, ``memory``, ``setup``, ``truncated``, ``ranks``,
    ``throttled``, ``unmeasured_pass``, ``reserved_carry``, ``validation``,
    ``failure_peaks``, ``ended``, ``concurrent_load``, ``past_limit``, ``resumed``,
    ``report`` (what of a command's ``$GPUSESSION_REPORT`` was refused), ``process`` (a
    command's CPU seconds and peak memory, :func:`process_words`).
    """

    kind: str
    text: str

    def as_json(self) -> dict[str, str]:
        """``{"kind", "text"}`` as the journal keeps it."""
        return {"kind": self.kind, "text": self.text}


class FactFields(Protocol):
    """A journal record that carries a row's facts, read only.

    ``run_finished``, ``load_finished`` and ``run_recovered`` records: the fields of
    :meth:`RowFacts.record_fields` (a Protocol: this floor imports no record class).
    """

    @property
    def incidents(self) -> list[dict[str, str]] | None:
        """``[{"kind", "what"}]``; ``None`` in a record older than typed facts."""

    @property
    def energy_j(self) -> float | None:
        """The run's joules, ``None`` when unread or on CPU."""

    @property
    def energy_unread(self) -> str | None:
        """Why a GPU run has no reading, in words."""

    @property
    def energy_unsupported(self) -> bool | None:
        """Whether the GPU has no energy counter."""

    @property
    def remarks(self) -> list[dict[str, str]] | None:
        """``[{"kind", "text"}]``, the row's other facts in order."""


@dataclass(frozen=True)
class RowFacts:
    """Everything one row's ``notes`` cell says, typed (:func:`notes_cell` writes the cell).

    Attributes:
        incidents: its incidents, in order (most rows have none).
        energy: its energy reading on a GPU, ``None`` on CPU and for a load.
        remarks: its other facts, in the order the cell says them.
    """

    incidents: tuple[Incident, ...] = ()
    energy: Energy | None = None
    remarks: tuple[Remark, ...] = ()

    def plus(self, *remarks: Remark) -> RowFacts:
        """These facts with ``remarks`` added at the end."""
        return replace(self, remarks=self.remarks + remarks)

    def record_fields(self) -> dict[str, Any]:
        """The journal record's typed fields (the module's JSON shape; ``incidents`` always set)."""
        e = self.energy
        return {
            "incidents": [i.as_json() for i in self.incidents],
            "energy_j": e.joules if e is not None else None,
            "energy_unread": e.words() if e is not None and e.joules is None else None,
            "energy_unsupported": True if e is not None and e.unsupported else None,
            "remarks": [r.as_json() for r in self.remarks],
        }

    @classmethod
    def from_record(cls, record: FactFields) -> RowFacts | None:
        """The facts a journal record carries; ``None`` when it has none (it predates them).

        An energy figure that is not finite or above :data:`ENERGY_MAX_J` (a hand edit)
        is no reading.
        """
        if record.incidents is None:
            return None
        joules, unread = record.energy_j, record.energy_unread
        energy = None
        if joules is not None and math.isfinite(joules) and 0 <= joules <= ENERGY_MAX_J:
            energy = Energy(float(joules))
        elif joules is not None or unread is not None:
            energy = Energy(None, unread or ENERGY_NOT_MEASURED, unsupported=bool(record.energy_unsupported))
        return cls(
            incidents=tuple(Incident(str(i.get("kind")), str(i.get("what"))) for i in _dicts(record.incidents)),
            energy=energy,
            remarks=tuple(Remark(str(r.get("kind")), str(r.get("text"))) for r in _dicts(record.remarks or [])),
        )


def _dicts(items: Sequence[Any]) -> list[Mapping[str, Any]]:
    return [i for i in items if isinstance(i, Mapping)]


def notes_cell(facts: RowFacts) -> str | None:
    """The ``notes`` cell people read, from a row's facts: the one writer of that cell.

    Incidents first, then the energy reading, then the remarks, joined by
    :data:`SEPARATOR`; ``None`` (an empty cell) when there is nothing to say.
    """
    parts = [i.words() for i in facts.incidents]
    if facts.energy is not None:
        parts.append(facts.energy.words())
    parts += [r.text for r in facts.remarks if r.text]
    return SEPARATOR.join(parts) or None


def remarks_words(facts: RowFacts) -> str:
    """What a row's notes say besides its incidents (the energy and the remarks), one text."""
    return notes_cell(replace(facts, incidents=())) or ""


__all__ = [
    "CONCURRENT_LOAD_WORDS", "ENERGY_MAX_J", "ENERGY_NOT_MEASURED", "ENERGY_UNSUPPORTED", "INCIDENT_KEYS",
    "INCIDENT_WORDINGS", "LOAD_WORDS", "NOT_OBSERVED_WORDS", "PROCESS_WORDS", "SEPARATOR", "TRUNCATED_WORDS", "UNMEASURED_PASS_WORDS", "Energy", "FactFields",
    "Incident", "Remark", "RowFacts", "energy_figure", "energy_note", "notes_cell", "process_words", "remarks_words",
]
