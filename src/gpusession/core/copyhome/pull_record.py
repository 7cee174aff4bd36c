"""What a pull proved of the copy home, kept so that a re-pull proves only what changed (S4, A5).

A pull proves two things of the copy home: every session file reads back (each TOML
parses, the results CSV reads) and every deliverable has the size and SHA-256 its
manifest lists. Proving them again from scratch costs a parse of every TOML and a hash
of every deliverable: a re-pull that finds nothing new then costs many times the rsync
that found nothing. So after each pull the files it proved are kept in a **pull
record**, one per copy home, with the ``lstat`` signature each file had when proved:

    (size_bytes, mtime_ns, ino, ctime_ns)

A file whose signature still equals its recorded one is the bytes that were proved: any
write changes ``ctime`` (the kernel sets it; ``os.utime`` sets the access and modification
times only, never ``ctime``), and a file replaced by a rename has another ``ino``. So a
hand edit with the size kept and the modification time put back (``os.utime``, H-47)
still differs, and is proved again. rsync's own writes change them too, so a file rsync
brought is proved again as well.

The signatures are kept per folder, with one digest of each folder's names and
signatures (:func:`folder_digest`): a re-pull takes the same digest of each folder it
walks and compares the two strings; only a folder whose string differs is decoded and
compared file by file (at 71,000 files in 3,000 folders, decoding every signature cost
more than the comparison, A5). Beside them, the journal's manifest lines with the
journal's signature, so that an unchanged journal is not read again.

Where: ``$XDG_STATE_HOME/gpusession/pulls/<sha256 of the copy's absolute path>.json``
(a folder made 0700, the file 0600), outside the copy: the copy stays the server's files.
Sealed with HMAC-SHA256 under the user's key (:func:`gpusession.core.files.seal.keyed_seal`,
H-78): a record written by another user, copied from another machine, or edited by hand
reads as absent, and the pull proves everything again. Beside it, per copy: the server's
``checklist.toml`` as last brought home (``.checklist``, put back before rsync so that
rsync copies it only when it changed there), the copy's ``retrieval.toml`` as the server
last took it (``.sent``); and once, ``rsync --version`` by the program's ``stat``. Who calls it:
:func:`gpusession.core.copyhome.pull.pull`. Standard library and the core only.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import stat
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from gpusession.core.copyhome.copylinks import CopyLink, link_at
from gpusession.core.copyhome.manifest import Signature, signature
from gpusession.core.events.manifest_lines import ManifestLine
from gpusession.core.files.errors import BadInput
from gpusession.core.files.seal import keyed_seal, keyed_seal_holds
from gpusession.core.files.tomlio import write_atomic_bytes

#: The record's format; another value reads as absent.
RECORD_VERSION = 1


def folder_digest(files: Mapping[str, Signature]) -> str:
    """The digest of one folder's files as walked: BLAKE2b over their names and signatures, in the given order.

    Why: a re-pull compares each folder of the copy with the record by this one string
    (A5); only a folder whose string differs is decoded and compared file by file. Every
    field of every signature is hashed (size, mtime, inode, ctime: H-47), so an edit
    with its size and mtime put back changes its folder's digest. The order is the
    walk's (the folder's own listing order): another order is another digest, which
    only costs that folder a comparison file by file.

    Args:
        files: name (no ``/``) → :data:`~gpusession.core.copyhome.manifest.Signature`.

    Returns:
        32 hex digits.
    """
    h = hashlib.blake2b(digest_size=16)
    h.update("\0".join(files).encode("utf-8", "surrogateescape"))
    try:
        h.update(array("q", chain.from_iterable(files.values())).tobytes())
    except (OverflowError, TypeError):  # a value past 64 bits (a time set far ahead): its digits instead
        h.update(repr(list(files.values())).encode("utf-8", "backslashreplace"))
    return h.hexdigest()


def split_rel(rel: str) -> tuple[str, str]:
    """A relative path as (its folder's prefix, ``""`` or ending in ``/``; its name): the record's keys."""
    head, slash, name = rel.rpartition("/")
    return head + slash, name


@dataclass
class TreeStat:
    """One walk of a copied folder (no link followed).

    Attributes:
        folders: each folder holding regular files, by prefix (``""`` for the top,
            ``runs/exp/`` below it) → its files by name → their
            :data:`~gpusession.core.copyhome.manifest.Signature`, in the walk's order.
        links: every symbolic link, as :func:`gpusession.core.copyhome.copylinks.links_in` finds them.
        digests: :func:`folder_digest` of the folders walked, by prefix (a folder
            :func:`restat` changed has none until :meth:`digest` computes it).
    """

    folders: dict[str, dict[str, Signature]] = field(default_factory=dict)
    links: list[CopyLink] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)

    @property
    def files(self) -> dict[str, Signature]:
        """Every regular file by path relative to the folder (``/``-separated) → its signature (built on each call)."""
        return {prefix + name: sig for prefix, entries in self.folders.items() for name, sig in entries.items()}

    @property
    def file_count(self) -> int:
        """The regular files."""
        return sum(map(len, self.folders.values()))

    @property
    def total_bytes(self) -> int:
        """The bytes of the regular files."""
        return sum(sig[0] for entries in self.folders.values() for sig in entries.values())

    def digest(self, prefix: str) -> str:
        """The :func:`folder_digest` of the folder ``prefix`` as it now stands."""
        got = self.digests.get(prefix)
        if got is None:
            got = self.digests[prefix] = folder_digest(self.folders.get(prefix, {}))
        return got


def stat_tree(folder: Path) -> TreeStat:
    """Every regular file and link under ``folder`` with its ``lstat`` signature, in one walk.

    Why: counting the files, finding the links (H-43) and telling what changed since the
    last pull read the same folder; one ``scandir`` walk serves all three. Each folder is
    opened once and its files are stated relative to it (``fstatat``: one name looked
    up, not the whole path: a quarter of the walk's time at 71,000 files, A5); each
    folder's :func:`folder_digest` is taken as it is read. A folder that is absent or a
    link gives an empty result; an unreadable sub-folder is left out (its files then
    lack a signature, so nothing in it is trusted). The cyclic garbage collector is held
    off meanwhile: the walk makes no cycle, and scanning its growing tables again and
    again cost a tenth of the walk.
    """
    out = TreeStat()
    root = Path(folder)
    if not root.is_dir() or root.is_symlink():
        return out
    collecting = gc.isenabled()
    gc.disable()
    try:
        _walk(root, out)
    finally:
        if collecting:
            gc.enable()
    out.links.sort(key=lambda c: c.path)
    return out


def _walk(root: Path, out: TreeStat) -> None:
    """:func:`stat_tree`'s walk of ``root`` (a folder, not a link) into ``out``."""
    real_root = os.path.realpath(root)
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    folders, digests = out.folders, out.digests
    stack = [""]
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        while stack:
            prefix = stack.pop()
            try:
                fd = os.open(prefix, flags, dir_fd=top) if prefix else os.dup(top)
            except OSError:
                continue
            files: dict[str, Signature] = {}
            try:
                with os.scandir(fd) as it:
                    for entry in it:
                        name = entry.name
                        try:
                            if entry.is_file(follow_symlinks=False):  # most entries: one test (d_type), one fstatat
                                st = entry.stat(follow_symlinks=False)
                                files[name] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)  # signature()
                            elif entry.is_dir(follow_symlinks=False):
                                stack.append(prefix + name + "/")
                            elif entry.is_symlink():
                                out.links.append(_link(real_root, prefix + name))
                        except OSError:
                            continue
            except OSError:
                pass
            finally:
                os.close(fd)
            if files:
                folders[prefix] = files
                digests[prefix] = folder_digest(files)
    finally:
        os.close(top)


def _link(real_root: str, rel: str) -> CopyLink:
    """The :class:`CopyLink` of the link ``rel`` under the folder whose real path is ``real_root`` (H-43)."""
    return link_at(os.path.join(real_root, rel), rel, real_root)


@dataclass
class PullRecord:
    """What the last pull proved of one copy home.

    Attributes:
        session: session files that read back → their signature when proved.
        deliverables: deliverables that matched their manifest → (signature, SHA-256).
    """

    session: dict[str, Signature] = field(default_factory=dict)
    deliverables: dict[str, tuple[Signature, str]] = field(default_factory=dict)


@dataclass
class KeptRecord:
    """A record as a re-pull reads it: one digest per folder, each folder's files decoded only when asked.

    Why: decoding every file's signature (7.5 MB of JSON at 71,000 files) cost a re-pull
    more than comparing them (A5); a folder whose digest equals the walk's is the bytes
    proved, and is never decoded.

    Attributes:
        folders: prefix → (:func:`folder_digest` of the files proved there, their JSON).
        deliverables: as :attr:`PullRecord.deliverables`.
        journal: the journal's signature when its ``manifest_written`` lines were read,
            and those lines (:func:`gpusession.core.copyhome.pull.manifest_records`):
            while its signature is that one, the journal is those bytes and is not read
            again (a month's journal: 18 MB); ``None`` when not kept.
    """

    folders: dict[str, tuple[str, str]] = field(default_factory=dict)
    deliverables: dict[str, tuple[Signature, str]] = field(default_factory=dict)
    journal: tuple[Signature, tuple[ManifestLine, ...]] | None = None

    def digest(self, prefix: str) -> str | None:
        """The digest of the files proved in the folder ``prefix``; ``None`` when none were."""
        got = self.folders.get(prefix)
        return None if got is None else got[0]

    def files(self, prefix: str) -> dict[str, Signature]:
        """The files proved in the folder ``prefix`` → their signature; empty when none or malformed."""
        got = self.folders.get(prefix)
        if got is None:
            return {}
        try:
            doc = json.loads(got[1])
            return dict(zip(doc.keys(), map(tuple, doc.values()), strict=True))
        except (ValueError, RecursionError, TypeError, AttributeError):  # never equals a file's signature
            return {}

    def as_record(self) -> PullRecord:
        """Every folder decoded: the :class:`PullRecord` written."""
        session = {prefix + name: sig for prefix in self.folders for name, sig in self.files(prefix).items()}
        return PullRecord(session, dict(self.deliverables))


def _pulls_dir() -> Path:
    """``$XDG_STATE_HOME/gpusession/pulls`` (default ``~/.local/state``): what pulls keep, outside the copies."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "gpusession" / "pulls"


def record_path(session_copy: Path) -> Path:
    """``$XDG_STATE_HOME/gpusession/pulls/<sha256 of the copy's absolute path>.json``."""
    key = hashlib.sha256(os.fsencode(os.path.abspath(session_copy))).hexdigest()[:40]
    return _pulls_dir() / f"{key}.json"


#: The file keeping the first line of ``rsync --version`` by the program's ``stat``.
RSYNC_VERSION_FILE = "rsync-version.json"


def _program_key(program: str) -> list[object] | None:
    """The program's real path and ``stat`` signature (size, mtime, inode, ctime); ``None`` when it is gone."""
    real = os.path.realpath(program)
    try:
        st = os.stat(real)
    except OSError:
        return None
    return [real, *signature(st)]


def kept_rsync_version(program: str) -> str | None:
    """The first line of ``PROGRAM --version`` kept by an earlier pull, while the program is the same file.

    Why: every pull checks that the rsync here is 3.1 or later (H-26); asking it costs a
    process per pull, though the answer changes only when rsync is reinstalled, which
    changes its ``stat`` signature (an upgrade replaces the file: another inode, ctime).
    ``None`` when none is kept, or the program's signature is not the one kept.
    """
    key = _program_key(program)
    try:
        doc = json.loads((_pulls_dir() / RSYNC_VERSION_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if key is None or not isinstance(doc, dict) or doc.get("program") != key:
        return None
    line = doc.get("version_line")
    return line if isinstance(line, str) else None


def keep_rsync_version(program: str, line: str) -> None:
    """Keep ``line`` (``PROGRAM --version``'s first line) by the program's signature; never raises."""
    key = _program_key(program)
    if key is None:
        return
    try:
        _pulls_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic_bytes(_pulls_dir() / RSYNC_VERSION_FILE,
                           json.dumps({"program": key, "version_line": line}).encode("utf-8"))
    except (OSError, BadInput):
        return


def _signed(copy: str, body: bytes) -> bytes:
    """What the seal covers: the copy's path and the record's bytes as stored."""
    return os.fsencode(copy) + b"\0" + body


def read_record(session_copy: Path) -> PullRecord:
    """The pull record of ``session_copy``, every folder decoded; empty when absent, unsealed, of another copy or malformed.

    Never raises: a record that does not read costs one full check.
    """
    body = open_record(session_copy)
    return PullRecord() if body is None else parse_record(body).as_record()


def open_record(session_copy: Path) -> bytes | None:
    """The sealed bytes of the record of ``session_copy``; ``None`` when absent, unsealed or of another copy.

    The file is one line of JSON (``version``, ``copy``, ``seal``), then the record's JSON
    (``session``, ``deliverables``) whose bytes the seal covers as stored: the seal is
    checked without decoding them (:func:`parse_record` decodes, beside the pull's rsync).
    """
    copy = os.path.abspath(session_copy)
    got = _own_headed_file(record_path(session_copy), copy)
    if got is None or not keyed_seal_holds(got[0].get("seal"), _signed(copy, got[1])):
        return None
    return got[1]


def _own_headed_file(path: Path, copy: str) -> tuple[dict[str, Any], bytes] | None:
    """A state file of this user's: its JSON head line (this version, this copy) and the bytes after it.

    ``None`` for a link, a file of another user, one that does not read, or a head of
    another version or copy; the caller checks the seal over what it covers.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    head, _, body = raw.partition(b"\n")
    try:
        meta = json.loads(head)
    except (ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or meta.get("version") != RECORD_VERSION or meta.get("copy") != copy:
        return None
    return meta, body


def parse_record(body: bytes) -> KeptRecord:
    """The record of sealed bytes :func:`open_record` returned; empty when they do not decode.

    The body is one JSON object: ``folders`` (prefix → ``[digest, JSON of its files]``,
    the files' JSON left as text until :meth:`KeptRecord.files` asks) and
    ``deliverables`` (path → ``[signature, SHA-256]``).
    """
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return KeptRecord()
    out = KeptRecord()
    if isinstance(doc, dict) and "folders" not in doc and isinstance(doc.get("session"), dict):
        doc = _by_folder(doc)  # a record kept before the folders: read as it is, not proved again
    folders = doc.get("folders") if isinstance(doc, dict) else None
    deliverables = doc.get("deliverables") if isinstance(doc, dict) else None
    if isinstance(folders, dict):
        for prefix, value in folders.items():
            if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
                out.folders[prefix] = (value[0], value[1])
    if isinstance(deliverables, dict):
        for rel, value in deliverables.items():
            if isinstance(value, list) and len(value) == 2 and isinstance(value[1], str):
                if isinstance(value[0], list):
                    out.deliverables[rel] = (tuple(value[0]), value[1])
    out.journal = _journal_lines(doc.get("journal") if isinstance(doc, dict) else None)
    return out


def _by_folder(doc: dict[str, Any]) -> dict[str, Any]:
    """A record of the earlier layout (``session``: path → signature) in the layout of folders; sealed as it was."""
    try:
        session = {rel: tuple(sig) for rel, sig in doc["session"].items()}
    except TypeError:  # a malformed signature: nothing of the session trusted
        session = {}
    folders = record_folders(session)
    return {"folders": {prefix: list(value) for prefix, value in folders.items()}, "deliverables": doc.get("deliverables")}


def _journal_lines(value: Any) -> tuple[Signature, tuple[ManifestLine, ...]] | None:
    """The record's ``journal`` (``[signature, [[line, at, path, deliverables, copy_in_deliverables], …]]``); ``None`` when malformed."""
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list) and len(value[0]) == 4
            and all(type(v) is int for v in value[0]) and isinstance(value[1], list)):
        return None
    lines: list[ManifestLine] = []
    for item in value[1]:
        if not (isinstance(item, list) and len(item) == 5 and type(item[0]) is int
                and all(v is None or isinstance(v, str) for v in item[1:])):
            return None
        lines.append(ManifestLine(*item))
    sig = value[0]
    return (sig[0], sig[1], sig[2], sig[3]), tuple(lines)


def _encodable(rel: str) -> bool:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # a name that is not UTF-8 is never recorded: proved each time
        return False
    return True


def record_folders(session: Mapping[str, Signature]) -> dict[str, tuple[str, str]]:
    """The record's ``folders`` of the session files proved: prefix → (:func:`folder_digest`, their JSON).

    Files are grouped by folder in the order given (the walk's), so that a folder whose
    files stand as proved has the digest the next walk takes of it. A name that is not
    UTF-8 is left out (proved each time).
    """
    grouped: dict[str, dict[str, Signature]] = {}
    for rel, sig in session.items():
        prefix, name = split_rel(rel)
        grouped.setdefault(prefix, {})[name] = sig
    return {prefix: folder_entry(files) for prefix, files in grouped.items()}


def folder_entry(files: Mapping[str, Signature]) -> tuple[str, str]:
    """One folder of the record: (:func:`folder_digest`, the JSON of its files), names not UTF-8 left out."""
    files = {name: sig for name, sig in files.items() if _encodable(name)}
    return folder_digest(files), json.dumps(files, ensure_ascii=False, separators=(",", ":"))


def changed_files(tree: TreeStat, record: KeptRecord) -> list[str]:
    """The files of ``tree`` whose signature is not the one ``record`` proved (relative paths, ``/``).

    A folder whose digest equals the record's is passed over whole, undecoded; the others
    are decoded and compared file by file (A5, H-47).
    """
    out: list[str] = []
    for prefix, entries in tree.folders.items():
        if tree.digest(prefix) == record.digest(prefix):
            continue
        kept = record.files(prefix)
        out += [prefix + name for name, sig in entries.items() if kept.get(name) != sig]
    return out


def proved_folders(tree: TreeStat, left_out: Iterable[str], record: KeptRecord) -> dict[str, tuple[str, str]]:
    """The record's ``folders`` of what a pull proved: every file of ``tree`` but those ``left_out``.

    A folder whose digest equals the record's keeps the record's text as it stands (no
    encoding again, A5); the others are encoded from ``tree``.
    """
    gone: dict[str, set[str]] = {}
    for rel in left_out:
        prefix, name = split_rel(rel)
        gone.setdefault(prefix, set()).add(name)
    out: dict[str, tuple[str, str]] = {}
    for prefix, entries in tree.folders.items():
        drop = gone.get(prefix)
        if drop is None:
            kept = record.folders.get(prefix)
            out[prefix] = kept if kept is not None and kept[0] == tree.digest(prefix) else folder_entry(entries)
            continue
        proved = {name: sig for name, sig in entries.items() if name not in drop}
        if proved:
            out[prefix] = folder_entry(proved)
    return out


def write_record(session_copy: Path, record: PullRecord | KeptRecord) -> None:
    """Keep ``record`` for the next pull of ``session_copy`` (sealed, atomically, 0600); never raises.

    A :class:`KeptRecord` is written as it stands (the folders that did not change keep
    their text). A record that cannot be written costs the next pull one full check.
    """
    folders = record.folders if isinstance(record, KeptRecord) else record_folders(record.session)
    path = record_path(session_copy)
    copy = os.path.abspath(session_copy)
    doc: dict[str, Any] = {
        "folders": {prefix: list(value) for prefix, value in folders.items()},
        "deliverables": {rel: [sig, digest] for rel, (sig, digest) in record.deliverables.items()
                         if _encodable(rel)},
    }
    if isinstance(record, KeptRecord) and record.journal is not None:
        sig, lines = record.journal
        doc["journal"] = [list(sig), [[x.line, x.at, x.path, x.deliverables, x.copy_in_deliverables] for x in lines]]
    try:
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a journal's line not UTF-8: not kept (read again next time)
        doc.pop("journal", None)
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    head = json.dumps({"version": RECORD_VERSION, "copy": copy, "seal": keyed_seal(_signed(copy, body))},
                      ensure_ascii=False).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic_bytes(path, head + b"\n" + body)
    except (OSError, BadInput):
        return


def forget_record(session_copy: Path) -> None:
    """Remove the record of ``session_copy`` (the next pull proves everything); never raises."""
    try:
        record_path(session_copy).unlink(missing_ok=True)
    except OSError:
        return


#: The session's checklist, which every pull rewrites at home (its ``[retrieval]``).
CHECKLIST = "checklist.toml"


def _kept_checklist_path(session_copy: Path) -> Path:
    """Where the server's ``checklist.toml``, as last brought home, is kept: beside the record."""
    return record_path(session_copy).with_suffix(".checklist")


def _checklist_signed(copy: str, mode: int, mtime_ns: int, data: bytes) -> bytes:
    """What the kept checklist's seal covers: the copy, the file's mode and mtime, its bytes."""
    return os.fsencode(copy) + b"\0" + f"{mode} {mtime_ns}".encode() + b"\0" + data


def keep_server_checklist(session_copy: Path) -> None:
    """Keep the server's ``checklist.toml``, as rsync just left it in the copy, for the next pull; never raises.

    Why: the pull then writes its ``[retrieval]`` into the copy's checklist, so the copy's
    file never equals the server's and rsync's quick check (size and time) would copy the
    server's back at every re-pull, though it did not change (S4, A5). The next pull puts
    these bytes, mode and mtime back (:func:`put_back_server_checklist`) before rsync: the
    server's file is copied only when it changed there. Kept beside the record, sealed
    (HMAC, H-78): one edited or of another copy reads as absent (the server's is copied).
    Written only when it differs from the one kept.
    """
    path = _kept_checklist_path(session_copy)
    copy = os.path.abspath(session_copy)
    try:
        fd = os.open(os.path.join(session_copy, CHECKLIST), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read()
        finally:
            os.close(fd)
        mode = stat.S_IMODE(st.st_mode)
        if _read_kept_checklist(session_copy) == (mode, st.st_mtime_ns, data):
            return
        head = json.dumps({"version": RECORD_VERSION, "copy": copy, "mode": mode, "mtime_ns": st.st_mtime_ns,
                           "seal": keyed_seal(_checklist_signed(copy, mode, st.st_mtime_ns, data))},
                          ensure_ascii=False).encode("utf-8")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic_bytes(path, head + b"\n" + data)
    except (OSError, BadInput):
        return


def _read_kept_checklist(session_copy: Path) -> tuple[int, int, bytes] | None:
    """The kept checklist's (mode, mtime_ns, bytes); ``None`` when absent, unsealed or of another copy."""
    copy = os.path.abspath(session_copy)
    got = _own_headed_file(_kept_checklist_path(session_copy), copy)
    if got is None:
        return None
    meta, data = got
    mode, mtime_ns = meta.get("mode"), meta.get("mtime_ns")
    if (not isinstance(mode, int) or not isinstance(mtime_ns, int) or isinstance(mode, bool)
            or not keyed_seal_holds(meta.get("seal"), _checklist_signed(copy, mode, mtime_ns, data))):
        return None
    return mode, mtime_ns, data


def put_back_server_checklist(session_copy: Path) -> bool:
    """Put the server's ``checklist.toml`` kept by the last pull back in the copy, before rsync; whether it was.

    The copy's checklist (the last pull's ``[retrieval]`` in it) is replaced by the
    server's bytes with their mode and mtime (:func:`keep_server_checklist`), so rsync's
    quick check copies the server's file only when it changed there; the pull writes
    its ``[retrieval]`` again after the copy. ``False`` (nothing written) when none is
    kept or it does not hold, or the server's own names a ``retrieval`` (a copy of a copy
    home): rsync then copies the server's file, as a first pull does, and the copy is
    marked "not verified" first. The checklist put back has no ``[retrieval]``, so a pull
    interrupted after it is never read as verified either.
    """
    kept = _read_kept_checklist(session_copy)
    target = Path(session_copy) / CHECKLIST
    if kept is None or target.is_symlink() or not Path(session_copy).is_dir():
        return False
    mode, mtime_ns, data = kept
    if b"retrieval" in data:  # a server's checklist that records a pull: an interrupted pull must not read as it
        return False
    try:
        write_atomic_bytes(target, data)
        os.chmod(target, mode)
        os.utime(target, ns=(mtime_ns, mtime_ns))
    except (OSError, BadInput):
        return False
    return True


def _file_key(path: Path) -> list[int] | None:
    """``[size_bytes, mtime_ns]`` of a regular file (what rsync's quick check compares); ``None`` otherwise."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns] if stat.S_ISREG(st.st_mode) else None


def _sent_path(session_copy: Path) -> Path:
    return record_path(session_copy).with_suffix(".sent")


def keep_sent(session_copy: Path, name: str) -> None:
    """Note that the server's ``name`` is the copy's file as it is now (size, mtime); never raises.

    Why: a pull writes ``retrieval.toml`` back with its time (``rsync -t``, D2); the next
    pull that finds the copy's file unchanged then knows the server holds it (rsync says
    nothing of a file absent there), and writes nothing back (A5). Sealed (HMAC, H-78).
    """
    key = _file_key(Path(session_copy) / name)
    if key is None or sent_holds(session_copy, name):
        return
    copy = os.path.abspath(session_copy)
    canon = json.dumps([copy, name, key]).encode("utf-8")
    try:
        _pulls_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic_bytes(_sent_path(session_copy),
                           json.dumps({"name": name, "file": key, "seal": keyed_seal(canon)}).encode("utf-8"))
    except (OSError, BadInput):
        return


def sent_holds(session_copy: Path, name: str) -> bool:
    """Whether the copy's ``name`` is, by size and mtime, the file :func:`keep_sent` noted the server holds."""
    key = _file_key(Path(session_copy) / name)
    try:
        doc = json.loads(_sent_path(session_copy).read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    canon = json.dumps([os.path.abspath(session_copy), name, key]).encode("utf-8")
    return (key is not None and isinstance(doc, dict) and doc.get("name") == name and doc.get("file") == key
            and keyed_seal_holds(doc.get("seal"), canon))


def file_key(path: Path) -> list[int] | None:
    """:func:`_file_key`, for the pull: whether rsync replaced a file is told by it."""
    return _file_key(path)


def restat(folder: Path, names: Iterable[str], tree: TreeStat) -> None:
    """Bring ``tree`` up to date for the entries ``names`` of ``folder`` (files, links; others left out).

    Why: a walk made while rsync wrote (:func:`stat_tree` beside the copy) may have seen
    a file before rsync replaced it, or missed one it made; rsync names what it wrote,
    and those entries alone are looked at again, links included (H-43). The digest of
    each folder touched is taken again when asked (:meth:`TreeStat.digest`).
    """
    real_root = os.path.realpath(folder)
    links = {c.path: c for c in tree.links}
    for name in names:
        prefix, base = split_rel(name)
        entries = tree.folders.get(prefix)
        if entries is not None:
            entries.pop(base, None)
        tree.digests.pop(prefix, None)
        links.pop(name, None)
        p = os.path.join(folder, name)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            tree.folders.setdefault(prefix, {})[base] = signature(st)
        elif stat.S_ISLNK(st.st_mode):
            links[name] = _link(real_root, name)
    for prefix in [p for p, entries in tree.folders.items() if not entries]:
        del tree.folders[prefix]
    tree.links = sorted(links.values(), key=lambda c: c.path)


__all__ = ["CHECKLIST", "RECORD_VERSION", "RSYNC_VERSION_FILE", "KeptRecord", "PullRecord", "TreeStat",
           "changed_files", "file_key", "folder_digest", "folder_entry", "forget_record", "keep_rsync_version", "keep_sent",
           "keep_server_checklist", "kept_rsync_version", "open_record", "parse_record",
           "proved_folders", "put_back_server_checklist", "read_record", "record_folders", "record_path", "restat", "sent_holds",
           "split_rel", "stat_tree", "write_record"]
