"""Atomic TOML files with a schema version (S7, H-10; design.md §Session folder).

Every TOML file gpusession writes carries ``schema = 1``. Writes go to a temporary file
in the same folder, are fsynced, then ``os.replace``d over the old file, so a crash at
any instant leaves either the old or the new file, never a truncated one. ``None``
values are omitted (an absent key means "not known"), because TOML has no null.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

from gpusession.core.errors import BadInput
from gpusession.core.textio import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

SCHEMA_VERSION = 1


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

    Raises:
        OSError: when the disk refuses; the old file at ``path`` is then left intact.
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # name the file meant, not the temporary one
        raise OSError(exc.errno, f"{exc.strerror}; nothing was written", str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.strerror:
            raise OSError(exc.errno, f"{exc.strerror}; the previous file is intact",
                          str(path)) from exc
        raise
    fsync_dir(path.parent)


def write_toml(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as TOML at ``path`` atomically, with ``schema = 1`` first (S7, H-10).

    Args:
        path: destination file; its folder must exist.
        data: the document; ``None`` values are omitted.
    """
    doc = {"schema": SCHEMA_VERSION}
    doc.update({k: v for k, v in strip_none(dict(data)).items() if k != "schema"})
    write_atomic_bytes(Path(path), tomli_w.dumps(doc).encode("utf-8"))


_LINE_RE = re.compile(r"line (\d+)")


def read_toml(path: Path, *, required: Iterable[str] = ()) -> dict[str, Any]:
    """Read a gpusession TOML file and check its schema and required keys.

    Args:
        path: the file.
        required: top-level keys that must be present (dotted ``a.b`` for nested).

    Returns:
        The parsed document.

    Raises:
        BadInput: unreadable, not UTF-8, a syntax error (with its line), a missing or
            newer ``schema`` (refused: written by a newer gpusession), a missing key.
    """
    path = Path(path)
    # A byte-order mark (some Windows editors add one) is not TOML; read_text ignores it
    # rather than let it be reported as a syntax error on line 1.
    text = read_text(path, must="TOML files must be UTF-8").text
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        lineno = getattr(exc, "lineno", None)
        if lineno is None:
            m = _LINE_RE.search(str(exc))
            lineno = int(m.group(1)) if m else None
        msg = getattr(exc, "msg", None) or str(exc).split(" (at ")[0]
        raise BadInput(f"TOML syntax error: {msg}", path=path, line=lineno) from None
    schema = doc.get("schema")
    if schema is None:
        raise BadInput("missing key; expected schema = 1", path=path, field="schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise BadInput(f"expected an integer, got {schema!r}", path=path, field="schema")
    if schema > SCHEMA_VERSION:
        raise BadInput(
            f"schema {schema} was written by a newer gpusession (this one reads schema "
            f"{SCHEMA_VERSION}); upgrade gpusession, nothing was changed",
            path=path,
            field="schema",
        )
    if schema < 1:
        raise BadInput(f"expected schema = 1, got {schema}", path=path, field="schema")
    for key in required:
        node: Any = doc
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise BadInput("missing required key", path=path, field=key)
            node = node[part]
    return doc
