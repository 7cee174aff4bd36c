"""The unit of a session's deliverables, fixed once (S8; seed 000 §5, seed 003 §1).

The measurement protocol asks to fix the unit of the useful work before any comparison
and to keep it for every variant. A session stores it in ``session.toml``::

    [deliverable]
    unit = "visual"
    unit_plural = "visuals"
    expected_count = 18

A session without that table keeps the classification unit, "accepted corpus". Once
anything is counted (an accepted row, an approved deliverable), a change is refused
unless forced with a note, and the change is journaled (S8).

Who calls it: ``new`` / ``package`` (``--unit``), and every place that says a count:
``cost``, ``show``, ``status``, ``list``, the report, ``compare`` (through
:mod:`gpusession.core.money.count`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusession.core.events.deliverable_records import UnitSetRecord
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.folder.approvals import load_approvals

if TYPE_CHECKING:
    from gpusession.core.folder.session import Session

#: The ``session.toml`` table holding the unit.
TABLE = "deliverable"
#: A unit is a short noun: letters (any script), digits, spaces, ``-`` and ``'``.
UNIT_MAX_CHARS = 40
_UNIT_RE = re.compile(r"[^\W_](?:[\w '\-]*[^\W_])?")
#: Why a change is refused once results are counted (S8).
FIXED_WORDS = ("the unit is fixed once results are counted (seed: fix the unit before the comparison); "
               "start a new session, or `--force-unit` with a note, recorded in the journal")


@dataclass(frozen=True)
class Unit:
    """The unit of the useful work: singular and plural (S8).

    Attributes:
        singular: ``"visual"``; the default ``"accepted corpus"``.
        plural: ``"visuals"``; the default ``"accepted corpora"``.
        expected_count: how many deliverables are expected, ``None`` when not said.
        declared: ``False`` for a session that never set a unit (classification).
    """

    singular: str = "accepted corpus"
    plural: str = "accepted corpora"
    expected_count: int | None = None
    declared: bool = False

    def words(self, n: int) -> str:
        """``"18 visuals"``, ``"1 visual"``, ``"0 visuals"``."""
        return f"{n:,} {self.singular if n == 1 else self.plural}"

    def name(self, n: int) -> str:
        """The unit for ``n`` without the number: ``"visual"`` / ``"visuals"``."""
        return self.singular if n == 1 else self.plural

    def to_json(self) -> dict[str, Any]:
        """``unit``, ``unit_plural``, ``expected_count``, ``declared``."""
        return {"unit": self.singular, "unit_plural": self.plural,
                "expected_count": self.expected_count, "declared": self.declared}


DEFAULT_UNIT = Unit()


def check_unit(text: str, field: str = "unit") -> str:
    """A unit as typed: a short noun, NFC, no control or invisible characters (S8).

    Raises:
        BadInput: empty, longer than :data:`UNIT_MAX_CHARS`, or not letters, digits,
            spaces, ``-`` or ``'`` (naming the field).
    """
    t = unicodedata.normalize("NFC", text.strip())
    if not t or len(t) > UNIT_MAX_CHARS or not _UNIT_RE.fullmatch(t) or "  " in t:
        raise BadInput(f"expected a short noun (letters, digits, spaces, '-'), at most {UNIT_MAX_CHARS} "
                       f"characters, e.g. visual, got {shown(text)}", field=field)
    return t


def unit_of(data: Mapping[str, Any]) -> Unit:
    """The unit a ``session.toml`` document declares, else :data:`DEFAULT_UNIT` (S8).

    Raises:
        BadInput: a ``[deliverable]`` table whose values are not of their kind.
    """
    table = data.get(TABLE)
    if table is None:
        return DEFAULT_UNIT
    if not isinstance(table, Mapping):
        raise BadInput("expected a [deliverable] table", field=TABLE)
    unit = table.get("unit")
    if unit is None:
        return DEFAULT_UNIT
    if not isinstance(unit, str):
        raise BadInput(f"expected text, got {shown(unit)}", field=f"{TABLE}.unit")
    plural = table.get("unit_plural")
    if plural is not None and not isinstance(plural, str):
        raise BadInput(f"expected text, got {shown(plural)}", field=f"{TABLE}.unit_plural")
    count = table.get("expected_count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise BadInput(f"expected a whole number ≥ 1, got {shown(count)}", field=f"{TABLE}.expected_count")
    return Unit(unit, plural or f"{unit}s", count, True)


def counted(session: Session) -> bool:
    """Whether anything of the session is counted: an accepted row or an approved file (S8)."""
    frame = session.results.read()
    if frame.height and bool(frame["corpus_accepted"].fill_null(False).any()):
        return True
    try:
        return any(d.decision == "approved" for d in load_approvals(session).values())
    except BadInput:
        return True  # a decisions file that does not read: treated as counted, never overwritten


def planned_unit(before: Unit, unit: str | None, *, plural: str | None = None,
                 expected_count: int | None = None) -> Unit:
    """The unit the options make of ``before``, every check made; nothing is read or written.

    The one set of unit checks: :func:`set_unit` applies its result, and ``new`` calls it
    with the unit the new session will have (the default, or the one ``--from`` carries)
    before its folder is made, so a refused unit leaves no session behind.

    Args:
        before: the unit now (:data:`DEFAULT_UNIT` for a session not yet made).
        unit: the singular noun (``None`` keeps ``before``'s, when it declared one).
        plural: the plural when it is not the singular + ``s``.
        expected_count: deliverables expected (≥ 1), ``None`` keeps ``before``'s.

    Raises:
        BadInput: a bad noun or count, or a plural or count without a unit to apply to.
    """
    singular = check_unit(unit) if unit is not None else (before.singular if before.declared else None)
    if singular is None:
        raise BadInput("give --unit NOUN with --unit-plural or --expected-count", field="unit")
    plural_t = check_unit(plural, "unit-plural") if plural is not None else (
        before.plural if before.declared and singular == before.singular else f"{singular}s")
    if expected_count is not None and expected_count < 1:
        raise BadInput(f"expected a whole number ≥ 1, got {expected_count}", field="expected-count")
    count = expected_count if expected_count is not None else before.expected_count
    return Unit(singular, plural_t, count, True)


def set_unit(session: Session, unit: str | None, *, plural: str | None = None,
             expected_count: int | None = None, force_note: str | None = None) -> tuple[Unit, bool]:
    """Fix the session's unit (S8); journaled.

    Args:
        session: the open session.
        unit: the singular noun (``None`` keeps the stored one: only the count changes).
        plural: the plural when it is not the singular + ``s``.
        expected_count: deliverables expected (≥ 1), ``None`` keeps the stored one.
        force_note: ``--force-unit``'s note: a change after results are counted.

    Returns:
        The unit now and whether it changed.

    Raises:
        BadInput: a bad noun or count; a changed unit once results are counted without
            ``force_note`` (:data:`FIXED_WORDS`); nothing is written then.
    """
    before = unit_of(session.data)
    new = planned_unit(before, unit, plural=plural, expected_count=expected_count)
    changed_name = before.declared and (before.singular, before.plural) != (new.singular, new.plural)
    changed_from_default = not before.declared
    if new == before:
        return before, False
    if (changed_name or changed_from_default) and counted(session):
        if not (force_note and force_note.strip()):
            raise BadInput(FIXED_WORDS, field="unit")
    table = {"unit": new.singular, "unit_plural": new.plural, "expected_count": new.expected_count}
    session.update(lambda data: data.__setitem__(TABLE, {**dict(data.get(TABLE) or {}), **table}))
    forced = bool(force_note and force_note.strip()) and (changed_name or changed_from_default)
    session.journal(UnitSetRecord(unit=new.singular, unit_plural=new.plural, expected_count=new.expected_count,
                                  previous=before.singular, forced=forced,
                                  note=force_note.strip() if forced and force_note else None))
    return new, True


__all__ = ["DEFAULT_UNIT", "FIXED_WORDS", "TABLE", "Unit", "check_unit", "counted", "set_unit", "unit_of"]
