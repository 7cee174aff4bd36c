"""The session checklist, from the need to the retrieval (S1; seed 003 §1-§8, seed 000 §1).

The items come from the bundled ``data/checklist.toml`` (stable ids such as
``g1.one-sentence``), plus the items a person adds to one session. The state of every
item -- done, when, note, evidence -- lives in the session's ``checklist.toml``::

    schema = 1
    [settings]
    retrieval_reserve_hours = 4          # read but unused: the session limit's reserve applies
    destination = "/home/me/back"        # folder for the way back (G§2)
    [items."g1.one-sentence"]
    done = true
    at = 2026-11-29T14:00:00Z
    note = "18 readable visuals in our publishing tool"
    evidence = "..."                      # last automatic evidence, never a tick
    [items."own.1"]                       # an item the person added
    custom = true
    stage = 2
    text = "Ask IT for the VPN"

Every change is written at once, atomically (S7). Automatic evidence is computed by
:mod:`gpusession.core.retrieval.evidence` and shown beside the item; a probe's reading
never ticks an item for the person (S1). What the product recorded itself does (S11): an
item whose evidence is such a fact (a verified pull, a kept plan the package covers, an
order event, …; :mod:`gpusession.core.retrieval.known_facts`) reads done, with the fact as
its evidence; a person's judgement (``g1.*``, ``p1.fixed-before``, ``g7.one-change``, …)
never does. A person can still mark such an item not done, with a note::

    [items."g8.verify-copy"]
    done = false
    not_done_although_recorded = true     # the person's word over the product's fact
    note = "the disk of the copy is failing"

Callers: the TUI's Checklist pane, ``gpusession checklist`` and the report.
"""

from __future__ import annotations

import math
import pkgutil
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import check_no_secret, mask_free_text, shown
from gpusession.core.files.textio import printable
from gpusession.core.files.tomlio import tomllib
from gpusession.core.folder.session import CHECKLIST_TOML, Session
from gpusession.core.folder.session_toml import read_checked

#: Default time kept free at the end of the package to retrieve what is useful (G§7).
DEFAULT_RETRIEVAL_RESERVE_HOURS = 4.0

CUSTOM_PREFIX = "own."


@dataclass(frozen=True)
class ChecklistItem:
    """One checklist item with its state in a session (S1).

    Attributes:
        id: stable id (``g1.one-sentence``; ``own.N`` for an item the person added).
        stage: 1-8, the stage of seed 003.
        stage_title: the stage's title, e.g. ``"Define the output"``.
        text: short imperative text; the fixed test name is the session name.
        done: ticked by the person (never by the tool).
        at: when it was ticked (aware UTC), ``None`` when not done.
        note: the person's note ("" when none).
        evidence: the last automatic evidence, ``None`` when none was collected.
        custom: True for an item the person added to this session.
        probe: name of the automatic probe for this item (``"device"``...), or ``None``.
        ticked_by: ``"gpusession"`` when done by a fact the product recorded (S11),
            ``"you"`` when ticked by the person, ``None`` while open.
        not_done_although_recorded: the person marked it not done although the product
            holds its fact (S11); their note says why.
    """

    id: str
    stage: int
    stage_title: str
    text: str
    done: bool
    at: datetime | None
    note: str
    evidence: str | None
    custom: bool
    probe: str | None = None
    ticked_by: str | None = None
    not_done_although_recorded: bool = False

    def state_words(self) -> str:
        """``done (recorded by gpusession)``, ``done``, ``open`` or ``open (marked not done by you)``."""
        if self.done:
            return "done (recorded by gpusession)" if self.ticked_by == PRODUCT else "done"
        return "open (marked not done by you)" if self.not_done_although_recorded else "open"


#: Who ticked an item the product's facts tick (S11).
PRODUCT = "gpusession"
#: The state key of a person's "not done" over the product's fact (S11).
OVERRIDE_KEY = "not_done_although_recorded"


@dataclass(frozen=True)
class _Template:
    id: str
    stage: int
    text: str
    probe: str | None


