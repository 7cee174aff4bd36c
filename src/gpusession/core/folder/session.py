"""Session folders: create, open, list, rename; atomic TOML; journal; crash recovery.

A session is one folder under the sessions root (``./sessions`` by default, or
``--sessions-dir`` / ``GPUSESSION_HOME``), named by a safe slug; the folder name *is*
the session name, so a folder renamed by hand still opens (rename-safe). Layout
(design.md §Session folder)::

    sessions/<name>/
      session.toml  checklist.toml  order.toml  journal.jsonl  resultats-bruts.csv
      runs/  validation/

Every TOML write is atomic (S7, H-10); the journal (:mod:`gpusession.core.folder.journal`) and
the CSV are append-only and fsynced per line/row. On open, what a crash left behind is
recovered and recorded as an incident (S7, :mod:`gpusession.core.folder.recovery`).
"""

from __future__ import annotations

import fnmatch
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput, Failure
from gpusession.core.files.names import (
    CHECKLIST_TOML,
    DATA_FILES,
    JOURNAL,
    ORDER_TOML,
    RESULTS_CSV,
    SESSION_TOML,
)
from gpusession.core.files.names import RUN_LOCK as RUN_LOCK  # imported from here by callers
from gpusession.core.files.safefile import DIR_MODE, private_dir_mode, refuse_link_or_special
from gpusession.core.files.schema import SCHEMAS as FILE_SCHEMAS
from gpusession.core.files.schema import Spec
from gpusession.core.files.secrets import mask_free_text
from gpusession.core.files.sessionname import check_characters, check_name
from gpusession.core.files.tomlio import read_toml, write_toml
from gpusession.core.folder.caches import is_state_file
from gpusession.core.folder.package import Package, check_time_range
from gpusession.core.folder.session_journal import SessionJournal
from gpusession.core.folder.session_toml import (
    read_checked,
    read_session_toml,
    write_session_toml,
)

if TYPE_CHECKING:  # typed records load when the journal is written, not at start-up
    pass


#: The shape of each hand-editable file, checked whenever it is read.
#: The reader's shapes by file name, the ones the writer checks too (H-41).
SCHEMAS: dict[str, Spec] = FILE_SCHEMAS


#: How long a command waits for another process's read-modify-write of the same session
#: (seconds) before it gives up with a message; each such write takes milliseconds.
LOCK_TIMEOUT_S = 10.0
_LOCK_POLL_S = 0.02


class _Held:
    """This process's hold on one folder's lock: its descriptor and nesting depth."""

    def __init__(self) -> None:
        self.guard = threading.RLock()  # threads of this process, re-entrant per thread
        self.fd: int | None = None
        self.depth = 0


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.Lock()


def lock_timed_out(folder: Path, timeout_s: float, what: str) -> Failure:
    """The error for a folder lock not taken within ``timeout_s`` seconds.

    Returns:
        A :class:`Failure` (exit 1: not the person's input), to raise.
    """
    return Failure(
        f"session {folder.name}: another gpusession process has held the session's lock "
        f"for over {timeout_s:g} s, so {what} was not done and nothing was changed; "
        "try again when that process is done"
    )


@contextmanager
def folder_lock(folder: Path, *, what: str = "the change",
                timeout_s: float | None = None) -> Iterator[None]:
    """Hold the session folder's exclusive lock while a read-modify-write runs (S7).

    An ``flock`` on the folder itself (no lock file left in it), so two processes -- two
    shells, a run and the TUI -- never lose each other's update of ``session.toml``,
    ``checklist.toml`` or ``order.toml``. Re-entrant in one thread of one process (a
    nested hold is free); other threads of the process wait as other processes do.
    POSIX only; elsewhere threads of one process are still serialised.

    Args:
        folder: the session folder.
        what: what waits, for the message (``"adding the checklist item"``).
        timeout_s: how long to wait; default :data:`LOCK_TIMEOUT_S`.

    Raises:
        Failure: not taken within the timeout (exit 1); nothing was changed.
    """
    limit = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + limit
    key = os.path.abspath(folder)
    with _HELD_GUARD:
        held = _HELD.setdefault(key, _Held())
    if not held.guard.acquire(timeout=max(limit, 0.0)):
        raise lock_timed_out(Path(folder), limit, what)
    try:
        if held.depth == 0:
            held.fd = _flock(Path(folder), deadline, limit, what)
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0 and held.fd is not None:
                os.close(held.fd)  # closing releases the lock
                held.fd = None
    finally:
        held.guard.release()


