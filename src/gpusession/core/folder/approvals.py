"""A person's decision on each deliverable file: approved or rejected, by whom, on which bytes (S9).

The rental guide's work is accepted by a named person (seed 003 §1: who approves). Each
decision is kept in the session's ``approvals.toml`` (atomic, 0600, under the folder
lock; free text checked like every note)::

    deliverables = "/home/ana/visuals-out"
    [files."visual-01.png"]
    decision = "approved"
    sha256 = "9f86d0…"
    size_bytes = 1234
    by = "Ana Reviewer"
    at = 2026-12-03T10:00:00Z
    criteria = "readable at 50 %"

``path`` is relative to the deliverables folder, with ``/`` separators. A file whose bytes
changed after its approval is no longer approved ("changed after approval on …"): it
is never silently counted. The CLI (``approve`` / ``reject`` / ``deliverables``) and
the Validation pane go through :func:`decide`.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from gpusession.core.events.deliverable_records import DeliverableDecidedRecord
from gpusession.core.files.bounds import number_past_bound
from gpusession.core.files.clock import utcnow
from gpusession.core.files.digest import sha256_file
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.files.tomlio import read_toml, write_toml
from gpusession.core.folder.copy_home import COPY_HOME_TOML, copy_home_deliverables

if TYPE_CHECKING:
    from gpusession.core.folder.session import Session

APPROVALS_TOML = "approvals.toml"
DECISIONS = ("approved", "rejected")
#: Longest name of a person recorded (characters).
WHO_MAX_CHARS = 80


@dataclass(frozen=True)
class Decision:
    """One person's decision on one file (S9).

    Attributes:
        path: relative POSIX path inside the deliverables folder.
        decision: ``approved`` or ``rejected``.
        sha256: the file's digest at the decision.
        size_bytes: its size then.
        by: who decided.
        at: when (aware UTC).
        text: the criteria (approved) or the reason (rejected); ``None`` when not given.
    """

    path: str
    decision: str
    sha256: str
    size_bytes: int
    by: str
    at: datetime
    text: str | None = None

    def to_toml(self) -> dict[str, Any]:
        """The ``[files."<path>"]`` table."""
        key = "criteria" if self.decision == "approved" else "why"
        return {"decision": self.decision, "sha256": self.sha256, "size_bytes": self.size_bytes,
                "by": self.by, "at": self.at, key: self.text}


@dataclass(frozen=True)
class FileState:
    """One deliverable as it stands now (S9).

    Attributes:
        path: relative POSIX path.
        state: ``approved``, ``rejected``, ``changed`` (bytes differ from the approved
            ones), ``missing`` (decided, no longer there), ``refused`` (decided, there but
            never read: :attr:`reason`) or ``to-decide``.
        decision: the recorded decision, ``None`` for a file still to decide.
        sha256: the digest now (``None`` when missing, refused or not hashed).
        reason: why a ``refused`` file is not read (H-82), e.g. ``"is a symbolic link"``.
    """

    path: str
    state: str
    decision: Decision | None
    sha256: str | None
    reason: str | None = None

    def words(self) -> str:
        """``visual-01.png  approved by Ana on 2026-12-03 10:00 UTC (readable)``."""
        d = self.decision
        when = d.at.strftime("%Y-%m-%d %H:%M UTC") if d is not None else ""
        if self.state == "to-decide":
            return f"{self.path}  still to decide"
        assert d is not None
        if self.state == "changed":
            return f"{self.path}  changed after approval on {when} (by {d.by}): not counted; approve it again"
        if self.state == "missing":
            return f"{self.path}  {d.decision} by {d.by} on {when}, but the file is no longer there: not counted"
        if self.state == "refused":
            return f"{self.path}  {d.decision} by {d.by} on {when}, but it {self.reason}: not counted"
        tail = f" ({d.text})" if d.text else ""
        return f"{self.path}  {d.decision} by {d.by} on {when}{tail}"


def approvals_path(session: Session) -> Path:
    """``<session>/approvals.toml``."""
    return Path(session.folder) / APPROVALS_TOML


def read_approvals(session: Session) -> dict[str, Any]:
    """``approvals.toml`` parsed once (``{}`` when absent), to pass to the readers below.

    Why: one reload of the Validation pane asks for the folder, the decisions and the
    count; each parsing a 3,000-decision file again cost seconds on the event loop.

    Raises:
        BadInput: the file does not read as TOML.
    """
    path = approvals_path(session)
    if not path.exists():
        return {}
    return read_toml(path)


#: The most files and the deepest folder a deliverables folder is walked to (H-54): far
#: above an ordinary job's 20,000 generated images (H-56), far below a filesystem's.
WALK_MAX_FILES = 200_000
WALK_MAX_DEPTH = 32


def _is_home(real: Path) -> bool:
    """Whether ``real`` (a resolved path) is a home folder: this user's, ``/root`` or one under ``/home``.

    Read from the path and ``$HOME`` alone: no account database is enumerated on every read.
    """
    return (real == Path(os.path.realpath(os.path.expanduser("~"))) or real in (Path("/root"), Path("/home"))
            or real.parent == Path("/home"))


#: The kernel's own folders: what is under them is no file of anyone's (H-81).
PSEUDO_FOLDERS = (Path("/proc"), Path("/sys"), Path("/dev"))
#: Filesystem types whose files the kernel makes up as they are read (H-81), wherever mounted.
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "bpf",
    "configfs", "pstore", "efivarfs", "fusectl", "binfmt_misc", "mqueue", "hugetlbfs", "rpc_pipefs",
    "nsfs", "autofs",
})
#: Where Linux lists the mounts this process sees (absent elsewhere: the folders alone are checked).
MOUNTINFO = Path("/proc/self/mountinfo")


def _unescape_mount(field: str) -> str:
    r"""A mountinfo path with its octal escapes (``\040`` for a space) decoded."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def filesystem_type(real: Path) -> str | None:
    """The type of the filesystem ``real`` (a resolved path) is on, from :data:`MOUNTINFO`; ``None`` when unread.

    The mount whose point is the longest prefix of ``real`` (the last listed when several
    are stacked there). Source: H-81.
    """
    try:
        lines = MOUNTINFO.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    best: tuple[int, str] | None = None
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if not sep or len(fields) < 5 or not tail.split():
            continue
        point = Path(_unescape_mount(fields[4]))
        if real.is_relative_to(point) and (best is None or len(point.parts) >= best[0]):
            best = (len(point.parts), tail.split()[0])
    return best[1] if best is not None else None


