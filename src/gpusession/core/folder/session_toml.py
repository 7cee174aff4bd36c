"""``session.toml`` read once per content and written at the cost of what changed (S7, A4, A5).

Source: A4, A5, H-41, H-47, H-78. Why: a month-long session's ``session.toml`` holds
500 experiments (about 840 kB); parsing and checking it whole cost 0.4 s, and the
writer's own check (A4: the document parsed back as its reader parses it) as much again
at every write. Read by :class:`gpusession.core.folder.session.Session` (open, reload,
update, save) and by the runner's limit (:func:`session_toml_view`).

- Reading (:func:`read_session_toml`): the checked document is kept beside the bytes it
  was parsed from, in this process, and in the sealed ``session-toml.json``
  (:mod:`gpusession.core.folder.caches`) under the SHA-256 of those bytes; a hand edit
  changes the bytes and is read and checked afresh (H-47).
- Writing (:func:`write_session_toml`): the file is the top-level keys and tables, then
  ``[experiments.<id>]`` tables. An experiment whose table equals the one of the document
  this writer last wrote and checked whole or by parts (kept with ``written``) is
  serialised again unchecked -- its value already passed the writer's checks and its
  reader's; every other part (the top level, each new or changed experiment) passes
  the free-text checks, is serialised, parsed back and checked against the reader's
  shape (:func:`gpusession.core.files.tomlio.write_toml`'s checks, by part). TOML tables
  with distinct headers compose, so the file reads as the parts read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from functools import cached_property, partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tomli_w

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import toml_bound
from gpusession.core.files.schema import SCHEMAS, check_types
from gpusession.core.files.secrets import check_free_text, mask_free_text
from gpusession.core.files.tomlio import (
    SCHEMA_VERSION,
    Written,
    read_toml,
    strip_none,
    tomllib,
    write_atomic_bytes,
    write_toml,
)
from gpusession.core.folder.caches import from_json_value, seal_session_doc, sealed_session_doc

#: The table whose entries are written and checked one by one (the rest is the top level).
PARTS_KEY = "experiments"


def read_checked(path: Path, *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """Read a session file and check the kinds of its values (:mod:`gpusession.core.files.schema`).

    Args:
        path: ``session.toml``, ``order.toml`` or ``checklist.toml`` of a session (another
            name is read without a type check).
        required: top-level keys that must be present.

    Returns:
        The parsed document.

    Raises:
        BadInput: unreadable, larger than 1 MiB, nested past 64 levels, a text field
            longer than the notes' bound, a syntax error, or a value of the wrong kind
            (``order.toml: events: expected a list of tables ([[events]]), got the number 5``).
    """
    doc = read_toml(path, required=required)  # size-, depth- and field-bounded (H-39, H-48)
    spec = SCHEMAS.get(Path(path).name)
    if spec is not None:
        check_types(doc, spec, path=path)
    return doc


@dataclass(frozen=True)
class KeptDoc:
    """One ``session.toml`` as parsed and checked, beside the bytes it was parsed from."""

    raw: bytes
    #: makes the kept document, once, when it is first used (:attr:`doc`)
    made: Callable[[], dict[str, Any]]
    hidden: tuple[str, ...]
    #: the document passed this writer's checks (written by :func:`write_session_toml`),
    #: not only its reader's: its experiments may be written again unchecked
    written: bool = False

    @cached_property
    def doc(self) -> dict[str, Any]:
        """The kept document (shared: a caller copies it, or only reads it)."""
        return self.made()


#: Per absolute path of a ``session.toml``, the last checked document (this process).
SESSION_DOCS: dict[str, KeptDoc] = {}


def read_session_toml(path: Path) -> tuple[dict[str, Any], list[str]]:
    """``session.toml`` checked (:func:`read_checked`), with secret-looking values hidden.

    A seed phrase or key pasted into the file by hand is replaced by
    :data:`gpusession.core.files.secrets.HIDDEN`, so it is neither used, nor shown, nor
    written back by the next update.

    Parsed once per content: the checked document is kept beside the file's bytes and
    served again (a copy) while the file holds the same bytes -- in this process, so a run
    boundary of a 500-experiment session reads ~1 MB instead of parsing it, and across
    processes in the sealed ``session-toml.json`` under the SHA-256 of those bytes
    (:func:`gpusession.core.folder.caches.sealed_session_doc`, from 64 KiB), so opening a
    month-long session does not parse it again (A5). A hand edit changes the bytes and is
    read and checked afresh (H-47); a state whose seal fails reads as absent (H-78).
    :func:`write_session_toml` keeps what it wrote.

    Returns:
        The document (the caller's own copy) and one warning per hidden value.

    Raises:
        BadInput: as :func:`read_checked`, or without ``name`` / ``created_at``.
    """
    key = os.path.abspath(path)
    before = raw_or_none(path)
    kept = SESSION_DOCS.get(key)
    if kept is not None and before is not None and kept.raw == before:
        return own_copy(kept.doc), list(kept.hidden)
    sealed = sealed_session_doc(Path(path), before) if before is not None else None
    if sealed is not None and before is not None:  # checked when these bytes were last read
        # the caller gets the one conversion; a later read in this process converts the
        # state's JSON form again (an open copies a 500-experiment document once, A5)
        SESSION_DOCS[key] = KeptDoc(before, partial(from_json_value, sealed.as_json), tuple(sealed.hidden),
                                    sealed.written)
        return sealed.doc, sealed.hidden
    doc, hidden = mask_free_text(read_checked(path, required=("name", "created_at")), path)
    doc = dict(doc)
    if before is not None and raw_or_none(path) == before:  # the bytes parsed are the bytes kept
        keep_session_doc(key, before, doc, hidden)
        seal_session_doc(Path(path), before, doc, hidden)
    return own_copy(doc), list(hidden)


def session_toml_view(path: Path) -> Mapping[str, Any]:
    """``session.toml`` as :func:`read_session_toml` reads it, shared, for a caller that only reads it.

    Why: the runner reads the limit at every run boundary (D1); a copy of a
    500-experiment document each time grew with the session (A5). The caller must not
    change what it gets (it is the document kept for every later read).

    Raises:
        BadInput: as :func:`read_session_toml`.
    """
    key = os.path.abspath(path)
    kept = SESSION_DOCS.get(key)
    if kept is None or kept.raw != raw_or_none(path):
        return MappingProxyType(read_session_toml(path)[0])
    return MappingProxyType(kept.doc)


def write_session_toml(path: Path, data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Write ``data`` as ``session.toml`` atomically (S7), checked at the cost of what changed (A4, A5).

    The experiments equal to those of the document this writer last wrote here (this
    process, or the sealed state of another) are serialised again unchecked; the top
    level and every other experiment are checked as :func:`write_toml` checks a whole
    document (free text, then parsed back and held to the reader's shape, H-41). Without
    such a document (a hand edit, a secret hidden on reading, no ``[experiments]`` of
    tables) the whole document is written by :func:`write_toml`. What was written is kept
    for the next read, here and in the sealed state (the next process's open).

    Args:
        path: the ``session.toml``.
        data: the document; ``None`` values are omitted, ``schema`` is set.

    Returns:
        The document as its reader reads the file (secret-looking values hidden), and
        one warning per hidden value.

    Raises:
        BadInput: a value the reader would refuse, a text past its bound or that looks
            like a secret, a file past the reader's size bound; nothing is written.
    """
    path = Path(path)
    kept = SESSION_DOCS.get(os.path.abspath(path))
    base = kept.doc.get(PARTS_KEY) if kept is not None and kept.written and not kept.hidden else None
    parts = data.get(PARTS_KEY)
    if not isinstance(base, dict) or not _tables(parts):
        return _keep_written(path, write_toml(path, data))
    assert isinstance(parts, dict)
    top = strip_none({k: v for k, v in data.items() if k not in ("schema", PARTS_KEY)})
    top = {"schema": SCHEMA_VERSION} | top
    check_free_text(top, path)
    segments = _segments(parts, base)
    for changed, segment in segments:
        if changed:
            check_free_text({PARTS_KEY: segment}, path)
    texts = [tomli_w.dumps(top)] + [tomli_w.dumps({PARTS_KEY: segment}) for _, segment in segments]
    text = "\n".join(texts)
    raw = text.encode("utf-8")
    if len(raw) > toml_bound(path):  # A4: never a file its own reader refuses (H-56)
        raise BadInput(f"would hold {len(raw):,} bytes, past the {toml_bound(path):,} its reader accepts; "
                       "nothing was written", path=path)
    doc, hidden = mask_free_text(_parsed_back(path, texts[0]), path)
    read: dict[str, Any] = {}
    for (changed, segment), seg_text in zip(segments, texts[1:], strict=True):
        if changed:
            back, more = mask_free_text(_parsed_back(path, seg_text), path)
            segment, hidden = back[PARTS_KEY], hidden + more
        read.update(segment)
    doc = dict(doc) | {PARTS_KEY: read}
    write_atomic_bytes(path, raw)
    return _keep(path, raw, doc, hidden)


def _tables(parts: Any) -> bool:
    """Whether ``parts`` is a non-empty table of tables (the experiments), written by parts."""
    return isinstance(parts, dict) and bool(parts) and all(isinstance(v, dict) for v in parts.values())


def _segments(parts: dict[str, Any], base: dict[str, Any]) -> list[tuple[bool, dict[str, Any]]]:
    """``parts`` in order, cut where an entry starts or stops being equal to ``base``'s: ``(changed, entries)``.

    An unchanged entry is ``base``'s own value (already checked); a changed one has its
    ``None`` values omitted.
    """
    out: list[tuple[bool, dict[str, Any]]] = []
    for key, value in parts.items():
        old = base.get(key)
        changed = old is None or value != old
        if not out or out[-1][0] != changed:
            out.append((changed, {}))
        out[-1][1][key] = strip_none(value) if changed else old
    return out


def _parsed_back(path: Path, text: str) -> dict[str, Any]:
    """``text`` parsed as the reader parses it and held to its shape (H-41); refused as :func:`write_toml` refuses."""
    try:
        doc = tomllib.loads(text)
        check_types(doc, SCHEMAS[path.name], path=path)
    except BadInput as exc:
        raise BadInput(f"{exc.message}; nothing was written", path=path.name, field=exc.field) from None
    return doc


def _keep_written(path: Path, written: Written) -> tuple[dict[str, Any], list[str]]:
    """The whole document :func:`write_toml` wrote, as its reader reads it (secrets hidden), kept."""
    assert written.doc is not None, "session.toml has a reader's shape"
    doc, hidden = mask_free_text(written.doc, path)
    return _keep(path, written.raw, dict(doc), hidden)


def _keep(path: Path, raw: bytes, doc: dict[str, Any], hidden: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Keep ``doc`` as what ``raw`` reads as, for this process and (sealed) the next one's open; the caller's copy."""
    if "name" in doc and "created_at" in doc:  # else the next read raises, as it did
        keep_session_doc(os.path.abspath(path), raw, doc, hidden, written=True)
        seal_session_doc(path, raw, doc, hidden, written=True)
    return own_copy(doc), hidden


def keep_session_doc(key: str, raw: bytes, doc: dict[str, Any], hidden: list[str], *,
                     written: bool = False) -> None:
    """Keep ``doc`` as ``session.toml``'s content while the file holds ``raw`` (one per path): a copy, made now."""
    kept = own_copy(doc)
    SESSION_DOCS[key] = KeptDoc(raw, lambda: kept, tuple(hidden), written)


def raw_or_none(path: Path) -> bytes | None:
    """The file's bytes when it is a plain file no larger than the reader's bound, else ``None`` (not kept)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > toml_bound(Path(path)):
            return None
        with open(path, "rb") as fh:
            return fh.read(st.st_size + 1)
    except OSError:
        return None


def own_copy(value: Any) -> Any:
    """A copy of a parsed TOML value whose tables and arrays the caller may change (leaves are immutable)."""
    if isinstance(value, dict):  # a leaf is itself: no call per value (34,000 at 500 experiments, A5)
        return {k: v if type(v) in _TOML_LEAVES else own_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _TOML_LEAVES else own_copy(v) for v in value]
    return value


#: The immutable values a parsed TOML document holds, given back as they are by :func:`own_copy`.
_TOML_LEAVES = frozenset({str, int, float, bool, datetime, date, time})


__all__ = ["PARTS_KEY", "SESSION_DOCS", "KeptDoc", "keep_session_doc", "own_copy", "raw_or_none", "read_checked",
           "read_session_toml", "session_toml_view", "write_session_toml"]