@lru_cache(maxsize=1)
def _bundled() -> tuple[dict[int, str], tuple[_Template, ...]]:
    """The bundled stages and items (``gpusession/data/checklist.toml``), parsed once per process.

    Read through the package's own loader (:func:`pkgutil.get_data`: a folder or a zip
    install alike): ``importlib.resources`` costs about 5 ms of imports (its readers,
    ``zipfile``) before the TUI's first frame, which shows these items (A5).
    """
    raw = pkgutil.get_data("gpusession", "data/checklist.toml")
    if raw is None:  # pragma: no cover - a loader that cannot read data: the package is broken
        raise FileNotFoundError("gpusession/data/checklist.toml")
    doc = tomllib.loads(raw.decode("utf-8"))
    stages = {int(s["number"]): str(s["title"]) for s in doc["stages"]}
    items = tuple(
        _Template(id=str(i["id"]), stage=int(i["stage"]), text=str(i["text"]), probe=i.get("evidence"))
        for i in doc["items"]
    )
    return stages, items


#: Stage number → title (seed 003 §1-§8).
STAGES: dict[int, str] = dict(_bundled()[0])


def bundled_ids() -> list[str]:
    """Ids of the bundled items, in file order."""
    return [t.id for t in _bundled()[1]]


# -- state file ----------------------------------------------------------------------
def _read_state(session: Session, *, evidence: bool = True) -> dict[str, Any]:
    doc = session.read_doc(CHECKLIST_TOML) if evidence else _read_without_evidence(session)
    items = doc.get("items")
    if items is None:
        doc["items"] = {}
    elif not isinstance(items, dict):
        raise BadInput("expected a table of items", path=session.checklist_toml, field="items")
    settings = doc.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise BadInput("expected a table", path=session.checklist_toml, field="settings")
    return doc


def _read_without_evidence(session: Session) -> dict[str, Any]:
    """``checklist.toml`` as :meth:`Session.read_doc` reads it, less each item's ``evidence``; read only.

    The evidence is dropped before the secret checks, so none of it is shown or checked.

    Why: the evidence the product wrote grows with the session (``p1.fixed-before`` names
    each experiment not fixed before its first run) and checking its free text for
    secrets loads the seed wordlists: the TUI's first screenful does without it (A5) and
    reads it with the facts a moment later.

    Raises:
        BadInput: as :meth:`Session.read_doc`.
    """
    path = session.checklist_toml
    if not path.exists():
        return {"schema": 1}
    doc = dict(read_checked(path))
    items = doc.get("items")
    if isinstance(items, dict):
        doc["items"] = {k: ({f: v for f, v in st.items() if f != "evidence"} if isinstance(st, dict) else st)
                        for k, st in items.items()}
    masked, _warnings = mask_free_text(doc, path)  # the full read (with facts) records the warnings
    return dict(masked)


def _write_state(session: Session, doc: dict[str, Any]) -> None:
    session.write_doc(CHECKLIST_TOML, doc)


def _as_utc(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)
    return None


def _item(tpl: _Template, state: dict[str, Any], session: Session, custom: bool,
          fact: Any = None) -> ChecklistItem:
    fld = f"items.{tpl.id}"
    done = state.get("done", False)
    if not isinstance(done, bool):  # "false" must never read as done
        raise BadInput(f"expected true or false, got {shown(done)}", path=session.checklist_toml,
                       field=f"{fld}.done")
    at = state.get("at")
    if at is not None and not isinstance(at, datetime):
        raise BadInput(f"expected a date-time such as 2026-11-29T14:00:00Z, got {shown(at)}",
                       path=session.checklist_toml, field=f"{fld}.at")
    if not isinstance(state.get("note", ""), str):
        raise BadInput(f"expected text, got {shown(state.get('note'))}", path=session.checklist_toml,
                       field=f"{fld}.note")
    override = state.get(OVERRIDE_KEY, False)
    if not isinstance(override, bool):
        raise BadInput(f"expected true or false, got {shown(override)}", path=session.checklist_toml,
                       field=f"{fld}.{OVERRIDE_KEY}")
    evidence = state.get("evidence")
    at = _as_utc(state.get("at")) if done else None
    ticked_by = "you" if done else None
    overridden = override and not done and fact is not None
    if fact is not None and not custom and not overridden:  # S11: what the product recorded ticks it
        done, ticked_by, evidence = True, PRODUCT, fact.evidence
        at = fact.at or at
    text = tpl.text.replace("{session}", session.name)
    return ChecklistItem(
        id=tpl.id,
        stage=tpl.stage,
        stage_title=STAGES.get(tpl.stage, f"Stage {tpl.stage}"),
        # H-17: a person's own text is shown escaped; a bundled one is shown as written (its
        # text is this package's, printable as it is, and a session name is [A-Za-z0-9._-])
        text=printable(text) if custom else text,
        done=done,
        at=at,
        note=printable(str(state.get("note", ""))),
        evidence=printable(str(evidence)) if evidence is not None else None,
        custom=custom,
        probe=tpl.probe,
        ticked_by=ticked_by,
        not_done_although_recorded=overridden,
    )


