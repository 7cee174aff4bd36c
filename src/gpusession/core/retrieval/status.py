"""A session's state in one line, fast enough for tmux's status line (S6).

``gpusession status [NAME]`` runs every few seconds from ``status-right``; it must not
import polars, torch or textual, nor parse the whole results CSV, nor walk the session
folder. So the writers of the CSV (the runner after each row, ``validate --session``)
keep ``summary.json`` beside it (with the session folder's size for the retrieval
reserve, ``folder_bytes``, walked at most once a minute)::

    {"schema": 1, "rows": 23, "accepted_revisions": ["9f86d0…"],
     "csv_size_bytes": 10412, "csv_sha256": "5e1c…", "csv_stat": […],
     "counts_check": "crc32:1a2b3c4d", "updated_at": "2026-12-01T01:00:00+00:00"}

After each row it records, the runner moves the counts by that row alone
(:func:`count_appended_row`: nothing of the CSV or the journal is read, the summary then
holds by its chain of ``stat`` signatures, ``csv_sha256`` empty). Any other writer, and
the runner when the summary no longer describes the CSV, counts with the standard
library's CSV reader: the whole file, counting a run once per end the journal recorded (a row copied by hand
counts once, as ``show`` counts it); only the bytes appended since the recorded
``csv_size_bytes`` while the journal ended no run and the SHA-256 of the bytes before
them still matches.
``status`` trusts a summary only when it describes the CSV's present bytes (size and
SHA-256: a hand edit that keeps the size, or restores the modification time, changes
the digest) and its ``counts_check`` is the checksum of its own counts (a count edited
by hand, up or down, no longer matches, H-47); hashing costs a read in C, not a parse,
and the checksum none of the CSV. Otherwise it reads the whole file
and checks every row as ``show`` does, with the same one-line refusal. Reading never
waits on a FIFO or a device in place of a session file, and writes only its own sealed
state (:mod:`gpusession.core.folder.caches`): the journal's fold at an offset
(:func:`open_run_keys`) and what it read of the checked TOML files (:func:`status_facts`),
so the next call checks ``stat`` signatures and the journal's new bytes, not the session
(A5); a hand edit of either file or of what it describes is folded or checked again.

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
import stat
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

from gpusession.core.copyhome.limit import (
    FOLDER_BYTES_AT_KEY,
    FOLDER_BYTES_KEY,
    SessionLimit,
    duration_words,
    folder_bytes_to_record,
    limit_of,
)
from gpusession.core.events.scan import run_end_counts
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.frozen import frozen
from gpusession.core.files.names import (
    CHECKLIST_TOML,
    JOURNAL,
    ORDER_TOML,
    RESULTS_CSV,
    SESSION_TOML,
    SUMMARY_JSON,
)
from gpusession.core.files.safefile import refuse_link_or_special
from gpusession.core.files.schema import CHECKLIST, ORDER, SESSION, Spec, check_types
from gpusession.core.files.seal import is_sealed, keyed_seal
from gpusession.core.files.sessionname import check_name_secret
from gpusession.core.files.textio import quoted, read_plain
from gpusession.core.files.tomlread import read_toml
from gpusession.core.folder.caches import (
    FILES_STATE,
    checked_files_signatures,
    checked_state,
    file_signature,
    to_json_value,
    write_state,
)
from gpusession.core.folder.journal_state import journal_open_work
from gpusession.core.folder.package import Package, check_time_range
from gpusession.core.money.window import PackageWarning, package_warning, package_window

#: The checklist item whose tick by the person says "the copy home is verified" (S4).
VERIFY_ITEM = "g8.verify-copy"


@frozen
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


def _count_records(text: str, header: list[str] | None, start: Counts,
                   run_ends: Mapping[str, int] | None = None) -> Counts | None:
    """The counts of ``start`` plus those of the records of ``text``; ``None`` when they do not read.

    A run with more rows than the journal ended it (``run_ends``) counts once per end, as
    ``show`` counts it (:func:`gpusession.core.records.results.check_rows`, the same rule).
    """
    from gpusession.core.records.csvkeys import MAX_CELL_CHARS, RUN_KEY_COLUMNS

    csv.field_size_limit(MAX_CELL_CHARS)  # the bound of every reader of the CSV
    reader = csv.reader(io.StringIO(text, newline=""))
    rows, accepted = start.rows, set(start.accepted_revisions)
    cols = header
    kept: dict[tuple[str, ...], int] = {}
    try:
        for record in reader:
            if cols is None:
                cols = record
                continue
            if not record:
                continue
            try:
                rev = record[cols.index("corpus_revision")]
                ok = record[cols.index("corpus_accepted")]
                key = tuple(record[cols.index(c)] for c in RUN_KEY_COLUMNS)
            except (ValueError, IndexError):
                return None
            if run_ends is not None and all(key):
                if 0 < run_ends.get(":".join(key), 0) <= kept.get(key, 0):
                    continue  # a row copied by hand
                kept[key] = kept.get(key, 0) + 1
            rows += 1
            if ok == "true" and rev:
                accepted.add(rev)
    except csv.Error:  # a cell over the bound, a stray quote: the checked path says which line
        return None
    return Counts(rows, frozenset(accepted), start.csv_size_bytes)


def journal_run_ends(folder: Path) -> dict[str, int]:
    """``{run key: ends}`` of the session's journal (:func:`gpusession.core.events.scan.run_end_counts`).

    An unreadable journal (or a FIFO, never waited on) gives ``{}``: no row is judged.
    """
    try:
        return run_end_counts(read_plain(Path(folder) / JOURNAL))
    except (OSError, BadInput):
        return {}


def _header(path: Path) -> list[str] | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return next(csv.reader([fh.readline().lstrip("\ufeff")]), None)
    except (OSError, UnicodeDecodeError):
        return None


#: The largest ``summary.json`` read (bytes); a larger one is ignored as if absent.
SUMMARY_MAX_BYTES = 16 * 1024 * 1024


class _Summary:
    """What ``summary.json`` says of the CSV (a plain class: even ``@frozen`` costs start-up time)."""

    __slots__ = ("digest", "revisions", "rows", "signature", "size")

    def __init__(self, rows: int, revisions: frozenset[str], size: int, digest: str,
                 signature: list[int] | None) -> None:
        """Hold the counts, the CSV's size and SHA-256, and its ``stat`` signature when written."""
        self.rows, self.revisions, self.size, self.digest, self.signature = rows, revisions, size, digest, signature


