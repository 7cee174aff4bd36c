"""Atomic TOML files with a schema version (S7, H-10; design.md §Session folder).

Every TOML file gpusession writes carries ``schema = 1``. Writes go to a temporary file
in the same folder, are fsynced, then ``os.replace``d over the old file, so a crash at
any instant leaves either the old or the new file, never a truncated one. ``None``
values are omitted (an absent key means "not known"), because TOML has no null.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import tomli_w

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import toml_bound
from gpusession.core.files.safefile import FILE_MODE
from gpusession.core.files.schema import SCHEMAS, check_types
from gpusession.core.files.secrets import check_free_text
from gpusession.core.files.textio import refuse_special

# Reading lives in core.tomlread (light: `status` uses it); re-exported here.
from gpusession.core.files.tomlread import SCHEMA_VERSION as SCHEMA_VERSION
from gpusession.core.files.tomlread import read_toml as read_toml
from gpusession.core.files.tomlread import tomllib as tomllib


def strip_none(value: Any) -> Any:
    """Return ``value`` with every ``None`` removed from mappings and lists (H-10).

    Args:
        value: any TOML-able structure (dict, list, str, int, float, bool, datetime).

    Returns:
        The same structure without ``None`` entries; tuples become lists.
    """
    if isinstance(value, Mapping):
        return {str(k): strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [strip_none(v) for v in value if v is not None]
    return value


def fsync_dir(folder: Path) -> None:
    """Flush a directory to disk so a rename inside it survives a power cut (S7; POSIX only)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, replace.

    The temporary file has an unpredictable name (``tempfile.mkstemp``:
    ``.<name>.<random>.tmp``) and mode 0600, set explicitly, like the file it becomes.
    It is ``flock``-ed until it has replaced ``path``, so that
    :func:`clean_stale_tmp` removes only what an interrupted write left, never the temporary
    file of a write in progress. ``os.replace`` replaces a link at ``path`` by the file,
    it never writes through it.

    Raises:
        BadInput: ``path`` is a device, a FIFO, a socket or a folder: only a regular file
            (or a link, replaced itself) is ever replaced, ``--force`` or not; as root a
            write to ``/dev/null`` would otherwise leave a regular file there (H-55).
        OSError: when the disk refuses; the old file at ``path`` (if any) is then left
            intact and the message says so.
    """
    path = Path(path)
    refuse_special(path, writing=True)  # a device, a FIFO, a socket or a folder is never replaced (H-55)
    existed = os.path.lexists(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    except OSError as exc:  # name the file meant, not the temporary one
        raise OSError(exc.errno, f"{exc.strerror}; nothing was written", str(path)) from exc
    try:
        os.fchmod(fd, FILE_MODE)
        _lock(fd)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        os.close(fd)
        if isinstance(exc, OSError) and exc.strerror:
            kept = ("the previous file is intact" if existed
                    else "nothing was written (there was no previous file)")
            raise OSError(exc.errno, f"{exc.strerror}; {kept}", str(path)) from exc
        raise
    os.close(fd)  # only now: the lock held the temporary name until it was replaced
    fsync_dir(path.parent)


#: A temporary file younger than this may be one whose writer has not locked it yet.
_FRESH_S = 2.0
#: How an interrupted atomic write's temporary file ends (``.<name>.<random>.tmp``).
TMP_SUFFIX = ".tmp"


def _lock(fd: int, *, wait: bool = True) -> bool:
    """``flock`` ``fd`` exclusively; ``False`` when ``wait`` is off and it is held."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def is_tmp_name(name: str) -> bool:
    """Whether a file name is one of :func:`write_atomic_bytes`' temporary files (S7).

    Args:
        name: a file name (no folder), e.g. ``.order.toml.k2j4x.tmp``.

    Returns:
        ``True`` for ``.<name>.<random>.tmp``.
    """
    return name.startswith(".") and name.endswith(TMP_SUFFIX) and name.count(".") >= 3