def _pseudo_filesystem(real: Path) -> str | None:
    """Why ``real`` (resolved) holds no one's files, ``None`` when it may: under /proc, /sys, /dev or on such a mount."""
    for top in PSEUDO_FOLDERS:
        if real.is_relative_to(top):
            return f"is under {top}, the kernel's own folder"
    kind = filesystem_type(real)
    if kind is not None and (kind in PSEUDO_FILESYSTEMS or kind.startswith("cgroup")):
        return f"is on a {kind} filesystem, the kernel's own"
    return None


def unfit_folder(folder: Path, session_folder: Path) -> str | None:
    """Why ``folder`` cannot be a deliverables folder, ``None`` when it can (H-54, H-81).

    Source: H-54, H-81, S9. Why: every decision walks the folder; ``/``, a home folder (a
    file approved in ``~`` made the whole home, a 37,115-file venv with it, the folder) or
    one holding the session would be walked whole, and hand over the technical files; a
    pseudo-filesystem (``/proc``, ``/sys``, ``/dev``, or a proc, sysfs, cgroup… mount
    anywhere, by :data:`MOUNTINFO`) is the kernel's, its files made up as they are read.
    """
    real = Path(os.path.realpath(folder))
    session_dir = Path(os.path.realpath(session_folder))
    if real == Path(real.anchor):
        return "is the root of the filesystem; keep the deliverables in a folder of their own"
    pseudo = _pseudo_filesystem(real)
    if pseudo is not None:
        return f"{pseudo}, not a folder of files; keep the deliverables in a folder of their own"
    if _is_home(real):
        return "is a home folder; keep the deliverables in a folder of their own (e.g. ~/out)"
    if real == session_dir or session_dir.is_relative_to(real):
        return ("holds the session's technical files; keep the deliverables in a folder of "
                "their own (handed over apart from the technical files)")
    return None