def _read_summary(folder: Path) -> _Summary | None:
    """What ``summary.json`` says of the CSV; ``None`` when unusable (then the CSV is counted).

    A cache: missing, unreadable, too large, not JSON, nested past the parser's depth,
    of another shape (a summary without the digest included), a symbolic link (never
    read through, as every session file), not a plain file (a FIFO or a device is never
    waited on), with counts that are not integers from 0 to :data:`COUNT_MAX` (a
    boolean, a negative or a 400-digit number edited by hand), or whose counts are not
    the ones its writer sealed (:func:`counts_check`: a count edited by hand, higher or
    lower, H-47) reads as absent.
    """
    from gpusession.core.files.nesting import loads_json
    from gpusession.core.files.textio import read_plain

    try:
        raw = read_plain(folder / SUMMARY_JSON, max_bytes=SUMMARY_MAX_BYTES + 1, follow_links=False)
        if len(raw) > SUMMARY_MAX_BYTES:
            return None
        doc = loads_json(raw, folder / SUMMARY_JSON)  # depth-bounded (H-39)
        rows, revs, size, digest = doc["rows"], doc["accepted_revisions"], doc["csv_size_bytes"], doc["csv_sha256"]
        if not (_count_ok(rows) and _count_ok(size) and isinstance(revs, list) and isinstance(digest, str)
                and len(revs) <= rows and all(isinstance(r, str) for r in revs)):
            return None
        sig = doc.get("csv_stat")
        if doc.get("counts_check") != counts_check(rows, revs, size, digest, sig):
            return None  # edited by hand (or written before the check): recounted (H-47)
        ok_sig = isinstance(sig, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in sig)
        return _Summary(rows, frozenset(revs), size, digest, sig if ok_sig else None)
    except (OSError, ValueError, KeyError, TypeError, BadInput, RecursionError):
        return None


def counts_check(rows: int, revisions: list[str], size: int, digest: str, signature: Any) -> str:
    """The keyed seal ``summary.json`` keeps of its own counts, ``hmac-sha256:…`` (H-47, H-78).

    Source: H-47, H-78. Why: a count edited by hand, up or down (``"rows": 5`` beside a
    kept ``csv_stat``), made ``status`` say a count ``show`` would not; a bound checks only
    one way, this any edit. Over the rows, the accepted revisions (sorted), the CSV's size,
    SHA-256 and ``stat`` signature, in one canonical JSON form (a file re-indented by a
    tool still matches), under the user's key
    (:func:`gpusession.core.files.seal.keyed_seal`): a seal recomputed from the public
    code, or a summary of another user or machine, reads as absent (recounted). Nothing
    of the CSV is read.
    """
    canon = json.dumps([rows, sorted(revisions), size, digest, signature], separators=(",", ":"))
    return keyed_seal(canon.encode("utf-8"))


#: The largest count a summary may hold (rows, bytes): more is a hand edit, recounted.
COUNT_MAX = 10**15


def _count_ok(value: Any) -> bool:
    """An integer (not a boolean) from 0 to :data:`COUNT_MAX`."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= COUNT_MAX


#: Bytes hashed per read (memory stays flat on a large CSV).
_HASH_CHUNK_BYTES = 1024 * 1024


def _signature(st: os.stat_result) -> list[int]:
    """Size, modification and change times (ns), inode and device of a file.

    The change time is set by the kernel on every write and cannot be put back by hand
    (``touch -r`` sets the modification time only), so an equal signature means the
    bytes the summary was written from.
    """
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _new_sha256() -> Any:
    # hashlib loads OpenSSL (~3 ms): imported only when a signature differs, not on
    # tmux's call every few seconds
    import hashlib

    return hashlib.sha256()


def _sha256_prefix(fh: BinaryIO, size: int) -> tuple[str, Any]:
    """The SHA-256 (hex) of the first ``size`` bytes of ``fh`` and the hash to go on with.

    ``fh`` is left at ``size`` (or at its end when shorter).
    """
    h = _new_sha256()
    fh.seek(0)
    left = size
    while left > 0:
        block = fh.read(min(_HASH_CHUNK_BYTES, left))
        if not block:
            break
        h.update(block)
        left -= len(block)
    return h.hexdigest(), h


def csv_sha256(path: Path) -> str | None:
    """The SHA-256 (hex) of the results CSV's bytes, ``None`` when it does not read."""
    try:
        with open(path, "rb") as fh:
            return _sha256_prefix(fh, os.fstat(fh.fileno()).st_size)[0]
    except OSError:
        return None


