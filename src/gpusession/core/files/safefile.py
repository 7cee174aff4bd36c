"""Private files and folders that are never written through a symbolic link.

Why it exists: a session folder holds order notes, amounts and the journal that repeats
them. Every file gpusession writes there is created mode 0600 and every session folder
0700, set explicitly (``os.open`` mode + ``fchmod``/``chmod``), not left to the umask;
an append or a new file opens with ``O_NOFOLLOW``, so a link planted in place of
``journal.jsonl`` or a worker spec never redirects a write elsewhere. Given the session
folder as ``root``, every folder between it and the file is opened without following a
link too (created 0700 when missing), so a linked ``runs/<experiment>/<variant>`` or
``logs/`` is refused as well, not only a linked file.
Who calls it: :mod:`gpusession.core.files.tomlio` (atomic writes), the journal and the
results CSV (appends), recovery, the runner (worker specs), the workers (run outputs,
``ranks.csv``), ``run --detach`` (its log), the validation archive, session creation.
POSIX: the flags that a platform lacks are left out (no ``O_NOFOLLOW`` on Windows).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import refuse_special

#: Mode of every file gpusession writes in a session folder.
FILE_MODE = 0o600
#: Mode of every session folder and folder gpusession creates inside one.
DIR_MODE = 0o700

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def link_refused(path: Path | str) -> BadInput:
    """The error for a write refused because ``path`` is a symbolic link.

    Returns:
        A :class:`BadInput` naming the file, to raise (exit 2).
    """
    return BadInput(
        "is a symbolic link; gpusession never writes through a link (replace it with "
        "the file itself); nothing was written",
        path=path,
    )


def refuse_link_or_special(path: Path | str, *, writing: bool = False) -> None:
    """Refuse a session file that is a symbolic link, a FIFO, a device or a folder.

    The one check of the files every command reads (``resultats-bruts.csv``,
    ``journal.jsonl``): never read through a link (:func:`link_refused`), never waited on
    (:func:`gpusession.core.files.textio.refuse_special`); a missing file passes. With
    ``writing``, the words of a write (an ``--out`` file, H-55).

    Raises:
        BadInput: naming the file and what it is.
    """
    if os.path.islink(path):
        raise link_refused(path)
    refuse_special(Path(path), writing=writing)


def _folder_refused(path: Path) -> BadInput:
    return BadInput("expected a folder here; nothing was written", path=path)


#: Whether folders can be walked by descriptor (POSIX); elsewhere each is checked by name.
_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd


def _check_folders(root: Path | str, parts: tuple[str, ...], *, create: bool) -> None:
    """:func:`_open_folder_fd` by name, where descriptors cannot walk folders (Windows)."""
    where = Path(root)
    for part in ("", *parts):
        where = where / part if part else where
        if os.path.islink(where):
            raise link_refused(where)
        if create and part and not os.path.lexists(where):
            os.mkdir(where, DIR_MODE)
        if os.path.lexists(where) and not os.path.isdir(where):
            raise _folder_refused(where)


def _open_folder_fd(root: Path | str, parts: tuple[str, ...], *, create: bool) -> int:
    """A descriptor of ``root/parts...``, no component below ``root`` followed if a link.

    ``root`` itself is opened without following a last-component link too (a session
    folder that is a link is refused). Missing folders are created mode 0700 when
    ``create``.

    Raises:
        BadInput: ``root`` or a folder on the way is a symbolic link or not a folder.
        OSError: any other refusal of the system (``FileNotFoundError`` when missing and
            not ``create``).
    """
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
    root = Path(root)

    def opened(name: str | Path, where: Path, dir_fd: int | None) -> int:
        try:
            return os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                if os.path.islink(where):
                    raise link_refused(where) from None
                raise _folder_refused(where) from None
            raise

    fd = opened(root, root, None)
    where = root
    try:
        for part in parts:
            where = where / part
            created = False
            if create:
                try:
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                    created = True
                except FileExistsError:
                    pass
            child = opened(part, where, fd)
            os.close(fd)
            fd = child
            if created:
                try:
                    os.fchmod(fd, DIR_MODE)  # 0700 set explicitly, not left to the umask
                except OSError:
                    pass
    except BaseException:
        os.close(fd)
        raise
    return fd


def _relative_parts(root: Path | str, path: Path | str) -> tuple[str, ...]:
    """``path``'s components below ``root`` (no ``..``); refused when it lies elsewhere."""
    try:
        rel = Path(os.path.normpath(path)).relative_to(os.path.normpath(root))
    except ValueError:
        raise BadInput(f"is not inside {root}; nothing was written", path=path) from None
    if ".." in rel.parts:
        raise BadInput(f"is not inside {root}; nothing was written", path=path)
    return rel.parts


