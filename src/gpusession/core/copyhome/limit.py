"""The session limit: the package end less the time kept to bring the work home (D1, D2).

Why it exists: a renter must stop starting work early enough to retrieve what is useful
before the machine goes away (seed 003 §2, §7). The limit is, by default, the package end
minus a retrieval reserve; ``gpusession package NAME --limit …`` or ``--reserve …`` set it
(kept in the ``[limit]`` table of ``session.toml``). The reserve is *measured* (D2): from
``retrieval.toml``, which ``gpusession pull`` writes back into the server's session folder::

    [[pull]]
    at = "2026-12-01T10:00:00+00:00"
    bytes = 104857600
    seconds = 12.5
    throughput_bytes_per_s = 8388608.0
    probe = false
    path = "deliverables"

reserve = the deliverables' size (the newest manifest's, else the session folder's) ÷ the
slowest measured throughput × :data:`SAFETY_FACTOR`, never less than :data:`MIN_RESERVE_S`;
with no measured pull, :data:`DEFAULT_RESERVE_S` and words saying it is not measured yet.

Who calls it: ``gpusession status`` (cheap: the standard library only, no polars),
``show``, the TUI header, and the runner (:mod:`gpusession.bench.runner`), which never
starts a run that would end past the limit. Pure apart from reading those files.
"""

from __future__ import annotations

import csv
import math
import os
import re
import stat
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.core.files import clock
from gpusession.core.files.errors import BadInput
from gpusession.core.files.frozen import frozen, replace
from gpusession.core.files.names import SUMMARY_JSON
from gpusession.core.files.textio import printable, read_plain
from gpusession.core.folder.package import Package, parse_start

if TYPE_CHECKING:  # the session class is only a type here (start-up: status reads the limit)
    from gpusession.core.folder.session import Session

#: The file ``gpusession pull`` writes back into the session folder (one entry per pull).
RETRIEVAL_TOML = "retrieval.toml"
#: The reserve until a pull has been measured (seconds).
DEFAULT_RESERVE_S = 4 * 3600.0
#: The smallest reserve a measurement may give (seconds).
MIN_RESERVE_S = 2 * 3600.0
#: A stated or measured speed is not a guaranteed duration: the measured time is doubled.
SAFETY_FACTOR = 2.0
#: What the default reserve says.
#: The longest duration a reserve, a transfer or a run can mean: under a year (H-41).
#: A figure past it (a throughput of 5e-324 byte/s, a manifest of 2^63 bytes) is capped
#: or refused here, never handed to ``timedelta`` (an ``OverflowError`` past year 9999).
MAX_DURATION_S = 365 * 86400.0
#: The largest size in bytes a file of the session may hold (H-41): below 2^63.
MAX_BYTES = 2**63
#: The slowest throughput a pull can mean: 1 byte per second (H-41).
MIN_THROUGHPUT_BYTES_PER_S = 1.0
NOT_MEASURED_WORDS = "not measured yet: run `gpusession pull --probe` from home"
#: The ``[limit]`` table of ``session.toml``.
LIMIT_TABLE = "limit"


@frozen
class Measured:
    """The pulls read from ``retrieval.toml`` (D2).

    Attributes:
        slowest_bytes_per_s: the slowest throughput of a pull that moved bytes, ``None``
            when none did.
        pulls: how many usable entries were read.
        probe_only: every usable entry came from a small copy (``pull --probe``).
        note: one line when the file could not be read (the default applies then).
    """

    slowest_bytes_per_s: float | None
    pulls: int = 0
    probe_only: bool = False
    note: str | None = None