def _summary_describes(saved: _Summary | None, csv_path: Path, st: os.stat_result) -> bool:
    """Whether ``saved`` describes the CSV's present bytes: the same ``stat`` signature, else the same SHA-256."""
    if saved is None or saved.size != st.st_size:
        return False
    return saved.signature == _signature(st) or csv_sha256(csv_path) == saved.digest


def current_counts(folder: Path) -> Counts:
    """The counts of ``folder``'s results CSV now, read from ``summary.json``.

    The whole CSV is read with the standard library (never polars), a run counted once
    per end the journal recorded; while the journal ended no run, only the bytes
    appended after the summary was written are parsed, once the digest of the bytes
    before them matches the summary's. Nothing is written.

    Args:
        folder: a session folder.

    Returns:
        The counts (0 rows when there is no CSV yet).
    """
    return _current(Path(folder))[0]


def _current(folder: Path) -> tuple[Counts, str, list[int] | None]:
    """The counts, the SHA-256 of the bytes they describe and the CSV's ``stat`` signature.

    The digest is ``""`` without a CSV; the signature ``None`` when the file changed while read.
    """
    csv_path = folder / RESULTS_CSV
    none = Counts(0, frozenset(), 0), "", None
    try:
        st = csv_path.stat()
    except OSError:
        return none
    if not stat.S_ISREG(st.st_mode):  # a FIFO is never waited on (opening the session refuses it)
        return none
    size = st.st_size
    saved = _read_summary(folder)  # a count edited by hand is recounted (H-47)
    header = _header(csv_path)
    ends = journal_run_ends(folder)
    try:
        with open(csv_path, "rb") as fh:
            before = _signature(os.fstat(fh.fileno()))
            sig = before if before[0] == size else None
            # the appended bytes alone, while the journal ended no run (else a row copied
            # by hand could repeat one of the rows before them: the whole file is counted)
            if saved is not None and 0 < saved.size <= size and header is not None and not ends:
                prefix, h = _sha256_prefix(fh, saved.size)
                if prefix == saved.digest:
                    tail = fh.read(size - saved.size)
                    h.update(tail)
                    got = _count_records(tail.decode("utf-8", "replace"), header,
                                         Counts(saved.rows, saved.revisions, size))
                    if got is not None:
                        return got, h.hexdigest(), sig if _signature(os.fstat(fh.fileno())) == sig else None
            fh.seek(0)
            raw = fh.read(size)
            after = _signature(os.fstat(fh.fileno()))
    except OSError:
        return none
    text = raw.decode("utf-8", "replace").lstrip("\ufeff")
    counts = _count_records(text, None, Counts(0, frozenset(), size), ends) or Counts(0, frozenset(), size)
    h = _new_sha256()
    h.update(raw)
    return counts, h.hexdigest(), sig if after == sig else None


def csv_signature(folder: Path) -> list[int] | None:
    """The results CSV's ``stat`` signature now (size, mtime, ctime, inode, device); ``None`` without one.

    Read by the recorder just before it appends a row, for :func:`count_appended_row`.
    """
    try:
        st = (Path(folder) / RESULTS_CSV).stat()
    except OSError:
        return None
    return _signature(st) if stat.S_ISREG(st.st_mode) else None


def count_appended_row(folder: Path, before: list[int] | None, accepted_revision: str | None) -> Counts:
    """Bring ``summary.json`` up to date after the recorder appended one row (S7, A5).

    Source: A5 (a refresh costs the new work, not the session). Why: recounting the
    whole CSV and reading the whole journal after every row made the 10,000th row of a
    month-long session cost 0.3 s, quadratic over the session.

    When ``summary.json`` described the CSV just before the append (its sealed ``stat``
    signature is ``before``), the counts move by that row alone: one row more, and its
    corpus revision when it was accepted; nothing of the CSV or the journal is read. The
    runner writes a run's row before it journals the run's end, so the row is one the
    whole recount would count too. The summary then records no SHA-256 (``""``): it holds
    by its chain of signatures, and a CSV whose signature no longer matches (an edit, a
    copy) is recounted whole, as before. Otherwise, :func:`refresh_counts`.

    Args:
        folder: the session folder.
        before: :func:`csv_signature` read just before the row was appended.
        accepted_revision: the row's ``corpus_revision`` when its corpus was accepted.

    Returns:
        The counts written.
    """
    folder = Path(folder)
    saved = _read_summary(folder)
    if before is None or saved is None or saved.signature != before or saved.size != before[0]:
        return refresh_counts(folder)
    now = csv_signature(folder)
    if now is None or now[0] <= saved.size:
        return refresh_counts(folder)
    revisions = saved.revisions | ({accepted_revision} if accepted_revision else set())
    counts = Counts(saved.rows + 1, frozenset(revisions), now[0])
    _write_summary(folder, counts, "", now)
    return counts


