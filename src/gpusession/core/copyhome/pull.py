"""Bring a session home with rsync, and prove the copy whole (S4, G§8).

``gpusession pull [USER@]HOST:PATH/sessions/NAME`` runs on the person's own computer.
It runs the real ``rsync`` (over ``ssh``; ``--ssh CMD`` or ``RSYNC_RSH`` to override):

1. the session folder, with rsync's per-file checksums (``--checksum``), into
   ``TO/NAME``; then every TOML file and the results CSV are read back. A re-pull proves
   only what changed since the last pull (:mod:`gpusession.core.copyhome.pull_record`:
   rsync's quick check, the files changed at home compared by checksum, only the files
   whose ``lstat`` signature moved read back or hashed), so finding nothing new costs
   about what ``rsync -a`` costs (A5; ``benchmarks/bench_pull.py``): it copies no file,
   records no throughput and writes nothing to the server (the server's ``checklist.toml``
   put back before rsync, :func:`pull_record.put_back_server_checklist`);
2. the deliverables (``--deliverables DIR``, else the folder named by the newest
   manifest the server's journal recorded) into ``TO/NAME-deliverables``: when the
   session copy holds that manifest, only the files it lists (``--files-from``); the
   files it does not list stay on the server and are named
   (:mod:`gpusession.core.copyhome.approved_copy`); without one, the whole folder;
3. the deliverables are compared with the newest SHA-256 manifest made on the server
   (:func:`gpusession.core.copyhome.manifest.verify_copy`), which is named.

Partial files live in ``TO/.gpusession-pull/NAME/`` (``--partial-dir``, ``--temp-dir``),
never under their final name, so a rerun resumes and a killed transfer leaves no file
that looks finished. Files under their final name are trusted only once verified.

When deliverables were copied, ``copy-home.toml`` in the copy names ``NAME-deliverables``
and the server's folder, so the decisions of the copy's ``approvals.toml`` are checked
against the copy at home (:func:`gpusession.core.folder.approvals.deliverables_folder`, S10).

The result -- verified or not, what, when, how many files, total bytes, which manifest --
is written into the local copy's ``checklist.toml`` (``[retrieval]`` and the evidence of
the item ``g8.verify-copy``); no item is ticked in the file (S1): the checklist reads a
verified ``[retrieval]`` as ``g8.verify-copy`` done (S11, :mod:`gpusession.core.retrieval.known_facts`). A pull that starts first marks
the local copy "not verified", so an interrupted pull is never called verified.

rsync failures are mapped to one line each (unknown host, refused login, no rsync on
either side, permission denied, disk full, missing source) by :func:`explain_failure`.
Standard library and the core only: no torch, no textual.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import stat
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpusession.core.copyhome import approved_copy, pull_record, throughput
from gpusession.core.copyhome.copylinks import CopyLink, outside_reason
from gpusession.core.copyhome.manifest import (
    CopyCheck,
    Digests,
    ManifestEntry,
    Signature,
    manifest_copy_in,
    read_manifest,
    verify_copy,
)
from gpusession.core.copyhome.throughput import RETRIEVAL_TOML, Recorded, RsyncStats, parse_stats
from gpusession.core.events.manifest_lines import ManifestLine, manifest_lines
from gpusession.core.files.clock import utcnow
from gpusession.core.files.digest import sha256_plain
from gpusession.core.files.errors import BadInput, Failure
from gpusession.core.files.names import JOURNAL, MANIFEST_CSV, RESULTS_CSV
from gpusession.core.files.nesting import loads_toml, read_toml_text
from gpusession.core.files.seal import sealed
from gpusession.core.files.textio import printable, quoted, read_plain
from gpusession.core.files.tomlio import read_toml, write_toml
from gpusession.core.files.units import format_bytes
from gpusession.core.folder.copy_home import COPY_HOME_TOML
from gpusession.core.folder.processes import end_child_tree
from gpusession.core.folder.session import CHECKLIST_TOML, folder_lock, validate_name
from gpusession.core.records.results import ResultsFile

#: Where partial and temporary files of a pull live, under ``--to``.
WORK_DIR = ".gpusession-pull"
#: The checklist item that holds the evidence of the retrieval (stage 8).
EVIDENCE_ITEM = "g8.verify-copy"

_PROGRESS_RE = re.compile(
    r"^\s*(?P<bytes>[\d,.]+)\s+(?P<pct>\d{1,3})%\s+(?P<rate>\S+)\s+(?P<eta>\d+:\d{2}:\d{2})"
)


# -- source ------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """Where the session lies: ``host`` (``user@host`` or ``None`` for a local path) and ``path``."""

    host: str | None
    path: str

    @property
    def name(self) -> str:
        """The session's name: the last part of the path."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def spec(self, path: str | None = None) -> str:
        """The rsync spelling of ``path`` (default: the session) on this source, as a folder (``…/``)."""
        p = (path or self.path).rstrip("/") + "/"
        return f"{self.host}:{p}" if self.host else p

    def words(self, path: str | None = None) -> str:
        """``host:path`` or the local path, for messages."""
        p = path or self.path
        return f"{self.host}:{p}" if self.host else p


def parse_source(text: str) -> Source:
    """Split ``[USER@]HOST:PATH`` or a local path.

    As rsync does: a colon before the first ``/`` makes it remote; ``./a:b`` is local.

    Raises:
        BadInput: empty, an empty host or path, or a session name that is not a slug.
    """
    if not text.strip():
        raise BadInput("expected [USER@]HOST:PATH/sessions/NAME or a local folder", field="SRC")
    colon, slash = text.find(":"), text.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        host, path = text[:colon], text[colon + 1 :]
        if not host or host.endswith("@") or not path:
            raise BadInput(f"{quoted(text)}: expected [USER@]HOST:PATH/sessions/NAME", field="SRC")
        src = Source(host, path)
    elif colon == 0:
        raise BadInput(f"{quoted(text)}: no host before ':'; expected [USER@]HOST:PATH", field="SRC")
    else:
        src = Source(None, str(Path(text).absolute()))
    try:
        validate_name(src.name)
    except BadInput:
        raise BadInput(f"{quoted(text)} does not end with a session folder (sessions/NAME)", field="SRC") from None
    return src


# -- rsync -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Progress:
    """One progress reading of ``rsync --info=progress2`` (whole transfer).

    Attributes:
        bytes_done: bytes transferred so far.
        percent: 0-100.
        rate: rsync's rate text (``1.23MB/s``).
        eta: rsync's time left (``0:00:12``).
    """

    bytes_done: int
    percent: int
    rate: str
    eta: str


def parse_progress(line: str) -> Progress | None:
    """Read one ``--info=progress2`` line (``  1,234,567  45%  1.23MB/s  0:00:12 (xfr#3, …)``)."""
    m = _PROGRESS_RE.match(line)
    if m is None:
        return None
    digits = re.sub(r"[^\d]", "", m.group("bytes"))
    return Progress(int(digits or 0), min(100, int(m.group("pct"))), m.group("rate"), m.group("eta"))


#: rsync and the option every call takes: ``--protect-args`` sends a remote path whole,
#: so "my work [x]/sessions/s" is not split at its spaces by an rsync before 3.2.4 (or
#: one with ``RSYNC_OLD_ARGS=1``); 3.2.4 and later protect it anyway (H-26).
RSYNC = ("rsync", "--protect-args")

#: The start of the line rsync prints for each item it changes (``--out-format``, :func:`rsync_command`).
ITEM_MARK = b"gpusession-item "
#: rsync's escape of a byte in a name it prints (``\\#012`` for a newline).
_RSYNC_ESCAPE = re.compile(rb"\\#([0-7]{3})")