def deliverables_folder(session: Session, doc: Mapping[str, Any] | None = None) -> Path | None:
    """The folder the decisions are checked against, ``None`` before the first decision.

    ``doc`` is :func:`read_approvals`'s result when the caller has it (read otherwise).
    In a copy home made by ``pull`` (:func:`copy_home_deliverables`) it is the pulled copy
    ``TO/NAME-deliverables``, never the server's path recorded in ``approvals.toml``, which
    is not walked here even where a folder of that path exists (S4, S10). The one
    resolution for the count, the kinds, ``deliverables`` and the Validation pane.

    Raises:
        BadInput: ``approvals.toml`` or ``copy-home.toml`` does not read, ``deliverables``
            is not text, or it names a folder that is never walked (:func:`unfit_folder`:
            ``/``, a home, one holding the session), refused before a file of it is visited
            (H-54).
    """
    value = (read_approvals(session) if doc is None else doc).get("deliverables")
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"expected a folder path, got {shown(value)}", path=approvals_path(session),
                       field="deliverables")
    pulled = copy_home_deliverables(session.folder)
    if pulled is not None:
        why = unfit_folder(pulled, session.folder)
        if why is not None:
            raise BadInput(f"{shown(str(pulled))} {why}; nothing was walked",
                           path=Path(session.folder) / COPY_HOME_TOML, field="deliverables_copy")
        return pulled
    why = unfit_folder(Path(value), session.folder)
    if why is not None:
        raise BadInput(f"{shown(value)} {why}; nothing was walked", path=approvals_path(session),
                       field="deliverables")
    return Path(value)


def load_approvals(session: Session, doc: Mapping[str, Any] | None = None) -> dict[str, Decision]:
    """Every recorded decision, by relative path (S9); ``doc`` as for :func:`deliverables_folder`.

    Raises:
        BadInput: a decision that does not read (naming the file and the field).
    """
    if doc is None:
        doc = read_approvals(session)
    files = doc.get("files", {})
    where = approvals_path(session)
    if not isinstance(files, Mapping):
        raise BadInput('expected [files."<path>"] tables', path=where, field="files")
    out: dict[str, Decision] = {}
    for rel, t in files.items():
        field = f'files."{rel}"'
        if not isinstance(t, Mapping):
            raise BadInput("expected a table", path=where, field=field)
        decision, digest, size, by, at = (t.get(k) for k in ("decision", "sha256", "size_bytes", "by", "at"))
        if decision not in DECISIONS:
            raise BadInput(f"expected approved or rejected, got {shown(decision)}", path=where,
                           field=f"{field}.decision")
        if not (isinstance(digest, str) and len(digest) == 64):
            raise BadInput("expected a SHA-256 (64 hex digits)", path=where, field=f"{field}.sha256")
        if not isinstance(size, int) or not isinstance(by, str) or not isinstance(at, datetime):
            raise BadInput("expected size_bytes, by and at (a date-time)", path=where, field=field)
        if isinstance(size, bool) or size < 0 or number_past_bound(size, "bytes"):  # H-41
            raise BadInput("expected a byte count from 0 to under 2^63", path=where, field=f"{field}.size_bytes")
        text = t.get("criteria") if decision == "approved" else t.get("why")
        out[str(rel)] = Decision(str(rel), decision, digest, size, by, at,
                                 text if isinstance(text, str) else None)
    return out