def refresh_counts(folder: Path) -> Counts:
    """Bring ``summary.json`` up to date after rows were appended (S7).

    Called by the runner after each appended row and by ``validate --session``. Counts
    the CSV's rows by the journal's run ends (:func:`current_counts`), records the CSV's
    SHA-256 and ``stat`` signature, and the session folder's size for the retrieval
    reserve (walked at most once a minute); the file is written atomically. A failure to write
    (full disk) is not an error of the run: the summary is a cache, rebuilt when read.

    Args:
        folder: the session folder.

    Returns:
        The counts written.
    """
    counts, digest, signature = _current(Path(folder))
    _write_summary(Path(folder), counts, digest, signature)
    return counts


def _write_summary(folder: Path, counts: Counts, digest: str, signature: list[int] | None) -> None:
    """Write ``summary.json`` (atomic); a failure to write is no error of the run (a cache)."""
    from gpusession.core.files.tomlio import write_atomic_bytes

    walked_bytes, walked_at = folder_bytes_to_record(Path(folder), time.time())
    doc = {
        "schema": 1,
        "rows": counts.rows,
        "accepted_revisions": sorted(counts.accepted_revisions),
        "csv_size_bytes": counts.csv_size_bytes,
        "csv_sha256": digest,
        "csv_stat": signature,  # while it holds, status trusts the counts without hashing
        # the counts' own checksum: one edited by hand, up or down, is recounted (H-47)
        "counts_check": counts_check(counts.rows, sorted(counts.accepted_revisions),
                                     counts.csv_size_bytes, digest, signature),
        FOLDER_BYTES_KEY: walked_bytes,  # the retrieval reserve's size: status never walks the folder
        FOLDER_BYTES_AT_KEY: walked_at,
        "updated_at": utcnow().isoformat(),
    }
    try:
        write_atomic_bytes(Path(folder) / SUMMARY_JSON, (json.dumps(doc) + "\n").encode("utf-8"))
    except OSError:
        pass


@frozen
class Retrieval:
    """Whether the copy home is verified (S4).

    Attributes:
        verified: True when ``gpusession pull`` verified it, or the person ticked the
            checklist's copy item.
        words: ``verified 2026-12-01 01:00 UTC (pull: 12 files, 3.1 MB)`` /
            ``not verified`` / ``ticked by you``.
    """

    verified: bool
    words: str


def _toml(path: Path) -> dict[str, Any]:
    # The parser of core.tomlread (not core.tomlio: that module also loads the writer,
    # a third of this command's start-up); lenient here: an unreadable file reads as {}.
    # A FIFO or a device is never waited on.
    # Size- and depth-bounded (H-39, H-48): never a RecursionError, never a 50 MB parse.
    from gpusession.core.files.nesting import read_toml_lenient

    return read_toml_lenient(path) or {}


def retrieval_state(folder: Path, checklist: dict[str, Any] | None = None) -> Retrieval:
    """Read the copy-home state from ``checklist.toml`` (S4): the newest pull or verify-copy.

    Args:
        folder: a session folder (on the server, or its copy home).
        checklist: the parsed ``checklist.toml`` when the caller has read it already.

    Returns:
        The state; an unreadable file reads as not verified.
    """
    return copy_state(folder, checklist)[0]


def copy_state(folder: Path, checklist: dict[str, Any] | None = None) -> tuple[Retrieval, Path | None]:
    """:func:`retrieval_state`, and the manifest a verified state rests on (``None``: none).

    Source: S4, H-58, H-78. Why: ``status`` keeps the state under the manifest's ``stat``
    signature too (:func:`status_facts`), so a manifest removed or edited since is seen.
    """
    doc = checklist if checklist is not None else _toml(Path(folder) / CHECKLIST_TOML)
    # the newest check of the copy: a pull's ([retrieval]) or verify-copy's ([verify_copy]) (S4, S11)
    # only a record gpusession sealed is vouched for; another is the person's own entry (H-58)
    tables = [r for r in (doc.get("retrieval"), doc.get("verify_copy")) if isinstance(r, dict)]
    recs = [r for r in tables if is_sealed(r)]
    dated = [r for r in recs if isinstance(r.get("at"), datetime) and r["at"].tzinfo is not None]
    rec = max(dated, key=lambda r: r["at"]) if dated else (recs[0] if recs else None)
    if rec is not None and rec.get("verified") is True:
        doubt, manifest = copy_record_doubt(rec, Path(folder))
        if doubt is not None:  # the seal is public: what it says is re-derived (H-78)
            return Retrieval(False, f"copy home not verified ({doubt})"), manifest
        at = rec.get("at")
        when = f" {at:%Y-%m-%d %H:%M} UTC" if isinstance(at, datetime) else ""
        return Retrieval(True, f"copy home verified{when}"), manifest
    if rec is None and any(r.get("verified") is True for r in tables):  # never said as verified (H-58)
        return Retrieval(False, "copy home not verified (checklist.toml holds a check written by hand, "
                                "not by gpusession: run gpusession verify-copy)"), None
    items = doc.get("items")
    item = items.get(VERIFY_ITEM) if isinstance(items, dict) else None
    if isinstance(item, dict) and item.get("done") is True:
        return Retrieval(True, "copy home verified (ticked in the checklist)"), None
    return Retrieval(False, "copy home not verified"), None