#: The oldest rsync a pull works with: 3.1 brought ``--info=progress2`` (3.0 ``--protect-args``).
MIN_RSYNC_VERSION = (3, 1)


def check_local_rsync() -> None:
    """Refuse, in one line and before anything is copied, an rsync too old for a pull (H-26).

    macOS ships rsync 2.6.9 (or openrsync), which rejects ``--info=progress2`` with only
    "syntax or usage error (code 1)": the line says which rsync this is and to install
    rsync 3.x. An rsync whose version cannot be read is tried as it is. The answer is
    kept by the program's ``stat`` signature (:func:`pull_record.kept_rsync_version`):
    asked again only when rsync is another file (reinstalled, another one on ``PATH``).

    Raises:
        TransferFailed: openrsync, or an rsync older than :data:`MIN_RSYNC_VERSION`.
    """
    program = shutil.which("rsync")
    if program is None:
        return  # run_rsync says how to install it
    first = pull_record.kept_rsync_version(program)  # asked once per installed rsync (its stat), A5
    if first is None:
        try:
            done = subprocess.run(["rsync", "--version"], capture_output=True, text=True, timeout=30,
                                  env=dict(os.environ, LC_ALL="C"))
        except (OSError, subprocess.SubprocessError):
            return
        first = ((done.stdout or done.stderr).strip().splitlines() or [""])[0].strip()
        if done.returncode == 0 and first:
            pull_record.keep_rsync_version(program, first)
    m = re.search(r"rsync\s+version\s+v?(\d+)\.(\d+)", first)
    if "openrsync" in first or (m is not None and (int(m[1]), int(m[2])) < MIN_RSYNC_VERSION):
        raise TransferFailed(f"the rsync on this computer is too old for a pull ({first[:80]}): it needs "
                             "rsync 3.1 or later (--info=progress2, --protect-args); install rsync 3.x "
                             "(brew install rsync, apt-get install rsync) and rerun", 1)


def rsync_command(
    source: str,
    dest: Path,
    *,
    work: Path,
    checksum: bool,
    ssh: str | None,
    bwlimit_kbps: int | None = None,
    rsync_path: str | None = None,
    itemize: bool = False,
) -> list[str]:
    """The rsync call of one part of a pull (``--stats``: its own figures, D2).

    Args:
        source: ``host:path/`` or ``path/``.
        dest: the local folder (created by rsync).
        work: the folder for partial and temporary files (absolute, same disk as ``dest``).
        checksum: compare files by checksum, not size and time (the session folder).
        ssh: the remote shell (``-e``); ``None`` lets rsync use ``RSYNC_RSH`` or ssh.
        bwlimit_kbps: ``--bwlimit`` in KiB/s.
        rsync_path: the rsync program on the server (``--rsync-path``).
        itemize: name each item rsync changes in any way (``--out-format``, a line
            :data:`ITEM_MARK` ``%i %n``), read by :func:`run_rsync`.
    """
    cmd = [*RSYNC, "-a", "--partial", f"--partial-dir={work / 'partial'}",
           f"--temp-dir={work / 'tmp'}", "--info=progress2", "--no-inc-recursive", "--stats"]
    if checksum:
        cmd.append("--checksum")
    if itemize:
        cmd.append(f"--out-format={ITEM_MARK.decode()}%i %n")
    if ssh:
        cmd += ["-e", ssh]
    if bwlimit_kbps:
        cmd.append(f"--bwlimit={bwlimit_kbps}")
    if rsync_path:
        cmd.append(f"--rsync-path={rsync_path}")
    return [*cmd, source, str(dest).rstrip("/") + "/"]


class TransferFailed(Failure):
    """rsync did not finish; the message is one line in words. Exit 1 (2 for bad input)."""

    def __init__(self, message: str, exit_code: int = 1, *, resume_refused: bool = False) -> None:
        """Keep the line, the exit code and whether rsync refused its own partial file.

        The line names server paths and quotes rsync: control characters escaped (H-44).
        """
        super().__init__(printable(message, keep=""))
        self.exit_code = exit_code
        self.resume_refused = resume_refused


_FAILURES: tuple[tuple[str, str, int], ...] = (
    (r"Could not resolve hostname|Name or service not known|nodename nor servname",
     "unknown host {host}: check the name (or its entry in ~/.ssh/config)", 2),
    (r"Connection refused", "{host} refused the connection: is ssh running there, on that port?", 1),
    (r"Connection timed out|No route to host|Network is unreachable|Operation timed out",
     "cannot reach {host}: the network or the machine does not answer", 1),
    (r"Permission denied \((publickey|password|keyboard)",
     "{host} refused the login (permission denied): check the user name and the key (--ssh 'ssh -i KEY')", 1),
    (r"rsync: (command )?not found|rsync: No such file or directory|rsync-path|\bnot found\b.*rsync|rsync.*: not found",
     "rsync is not installed on {host}: install it there (apt-get install rsync)", 1),
    (r"No space left on device|Disk quota exceeded",
     "disk full on this computer while writing {dest}: free space and rerun (the pull resumes)", 1),
    (r"protect-args|on remote machine: -s|unknown option",
     "the rsync on {host} is too old for a pull (it refused --protect-args): install rsync 3.x there", 1),
    (r"(change_dir|link_stat) .*failed: No such file or directory",
     "not found on {where}: {missing}", 2),
    (r"Permission denied \(13\)|Permission denied",
     "permission denied: {detail}", 1),
)


#: ssh's words when the key the server shows differs from the one known for it.
_KEY_CHANGED_RE = re.compile(r"REMOTE HOST IDENTIFICATION HAS CHANGED|host key for .* has changed",
                             re.IGNORECASE)
#: ssh's words when no key is known for the server yet (strict checking, or no terminal to ask).
_KEY_UNKNOWN_RE = re.compile(r"No [\w-]+ host key is known for|Host key verification failed")


def host_key_advice(stderr: str, host: str | None) -> str | None:
    """What to do about ssh's host key refusal, told apart from ssh's own words (H-64).

    Two cases, never mixed: ``changed`` (ssh: "REMOTE HOST IDENTIFICATION HAS CHANGED"):
    the server shows another key than the one known, which may be another machine: check
    with the provider before removing the old key (``ssh-keygen -R``); ``first contact``
    ("No … host key is known for …", or "Host key verification failed." alone, when ssh
    had no terminal to ask): no key is known yet, so there is nothing to remove: check
    the fingerprint and accept it once. Parsing an outside program's words (ssh's).

    Returns:
        One line, or ``None`` when ssh did not refuse a host key.
    """
    who = host or "the source"
    if _KEY_CHANGED_RE.search(stderr):  # changed
        return (f"the host key of {who} has CHANGED since it was recorded (ssh: REMOTE HOST "
                "IDENTIFICATION HAS CHANGED): it may be another machine; ask the provider whether "
                f"the server was reinstalled, and only then remove the old key (ssh-keygen -R {who}) "
                "and pull again")
    if _KEY_UNKNOWN_RE.search(stderr):  # first contact
        return (f"first contact with {who}: its host key is not known yet; check its key "
                f"fingerprint with the provider, then run `ssh {who}` once and answer yes (or "
                f"ssh-keyscan {who} >> ~/.ssh/known_hosts after checking the fingerprint), and "
                "pull again")
    return None