def relative_name(folder: Path, path: Path) -> str:
    """``path`` inside ``folder`` as a POSIX relative path, NFC.

    Raises:
        BadInput: ``path`` is outside the folder, a link, or not a regular file.
    """
    if os.path.islink(path):
        raise BadInput("is a symbolic link; decide on the file itself", path=path)
    try:  # every folder between the deliverables folder and the file: never a link (H-53)
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(folder)).parts
    except ValueError:
        parts = ()
    below = Path(os.path.abspath(folder))
    for part in parts[:-1]:
        below = below / part
        if os.path.islink(below):
            raise BadInput(f"goes through the symbolic link {below}; decide on files inside the "
                           "deliverables folder itself (nothing was recorded)", path=path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise BadInput(f"cannot be read ({exc.strerror})", path=path) from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput("is not a regular file (a deliverable is one file)", path=path)
    try:
        rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(folder))
    except ValueError:
        raise BadInput(f"is not inside the deliverables folder {folder}; decisions are kept relative "
                       "to one folder", path=path) from None
    return unicodedata.normalize("NFC", PurePosixPath(*rel.parts).as_posix())


def _check_who(who: str) -> str:
    t = (who or "").strip()
    if not t or len(t) > WHO_MAX_CHARS or any(unicodedata.category(c)[0] == "C" for c in t):
        raise BadInput(f"expected the name of the person who decides (at most {WHO_MAX_CHARS} characters), "
                       f"got {shown(who)}", field="by")
    return t


def decide(session: Session, paths: list[Path], *, decision: str, by: str, text: str | None = None,
           deliverables: Path | None = None, now: datetime | None = None) -> list[Decision]:
    """Record one decision per file: its digest now, who, when, criteria or reason (S9).

    The one function behind ``approve``, ``reject`` and the Validation pane's ``a`` / ``j``.
    Every file is checked before anything is written; the write is atomic under the
    session folder's lock, and each decision is journaled.

    Args:
        session: the open session.
        paths: the deliverable files.
        decision: ``approved`` or ``rejected``.
        by: who decides.
        text: the criteria (approve) or the reason (reject: required).
        deliverables: the folder decisions are relative to; default the one already
            recorded, else the folder of the first file.
        now: the decision time (tests).

    Returns:
        The decisions recorded, in the order given.

    Raises:
        BadInput: no file, a file outside the folder, a link, a reject without a reason,
            a deliverables folder other than the recorded one, free text refused.
    """
    if decision not in DECISIONS:
        raise BadInput(f"expected approved or rejected, got {shown(decision)}", field="decision")
    if not paths:
        raise BadInput("name at least one deliverable file", field="PATH")
    who = _check_who(by)
    note = (text or "").strip() or None
    if decision == "rejected" and note is None:
        raise BadInput("say why with --why TEXT (a rejection is kept with its reason)", field="why")
    at = now or utcnow()
    with session.locked("recording the decision"):
        doc = read_approvals(session)
        stored = deliverables_folder(session, doc)
        folder = Path(os.path.abspath(deliverables if deliverables is not None else
                                      (stored if stored is not None else Path(paths[0]).parent)))
        if stored is not None and Path(os.path.abspath(stored)) != folder:
            raise BadInput(f"the decisions of this session are relative to {stored}; name files there "
                           "(one deliverables folder per session)", field="deliverables")
        if not folder.is_dir():
            raise BadInput("not a folder (expected the folder of the deliverables)", path=folder)
        why = unfit_folder(folder, session.folder)  # `/`, a home, the session's own (H-54)
        if why is not None:
            raise BadInput(why, path=folder)
        walk_deliverables(folder)  # a folder its readers would refuse is refused before anything is recorded (H-80)
        made = []
        for p in paths:
            rel = relative_name(folder, Path(p))
            full = folder / rel
            made.append(Decision(rel, decision, sha256_file(full), full.stat().st_size, who, at, note))
        files = dict(doc.get("files") or {})
        for d in made:
            files[d.path] = d.to_toml()
        # in a copy home the server's folder stays recorded: the next pull compares the file with the server's
        recorded = (doc["deliverables"] if stored is not None and copy_home_deliverables(session.folder) is not None
                    else str(folder))
        write_toml(approvals_path(session), {**doc, "deliverables": recorded, "files": files})
        os.chmod(approvals_path(session), 0o600)
        session.journal_many([DeliverableDecidedRecord(path=d.path, sha256=d.sha256, decision=d.decision,
                                                       by=d.by, text=d.text) for d in made])
    return made


