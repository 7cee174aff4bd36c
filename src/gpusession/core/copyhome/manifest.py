"""Checksums of the approved deliverables and the check of a retrieved copy (S4; G§8).

``manifest.csv`` lists the approved deliverables -- only them, apart from the technical
files of the session -- one row per file::

    path,size_bytes,sha256
    visuals/01 cover.png,183204,9f86d0...

``path`` is relative to the deliverables folder, with ``/`` separators, UTF-8. The scan
never follows a symlink out of the folder (nor a symlinked folder at all): such entries
are reported as skipped, never hashed. A manifest whose paths are absolute or escape
the folder (``..``) is refused.

:func:`verify_copy` runs on the person's own computer after the copy home: it compares
the copy with the manifest by size and SHA-256 -- not just by listing -- and names a few
representative files to open *from the copy* (G§8: a sample left on the remote machine is
not your archive).

Who calls it: ``gpusession manifest`` (which records the manifest in the checklist,
:func:`record_manifest`) / ``gpusession verify-copy``, ``pull`` (which copies the listed
files only), the checklist's evidence (stage 8) and the report.
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.csvtext import csv_bytes
from gpusession.core.files.digest import sha256_file
from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import refuse_link_or_special
from gpusession.core.files.seal import sealed
from gpusession.core.files.textio import printable, quoted, read_text
from gpusession.core.files.tomlio import read_toml, write_atomic_bytes, write_toml
from gpusession.core.folder.session import CHECKLIST_TOML, folder_lock, refuse_session_data

MANIFEST_COLUMNS = ("path", "size_bytes", "sha256")
#: The name of the manifest's copy written beside the deliverables
#: (``manifest --also-in-deliverables``), so a plain ``cp -r`` / ``rsync`` carries it.
MANIFEST_IN_DELIVERABLES = "manifest.csv"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class ManifestEntry:
    """One deliverable of the manifest (S4).

    Attributes:
        path: relative POSIX path inside the deliverables folder.
        size_bytes: size in bytes.
        sha256: 64 lower-case hex digits.
    """

    path: str
    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class Skipped:
    """An entry not hashed, with the reason in words (symlink out of the folder, ...)."""

    path: str
    reason: str


@dataclass(frozen=True)
class ScanResult:
    """What a scan of a folder found: regular files (sorted by path) and skipped entries."""

    files: list[Path]
    relative: list[str]
    skipped: list[Skipped]


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _rel(path: Path, root: Path) -> str:
    return PurePosixPath(*path.relative_to(root).parts).as_posix()


def scan_folder(folder: Path, *, exclude: set[Path] | None = None) -> ScanResult:
    """Every regular file under ``folder``, never following a symlink out of it.

    A symlink to a file inside the folder is listed (its content is hashed); a symlink
    pointing outside, a broken symlink, a symlink loop, a symlinked folder, a name that is not UTF-8 and
    anything that is not a regular file are skipped with the reason.

    Args:
        folder: the folder to scan.
        exclude: absolute paths to leave out (e.g. the manifest itself).

    Raises:
        BadInput: ``folder`` does not exist or is not a folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput("not a folder (expected the folder of approved deliverables)", path=folder)
    root = folder.resolve()
    excluded = {p.resolve() for p in (exclude or set())}
    files: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []

    def walk(current: Path) -> Iterator[os.DirEntry[str]]:
        try:
            with os.scandir(current) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(_rel(current, root) or ".", f"cannot read folder ({exc.strerror})"))
            return
        yield from entries

    excluded_names = {p.name for p in excluded}
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        current, prefix = stack.pop()
        for entry in walk(current):
            p = Path(entry.path)
            rel = prefix + entry.name  # relative to root, "/"-separated (as _rel gives it)
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                # named by its bytes (``e\xff.png``), never U+FFFD: two such names stay apart (H-44)
                skipped.append(Skipped(printable(rel, keep=""), "file name is not valid UTF-8; rename it"))
                continue
            if entry.is_symlink():
                try:
                    target = p.resolve()
                except (RuntimeError, OSError):  # a link loop: RuntimeError before 3.13
                    skipped.append(Skipped(rel, "symlink loop (the link leads back to itself); not followed"))
                    continue
                if not target.exists():
                    skipped.append(Skipped(rel, "broken symlink"))
                elif not _inside(target, root):
                    skipped.append(Skipped(rel, f"symlink pointing outside the folder ({target}); not followed"))
                elif target.is_dir():
                    skipped.append(Skipped(rel, "symlink to a folder; not followed"))
                elif target.is_file():
                    if p.absolute() not in excluded and target not in excluded:
                        files.append((rel, p))
                else:
                    skipped.append(Skipped(rel, "not a regular file"))
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((p, rel + "/"))
            elif entry.is_file(follow_symlinks=False):
                # resolved only when its name could be excluded: a pull checks thousands of files
                if entry.name not in excluded_names or p.resolve() not in excluded:
                    files.append((rel, p))
            else:
                skipped.append(Skipped(rel, "not a regular file (device, socket or pipe)"))
    files.sort(key=lambda t: t[0])
    skipped.sort(key=lambda s: s.path)
    return ScanResult([p for _, p in files], [r for r, _ in files], skipped)


