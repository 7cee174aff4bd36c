"""The measured throughput of a pull, and ``retrieval.toml``, written back to the server (D2).

Who calls it: :func:`gpusession.core.copyhome.pull.pull` and
:func:`gpusession.core.copyhome.probe.probe`, on the person's own computer. The rental
guide warns that a stated link speed is not a guaranteed duration: the time to keep for
retrieval is measured: the bytes that crossed the link (``--stats``: "Total bytes sent" +
"Total bytes received", never the file sizes: a resumed pull reuses its partial file's
bytes, which never crossed, H-62) of every rsync a pull ran, over the time gpusession's own monotonic clock measured around
each of those rsync calls, and written into the server's session folder, where the
session limit reads it. rsync's own elapsed time ((sent + received) ÷ its bytes/sec) is
kept beside it but never used: rsync counts whole seconds plus half a second, so a
0.15 s copy reads 1.0 s there.

``retrieval.toml`` (the contract with its reader)::

    schema = 1
    [[pull]]
    at = "2026-12-02T01:23:45+00:00"   # ISO 8601, UTC
    bytes = 3001008                     # bytes that crossed the link (rsync's bytes sent + received)
    seconds = 0.52                      # gpusession's monotonic clock around the rsync calls
    rsync_seconds = 1.5                 # rsync's own elapsed figure (whole seconds + 0.5): kept, unused
    throughput_bytes_per_s = 5769236.5  # bytes / seconds
    probe = false                       # true: from a small copy (pull --probe)
    path = "rsync over ssh"             # which rsync path the pull took

One entry is appended per pull: the server's file (just pulled home) and the home copy's
entries are merged, the new one appended, the home copy written atomically, and the file
sent back by the same rsync (``-e`` and ``--rsync-path`` of the pull) to that one path:
rsync writes a temporary name in the same folder and renames it, mode 0600, the home
copy's modification time (so the next pull does not copy it home again), nothing else
touched. A pull that moved no file's bytes has no figure (:func:`combine`), so nothing is
written back: a re-pull that finds nothing new writes nothing to the server. A server that refuses the write never fails a pull: the entry stays at home.
Standard library and the core only.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import read_toml_lenient
from gpusession.core.files.tomlio import write_toml
from gpusession.core.files.units import format_bytes

#: The file in the session folder (on the server, and in the copy home).
RETRIEVAL_TOML = "retrieval.toml"
_TRANSFERRED_RE = re.compile(r"^Total transferred file size:\s*([\d,.]+)\s*bytes", re.MULTILINE)
_WIRE_RE = re.compile(r"^Total bytes (sent|received):\s*([\d,.]+)", re.MULTILINE)
_SENT_RE = re.compile(r"^sent\s+([\d,.]+)\s+bytes\s+received\s+([\d,.]+)\s+bytes\s+([\d,.]+)\s+bytes/sec",
                      re.MULTILINE)


@dataclass(frozen=True)
class RsyncStats:
    """rsync's own figures of one transfer (``--stats``).

    Attributes:
        transferred_bytes: "Total transferred file size": the size of the files updated,
            partial files reused included (a budget of file bytes, never a throughput).
        seconds: rsync's elapsed time: (bytes sent + received) ÷ its bytes/sec; ``None``
            when rsync gave no rate (nothing crossed). rsync counts whole seconds plus
            0.5 s: a figure kept, never the one measured.
        clock_seconds: the rsync call as gpusession's monotonic clock timed it (s),
            from its start to its exit; ``None`` when not timed (parsed text alone).
        wire_bytes: "Total bytes sent" + "Total bytes received": what crossed the link,
            the only bytes a throughput counts (H-62); ``None`` when rsync did not say.
    """

    transferred_bytes: int
    seconds: float | None
    clock_seconds: float | None = None
    wire_bytes: int | None = None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_stats(text: str) -> RsyncStats | None:
    """The figures of rsync's ``--stats`` lines; ``None`` when they are not there.

    Args:
        text: what rsync wrote on stdout (progress lines may be mixed in).
    """
    moved = _TRANSFERRED_RE.search(text)
    if moved is None:
        return None
    sent = _SENT_RE.search(text)
    seconds = None
    if sent is not None:
        wire, rate = _number(sent.group(1)) + _number(sent.group(2)), _number(sent.group(3))
        if rate > 0 and math.isfinite(wire / rate):
            seconds = wire / rate
    totals = {m.group(1): int(_number(m.group(2))) for m in _WIRE_RE.finditer(text)}
    wire_bytes = (totals["sent"] + totals["received"] if len(totals) == 2 else
                  int(_number(sent.group(1)) + _number(sent.group(2))) if sent is not None else None)
    return RsyncStats(int(_number(moved.group(1))), seconds, wire_bytes=wire_bytes)


@dataclass(frozen=True)
class PullFigure:
    """One entry of ``retrieval.toml``: what a pull moved and how fast (D2).

    Attributes:
        at: when the pull ended (UTC).
        bytes: bytes that crossed the link (rsync's bytes sent + received), over every
            rsync of the pull; never the files' sizes (H-62).
        seconds: gpusession's monotonic clock around the rsync calls that moved them (s).
        probe: from a small copy (``pull --probe``), not a whole pull.
        path: the rsync path taken (``rsync over ssh``, ``rsync over ssh, copied again
            whole``, ``rsync (local folder)``).
    """

    at: datetime
    bytes: int
    seconds: float
    probe: bool
    path: str
    rsync_seconds: float | None = None

    @property
    def throughput_bytes_per_s(self) -> float:
        """``bytes / seconds`` (0.0 when no time was measured)."""
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    def to_toml(self) -> dict[str, Any]:
        """The ``[[pull]]`` table (the contract in the module docstring)."""
        return {"at": self.at.isoformat(timespec="seconds"), "bytes": int(self.bytes),
                "seconds": round(float(self.seconds), 6),
                "rsync_seconds": None if self.rsync_seconds is None else round(float(self.rsync_seconds), 6),
                "throughput_bytes_per_s": round(self.throughput_bytes_per_s, 3),
                "probe": bool(self.probe), "path": self.path}

    def words(self) -> str:
        """``12.3 MB/s (3.00 MB in 0.24 s, rsync over ssh)``, ``from a small copy`` for a probe."""
        rate = f"{format_bytes(int(self.throughput_bytes_per_s))}/s"
        small = ", from a small copy" if self.probe else ""
        return f"{rate} ({format_bytes(self.bytes)} in {self.seconds:.2f} s, {self.path}{small})"


def combine(stats: Sequence[RsyncStats], *, at: datetime | None = None, probe: bool = False,
            path: str) -> PullFigure | None:
    """One figure from the rsync transfers of one pull; ``None`` when none gave a time.

    A pull that moved no byte (the copy home was up to date) has no figure: a
    throughput of 0 would read as a link that moves nothing. Only the bytes that crossed
    the link count (:attr:`RsyncStats.wire_bytes`): the bytes of a partial file a resumed
    pull reused never did, and counting them made a 5.9 MiB/s link read 18.5 MiB/s (H-62);
    a transfer whose wire bytes rsync did not say is left out. A transfer that moved no
    file's bytes ("Total transferred file size: 0": a re-pull that found nothing new) is
    left out too: its bytes are the file list, its time rsync walking the two trees, so
    its "throughput" (e.g. 1.19 MiB/s for 71,507 unchanged files) measures the walk, not
    the link, and would lengthen the retrieval reserve computed from the slowest figure (D2).

    Args:
        stats: rsync's figures of each transfer (session, deliverables, a whole retry).
        at: when the pull ended (default now, UTC).
        probe: from a small copy.
        path: the rsync path, in words.
    """
    def taken(s: RsyncStats) -> float | None:  # our clock; rsync's figure only when untimed
        return s.clock_seconds if s.clock_seconds is not None else s.seconds

    timed = [s for s in stats if taken(s) is not None and s.wire_bytes is not None and s.transferred_bytes > 0]
    seconds = sum(float(taken(s) or 0.0) for s in timed)
    moved = sum(s.wire_bytes or 0 for s in timed)
    if not timed or seconds <= 0 or moved <= 0:
        return None
    by_rsync = [s.seconds for s in timed if s.seconds is not None]
    return PullFigure(at or utcnow(), moved, seconds, probe, path,
                      rsync_seconds=sum(by_rsync) if len(by_rsync) == len(timed) else None)


def read_entries(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The ``[[pull]]`` entries of the ``retrieval.toml`` files that read, merged, oldest first.

    An entry found in several files (the same ``at``, bytes and seconds) is kept once; an
    unreadable file or entry is left out (it never stops a pull).
    """
    found: list[dict[str, Any]] = []
    for p in paths:
        try:
            if not p.is_file() or p.is_symlink():
                continue
            doc = read_toml_lenient(p)  # size- and depth-bounded (H-39, H-48)
        except OSError:
            continue
        if doc is None:
            continue
        entries = doc.get("pull")
        for e in entries if isinstance(entries, list) else []:
            if isinstance(e, Mapping) and isinstance(e.get("at"), str):
                found.append(dict(e))
    return merge_entries(found)


def write_home(path: Path, entries: Sequence[Mapping[str, Any]]) -> None:
    """Write ``retrieval.toml`` at ``path`` atomically (0600), the entries in order.

    Raises:
        OSError: the disk refused (the old file stays).
        BadInput: an entry holds text the free-text check refuses.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    write_toml(path, {"pull": [dict(e) for e in entries]})


def write_back(local: Path, remote_spec: str, *, ssh: str | None, rsync_path: str | None) -> str | None:
    """Send ``local`` to ``remote_spec`` (``host:path/retrieval.toml``) with rsync; why not, or ``None``.

    rsync writes a temporary name beside the file and renames it (never ``--inplace``),
    mode 0600 (``-p --chmod=F600``), the home copy's mtime (``-t``); only this one path
    is named, so nothing else on the
    server is touched.

    Returns:
        ``None`` when the server took it; else the reason in words (``permission
        denied``), one line.
    """
    if shutil.which("rsync") is None:
        return "rsync is not installed on this computer"
    # the path whole (H-26); -t: the server's file keeps the home copy's mtime, so the next
    # pull's quick check finds the two equal and does not copy it home again (A5)
    cmd = ["rsync", "--protect-args", "-p", "-t", "--chmod=F600"]
    if ssh:
        cmd += ["-e", ssh]
    if rsync_path:
        cmd.append(f"--rsync-path={rsync_path}")
    cmd += [str(local), remote_spec]
    try:
        done = subprocess.run(cmd, capture_output=True, env=dict(os.environ, LC_ALL="C"),
                              timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"rsync did not run ({exc})"
    if done.returncode == 0:
        return None
    text = done.stderr.decode("utf-8", "replace")
    for said in ("Permission denied", "Read-only file system", "Operation not permitted"):
        if said in text:
            return f"the session folder there is not writable: {said.lower()}"
    lines = [ln.removeprefix("rsync: ").strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else f"rsync exit code {done.returncode}"


@dataclass(frozen=True)
class Recorded:
    """Where a pull's figure went.

    Attributes:
        figure: the figure, ``None`` when none was measured (rsync gave no time, or moved no file).
        home: the home copy of ``retrieval.toml`` that holds it; ``None`` when nothing was written.
        refused: why the server did not take it (``None``: it did).
    """

    figure: PullFigure | None
    home: Path | None
    refused: str | None

    def words(self) -> str:
        """The line ``pull`` prints about the measured throughput."""
        if self.figure is None:
            head = ("throughput: not measured (rsync gave no figures, or moved no file: the copy "
                    "home was up to date)")
            if self.home is None:
                return head
            if self.refused is None:
                return f"{head}; the figures kept at home written to the server's {RETRIEVAL_TOML}"
            return f"{head}; the server refused the figures kept at home ({self.refused}): they stay in {self.home}"
        head = f"throughput: {self.figure.words()}"
        if self.refused is None:
            return f"{head}; written to the server's {RETRIEVAL_TOML}"
        if self.home is None:
            return f"{head}; not recorded: {self.refused}"
        return (f"{head}; the server refused the write ({self.refused}): the figure stayed at "
                f"home in {self.home}")


def record(figure: PullFigure | None, *, home: Path, kept: Sequence[Mapping[str, Any]],
           remote_spec: str, ssh: str | None, rsync_path: str | None,
           server: Sequence[Mapping[str, Any]] | None = None) -> Recorded:
    """Append ``figure`` to the entries kept, write them at ``home`` and back to the server (D2).

    Written only when that changes what the server holds: a pull with no figure (it moved
    no file's bytes, :func:`combine`) whose kept entries are the server's writes nothing,
    at home or there (A5); one with no figure whose home holds entries the server lacks
    (an earlier write-back refused) sends them.

    Args:
        figure: this pull's figure (``None``: none measured).
        home: the home copy of ``retrieval.toml`` to write.
        kept: the entries found before (:func:`merge_entries` of the server's file, just
            pulled, and the earlier home copies).
        remote_spec: the server's ``retrieval.toml`` as rsync names it.
        ssh: the remote shell of the pull.
        rsync_path: the server's rsync program of the pull.
        server: the entries the server's file holds, when the pull knows them; ``None``:
            unknown (its file may be absent there).

    Returns:
        Where the figure (or the entries kept at home) went; a refused or failed write is
        said, never raised. ``home`` is ``None`` when nothing was written.
    """
    entries = [*kept, figure.to_toml()] if figure is not None else [dict(e) for e in kept]
    if figure is None and (not entries or (server is not None and entries == merge_entries(server))):
        return Recorded(None, None, None)
    try:
        write_home(home, entries)
    except (OSError, BadInput) as exc:
        return Recorded(figure, None, f"it could not be written at home either: {exc}")
    return Recorded(figure, home, write_back(home, remote_spec, ssh=ssh, rsync_path=rsync_path))


def merge_entries(*lists: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Entries of several reads as one list, each once (same ``at``, bytes, seconds), oldest first."""
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for entries in lists:
        for e in entries:
            seen.setdefault((e.get("at"), e.get("bytes"), e.get("seconds")), dict(e))
    return sorted(seen.values(), key=lambda e: str(e["at"]))


__all__ = [
    "RETRIEVAL_TOML",
    "PullFigure",
    "Recorded",
    "RsyncStats",
    "combine",
    "parse_stats",
    "merge_entries",
    "read_entries",
    "record",
    "write_back",
    "write_home",
]
