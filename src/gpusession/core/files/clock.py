"""The one clock of the core: now, in UTC, to the second.

A module of its own so that every core module (session, package, order, checklist) can
read the time without importing the session folder code.
"""

from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    """Now, as an aware UTC datetime truncated to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0)