def _flock(folder: Path, deadline: float, limit: float, what: str) -> int | None:
    """Open ``folder`` and ``flock`` it before ``deadline``; the descriptor holds the lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise lock_timed_out(folder, limit, what) from None
                time.sleep(_LOCK_POLL_S)
    except BaseException:
        os.close(fd)
        raise


#: The gpusession commands: a session of that name would read like the command
#: (``gpusession list``). Kept here since core imports no commands; a test compares it
#: with the parser's choices.
COMMAND_NAMES = frozenset({
    "agent", "approve", "check-host", "checklist", "compare", "completion", "cost", "demo", "experiment", "export", "list",
    "deliverables", "manifest", "new", "open", "order", "package", "pull", "rates", "reject", "report", "run", "show", "status",
    "validate", "verify-copy",
})
#: Names Windows reserves for devices, with or without an extension (``nul.txt``).
#: The one command name a session may have: ``gpusession demo`` makes the session ``demo``.
_OWN_SESSION_NAMES = frozenset({"demo"})
WINDOWS_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL"}
                             | {f"{p}{i}" for p in ("COM", "LPT") for i in range(1, 10)})


def validate_name(name: str, *, new: bool = False) -> str:
    """Check that ``name`` is a safe slug: letters, digits, ``.``, ``_``, ``-``.

    Args:
        name: the session name (its folder's name).
        new: the name is for a session being created or renamed: also refuse a name
            that starts with ``.`` (a hidden folder), ends with ``.`` or a space
            (Windows drops them), is reserved on Windows (``CON``, ``nul.txt``,
            ``COM1``…, any case) or is a gpusession command (``list``, any case; not
            ``demo``, the demo's own session).
            Why: the folder must be valid wherever the session is copied.

    Raises:
        BadInput: empty, longer than 100 characters, ``.``/``..``, containing ``..``,
            ``/`` or any other character, and for a new name the cases above; one line
            saying which and why.
    """
    check_name(name)  # the checks `status` makes too, in the same words
    if new:
        _check_new_name(name)
    check_characters(name)
    return name


def _check_new_name(name: str) -> None:
    """The extra refusals of :func:`validate_name` for a new name."""
    if name.startswith("."):
        raise BadInput(f"session name {name!r} starts with '.', which hides its folder (ls, "
                       "file managers); start with a letter or digit", field="name")
    if name.endswith((".", " ")):
        raise BadInput(f"session name {name!r} ends with a dot or a space, which Windows drops "
                       "when the folder is copied there; end with a letter or digit", field="name")
    stem = name.split(".")[0].strip().upper()
    if stem in WINDOWS_RESERVED:
        raise BadInput(f"session name {name!r} is a device name reserved on Windows ({stem}); "
                       "the folder could not be copied there; choose another name", field="name")
    if name.lower() in COMMAND_NAMES - _OWN_SESSION_NAMES:
        raise BadInput(f"session name {name!r} is a gpusession command (gpusession "
                       f"{name.lower()}); choose another name", field="name")


def refuse_case_twin(root: Path, name: str, *, renaming: str | None = None) -> None:
    """Refuse a new session name that differs only by case from an existing one.

    On a case-insensitive disk (macOS, Windows, some mounts) ``Trial`` and ``trial``
    are one folder: the second would open, or overwrite, the first.

    Args:
        root: the sessions root.
        name: the name asked for.
        renaming: the session being renamed (its own name is no twin).

    Raises:
        BadInput: naming the existing session.
    """
    root = Path(root)
    if not root.is_dir():
        return
    folded = name.casefold()
    for entry in root.iterdir():
        other = entry.name
        if other != name and other != renaming and other.casefold() == folded:
            raise BadInput(
                f"session name {name!r} differs only by case from the existing session "
                f"{other!r} (one folder on a case-insensitive disk); choose another name",
                field="name",
            )


#: Per output, the names of its own earlier files in a session folder, which ``--force``
#: may replace there (``report.md``, ``report-2.md``; ``manifest.csv``, ``manifest-2.csv``).
OWN_OUTPUTS = {"report": ("report*.md", "report*.html", "report*-durations.png", "report*-memory.png"),
               "manifest": ("manifest*.csv",)}


def linked_session(folder: Path) -> BadInput:
    """The error for a session folder that is a symbolic link.

    gpusession never follows such a link: creating through it would make (and chmod) a
    folder elsewhere, and a second link to the same folder would be a second session.

    Returns:
        A :class:`BadInput` naming the link and its target, to raise (exit 2).
    """
    try:
        target = os.readlink(folder)
    except OSError:
        target = "?"
    return BadInput(
        f"is a symbolic link to {target}; gpusession does not open or create a session "
        "through a link (move the folder itself here, or point --sessions-dir at its "
        "parent); nothing was changed",
        path=folder,
    )


def _session_of(path: Path) -> Path | None:
    """The innermost session folder holding ``path`` (a folder with ``session.toml``)."""
    for folder in path.parents:
        if (folder / SESSION_TOML).is_file():
            return folder
    return None


def refuse_session_data(target: Path, *, what: str = "output") -> None:
    """Refuse to write an output (report, manifest) over a folder or a session's files.

    ``--force`` overwrites an earlier output, never a session's own files: nothing that
    exists inside a session folder (run outputs, validation reports, a corpus,
    ``summary.json``…) except the output's own earlier files at its top
    (:data:`OWN_OUTPUTS`: ``report*.md``, its HTML page and charts, ``manifest*.csv``), and never ``session.toml``,
    ``order.toml``, ``checklist.toml``, ``journal.jsonl``, ``resultats-bruts.csv`` even
    when missing (S7). ``target`` is judged both as written (its folder's real
    path and its own name) and as resolved through links, so a link into a session is
    refused too.

    Args:
        target: the file ``--out`` names.
        what: ``"report"`` or ``"manifest"`` (names the output and its own files).

    Raises:
        BadInput: ``target`` is a folder, or a session's file as above; nothing written.
    """
    target = Path(target)
    if target.is_dir():
        raise BadInput(f"is a folder; expected the {what} file to write", path=target)
    own = OWN_OUTPUTS.get(what, ())
    as_named = target.absolute().parent.resolve() / target.name
    for path in dict.fromkeys((as_named, target.resolve())):
        session = _session_of(path)
        if session is None:
            continue
        if path.name in DATA_FILES and path.parent == session:
            raise BadInput(
                f"is session data; the {what} never replaces it, even with --force; choose "
                "another --out",
                path=target,
            )
        if not os.path.lexists(path):
            continue
        if path.parent == session and any(fnmatch.fnmatchcase(path.name, o) for o in own):
            continue
        shown = "" if path == as_named else f" (it leads to {path})"
        raise BadInput(
            f"is a file of session {session.name!r}{shown}; the {what} never replaces a "
            "session's file, even with --force; choose another --out",
            path=target,
        )


class Session(SessionJournal):
    """One session folder. Use :meth:`create` or :meth:`open`, not the constructor.

    Attributes:
        folder: the session folder.
        name: the session name (the folder's name).
        data: the parsed ``session.toml``.
    """

    def __init__(self, folder: Path, data: dict[str, Any]) -> None:
        """Wrap an already-checked folder and its parsed ``session.toml``."""
        self.folder = Path(folder)
        self.name = self.folder.name
        self.data = data
        #: What the last :meth:`open` recovered after a crash, one sentence each (S7).
        self.recovered: list[str] = []
        #: Per file, what :meth:`read_doc` hid because it looked like a secret.
        self.hidden: dict[str, list[str]] = {}

    # -- paths -----------------------------------------------------------------
    @property
    def session_toml(self) -> Path:
        """``session.toml``: package, experiments, observed environment."""
        return self.folder / SESSION_TOML

    @property
    def checklist_toml(self) -> Path:
        """``checklist.toml``: done/when/note per item (S1)."""
        return self.folder / CHECKLIST_TOML

    @property
    def order_toml(self) -> Path:
        """``order.toml``: the order, payment orders and the timeline (S2, S3)."""
        return self.folder / ORDER_TOML

    @property
    def runs_dir(self) -> Path:
        """``runs/``: every run's outputs (V8)."""
        return self.folder / "runs"

    @property
    def validation_dir(self) -> Path:
        """``validation/``: the validation reports and their lists (V2, V8)."""
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
            BadInput: unsafe name, a session of that name already exists (it is
                never overwritten), or ``root/name`` is a symbolic link.
        """
        validate_name(name, new=True)
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise BadInput("the sessions root is a file; expected a folder (--sessions-dir)", path=root)
        root.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new root is private whatever the umask
        folder = root / name
        refuse_case_twin(root, name)
        if folder.is_symlink():  # never made, nor chmod-ed, through a link
            raise linked_session(folder)
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            # An empty folder is what a create cut short (disk full, power loss) leaves.
            if not folder.is_dir():
                raise BadInput(f"exists and is not a folder, so it cannot be session {name!r}; choose "
                               "another name or move that file away; nothing was changed", path=folder) from None
            if any(folder.iterdir()):
                raise BadInput(f"session {name!r} already exists; nothing was changed", path=folder) from None
        private_dir_mode(folder)  # 0700 set explicitly, not left to the umask
        now = now or utcnow()
        pkg = package or Package()
        data: dict[str, Any] = {"name": name, "created_at": now, "package": pkg.to_toml()}
        try:
            write_toml(folder / SESSION_TOML, data)
            write_toml(folder / CHECKLIST_TOML, {"items": {}})
            write_toml(folder / ORDER_TOML, {})
            session = cls(folder, read_toml(folder / SESSION_TOML))
            from gpusession.core.events.actions import SessionCreatedRecord

            session.journal(SessionCreatedRecord(package=pkg.to_toml()))
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
    def open(cls, root: Path, name: str, *, recover: bool = True, check_files: bool = True) -> Session:
        """Open an existing session, check its files and recover after a crash (S7).

        Args:
            root: the sessions folder.
            name: the session's name.
            recover: recover what a crash left behind (S7).
            check_files: also check ``checklist.toml``, ``order.toml`` and the results
                CSV; ``False`` for the TUI, whose panes each say what is wrong with their
                own file (one bad file must not lock every pane).

        Raises:
            BadInput: unsafe name, no such session, a session folder that is a symbolic
                link (:func:`linked_session`), a results CSV or journal that is a link
                or a FIFO, device or folder (never read), an unreadable or newer-schema
                ``session.toml``, a missing required key, a bad results CSV header.
        """
        validate_name(name)
        folder = Path(root) / name
        if folder.is_symlink():
            raise linked_session(folder)
        if not folder.is_dir():
            raise BadInput(f"no session {name!r} in {root}", path=folder)
        for own in (RESULTS_CSV, JOURNAL):  # read by recovery and every pane (as `gpusession status`)
            refuse_link_or_special(folder / own)
        data, hidden = read_session_toml(folder / SESSION_TOML)
        created = data.get("created_at")
        if not isinstance(created, datetime) or created.tzinfo is None:
            raise BadInput(
                f"expected a date-time with UTC offset, e.g. 2026-11-29T14:00:00Z, got {created!r}",
                path=folder / SESSION_TOML,
                field="created_at",
            )
        check_time_range(created, field="created_at", path=folder / SESSION_TOML)
        session = cls(folder, data)
        session.hidden[SESSION_TOML] = hidden
        Package.from_toml(data.get("package", {}), session.session_toml)
        if check_files:
            for extra in (CHECKLIST_TOML, ORDER_TOML):
                if (folder / extra).exists():
                    read_checked(folder / extra)
            session.results.check()
        if recover:
            private_dir_mode(folder)  # a session made by an older version: 0700 too
            try:
                if session.needs_recovery():  # the machinery loads only when it has work
                    session.recovered = session.recover()
            except (OSError, Failure):
                # A read-only or full disk, or the lock held by another process for long:
                # open to read; recovery waits for the next writable open.
                pass
            except BadInput:  # a bad results CSV, unchecked: said in its pane
                if check_files:
                    raise
        return session

    @classmethod
    def open_or_create(cls, root: Path, name: str, *, package: Package | None = None) -> Session:
        """:meth:`open` the session when its folder exists, else :meth:`create` it.

        Raises:
            BadInput: as :meth:`open` or :meth:`create`.
        """
        if (Path(root) / name).is_dir():
            return cls.open(root, name)
        return cls.create(root, name, package=package)

    def rename(self, new_name: str) -> Session:
        """Rename the folder; refuses an existing target. Returns the reopened session."""
        validate_name(new_name, new=True)
        refuse_case_twin(self.folder.parent, new_name, renaming=self.name)
        target = self.folder.parent / new_name
        if target.exists():
            raise BadInput(f"session {new_name!r} already exists; nothing was changed", path=target)
        os.rename(self.folder, target)
        session = Session.open(target.parent, new_name, recover=False)
        session.update(lambda data: data.__setitem__("name", new_name))
        from gpusession.core.events.actions import SessionRenamedRecord

        session.journal(SessionRenamedRecord(old=self.name, new=new_name))
        return session

    # -- session.toml ----------------------------------------------------------
    @property
    def package(self) -> Package:
        """The ``[package]`` table as a value (K1, S6).

        Raises:
            BadInput: a value of the wrong type in ``session.toml``.
        """
        return Package.from_toml(self.data.get("package", {}), self.session_toml)

    def set_package(self, package: Package) -> None:
        """Store the package and write ``session.toml`` atomically.

        Raises:
            BadInput: a value the next open would refuse (lots, days, GPU model); nothing
                is written then, so no writer (CLI or TUI) can lock a session out.
        """
        Package.from_toml(package.to_toml())
        self.update(lambda data: data.__setitem__("package", package.to_toml()))
        from gpusession.core.events.actions import PackageSetRecord

        self.journal(PackageSetRecord(package=package.to_toml()))

    def save(self) -> None:
        """Write ``session.toml`` atomically (S7) from this object's ``data``.

        A process that holds the session for long (a run, the TUI) should prefer
        :meth:`update`: ``save`` writes back everything it read, including what another
        process changed in between.
        """
        with self.locked("saving session.toml"):
            self.data, self.hidden[SESSION_TOML] = write_session_toml(self.session_toml, self.data)

    def locked(self, what: str = "the change") -> AbstractContextManager[None]:
        """The session folder's lock, for a read-modify-write of its files (S7).

        ``with session.locked("adding the checklist item"): read; change; write``. Every
        read-modify-write of ``session.toml``, ``checklist.toml`` and ``order.toml`` holds
        it, so two processes never lose each other's update.

        Args:
            what: what waits, named in the message when the lock cannot be taken.

        Raises:
            Failure: another process held the lock for over :data:`LOCK_TIMEOUT_S`
                seconds (exit 1); nothing was changed.
        """
        return folder_lock(self.folder, what=what)

    def update(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Read ``session.toml`` afresh, apply ``change``, write it atomically (S7).

        All under the session folder's lock (:meth:`locked`): two processes (a run saving
        its environment, ``gpusession package`` in another pane) then never undo each
        other's changes. ``data`` is the written document.

        Raises:
            Failure: the lock could not be taken in time (nothing written).
        """
        with self.locked("saving session.toml"):
            data, self.hidden[SESSION_TOML] = read_session_toml(self.session_toml)
            change(data)
            self.data, self.hidden[SESSION_TOML] = write_session_toml(self.session_toml, data)

    def reload(self) -> None:
        """Read ``session.toml`` again into ``data`` (another process may have written it).

        Raises:
            BadInput: unreadable, or without ``name`` / ``created_at``.
        """
        self.data, self.hidden[SESSION_TOML] = read_session_toml(self.session_toml)

    # -- other TOML documents --------------------------------------------------
    def read_doc(self, filename: str) -> dict[str, Any]:
        """Read ``checklist.toml`` / ``order.toml`` (or another TOML of the folder).

        The kinds of its values are checked (:func:`read_checked`), and a value that looks
        like a secret (a hand-pasted seed phrase or key) is replaced by
        :data:`gpusession.core.files.secrets.HIDDEN`: it is never shown, and never written back
        by the next save. What was hidden is in :attr:`hidden` (one warning per value).

        Raises:
            BadInput: unreadable, a syntax error, a value of the wrong kind.
        """
        path = self.folder / filename
        if not path.exists():
            self.hidden.pop(filename, None)
            return {"schema": 1}
        doc, warnings = mask_free_text(read_checked(path), path)
        self.hidden[filename] = warnings
        return dict(doc)

    def write_doc(self, filename: str, data: Mapping[str, Any]) -> None:
        """Write a TOML document of the folder atomically (S7, H-10).

        A write that depends on what was read holds :meth:`locked` around the read and
        this write (re-entrant: taken here too, free when already held).
        """
        with self.locked(f"writing {filename}"):
            write_toml(self.folder / filename, data)



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
    #: Where a session folder that is a symbolic link leads; such a folder is not opened.
    link_target: str | None = None


#: What ``list`` needs of one session folder without opening it: its package, result rows
#: and accepted corpora (:func:`gpusession.core.retrieval.status.list_facts`); raises
#: ``BadInput``/``OSError`` where it does not read.
ListFacts = Callable[[Path], "tuple[Package, int, int]"]


def list_sessions(root: Path, facts: ListFacts | None = None) -> list[SessionSummary]:
    """Every session folder under ``root``, most recently modified first.

    A folder that does not open is listed with its error instead of failing the list;
    a folder that is a symbolic link is listed with its target and an error, never
    opened (a second link to one folder is no second session).

    Args:
        root: the sessions folder.
        facts: read each session's line from the state ``status`` keeps (O(1) in the
            session's size, A5); where it refuses, the session is opened and its CSV read
            as without it, so a refusal is worded as opening words it. ``None``: opened.
    """
    root = Path(root)
    out: list[SessionSummary] = []
    if not root.is_dir():
        return out
    for folder in root.iterdir():
        if not folder.is_dir() or not (folder / SESSION_TOML).exists():
            continue
        if folder.is_symlink():
            err = linked_session(folder)
            out.append(SessionSummary(name=folder.name, gpu_model=None, package=Package(), runs=0,
                                      accepted_corpora=0, modified=folder.lstat().st_mtime,
                                      error=err.message, link_target=os.readlink(folder)))
            continue
        try:
            validate_name(folder.name)
            got = _listed(folder, facts)
            if got is None:
                from gpusession.core.records.summary import (
                    accepted_unique_corpora,  # with the tables: not at start-up
                )

                s = Session.open(root, folder.name, recover=False)
                frame = s.results.read()
                got = (s.package, frame.height, accepted_unique_corpora(frame))
            mtime = max(
                (p.stat().st_mtime for p in folder.iterdir() if p.is_file() and not is_state_file(p.name)),
                default=folder.stat().st_mtime,
            )
            out.append(
                SessionSummary(
                    name=folder.name,
                    gpu_model=got[0].gpu_model,
                    package=got[0],
                    runs=got[1],
                    accepted_corpora=got[2],
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


def _listed(folder: Path, facts: ListFacts | None) -> tuple[Package, int, int] | None:
    """``facts(folder)``; ``None`` without it or where it refuses (the session is then opened)."""
    if facts is None:
        return None
    try:
        return facts(folder)
    except (BadInput, OSError):
        return None


def most_recent(root: Path) -> str | None:
    """Name of the most recently modified session that opens, or ``None``."""
    for s in list_sessions(root):
        if s.error is None:
            return s.name
    return None