def explain_failure(returncode: int, stderr: str, *, host: str | None, dest: Path, where: str) -> TransferFailed:
    """One line for a failed rsync, from its exit code and stderr.

    Args:
        returncode: rsync's exit code (255: ssh failed; 12: connection closed; 20: signal;
            23/24: partial transfer; 11: file I/O).
        stderr: what rsync and ssh wrote.
        host: the server, ``None`` for a local source.
        dest: the local folder written.
        where: the source, in words.

    Returns:
        The error to raise (exit 2 for an unknown host or a missing source, else 1).
    """
    text = stderr.strip()
    if returncode == 23 and re.search(r"failed verification -- update (put into|discarded)", text):
        # rsync 3.2.7 with Debian's security fixes (and 3.4.0) rejects its own partial file
        # from an absolute --partial-dir (RsyncProject/rsync#715): the copy is retried whole.
        return TransferFailed(f"rsync refused to resume {where} from its partial file", 1,
                              resume_refused=True)
    if returncode == 24:  # "some files vanished before they could be transferred"
        gone = re.findall(r'file has vanished: "([^"]+)"', text)
        named = (f" ({', '.join(gone[:3])}{' …' if len(gone) > 3 else ''})" if gone else "")
        return TransferFailed(f"files vanished on the server while {where} was copied{named}: a run is "
                              "probably still writing there; pull again when it ends (nothing is called "
                              "verified)", 1)
    key = host_key_advice(text, host)
    if key is not None:
        return TransferFailed(key, 1)
    for pattern, words, code in _FAILURES:
        m = re.search(pattern, text)
        if m is None:
            continue
        line = next((ln for ln in text.splitlines() if re.search(pattern, ln)), text)
        missing = re.search(r'"([^"]+)"', line)
        return TransferFailed(
            words.format(host=host or "the source", dest=dest, where=where,
                         missing=missing.group(1) if missing else where,
                         detail=line.removeprefix("rsync: ").strip()),
            code,
        )
    if returncode in (20, -2, -15, -9, 130, 143):
        return TransferFailed(f"the copy from {where} was interrupted; rerun the same command to "
                              "resume (nothing is called verified)", 1)
    last = text.splitlines()[-1] if text else f"rsync exit code {returncode}"
    return TransferFailed(f"rsync failed copying {where} (exit code {returncode}): {last}", 1)


def run_rsync(
    cmd: list[str],
    *,
    host: str | None,
    dest: Path,
    where: str,
    on_progress: Callable[[Progress], None] | None = None,
    items: list[str] | None = None,
) -> RsyncStats | None:
    """Run rsync, feed its progress lines to ``on_progress``, raise on failure.

    ``items``, when given, receives the path (relative to the destination) of each item
    rsync named with :data:`ITEM_MARK` (``rsync_command(itemize=True)``): what it wrote.

    Returns:
        rsync's own figures (``--stats``: bytes moved and its elapsed time, D2) with the
        call's time by gpusession's monotonic clock (``clock_seconds``); ``None`` when it
        printed none.

    Raises:
        TransferFailed: rsync missing on this computer, or it failed (one line).
    """
    if shutil.which(cmd[0]) is None:
        raise TransferFailed("rsync is not installed on this computer: install it "
                             "(apt-get install rsync, brew install rsync) and rerun", 1)
    env = dict(os.environ, LC_ALL="C")
    started_s = time.monotonic()  # D2: the transfer timed by our clock, not rsync's whole seconds
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    err_chunks: list[bytes] = []
    stderr = proc.stderr

    def drain() -> None:
        for chunk in iter(lambda: stderr.read(4096), b""):
            if sum(map(len, err_chunks)) < 64_000:
                err_chunks.append(chunk)

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    buf = b""
    out = proc.stdout
    said: deque[str] = deque(maxlen=64)  # the --stats lines come last
    try:
        for chunk in iter(lambda: os.read(out.fileno(), 4096), b""):
            buf += chunk
            *lines, buf = re.split(rb"[\r\n]", buf)
            for raw in lines:
                if items is not None and raw.startswith(ITEM_MARK):
                    name = raw[len(ITEM_MARK):].partition(b" ")[2]
                    name = _RSYNC_ESCAPE.sub(lambda e: bytes([int(e.group(1), 8)]), name)
                    items.append(name.decode("utf-8", "surrogateescape").rstrip("/"))
                    continue
                line = raw.decode("utf-8", "replace")
                p = parse_progress(line)
                if p is None:
                    said.append(line)
                elif on_progress is not None:
                    on_progress(p)
        said.append(buf.decode("utf-8", "replace"))
        rc = proc.wait()
        elapsed_s = time.monotonic() - started_s
    except BaseException:  # Ctrl-C, SIGTERM or SIGHUP (the command's handlers), an error
        end_child_tree(proc, grace_s=10.0)  # rsync keeps its partial file; its ssh ends too
        raise
    t.join(timeout=5)
    if rc != 0:
        raise explain_failure(rc, b"".join(err_chunks).decode("utf-8", "replace"),
                              host=host, dest=dest, where=where)
    stats = parse_stats("\n".join(said))
    return None if stats is None else dataclasses.replace(stats, clock_seconds=elapsed_s)