def copy_record_doubt(rec: Mapping[str, Any], folder: Path) -> tuple[str | None, Path | None]:
    """Why a sealed copy check that says verified is not believed (``None``: believed), and its manifest.

    Source: H-78 (S4, A4). Why: the record's seal (:func:`gpusession.core.files.seal.seal_of`)
    is a CRC anyone recomputes; a table forged with it named a manifest that did not exist
    and ``status`` and the report said "copy home verified". What can be re-derived is:
    the manifest the check read must be there, a regular file (never a link, never waited
    on), with the SHA-256 the record kept (``manifest_sha256``) -- at ``manifest_file``
    (a pull's local copy), else at ``manifest``, else under its name in the session folder
    (a session moved or copied home). A record without the digest was written before it was kept.

    Returns:
        ``(doubt, manifest)``: the words in parentheses after "copy home not verified",
        and the manifest file found, else the first place looked (for its ``stat``
        signature: a manifest put back is seen); ``None`` when the record names none.
    """
    from gpusession.core.files.digest import (
        sha256_plain,  # hashlib: only when a check is re-derived
    )

    want = rec.get("manifest_sha256")
    if not isinstance(want, str):
        return ("recorded before gpusession kept the manifest's SHA-256 with the check: "
                "run gpusession verify-copy again"), None
    named = [v for v in (rec.get("manifest_file"), rec.get("manifest")) if isinstance(v, str) and v]
    if not named:
        return "the check names no manifest: run gpusession verify-copy", None
    places = [Path(v) for v in named if Path(v).is_absolute()] + [Path(folder) / Path(v).name for v in named]
    found: Path | None = None
    for place in places:
        try:
            if not stat.S_ISREG(os.lstat(place).st_mode):
                continue
        except OSError:
            continue
        found = found or place
        if sha256_plain(place) == want:
            return None, place
    if found is None:
        return (f"the manifest it was checked against, {quoted(named[0])}, is not there: "
                "run gpusession verify-copy"), places[0]
    return (f"the manifest {quoted(str(found))} changed since the check: run gpusession verify-copy"), found


_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")


