"""The next rental starts from the note of the previous one (S11; seed 003 §8).

``gpusession new NAME --from PREVIOUS`` makes a session that takes over what the previous
one decided before and after measuring, never what it measured:

* carried: the unit of the deliverables (``[deliverable]``, S8), every experiment's
  definition with its protocol (classes, thresholds, accept rules, expected outputs; V5,
  S9), the plan kept with the package (``[plan]``, K6), the ``g8.decision`` note, and
  the files those definitions name inside the previous folder (a corpus, an expected
  names list, the command's script), copied to the same relative path;
* never carried: results (``resultats-bruts.csv``, ``runs/``, ``validation/``, the
  observed environment, drawn orders), the order and its payment orders (``order.toml``),
  approvals, copies home, manifests, reports, the journal. The package is the new
  rental's own (``new``'s options).

Everything is read and checked before the new folder is made: a previous session whose
files do not read refuses the whole ``new`` in one line, and nothing is created. The new
``session.toml`` keeps ``[started_from]`` (``session``, ``carried``, and ``note``: the
decision note carried) and the journal a ``session_started_from`` record.

Who calls it: :func:`gpusession.commands.session_cmds.cmd_new`; ``show`` and the TUI's
Checklist pane (the first screen) say the note carried (:func:`carried_note`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gpusession.core.events.actions import SessionStartedFromRecord
from gpusession.core.experiment.plan import Experiment
from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import private_dir_mode
from gpusession.core.files.textio import one_line
from gpusession.core.folder.experiments import define_experiment, load_experiments
from gpusession.core.folder.session import Session
from gpusession.core.folder.unit import Unit, set_unit, unit_of
from gpusession.core.money.kept_plan import KeptPlan, keep_plan, session_plan
from gpusession.core.records.kinds import protocol_kind
from gpusession.core.retrieval.checklist import load_checklist, set_note

#: The ``session.toml`` table saying where the session started from.
TABLE = "started_from"
#: The checklist item whose note is carried (seed 003 §8: the decision the next rental starts from).
DECISION_ITEM = "g8.decision"
#: A file named by a definition is copied up to this size; a larger one is named, not copied.
COPY_MAX_BYTES = 64 * 1024 * 1024
#: Top-level folders and files of a session that are results or its own records: never carried.
NEVER_CARRIED = frozenset({
    "runs", "validation", "resultats-bruts.csv", "journal.jsonl", "session.toml", "checklist.toml",
    "order.toml", "approvals.toml", "retrieval.toml", "count-cache.json",
})
#: What a next session never takes over, said beside what it took.
NOT_CARRIED_WORDS = "results, runs, validation reports, order, payment, approvals, copies home"


@dataclass(frozen=True)
class Carry:
    """What a new session takes over from ``source`` (S11), read and checked before anything is made.

    Attributes:
        source: the previous session's name.
        unit: its unit when it declared one (S8), else ``None``.
        experiments: its experiments' definitions, in definition order (V5).
        plan: its kept plan (K6), else ``None``.
        decision: its ``g8.decision`` note, ``""`` when none.
        files: the relative paths (POSIX) of the files its definitions name inside its
            folder, to copy; ``too_large``: those over :data:`COPY_MAX_BYTES`.
    """

    source: str
    unit: Unit | None
    experiments: tuple[Experiment, ...]
    plan: KeptPlan | None
    decision: str
    files: tuple[str, ...]
    too_large: tuple[str, ...] = ()

    def words(self) -> list[str]:
        """One line per thing carried, then what is never carried (the one list ``new`` prints)."""
        out = []
        if self.unit is not None:
            expected = f", {self.unit.words(self.unit.expected_count)} expected" if self.unit.expected_count else ""
            out.append(f"unit: {self.unit.singular} (plural {self.unit.plural}){expected}")
        for e in self.experiments:
            out.append(f"experiment {e.id}: its definition and protocol ({_protocol_words(e)})")
        if self.plan is not None:
            out.append(f"plan: days per task {self.plan.text()} ({self.plan.total_days.normalize():f} d)")
        if self.decision:
            out.append(f"decision note ({DECISION_ITEM}): {one_line(self.decision)}")
        if self.files:
            out.append(f"files the definitions name: {', '.join(self.files)}")
        out += [f"not copied (larger than {COPY_MAX_BYTES // 2**20} MiB; copy it yourself): {p}"
                for p in self.too_large]
        if not out:
            out.append(f"nothing: session {self.source} declares no unit, experiment, plan nor decision note")
        out.append(f"never carried: {NOT_CARRIED_WORDS}")
        return out


def _protocol_words(e: Experiment) -> str:
    p = e.protocol or {}
    if not (kind := protocol_kind(p)).classification:  # an accept rule: named by its kind
        return kind.name
    if p.get("classes"):
        return f"classes {', '.join(map(str, p['classes']))}, threshold {p.get('threshold')}"
    return "no acceptance protocol"


def _strings(value: Any) -> Iterable[str]:
    """Every text inside a definition's value (lists and tables walked)."""
    if isinstance(value, str):
        yield value.partition("=")[2] if value.startswith("-") and "=" in value else value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _named_files(folder: Path, exps: Iterable[Experiment]) -> tuple[list[str], list[str]]:
    """The files the definitions name inside ``folder`` (relative, regular, no link), and those too large."""
    found: dict[str, None] = {}
    large: dict[str, None] = {}
    base = folder.resolve()
    for e in exps:
        for text in _strings([e.corpus, e.params, e.protocol]):
            if not text or "{" in text or os.path.isabs(text) or "\n" in text:
                continue
            rel = PurePosixPath(text)
            if ".." in rel.parts or not rel.parts or rel.parts[0] in NEVER_CARRIED:
                continue
            path = folder / rel
            try:
                if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(base):
                    continue
                size = path.stat().st_size
            except OSError:
                continue
            key = PurePosixPath(*rel.parts).as_posix()
            (large if size > COPY_MAX_BYTES else found)[key] = None
    return list(found), list(large)


