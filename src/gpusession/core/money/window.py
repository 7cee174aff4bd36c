"""The package window: start, end and time left, for the header and the report (S6).

Computed in UTC from the session's :class:`~gpusession.core.folder.package.Package` (start =
when the GPU was provisioned, editable with ``gpusession package NAME --start``), shown
in the user's local time zone. The TUI header calls :func:`package_window` on a timer;
it is pure and cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Protocol

from gpusession.core.files.clock import utcnow
from gpusession.core.files.frozen import frozen
from gpusession.core.folder.package import Package

if TYPE_CHECKING:  # the session class is only a type here
    from gpusession.core.folder.session import Session


class TimelineEntry(Protocol):
    """One entry of the order's timeline as read here (``core.money.order.OrderEvent``)."""

    @property
    def at(self) -> datetime:
        """When it happened (aware)."""

    @property
    def state(self) -> str:
        """The timeline state (``"gpu-provisioned"``)."""


class OrderTimeline(Protocol):
    """What :func:`session_window_origin` reads of an order (``core.money.order.OrderState``).

    A Protocol: ``order`` imports ``cost``, which imports this module.
    """

    @property
    def events(self) -> Sequence[TimelineEntry]:
        """The timeline, oldest first (S2)."""


def local_str(dt: datetime | None, tz: tzinfo | None = None) -> str:
    """An aware datetime in local time (or ``tz``) with its offset; ``not set`` for None."""
    if dt is None:
        return "not set"
    return dt.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z (UTC%z)").replace("  ", " ")


def short_timedelta(td: timedelta | None, *, minutes: bool = True) -> str:
    """A duration in words for the header: ``2d 03h 15m``, ``3h 05m`` or ``30m`` (S6).

    Leading zero units are dropped. The one rounding of every countdown:
    seconds are floored away from the instant, so ``29m 59s`` left is ``29m`` and
    ``status``, ``show`` and the TUI header say the same at one instant.

    Args:
        td: the duration; negative once the package has ended.
        minutes: ``False`` drops the minutes while whole days are left (``5d 00h``).

    Returns:
        The text; ``ended … ago`` when negative; ``not set`` for ``None``.
    """
    if td is None:
        return "not set"
    total_s = td.total_seconds()
    ended = total_s < 0
    secs = math.floor(abs(total_s))
    d, rem = divmod(secs, 86400)
    h, rem = divmod(rem, 3600)
    m = rem // 60
    if d:
        text = f"{d}d {h:02d}h {m:02d}m" if minutes else f"{d}d {h:02d}h"
    elif h:
        text = f"{h}h {m:02d}m"
    else:
        text = f"{m}m"
    return f"ended {text} ago" if ended else text


