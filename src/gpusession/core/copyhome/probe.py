"""``pull --probe``: a small copy that checks the way home and measures it (D2).

Who calls it: ``gpusession pull --probe`` (:mod:`gpusession.commands.pull_cmd`), on the
person's own computer, typically early in the package. The rental guide advises a small
round-trip copy to check the method before the whole folder is moved, and warns that a
stated link speed is not a guaranteed duration: the probe moves at most
:data:`PROBE_CAP_BYTES` of the deliverables (or, while there are none, of the session
folder itself) with the pull's rsync, checks that the copy equals the server's files
(rsync checksums, :func:`gpusession.core.copyhome.pull.differing_files`) and records
the throughput in the server's ``retrieval.toml`` marked ``probe = true`` ("from a small
copy"), like a pull (:mod:`gpusession.core.copyhome.throughput`).

The small copy lies in ``TO/.gpusession-pull/NAME/probe`` and is removed afterwards: it
is never taken for the copy home. The figure's home copy is the copy home's
``retrieval.toml`` when there is one, else ``TO/.gpusession-pull/NAME/retrieval.toml``
(the next pull merges it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpusession.core.copyhome import throughput
from gpusession.core.copyhome.pull import (
    WORK_DIR,
    Progress,
    Source,
    Transfer,
    choose_manifest,
    differing_files,
    host_key_advice,
)
from gpusession.core.copyhome.throughput import RETRIEVAL_TOML, Recorded
from gpusession.core.files.errors import BadInput, Failure

#: The most a probe moves: enough for a figure, small next to a package's deliverables.
PROBE_CAP_BYTES = 64 * 1024 * 1024
#: What the probe fetches of the session folder first: where the deliverables are, the figures.
_LOOKUP = ("--include=journal.jsonl", f"--include={RETRIEVAL_TOML}", "--include=manifest*.csv",
           "--exclude=*")
_LIST_RE = re.compile(r"^-[rwxsStT-]{9}\s+([\d,]+)\s+\S+\s+\S+\s+(.+)$")


@dataclass
class ProbeResult:
    """What a probe moved, whether its copy equals the server's files, and its figure.

    Attributes:
        what: ``"deliverables"`` or ``"session folder"`` (no deliverables known, or none
            small enough).
        remote: the folder probed, in words (``host:path``).
        files: the files copied (relative paths).
        listed_bytes: their size as listed by rsync.
        verified: the copy equals the server's files (rsync checksums).
        reason: why not verified (empty when verified).
        throughput: the figure and where it went; ``None`` when not verified.
    """

    what: str
    remote: str
    files: list[str] = field(default_factory=list)
    listed_bytes: int = 0
    verified: bool = False
    reason: str = ""
    throughput: Recorded | None = None


def list_files(transfer: Transfer, remote: str | None) -> list[tuple[str, int]]:
    """The regular files under ``remote`` (``None``: the session) and their sizes, by rsync.

    ``rsync -r --list-only`` moves no file. A name rsync escapes (an octal ``#012`` after a backslash) is left out.

    Raises:
        Failure: rsync could not list the folder (one line).
    """
    try:
        done = subprocess.run(transfer.list_only_command(remote), capture_output=True,
                              env=dict(os.environ, LC_ALL="C"), timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Failure(f"could not list {transfer.source.words(remote)}: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()
        key = host_key_advice(said, transfer.source.host)  # ssh's host key refusal (H-64)
        last = [key] if key else said.splitlines()[-1:] or ["no reason given"]
        raise Failure(f"could not list {transfer.source.words(remote)}: {last[0]}")
    out: list[tuple[str, int]] = []
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        m = _LIST_RE.match(line)
        if m is not None and "\\#" not in m.group(2):
            out.append((m.group(2), int(m.group(1).replace(",", ""))))
    return out


def pick_files(listing: list[tuple[str, int]], budget_bytes: int) -> list[tuple[str, int]]:
    """The largest files that fit in ``budget_bytes`` together (bigger copies, truer figures).

    Args:
        listing: ``(path, size in bytes)`` pairs.
        budget_bytes: the most the picked files may total.

    Returns:
        The picked pairs, sorted by path; empty when no file fits.
    """
    picked: list[tuple[str, int]] = []
    total = 0
    for path, size in sorted(listing, key=lambda f: (-f[1], f[0])):
        if size > 0 and total + size <= budget_bytes:
            picked.append((path, size))
            total += size
    return sorted(picked)


def probe(
    source: Source,
    *,
    to: Path,
    deliverables: str | None = None,
    ssh: str | None = None,
    bwlimit_kbps: int | None = None,
    rsync_path: str | None = None,
    on_progress: Callable[[str, Progress], None] | None = None,
    on_step: Callable[[str], None] | None = None,
    cap_bytes: int = PROBE_CAP_BYTES,
) -> ProbeResult:
    """Copy at most ``cap_bytes`` of the deliverables home, check the copy, record the figure (D2).

    Args:
        source: the session folder (:func:`gpusession.core.copyhome.pull.parse_source`).
        to: the local folder of the pull (the probe works under ``to/.gpusession-pull``).
        deliverables: the deliverables folder on the same host; default: the folder of
            the newest manifest recorded in the session's journal.
        ssh: the remote shell, as for a pull.
        bwlimit_kbps: rsync's ``--bwlimit`` (KiB/s).
        rsync_path: the rsync program on the server.
        on_progress: called with ``("probe", Progress)``.
        on_step: called with one line per step, in words.
        cap_bytes: the most rsync moves in all (the lookup of the session's journal,
            manifest and figures included).

    Returns:
        The result; its figure is recorded only when the copy verified.

    Raises:
        TransferFailed: rsync failed (one line).
        Failure: nothing small enough to probe, or a folder that cannot be listed.
        BadInput: ``to`` is not a folder.
    """
    to = Path(to).absolute()
    if to.exists() and not to.is_dir():
        raise BadInput("is a file; expected the local folder to copy into (--to)", path=to)
    say = on_step or (lambda _line: None)
    work = to / WORK_DIR / source.name
    scratch = work / "probe"
    shutil.rmtree(scratch, ignore_errors=True)
    for part in ("lookup", "probe"):
        for sub in ("partial", "tmp"):
            (scratch / part / sub).mkdir(parents=True, exist_ok=True)
    transfer = Transfer(source, scratch, ssh, bwlimit_kbps, rsync_path, on_progress)
    try:
        return _probe(transfer, to, work, scratch, deliverables, say, cap_bytes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _probe(transfer: Transfer, to: Path, work: Path, scratch: Path, deliverables: str | None,
           say: Callable[[str], None], cap_bytes: int) -> ProbeResult:
    """The steps of :func:`probe` inside its scratch folder."""
    source = transfer.source
    lookup = scratch / "session"
    say(f"probe: reading where the deliverables are and the figures so far from {source.words()}")
    transfer.copy("lookup", None, lookup, checksum=True, only=_LOOKUP)
    budget = cap_bytes - sum(s.transferred_bytes for s in transfer.stats)
    remote = deliverables
    if remote is None:
        found = choose_manifest(lookup, None, None)
        remote = found.deliverables if found is not None else None
    picked: list[tuple[str, int]] = []
    what = "deliverables"
    if remote is not None:
        picked = pick_files(list_files(transfer, remote), budget)
    if not picked:
        what, remote = "session folder", None
        picked = pick_files(list_files(transfer, None), budget)
    result = ProbeResult(what, source.words(remote), [p for p, _ in picked], sum(n for _, n in picked))
    if not picked:
        raise Failure(f"nothing to probe: no file of {result.remote} fits in {cap_bytes:,} bytes")
    listing = scratch / "files.txt"
    listing.write_text("".join(f"{p}\n" for p in result.files), encoding="utf-8")
    say(f"probe: copying {len(picked)} file(s) of the {what}, {result.listed_bytes:,} bytes "
        f"(at most {cap_bytes:,}), from {result.remote}")
    copy = scratch / "copy"
    transfer.copy("probe", remote, copy, checksum=False, only=(f"--files-from={listing}",))
    differ = differing_files(source.spec(remote), copy, result.files, work=scratch / "verify",
                             ssh=transfer.ssh, rsync_path=transfer.rsync_path)
    missing = [p for p, n in picked if not (copy / p).is_file() or (copy / p).stat().st_size != n]
    if differ is None:
        result.reason = "rsync could not compare the copy with the server's files"
    elif differ or missing:
        result.reason = f"{len(differ | set(missing))} file(s) of the small copy differ from the server's"
    result.verified = not result.reason
    if not result.verified:
        return result
    home_copy = to / source.name
    home = home_copy / RETRIEVAL_TOML if (home_copy / "session.toml").is_file() else work / RETRIEVAL_TOML
    kept = throughput.read_entries([lookup / RETRIEVAL_TOML, home_copy / RETRIEVAL_TOML, work / RETRIEVAL_TOML])
    figure = throughput.combine(transfer.stats, probe=True, path=transfer.path_words)
    result.throughput = throughput.record(figure, home=home, kept=kept,
                                          remote_spec=transfer.remote_file(RETRIEVAL_TOML),
                                          ssh=transfer.ssh, rsync_path=transfer.rsync_path)
    return result


__all__ = ["PROBE_CAP_BYTES", "ProbeResult", "list_files", "pick_files", "probe"]
