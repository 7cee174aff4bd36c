"""Session folders: create, open, list, rename; atomic TOML; journal; crash recovery.

A session is one folder under the sessions root (``./sessions`` by default, or
``--sessions-dir`` / ``GPUSESSION_HOME``), named by a safe slug; the folder name *is*
the session name, so a folder renamed by hand still opens (rename-safe). Layout
(design.md §Session folder)::

    sessions/<name>/
      session.toml  checklist.toml  order.toml  journal.jsonl  resultats-bruts.csv
      runs/  validation/

Every TOML write is atomic (S7, H-10); the journal (:mod:`gpusession.core.journal`) and
the CSV are append-only and fsynced per line/row. On open, what a crash left behind is
recovered and recorded as an incident (S7, :mod:`gpusession.core.recovery`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from gpusession.core.errors import BadInput
from gpusession.core.events import Event
from gpusession.core.results import ResultsFile
from gpusession.core.tomlio import read_toml, write_toml

ENV_HOME = "GPUSESSION_HOME"
PACKAGE_DAYS = (3, 7, 30)
NAME_MAX = 100
_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")

SESSION_TOML = "session.toml"
CHECKLIST_TOML = "checklist.toml"
ORDER_TOML = "order.toml"
JOURNAL = "journal.jsonl"
RESULTS_CSV = "resultats-bruts.csv"
RUN_LOCK = ".run.lock"
#: Files that hold a session's data: never overwritten by an output such as a report (S7).
DATA_FILES = (SESSION_TOML, CHECKLIST_TOML, ORDER_TOML, JOURNAL, RESULTS_CSV, RUN_LOCK)
#: Upper bound on lots: far above any rental, and keeps every total within a 64-bit integer.
LOTS_MAX = 10_000


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the folder itself while a read-modify-write runs (POSIX;
    elsewhere no lock). No lock file is left in the folder."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def utcnow() -> datetime:
    """Now, as an aware UTC datetime truncated to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def sessions_root(cli_value: str | Path | None = None) -> Path:
    """The folder holding session folders: ``--sessions-dir``, else ``GPUSESSION_HOME``,
    else ``./sessions`` (issue 2)."""
    if cli_value:
        return Path(cli_value)
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env)
    return Path.cwd() / "sessions"