@frozen
class PackageWindow:
    """The package window at one instant (S6).

    Attributes:
        gpu_model, lots, days: the package (``None`` = not set).
        start_utc, end_utc: aware UTC datetimes, ``None`` when unknown.
        start_local, end_local: the same in the user's local time, as text.
        time_left: end − now (negative once ended), ``None`` when unknown.
        ended: True once ``now`` ≥ end.
        now_utc: the instant used.
        starts_in: start − now while the package has not started yet (a ``--start``
            in the future), else ``None``.
    """

    gpu_model: str | None
    lots: int | None
    days: int | None
    start_utc: datetime | None
    end_utc: datetime | None
    start_local: str
    end_local: str
    time_left: timedelta | None
    ended: bool
    now_utc: datetime
    starts_in: timedelta | None = None

    @property
    def known(self) -> bool:
        """Whether the end is known (start and length both set)."""
        return self.end_utc is not None

    @property
    def time_left_s(self) -> float | None:
        """Time left in seconds (negative once ended), ``None`` when unknown."""
        return None if self.time_left is None else self.time_left.total_seconds()

    @property
    def length(self) -> timedelta | None:
        """End − start (the package's length), ``None`` when unknown."""
        if self.start_utc is None or self.end_utc is None:
            return None
        return self.end_utc - self.start_utc

    def time_left_words(self, *, minutes: bool = True) -> str:
        """The time left in words, the same in ``status``, ``show`` and the TUI header (S6).

        ``3d 02h 10m left``; ``ended 2h 05m ago``; ``starts in 5d 00h; 3d 00h 00m once
        started`` for a package whose start is still ahead; ``window not set``.
        Rounding: :func:`short_timedelta` (floored, a countdown).

        Args:
            minutes: ``False`` drops the minutes while whole days are left (the header
                at 80 columns); an ended package keeps them.
        """
        if not self.known:
            return "window not set"
        if self.starts_in is not None:
            return (f"starts in {short_timedelta(self.starts_in, minutes=False)}; "
                    f"{short_timedelta(self.length, minutes=minutes)} once started")
        if self.ended:
            return short_timedelta(self.time_left or -timedelta(microseconds=1))
        return f"{short_timedelta(self.time_left, minutes=minutes)} left"

    def window_line(self) -> str:
        """One line for the header, e.g. ``RTX A5000 ×1 lot · 7-day package · ends … · 3d 02h 10m left``."""
        parts = []
        if self.gpu_model:
            lots = f" ×{self.lots} lot{'s' if (self.lots or 0) != 1 else ''}" if self.lots else ""
            parts.append(f"{self.gpu_model}{lots}")
        if self.days:
            parts.append(f"{self.days}-day package")
        if not self.known:
            missing = "start" if self.start_utc is None else "length"
            parts.append(f"package window not set (no {missing})")
            return " · ".join(parts)
        parts.append(f"ends {self.end_local}")
        if self.ended:
            parts.append(f"ENDED {short_timedelta(-(self.time_left or timedelta()))} ago")
        else:
            parts.append(self.time_left_words())
        return " · ".join(parts)

    def to_json(self) -> dict[str, object]:
        """The window as JSON-ready values (``--json`` output; datetimes as ISO 8601 text)."""
        return {
            "gpu_model": self.gpu_model,
            "lots": self.lots,
            "days": self.days,
            "start": self.start_utc.isoformat() if self.start_utc else None,
            "end": self.end_utc.isoformat() if self.end_utc else None,
            "start_local": self.start_local,
            "end_local": self.end_local,
            "time_left_s": self.time_left_s,
            "ended": self.ended,
        }


def package_window(
    package: Package, now: datetime | None = None, *, tz: tzinfo | None = None
) -> PackageWindow:
    """The window of ``package`` at ``now`` (default: :func:`utcnow`) (S6).

    Args:
        package: the session's package; start must be aware (it is, from ``Package``).
        now: the instant (aware); a fake clock in tests.
        tz: the zone for the local-time strings (default: the machine's local zone).
    """
    now = now or utcnow()
    end = package.end
    left = None if end is None else end - now
    ahead = None if package.start is None else package.start - now
    return PackageWindow(
        gpu_model=package.gpu_model,
        lots=package.lots,
        days=package.days,
        start_utc=package.start,
        end_utc=end,
        start_local=local_str(package.start, tz),
        end_local=local_str(end, tz),
        time_left=left,
        ended=left is not None and left <= timedelta(0),
        now_utc=now,
        starts_in=ahead if ahead is not None and ahead > timedelta(0) else None,
    )


#: Times before the end of the package at which an unverified copy home is warned about
#: (24 h, then 2 h).
WARN_BEFORE_END = (timedelta(hours=24), timedelta(hours=2))


@frozen
class PackageWarning:
    """A warning about the end of the package (S6, G§7, G§8).

    Attributes:
        level: ``"24h"``, ``"2h"`` or ``"ended"``.
        text: the warning in words, e.g. ``less than 2 h left, copy home not verified``.
        short: a shorter form for the tmux status line and the 80-column header.
        copy_words: True when ``text`` already says the copy home is not verified (a
            status line then does not say it twice).
    """

    level: str
    text: str
    short: str
    copy_words: bool = False