def differing_files(source_spec: str, dest: Path, paths: list[str], *, work: Path,
                    ssh: str | None, rsync_path: str | None = None) -> set[str] | None:
    """Which of ``paths`` differ in content between the source and its copy.

    A file that does not match its manifest either differs from the server's file (the
    copy is stale or damaged: ``pull --checksum`` fetches it again) or equals it (the
    server's own file changed after the manifest was made: no copy can fix that). rsync
    tells them apart without copying anything: ``-n --checksum --itemize-changes`` with
    ``--files-from`` lists a file (``>f…``) when its bytes differ on the two sides.

    Args:
        source_spec: ``host:path/`` or ``path/`` (:meth:`Source.spec`).
        dest: the local copy.
        paths: the files to compare, relative to both folders (``/``-separated).
        work: a folder of the pull's own (the list of paths is written there).
        ssh: the remote shell, as for :func:`rsync_command`.
        rsync_path: the rsync program on the server, as for :func:`rsync_command`.

    Returns:
        The paths whose content differs; ``None`` when rsync could not tell (it failed).
    """
    if not paths:
        return set()
    work.mkdir(parents=True, exist_ok=True)
    listing = work / "changed-files.txt"
    listing.write_text("".join(f"{p}\n" for p in paths), encoding="utf-8")
    cmd = [*RSYNC, "-a", "-n", "--checksum", "--itemize-changes", "--out-format=%i %n",
           f"--files-from={listing}"]
    if ssh:
        cmd += ["-e", ssh]
    if rsync_path:
        cmd.append(f"--rsync-path={rsync_path}")
    cmd += [source_spec, str(dest).rstrip("/") + "/"]
    try:
        done = subprocess.run(cmd, capture_output=True, env=dict(os.environ, LC_ALL="C"),
                              timeout=3600, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        listing.unlink(missing_ok=True)
    if done.returncode != 0:
        return None
    differ: set[str] = set()
    for raw in done.stdout.decode("utf-8", "replace").splitlines():
        item, _, name = raw.partition(" ")
        if len(item) >= 2 and item[0] in "<>" and item[1] == "f":  # bytes to transfer
            differ.add(name)
    return differ


# -- reading the copy back -----------------------------------------------------------
@dataclass(frozen=True)
class FolderCount:
    """Files and bytes of a folder (what the evidence states)."""

    files: int
    total_bytes: int


def count_files(folder: Path) -> FolderCount:
    """Regular files under ``folder`` and their bytes (symlinks not followed)."""
    files = total = 0
    for dirpath, _dirs, names in os.walk(folder):
        for n in names:
            p = Path(dirpath) / n
            if p.is_file() and not p.is_symlink():
                files += 1
                total += p.stat().st_size
    return FolderCount(files, total)


def check_session_copy(folder: Path) -> list[str]:
    """Read the copied session back: every TOML parses, the results CSV reads.

    Returns:
        One line per problem (empty when the copy reads).
    """
    return read_back(folder, None)[0]


def read_back(folder: Path, files: Iterable[str] | None) -> tuple[list[str], set[str]]:
    """Read back the session files ``files`` (relative, ``/``): each TOML parses, the results CSV reads (S4).

    Args:
        folder: the session copy.
        files: the regular files to read back; ``None``: every ``*.toml`` under the folder
            and the CSV. A re-pull passes the files changed since its last verified pull
            (:mod:`gpusession.core.copyhome.pull_record`): each TOML is parsed once, and
            only when it may differ from the bytes proved.

    Returns:
        One line per problem (empty when the copy reads), and the files that did not read.
    """
    problems: list[str] = []
    failed: set[str] = set()
    if not (folder / "session.toml").is_file():
        problems.append(f"{folder}: no session.toml: this is not a session folder")
    if files is None:
        tomls = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.toml"))
        csv_changed = True
    else:
        chosen = set(files)
        tomls = sorted(rel for rel in chosen if rel.endswith(".toml"))
        csv_changed = RESULTS_CSV in chosen
    for rel in tomls:
        p = folder / rel
        try:
            # size- and depth-bounded (H-39, H-48); a copy is checked to parse, and an
            # archive under validation/ quotes the corpus: fields are bounded by their readers
            loads_toml(read_toml_text(p), p, field_bound=False)
        except (OSError, ValueError, BadInput) as exc:  # TOMLDecodeError, UnicodeDecodeError
            problems.append(f"{p}: does not read as TOML ({exc})")
            failed.add(rel)
    csv_path = folder / RESULTS_CSV
    if csv_changed and csv_path.exists():
        try:
            ResultsFile(csv_path).read()
        except BadInput as exc:
            problems.append(str(exc))
            failed.add(RESULTS_CSV)
    return problems, failed


# -- the manifest --------------------------------------------------------------------
_MANIFEST_RECORDS: dict[tuple[str, int, int, int, int], tuple[ManifestLine, ...]] = {}


def manifest_records(journal: Path) -> list[ManifestLine]:
    """The journal's ``manifest_written`` records, oldest first; ``[]`` when it is absent or unreadable.

    Why: a month's journal holds tens of thousands of lines and a handful of manifests;
    a pull parses only the lines that can record one
    (:func:`gpusession.core.events.manifest_lines.manifest_lines`: no record class, no
    registry loaded), not every run's events. Same records as
    :func:`gpusession.core.events.reading.read_records` keeps of that type.
    """
    try:
        st = os.stat(journal)
        key = (str(journal), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        if key in _MANIFEST_RECORDS:
            return list(_MANIFEST_RECORDS[key])
        raw = read_plain(journal)
    except (OSError, BadInput):
        return []
    out = manifest_lines(raw)
    _MANIFEST_RECORDS.clear()  # the last journal read: a pull asks three times
    _MANIFEST_RECORDS[key] = tuple(out)
    return out


def _kept_manifest_records(journal: Path, kept: tuple[Signature, tuple[ManifestLine, ...]] | None) -> None:
    """Take the journal's manifest lines a verified pull kept (:attr:`pull_record.KeptRecord.journal`) as read.

    :func:`manifest_records` uses them only while the journal's ``stat`` signature is the
    kept one (size, mtime, inode, ctime: the bytes they were read from, H-47): a re-pull
    that finds nothing new reads no journal (A5).
    """
    if kept is not None:
        sig, lines = kept
        _MANIFEST_RECORDS.clear()
        _MANIFEST_RECORDS[(str(journal), sig[0], sig[1], sig[2], sig[3])] = lines


def _read_manifest_records(journal: Path) -> tuple[Signature, tuple[ManifestLine, ...]] | None:
    """The journal's signature and the manifest lines :func:`manifest_records` read of it this pull; ``None`` otherwise."""
    try:
        st = os.stat(journal)
    except OSError:
        return None
    key = (str(journal), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    lines = _MANIFEST_RECORDS.get(key)
    return None if lines is None else (key[1:], lines)


@dataclass(frozen=True)
class ManifestChoice:
    """The manifest a pull verifies against, and why.

    Attributes:
        local_path: the manifest in the copy home.
        remote_path: its path on the server, as recorded (``None`` when not recorded).
        deliverables: the deliverables folder the server hashed, as recorded.
        written_at: when it was written (journal), ``None`` when unknown.
        others: how many other manifests there were.
    """

    local_path: Path
    remote_path: str | None
    deliverables: str | None
    written_at: str | None
    others: int


def choose_manifest(session_copy: Path, deliverables_copy: Path | None,
                    deliverables: str | None) -> ManifestChoice | None:
    """The newest manifest made on the server, found in the copy home (S4).

    The journal's ``manifest_written`` records give order and deliverables folder; a
    manifest of the given ``deliverables`` folder is preferred. Without records, the
    newest ``manifest*.csv`` (time kept by rsync) of the session copy or the manifest's
    copy in the deliverables.
    """

    def norm(p: str | None) -> str | None:
        return p.rstrip("/") if p else p

    found: list[ManifestChoice] = []
    for rec in manifest_records(session_copy / JOURNAL):
        if rec.path is None:
            continue
        remote = rec.path
        candidates = [session_copy / Path(remote).name]
        if deliverables_copy is not None and (rec.copy_in_deliverables or Path(remote).name == MANIFEST_CSV):
            candidates.append(deliverables_copy / MANIFEST_CSV)
        local = next((c for c in candidates if c.is_file()), None)
        if local is not None:
            found.append(ManifestChoice(local, remote, norm(rec.deliverables), rec.at or None, 0))
    if not found:
        files = list(session_copy.glob("manifest*.csv"))
        carried_copy = manifest_copy_in(deliverables_copy) if deliverables_copy and deliverables_copy.is_dir() else None
        if carried_copy is not None:
            files.append(carried_copy)
        files.sort(key=lambda p: p.stat().st_mtime)
        found = [ManifestChoice(p, None, None, None, 0) for p in files]
    if not found:
        return None
    wanted = [c for c in found if deliverables and c.deliverables == norm(deliverables)]
    pick = (wanted or found)[-1]
    distinct = {c.local_path for c in found}
    return ManifestChoice(pick.local_path, pick.remote_path, pick.deliverables, pick.written_at,
                          len(distinct) - 1)


# -- the pull ------------------------------------------------------------------------
@dataclass
class PullResult:
    """What a pull did and found.

    Attributes:
        session_copy: the local session folder.
        deliverables_copy: the local deliverables folder, ``None`` when none was copied.
        manifest: the manifest used, ``None`` when there is none.
        check: the comparison with the manifest (``core.manifest.CopyCheck``).
        session_problems: lines about session files that do not read back.
        session_count, deliverables_count: files and bytes copied.
        verified: True only when the session reads back and the deliverables match a
            manifest made on the server.
        reason: why not verified, in words (empty when verified).
        at: when the verification ended.
        copy_differs, server_changed: the changed files split by where the change is
            (:func:`differing_files`); both empty when that could not be told.
    """

    session_copy: Path
    deliverables_copy: Path | None = None
    manifest: ManifestChoice | None = None
    check: CopyCheck | None = None
    session_problems: list[str] = field(default_factory=list)
    session_count: FolderCount = FolderCount(0, 0)
    deliverables_count: FolderCount = FolderCount(0, 0)
    verified: bool = False
    reason: str = ""
    at: datetime | None = None
    #: Changed files whose copy differs from the server's file (``--checksum`` fetches them).
    copy_differs: list[str] = field(default_factory=list)
    #: Changed files whose copy equals the server's file: the server's own file no longer
    #: matches its manifest (a new manifest, or the file restored, is needed).
    server_changed: list[str] = field(default_factory=list)
    #: The measured throughput and where it was written (``retrieval.toml``, D2).
    throughput: Recorded | None = None
    #: Whether only the manifest's files were copied (``--files-from``), not the whole folder.
    copied_listed: bool = False
    #: The server's files the manifest does not list, left there (S9); ``None`` when the
    #: whole folder was copied or the server's folder could not be listed.
    left_on_server: list[str] | None = None
    #: The links found in the deliverables copy (H-43), by the walk that counted it.
    deliverables_links: list[CopyLink] = field(default_factory=list)
    #: Nothing moved since the last verified pull: rsync wrote no file of the session
    #: copy, none changed at home, the deliverables are the bytes proved (the pull record
    #: held whole): what was derived from the copy then still holds (A5).
    unchanged: bool = False


def _record(result: PullResult, source: Source, *, started: bool = False) -> None:
    """Write the outcome into the local copy's checklist (no tick in the file: S1; read as done: S11) and its journal."""
    folder = result.session_copy
    path = folder / CHECKLIST_TOML
    if not (folder / "session.toml").is_file():
        return
    try:
        doc: dict[str, Any] = read_toml(path) if path.exists() else {"schema": 1}
    except BadInput:
        return  # an unreadable checklist is already listed among the problems
    now = result.at or utcnow()
    items: dict[str, Any]
    if isinstance(doc.get("items"), dict):
        items = doc["items"]
    else:
        items = {}
        doc["items"] = items
    if started:
        rec: dict[str, Any] = {"verified": False, "at": now, "source": source.words(),
                               "note": "pull started, not finished"}
        text = f"pull from {source.words()} started {now:%Y-%m-%d %H:%M} UTC, not finished: not verified"
    else:
        rec = {
            "verified": result.verified,
            "at": now,
            "source": source.words(),
            "session_files": result.session_count.files,
            "session_bytes": result.session_count.total_bytes,
            "deliverables_files": result.deliverables_count.files,
            "deliverables_bytes": result.deliverables_count.total_bytes,
            "manifest": result.manifest.remote_path or str(result.manifest.local_path) if result.manifest else None,
            # the manifest verified against, as read: a reader re-derives the check from it (H-78)
            "manifest_file": str(result.manifest.local_path.absolute()) if result.manifest else None,
            "manifest_sha256": sha256_plain(result.manifest.local_path) if result.manifest else None,
            "reason": result.reason or None,
            "left_on_server": len(result.left_on_server) if result.left_on_server is not None else None,
        }
        text = evidence_text(result, source)
    doc["retrieval"] = sealed(rec)  # what gpusession vouches for, sealed: a hand edit reads as the person's (H-58)
    st = items.get(EVIDENCE_ITEM)
    st = dict(st) if isinstance(st, dict) else {}
    st["evidence"] = text
    items[EVIDENCE_ITEM] = st
    write_toml(path, doc)


#: The ``checklist.toml`` table where ``verify-copy`` records its outcome (S4, S11).
VERIFY_COPY_TABLE = "verify_copy"


def record_verify_copy(manifest: Path, copy: Path, *, verified: bool, files: int,
                       at: datetime | None = None) -> Path | None:
    """Record a ``verify-copy`` outcome in the session whose manifest it checked (S4, S11).

    The manifest written by ``gpusession manifest`` lies in its session folder (and in
    the copy home a pull made of it); when ``session.toml`` is beside it, that folder's
    ``checklist.toml`` keeps ``[verify_copy]``: ``verified``, ``at``, ``manifest``,
    ``copy``, ``files`` and ``manifest_sha256`` (the reader re-derives the check, H-78). The newest check of the copy (pull or verify-copy) is what the
    checklist's ``g8.verify-copy`` reads (:mod:`gpusession.core.retrieval.known_facts`).

    Args:
        manifest: the manifest checked.
        copy: the copy checked.
        verified: whether the copy matched (and no link points out of it, H-43).
        files: the files that matched.
        at: when (default now, UTC).

    Returns:
        The session folder recorded in, or ``None`` when the manifest lies in none or its
        ``checklist.toml`` does not read (the check itself is unchanged by it).
    """
    folder = Path(manifest).absolute().parent
    path = folder / CHECKLIST_TOML
    if not (folder / "session.toml").is_file() or path.is_symlink():
        return None
    try:
        with folder_lock(folder, what="recording the copy check"):
            doc: dict[str, Any] = read_toml(path) if path.exists() else {"schema": 1}
            doc[VERIFY_COPY_TABLE] = sealed({  # a hand edit reads as the person's own entry (H-58)
                "verified": bool(verified), "at": (at or utcnow()).replace(microsecond=0),
                "manifest": str(Path(manifest).absolute()), "copy": str(Path(copy).absolute()),
                "files": int(files),
                "manifest_sha256": sha256_plain(Path(manifest))})  # re-derived when read (H-78)
            write_toml(path, doc)
    except (BadInput, Failure, OSError):
        return None
    return folder


def evidence_text(result: PullResult, source: Source) -> str:
    """The evidence line of a pull: what, when, how many files, total bytes, which manifest."""
    at = f"{result.at:%Y-%m-%d %H:%M} UTC" if result.at else "now"
    what = (f"session {result.session_count.files} file(s), {format_bytes(result.session_count.total_bytes)}"
            f" ({result.session_count.total_bytes} bytes)")
    if result.deliverables_copy is not None:
        what += (f"; deliverables {result.deliverables_count.files} file(s), "
                 f"{format_bytes(result.deliverables_count.total_bytes)} "
                 f"({result.deliverables_count.total_bytes} bytes)")
    if result.left_on_server:
        what += f"; {len(result.left_on_server)} file(s) not approved left on the server"
    man = ""
    if result.manifest is not None:
        man = f" against {result.manifest.remote_path or result.manifest.local_path.name} (SHA-256)"
    if result.verified:
        return f"copy home verified {at} by gpusession pull from {source.words()}{man}: {what}"
    return f"copy home NOT verified {at} (gpusession pull from {source.words()}{man}): {result.reason}; {what}"


@dataclass(frozen=True)
class Transfer:
    """How every rsync of one pull runs: source, work folder, shell, bandwidth, server's rsync.

    One value so that the session copy, the deliverables copy, the split of changed
    files and a probe (:mod:`gpusession.core.copyhome.probe`) all call rsync the same
    way (S4), and rsync's figures of every copy are kept for the throughput (D2).
    """

    source: Source
    work: Path
    ssh: str | None
    bwlimit_kbps: int | None
    rsync_path: str | None
    on_progress: Callable[[str, Progress], None] | None
    #: rsync's figures of each copy that ended (D2), and whether one was copied again whole.
    stats: list[RsyncStats] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)

    @property
    def path_words(self) -> str:
        """The rsync path the copies took, in words (``rsync over ssh, copied again whole``)."""
        how = "rsync over ssh" if self.source.host else "rsync (local folder)"
        return how + (", copied again whole" if self.retried else "")

    def copy(self, part: str, remote: str | None, dest: Path, *, checksum: bool,
             only: tuple[str, ...] = (), items: list[str] | None = None) -> None:
        """Copy ``remote`` (``None``: the session) into ``dest``, partial files under ``work/part``.

        rsync's figures of the copy that ended (the whole retry's, when the first was
        refused) are kept in :attr:`stats` (D2).

        Args:
            part: the part of the pull (``session``, ``deliverables``, ``probe``).
            remote: the folder on the source; ``None``: the session.
            dest: the local folder.
            checksum: compare by checksum.
            only: rsync options that choose the files (``--files-from=LIST``, filters).
            items: receives the paths rsync changed (:func:`run_rsync`); ``None``: not asked.

        Raises:
            TransferFailed: rsync failed (one line, :func:`explain_failure`).
        """
        on_progress = self.on_progress

        def progress(p: Progress) -> None:
            if on_progress:
                on_progress(part, p)

        cmd = rsync_command(self.source.spec(remote), dest, work=self.work / part, checksum=checksum,
                            ssh=self.ssh, bwlimit_kbps=self.bwlimit_kbps, rsync_path=self.rsync_path,
                            itemize=items is not None)
        cmd[-2:-2] = list(only)
        where = self.source.words(remote)
        try:
            stats = run_rsync(cmd, host=self.source.host, dest=dest, where=where, on_progress=progress,
                              items=items)
        except TransferFailed as exc:
            if not exc.resume_refused:
                raise
            # the partial files this rsync will not resume from go; the copy starts again once
            for kept in (self.work / part / "partial").rglob("*"):
                if kept.is_file() and not kept.is_symlink():
                    kept.unlink()
            self.retried.append(part)
            stats = run_rsync(cmd, host=self.source.host, dest=dest, where=where, on_progress=progress,
                              items=items)
        if stats is not None:
            self.stats.append(stats)

    def list_only_command(self, remote: str | None, *, batch: bool = False) -> list[str]:
        """``rsync -r --list-only`` of ``remote`` (``None``: the session) with this pull's shell and server rsync.

        The path goes whole (``--protect-args``, H-26); nothing is copied. ``batch``: ssh
        never prompts (``-o BatchMode=yes``), for a listing made beside another rsync.
        """
        cmd = [*RSYNC, "-r", "--list-only"]
        shell = self.ssh or ("ssh" if batch and self.source.host else None)
        if shell:
            cmd += ["-e", f"{shell} -o BatchMode=yes" if batch and self.source.host else shell]
        if self.rsync_path:
            cmd.append(f"--rsync-path={self.rsync_path}")
        return [*cmd, self.source.spec(remote)]

    def list_files(self, remote: str) -> list[str] | None:
        """The files of the folder ``remote`` on the source, by ``rsync -r --list-only`` (nothing copied).

        Args:
            remote: a folder on the source.

        Returns:
            Its files and links, relative to it (:func:`approved_copy.parse_list_only`);
            ``None`` when rsync could not list it (the pull says nothing then).
        """
        return self._list_now(remote)

    def start_listing(self, remote: str) -> Callable[[bool], list[str] | None]:
        """Start :meth:`list_files` of ``remote`` now; the returned call waits for its answer.

        Why: a pull lists the server's deliverables folder while it copies the files the
        manifest lists, so the listing costs no time of its own (A5). Beside a copy, ssh
        must never ask for a password (two prompts at once): the listing runs with ssh's
        ``BatchMode``, and when that fails it is made again, alone, once the copy ended.
        The returned call takes ``cancel``: ``True`` ends the listing (the copy failed).
        """
        try:
            proc = subprocess.Popen(self.list_only_command(remote, batch=True), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    env=dict(os.environ, LC_ALL="C"))
        except OSError:
            proc = None

        def answer(cancel: bool = False) -> list[str] | None:
            if proc is not None and cancel:
                end_child_tree(proc, grace_s=1.0)
                return None
            out = b""
            if proc is not None:
                try:
                    out, _ = proc.communicate(timeout=3600)
                except subprocess.SubprocessError:
                    end_child_tree(proc, grace_s=1.0)
            if proc is not None and proc.returncode == 0:
                return approved_copy.parse_list_only(out)
            if cancel or not self.source.host:
                return None
            return self._list_now(remote)  # alone: ssh may ask now

        return answer

    def _list_now(self, remote: str) -> list[str] | None:
        """:meth:`list_files`, run at once and waited for."""
        try:
            done = subprocess.run(self.list_only_command(remote), capture_output=True,
                                  env=dict(os.environ, LC_ALL="C"), timeout=3600, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return approved_copy.parse_list_only(done.stdout) if done.returncode == 0 else None

    def remote_file(self, name: str) -> str:
        """A file of the session folder on the source, as rsync names it (``host:path/name``)."""
        return self.source.words(self.source.path.rstrip("/") + "/" + name)


def shown(text: object) -> str:
    r"""A path or name in a line a pull says: masked, every control character escaped (H-44).

    The deliverables folder and the manifest's name come from the server's journal: as
    ``verify-copy`` prints names, ``'/srv/\x1b[2Jout\nFAKE'`` never clears the terminal nor
    makes a line of its own.
    """
    return printable(str(text), keep="")


def refuse_linked_destinations(to: Path, name: str) -> None:
    """Refuse a pull whose copy home would land through a symbolic link (H-38).

    ``to/NAME`` linked to another rental's copy would have its ``session.toml``
    replaced and be called verified; as every other write, a pull never writes through a
    link. ``to`` itself may be a link: it is the folder the person chose.

    Raises:
        BadInput: one line naming the link and its target; nothing copied, the target
            unchanged.
    """
    for path in (to / name, to / f"{name}-deliverables", to / WORK_DIR, to / WORK_DIR / name):
        if path.is_symlink():
            raise BadInput(f"is a symbolic link (to {os.readlink(path)}); a pull never writes through "
                           "a link: remove it or choose another --to", path=path)


def pull(
    source: Source,
    *,
    to: Path,
    deliverables: str | None = None,
    ssh: str | None = None,
    bwlimit_kbps: int | None = None,
    rsync_path: str | None = None,
    checksum_deliverables: bool = False,
    on_progress: Callable[[str, Progress], None] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> PullResult:
    """Copy a session and its deliverables home with rsync and verify them (S4).

    Args:
        source: the session folder (:func:`parse_source`).
        to: the local folder; the session lands in ``to/NAME``, the deliverables in
            ``to/NAME-deliverables``.
        deliverables: the deliverables folder on the same host; default: the folder of
            the newest manifest recorded in the session's journal.
        ssh: the remote shell for rsync's ``-e`` (default: ``RSYNC_RSH`` or ssh).
        bwlimit_kbps: rsync's ``--bwlimit`` (KiB/s).
        rsync_path: the rsync program on the server.
        checksum_deliverables: compare deliverables by checksum too (fetches a file whose
            bytes changed in the copy while size and time stayed), and prove every file
            again: the record of the last pull is not read (:mod:`pull_record`).
        on_progress: called with ``("session"|"deliverables", Progress)``.
        on_step: called with one line per step, in words.

    Returns:
        The result; ``verified`` is True only when everything matched.

    Raises:
        TransferFailed: rsync failed (one line; exit 2 for unknown host or missing source).
        BadInput: ``to`` is not a folder.
        OSError: the local disk refused.
    """
    to = Path(to).absolute()
    work = _prepare_destination(to, source.name)
    say = on_step or (lambda _line: None)
    session_copy = to / source.name
    result = PullResult(session_copy=session_copy)
    # what the last pull proved (pull_record; its seal checked beside rsync); --checksum proves everything again
    kept_record = not checksum_deliverables and pull_record.record_path(session_copy).is_file()
    # the server's checklist as the last pull brought it, put back: rsync copies it only when it changed there
    put_back = kept_record and pull_record.put_back_server_checklist(session_copy)
    if not put_back and (session_copy / "session.toml").is_file():  # an earlier copy: not verified until this ends
        _record(result, source, started=True)
    transfer = Transfer(source, work, ssh, bwlimit_kbps, rsync_path, on_progress)

    figures = _Figures.before_copy(session_copy, work)
    tree, changed, record, wrote = _copy_session(result, transfer, kept_record, say, put_back=put_back)
    pull_record.keep_server_checklist(session_copy)  # the server's, before this pull's [retrieval] goes in
    result.session_problems, failed = read_back(session_copy, changed)

    remote_deliv = _copy_deliverables(result, transfer, to, deliverables, checksum_deliverables, say)
    _record_copy_home(session_copy, result.deliverables_copy, remote_deliv)
    pull_record.restat(session_copy, [COPY_HOME_TOML], tree)  # the pull's own file, as written: kept in the record
    result.session_count = FolderCount(tree.file_count, tree.total_bytes)  # the evidence's count, by the one walk
    result.manifest = choose_manifest(session_copy, result.deliverables_copy, remote_deliv)
    digests = Digests(record.deliverables)
    reasons = _verify(result, transfer, remote_deliv, say, digests)
    links = outside_reason({"session copy": session_copy, "deliverables copy": result.deliverables_copy},
                           found={"session copy": tree.links, "deliverables copy": result.deliverables_links})
    if links:  # a link out of the copy is never VERIFIED silently (H-43)
        reasons.append(links)
    result.verified = not reasons
    result.reason = "; ".join(reasons)
    result.at = utcnow()
    _record(result, source)
    if (session_copy / "session.toml").is_file():  # the measured throughput, to the server (D2)
        result.throughput = figures.record(transfer, at=result.at)
    result.unchanged = _keep_record(session_copy, tree, failed, record, digests) and not wrote and result.verified
    if result.verified:  # nothing left to resume
        shutil.rmtree(work, ignore_errors=True)
        try:
            (to / WORK_DIR).rmdir()
        except OSError:
            pass
    return result


@dataclass(frozen=True)
class _Figures:
    """The copy's ``retrieval.toml`` before rsync ran, to tell what the server's holds after it (D2, A5).

    Attributes:
        session_copy: the copy home.
        earlier: the entries kept at home (a write-back the server refused), read before
            the server's file replaces the copy's.
        key_before: the copy's file's ``[size, mtime_ns]`` before rsync; rsync replaced
            it when it differs after (the copy then holds the server's file).
        sent: the copy's file is the one the last pull wrote to the server (``rsync -t``).
    """

    session_copy: Path
    earlier: list[dict[str, Any]]
    key_before: list[int] | None
    sent: bool

    @classmethod
    def before_copy(cls, session_copy: Path, work: Path) -> _Figures:
        """Read before rsync: the entries kept at home, and the copy's file's signature."""
        return cls(session_copy, throughput.read_entries([session_copy / RETRIEVAL_TOML, work / RETRIEVAL_TOML]),
                   pull_record.file_key(session_copy / RETRIEVAL_TOML),
                   pull_record.sent_holds(session_copy, RETRIEVAL_TOML))

    def record(self, transfer: Transfer, *, at: datetime | None) -> Recorded:
        """This pull's figure (none when it moved no file) with the entries kept, home and to the server.

        Nothing is written when there is no figure and the server's file, known at home,
        holds every entry: a re-pull that finds nothing new writes nothing there (A5).
        """
        home = self.session_copy / RETRIEVAL_TOML
        figure = throughput.combine(transfer.stats, at=at, path=transfer.path_words)
        on_server = throughput.read_entries([home])
        known = self.sent or pull_record.file_key(home) != self.key_before
        done = throughput.record(figure, home=home, kept=throughput.merge_entries(self.earlier, on_server),
                                 remote_spec=transfer.remote_file(RETRIEVAL_TOML), ssh=transfer.ssh,
                                 rsync_path=transfer.rsync_path, server=on_server if known else None)
        if done.refused is None and (known or done.home is not None):
            pull_record.keep_sent(self.session_copy, RETRIEVAL_TOML)  # the server holds the copy's file
        return done


def _keep_record(session_copy: Path, tree: pull_record.TreeStat, failed: set[str],
                 record: pull_record.KeptRecord, digests: Digests) -> bool:
    """Keep what this pull proved for the next one (:mod:`pull_record`), when it differs from the record.

    The session files that read back and the deliverables that matched; ``checklist.toml``
    and ``retrieval.toml``, rewritten home by every pull, are read back every time instead.
    Each folder's digest tells whether the record still holds for it: a folder that did
    not change keeps its text, nothing is compared or encoded twice (A5). Returns whether
    the record held whole (nothing written).
    """
    folders = pull_record.proved_folders(tree, {*failed, CHECKLIST_TOML, RETRIEVAL_TOML}, record)
    journal = _read_manifest_records(session_copy / JOURNAL)
    if folders == record.folders and digests.proven == record.deliverables and journal == record.journal:
        return True  # the record's every entry, proved again
    pull_record.write_record(session_copy, pull_record.KeptRecord(folders, dict(digests.proven), journal))
    return False


def _copy_session(result: PullResult, transfer: Transfer, kept_record: bool, say: Callable[[str], None], *,
                  put_back: bool = False) -> tuple[pull_record.TreeStat, list[str], pull_record.KeptRecord, bool]:
    """Copy the session home; its files after the copy, those that may differ from the bytes proved, the record (S4, A5).

    Without a record of an earlier pull, rsync compares every file by checksum. With one,
    rsync compares by size and time as ``rsync -a`` does and names what it wrote, while
    the copy is walked and the record's seal checked and the record decoded beside it (a
    thread: rsync is another process); a record whose seal does not hold then costs a
    second copy by checksum, as if there were none. The entries rsync wrote are looked at
    again after it. A file whose
    signature changed while rsync did not write it was changed at home (an edit with its
    time put back included: its ``ctime`` moved): those files alone are compared again by
    checksum, so the server's bytes replace them. ``put_back``: ``checklist.toml`` holds
    the server's bytes the last pull kept (:func:`pull_record.put_back_server_checklist`),
    so it is not one of them.

    Returns:
        The copy's walk (:func:`pull_record.stat_tree`), the files to read back (every
        file whose signature is not the one the record proved), the record, and whether
        rsync wrote anything (a copy by checksum counts as written).
    """
    session_copy = result.session_copy
    source = transfer.source
    if not kept_record:
        say(f"copying session {shown(source.words())} → {shown(session_copy)} (rsync, per-file checksums)")
        transfer.copy("session", None, session_copy, checksum=True)
        whole = pull_record.stat_tree(session_copy)
        return whole, list(whole.files), pull_record.KeptRecord(), True
    say(f"copying session {shown(source.words())} → {shown(session_copy)} (rsync; the files proved by "
        "the last pull are compared by size and time)")
    written: list[str] = []
    beside: dict[str, Any] = {}

    def walk() -> None:  # the walk first: its system calls let the main thread start rsync
        beside["tree"] = pull_record.stat_tree(session_copy)
        body = pull_record.open_record(session_copy)  # the seal checked, beside rsync too
        beside["record"] = None if body is None else pull_record.parse_record(body)

    walker = threading.Thread(target=walk, name="pull-walk", daemon=True)
    walker.start()
    try:
        transfer.copy("session", None, session_copy, checksum=False, items=written)
    finally:
        walker.join()
    record: pull_record.KeptRecord | None = beside.get("record")
    if record is None:  # the record does not hold (edited, another user's or copy's): everything is proved
        say(f"the record of the last pull does not hold: copying session {shown(source.words())} again "
            "(rsync, per-file checksums)")
        transfer.copy("session", None, session_copy, checksum=True)
        whole = pull_record.stat_tree(session_copy)
        return whole, list(whole.files), pull_record.KeptRecord(), True
    _kept_manifest_records(session_copy / JOURNAL, record.journal)  # the journal is not read while they hold
    tree: pull_record.TreeStat = beside.get("tree") or pull_record.stat_tree(session_copy)
    pull_record.restat(session_copy, written, tree)  # what rsync wrote, as it left it
    changed = pull_record.changed_files(tree, record)  # folder by folder: a digest that holds is not decoded
    # retrieval.toml is rewritten at home by a pull, copy-home.toml is never on the server; checklist.toml put back
    # is the server's bytes, sealed
    touched = sorted(set(changed) - set(written) - {RETRIEVAL_TOML, COPY_HOME_TOML}
                     - ({CHECKLIST_TOML} if put_back else set()))
    if touched:  # changed at home since proved, and kept by rsync's quick check: compared by checksum
        say(f"{len(touched)} file(s) of the copy changed since the last pull: compared with the server "
            "by checksum")
        listing = transfer.work / "session" / "touched-files"
        listing.write_bytes(b"".join(os.fsencode(rel) + b"\0" for rel in touched))
        again: list[str] = []
        try:
            transfer.copy("session", None, session_copy, checksum=True, items=again,
                          only=(f"--files-from={listing}", "--from0", "--ignore-missing-args"))
        finally:
            listing.unlink(missing_ok=True)
        pull_record.restat(session_copy, [*touched, *again], tree)
    return tree, changed, record, bool(touched) or any(not _is_folder(session_copy / rel) for rel in written)


def _is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder, not a link (rsync names a folder whose time it set back: nothing written in it)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _prepare_destination(to: Path, name: str) -> Path:
    """Check the home side before anything is copied; make the work folders; return them.

    Raises:
        BadInput: ``to`` is a file, or a destination is a link (H-38).
        TransferFailed: the rsync here is too old (H-26).
    """
    if to.exists() and not to.is_dir():
        raise BadInput("is a file; expected the local folder to copy into (--to)", path=to)
    refuse_linked_destinations(to, name)
    check_local_rsync()
    work = to / WORK_DIR / name
    for sub in ("session", "deliverables"):
        for part in ("partial", "tmp"):
            (work / sub / part).mkdir(parents=True, exist_ok=True)
    return work


def _copy_deliverables(result: PullResult, transfer: Transfer, to: Path, deliverables: str | None,
                       checksum: bool, say: Callable[[str], None]) -> str | None:
    """Copy the deliverables (given, else the newest manifest's folder); their remote folder.

    With the manifest in the session copy, only the files it lists are copied and the
    server's other files are named in ``result.left_on_server`` (S4, S9); without one
    (or one that lists nothing or does not read: the check says why), the whole folder.
    """
    remote = deliverables
    if remote is None:
        guess = choose_manifest(result.session_copy, None, None)
        remote = guess.deliverables if guess is not None else None
    if remote is None:
        return None
    copy = to / f"{transfer.source.name}-deliverables"
    result.deliverables_copy = copy
    entries = _listed(choose_manifest(result.session_copy, None, remote))
    if entries:
        listing = approved_copy.write_files_from(entries, transfer.work / "deliverables")
        say(f"copying deliverables {shown(transfer.source.words(remote))} → {shown(copy)} "
            f"(the {len(entries)} file(s) the manifest lists)")
        listed = transfer.start_listing(remote)  # the server's whole folder, beside the copy
        try:
            transfer.copy("deliverables", remote, copy, checksum=checksum,
                          only=approved_copy.files_from_options(listing))
        except BaseException:
            listed(True)
            raise
        finally:
            listing.unlink(missing_ok=True)
        on_server = listed(False)
        result.copied_listed = True
        if on_server is not None:
            result.left_on_server = approved_copy.left_on_server(on_server, (e.path for e in entries))
    else:
        say(f"copying deliverables {shown(transfer.source.words(remote))} → {shown(copy)}")
        transfer.copy("deliverables", remote, copy, checksum=checksum)
    tree = pull_record.stat_tree(copy)  # one walk: the count, and the links the verdict checks (H-43)
    result.deliverables_count = FolderCount(tree.file_count, tree.total_bytes)
    result.deliverables_links = tree.links
    return remote


def _record_copy_home(session_copy: Path, copy: Path | None, remote: str | None) -> None:
    """Write ``copy-home.toml`` into the copy: the deliverables copy beside it and the server folder it came from.

    Source: S4, S10. Why: the copy's ``approvals.toml`` names the server's folder; the
    count, ``show``, ``report`` and ``status`` at home check the decisions against this
    copy instead (:func:`gpusession.core.folder.approvals.deliverables_folder`). Written
    only when it changes, so a re-pull leaves the count's cache standing.
    """
    if copy is None or remote is None or not (session_copy / "session.toml").is_file():
        return
    path = session_copy / COPY_HOME_TOML
    fact = {"deliverables_copy": copy.name, "deliverables_from": remote}
    try:
        if path.is_file() and {k: read_toml(path).get(k) for k in fact} == fact:
            return
    except BadInput:
        pass  # one that does not read is written again
    write_toml(path, fact)


def _listed(choice: ManifestChoice | None) -> list[ManifestEntry]:
    """The entries of the manifest a pull copies by; empty when there is none or it does not read."""
    if choice is None:
        return []
    try:
        return read_manifest(choice.local_path)
    except BadInput:  # the check reads it again and says why (exit 2), as before any copy by list
        return []


def _verify(result: PullResult, transfer: Transfer, remote_deliv: str | None,
            say: Callable[[str], None], digests: Digests | None = None) -> list[str]:
    """Why the copy in ``result`` is not verified, one phrase each; empty when it is (S4).

    Sets ``result.check`` and, when files changed, ``result.copy_differs`` and
    ``result.server_changed``: the session must read back and the deliverables must
    match a manifest made on the server, so a copy is never called whole on sight.
    """
    reasons: list[str] = []
    if result.session_problems:
        reasons.append(f"{len(result.session_problems)} session file(s) do not read back")
    if result.manifest is not None and result.deliverables_copy is None:
        reasons.append(
            f"the deliverables folder is not known ({result.manifest.local_path.name} came without it): "
            "pass --deliverables REMOTE_DIR"
        )
    elif result.manifest is None or result.deliverables_copy is None:
        reasons.append(
            f"no manifest made on the server: on the server run `gpusession manifest {transfer.source.name} "
            "--deliverables DIR`, then pull again"
        )
    else:

        say(f"verifying {shown(result.deliverables_copy)} against {shown(result.manifest.local_path.name)} "
            "(SHA-256)")
        check = verify_copy(result.manifest.local_path, result.deliverables_copy, digests=digests)
        result.check = check
        if check.changed:
            split = differing_files(
                transfer.source.spec(remote_deliv), result.deliverables_copy,
                [c.path for c in check.changed], work=transfer.work / "deliverables",
                ssh=transfer.ssh, rsync_path=transfer.rsync_path)
            if split is not None:
                result.copy_differs = [p for p in (c.path for c in check.changed) if p in split]
                result.server_changed = [p for p in (c.path for c in check.changed) if p not in split]
        if not check.ok:
            reasons.append(f"deliverables differ from the manifest: {len(check.missing)} missing, "
                           f"{len(check.changed)} changed, {len(check.extra)} extra")
    return reasons


def ssh_from_env(cli_value: str | None) -> str | None:
    """``--ssh CMD`` when given, else ``RSYNC_RSH`` (rsync reads it too), else ``None``."""
    value = cli_value or os.environ.get("RSYNC_RSH") or None
    if value is not None:
        try:
            shlex.split(value)
        except ValueError as exc:
            raise BadInput(f"cannot split {quoted(value)} into words ({exc})", field="--ssh") from None
    return value


__all__ = [
    "FolderCount",
    "ManifestChoice",
    "Progress",
    "PullResult",
    "Source",
    "Transfer",
    "TransferFailed",
    "check_session_copy",
    "choose_manifest",
    "count_files",
    "evidence_text",
    "manifest_records",
    "read_back",
    "record_verify_copy",
    "explain_failure", "host_key_advice",
    "parse_progress",
    "parse_source",
    "pull",
    "rsync_command",
    "run_rsync",
    "shown",
    "ssh_from_env",
]