def open_private(path: Path | str, flags: int, *, root: Path | str | None = None) -> int:
    """``os.open`` with ``O_NOFOLLOW``, mode 0600 set explicitly; returns the descriptor.

    Args:
        path: the file to open.
        flags: ``os.O_*`` flags (e.g. ``O_WRONLY | O_APPEND | O_CREAT``).
        root: the session folder ``path`` lies under: then no folder between ``root``
            and the file may be a link either, and missing ones are created mode 0700
            (with ``O_CREAT``). ``None``: only the file itself is checked.

    Returns:
        An open file descriptor (the caller closes it).

    Raises:
        BadInput: ``path`` (or, with ``root``, a folder on its way) is a symbolic link or
            not a folder; nothing written, the link's target untouched.
        OSError: any other refusal of the system.
    """
    dir_fd: int | None = None
    name: str | Path = path
    if root is not None:
        parts = _relative_parts(root, path)
        if not parts:
            raise BadInput("is a folder; expected a file; nothing was written", path=path)
        if _DIR_FD:
            dir_fd = _open_folder_fd(root, parts[:-1], create=bool(flags & os.O_CREAT))
            name = parts[-1]
        else:
            _check_folders(root, parts[:-1], create=bool(flags & os.O_CREAT))
    try:
        try:
            fd = os.open(name, flags | _NOFOLLOW | _CLOEXEC, FILE_MODE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP or (exc.errno == errno.EMLINK and _NOFOLLOW):
                raise link_refused(path) from None
            raise
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    try:
        os.fchmod(fd, FILE_MODE)
    except PermissionError:  # not our file (another user's, shared): leave its mode
        pass
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: Path | str, *, read: bool = False, root: Path | str | None = None) -> BinaryIO:
    """Open ``path`` to append bytes (created 0600 if missing), never through a link.

    Args:
        path: the file (journal, results CSV, ``ranks.csv``).
        read: also readable (``ab+``), e.g. to look at the last byte first.
        root: the session folder, as in :func:`open_private` (no linked folder between).

    Returns:
        A binary file object; close it (``with``).

    Raises:
        BadInput: ``path`` is a symbolic link.
        OSError: the system refused.
    """
    flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_APPEND | os.O_CREAT
    fd = open_private(path, flags, root=root)
    return os.fdopen(fd, "ab+" if read else "ab")


def write_private_bytes(path: Path | str, data: bytes, *, sync: bool = False,
                        root: Path | str | None = None) -> None:
    """Create or replace the contents of ``path`` (mode 0600), never through a link.

    For files a process writes once and another reads (a worker's spec); a session's
    data files go through :func:`gpusession.core.files.tomlio.write_atomic_bytes` instead.

    Args:
        path: the file.
        data: its whole contents.
        sync: fsync before returning.
        root: the session folder, as in :func:`open_private` (no linked folder between).

    Raises:
        BadInput: ``path`` (or, with ``root``, a folder on its way) is a symbolic link.
        OSError: the system refused.
    """
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, root=root)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        if sync:
            os.fsync(fh.fileno())