def package_warning(window: PackageWindow, retrieval_verified: bool) -> PackageWarning | None:
    """The warning to show at this instant, or ``None`` (S6).

    24 h and 2 h before the end, when the copy home is not verified; once the package
    has ended, "package ended" whatever the copy (the machine may be wiped).

    Args:
        window: the package window at the instant (:func:`package_window`, fake clock
            in tests).
        retrieval_verified: whether a verified copy home is recorded (``gpusession
            pull``, or the person ticked the checklist's copy item).

    Returns:
        The warning, or ``None`` (window not set, or nothing to warn about).
    """
    left = window.time_left
    if left is None:
        return None
    if window.ended:
        tail = "" if retrieval_verified else ", copy home not verified"
        return PackageWarning("ended", f"package ended{tail}", "package ended",
                              copy_words=not retrieval_verified)
    if retrieval_verified:
        return None
    for limit, level in zip(WARN_BEFORE_END[::-1], ("2h", "24h"), strict=True):
        if left <= limit:
            hours = int(limit.total_seconds() // 3600)
            return PackageWarning(
                level,
                f"less than {hours} h left, copy home not verified (gpusession pull)",
                f"<{hours}h left, copy not verified",
                copy_words=True,
            )
    return None


# -- which event the window is counted from (S6) ------------------------------
#: A start within this many seconds of an event is counted from that event.
ORIGIN_TOLERANCE_S = 60.0


@frozen
class WindowOrigin:
    """Which event the package window is counted from, and whether to offer a restart.

    Attributes:
        event: ``"gpu-provisioned"``, ``"session-created"``, ``"given"`` (a start typed
            with ``--start``) or ``"not set"``.
        provisioned_at: when the order's ``gpu-provisioned`` event happened (UTC), if any.
        offer: ``True`` when the GPU was provisioned at another time than the window's
            start: the window can be (re)started there.
    """

    event: str
    provisioned_at: datetime | None = None
    offer: bool = False

    def words(self) -> str:
        """The origin in words, e.g. ``window from gpu-provisioned``."""
        return {
            "gpu-provisioned": "window from gpu-provisioned",
            "session-created": "window from session creation",
            "given": "window from the start you set",
        }.get(self.event, "window not set")

    def offer_line(self, session_name: str, tz: tzinfo | None = None) -> str | None:
        """What to do about the window, or ``None`` when it already counts from provisioning.

        Before the GPU is provisioned, a session created early says that its window
        counts from its creation and can restart at ``gpu-provisioned``; once the event
        is recorded at another time, it gives the command that restarts it there.
        """
        if self.offer and self.provisioned_at is not None:
            return (f"the GPU was provisioned at {local_str(self.provisioned_at, tz)}: restart the "
                    f"package window there with `gpusession package {session_name} --start-from "
                    "gpu-provisioned` (key w in the Order pane)")
        if self.event == "session-created" and self.provisioned_at is None:
            return ("the package window counts from the session's creation; when the provider "
                    "provisions the GPU, record gpu-provisioned and restart the window there")
        return None


def window_origin(start: datetime | None, created_at: datetime | None,
                  provisioned_at: datetime | None) -> WindowOrigin:
    """Which event the window starting at ``start`` is counted from (S6).

    Args:
        start: the package start (aware), ``None`` when not set.
        created_at: when the session was created (aware), if known.
        provisioned_at: the order's last recorded ``gpu-provisioned`` event (aware), if any.

    Returns:
        The origin; ``offer`` is set when ``provisioned_at`` differs from ``start`` by
        more than :data:`ORIGIN_TOLERANCE_S`.
    """
    def near(a: datetime | None, b: datetime | None) -> bool:
        return a is not None and b is not None and abs((a - b).total_seconds()) <= ORIGIN_TOLERANCE_S

    if start is None:
        return WindowOrigin("not set", provisioned_at, provisioned_at is not None)
    if near(start, provisioned_at):
        return WindowOrigin("gpu-provisioned", provisioned_at)
    event = "session-created" if near(start, created_at) else "given"
    return WindowOrigin(event, provisioned_at, provisioned_at is not None)


def session_window_origin(session: Session, order_state: OrderTimeline | None) -> WindowOrigin:
    """:func:`window_origin` of a session and its order state (``core.money.order.OrderState``).

    Args:
        session: the open session (its package start and ``created_at``).
        order_state: the loaded order, or ``None`` when it is not read.
    """
    created = session.data.get("created_at") if isinstance(session.data, dict) else None
    provisioned = None
    if order_state is not None:
        # the last one recorded (a later record corrects an earlier one), not the latest time
        times = [e.at for e in order_state.events if e.state == "gpu-provisioned"]
        provisioned = times[-1] if times else None
    return window_origin(session.package.start, created if isinstance(created, datetime) else None,
                         provisioned)