@frozen
class SessionStatus:
    """What ``gpusession status`` says about one session (S6).

    Attributes:
        name: the session.
        package: its package.
        time_left_words: ``3d 02h 10m left`` / ``ended 2h 05m ago`` / ``window not set``.
        counts: rows and accepted corpora.
        retrieval: the copy-home state.
        warning: the end-of-package warning, or ``None``.
        unfinished: runs started without an end that the next open records
            (:func:`unfinished_runs`).
        limit: the session limit (D1), ``None`` when not read.
    """

    name: str
    package: Package
    time_left_words: str
    counts: Counts
    retrieval: Retrieval
    warning: PackageWarning | None
    unfinished: int = 0
    limit: SessionLimit | None = None
    #: the count of deliverables in the session's unit, as last counted (S8, S10), or ``None``
    deliverables: dict[str, Any] | None = None

    def _deliverables(self, short: bool) -> str | None:
        """``18 approved visuals`` (``18 visuals`` in the tmux form); ``? visuals`` when files changed since."""
        d = self.deliverables
        if d is None:
            return None
        return str(d["short" if short else "words"])  # a stale count is already a question (H-47)

    def _limit_words(self) -> str | None:
        """``stop by Sat 14:00 UTC (4 h kept, not measured)``, ``None`` without a limit (D1)."""
        lim = self.limit
        if lim is None or not lim.known:
            return None

        kept = "set by you" if lim.source == "limit" else (
            f"{duration_words(lim.reserve_s)} kept for retrieval"
            + (", not measured" if lim.source == "default" else ""))
        return f"{lim.stop_by} ({kept})"

    def _past_limit(self) -> bool:
        """The limit has passed while the package has not ended (that warning says more)."""
        return (self.limit is not None and self.limit.passed()
                and (self.warning is None or self.warning.level != "ended"))

    def line(self) -> str:
        """One short line: ``demo · 3d 02h left · 22 result rows · 1 accepted corpus · copy home not verified``.

        Rows, not runs: the results CSV holds a row per load too, and per incident (the
        Run pane's "18 of 18 runs done" counts the timed cold and warm runs only).
        """
        acc = self.counts.accepted_unique_corpora
        parts = [
            self.name,
            self.time_left_words,
            f"{self.counts.rows} result row{'s' if self.counts.rows != 1 else ''}",
            self._deliverables(False) or f"{acc} accepted {'corpus' if acc == 1 else 'corpora'}",
        ]
        if self.unfinished:
            parts.insert(3, f"{self.unfinished} unfinished run(s): `gpusession show {self.name}` records "
                            f"them; `gpusession run {self.name} --resume` measures the rest")
        if self.warning is None or not self.warning.copy_words:
            parts.append(self.retrieval.words)  # else the warning says it already
        if (limit := self._limit_words()) is not None:
            parts.append(limit)
        if self._past_limit():  # D1: said after the package's own warning
            parts.insert(0, "past the session limit: start no run, pull what is useful now")
        text = " · ".join(parts)
        if self.warning is not None:
            text = f"WARNING: {self.warning.text} · {text}"
        elif self._past_limit():
            text = f"WARNING: {text}"
        return text

    def to_json(self) -> dict[str, Any]:
        """The fields of the tmux line as JSON-ready values (``status --json``, for scripts).

        Keys: ``name``, ``package`` (``end``: ISO 8601 or ``None``), ``time_left_s``,
        ``time_left`` (the same in words),
        ``result_rows``, ``unfinished_runs``, ``accepted_corpora``, ``deliverables`` (the
        count in the session's unit as last counted, with ``unit`` and ``unit_plural``;
        ``count`` null while not counted; ``None`` for a session counting accepted
        corpora), ``copy_home_verified``,
        ``copy_home`` (words), ``session_limit`` (ISO 8601 or ``None``), ``stop_by``
        (words or ``None``), ``past_session_limit``, ``warning`` and ``warning_level``
        (``"24h"``, ``"2h"``, ``"ended"`` or ``None``).
        """
        from gpusession.core.retrieval.json_contract import package_json, time_left_s

        lim = self.limit if self.limit is not None and self.limit.known else None
        return {  # the keys of `list` and `show` for the same facts (docs/json/status.schema.json)
            "name": self.name,
            "package": package_json(self.package),
            "time_left_s": time_left_s(self.package, lim.now if lim is not None else None),
            "time_left": self.time_left_words,
            "result_rows": self.counts.rows,
            "unfinished_runs": self.unfinished,
            "accepted_corpora": self.counts.accepted_unique_corpora,
            "deliverables": ({k: v for k, v in self.deliverables.items() if k != "key"}
                             if self.deliverables is not None else None),
            "copy_home_verified": self.retrieval.verified,
            "copy_home": self.retrieval.words,
            "session_limit": lim.at.isoformat() if lim is not None and lim.at is not None else None,
            "stop_by": lim.stop_by if lim is not None else None,
            "past_session_limit": self._past_limit(),
            "warning": self.warning.text if self.warning is not None else None,
            "warning_level": self.warning.level if self.warning is not None else None,
        }

    def tmux(self) -> str:
        """The form for tmux ``status-right``: short, with a red warning (``#[fg=…]``).

        The session limit is shown from 24 h before it (``stop Sat 14:00 UTC``), in red
        once passed (D1).

        ``#`` in any text is doubled so tmux never reads it as a format.
        """
        acc = self.counts.accepted_unique_corpora
        copy = "copy ok" if self.retrieval.verified else "copy not verified"
        if self.warning is not None and self.warning.copy_words and copy in self.warning.short:
            copy = ""  # the red warning says it already
        unfinished = f"{self.unfinished} unfinished" if self.unfinished else ""
        lim = self.limit
        near = lim is not None and lim.at is not None and lim.at - lim.now <= timedelta(hours=24)
        stop = lim.stop_by.replace("stop by", "stop") if near and lim is not None else ""  # D1: a day before
        body = " ".join(w for w in (self.name, self.time_left_words, f"{self.counts.rows}r",
                                    unfinished, self._deliverables(True) or f"{acc}acc", copy, stop)
                        if w).replace("#", "##")
        if self._past_limit():
            return f"#[fg=colour231,bg=colour160,bold] past session limit #[default] {body}"
        if self.warning is not None:
            warn = self.warning.short.replace("#", "##")
            return f"#[fg=colour231,bg=colour160,bold] {warn} #[default] {body}"
        return body


