"""The old-folder adapter: the facts that session folders written by an older gpusession hold only as words.

Why it exists: a row's facts (incidents, energy, remarks), a journal ``incident`` and the
tie of an accepted output to its files are typed records today (the journal's
``run_finished``, ``incident`` with ``kind``/``what``, ``files_digest``); a folder written
before they were typed has them only in the words of its ``notes`` cells and journal
sentences. Those words are read here, and nowhere else (A1: no module decides anything
from another module's rendered words; ``tests/test_a1_no_word_decisions.py`` fails on a
new word match outside this module and the listed parsers). Each function is called only
for a row or record that has no typed fact; a typed one never comes here.

Who calls it: :mod:`gpusession.core.records.energy` (an old row's joules),
:mod:`gpusession.core.retrieval.incidents` (an old row's incidents and remarks, an old
journal incident's group), :mod:`gpusession.core.money.count` (an old accepted run's files
digest, H-72). Pure: strings in, values out; no file is read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from gpusession.core.records.notefacts import ENERGY_MAX_J, ENERGY_UNSUPPORTED

#: A run's joules as an old row's notes say them: ``energy 123.4 J`` between ``"; "`` separators.
ENERGY_NOTE = re.compile(r"(?:^|; )energy (\d+(?:\.\d+)?) J(?=;|$)")

#: The files digest as an accept rule's row says it (``3 files counted, list sha256: <hex>``,
#: :data:`gpusession.core.validation.accept_rule.TIE_WORDS`; a test ties the two).
TIE_NOTE = re.compile(r"files counted, list sha256: ([0-9a-f]{64})(?![0-9A-Za-z])")

#: A worker's or run's name inside an old journal sentence, which does not make it another incident.
_OLD_WHO = r"(?: of worker \S+|^worker \S+: |^run \S+: |^incident: |; elapsed not measured$| during this run$)"

#: An old row's load remark once its worker's name is cut (``load of worker cold-1 (…)``):
#: what its phase column already says.
_OLD_LOAD = "load (model to device, timed once per process)"

#: Where an old row's incident ends inside its notes: the notes that follow it are others.
_INCIDENT_END = ("; elapsed not measured", "; concurrent load at start: ", "; preceded by ", "; truncated ")


def energy_of_notes(notes: str | None) -> float | None:
    """The joules an old row's notes say, ``None`` when they say none (not measured, not supported).

    A figure too large for a float (a 400-digit note edited by hand reads as ``inf``) or
    above :data:`ENERGY_MAX_J` is no reading either: a report never shows ``inf J``, and
    sums and medians of the kept readings stay finite.
    """
    found = ENERGY_NOTE.search(notes or "")
    if found is None:
        return None
    joules = float(found.group(1))
    return joules if math.isfinite(joules) and joules <= ENERGY_MAX_J else None


def energy_unsupported_in_notes(notes: str | None) -> bool:
    """Whether an old row's notes say its GPU has no energy counter (:data:`ENERGY_UNSUPPORTED`)."""
    return ENERGY_UNSUPPORTED in (notes or "")


def files_digest_from_old_notes(notes: str | None) -> str | None:
    """The files digest an accept rule's row notes record, for a run journalled without it (H-72).

    A session written before the digest was a typed field of ``run_finished`` has it only
    in its row's words. ``None`` when not exactly one: two are as good as none (a
    workload's own words cannot stand in for the run's).
    """
    found = TIE_NOTE.findall(notes or "")
    return found[0] if len(found) == 1 else None


def incident_group_from_old_words(message: str, groups: Mapping[str, Any]) -> str:
    """The group of a journal ``incident`` written before incidents were typed (no ``kind``, no ``what``).

    Only its sentence says what failed and who said it. The names of who said it are cut
    (``worker warm: ``, ``run …: ``) and the rest is matched against the rows' incident
    words.

    Returns:
        The key in ``groups`` of the incident it says (an existing one, or its own words).
    """
    key = message.strip()
    for _ in range(3):  # prefixes nest: "worker warm: run …: …"
        key = re.sub(_OLD_WHO, "", key).strip()
    return next((k for k in groups if k and (k in key or key in k)), key)


def legacy_incident_notes(notes: Any) -> str | None:
    """An old row's notes when they hold an incident (shown as written), else ``None``."""
    text = str(notes or "")
    return text if "incident: " in text else None


def legacy_remarks(notes: Any) -> str:
    """An old row's notes without its incidents, a worker's name left out; ``""`` for a lone load remark.

    Each ``incident: …`` part is cut up to the next note the old rows wrote after one
    (``; elapsed not measured`` dropped); ``of worker NAME`` is cut, so two runs' identical
    notes read the same (the report says identical notes once), and notes that say only
    the load (what the phase column says) read as nothing.
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
    said = re.sub(r" of worker \S+", "", "; ".join(r for r in rest if r))
    return "" if said == _OLD_LOAD else said


__all__ = ["ENERGY_NOTE", "TIE_NOTE", "energy_of_notes", "energy_unsupported_in_notes", "files_digest_from_old_notes",
           "incident_group_from_old_words", "legacy_incident_notes", "legacy_remarks"]