def walk_deliverables(folder: Path) -> dict[str, Path]:
    """The regular files of ``folder`` by relative POSIX path (NFC), links and the manifest's copy left out.

    Source: H-54, H-80. Why: every reader and :func:`decide` walk the folder; the walk is
    bounded so a folder past it is refused before a decision is recorded in it.

    Raises:
        BadInput: past :data:`WALK_MAX_FILES` files or :data:`WALK_MAX_DEPTH` levels of
            folders, naming the bound hit (the walk stops there).
    """
    present: dict[str, Path] = {}
    walked = 0
    for root, dirs, names in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        walked += len(names)
        if walked > WALK_MAX_FILES:  # bounded, never the whole disk (H-54)
            raise BadInput(f"holds more than {WALK_MAX_FILES:,} files (the walk stopped there); keep the "
                           "deliverables in a folder of their own", path=folder)
        if depth > WALK_MAX_DEPTH:
            raise BadInput(f"holds folders more than {WALK_MAX_DEPTH} levels deep ({shown(str(Path(root)))} "
                           f"is {depth} levels down); keep the deliverables in a folder of their own", path=folder)
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
        for n in sorted(names):
            full = Path(root) / n
            if n == "manifest.csv" and Path(root) == folder:
                continue  # the manifest's copy beside the deliverables
            if full.is_symlink() or not full.is_file():
                continue
            rel = unicodedata.normalize("NFC", PurePosixPath(*full.relative_to(folder).parts).as_posix())
            present[rel] = full
    return present


def why_not_read(folder: Path, rel: str) -> str | None:
    """Why a decided path the walk did not find is not read, ``None`` when it is simply gone.

    Source: H-82. Why: a FIFO, a link, a path through a linked folder or out of the folder
    (``../x``, ``/etc/hostname``), hand-edited into ``approvals.toml``, was said "no longer
    there" though it was there. Only ``lstat`` is called: nothing is opened or followed.
    """
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts:
        return "is outside the deliverables folder (decisions are kept inside it)"
    below = Path(folder)
    for part in path.parts[:-1]:
        below = below / part
        if os.path.islink(below):
            return f"is reached through the linked folder {shown(str(below))} (never followed)"
    try:
        st = os.lstat(Path(folder, *path.parts))
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link (never followed; decide on the file itself)"
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a special file")
        return f"is not a regular file ({kind})"
    if path.name == "manifest.csv" and len(path.parts) == 1:
        return "is the manifest's copy beside the deliverables, never a deliverable"
    return None


def file_states(session: Session, *, hash_files: bool = True,
                proposed: Path | None = None, doc: Mapping[str, Any] | None = None) -> list[FileState]:
    """Every deliverable: the decided ones and the files still to decide, by path (S9).

    Args:
        session: the open session.
        hash_files: compare each decided file's digest now with the recorded one.
        proposed: the folder to list before the first decision (the Validation pane
            offers the last accepted output so that the first one can be made there);
            ignored once a folder is recorded.
        doc: :func:`read_approvals`'s result when the caller has it (parsed once).

    Returns:
        One state per file of the deliverables folder and per decided path; empty before
        the first decision unless ``proposed`` is given.

    Raises:
        BadInput: ``approvals.toml`` does not read.
    """
    if doc is None:
        doc = read_approvals(session)
    folder = deliverables_folder(session, doc) or proposed
    decided = load_approvals(session, doc)
    if folder is None:
        return []
    present = walk_deliverables(folder) if folder.is_dir() else {}
    out: list[FileState] = []
    for rel in sorted(set(present) | set(decided)):
        d = decided.get(rel)
        found = present.get(rel)
        if d is None:
            out.append(FileState(rel, "to-decide", None, None))
            continue
        if found is None:
            why = why_not_read(folder, rel)
            out.append(FileState(rel, "missing", d, None) if why is None else FileState(rel, "refused", d, None, why))
            continue
        digest = sha256_file(found) if hash_files else None
        if d.decision == "approved" and digest is not None and digest != d.sha256:
            out.append(FileState(rel, "changed", d, digest))
        else:
            out.append(FileState(rel, d.decision, d, digest))
    return out


