"""A session's state in one line, fast enough for tmux's status line (issue 14; S6).

``gpusession status [NAME]`` runs every few seconds from ``status-right``; it must not
import polars, torch or textual, nor read the whole results CSV. So the writers of the
CSV (the runner after each row, ``validate --session``) keep ``summary.json`` beside it::

    {"schema": 1, "rows": 23, "accepted_revisions": ["9f86d0…"],
     "csv_size_bytes": 10412, "updated_at": "2026-12-01T01:00:00+00:00"}

The counts are brought up to date by reading only the bytes appended since the recorded
``csv_size_bytes`` (a row always ends on a record boundary), with the standard library's
CSV reader; a summary that is missing or does not match the CSV is rebuilt from the
whole file. Reading never writes.

Whether the copy home is verified comes from the ``[retrieval]`` table of
``checklist.toml`` (written by ``gpusession pull`` into the local copy) or from the
person ticking the checklist's copy item (``g8.verify-copy``) on the server.

Who calls it: :mod:`gpusession.commands.status_cmd`, the runner
(:func:`refresh_counts`), ``validate --session``, ``show`` and the TUI header.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpusession.core.clock import utcnow
from gpusession.core.errors import BadInput
from gpusession.core.package import Package
from gpusession.core.window import PackageWarning, package_warning, package_window, short_timedelta

SUMMARY_JSON = "summary.json"
RESULTS_CSV = "resultats-bruts.csv"
#: The checklist item whose tick by the person says "the copy home is verified" (S4).
VERIFY_ITEM = "g8.verify-copy"


@dataclass(frozen=True)
class Counts:
    """Row and accepted-corpus counts of a session's results CSV (K4).

    Attributes:
        rows: data rows of ``resultats-bruts.csv``.
        accepted_revisions: distinct ``corpus_revision`` values of accepted rows.
        csv_size_bytes: the CSV's size the counts describe.
    """

    rows: int
    accepted_revisions: frozenset[str]
    csv_size_bytes: int

    @property
    def accepted_unique_corpora(self) -> int:
        """Distinct accepted corpora (K4: repetitions of one corpus count once)."""
        return len(self.accepted_revisions)


def _count_records(text: str, header: list[str] | None, start: Counts) -> Counts | None:
    reader = csv.reader(io.StringIO(text, newline=""))
    rows, accepted = start.rows, set(start.accepted_revisions)
    cols = header
    for record in reader:
        if cols is None:
            cols = record
            continue
        if not record:
            continue
        try:
            rev = record[cols.index("corpus_revision")]
            ok = record[cols.index("corpus_accepted")]
        except (ValueError, IndexError):
            return None
        rows += 1
        if ok == "true" and rev:
            accepted.add(rev)
    return Counts(rows, frozenset(accepted), start.csv_size_bytes)


def _header(path: Path) -> list[str] | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return next(csv.reader([fh.readline().lstrip("\ufeff")]), None)
    except (OSError, UnicodeDecodeError):
        return None


def _read_summary(folder: Path) -> tuple[int, frozenset[str], int] | None:
    try:
        doc = json.loads((folder / SUMMARY_JSON).read_text(encoding="utf-8"))
        rows, revs, size = doc["rows"], doc["accepted_revisions"], doc["csv_size_bytes"]
        if not (isinstance(rows, int) and isinstance(size, int) and isinstance(revs, list)):
            return None
        return rows, frozenset(str(r) for r in revs), size
    except (OSError, ValueError, KeyError, TypeError):
        return None


def current_counts(folder: Path) -> Counts:
    """The counts of ``folder``'s results CSV now, read from ``summary.json`` (issue 14).

    Only the bytes appended after the summary was written are read; without a usable
    summary the whole CSV is read with the standard library (never polars). Nothing is
    written.

    Args:
        folder: a session folder.

    Returns:
        The counts (0 rows when there is no CSV yet).
    """
    folder = Path(folder)
    csv_path = folder / RESULTS_CSV
    try:
        size = csv_path.stat().st_size
    except OSError:
        return Counts(0, frozenset(), 0)
    saved = _read_summary(folder)
    if saved is not None and saved[2] == size:
        return Counts(saved[0], saved[1], size)
    header = _header(csv_path)
    try:
        with open(csv_path, "rb") as fh:
            if saved is not None and 0 < saved[2] < size and header is not None:
                fh.seek(saved[2])
                tail = fh.read(size - saved[2])
                got = _count_records(tail.decode("utf-8", "replace"), header,
                                     Counts(saved[0], saved[1], size))
                if got is not None:
                    return got
                fh.seek(0)
            text = fh.read(size).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return Counts(0, frozenset(), 0)
    return _count_records(text, None, Counts(0, frozenset(), size)) or Counts(0, frozenset(), size)


def refresh_counts(folder: Path) -> Counts:
    """Bring ``summary.json`` up to date after rows were appended (issue 14; S7).

    Called by the runner after each appended row and by ``validate --session``. Reads
    only the new bytes of the CSV; the file is written atomically. A failure to write
    (full disk) is not an error of the run: the summary is a cache, rebuilt when read.

    Args:
        folder: the session folder.

    Returns:
        The counts written.
    """
    from gpusession.core.tomlio import write_atomic_bytes

    counts = current_counts(folder)
    doc = {
        "schema": 1,
        "rows": counts.rows,
        "accepted_revisions": sorted(counts.accepted_revisions),
        "csv_size_bytes": counts.csv_size_bytes,
        "updated_at": utcnow().isoformat(),
    }
    try:
        write_atomic_bytes(Path(folder) / SUMMARY_JSON, (json.dumps(doc) + "\n").encode("utf-8"))
    except OSError:
        pass
    return counts


@dataclass(frozen=True)
class Retrieval:
    """Whether the copy home is verified (issue 14; S4).

    Attributes:
        verified: True when ``gpusession pull`` verified it, or the person ticked the
            checklist's copy item.
        words: ``verified 2026-12-01 01:00 UTC (pull: 12 files, 3.1 MB)`` /
            ``not verified`` / ``ticked by you``.
    """

    verified: bool
    words: str


def _toml(path: Path) -> dict[str, Any]:
    # The parser itself, not gpusession.core.tomlio: that module also loads the writer
    # (tomli_w, tempfile), a third of this command's start-up; the compat is the same.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8").lstrip("\ufeff"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def retrieval_state(folder: Path) -> Retrieval:
    """Read the copy-home state from ``checklist.toml`` (issue 14; S4).

    Args:
        folder: a session folder (on the server, or its copy home).

    Returns:
        The state; an unreadable file reads as not verified.
    """
    doc = _toml(Path(folder) / "checklist.toml")
    rec = doc.get("retrieval")
    if isinstance(rec, dict) and rec.get("verified") is True:
        at = rec.get("at")
        when = f" {at:%Y-%m-%d %H:%M} UTC" if isinstance(at, datetime) else ""
        return Retrieval(True, f"copy home verified{when}")
    items = doc.get("items")
    item = items.get(VERIFY_ITEM) if isinstance(items, dict) else None
    if isinstance(item, dict) and item.get("done") is True:
        return Retrieval(True, "copy home verified (ticked in the checklist)")
    return Retrieval(False, "copy home not verified")


#: Same as :data:`gpusession.core.session.ENV_HOME` (a test keeps them equal); not
#: imported from there: ``core.session`` costs ~60 ms of imports, ten times this module.
ENV_HOME = "GPUSESSION_HOME"
_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")


def sessions_root_light(cli_value: str | Path | None = None) -> Path:
    """The sessions root as :func:`gpusession.core.session.sessions_root` finds it (issue 2).

    ``cli_value`` (``--sessions-dir``), else ``$GPUSESSION_HOME``, else ``./sessions``.
    """
    if cli_value:
        return Path(cli_value)
    env = os.environ.get(ENV_HOME)
    return Path(env) if env else Path.cwd() / "sessions"


def most_recent_session(root: Path) -> str | None:
    """The session folder under ``root`` used most recently (newest file at its top), cheaply.

    Only ``stat`` calls: nothing is opened (the TUI's choice, :func:`most_recent`, opens
    every session).
    """
    best: tuple[float, str] | None = None
    try:
        entries = list(os.scandir(root))
    except OSError:
        return None
    for entry in entries:
        if not entry.is_dir() or not os.path.isfile(os.path.join(entry.path, "session.toml")):
            continue
        try:
            mtime = max(
                (e.stat().st_mtime for e in os.scandir(entry.path) if e.is_file()),
                default=entry.stat().st_mtime,
            )
        except OSError:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, entry.name)
    return best[1] if best else None


@dataclass(frozen=True)
class SessionStatus:
    """What ``gpusession status`` says about one session (issue 14; S6).

    Attributes:
        name: the session.
        package: its package.
        time_left_words: ``3d 02h 10m left`` / ``ended 2h 05m ago`` / ``window not set``.
        counts: rows and accepted corpora.
        retrieval: the copy-home state.
        warning: the end-of-package warning, or ``None``.
    """

    name: str
    package: Package
    time_left_words: str
    counts: Counts
    retrieval: Retrieval
    warning: PackageWarning | None

    def line(self) -> str:
        """One short line: ``demo · 3d 02h left · 18 runs · 1 accepted corpus · copy home not verified``."""
        acc = self.counts.accepted_unique_corpora
        parts = [
            self.name,
            self.time_left_words,
            f"{self.counts.rows} run{'s' if self.counts.rows != 1 else ''}",
            f"{acc} accepted {'corpus' if acc == 1 else 'corpora'}",
            self.retrieval.words,
        ]
        text = " · ".join(parts)
        if self.warning is not None:
            text = f"WARNING: {self.warning.text} · {text}"
        return text

    def tmux(self) -> str:
        """The form for tmux ``status-right``: short, with a red warning (``#[fg=…]``).

        ``#`` in any text is doubled so tmux never reads it as a format.
        """
        acc = self.counts.accepted_unique_corpora
        copy = "copy ok" if self.retrieval.verified else "copy not verified"
        body = f"{self.name} {self.time_left_words} {self.counts.rows}r {acc}acc {copy}".replace("#", "##")
        if self.warning is not None:
            warn = self.warning.short.replace("#", "##")
            return f"#[fg=colour231,bg=colour160,bold] {warn} #[default] {body}"
        return body


def session_status(folder: Path, *, now: datetime | None = None) -> SessionStatus:
    """The status of the session in ``folder`` at ``now`` (issue 14; S6).

    Reads ``session.toml``, ``checklist.toml`` and ``summary.json`` (plus the CSV's new
    bytes, see :func:`current_counts`); imports no polars.

    Args:
        folder: the session folder.
        now: the instant (aware); a fake clock in tests; default now.

    Raises:
        BadInput: no ``session.toml``, or a package that does not read.
    """
    folder = Path(folder)
    path = folder / "session.toml"
    if not _NAME_RE.match(folder.name) or ".." in folder.name or not path.is_file():
        raise BadInput(f"no session {folder.name!r} in {folder.parent}", path=folder)
    doc = _toml(path)
    if not doc:
        raise BadInput("does not read as TOML; run `gpusession show` for the details", path=path)
    package = Package.from_toml(doc.get("package", {}), path)
    window = package_window(package, now)
    retrieval = retrieval_state(folder)
    if not window.known:
        left = "window not set"
    elif window.ended:  # short_timedelta words a negative duration "ended … ago"
        left = short_timedelta(window.time_left) if window.time_left else "ended"
    else:
        left = f"{short_timedelta(window.time_left)} left"
    return SessionStatus(
        name=folder.name,
        package=package,
        time_left_words=left,
        counts=current_counts(folder),
        retrieval=retrieval,
        warning=package_warning(window, retrieval.verified),
    )
