"""The small sealed state files ``status`` and opening a session keep beside ``summary.json`` (S7, H-47).

Source: A5, H-47.
Why: ``status`` runs every few seconds from tmux; re-reading a 15 MB journal or parsing
a 500-experiment ``session.toml`` each time made it 50× ``python -c pass``, and parsing
that ``session.toml`` cost 0.9 s of every command's start. These files hold what was
folded or checked, with what it was made from, so the next call checks ``stat``
signatures, a bounded number of bytes or one digest instead.

Each is JSON, written atomically (:func:`write_state`: the convention of
:func:`gpusession.core.files.tomlio.write_atomic_bytes`, mode 0600), sealed as ``count-cache.json`` is
(HMAC-SHA256 of its own fields under the user's key, ``check``:
:func:`gpusession.core.files.seal.keyed_seal`, H-78): a hand edit (its seal recomputed
from the public code included), a file written by another user or machine, a file of another shape, a link, a FIFO or one over
:data:`STATE_MAX_BYTES` reads as absent, and the caller then reads the session as if
there were no state. A failure to write is never an error: it is a cache. Datetimes
(``session.toml``'s package start) are kept as ``{"$datetime": ISO 8601}``.

Standard library only (tmux's call): neither the TOML writer nor the secret detectors.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from datetime import date, datetime, time
from pathlib import Path
from typing import Any, NamedTuple

from gpusession.core.files.errors import BadInput
from gpusession.core.files.seal import keyed_seal, keyed_seal_holds
from gpusession.core.files.textio import read_plain

#: The journal's fold at an offset (:mod:`gpusession.core.events.scan`): open runs, lines.
JOURNAL_STATE = "journal-state.json"
#: What ``status`` needs of ``session.toml``, ``checklist.toml`` and ``order.toml``, checked.
FILES_STATE = "status-files.json"
#: Every state file ``status`` may write.
STATE_FILES = frozenset({JOURNAL_STATE, FILES_STATE})
#: ``session.toml`` as last checked, by the SHA-256 of its bytes (:func:`sealed_session_doc`).
SESSION_TOML_STATE = "session-toml.json"
#: The results CSV's bytes and the journal's run ends last found clean (:func:`results_clean`).
RESULTS_CHECK_STATE = "results-check.json"
#: The journal's run ends counted up to a line end, by the SHA-256 of the bytes counted (:func:`saved_run_ends`).
RUN_ENDS_STATE = "run-ends.json"
#: What ``show`` and ``report`` need of the journal, folded at an offset
#: (:mod:`gpusession.core.folder.journal_digest`).
JOURNAL_DIGEST = "journal-digest.json"
#: The journal's offset up to which a run's start found every recorded process gone or ended
#: (:mod:`gpusession.core.folder.leftover_check`, H-14).
LEFTOVER_CHECK_STATE = "leftover-check.json"
#: Every state file of this module: never a sign of the session's use (most recent, ``list``'s
#: order), so reading a session (``show``, a neighbour's summary in the Cost pane) never reorders.
CACHE_FILES = STATE_FILES | {SESSION_TOML_STATE, RESULTS_CHECK_STATE, RUN_ENDS_STATE, JOURNAL_DIGEST,
                             LEFTOVER_CHECK_STATE}
#: The smallest results CSV whose clean check is kept (bytes, about 1,300 rows): a smaller
#: one is checked in well under 0.1 s, and a read of a small session leaves its folder as found.
RESULTS_CHECK_MIN_BYTES = 1024 * 1024
#: The smallest ``session.toml`` kept in :data:`SESSION_TOML_STATE` (bytes): a smaller one parses
#: in milliseconds, and a command on a small session (a refused one included) leaves its
#: folder as it found it (as ``journal-state.json``'s 64 KiB).
SESSION_TOML_STATE_MIN_BYTES = 64 * 1024
#: The largest state file read (bytes); a larger one reads as absent.
STATE_MAX_BYTES = 4 * 1024 * 1024
#: The state files' ``schema``.
STATE_SCHEMA = 1


def is_state_file(name: str) -> bool:
    """Whether ``name`` is one of :data:`CACHE_FILES` or the temporary file of its write (``.<name>.<random>.tmp``).

    Why: ``status`` writing its state, or an open keeping ``session.toml``'s, is no use of
    the session; the most recent session and ``list``'s order never count it.
    """
    return name in CACHE_FILES or (name.endswith(".tmp") and any(name.startswith(f".{n}.") for n in CACHE_FILES))


def _canon(doc: Mapping[str, Any]) -> bytes:
    """The state's fields but ``check``, in one canonical JSON form."""
    return json.dumps({k: v for k, v in doc.items() if k != "check"}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def seal(doc: Mapping[str, Any]) -> str:
    """The keyed seal a state file keeps of its fields but ``check``, ``hmac-sha256:…`` (H-47, H-78).

    Why: a value edited by hand must read as absent, never trusted, and so must one whose
    seal was recomputed from the public code (a CRC-32 was): the seal is keyed with the
    user's own secret (:func:`gpusession.core.files.seal.keyed_seal`).
    """
    return keyed_seal(_canon(doc))


def read_state(folder: Path, name: str) -> dict[str, Any] | None:
    """The sealed state ``name`` of ``folder``; ``None`` when absent or not to be trusted.

    Missing, unreadable, a link or not a plain file, over :data:`STATE_MAX_BYTES`, not
    JSON, nested past json's own bound (H-39: its ``RecursionError``), another schema or a
    seal that does not match. The text is not scanned for its depth first: nothing in it is
    used before its keyed seal holds, and only this user's gpusession writes one that holds
    (a scan and a walk were two thirds of reading a 500-experiment ``session.toml``'s state).
    """
    path = Path(folder) / name
    try:
        raw = read_plain(path, max_bytes=STATE_MAX_BYTES + 1, follow_links=False)
        if len(raw) > STATE_MAX_BYTES:
            return None
        doc = json.loads(raw)  # json's own bound on nesting raises RecursionError: read as absent (H-39)
    except (OSError, ValueError, BadInput, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != STATE_SCHEMA:
        return None
    if not (_sealed_as_written(raw, doc.get("check")) or keyed_seal_holds(doc.get("check"), _canon(doc))):
        return None
    return doc


def _sealed_as_written(raw: bytes, check: object) -> bool:
    """Whether ``raw`` is :func:`write_state`'s canonical text: the sealed bytes with its ``"check"`` member inserted.

    Why: serialising a 780 kB state again to check its seal was a third of opening a
    500-experiment session (A5); the bytes read are checked instead. The member's text is
    taken out once and the keyed seal must hold over what is left, so what was read is
    exactly what this user's gpusession sealed, with ``"check"`` at the top level (the
    only place where its text leaves valid JSON with that key; anywhere else the seal
    fails and :func:`read_state` checks the parsed document as before).
    """
    if not isinstance(check, str):
        return False
    member = b'"check":' + json.dumps(check).encode("utf-8") + b","
    rest = raw.replace(member, b"", 1)
    return len(rest) == len(raw) - len(member) and keyed_seal_holds(check, rest)


def write_state(folder: Path, name: str, doc: Mapping[str, Any]) -> bool:
    """Write ``doc`` sealed as ``name`` in ``folder``, atomically; ``False`` when the disk refused.

    The convention of :func:`gpusession.core.files.tomlio.write_atomic_bytes` without its
    imports (the TOML writer and the secret detectors: a third of tmux's call): a
    temporary ``.<name>.<random>.tmp`` beside it, mode 0600, ``flock``-ed until renamed
    (so opening the session never removes a write in progress), fsynced, then
    ``os.replace`` (a link at ``name`` is replaced, never written through). Never raises
    for a write refused (a full disk, a read-only copy, a folder in its place): the next
    reader folds or checks again. A state over :data:`STATE_MAX_BYTES` is not written
    (:func:`read_state` would refuse it, A4).
    """
    body = {**doc, "schema": STATE_SCHEMA}
    body["check"] = seal(body)
    # canonical, as sealed (``check`` sorts before ``checker``/``schema``: never the last
    # member): read_state checks the bytes read, without serialising them again
    data = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > STATE_MAX_BYTES:  # its reader would refuse it (A4)
        return False
    target = Path(folder) / name
    tmp = Path(folder) / f".{name}.{os.urandom(6).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return False
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        if os.path.isdir(target):
            raise IsADirectoryError(str(target))
        os.replace(tmp, target)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    finally:
        os.close(fd)
    return True


def file_signature(path: Path) -> list[int] | None:
    """``[size, mtime_ns, ctime_ns, inode, device]`` of ``path`` (never followed as a link); ``None`` when absent.

    The change time moves on every write and no user call sets it back (``touch -r``,
    ``os.utime`` set the modification time only): an equal signature means the same bytes.
    """
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


#: The files :data:`FILES_STATE` is kept under, by their signatures, in this order.
CHECKED_FILES = ("session.toml", "checklist.toml", "order.toml")


def checked_files_signatures(folder: Path) -> list[list[int] | None]:
    """The signatures of :data:`CHECKED_FILES` in ``folder`` now."""
    return [file_signature(Path(folder) / n) for n in CHECKED_FILES]


def checked_state(folder: Path) -> dict[str, Any] | None:
    """:data:`FILES_STATE` while it still describes the TOML files (and the manifest a copy check rests on, H-78), with ``session`` decoded; else ``None``.

    Source: H-47. Why: ``status``, ``list`` and the count of deliverables read the
    ``session.toml`` tables they need without parsing it while the files are the ones
    checked (:func:`gpusession.core.retrieval.status.status_facts` writes it).
    """
    state = read_state(folder, FILES_STATE)
    sigs = checked_files_signatures(folder)
    if state is None or sigs[0] is None or state.get("files") != sigs:
        return None
    manifest = state.get("manifest")  # the manifest a copy check rests on, unchanged since (H-78)
    if manifest is not None and not (isinstance(manifest, list) and len(manifest) == 2
                                     and isinstance(manifest[0], str)
                                     and file_signature(Path(manifest[0])) == manifest[1]):
        return None
    try:
        doc = from_json_value(state.get("session"))
    except (ValueError, TypeError):
        return None
    if not isinstance(doc, dict) or not isinstance(state.get("copy_verified"), bool) \
            or not isinstance(state.get("copy_words"), str):
        return None
    return {**state, "session": doc}


def to_json_value(value: Any) -> Any:
    """A TOML value as JSON: dates and times as ``{"$datetime": …}``, ``{"$date": …}``, ``{"$time": …}``.

    A table of one key starting with ``$`` (a hand-written ``"$date" = "…"``) is kept as
    ``{"$table": {…}}``, so :func:`from_json_value` never reads it back as a date.
    """
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, time):
        return {"$time": value.isoformat()}
    if isinstance(value, Mapping):
        table = {str(k): to_json_value(v) for k, v in value.items()}
        return {"$table": table} if len(table) == 1 and next(iter(table)).startswith("$") else table
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    return value


def from_json_value(value: Any) -> Any:
    """The inverse of :func:`to_json_value`.

    Raises:
        ValueError: a tagged date or time that does not read.
    """
    if isinstance(value, dict):
        if len(value) == 1:
            ((tag, text),) = value.items()
            if tag == "$datetime" and isinstance(text, str):
                return datetime.fromisoformat(text)
            if tag == "$date" and isinstance(text, str):
                return date.fromisoformat(text)
            if tag == "$time" and isinstance(text, str):
                return time.fromisoformat(text)
            if tag == "$table" and isinstance(text, dict):
                return {k: v if type(v) in _JSON_LEAVES else from_json_value(v) for k, v in text.items()}
        # a leaf is itself: no call per string or number (a 500-experiment session.toml
        # holds 34,000 values, A5)
        return {k: v if type(v) in _JSON_LEAVES else from_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _JSON_LEAVES else from_json_value(v) for v in value]
    return value


#: What ``json.loads`` returns that :func:`from_json_value` gives back as it is.
_JSON_LEAVES = frozenset({str, int, float, bool, type(None)})


#: The modules whose code decides what ``session.toml`` reads as (parse, bounds, kinds, secrets),
#: relative to the package's ``core`` folder: a state made by other code reads as absent.
CHECKER_SOURCES = ("files/bounds.py", "files/detectors.py", "files/fieldbound.py", "files/nesting.py",
                   "files/schema.py", "files/secretgate.py", "files/secrets.py", "files/tomlread.py",
                   "files/tomlio.py", "folder/session.py", "folder/session_toml.py", "records/results.py")


@functools.cache
def checker_fingerprint() -> str:
    """``sha256:<hex>`` of the Python version and the source of :data:`CHECKER_SOURCES` (a file absent counts as such).

    Why: the state keeps a document checked by this code; an upgrade that hides or refuses
    more (a new secret detector, a tighter bound) must check an unchanged file again, never
    serve what older code passed (H-47). Read once per process (about 200 KB).
    """
    h = hashlib.sha256(f"{sys.version_info[0]}.{sys.version_info[1]}".encode())
    core = Path(__file__).resolve().parent.parent
    for name in CHECKER_SOURCES:
        try:
            data = (core / name).read_bytes()
        except OSError:
            data = b"absent"
        h.update(f"\0{name}\0{len(data)}\0".encode())
        h.update(data)
    return "sha256:" + h.hexdigest()


def bytes_digest(raw: bytes) -> str:
    """``sha256:<hex>`` of ``raw``: what :data:`SESSION_TOML_STATE` was made from."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


class SealedDoc(NamedTuple):
    """``session.toml``'s checked document as :func:`sealed_session_doc` read it from the state.

    A named tuple, not a dataclass: ``status --format tmux`` reads this module, and
    ``dataclasses`` imports ``inspect`` (about 10 ms of its start, S6).

    Attributes:
        doc: the document, converted from ``as_json`` (the caller's own).
        as_json: the state's JSON form of it; :func:`from_json_value` of it is another
            copy (a reader that keeps the document for later reads converts it then, so an
            open makes one copy, not two, A5). Never changed: no caller is given it.
        hidden: one warning per hidden value, naming this path.
        written: the document passed the writer's checks too (kept by the writer, not a
            read; a state without it, as before, says no).
    """

    doc: dict[str, Any]
    as_json: Any
    hidden: list[str]
    written: bool


def sealed_session_doc(path: Path, raw: bytes) -> SealedDoc | None:
    """``session.toml``'s checked document and hidden-value warnings while the file holds ``raw``; else ``None``.

    Source: A5, H-47, H-78. Why: parsing and checking a 500-experiment ``session.toml``
    cost 0.9 s of every command's start; :data:`SESSION_TOML_STATE` keeps what the
    last full read returned under the SHA-256 of the exact bytes it read, so a hand edit
    of any byte is a new digest (read and checked in full again), a state made by other
    checking code (:func:`checker_fingerprint`) is read again, and a state whose keyed seal
    fails reads as absent (:func:`read_state`).

    Args:
        path: the ``session.toml`` (its folder holds the state; warnings name this path).
        raw: the file's bytes now.

    Returns:
        The document with what it was converted from, its warnings and whether the writer
        checked it (:class:`SealedDoc`), or ``None``.
    """
    if len(raw) < SESSION_TOML_STATE_MIN_BYTES:
        return None
    state = read_state(Path(path).parent, SESSION_TOML_STATE)
    if state is None or state.get("bytes") != len(raw) or state.get("digest") != bytes_digest(raw) \
            or state.get("checker") != checker_fingerprint():
        return None
    hidden = state.get("hidden")
    if not isinstance(hidden, list) or not all(isinstance(h, str) for h in hidden):
        return None
    as_json = state.get("doc")
    try:
        doc = from_json_value(as_json)
    except (ValueError, TypeError):
        return None
    if not isinstance(doc, dict):
        return None
    return SealedDoc(doc, as_json, [f"{path}: {h}" for h in hidden], state.get("written") is True)


def seal_session_doc(path: Path, raw: bytes, doc: Mapping[str, Any], hidden: list[str], *,
                     written: bool = False) -> bool:
    """Keep ``doc`` (checked, secrets hidden) and ``hidden`` as what ``session.toml``'s ``raw`` reads as.

    ``written``: the writer wrote ``raw`` from ``doc`` after its own checks (free text,
    H-41), so the next write may reuse its unchanged experiments unchecked (A5).

    Only from :data:`SESSION_TOML_STATE_MIN_BYTES` (a smaller file is left without one).
    ``hidden``'s warnings are kept without the ``<path>: `` they start with, so a folder
    renamed or copied names its own path. Never raises for a write refused.

    Returns:
        Whether the state was written.
    """
    if len(raw) < SESSION_TOML_STATE_MIN_BYTES:
        return False
    prefix = f"{path}: "
    return write_state(Path(path).parent, SESSION_TOML_STATE, {
        "bytes": len(raw), "digest": bytes_digest(raw), "checker": checker_fingerprint(), "doc": to_json_value(doc),
        "hidden": [h.removeprefix(prefix) for h in hidden], "written": written})


def _ends_digest(ends: Mapping[str, int]) -> str:
    """``sha256:<hex>`` of the journal's run ends, sorted: what a check of the rows judged against."""
    return bytes_digest(json.dumps(sorted(ends.items()), separators=(",", ":")).encode("utf-8"))


def results_clean(folder: Path, raw: bytes, ends: Mapping[str, int]) -> bool:
    """Whether the results CSV's ``raw`` was found clean against ``ends`` by this checking code (A5, H-47).

    Source: A5, H-47, H-78. Why: checking a 10,000-row CSV row by row costs about a
    second, and every ``run`` began with it though the CSV had not changed since the last
    run's end. :data:`RESULTS_CHECK_STATE` keeps the SHA-256 of the bytes last found clean
    (every row valid, none repeated, no run's row missing), the digest of the run ends
    judged against and :func:`checker_fingerprint` (``records/results.py`` included): a hand
    edit of any byte, a run ended or deleted in the journal, new checking code or a forged
    state (its seal) is checked again.
    """
    if len(raw) < RESULTS_CHECK_MIN_BYTES:
        return False
    state = read_state(Path(folder), RESULTS_CHECK_STATE)
    return (state is not None and state.get("bytes") == len(raw) and state.get("digest") == bytes_digest(raw)
            and state.get("ends") == _ends_digest(ends) and state.get("checker") == checker_fingerprint())


def keep_results_clean(folder: Path, raw: bytes, ends: Mapping[str, int]) -> bool:
    """Keep that ``raw`` was found clean against ``ends`` (:func:`results_clean`); never raises for a write refused.

    Returns:
        Whether the state was written (not below :data:`RESULTS_CHECK_MIN_BYTES`).
    """
    if len(raw) < RESULTS_CHECK_MIN_BYTES:
        return False
    return write_state(Path(folder), RESULTS_CHECK_STATE, {
        "bytes": len(raw), "digest": bytes_digest(raw), "ends": _ends_digest(ends), "checker": checker_fingerprint()})


def saved_run_ends(folder: Path, raw: bytes) -> tuple[int, dict[str, int]] | None:
    """The journal's run ends the state counted over ``raw``'s first bytes, and how many bytes; else ``None``.

    Source: A5, H-47, H-78. Why: every read of the results CSV judges its rows against
    the run ends, and counting them over a month's journal (18 MB at 10,000 runs) cost
    0.3-1 s of every ``run``. :data:`RUN_ENDS_STATE` keeps the counts at a line end with the
    SHA-256 of the bytes before it: while ``raw`` starts with those bytes (the journal only
    grew) only what follows is counted; an edit of any earlier byte is another digest, and
    a forged state fails its seal, both counted whole.
    """
    state = read_state(Path(folder), RUN_ENDS_STATE)
    if state is None:
        return None
    offset, ends = state.get("offset"), state.get("ends")
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 < offset <= len(raw) \
            or not isinstance(ends, dict) \
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in ends.values()) \
            or state.get("digest") != bytes_digest(raw[:offset]):
        return None
    return offset, ends


def keep_run_ends(folder: Path, counted: bytes, ends: Mapping[str, int]) -> bool:
    """Keep ``ends`` as the run ends of the journal's first bytes ``counted`` (ending at a line end); never raises."""
    return write_state(Path(folder), RUN_ENDS_STATE, {
        "offset": len(counted), "digest": bytes_digest(counted), "ends": dict(ends)})


__all__ = ["CACHE_FILES", "CHECKED_FILES", "CHECKER_SOURCES", "FILES_STATE", "JOURNAL_DIGEST", "JOURNAL_STATE",
           "LEFTOVER_CHECK_STATE", "RESULTS_CHECK_MIN_BYTES",
           "RESULTS_CHECK_STATE", "RUN_ENDS_STATE", "keep_results_clean", "keep_run_ends", "results_clean", "saved_run_ends", "SESSION_TOML_STATE", "SESSION_TOML_STATE_MIN_BYTES",
           "STATE_FILES", "STATE_MAX_BYTES", "bytes_digest",
           "checked_files_signatures", "checked_state", "checker_fingerprint", "file_signature", "from_json_value", "is_state_file",
           "SealedDoc", "read_state", "seal", "seal_session_doc", "sealed_session_doc", "to_json_value", "write_state"]
