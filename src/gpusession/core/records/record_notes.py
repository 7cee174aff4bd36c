"""The record items at the end of a row's notes: their keys, and the notes without them (C4).

The form (written by :mod:`gpusession.bench.row_record`, documented in
``docs/session-folder.md``): items ``key=value`` separated by ``"; "``, keys
:data:`RECORD_KEYS`, values never holding a ``;``. Outside tools read them; gpusession
decides nothing on them, and its readers for people (the report's grouped notes) leave
them out, as every row of an experiment repeats them.
"""

from __future__ import annotations

#: The keys of the record items in a row's notes, in the order they are written.
RECORD_KEYS = ("scope", "code", "tolerance", "reference", "params", "reported")


def is_record_item(part: str) -> bool:
    """``"scope=processing"`` → True: one ``key=value`` item of the record."""
    key, eq, _ = part.partition("=")
    return bool(eq) and key in RECORD_KEYS


def record_items(notes: str | None) -> dict[str, str]:
    """``{"scope": "processing", "code": "abc1234", …}`` from a row's notes (``{}``: none)."""
    parts = (notes or "").split("; ")
    return dict(p.split("=", 1) for p in parts if is_record_item(p))


def without_record(notes: str) -> str:
    """``notes`` less its record items (and their ``; `` separators)."""
    return "; ".join(p for p in notes.split("; ") if not is_record_item(p))


__all__ = ["RECORD_KEYS", "is_record_item", "record_items", "without_record"]