def check_session_files(folder: Path) -> tuple[dict[str, Any], dict[str, Any], Counts]:
    """Refuse what opening the session refuses, with the same one line.

    The checks of :meth:`gpusession.core.folder.session.Session.open` and of reading the results
    (``gpusession show``), in their order, without their imports (``status`` runs every
    few seconds; polars is never imported): a results CSV or journal that is a symbolic
    link (:func:`gpusession.core.files.safefile.link_refused`), a FIFO, a device or a folder
    (:func:`gpusession.core.files.safefile.refuse_link_or_special`: never waited on); ``session.toml``
    read by :func:`gpusession.core.files.tomlread.read_toml` (a plain file, syntax,
    ``schema = 1``, required keys) and checked against
    :data:`gpusession.core.files.schema.SESSION`, its ``created_at`` and ``[package]``;
    ``checklist.toml`` and ``order.toml`` against their schemas; then the results CSV:
    its header (:meth:`gpusession.core.records.results.ResultsFile.check`) and every row
    (:meth:`gpusession.core.records.results.ResultsFile.checked_text`: UTF-8, 38 fields, each
    cell of its column's kind, no cell over
    :data:`gpusession.core.records.results.MAX_CELL_CHARS`) -- unless ``summary.json``
    describes the CSV's present bytes (size and SHA-256): it is written only after a
    checked append, so the rows are not parsed again.

    Args:
        folder: the session folder.

    Returns:
        The parsed ``session.toml``, ``checklist.toml`` (``{}`` when there is none) and
        the counts of the results CSV.

    Raises:
        BadInput: the first problem, worded as ``gpusession show`` words it.
    """

    def checked(path: Path, spec: Spec, required: tuple[str, ...] = ()) -> dict[str, Any]:
        doc = read_toml(path, required=required)
        check_types(doc, spec, path=path)
        return doc

    for name in (RESULTS_CSV, JOURNAL):  # first, as Session.open: a FIFO would wait forever
        refuse_link_or_special(folder / name)
    path = folder / SESSION_TOML
    doc = checked(path, SESSION, ("name", "created_at"))
    created = doc.get("created_at")
    if not isinstance(created, datetime) or created.tzinfo is None:  # as Session.open says it
        from gpusession.core.files.secrets import shown  # status: loaded on the error only

        raise BadInput(
            f"expected a date-time with UTC offset, e.g. 2026-11-29T14:00:00Z, got {shown(created)}",
            path=path, field="created_at",
        )
    check_time_range(created, field="created_at", path=path)
    Package.from_toml(doc.get("package", {}), path)
    read: dict[str, dict[str, Any]] = {}
    for name, spec in ((CHECKLIST_TOML, CHECKLIST), (ORDER_TOML, ORDER)):
        if (folder / name).exists():
            read[name] = checked(folder / name, spec)
    return doc, read.get(CHECKLIST_TOML, {}), _checked_counts(folder)


def _checked_counts(folder: Path) -> Counts:
    """The counts of the results CSV, its rows checked unless ``summary.json`` describes it.

    Raises:
        BadInput: the CSV's first problem, in the words of ``gpusession show``.
    """
    csv_path = folder / RESULTS_CSV
    try:
        st: os.stat_result | None = csv_path.stat()
    except FileNotFoundError:
        return Counts(0, frozenset(), 0)  # no CSV yet: nothing to check
    except OSError:
        st = None
    saved = _read_summary(folder)  # a count edited by hand is recounted (H-47)
    if saved is not None and st is not None and _summary_describes(saved, csv_path, st):
        return Counts(saved.rows, saved.revisions, st.st_size)
    from gpusession.core.records.results import ResultsFile

    ends = journal_run_ends(folder)
    results = ResultsFile(csv_path, lambda: ends)  # a link or a FIFO was refused above
    if not results.exists():
        return Counts(0, frozenset(), 0)
    raw, text = results.checked_text()  # header and every row, read once, as `show` reads them (stdlib)
    return (_count_records(text, None, Counts(0, frozenset(), len(raw)), ends)
            or Counts(0, frozenset(), len(raw)))


def unfinished_runs(folder: Path) -> int:
    """Runs the journal started without an end, while no process runs them (S7).

    Opening the session (``show``, ``run``, the TUI) records each as an incident row
    (:func:`gpusession.core.folder.recovery.recover_locked`); until then the CSV holds fewer
    rows than the session will, and ``status`` says so. Read by :func:`open_run_keys`: the
    journal's saved fold and the bytes appended since (no record class is loaded).

    Args:
        folder: the session folder.

    Returns:
        How many; 0 while a live process holds the run lock (a run in flight is no
        unfinished run), or when the journal does not read.
    """
    open_keys = open_run_keys(Path(folder))
    if not open_keys:
        return 0
    from gpusession.core.folder.journal import lock_holder

    return 0 if lock_holder(Path(folder)) is not None else len(open_keys)


def open_run_keys(folder: Path) -> frozenset[str]:
    """The runs the journal started and never ended, from its saved fold and the bytes since (S7, A5).

    Source: A5 (a refresh costs the new work, not the session). Why: reading a 15 MB
    journal on tmux's call every few seconds made ``status`` 50× ``python -c pass``.
    The fold is kept in ``journal-state.json`` and shared with opening a session
    (:func:`gpusession.core.folder.journal_state.journal_open_work`).

    Returns:
        The open run keys; empty when the journal is missing, unreadable or not a plain
        file (never waited on).
    """
    work = journal_open_work(Path(folder))
    return frozenset() if work is None else work.run_keys


#: ``session.toml`` tables ``status`` reads (the package, the limit, the unit; D1, S6, S8).
_STATUS_TABLES = ("package", "limit", "deliverable")


def _status_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """What ``status`` reads of a checked ``session.toml``: name, creation, its tables, the rule experiments.

    The experiments of a kind of deliverable other than the classification corpus (an
    accept rule) keep only their protocol's kind: what
    :func:`gpusession.core.money.count_cache.count_facts` reads (S10).
    """
    from gpusession.core.records.kinds import experiment_kinds

    out = {k: doc[k] for k in ("name", "created_at", *_STATUS_TABLES) if k in doc}
    exps = doc.get("experiments")
    if isinstance(exps, dict):
        out["experiments"] = {k: {"protocol": {"kind": exps[k]["protocol"].get("kind")}}
                              for k in experiment_kinds(exps)}
    return out


