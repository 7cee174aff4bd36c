"""The one clock of the product: now, in UTC, to the second.

A module of its own so that every core module (session, package, order, checklist,
journal) reads the time without importing the session folder code. It has one seam:
``$GPUSESSION_NOW``, an ISO 8601 time with an offset (``2026-11-29T15:00:00+00:00``),
is then the fixed instant every reading of now gives, for tests and demos that must
not depend on today's date (A6). Durations are never read from this clock (they use
``time.perf_counter``), so a fixed now changes dates and windows only.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

#: The environment variable that fixes "now" (tests, demos): an ISO 8601 time with offset.
ENV_NOW = "GPUSESSION_NOW"


class ClockSettingError(ValueError):
    """``$GPUSESSION_NOW`` is set but is not an ISO 8601 time with an offset."""


def fixed_now(text: str | None = None) -> datetime | None:
    """The instant ``$GPUSESSION_NOW`` (or ``text``) fixes, in UTC to the second; ``None`` when unset.

    Raises:
        ClockSettingError: the value is not an ISO 8601 time with an offset (one line,
            naming the variable, what was expected and the value as typed, cut to 40 chars).
    """
    value = os.environ.get(ENV_NOW) if text is None else text
    if not value:
        return None
    try:
        at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        at = None
    if at is None or at.tzinfo is None or at.utcoffset() is None:
        raise ClockSettingError(
            f"environment variable {ENV_NOW}: expected an ISO 8601 time with an offset, "
            f"e.g. 2026-11-29T15:00:00+00:00; got {value[:40]!r} (unset it to use the real clock)")
    return at.astimezone(timezone.utc).replace(microsecond=0)


def utcnow() -> datetime:
    """Now, as an aware UTC datetime truncated to the second (``$GPUSESSION_NOW`` when set).

    Raises:
        ClockSettingError: ``$GPUSESSION_NOW`` is set to something that is not a time
            with an offset (the CLI refuses it before any command runs).
    """
    return fixed_now() or datetime.now(timezone.utc).replace(microsecond=0)