@dataclass(frozen=True)
class ManifestWritten:
    """Result of :func:`write_manifest`: where, how many files, total bytes, skipped."""

    path: Path
    entries: list[ManifestEntry]
    skipped: list[Skipped]
    copy_path: Path | None = None

    @property
    def total_bytes(self) -> int:
        """Bytes of every hashed entry together (skipped entries not counted)."""
        return sum(e.size_bytes for e in self.entries)


def build_manifest(folder: Path, *, exclude: set[Path] | None = None) -> tuple[list[ManifestEntry], list[Skipped]]:
    """Hash every deliverable under ``folder`` (see :func:`scan_folder`)."""
    scan = scan_folder(folder, exclude=exclude)
    entries = [
        ManifestEntry(rel, p.stat().st_size, sha256_file(p))
        for rel, p in zip(scan.relative, scan.files, strict=True)
    ]
    return entries, scan.skipped


def manifest_bytes(entries: list[ManifestEntry]) -> bytes:
    """The CSV text of a manifest (polars; RFC 4180 quoting for commas, quotes, newlines).

    polars loads here, not with the module: a pull and ``verify-copy`` read manifests only.
    """
    import polars as pl

    frame = pl.DataFrame(
        {
            "path": [e.path for e in entries],
            "size_bytes": [e.size_bytes for e in entries],
            "sha256": [e.sha256 for e in entries],
        },
        schema={"path": pl.String, "size_bytes": pl.Int64, "sha256": pl.String},
    )
    return csv_bytes(frame)


def next_free_path(path: Path) -> Path:
    """``path`` if free, else ``stem-2.suffix``, ``stem-3.suffix``... (never overwrite)."""
    if not path.exists() and not path.is_symlink():
        return path
    n = 2
    while True:
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
        n += 1