def _items_from(session: Session, doc: dict[str, Any], facts: dict[str, Any] | None = None) -> list[ChecklistItem]:
    states: dict[str, Any] = doc.get("items", {})
    if not isinstance(states, dict):
        raise BadInput('expected [items."<id>"] tables', path=session.checklist_toml, field="items")
    facts = facts or {}
    out: list[ChecklistItem] = []
    for tpl in _bundled()[1]:
        st = states.get(tpl.id, {})
        out.append(_item(tpl, st if isinstance(st, dict) else {}, session, False, facts.get(tpl.id)))
    for item_id, st in states.items():
        if not isinstance(st, dict) or not st.get("custom"):
            continue
        stage = st.get("stage")
        text = st.get("text")
        if not isinstance(stage, int) or stage not in STAGES or not isinstance(text, str):
            raise BadInput(
                "an own item needs stage = 1..8 and a text",
                path=session.checklist_toml,
                field=f"items.{item_id}",
            )
        out.append(_item(_Template(item_id, stage, text, None), st, session, True))
    # stable sort: bundled order within a stage, own items after them
    out.sort(key=lambda i: i.stage)
    return out


def load_checklist(session: Session, *, with_facts: bool = True, with_evidence: bool = True) -> list[ChecklistItem]:
    """The bundled items plus the session's own items, with their state, by stage (S1).

    An item whose fact the product recorded (S11, :func:`known_facts`) reads done, with
    that fact as its evidence and time, unless the person marked it not done.

    Args:
        session: an open session.
        with_facts: read the product's facts (S11); ``False`` only for the TUI's first
            screenful, drawn before the order, count and journal readers load (the pane
            reads them right after the first frame).
        with_evidence: read each item's stored evidence; ``False`` only for that first
            screenful too (the evidence grows with the session and its secret checks
            load the seed wordlists: :func:`_read_without_evidence`).

    Returns:
        Items ordered by stage; within a stage, bundled items in file order, then the
        person's own items in the order they were added.

    Raises:
        BadInput: the session's ``checklist.toml`` is malformed (file and field named).
    """
    doc = _read_state(session, evidence=with_evidence)
    if not with_facts:
        return _items_from(session, doc)
    from gpusession.core.retrieval.known_facts import (
        known_facts,  # its readers load after the first frame
    )

    return _items_from(session, doc, known_facts(session, doc))


def _find(items: list[ChecklistItem], item_id: str, session: Session) -> ChecklistItem:
    for it in items:
        if it.id == item_id:
            return it
    raise BadInput(
        f"no checklist item {shown(item_id)}; see `gpusession checklist {session.name}` for the ids",
        field="item",
    )


def _update(session: Session, item_id: str, changes: dict[str, Any]) -> ChecklistItem:
    with session.locked("updating checklist.toml"):  # threads and processes
        doc = _read_state(session)
        _find(_items_from(session, doc), item_id, session)
        current = doc["items"].get(item_id)
        st = dict(current) if isinstance(current, dict) else {}
        st.update(changes)
        st = {k: v for k, v in st.items() if v is not None}
        if "at" in changes and changes["at"] is None:
            st.pop("at", None)
        doc["items"][item_id] = st
        _write_state(session, doc)
        return _find(_items_from(session, doc), item_id, session)


def set_done(
    session: Session, item_id: str, done: bool, *, now: datetime | None = None, note: str | None = None
) -> ChecklistItem:
    """Tick (or untick) an item, recording when; saved at once, atomically (S1, S7).

    An item done by a fact the product recorded (S11) is marked not done only with a
    note saying why; the person's word then stands over the fact until they tick it again.

    Args:
        session: an open session.
        item_id: a bundled id (``g6.device-check``) or an own id (``own.1``).
        done: True to tick, False to untick (the time is then cleared).
        now: the tick time (aware); default: now, UTC.
        note: the person's note, saved with the change (required to untick an item the
            product's fact ticks).

    Returns:
        The item as read back (a fact still ticks an item the person unticked without
        a fact's override).

    Raises:
        BadInput: unknown item id; unticking an item the product's fact ticks without a
            note; a note refused as :func:`set_note` refuses it (nothing is written).
    """
    from gpusession.core.retrieval.known_facts import known_facts

    fact = known_facts(session, _read_state(session)).get(item_id)
    save_done(session, item_id, done, recorded_as=fact.evidence if fact is not None else None,
              now=now, note=note)
    return _find(load_checklist(session), item_id, session)