def status_facts(folder: Path) -> tuple[dict[str, Any], Retrieval, Counts]:
    """What ``status`` needs of the session's TOML files, checked, and the CSV's counts (S6, H-47).

    Source: A5 (a refresh costs the new work). Why: parsing a 500-experiment
    ``session.toml`` on tmux's call every few seconds cost 0.8 s. ``status-files.json``
    (:data:`gpusession.core.folder.caches.FILES_STATE`) keeps, sealed, what
    :func:`check_session_files` returned the last time it passed: the tables ``status``
    reads of ``session.toml`` (:func:`_status_doc`) and the copy-home state, under the
    ``stat`` signatures (size, modification and change times, inode, device) of
    ``session.toml``, ``checklist.toml`` and ``order.toml`` taken before they were read.
    While all three match, none is parsed (every check had passed on those bytes: a
    change moves the change time, which no user call sets back); otherwise they are
    checked as :func:`check_session_files` checks them, with the same refusal, and the
    state written again when they pass.

    Returns:
        The ``session.toml`` tables read, the copy-home state and the counts.

    Raises:
        BadInput: as :func:`check_session_files`.
    """
    folder = Path(folder)
    sigs = checked_files_signatures(folder)  # before they are read: a change while read is checked next time
    state = checked_state(folder)
    if state is not None:
        for name in (RESULTS_CSV, JOURNAL):  # first, as check_session_files: never waits on a FIFO
            refuse_link_or_special(folder / name)
        return state["session"], Retrieval(state["copy_verified"], state["copy_words"]), _checked_counts(folder)
    full, checklist, counts = check_session_files(folder)
    doc = _status_doc(full)
    retrieval, manifest = copy_state(folder, checklist)
    write_state(folder, FILES_STATE, {"files": sigs, "session": to_json_value(doc),
                                      "manifest": [str(manifest), file_signature(manifest)] if manifest else None,
                                      "copy_verified": retrieval.verified, "copy_words": retrieval.words})
    return doc, retrieval, counts


def list_facts(folder: Path) -> tuple[Package, int, int]:
    """What ``gpusession list`` says of a session: its package, result rows, accepted corpora (S6, A5).

    From the state ``status`` reads (:func:`status_facts`: the checked TOML files by their
    signatures, ``summary.json``), so a list of month-long sessions parses none of their
    ``session.toml`` nor CSV while they are unchanged; the same counts as ``status``.

    Raises:
        BadInput: as :func:`check_session_files` (``list`` then opens the session to word it).
    """
    folder = Path(folder)
    doc, _retrieval, counts = status_facts(folder)
    package = Package.from_toml(doc.get("package", {}), folder / SESSION_TOML)
    return package, counts.rows, counts.accepted_unique_corpora


def session_status(folder: Path, *, now: datetime | None = None) -> SessionStatus:
    """The status of the session in ``folder`` at ``now`` (S6).

    Reads ``session.toml``, ``checklist.toml``, ``order.toml`` (checked as every command
    checks them, :func:`check_session_files`, once per change of their ``stat``
    signatures: :func:`status_facts`), ``summary.json`` (the rows of the CSV are read and
    checked only when it does not describe the CSV) and the journal's open runs (its
    saved fold and the bytes since: :func:`open_run_keys`); imports no polars; never
    waits on a FIFO. O(1) in the session's size while nothing but the journal's end changed.

    Args:
        folder: the session folder.
        now: the instant (aware); a fake clock in tests; default now.

    Raises:
        BadInput: no such session, a session folder that is a symbolic link, or a file
            that ``gpusession show`` refuses (the same line).
    """
    folder = Path(folder)
    # first: no refusal below (they name the folder) may quote a secret-looking name
    check_name_secret(folder.name)
    if folder.is_symlink():  # as `show` and every command: never read through a link
        from gpusession.core.folder.session import (
            linked_session,  # the error path only: polars stays out
        )

        raise linked_session(folder)
    if not _NAME_RE.match(folder.name) or ".." in folder.name or not folder.is_dir():
        raise BadInput(f"no session {folder.name!r} in {folder.parent}", path=folder)
    doc, retrieval, counts = status_facts(folder)  # the TOML files checked once per change
    package = Package.from_toml(doc.get("package", {}), folder / SESSION_TOML)
    window = package_window(package, now)
    left = window.time_left_words()  # the same words as `show` and the TUI header
    return SessionStatus(
        name=folder.name,
        package=package,
        time_left_words=left,
        counts=counts,
        retrieval=retrieval,
        warning=package_warning(window, retrieval.verified),
        unfinished=unfinished_runs(folder),
        limit=limit_of(folder, doc, now),
        deliverables=_deliverables_cached(folder, doc),
    )


def _deliverables_cached(folder: Path, session_doc: dict[str, Any]) -> dict[str, Any] | None:
    """The count of deliverables as last counted, or ``? visuals``, when the session counts in its own unit (S10)."""
    from gpusession.core.money.count_cache import status_count

    return status_count(folder, session_doc)
