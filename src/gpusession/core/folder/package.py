"""The rented package: GPU model, lots, days, start, and the checks of each value (K1, S6).

A package is what a session rents (seed 003 §4): stored as the ``[package]`` table of
``session.toml`` by :mod:`gpusession.core.folder.session`, priced by :mod:`gpusession.core.money.cost`,
shown as a window by :mod:`gpusession.core.money.window`. The checks here are shared by the
CLI, the TUI forms and the TOML reader, so every writer refuses the same values.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.frozen import frozen


def shown(value: Any, limit: int = 40) -> str:
    """:func:`gpusession.core.files.secrets.shown`, imported on the error path only (``status``)."""
    from gpusession.core.files.secrets import shown as shown_safely

    return shown_safely(value, limit)


PACKAGE_DAYS = (3, 7, 30)
#: Upper bound on lots: far above any rental, and keeps every total within a 64-bit integer.
LOTS_MAX = 10_000


def parse_start(value: str, *, field: str = "start", path: Path | None = None) -> datetime:
    """Parse an ISO 8601 time with an offset (``Z`` allowed) into an aware UTC datetime.

    Args:
        value: the text.
        field: the field named in the error.
        path: the file the text comes from, named in the error (``None`` for an argument).

    Raises:
        BadInput: not ISO 8601, or without a UTC offset (a package start must be
            unambiguous).
    """
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise BadInput(
            f"{shown(value)} is not ISO 8601; expected e.g. 2026-11-29T14:00:00+00:00",
            path=path,
            field=field,
        ) from None
    if dt.tzinfo is None:
        raise BadInput(
            f"{shown(value)} has no UTC offset; add one, e.g. {value}+00:00 or {value}Z",
            path=path,
            field=field,
        )
    return check_time_range(dt, field=field, path=path)


#: Times gpusession accepts: a rental happens in these years; far outside them is a typo,
#: and year 9999 + 30 days would not even be a date.
TIME_MIN = datetime(2000, 1, 1, tzinfo=timezone.utc)
TIME_MAX = datetime(2100, 1, 1, tzinfo=timezone.utc)


def check_time_range(dt: datetime, *, field: str, path: Path | None = None) -> datetime:
    """``dt`` in UTC when it lies in 2000-2099, else ``BadInput`` naming the field."""
    try:
        utc = dt.astimezone(timezone.utc)
    except OverflowError:
        utc = None
    if utc is None or not TIME_MIN <= utc < TIME_MAX:
        raise BadInput(
            f"{dt.isoformat()} is outside 2000-2099; expected a date such as 2026-11-29T14:00:00Z",
            path=path,
            field=field,
        )
    return utc


@frozen
class Package:
    """The rented package (seed 003 §4, S6). ``None`` = not set yet.

    Attributes:
        gpu_model: e.g. ``"RTX A5000"``.
        lots: number of lots bought (B200: one lot = two GPUs).
        days: package length, one of 3, 7, 30.
        start: when the GPU was provisioned (aware, UTC).
    """

    gpu_model: str | None = None
    lots: int | None = None
    days: int | None = None
    start: datetime | None = None

    @property
    def end(self) -> datetime | None:
        """Start + days, or ``None`` when either is unknown."""
        if self.start is None or self.days is None:
            return None
        return self.start + timedelta(days=self.days)

    def time_left(self, now: datetime | None = None) -> timedelta | None:
        """End − now (negative once the package has ended); ``None`` if unknown."""
        end = self.end
        if end is None:
            return None
        return end - (now or utcnow())

    def to_toml(self) -> dict[str, Any]:
        """The ``[package]`` table: ``gpu_model``, ``lots``, ``days``, ``start`` (K1, S6)."""
        return {"gpu_model": self.gpu_model, "lots": self.lots, "days": self.days, "start": self.start}

    @classmethod
    def from_toml(cls, data: Mapping[str, Any], path: Path | None = None) -> Package:
        """Build from the ``[package]`` table, checking types.

        Raises:
            BadInput: a field of the wrong type or out of range, naming file and field.
        """
        if not isinstance(data, Mapping):
            raise BadInput(
                f"expected a [package] table, got {shown(data)}", path=path, field="package"
            )
        gpu = data.get("gpu_model")
        lots = data.get("lots")
        days = data.get("days")
        start = data.get("start")
        if isinstance(gpu, str) and not gpu.strip():
            gpu = None  # an emptied field by hand = not set
        elif gpu is not None:
            gpu = check_gpu_model(gpu, path=path, field="package.gpu_model")
        if lots is not None:
            check_lots(lots, path=path)
        if days is not None:
            check_days(days, path=path)
        if start is not None:
            if isinstance(start, str):
                start = parse_start(start, field="package.start", path=path)
            elif not isinstance(start, datetime) or start.tzinfo is None:
                raise BadInput("expected a date-time with UTC offset", path=path, field="package.start")
            start = check_time_range(start, field="package.start", path=path)
        return cls(gpu_model=gpu, lots=lots, days=days, start=start)


def check_lots(lots: Any, *, path: Path | None = None) -> int:
    """Raise ``BadInput`` unless ``lots`` is an integer from 1 to ``LOTS_MAX`` (K1)."""
    if not isinstance(lots, int) or isinstance(lots, bool) or lots < 1:
        raise BadInput(f"expected a whole number of lots ≥ 1, got {shown(lots)}", path=path, field="lots")
    if lots > LOTS_MAX:
        raise BadInput(
            f"expected at most {LOTS_MAX:,} lots, got {lots:,}", path=path, field="lots"
        )
    return lots


def check_gpu_model(gpu: Any, *, path: Path | None = None, field: str = "gpu") -> str:
    """Check a GPU model name: it is printed in tables and the terminal title.

    Args:
        gpu: the value read or typed.
        path: the file it came from, for the error message.
        field: the field's name, for the error message.

    Returns:
        The name stripped.

    Raises:
        BadInput: not text, empty, more than one line, or with control characters.
    """
    if not isinstance(gpu, str):
        raise BadInput(f"expected a GPU model as text, got {shown(gpu)}", path=path, field=field)
    if not gpu.strip():
        raise BadInput('expected a GPU model, e.g. "RTX A5000", got an empty text', path=path, field=field)
    if any(ord(c) < 32 or ord(c) == 127 for c in gpu):
        raise BadInput(
            "the GPU model contains a control character (line break, tab, escape); expected one "
            'line such as "RTX A5000"',
            path=path,
            field=field,
        )
    return gpu.strip()


def check_days(days: Any, *, path: Path | None = None) -> int:
    """Raise ``BadInput`` unless ``days`` is 3, 7 or 30 (packages are whole, K1)."""
    if days not in PACKAGE_DAYS or isinstance(days, bool):
        raise BadInput(f"expected 3, 7 or 30 days, got {shown(days)}", path=path, field="days")
    return int(days)