def clean_stale_tmp(folder: Path) -> list[Path]:
    """Remove the temporary files that interrupted atomic writes left under ``folder``.

    Only gpusession's own (``.<name>.<random>.tmp``, as :func:`write_atomic_bytes`
    names them) that no live write holds (their ``flock`` is free, and they are over
    two seconds old: a writer locks its file an instant after creating it); links are
    never followed. Called by crash recovery when a session opens (S7).

    Args:
        folder: a session folder.

    Returns:
        The files removed (paths under ``folder``).
    """
    removed: list[Path] = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            if not is_tmp_name(name):
                continue
            p = Path(dirpath) / name
            try:
                fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                continue  # gone meanwhile, or a link: not ours to remove
            try:
                if time.time() - os.fstat(fd).st_mtime < _FRESH_S or not _lock(fd, wait=False):
                    continue  # a write in progress (it locks its file at once) holds it
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    continue  # it became the file it was written for
                removed.append(p)
            finally:
                os.close(fd)
    return removed


def write_toml(path: Path, data: Mapping[str, Any]) -> Written:
    """Write ``data`` as TOML at ``path`` atomically, with ``schema = 1`` first (S7, H-10).

    Args:
        path: destination file; its folder must exist.
        data: the document; ``None`` values are omitted.

    Returns:
        The bytes written and, for a file with a reader's shape (``session.toml``…), the
        document as that reader parsed it back (else ``None``): a caller keeps it instead
        of parsing the file again.

    Raises:
        BadInput: a string longer than 4 KiB or that looks like a secret
            (:func:`gpusession.core.files.secrets.check_free_text`), or a value the
            file's reader would refuse (:data:`gpusession.core.files.schema.SCHEMAS`: a
            run timeout of a year, a seed past 64 bits, H-41); nothing is written.
    """
    doc = {"schema": SCHEMA_VERSION}
    doc.update({k: v for k, v in strip_none(dict(data)).items() if k != "schema"})
    check_free_text(doc, path)  # length and secrets of every string, before writing
    text = tomli_w.dumps(doc)
    size = len(text.encode("utf-8"))
    if size > toml_bound(path):  # A4: never a file its own reader refuses (H-56)
        raise BadInput(f"would hold {size:,} bytes, past the {toml_bound(path):,} its reader accepts; "
                       "nothing was written", path=path)
    parsed = _check_as_read(Path(path), text)
    raw = text.encode("utf-8")
    write_atomic_bytes(Path(path), raw)
    return Written(raw, parsed)


class Written(NamedTuple):
    """What :func:`write_toml` wrote: the file's bytes and the document parsed back from them."""

    raw: bytes
    #: as the file's reader parses ``raw`` (``None``: a file without a reader's shape)
    doc: dict[str, Any] | None


def _check_as_read(path: Path, text: str) -> dict[str, Any] | None:
    """Refuse ``text`` when the reader of ``path`` would refuse it: the reader's own check (H-41).

    The document is parsed back as the reader parses it, and checked against the same
    shape and bounds (:func:`gpusession.core.files.schema.check_types`), so no writer (CLI
    or TUI) can store a value that locks the session out.

    Returns:
        The parsed document; ``None`` for a file without a reader's shape (not parsed).
    """
    spec = SCHEMAS.get(path.name)
    if spec is None:
        return None
    try:
        doc = tomllib.loads(text)
        check_types(doc, spec, path=path)
    except BadInput as exc:
        raise BadInput(f"{exc.message}; nothing was written", path=path.name,
                       field=exc.field) from None
    return doc


def write_toml_archive(path: Path, data: Mapping[str, Any]) -> None:
    """Write an archive of what a program produced (a validation report, V8) as TOML.

    Like :func:`write_toml` but without the free-text check: a report quotes the corpus
    as found (its IDs may be 64-hex digests), and refusing it would lose the archive.
    Nothing a person types goes through here.
    """
    doc = {"schema": SCHEMA_VERSION}
    doc.update({k: v for k, v in strip_none(dict(data)).items() if k != "schema"})
    write_atomic_bytes(Path(path), tomli_w.dumps(doc).encode("utf-8"))