def read_measured(folder: Path) -> Measured:
    """The measured pulls of the session in ``folder``; never raises (D2).

    Args:
        folder: the session folder.

    Returns:
        The slowest throughput (bytes per second) of the entries that moved bytes in a
        positive time; an absent file gives no measurement, a malformed one no
        measurement and a one-line ``note``.
    """
    from gpusession.core.files.nesting import loads_toml, read_toml_text

    path = Path(folder) / RETRIEVAL_TOML
    if not os.path.lexists(path):
        return Measured(None)
    bad = f"{RETRIEVAL_TOML} could not be read"
    try:
        doc = loads_toml(read_toml_text(path), path)  # size-, depth- and field-bounded (H-39, H-48)
    except BadInput as exc:  # its one line names the file and the bound passed (H-48), never the text
        return Measured(None, note=f"{exc}; the 4 h default applies")
    except (OSError, ValueError) as exc:  # TOMLDecodeError, UnicodeDecodeError
        return Measured(None, note=f"{bad} ({type(exc).__name__}); the 4 h default applies")
    pulls = doc.get("pull")
    if not isinstance(pulls, list):
        return Measured(None, note=f"{bad} (no [[pull]] entries); the 4 h default applies")
    rates: list[tuple[float, bool, bool]] = []
    refused: str | None = None
    for index, entry in enumerate(pulls, 1):
        rate = _rate(entry)
        if rate is None and refused is None and isinstance(entry, Mapping):
            refused = _rate_refusal(entry.get("throughput_bytes_per_s"), index)
        if rate is not None:
            moved = entry.get("bytes")
            small = isinstance(moved, (int, float)) and not isinstance(moved, bool) and moved < SMALL_TRANSFER_BYTES
            rates.append((rate, entry.get("probe") is True, small))
    if not rates:
        if refused is not None:  # a number past its meaning (H-41): said, the default applies
            return Measured(None, note=f"{refused}; the 4 h default applies")
        return Measured(None, note=None if not pulls else
                        f"{bad} (no entry with a throughput); the 4 h default applies")
    # a transfer of a few KiB (a journal that changed) measures set-up and rsync's whole
    # seconds, not the link: it counts only while nothing larger was measured
    rates = [r for r in rates if not r[2]] or rates
    return Measured(min(r for r, _, _ in rates), len(rates), all(p for _, p, _ in rates),
                    note=None if refused is None else f"{refused}; that entry is left out")


#: Below this, a pull's throughput is set-up time more than link speed (bytes).
SMALL_TRANSFER_BYTES = 1024 * 1024


def _rate(entry: Any) -> float | None:
    """An entry's throughput in bytes per second, ``None`` when it does not hold one."""
    if not isinstance(entry, Mapping):
        return None
    rate = entry.get("throughput_bytes_per_s")
    moved = entry.get("bytes")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        return None
    if isinstance(moved, (int, float)) and not isinstance(moved, bool) and moved <= 0:
        return None  # a pull that moved nothing measured no speed
    if not math.isfinite(rate) or rate < MIN_THROUGHPUT_BYTES_PER_S:  # 1e-300: no duration it means (H-41)
        return None
    return float(rate)


def _rate_refusal(rate: Any, index: int) -> str | None:
    """``retrieval.toml: pull 2: throughput_bytes_per_s: expected …`` for a value that is no throughput (H-41).

    ``None`` for a usable rate, for an absent one and for 0 (a pull that measured
    nothing); a negative, NaN, infinite or tiny number, a boolean or a string is named.
    """
    where = f"{RETRIEVAL_TOML}: pull {index}: throughput_bytes_per_s"
    if rate is None or (isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate == 0):
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        from gpusession.core.files.secrets import shown  # status: loaded on the error only

        return f"{where}: expected a number of bytes per second, got {shown(rate)}"
    if math.isfinite(rate) and rate >= MIN_THROUGHPUT_BYTES_PER_S:
        return None
    return f"{where}: expected a finite throughput of at least 1 byte/s, got {rate!r}"


def deliverables_bytes(folder: Path) -> tuple[int, str]:
    """The size to bring home: the newest manifest's total, else the session folder's.

    Read with the standard library (``status`` stays cheap); links are never followed.
    The session folder's size is the one ``summary.json`` holds
    (:func:`recorded_folder_bytes`, kept by the writers of the results CSV, at most
    :data:`FOLDER_BYTES_MAX_AGE_S` old while a run adds rows) and walked only without
    one, so ``status`` every few seconds never walks a large folder.

    Args:
        folder: the session folder.

    Returns:
        ``(bytes, where)``: ``where`` is ``"manifest.csv"`` or ``"the session folder"``.
    """
    folder = Path(folder)
    manifests = []
    for p in folder.glob("manifest*.csv"):
        try:
            st = p.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            manifests.append((st.st_mtime, p))
    for _, man in sorted(manifests, reverse=True):
        total = _manifest_total(man)
        if total is not None:
            return total, man.name
    recorded = recorded_folder_bytes(folder)
    return (recorded[0] if recorded is not None else folder_bytes(folder)), "the session folder"