def make_private_dir(path: Path | str, *, parents: bool = False, root: Path | str | None = None) -> Path:
    """Create folder ``path`` mode 0700 if missing (set explicitly, not by the umask).

    A folder that already exists keeps its mode, unless gpusession made it a session
    folder (:func:`private_dir_mode`).

    Args:
        path: the folder.
        parents: create missing parents too (those with the system's default mode).
        root: the session folder ``path`` lies under: every folder from ``root`` down to
            ``path`` must be a real folder, not a link (refused), and each missing one is
            created mode 0700 (``parents`` is then implied).

    Returns:
        ``path`` as a :class:`Path`.

    Raises:
        BadInput: with ``root``, a folder on the way is a symbolic link or not a folder.
        OSError: the system refused (``FileExistsError`` when a file is in the way).
    """
    path = Path(path)
    if root is not None:
        if _DIR_FD:
            os.close(_open_folder_fd(root, _relative_parts(root, path), create=True))
        else:
            _check_folders(root, _relative_parts(root, path), create=True)
        return path
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=DIR_MODE)
    except FileExistsError:
        if not path.is_dir():
            raise
        return path
    private_dir_mode(path)
    return path


def private_dir_mode(path: Path | str) -> None:
    """Set folder ``path`` to mode 0700 (no error when the system refuses: not ours)."""
    try:
        os.chmod(path, DIR_MODE)
    except OSError:
        pass


def make_tree_private(folder: Path | str) -> int:
    """Bring what another writer put under ``folder`` to the session's modes: 0700 / 0600.

    For files gpusession did not open itself (a training subprocess, a library's
    ``savefig``, a corpus splitter): their mode came from the umask (0644, 0755). Links
    are never followed nor changed; anything that is neither a file nor a folder is left.

    Args:
        folder: a folder inside a session folder (``corpus/``, ``models/``).

    Returns:
        How many entries were changed (0 when ``folder`` is missing or a link).
    """
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        return 0
    changed = 0
    for here, dirs, files in os.walk(folder):  # os.walk never follows links by default
        for name, mode in [(here, DIR_MODE)] + [(os.path.join(here, f), FILE_MODE) for f in files]:
            try:  # opened without following a link, changed through the descriptor
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                st = os.fstat(fd)
                if (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and stat.S_IMODE(st.st_mode) != mode:
                    os.fchmod(fd, mode)
                    changed += 1
            except OSError:
                pass
            finally:
                os.close(fd)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(here, d))]
    return changed


def check_writable(path: Path | str, *, folder: bool = False) -> None:
    """Refuse now a file or folder that a later write would refuse.

    For a check *before* work whose results must be written (a run checks its CSV,
    journal, runs folder and worker specs before it measures anything): ``path`` must
    not be a symbolic link, must be of the right kind when it exists, and it (or, when
    missing, its nearest existing folder) must be writable. Nothing is written.

    Args:
        path: the file or folder a write will create, append to or replace.
        folder: ``path`` is a folder (else a file).

    Raises:
        BadInput: ``path`` is a symbolic link (:func:`link_refused`), the wrong kind of
            entry, or not writable (on a read-only disk, or not by this user:
            :func:`unwritable_words`); one line naming it.
    """
    path = Path(path)
    if path.is_symlink():
        raise link_refused(path)
    if path.exists():
        if folder != path.is_dir():
            raise BadInput(f"expected a {'folder' if folder else 'file'} here; nothing was written",
                           path=path)
        target = path
    else:
        target = path.parent
        while not target.exists() and target != target.parent:
            target = target.parent
    if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
        raise BadInput(f"{unwritable_words(target)}; nothing was written", path=target)


def unwritable_words(path: Path | str) -> str:
    """Why ``path`` cannot be written, in words: a read-only disk, else this user's rights.

    ``os.access`` says "no" alike for both; the cure differs (remount or copy the session
    elsewhere, against asking for the rights), so the words do too.
    """
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        return "is on a read-only disk (its file system is mounted read-only)"
    return "is not writable by this user"


__all__ = [
    "DIR_MODE", "FILE_MODE", "check_writable", "link_refused", "unwritable_words", "make_private_dir", "make_tree_private", "open_append",
    "open_private", "private_dir_mode", "refuse_link_or_special", "write_private_bytes",
]