def approved_digests(states: list[FileState]) -> set[str]:
    """The distinct digests of files approved and unchanged (S10: distinct by SHA-256).

    Bytes that a person also rejected under another name (:func:`conflicts`) are left out
    until settled: a deliverable counts as accepted only when nobody refused it (S9).
    """
    disputed = {c.sha256 for c in conflicts(states)}
    return {d for s in states
            if s.state == "approved" and s.decision is not None
            and (d := s.sha256 or s.decision.sha256) not in disputed}


@dataclass(frozen=True)
class SameBytes:
    """An approved file whose bytes are those of a file approved before it: counted once (S10).

    Attributes:
        path: the file approved later (relative POSIX path).
        same_as: the file approved first with the same bytes (by decision time, then path).
        sha256: their digest.
    """

    path: str
    same_as: str
    sha256: str

    def words(self) -> str:
        """``chart-02.png: same bytes as chart-01.png: counted once``."""
        return f"{self.path}: same bytes as {self.same_as}: counted once"


@dataclass(frozen=True)
class Conflict:
    """The same bytes approved under one name and rejected under another: for a person to settle (S9).

    Attributes:
        sha256: the bytes' digest.
        approved: ``(path, by)`` of each approved file with these bytes.
        rejected: ``(path, by)`` of each rejected one.
    """

    sha256: str
    approved: tuple[tuple[str, str], ...]
    rejected: tuple[tuple[str, str], ...]

    def paths(self) -> tuple[str, ...]:
        """Every file of the conflict, approved first."""
        return tuple(p for p, _ in self.approved + self.rejected)

    def words(self) -> str:
        """``conflict: the same bytes approved by Ana (chart-01.png) and rejected by Bo (chart-07.png); …``."""
        def who(pairs: tuple[tuple[str, str], ...]) -> str:
            return ", ".join(f"{by} ({path})" for path, by in pairs)

        return (f"conflict: the same bytes approved by {who(self.approved)} and rejected by "
                f"{who(self.rejected)}; settle it (approve or reject them all): not counted until "
                "then")


def _digest(st: FileState) -> str | None:
    return st.sha256 or (st.decision.sha256 if st.decision is not None else None)


def same_bytes(states: list[FileState]) -> list[SameBytes]:
    """The approved files that repeat the bytes of one approved before (S10: counted once).

    Returns:
        One :class:`SameBytes` per repeat, in decision order; the first file approved with
        those bytes is never listed.
    """
    first: dict[str, str] = {}
    out: list[SameBytes] = []
    approved = [st for st in states if st.state == "approved" and st.decision is not None]
    for st in sorted(approved, key=lambda x: (x.decision.at, x.path)):  # type: ignore[union-attr]
        digest = _digest(st)
        if digest is None:
            continue
        if digest in first:
            out.append(SameBytes(st.path, first[digest], digest))
        else:
            first[digest] = st.path
    return out


def conflicts(states: list[FileState]) -> list[Conflict]:
    """The bytes approved under one name and rejected under another (S9), by digest.

    Only files as they stand (``approved`` unchanged, ``rejected`` present) are compared:
    a file changed after its approval or gone is no decision on these bytes any more.
    """
    by_digest: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for st in states:
        digest = _digest(st)
        if st.state in DECISIONS and st.decision is not None and digest is not None:
            by_digest.setdefault(digest, {"approved": [], "rejected": []})[st.state].append(
                (st.path, st.decision.by))
    return [Conflict(d, tuple(sides["approved"]), tuple(sides["rejected"]))
            for d, sides in sorted(by_digest.items(), key=lambda kv: min(p for p, _ in
                                                                         kv[1]["approved"] + kv[1]["rejected"]))
            if sides["approved"] and sides["rejected"]]


__all__ = ["APPROVALS_TOML", "COPY_HOME_TOML", "Conflict", "Decision", "FileState", "SameBytes", "approved_digests",
           "approvals_path", "conflicts", "copy_home_deliverables", "decide", "deliverables_folder", "file_states",
           "load_approvals", "read_approvals", "relative_name", "same_bytes", "unfit_folder", "walk_deliverables", "why_not_read"]