def _manifest_total(path: Path) -> int | None:
    """The sum of a manifest's ``size_bytes``, ``None`` when it does not read."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            sizes = [int(r["size_bytes"]) for r in csv.DictReader(fh)]
    except (OSError, UnicodeDecodeError, csv.Error, KeyError, TypeError, ValueError):
        return None
    total = sum(sizes)
    if any(not 0 <= n < MAX_BYTES for n in sizes) or total >= MAX_BYTES:
        return None  # a size no file holds (H-41): the manifest reads as unread
    return total


def folder_bytes(folder: Path) -> int:
    """Bytes of the regular files under ``folder`` (links not followed): one walk."""
    total = 0
    for root, _dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


#: How old the session folder's recorded size may be before a writer walks it again (s).
FOLDER_BYTES_MAX_AGE_S = 60.0
#: The keys of ``summary.json`` holding the session folder's size and when it was walked.
FOLDER_BYTES_KEY, FOLDER_BYTES_AT_KEY = "folder_bytes", "folder_bytes_at_unix_s"


def recorded_folder_bytes(folder: Path) -> tuple[int, float] | None:
    """``(bytes, walked at, Unix seconds)`` from ``summary.json``; ``None`` when absent or unusable.

    Read as every cache is: never from a FIFO or a device, nor through a link; a
    malformed file (nested past the parser's depth too) reads as absent.
    """
    from gpusession.core.files.nesting import loads_json

    try:
        doc = loads_json(read_plain(Path(folder) / SUMMARY_JSON, max_bytes=16 * 1024 * 1024,
                                    follow_links=False), Path(folder) / SUMMARY_JSON)
        size, at = doc[FOLDER_BYTES_KEY], doc[FOLDER_BYTES_AT_KEY]
    except (OSError, ValueError, KeyError, TypeError, BadInput, RecursionError):
        return None
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size < MAX_BYTES:
        return None  # a cache: a size past 2^63 bytes reads as absent (H-41)
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        return None
    return size, float(at)


def folder_bytes_to_record(folder: Path, now_unix_s: float) -> tuple[int, float]:
    """The session folder's size for ``summary.json``: the recorded one while fresh, else walked.

    Called by the writers of ``summary.json`` after each row, so the walk happens at most
    once per :data:`FOLDER_BYTES_MAX_AGE_S` however fast rows come.

    Returns:
        ``(bytes, walked at, Unix seconds)``.
    """
    recorded = recorded_folder_bytes(folder)
    if recorded is not None and 0 <= now_unix_s - recorded[1] < FOLDER_BYTES_MAX_AGE_S:
        return recorded
    return folder_bytes(folder), now_unix_s


@frozen
class Reserve:
    """The time kept before the package end to retrieve the work (D2).

    Attributes:
        reserve_s: seconds kept.
        measured: from a measured pull (not the default, not set by hand).
        how: where the figure comes from, in words.
        note: a malformed ``retrieval.toml``, in one line, else ``None``.
    """

    reserve_s: float
    measured: bool
    how: str
    note: str | None = None
    #: one transfer of the deliverables at the slowest measured throughput (seconds)
    transfer_s: float | None = None


def measured_reserve(folder: Path) -> Reserve:
    """The reserve from the measured pulls of ``folder`` (D2).

    Args:
        folder: the session folder.

    Returns:
        size ÷ slowest throughput × :data:`SAFETY_FACTOR`, at least
        :data:`MIN_RESERVE_S`; without a measured pull :data:`DEFAULT_RESERVE_S` with
        :data:`NOT_MEASURED_WORDS`.
    """
    m = read_measured(folder)
    if m.slowest_bytes_per_s is None:
        return Reserve(DEFAULT_RESERVE_S, False, NOT_MEASURED_WORDS, m.note)
    from gpusession.core.files.units import format_bytes

    size, where = deliverables_bytes(folder)
    need_s = size / m.slowest_bytes_per_s * SAFETY_FACTOR
    capped = need_s >= MAX_DURATION_S  # a derived duration past a year means nothing (H-41)
    how = (f"{format_bytes(size)} ({where}) at {format_bytes(m.slowest_bytes_per_s)}/s measured, "
           f"×{SAFETY_FACTOR:g}" + (", from a small copy" if m.probe_only else "")
           + (f", at least {duration_words(MIN_RESERVE_S)}" if need_s < MIN_RESERVE_S else "")
           + (f", capped at {duration_words(MAX_DURATION_S)}" if capped else ""))
    need_s = min(need_s, MAX_DURATION_S)
    return Reserve(max(MIN_RESERVE_S, need_s), True, how, m.note,
                   transfer_s=min(need_s / SAFETY_FACTOR, MAX_DURATION_S))


def duration_words(seconds: float) -> str:
    """``175 ms``, ``12.3 s``, ``6 h``, ``2 h 30 min``, ``45 min``, ``3 d 11 h``.

    Under a minute the figure itself (``format_seconds``): a run of 175 ms is never said
    as ``1 min``; from a minute on, rounded up to the minute (a reserve, a time left).
    """
    if seconds < 60:
        from gpusession.core.files.units import (
            format_seconds,  # status loads units only when needed
        )

        return format_seconds(max(0.0, seconds))
    minutes = max(0, math.ceil(seconds / 60 - 1e-9))
    h, m = divmod(minutes, 60)
    if h >= 48:
        d, h = divmod(h, 24)
        return f"{d} d {h} h" if h else f"{d} d"
    if h and m:
        return f"{h} h {m:02d} min"
    return f"{h} h" if h else f"{m} min"


def when_words(at: datetime, now: datetime | None = None, *, seconds: bool = False) -> str:
    """``Sat 14:00 UTC`` within the six days after ``now``, else ``Sat 5 Dec 14:00 UTC``.

    A time already past names its date: a bare ``Tue`` would read as the coming Tuesday.
    ``seconds``: ``Sat 14:00:05 UTC``, where two times a few seconds apart are compared
    (a run refused at the limit: "would end 19:42:10; stop by 19:42:00").
    """
    at = at.astimezone(timezone.utc)
    now = now or clock.utcnow()
    hm = "%H:%M:%S" if seconds else "%H:%M"
    if 0 <= (at - now).total_seconds() < 6 * 86400:
        return f"{at:%a} {at.strftime(hm)} UTC"
    return f"{at:%a} {at.day} {at:%b} {at.strftime(hm)} UTC"


@frozen
class SessionLimit:
    """The session limit at one instant (D1, D2).

    Attributes:
        at: the limit (aware, UTC); ``None`` when the package window is not set and no
            limit was given.
        reserve_s: seconds kept for retrieval before the package end.
        measured: the reserve comes from a measured pull.
        source: ``"limit"`` (set with ``--limit``), ``"reserve"`` (``--reserve``),
            ``"measured"`` or ``"default"``.
        how: where the reserve comes from, in words.
        note: a malformed ``retrieval.toml``, in one line, else ``None``.
        words: ``stop by Sat 14:00 UTC (6 h kept for retrieval)`` (with the default:
            ``…; not measured yet: run `gpusession pull --probe` from home``).
        now: the instant the words were made for.
        pull_by: the last time a pull can start and end by the package end at the slowest
            measured throughput (no safety factor), ``None`` when not measured.
    """

    at: datetime | None
    reserve_s: float
    measured: bool
    source: str
    how: str
    note: str | None
    words: str
    now: datetime
    pull_by: datetime | None = None

    @property
    def known(self) -> bool:
        """Whether there is a limit at all."""
        return self.at is not None

    def passed(self, now: datetime | None = None) -> bool:
        """Whether ``now`` (default: the instant of the words) is at or past the limit."""
        return self.at is not None and (now or self.now) >= self.at

    def fits(self, now: datetime, expected_s: float) -> bool:
        """Whether a run of ``expected_s`` seconds started at ``now`` ends by the limit."""
        if self.at is None:
            return True
        if not math.isfinite(expected_s) or expected_s >= MAX_DURATION_S:  # never a timedelta past year 9999 (H-41)
            return False
        return now + timedelta(seconds=expected_s) <= self.at

    @property
    def stop_by(self) -> str:
        """``stop by Sat 14:00 UTC`` (``no session limit`` when unknown)."""
        return f"stop by {when_words(self.at, self.now)}" if self.at else "no session limit"

    def warning_words(self, *, short: bool = False) -> str:
        """The header's warning once the limit has passed (D1, D2).

        ``past the session limit (stop by Sat 14:00 UTC): start no run; pull by Sat 19:10
        UTC`` (the measured transfer), else ``…; pull now``. ``short`` (the header at 80
        columns) leaves out ``start no run; `` (A1: the short form is made here, never cut
        from the long one).
        """
        pull = f"pull by {when_words(self.pull_by, self.now)}" if self.pull_by else "pull now"
        return f"past the session limit ({self.stop_by}): {'' if short else 'start no run; '}{pull}"

    def to_json(self) -> dict[str, Any]:
        """The limit as JSON-ready values (``show --json``)."""
        return {"at": self.at.isoformat() if self.at else None, "reserve_s": self.reserve_s,
                "measured": self.measured, "source": self.source, "words": self.words,
                "note": self.note, "pull_by": self.pull_by.isoformat() if self.pull_by else None}


def _stored(doc: Mapping[str, Any]) -> tuple[datetime | None, float | None]:
    """The ``[limit]`` table: an explicit limit, or a reserve in seconds."""
    table = doc.get(LIMIT_TABLE)
    if not isinstance(table, Mapping):
        return None, None
    at = table.get("at")
    if isinstance(at, str):

        try:
            at = parse_start(at, field="limit.at")
        except BadInput:
            at = None
    at = at.astimezone(timezone.utc) if isinstance(at, datetime) and at.tzinfo else None
    reserve = table.get("reserve_s")
    if (isinstance(reserve, (int, float)) and not isinstance(reserve, bool)
            and 0 <= reserve < MAX_DURATION_S):  # a reserve of a year or more means nothing (H-41)
        return at, float(reserve)
    return at, None


def limit_of(folder: Path, doc: Mapping[str, Any], now: datetime | None = None) -> SessionLimit:
    """The limit of the session in ``folder`` whose ``session.toml`` is ``doc`` (D1, D2).

    Args:
        folder: the session folder (``retrieval.toml``, the manifest, its size).
        doc: the parsed ``session.toml`` (its ``[package]`` and ``[limit]`` tables).
        now: the instant (aware); a fake clock in tests; default now.

    Returns:
        The limit; never raises for a missing or malformed ``retrieval.toml``.
    """
    now = now or clock.utcnow()
    try:
        end = Package.from_toml(doc.get("package", {})).end
    except BadInput:
        end = None
    at, reserve_set = _stored(doc)
    if at is not None:
        kept = (end - at).total_seconds() if end is not None else None
        how = "the limit you set"
        limit = SessionLimit(at, max(0.0, kept or 0.0), False, "limit", how, None, "", now)
        tail = f" ({duration_words(kept)} kept for retrieval, set by you)" if kept and kept > 0 \
            else " (set by you)"
        return _worded(limit, tail)
    if reserve_set is not None:
        res = Reserve(reserve_set, False, "set by you", transfer_s=measured_reserve(folder).transfer_s)
        source = "reserve"
    else:
        res = measured_reserve(folder)
        source = "measured" if res.measured else "default"
    limit_at = end - timedelta(seconds=res.reserve_s) if end is not None else None
    tail = f" ({duration_words(res.reserve_s)} kept for retrieval"
    tail += f"; {res.how})" if source == "default" else f", {res.how})"
    pull_by = (end - timedelta(seconds=res.transfer_s)
               if end is not None and res.transfer_s is not None else None)
    return _worded(SessionLimit(limit_at, res.reserve_s, res.measured, source, res.how,
                                res.note, "", now, pull_by), tail)


def _worded(limit: SessionLimit, tail: str) -> SessionLimit:
    """``limit`` with its words: ``stop by … (…)``, or why there is no limit."""
    if limit.at is None:
        return replace(limit, words="no session limit: the package window is not set")
    return replace(limit, words=f"{limit.stop_by}{tail}")


def session_limit(session: Session, now: datetime | None = None) -> SessionLimit:
    """The limit of an open :class:`~gpusession.core.folder.session.Session` (D1, D2).

    Args:
        session: the open session (its ``folder`` and ``data``).
        now: the instant (aware); a fake clock in tests; default now.

    Returns:
        :func:`limit_of` of its folder and ``session.toml``.
    """
    return limit_of(session.folder, session.data, now)


def parse_reserve(text: str) -> float:
    """``6h``, ``90m``, ``1h30m``, ``2.5h`` → seconds (``package --reserve``).

    Raises:
        BadInput: not a duration in hours and minutes.
    """
    t = text.strip().lower().replace(" ", "")
    m = re.fullmatch(r"(?:([0-9]+(?:\.[0-9]+)?)h)?(?:([0-9]+)m(?:in)?)?", t)
    if not t or m is None or not (m.group(1) or m.group(2)):
        from gpusession.core.files.secrets import shown  # status: loaded on the error only

        raise BadInput(f"expected a duration such as 6h, 90m or 1h30m, got {shown(text)}",
                       field="reserve")
    seconds = float(m.group(1) or 0) * 3600 + float(m.group(2) or 0) * 60
    if seconds >= MAX_DURATION_S:  # H-41: a reserve of a year or more means nothing
        raise BadInput(f"expected a duration under a year (8760h), got {text!r}", field="reserve")
    return seconds


def parse_hours(text: str, *, field: str = "reserve-hours") -> float:
    """``6``, ``2.5`` → hours (``checklist evidence --reserve-hours``): ASCII digits only.

    Stricter than ``float``, which takes ``1_0`` as 10, ``1e3``, `` nan`` or Arabic digits.

    Raises:
        BadInput: not a plain decimal number, naming ``field``.
    """
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", text.strip()) is None:

        raise BadInput(f"expected hours such as 6 or 2.5, got {printable(repr(text))}", field=field)
    return float(text)


def check_reserve(reserve_s: float, days: int | None, *, field: str = "reserve",
                  tail: str = "") -> None:
    """Refuse a reserve that is not shorter than the package (D1): it would leave no time to work.

    Args:
        reserve_s: the reserve asked for (seconds).
        days: the package length (``None``: not set yet, nothing to compare with).
        field: the option named in the error.
        tail: what to do, appended to the error's words.

    Raises:
        BadInput: ``reserve of 100 h is the whole 3-day package or more (72 h); keep less``.
    """
    if days is None or reserve_s < days * 86400:
        return
    hours = reserve_s / 3600
    raise BadInput(f"reserve of {hours:g} h is the whole {days}-day package or more ({days * 24} h); "
                   f"keep less than {days * 24} h for retrieval{tail}", field=field)


def stored_reserve_s(doc: Mapping[str, Any]) -> float | None:
    """The reserve set by hand in ``session.toml``'s ``[limit]`` (seconds), ``None`` when none is."""
    return _stored(doc)[1]


def set_limit(session: Session, *, at: datetime | None = None, reserve_s: float | None = None,
              auto: bool = False) -> None:
    """Store the session limit in ``session.toml`` (D1): a time, a reserve, or back to auto.

    Args:
        session: the open session.
        at: the limit itself (aware).
        reserve_s: seconds kept before the package end instead of the measured reserve.
        auto: forget both: the measured (else default) reserve applies again.

    Raises:
        BadInput: a reserve at or above the package length (:func:`check_reserve`);
            nothing is written.
    """
    def change(doc: dict[str, Any]) -> None:  # on a fresh read: keep others' edits (S7)
        if reserve_s is not None and not auto and at is None:
            try:
                days = Package.from_toml(doc.get("package", {})).days
            except BadInput:
                days = None
            check_reserve(reserve_s, days)
        if auto:
            doc.pop(LIMIT_TABLE, None)
        elif at is not None:
            doc[LIMIT_TABLE] = {"at": at.astimezone(timezone.utc)}
        elif reserve_s is not None:
            doc[LIMIT_TABLE] = {"reserve_s": float(reserve_s)}

    session.update(change)


__all__ = [
    "DEFAULT_RESERVE_S", "MIN_RESERVE_S", "Measured", "NOT_MEASURED_WORDS", "RETRIEVAL_TOML",
    "Reserve", "SAFETY_FACTOR", "SessionLimit", "deliverables_bytes", "duration_words",
    "folder_bytes", "folder_bytes_to_record", "recorded_folder_bytes",
    "check_reserve", "limit_of", "measured_reserve", "parse_hours", "parse_reserve", "read_measured", "session_limit",
    "set_limit", "stored_reserve_s", "when_words",
]