def save_done(session: Session, item_id: str, done: bool, *, recorded_as: str | None,
              now: datetime | None = None, note: str | None = None) -> ChecklistItem:
    """:func:`set_done`'s write and journal record, the product's facts not read (S1, S7, S11).

    Why: the facts (the results CSV's count, the journal's plan) grow with the session;
    the TUI's Checklist pane read them in a worker already and saves a key's change at
    once on its event loop with what that read said (A5).

    Args:
        session: an open session.
        item_id: a bundled id or an own id, as :func:`set_done`.
        done: True to tick, False to untick.
        now: the tick time (aware); default: now, UTC.
        note: the person's note, saved with the change (required to untick an item a
            fact ticks).
        recorded_as: the evidence of the product's fact that ticks ``item_id`` (S11), as
            :func:`known_facts` gives it; ``None`` when no fact ticks it.

    Returns:
        The item as written, read without the product's facts (its ``ticked_by`` is
        ``"you"`` or ``None``).

    Raises:
        BadInput: as :func:`set_done` (nothing is written then).
    """
    at = (now or utcnow()).astimezone(timezone.utc).replace(microsecond=0) if done else None
    changes: dict[str, Any] = {"done": bool(done), "at": at, OVERRIDE_KEY: None}
    if not done and recorded_as is not None:
        _find(_items_from(session, _read_state(session)), item_id, session)  # an unknown id is said first
        if not (note and note.strip()):
            raise BadInput(f"{item_id} is done by what gpusession recorded ({recorded_as}); to mark it not "
                           f"done, say why: gpusession checklist {session.name} undone {item_id} --note TEXT",
                           field="note")
        changes[OVERRIDE_KEY] = True
    if note is not None:
        changes["note"] = _checked_note(note)
    item = _update(session, item_id, changes)
    from gpusession.core.events.actions import ChecklistDoneRecord, ChecklistUndoneRecord

    session.journal(ChecklistDoneRecord(item=item_id) if done else ChecklistUndoneRecord(item=item_id))
    return item


def set_note(session: Session, item_id: str, note: str) -> ChecklistItem:
    """Set the person's note on an item ("" clears it); saved at once (S1, S7).

    Raises:
        BadInput: unknown item id, or a note that is not a string.
    """
    save_note(session, item_id, note)
    return _find(load_checklist(session), item_id, session)


def save_note(session: Session, item_id: str, note: str) -> ChecklistItem:
    """:func:`set_note`'s write, the product's facts not read (S1, S7; why: :func:`save_done`).

    Returns:
        The item as written, read without the product's facts.

    Raises:
        BadInput: as :func:`set_note`.
    """
    return _update(session, item_id, {"note": _checked_note(note)})


def _checked_note(note: Any) -> str:
    """A note as typed, refused when it is not text, holds a control character or a secret."""
    if not isinstance(note, str):
        raise BadInput("expected text for the note", field="note")
    if any((ord(c) < 32 and c not in "\n\t") or ord(c) == 127 for c in note):
        raise BadInput("the note contains a control character (escape, …); expected text",
                       field="note")
    check_no_secret(note, field="note")
    return note


def add_item(session: Session, stage: int, text: str) -> ChecklistItem:
    """Add the person's own item to a stage of this session (S1). Id: ``own.N``.

    Args:
        session: an open session.
        stage: 1-8.
        text: the item's text (one line, not empty).

    Returns:
        The new item.

    Raises:
        BadInput: stage outside 1-8, or an empty text.
    """
    if isinstance(stage, bool) or not isinstance(stage, int) or stage not in STAGES:
        raise BadInput(f"expected a stage 1-8, got {shown(stage)}", field="stage")
    text = " ".join(str(text).split())
    if not text:
        raise BadInput("expected a text for the new item", field="text")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise BadInput("the text contains a control character (escape, …); expected one line",
                       field="text")
    check_no_secret(text, field="text")
    with session.locked("updating checklist.toml"):  # threads and processes
        doc = _read_state(session)
        taken = [
            int(k[len(CUSTOM_PREFIX):])
            for k in doc["items"]
            if k.startswith(CUSTOM_PREFIX) and k[len(CUSTOM_PREFIX):].isdigit()
        ]
        item_id = f"{CUSTOM_PREFIX}{max(taken, default=0) + 1}"
        doc["items"][item_id] = {"custom": True, "stage": stage, "text": text, "done": False}
        _write_state(session, doc)
        item = _find(_items_from(session, doc), item_id, session)
    from gpusession.core.events.actions import ChecklistItemAddedRecord

    session.journal(ChecklistItemAddedRecord(item=item_id, stage=stage))
    return item