def manifest_copy_in(folder: Path) -> Path | None:
    """The manifest's copy lying at the top of ``folder``, or ``None``.

    A top-level ``manifest.csv`` whose first line is the manifest header
    (``path,size_bytes,sha256``) is a manifest, not a deliverable: it is never listed by
    :func:`write_manifest` and never counted as extra by :func:`verify_copy`.

    Args:
        folder: the deliverables folder or its copy.

    Returns:
        The file's path, or ``None`` when there is none (or it is not a manifest).
    """
    p = Path(folder) / MANIFEST_IN_DELIVERABLES
    if p.is_symlink() or not p.is_file():
        return None
    try:
        with open(p, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return None
    return p if first.lstrip(b"\xef\xbb\xbf").rstrip(b"\r\n") == b"path,size_bytes,sha256" else None


def write_manifest(
    folder: Path,
    out: Path,
    *,
    force: bool = False,
    number_if_exists: bool = False,
    also_in_deliverables: bool = False,
    exclude: set[Path] | None = None,
) -> ManifestWritten:
    """Write ``manifest.csv`` of the deliverables in ``folder`` to ``out`` atomically (S4).

    Args:
        folder: the folder of approved deliverables.
        out: the manifest file to write (left out of the scan if it lies inside).
        force: overwrite an existing ``out``.
        number_if_exists: when ``out`` exists and not ``force``, write ``out-2.csv``
            (``-3``...) instead of refusing.
        also_in_deliverables: also write the same bytes to ``folder/manifest.csv``,
            replacing an earlier manifest copy there; a top-level
            ``manifest.csv`` is never listed when it is a manifest.
        exclude: files of ``folder`` left out (absolute paths): those not approved (S9).

    Raises:
        BadInput: ``folder`` is not a folder or holds no regular file, or ``out``
            exists (without ``force`` or ``number_if_exists``), or with
            ``also_in_deliverables`` a ``manifest.csv`` in ``folder`` that is not a
            manifest (a deliverable of that name is never replaced); nothing is written then.
    """
    out = Path(out)
    refuse_session_data(out, what="manifest")
    refuse_link_or_special(out, writing=True)  # --force replaces a regular file only (H-55)
    if out.exists() and not force:
        if not number_if_exists:
            raise BadInput("exists; pass --force to overwrite it, or choose another --out", path=out)
        out = next_free_path(out)
    if not out.parent.is_dir():
        raise BadInput("folder of the manifest does not exist", path=out.parent)
    exclude = {out.absolute(), *(exclude or set())}
    earlier_copy = manifest_copy_in(folder)
    if earlier_copy is not None:
        exclude.add(earlier_copy.absolute())
    copy_path: Path | None = None
    if also_in_deliverables:
        copy_path = Path(folder) / MANIFEST_IN_DELIVERABLES
        if (copy_path.exists() or copy_path.is_symlink()) and earlier_copy is None:
            raise BadInput("exists and is not a manifest; a deliverable is never replaced by the "
                           "manifest's copy (rename it, or leave out --also-in-deliverables); "
                           "nothing was written", path=copy_path)
        exclude.add(copy_path.absolute())
    entries, skipped = build_manifest(folder, exclude=exclude)
    if not entries:  # an empty manifest would let any copy "match" (S4)
        why = f"; skipped: {', '.join(f'{x.path} ({x.reason})' for x in skipped[:3])}" if skipped else ""
        raise BadInput(f"holds no regular file to list{why}; expected the folder of approved "
                       "deliverables, nothing was written", path=folder)
    data = manifest_bytes(entries)
    write_atomic_bytes(out, data)
    if copy_path is not None and copy_path.resolve() != out.resolve():
        write_atomic_bytes(copy_path, data)
    return ManifestWritten(out, entries, skipped, copy_path)


#: The ``checklist.toml`` table where ``gpusession manifest`` records the manifest it wrote (S11).
MANIFEST_TABLE = "manifest"


def record_manifest(session_folder: Path, written: ManifestWritten, deliverables: Path,
                    *, at: datetime | None = None) -> None:
    """Record the manifest just written in the session's ``checklist.toml`` (S11, A4).

    ``[manifest]``: ``path`` (absolute), ``at``, ``deliverables`` (the folder hashed),
    ``files``, ``total_bytes``, sealed (:mod:`gpusession.core.files.seal`): the checklist
    reads it as ``g8.manifest`` done by gpusession; a table written or edited by hand is
    no such fact (:mod:`gpusession.core.retrieval.known_facts`). The newest manifest
    replaces the table (the journal keeps every one).

    Args:
        session_folder: the session's folder.
        written: what :func:`write_manifest` wrote.
        deliverables: the folder it hashed.
        at: when (default now, UTC).

    Raises:
        BadInput: ``checklist.toml`` does not read (one line naming it; nothing written).
        Failure: the folder's lock is held too long.
    """
    path = Path(session_folder) / CHECKLIST_TOML
    with folder_lock(session_folder, what="recording the manifest"):
        doc: dict[str, Any] = read_toml(path) if path.exists() else {"schema": 1}
        doc[MANIFEST_TABLE] = sealed({
            "path": str(written.path.absolute()), "at": (at or utcnow()).replace(microsecond=0),
            "deliverables": str(Path(deliverables).absolute()), "files": len(written.entries),
            "total_bytes": written.total_bytes})
        write_toml(path, doc)


def check_relative(path_text: str, *, manifest: Path | None = None, line: int | None = None) -> str:
    r"""Refuse an absolute path or one that escapes the folder (S4).

    Paths are POSIX (``/``). On Windows a backslash is a separator too, so ``..\x``
    and ``\x`` are refused there; on POSIX a backslash is an ordinary character of a
    file name.

    Args:
        path_text: the path as written in the manifest.
        manifest: the manifest file, for the error message.
        line: its 1-based line, for the error message.

    Returns:
        The path in POSIX form.

    Raises:
        BadInput: empty, absolute (``/x``; ``C:x`` and ``\x`` on Windows), or with
            a ``..`` part.
    """
    if not path_text:
        raise BadInput("empty path", path=manifest, line=line, field="path")
    windows = os.name == "nt"
    if not windows and all(part not in ("", ".", "..") for part in path_text.split("/")):
        return path_text  # relative, already in POSIX form: what the checks below return for it
    text = path_text.replace("\\", "/") if windows else path_text
    p = PurePosixPath(text)
    if p.is_absolute() or (windows and re.match(r"^[A-Za-z]:", path_text)):
        raise BadInput(f"absolute path {quoted(path_text)}; expected a path relative to the folder",
                       path=manifest, line=line, field="path")
    if ".." in p.parts:
        raise BadInput(f"path {quoted(path_text)} escapes the folder ('..')", path=manifest, line=line, field="path")
    return p.as_posix()


def read_manifest(path: Path) -> list[ManifestEntry]:
    """Read and check a manifest (header, sizes, hashes, relative paths).

    Raises:
        BadInput: not found, not UTF-8 CSV, wrong header, a bad size or hash, a path that
            is absolute or escapes the folder, a duplicate path; the line is named.
    """
    path = Path(path)
    try:  # the same file unchanged is read once: a pull copies by it, then checks by it
        st = os.stat(path)
        key: tuple[str, int, int, int, int] | None = (str(path.absolute()), st.st_size, st.st_mtime_ns,
                                                       st.st_ino, st.st_ctime_ns)
    except OSError:
        key = None
    if key is not None and key in _READ:
        return list(_READ[key])
    entries = _read_manifest(path)
    if key is not None:
        _READ.clear()
        _READ[key] = tuple(entries)
    return entries


#: The last manifest read, by its path and ``stat`` signature (:func:`read_manifest`).
_READ: dict[tuple[str, int, int, int, int], tuple[ManifestEntry, ...]] = {}


def _read_manifest(path: Path) -> list[ManifestEntry]:
    """:func:`read_manifest` of a file not read before."""
    text = read_text(path, what="manifest", must="a manifest is UTF-8").text  # BOM ignored
    header = text.split("\n", 1)[0].rstrip("\r")
    if tuple(header.split(",")) != MANIFEST_COLUMNS:
        raise BadInput(f"header is {quoted(header)}, expected 'path,size_bytes,sha256'", path=path, line=1)
    # The csv module, not polars: it reports the line where each record starts, also
    # when a quoted path holds a line break, and a record with too many fields.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    entries: list[ManifestEntry] = []
    seen: set[str] = set()
    start = 1
    try:
        for i, record in enumerate(reader):
            line, start = start, reader.line_num + 1
            if i == 0:
                continue
            if not record:
                raise BadInput("blank line; expected path,size_bytes,sha256", path=path, line=line)
            if len(record) != len(MANIFEST_COLUMNS):
                raise BadInput(f"{len(record)} fields, expected 3 (path,size_bytes,sha256); quote "
                               "a path that holds a comma", path=path, line=line)
            rel = check_relative(record[0], manifest=path, line=line)
            size_text = record[1].strip()
            if not (size_text.isascii() and size_text.isdigit()):
                raise BadInput(f"expected a size in bytes ≥ 0, got {quoted(record[1])}", path=path,
                               line=line, field="size_bytes")
            size = int(size_text)
            digest = record[2].strip().lower()
            if not _HEX64.match(digest):
                raise BadInput("expected 64 hex digits", path=path, line=line, field="sha256")
            if rel in seen:
                raise BadInput(f"path {quoted(rel)} listed twice", path=path, line=line, field="path")
            seen.add(rel)
            entries.append(ManifestEntry(rel, size, digest))
    except csv.Error as exc:
        raise BadInput(f"not a manifest CSV ({exc}); a quoted path must end with a quote",
                       path=path, line=start) from None
    return entries


@dataclass(frozen=True)
class Changed:
    """A file present in the copy whose content differs from the manifest."""

    path: str
    expected_size_bytes: int
    actual_size_bytes: int
    expected_sha256: str
    actual_sha256: str | None  # None when the size already differs (not hashed)


@dataclass(frozen=True)
class CopyCheck:
    """Outcome of :func:`verify_copy` (S4).

    Attributes:
        matching: paths whose size and SHA-256 match.
        missing: manifest paths absent from the copy.
        extra: files in the copy that the manifest does not list.
        changed: files whose size or hash differs.
        renamed: ``(expected_path, found_path)`` pairs: a missing file whose exact content
            is in the copy under another name (also counted in missing and extra).
        skipped: entries of the copy not followed (symlinks out of it...).
        representative: a few matching files to open from the copy (largest, first, one
            per top-level folder).
    """

    matching: list[str]
    missing: list[str]
    extra: list[str]
    changed: list[Changed]
    renamed: list[tuple[str, str]]
    skipped: list[Skipped]
    representative: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True only when every listed file matches and nothing is missing, extra or changed."""
        return not (self.missing or self.extra or self.changed)


def representative_files(entries: list[ManifestEntry], limit: int = 6) -> list[str]:
    """A few files worth opening: the largest, the first by path, one per top-level folder."""
    if not entries:
        return []
    picks: list[str] = []

    def add(p: str) -> None:
        if p not in picks and len(picks) < limit:
            picks.append(p)

    by_path = sorted(entries, key=lambda e: e.path)
    add(max(entries, key=lambda e: (e.size_bytes, e.path)).path)
    add(by_path[0].path)
    tops: dict[str, str] = {}
    for e in by_path:
        top = e.path.split("/", 1)[0] if "/" in e.path else ""
        tops.setdefault(top, e.path)
    for top in sorted(tops):
        add(tops[top])
    add(by_path[-1].path)
    return picks


#: A file's ``lstat`` signature: ``(size_bytes, mtime_ns, ino, ctime_ns)``. Equal signatures
#: mean the same bytes for a file gpusession proved: every write changes ``ctime``, which
#: no user call sets back (``os.utime`` sets the access and modification times only).
Signature = tuple[int, int, int, int]


def signature(st: os.stat_result) -> Signature:
    """The :data:`Signature` of an ``lstat`` result."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


@dataclass
class Digests:
    """SHA-256 of the files of a copy, read again only where the file changed since proved (S4, A5).

    Attributes:
        trusted: path (relative, ``/``) → (signature when proved, SHA-256) from the last
            verified pull (:mod:`gpusession.core.copyhome.pull_record`).
        proven: what this check hashed or took from ``trusted``: path → (signature, SHA-256),
            for the next record. A link is hashed through and never recorded.
        hashed: how many files were read and hashed.
    """

    trusted: Mapping[str, tuple[Signature, str]] = field(default_factory=dict)
    proven: dict[str, tuple[Signature, str]] = field(default_factory=dict)
    hashed: int = 0

    def sha256(self, rel: str, path: Path) -> str:
        """The SHA-256 of ``path`` (known as ``rel``): the trusted one when its signature is unchanged.

        The signature is taken before the bytes are read, so a file written meanwhile
        differs from its record at the next check.
        """
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        regular = st is not None and stat.S_ISREG(st.st_mode)
        sig = signature(st) if st is not None and regular else None
        known = self.trusted.get(rel)
        if sig is not None and known is not None and known[0] == sig:
            self.proven[rel] = known
            return known[1]
        digest = sha256_file(path)
        self.hashed += 1
        if sig is not None:
            self.proven[rel] = (sig, digest)
        return digest


def verify_copy(manifest_path: Path, copy_dir: Path, *, digests: Digests | None = None) -> CopyCheck:
    """Compare a retrieved copy with the manifest by size and SHA-256 (S4, G§8).

    Args:
        manifest_path: a ``manifest.csv`` written by :func:`write_manifest`.
        copy_dir: the folder of the copy, as retrieved.
        digests: the SHA-256 a verified pull proved, by signature (a re-pull; below).

    Returns:
        Missing, extra, changed, renamed and matching files, skipped entries and a few
        representative files to open from the copy.

    Raises:
        BadInput: a bad manifest (see :func:`read_manifest`) or ``copy_dir`` not a folder.

    With ``digests`` (a re-pull), a file whose ``lstat`` signature equals the one it had
    when a verified pull hashed it is not read again (:class:`Digests`); ``digests.proven``
    then holds every matching file's signature and SHA-256.

    The manifest file itself and a top-level ``manifest.csv`` that is a manifest (see
    :func:`manifest_copy_in`) are never counted as extra files of the copy.
    """
    entries = read_manifest(manifest_path)
    copy_dir = Path(copy_dir)
    exclude = {Path(manifest_path).absolute()}
    carried = manifest_copy_in(copy_dir) if copy_dir.is_dir() else None
    if carried is not None:  # the manifest's own copy is no deliverable
        exclude.add(carried.absolute())
    scan = scan_folder(copy_dir, exclude=exclude)
    found = dict(zip(scan.relative, scan.files, strict=True))
    # A copy to another system may store "é" decomposed (NFD, e.g. macOS): same name.
    by_nfc: dict[str, str] = {}
    for r in scan.relative:
        by_nfc.setdefault(unicodedata.normalize("NFC", r), r)
    used: set[str] = set()
    matching: list[str] = []
    missing: list[str] = []
    changed: list[Changed] = []
    for e in entries:
        rel: str | None = (e.path if e.path in found
                           else by_nfc.get(unicodedata.normalize("NFC", e.path)))
        p = found.get(rel) if rel is not None else None
        if p is None or rel is None:
            missing.append(e.path)
            continue
        used.add(rel)
        size = p.stat().st_size
        if size != e.size_bytes:
            changed.append(Changed(e.path, e.size_bytes, size, e.sha256, None))
            continue
        digest = digests.sha256(rel, p) if digests is not None else sha256_file(p)
        if digest != e.sha256:
            if digests is not None:
                digests.proven.pop(rel, None)
            changed.append(Changed(e.path, e.size_bytes, size, e.sha256, digest))
        else:
            matching.append(e.path)
    extra = [r for r in scan.relative if r not in used]
    renamed: list[tuple[str, str]] = []
    if missing and extra:
        gone = set(missing)
        by_key = {(e.size_bytes, e.sha256): e.path for e in entries if e.path in gone}
        for r in extra:
            p = found[r]
            size = p.stat().st_size
            if any(k[0] == size for k in by_key):
                key = (size, sha256_file(p))
                if key in by_key:
                    renamed.append((by_key.pop(key), r))
    matched = set(matching)
    ok_entries = [e for e in entries if e.path in matched]
    return CopyCheck(
        matching=matching,
        missing=missing,
        extra=extra,
        changed=changed,
        renamed=renamed,
        skipped=scan.skipped,
        representative=representative_files(ok_entries),
    )


__all__ = [
    "Changed",
    "CopyCheck",
    "Digests",
    "ManifestEntry",
    "MANIFEST_TABLE",
    "ManifestWritten",
    "Skipped",
    "build_manifest",
    "MANIFEST_IN_DELIVERABLES",
    "check_relative",
    "manifest_copy_in",
    "next_free_path",
    "read_manifest",
    "record_manifest",
    "representative_files",
    "scan_folder",
    "Signature",
    "signature",
    "verify_copy",
    "write_manifest",
]