def read_carry(previous: Session) -> Carry:
    """Read and check what a new session takes over from ``previous`` (S11).

    Raises:
        BadInput: a ``[deliverable]``, ``[experiments.*]``, ``[plan]`` or
            ``checklist.toml`` of ``previous`` that does not read (file and field named);
            nothing is made then.
    """
    unit = unit_of(previous.data)
    exps = tuple(load_experiments(previous))
    plan = session_plan(previous)
    decision = next((i.note for i in load_checklist(previous) if i.id == DECISION_ITEM), "")
    files, large = _named_files(previous.folder, exps)
    return Carry(previous.name, unit if unit.declared else None, exps, plan, decision.strip(),
                 tuple(files), tuple(large))


def apply_carry(session: Session, carry: Carry, previous_folder: Path) -> tuple[list[str], list[str]]:
    """Give the new ``session`` what ``carry`` holds, and record where it came from (S11).

    Args:
        session: the session just created (nothing counted, nothing defined).
        carry: from :func:`read_carry`.
        previous_folder: the previous session's folder (the files are copied from it).

    Returns:
        :meth:`Carry.words` (what was carried, one line each) and warnings (the new
        package does not cover the carried plan: kept, never shrunk).

    Raises:
        BadInput: a definition the new folder refuses (its files are copied first).
        OSError: a file could not be copied.
    """
    for rel in carry.files:  # first: a definition's files are checked where it is defined
        target = session.folder / rel
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        private_dir_mode(target.parent)
        shutil.copyfile(previous_folder / rel, target)
        os.chmod(target, 0o600 if not os.access(previous_folder / rel, os.X_OK) else 0o700)
    if carry.unit is not None:
        set_unit(session, carry.unit.singular, plural=carry.unit.plural, expected_count=carry.unit.expected_count)
    for e in carry.experiments:
        define_experiment(session, e)
    warnings = keep_plan(session, carry.plan) if carry.plan is not None else []  # said, never shrunk
    if carry.decision:
        set_note(session, DECISION_ITEM, carry.decision)
    words = carry.words()
    table: dict[str, Any] = {"session": carry.source, "carried": words}
    if carry.decision:
        table["note"] = carry.decision  # the note as carried, whatever the checklist's later says
    session.update(lambda data: data.__setitem__(TABLE, table))
    session.journal(SessionStartedFromRecord(source=carry.source, carried=words))
    return words, warnings


@dataclass(frozen=True)
class CarriedNote:
    """The decision note a session made with ``new --from`` took over (S11).

    Attributes:
        source: the previous session's name.
        note: its ``g8.decision`` note as carried.
    """

    source: str
    note: str

    def words(self) -> str:
        """``from charts: keep batch 4, drop the legend`` (one line: a note never forges another)."""
        return f"from {self.source}: {one_line(self.note)}"


def carried_note(session: Session, items: Iterable[Any] | None = None) -> CarriedNote | None:
    """The note carried into ``session`` by ``new --from``, said where a person looks first (S11).

    Why: the note was carried silently into the last checklist item; ``show`` and the
    TUI's first screen say it. ``[started_from].note`` holds it; a session made before
    that key existed falls back to its own ``g8.decision`` note (where it was carried).

    Args:
        session: the open session.
        items: its checklist items when already read (the Checklist pane), else read here.

    Returns:
        ``None`` for a session not made with ``--from``, or with no note carried.
    """
    started = session.data.get(TABLE)
    if not isinstance(started, Mapping) or not isinstance(started.get("session"), str):
        return None
    note = started.get("note")
    if not isinstance(note, str):
        try:
            listed = list(items) if items is not None else load_checklist(session)
        except (BadInput, OSError, ValueError):
            return None
        note = next((str(i.note) for i in listed if i.id == DECISION_ITEM and i.note), "")
    return CarriedNote(started["session"], note.strip()) if note.strip() else None


__all__ = ["COPY_MAX_BYTES", "Carry", "CarriedNote", "NOT_CARRIED_WORDS", "TABLE", "apply_carry",
           "carried_note", "read_carry"]