# -- settings ------------------------------------------------------------------------
#: The longest package is 30 days: a larger retrieval reserve is a typo.
RESERVE_HOURS_MAX = 30 * 24


def hours_ok(value: Any) -> bool:
    """A finite number of hours from 0 to ``RESERVE_HOURS_MAX`` (NaN and inf refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and 0 <= value <= RESERVE_HOURS_MAX


def get_settings(session: Session) -> dict[str, Any]:
    """The checklist's settings, read from ``checklist.toml`` (S1).

    Returns:
        ``retrieval_reserve_hours`` (float, hours) and ``destination`` (str or None).

    Raises:
        BadInput: a setting of the wrong type.
    """
    doc = _read_state(session)
    st = dict(doc.get("settings") or {})
    reserve = st.get("retrieval_reserve_hours", DEFAULT_RETRIEVAL_RESERVE_HOURS)
    if not hours_ok(reserve):
        raise BadInput(
            f"expected hours from 0 to {RESERVE_HOURS_MAX}, got {shown(reserve)}",
            path=session.checklist_toml,
            field="settings.retrieval_reserve_hours",
        )
    dest = st.get("destination")
    if dest is not None and not isinstance(dest, str):
        raise BadInput("expected a folder path", path=session.checklist_toml, field="settings.destination")
    return {"retrieval_reserve_hours": float(reserve), "destination": dest}


def set_setting(session: Session, key: str, value: Any) -> None:
    """Store one checklist setting (``retrieval_reserve_hours`` or ``destination``).

    Raises:
        BadInput: unknown key or a value of the wrong type (nothing is written).
    """
    if key == "retrieval_reserve_hours":
        if not hours_ok(value):
            raise BadInput(f"expected hours from 0 to {RESERVE_HOURS_MAX}, got {shown(value)}", field=key)
        value = float(value)
    elif key == "destination":
        value = str(value)
    else:
        raise BadInput(f"unknown setting {shown(key)}", field=key)
    with session.locked("updating checklist.toml"):  # threads and processes
        doc = _read_state(session)
        settings = dict(doc.get("settings") or {})
        settings[key] = value
        doc["settings"] = settings
        _write_state(session, doc)


# -- evidence ------------------------------------------------------------------------
def collect_evidence(
    session: Session,
    *,
    nvml: Any | None = None,
    destination: Path | None = None,
    now: datetime | None = None,
) -> dict[str, str]:
    """Run every automatic probe and store its text beside the items (S1, S5).

    Evidence is shown, never ticked: ``done`` is left as the person set it. An order
    deviation seen by the probe is recorded as an order event (S5).

    Args:
        session: an open session.
        nvml: an NVML module (``pynvml``) or a fake with the same functions; default:
            the real one, if it loads.
        destination: the folder for the way back (free-space probe); default: the one
            stored in the checklist settings, if any.
        now: the current time for the session-limit probe (aware); default: now.

    Returns:
        ``{item_id: evidence text}`` for every item that has a probe.
    """
    from gpusession.core.retrieval import evidence as ev

    settings = get_settings(session)
    if destination is None and settings["destination"]:
        destination = Path(settings["destination"])
    by_probe = ev.run_probes(
        session,
        nvml=nvml,
        destination=destination,
        now=now,
    )
    out: dict[str, str] = {}
    with session.locked("updating checklist.toml"):  # threads and processes
        doc = _read_state(session)
        for item in _items_from(session, doc):
            if item.probe and item.probe in by_probe:
                text = by_probe[item.probe]
                out[item.id] = text
                current = doc["items"].get(item.id)
                st = dict(current) if isinstance(current, dict) else {}
                st["evidence"] = text
                doc["items"][item.id] = st
        _write_state(session, doc)
    return out


__all__ = [
    "OVERRIDE_KEY",
    "PRODUCT",
    "STAGES",
    "ChecklistItem",
    "DEFAULT_RETRIEVAL_RESERVE_HOURS",
    "add_item",
    "bundled_ids",
    "collect_evidence",
    "get_settings",
    "hours_ok",
    "load_checklist",
    "save_done",
    "save_note",
    "set_done",
    "set_note",
    "set_setting",
]