def validate_name(name: str) -> str:
    """Check that ``name`` is a safe slug: letters, digits, ``.``, ``_``, ``-``.

    Raises:
        BadInput: empty, longer than 100 characters, ``.``/``..``, containing ``..``,
            ``/`` or any other character; the message says which.
    """
    if not name:
        raise BadInput("session name is empty; use letters, digits, '.', '_' or '-'", field="name")
    if len(name) > NAME_MAX:
        raise BadInput(
            f"session name is {len(name)} characters long; at most {NAME_MAX}", field="name"
        )
    if "/" in name or "\\" in name:
        raise BadInput(f"session name {name!r} contains a path separator", field="name")
    if ".." in name or name == ".":
        raise BadInput(f"session name {name!r} contains '..' or is '.'", field="name")
    if name.startswith("-"):
        raise BadInput(f"session name {name!r} starts with '-'", field="name")
    if not _NAME_RE.match(name):
        bad = sorted({c for c in name if not re.match(r"[A-Za-z0-9._-]", c)})
        raise BadInput(
            f"session name {name!r} contains {''.join(bad)!r}; use letters, digits, '.', '_' or '-'",
            field="name",
        )
    return name


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
            f"{value!r} is not ISO 8601; expected e.g. 2026-11-29T14:00:00+00:00",
            path=path,
            field=field,
        ) from None
    if dt.tzinfo is None:
        raise BadInput(
            f"{value!r} has no UTC offset; add one, e.g. {value}+00:00 or {value}Z",
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


@dataclass(frozen=True)
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
        return {"gpu_model": self.gpu_model, "lots": self.lots, "days": self.days, "start": self.start}

    @classmethod
    def from_toml(cls, data: Mapping[str, Any], path: Path | None = None) -> Package:
        """Build from the ``[package]`` table, checking types.

        Raises:
            BadInput: a field of the wrong type or out of range, naming file and field.
        """
        if not isinstance(data, Mapping):
            raise BadInput(
                f"expected a [package] table, got {data!r}", path=path, field="package"
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
        raise BadInput(f"expected a whole number of lots ≥ 1, got {lots!r}", path=path, field="lots")
    if lots > LOTS_MAX:
        raise BadInput(
            f"expected at most {LOTS_MAX:,} lots, got {lots:,}", path=path, field="lots"
        )
    return lots


def check_gpu_model(gpu: Any, *, path: Path | None = None, field: str = "gpu") -> str:
    """Raise ``BadInput`` unless ``gpu`` is a non-empty one-line text without control
    characters (it is printed in tables and the terminal title). Returns it stripped."""
    if not isinstance(gpu, str):
        raise BadInput(f"expected a GPU model as text, got {gpu!r}", path=path, field=field)
    if not gpu.strip():
        raise BadInput('expected a GPU model, e.g. "RTX A5000", got an empty text', path=path, field=field)
    if any(ord(c) < 32 or ord(c) == 127 for c in gpu):
        raise BadInput(
            f"{gpu!r} contains a control character (line break, tab, escape); expected one "
            'line such as "RTX A5000"',
            path=path,
            field=field,
        )
    return gpu.strip()


def refuse_session_data(target: Path, *, what: str = "output") -> None:
    """Refuse to write an output (report, manifest) over a folder or a session's data.

    ``--force`` overwrites an earlier output, never ``session.toml``, ``order.toml``,
    ``checklist.toml``, ``journal.jsonl``, ``resultats-bruts.csv`` of a session (S7).

    Raises:
        BadInput: ``target`` is a folder, or one of those files in a session folder.
    """
    target = Path(target)
    if target.is_dir():
        raise BadInput(f"is a folder; expected the {what} file to write", path=target)
    real = target.resolve()
    if real.name in DATA_FILES and (real.parent / SESSION_TOML).is_file():
        raise BadInput(
            f"is session data; the {what} never replaces it, even with --force; choose "
            "another --out",
            path=target,
        )


def check_days(days: Any, *, path: Path | None = None) -> int:
    """Raise ``BadInput`` unless ``days`` is 3, 7 or 30 (packages are whole, K1)."""
    if days not in PACKAGE_DAYS or isinstance(days, bool):
        raise BadInput(f"expected 3, 7 or 30 days, got {days!r}", path=path, field="days")
    return int(days)


class Session:
    """One session folder. Use :meth:`create` or :meth:`open`, not the constructor.

    Attributes:
        folder: the session folder.
        name: the session name (the folder's name).
        data: the parsed ``session.toml``.
    """

    def __init__(self, folder: Path, data: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.name = self.folder.name
        self.data = data
        self.results = ResultsFile(self.folder / RESULTS_CSV)

    # -- paths -----------------------------------------------------------------
    @property
    def session_toml(self) -> Path:
        return self.folder / SESSION_TOML

    @property
    def checklist_toml(self) -> Path:
        return self.folder / CHECKLIST_TOML

    @property
    def order_toml(self) -> Path:
        return self.folder / ORDER_TOML

    @property
    def journal_path(self) -> Path:
        return self.folder / JOURNAL

    @property
    def runs_dir(self) -> Path:
        return self.folder / "runs"

    @property
    def validation_dir(self) -> Path:
        return self.folder / "validation"

    # -- lifecycle -------------------------------------------------------------
    @classmethod
    def create(
        cls,
        root: Path,
        name: str,
        *,
        package: Package | None = None,
        now: datetime | None = None,
    ) -> Session:
        """Create ``root/name`` with ``session.toml``, ``checklist.toml``, ``order.toml``.

        Raises:
            BadInput: unsafe name, or a session of that name already exists (it is
                never overwritten).
        """
        validate_name(name)
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise BadInput("the sessions root is a file; expected a folder (--sessions-dir)", path=root)
        root.mkdir(parents=True, exist_ok=True)
        folder = root / name
        try:
            folder.mkdir()
        except FileExistsError:
            # An empty folder is what a create cut short (disk full, power loss) leaves.
            if not folder.is_dir() or any(folder.iterdir()):
                raise BadInput(f"session {name!r} already exists; nothing was changed", path=folder) from None
        now = now or utcnow()
        pkg = package or Package()
        data: dict[str, Any] = {"name": name, "created_at": now, "package": pkg.to_toml()}
        try:
            write_toml(folder / SESSION_TOML, data)
            write_toml(folder / CHECKLIST_TOML, {"items": {}})
            write_toml(folder / ORDER_TOML, {})
            session = cls(folder, read_toml(folder / SESSION_TOML))
            session.journal("session_created", package=pkg.to_toml())
        except BaseException:
            # Leave no half-made session behind (it would block `new NAME` forever).
            for p in (SESSION_TOML, CHECKLIST_TOML, ORDER_TOML, JOURNAL):
                (folder / p).unlink(missing_ok=True)
            try:
                folder.rmdir()
            except OSError:
                pass
            raise
        return session

    @classmethod
    def open(cls, root: Path, name: str, *, recover: bool = True) -> Session:
        """Open an existing session, check its files and recover after a crash (S7).

        Raises:
            BadInput: unsafe name, no such session, an unreadable or newer-schema
                ``session.toml``, a missing required key, a bad results CSV header.
        """
        validate_name(name)
        folder = Path(root) / name
        if not folder.is_dir():
            raise BadInput(f"no session {name!r} in {root}", path=folder)
        data = read_toml(folder / SESSION_TOML, required=("name", "created_at"))
        created = data.get("created_at")
        if not isinstance(created, datetime) or created.tzinfo is None:
            raise BadInput(
                f"expected a date-time with UTC offset, e.g. 2026-11-29T14:00:00Z, got {created!r}",
                path=folder / SESSION_TOML,
                field="created_at",
            )
        check_time_range(created, field="created_at", path=folder / SESSION_TOML)
        session = cls(folder, data)
        Package.from_toml(data.get("package", {}), session.session_toml)
        for extra in (CHECKLIST_TOML, ORDER_TOML):
            if (folder / extra).exists():
                read_toml(folder / extra)
        session.results.check()
        if recover:
            try:
                session.recover()
            except OSError:
                pass  # a read-only or full disk: open to read; recovery waits for a writable open
        return session

    @classmethod
    def open_or_create(cls, root: Path, name: str, *, package: Package | None = None) -> Session:
        if (Path(root) / name).is_dir():
            return cls.open(root, name)
        return cls.create(root, name, package=package)

    def rename(self, new_name: str) -> Session:
        """Rename the folder; refuses an existing target. Returns the reopened session."""
        validate_name(new_name)
        target = self.folder.parent / new_name
        if target.exists():
            raise BadInput(f"session {new_name!r} already exists; nothing was changed", path=target)
        os.rename(self.folder, target)
        session = Session.open(target.parent, new_name, recover=False)
        session.data["name"] = new_name
        session.save()
        session.journal("session_renamed", old=self.name, new=new_name)
        return session

    # -- session.toml ----------------------------------------------------------
    @property
    def package(self) -> Package:
        return Package.from_toml(self.data.get("package", {}), self.session_toml)

    def set_package(self, package: Package) -> None:
        """Store the package and write ``session.toml`` atomically.

        Raises:
            BadInput: a value the next open would refuse (lots, days, GPU model); nothing
                is written then, so no writer (CLI or TUI) can lock a session out.
        """
        Package.from_toml(package.to_toml())
        self.update(lambda data: data.__setitem__("package", package.to_toml()))
        self.journal("package_set", package=package.to_toml())

    def save(self) -> None:
        """Write ``session.toml`` atomically (S7) from this object's ``data``.

        A process that holds the session for long (a run, the TUI) should prefer
        :meth:`update`: ``save`` writes back everything it read, including what another
        process changed in between.
        """
        write_toml(self.session_toml, self.data)
        self.data = read_toml(self.session_toml)

    def update(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Read ``session.toml`` afresh, apply ``change`` to it and write it atomically,
        under a lock on the session folder (S7).

        Two processes (a run saving its environment, ``gpusession package`` in another
        pane) then never undo each other's changes. ``data`` is the written document.
        """
        with _folder_lock(self.folder):
            data = read_toml(self.session_toml, required=("name", "created_at"))
            change(data)
            write_toml(self.session_toml, data)
        self.data = read_toml(self.session_toml)

    def reload(self) -> None:
        self.data = read_toml(self.session_toml, required=("name", "created_at"))

    # -- other TOML documents --------------------------------------------------
    def read_doc(self, filename: str) -> dict[str, Any]:
        """Read ``checklist.toml`` / ``order.toml`` (or another TOML of the folder)."""
        path = self.folder / filename
        if not path.exists():
            return {"schema": 1}
        return read_toml(path)

    def write_doc(self, filename: str, data: Mapping[str, Any]) -> None:
        """Write a TOML document of the folder atomically (S7, H-10)."""
        write_toml(self.folder / filename, data)

    # -- journal (core/journal.py) -----------------------------------------------
    def journal(self, event: str | Event, **fields: Any) -> None:
        """Append one record to ``journal.jsonl`` and fsync (:func:`gpusession.core.journal.append`).

        Args:
            event: a typed record (:mod:`gpusession.core.events`), or the name of an
                event without its own type, with its ``fields``.
        """
        from gpusession.core import journal

        if isinstance(event, str):
            event = journal.record(event, fields)
        elif fields:
            raise TypeError("fields are given with an event name, not with a typed record")
        journal.append(self.journal_path, event)

    def read_journal(self) -> list[dict[str, Any]]:
        """Every journal record as a dict; an unparseable line (crash mid-write) is skipped.

        Typed records: :func:`gpusession.core.journal.read_records`.
        """
        from gpusession.core import journal

        return journal.read(self.journal_path)

    # -- crash recovery (core/recovery.py, S7) -------------------------------------
    def run_lock_holder(self) -> int | None:
        """PID of a live process running experiments in this session, else ``None``."""
        from gpusession.core import journal

        return journal.lock_holder(self.folder)

    def recover(self) -> list[str]:
        """Recover what a crash left behind and record it as incidents (S7).

        Two opens at once recover once, not twice (a lock on the folder); what is
        recovered is described in :func:`gpusession.core.recovery.recover_locked`.

        Returns:
            One sentence per incident recovered.
        """
        from gpusession.core.recovery import recover_locked

        with _folder_lock(self.folder):
            return recover_locked(self)


@dataclass(frozen=True)
class SessionSummary:
    """One line of ``gpusession list``."""

    name: str
    gpu_model: str | None
    package: Package
    runs: int
    accepted_corpora: int
    modified: float
    error: str | None = None


def list_sessions(root: Path) -> list[SessionSummary]:
    """Every session folder under ``root``, most recently modified first.

    A folder that does not open is listed with its error instead of failing the list.
    """
    from gpusession.core.summary import accepted_unique_corpora

    root = Path(root)
    out: list[SessionSummary] = []
    if not root.is_dir():
        return out
    for folder in root.iterdir():
        if not folder.is_dir() or not (folder / SESSION_TOML).exists():
            continue
        try:
            validate_name(folder.name)
            s = Session.open(root, folder.name, recover=False)
            frame = s.results.read()
            mtime = max(
                (p.stat().st_mtime for p in folder.iterdir() if p.is_file()),
                default=folder.stat().st_mtime,
            )
            out.append(
                SessionSummary(
                    name=s.name,
                    gpu_model=s.package.gpu_model,
                    package=s.package,
                    runs=frame.height,
                    accepted_corpora=accepted_unique_corpora(frame),
                    modified=mtime,
                )
            )
        except (BadInput, OSError) as exc:  # one broken folder never hides the others
            out.append(
                SessionSummary(
                    name=folder.name,
                    gpu_model=None,
                    package=Package(),
                    runs=0,
                    accepted_corpora=0,
                    modified=folder.stat().st_mtime,
                    error=str(exc),
                )
            )
    out.sort(key=lambda s: s.modified, reverse=True)
    return out


def most_recent(root: Path) -> str | None:
    """Name of the most recently modified session that opens, or ``None``."""
    for s in list_sessions(root):
        if s.error is None:
            return s.name
    return None
