"""``gpusession pull SRC [--deliverables DIR] [--to DIR] [--ssh CMD]`` (S4, G§8).

Thin: the transfer and the verification are :func:`gpusession.core.copyhome.pull.pull`. This
module draws the progress (a bar on a terminal, a line per 10 % otherwise) and prints
the outcome. Exit 0 only when the copy is verified; 3 when it was copied but is not
verified (it differs, or there is no manifest); 1 when the transfer failed; 2 bad input;
128 + the signal when SIGTERM or SIGHUP ended it (rsync and its ssh ended with it, H-63).
Every pull records its measured throughput in the server's ``retrieval.toml`` (D2);
``--probe`` makes only a small copy, for the figure (:mod:`gpusession.core.copyhome.probe`).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import Failure
from gpusession.core.files.textio import fit_columns, printable

#: Exit code when the copy arrived but is not verified (as verify-copy's "differs").
EXIT_NOT_VERIFIED = 3


class PullEnded(Failure):
    """SIGTERM or SIGHUP ended the pull: rsync ended with it (H-63). Exit 128 + the signal."""

    def __init__(self, signum: int) -> None:
        """Say which signal ended the pull; the exit code is 128 + its number."""
        name = signal.Signals(signum).name
        super().__init__(f"pull ended by {name}: rsync was ended with it; what it copied is "
                         "kept and the next pull goes on from there")
        self.exit_code = 128 + signum


@contextmanager
def _ended_by_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`PullEnded` while the block runs (H-63).

    Why: Ctrl-C reaches rsync with the terminal's group, a ``kill`` reaches this process
    alone; raised here, it runs the rsync call's own ending (its whole tree). SIGHUP is
    left as it is under ``nohup`` (:func:`ending_signals`).
    """
    from gpusession.core.folder.processes import ending_signals, signal_handlers

    raised: list[int] = []

    def ended(signum: int, frame: Any) -> None:
        if not raised:  # once: a second signal never cuts the ending of rsync short
            raised.append(signum)
            raise PullEnded(signum)

    with signal_handlers({sig: ended for sig in ending_signals()}):
        yield


class _Bar:
    """Progress on stderr: a bar redrawn in place on a terminal, else one line per 10 %."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last: tuple[str, int] | None = None
        self.drawn = False

    def __call__(self, part: str, p: Any) -> None:
        if self.tty:
            width = 30
            full = p.percent * width // 100
            line = (f"{part:<12} [{'#' * full}{'-' * (width - full)}] {p.percent:3d}% "
                    f"{p.bytes_done:>14,} bytes {p.rate:>11} {p.eta}")
            # cut to the terminal's width: a wrapped line redrawn in place leaves rows behind (H-66)
            sys.stderr.write("\r\x1b[K" + fit_columns(line, shutil.get_terminal_size().columns))
            sys.stderr.flush()
            self.drawn = True
            return
        step = p.percent // 10 * 10
        if self.last is None or self.last != (part, step):
            self.last = (part, step)
            print(f"{part}: {p.percent}% ({p.bytes_done:,} bytes, {p.rate}, {p.eta} left)", file=sys.stderr)

    def end_line(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.drawn = False


def cmd_pull(args: argparse.Namespace) -> int:
    """Copy a session and its deliverables home, verify them, print the outcome.

    Args:
        args: ``source``, ``deliverables``, ``to``, ``ssh``, ``bwlimit``, ``rsync_path``,
            ``checksum``, ``sessions_dir``.

    Returns:
        0 verified, :data:`EXIT_NOT_VERIFIED` (3) copied but not verified.

    Raises:
        BadInput: a bad SRC, ``--to`` a file, an unknown host or a missing source (exit 2).
        TransferFailed: rsync failed (one line, exit 1).
    """
    from gpusession.commands._common import root_of
    from gpusession.core.copyhome.pull import parse_source, pull, ssh_from_env

    source = parse_source(args.source)
    to = Path(args.to) if args.to else root_of(args)
    if getattr(args, "probe", False):
        return _probe(args, source, to)
    bar = _Bar()
    as_json = bool(getattr(args, "json", False))

    def step(line: str) -> None:  # a step names server paths: escaped (H-44)
        bar.end_line()
        print(_name(line), file=sys.stderr if as_json else sys.stdout)

    try:
        with _ended_by_signals():
            res = pull(source, to=to, deliverables=args.deliverables, ssh=ssh_from_env(args.ssh),
                       bwlimit_kbps=args.bwlimit, rsync_path=args.rsync_path,
                       checksum_deliverables=args.checksum, on_progress=bar, on_step=step)
    finally:
        bar.end_line()
    # nothing moved since the last pull counted these same files: its count holds (A5); a pull killed
    # between its record and this count leaves status's "? not counted yet" until `cost` counts
    if not res.unchanged:
        from gpusession.commands._common import keep_count

        keep_count(Path(res.session_copy))  # the copy's own count for `status` (S10): the server's reads as absent
    if as_json:  # the outcome as data (docs/json/pull.schema.json)
        from gpusession.commands._common import print_json

        print_json(pull_json(res))
        return 0 if res.verified else EXIT_NOT_VERIFIED
    print(f"session copy: {_name(res.session_copy)} ({res.session_count.files} files, "
          f"{res.session_count.total_bytes} bytes)")
    for line in res.session_problems:
        print(f"  UNREADABLE {_name(line)}")
    if res.deliverables_copy is not None:
        print(f"deliverables copy: {_name(res.deliverables_copy)} ({res.deliverables_count.files} files, "
              f"{res.deliverables_count.total_bytes} bytes)")
    if res.manifest is not None:
        which = res.manifest.remote_path or str(res.manifest.local_path)
        more = (f"; the newest of {res.manifest.others + 1} manifests" if res.manifest.others else "")
        when = f", written {_name(res.manifest.written_at)}" if res.manifest.written_at else ""
        print(f"manifest: {_name(which)}{when}{more}")
    check = res.check
    if check is not None:
        total = len(check.matching) + len(check.missing) + len(check.changed)
        print(f"{len(check.matching)}/{total} listed file(s) match (size and SHA-256)")
        for p in check.missing:
            print(f"  MISSING  {_name(p)}")
        for c in check.changed:
            how = ("hash differs" if c.actual_sha256
                   else f"size {c.actual_size_bytes} ≠ {c.expected_size_bytes} bytes (truncated or grown)")
            if c.path in res.server_changed:
                how += "; the server's file is the same: it changed after the manifest was made"
            elif c.path in res.copy_differs:
                how += "; the copy differs from the server's file"
            print(f"  CHANGED  {_name(c.path)} ({how})")
        for p in check.extra:
            print(f"  EXTRA    {_name(p)}")
        for a, b in check.renamed:
            print(f"  RENAMED? {_name(a)} → {_name(b)} (same content)")
    if res.left_on_server:  # not listed by the manifest: never copied home (S9)
        from gpusession.core.copyhome.approved_copy import left_words

        print(_name(left_words(res.left_on_server)))
    if res.throughput is not None:  # measured from rsync's own figures, kept on the server (D2)
        print(_name(res.throughput.words()))
    if res.verified:
        print("VERIFIED: the copy home matches the manifest made on the server "
              "(recorded as evidence in the copy's checklist)")
        print(f"on the server, to stop the end-of-package warnings: gpusession checklist {_name(source.name)} "
              "done g8.verify-copy")
        if check is not None and check.representative:
            print("Open these from the copy:")
            for p in check.representative:
                print(f"  {_name(str(res.deliverables_copy / p) if res.deliverables_copy else p)}")
        return 0
    print(f"NOT VERIFIED: {_name(res.reason)}")
    if check is not None and check.changed:
        # The copy differs from the server's file: fetching it again helps. The server's
        # own file no longer matches its manifest: no copy can help.
        told = bool(res.copy_differs or res.server_changed)
        if (res.copy_differs or not told) and not args.checksum:
            print("  rerun with --checksum to fetch the changed files again, then it is verified anew")
        if res.server_changed:
            print(f"  the server's file changed after the manifest was made; make a new manifest there "
                  f"(gpusession manifest {_name(source.name)} --deliverables DIR) or restore the file")
    if check is not None and check.extra and res.copied_listed and res.deliverables_copy is not None:
        # this pull copied the listed files only: the extra ones were in the copy home before it
        print(f"  the copy home held {len(check.extra)} file(s) the manifest does not list before this pull "
              f"(a pull removes nothing): move them out of {_name(res.deliverables_copy)}, then pull again")
    return EXIT_NOT_VERIFIED


def pull_json(res: Any) -> dict[str, Any]:
    """The outcome of a pull as data: what ``pull`` prints, one key per fact.

    Args:
        res: a :class:`gpusession.core.copyhome.pull.PullResult`.

    Returns:
        ``verified``, ``exit_code``, ``reason`` (``None`` when verified), the copies with
        their file counts and bytes, ``manifest`` (its path, ``None`` without one), the
        comparison (``matching``, ``missing``, ``changed``, ``extra``, ``renamed``: paths
        as the manifest lists them), ``unreadable`` session files, ``throughput`` (the
        printed line, ``None`` when nothing was measured) and ``representative`` (the
        files to open from the copy). ``changed`` and ``renamed`` have ``verify-copy``'s shape.
    """
    check = res.check
    deliverables = res.deliverables_copy
    return {
        "probe": False,
        "verified": bool(res.verified),
        "exit_code": 0 if res.verified else EXIT_NOT_VERIFIED,
        "reason": None if res.verified else res.reason,
        "session_copy": str(res.session_copy),
        "session_files": res.session_count.files,
        "session_bytes": res.session_count.total_bytes,
        "deliverables_copy": str(deliverables) if deliverables is not None else None,
        "deliverables_files": res.deliverables_count.files if deliverables is not None else None,
        "deliverables_bytes": res.deliverables_count.total_bytes if deliverables is not None else None,
        "manifest": (res.manifest.remote_path or str(res.manifest.local_path)) if res.manifest else None,
        "matching": len(check.matching) if check is not None else None,
        "missing": list(check.missing) if check is not None else [],
        "changed": [{"path": c.path, "expected_size_bytes": c.expected_size_bytes,
                     "actual_size_bytes": c.actual_size_bytes, "expected_sha256": c.expected_sha256,
                     "actual_sha256": c.actual_sha256, "server_changed": c.path in res.server_changed}
                    for c in check.changed] if check is not None else [],
        "extra": list(check.extra) if check is not None else [],
        "renamed": [{"expected": a, "found": b} for a, b in check.renamed] if check is not None else [],
        "left_on_server": list(res.left_on_server) if res.left_on_server is not None else None,
        "unreadable": list(res.session_problems),
        "throughput": res.throughput.words() if res.throughput is not None else None,
        "representative": ([str(deliverables / p) if deliverables else p for p in check.representative]
                           if res.verified and check is not None else []),
    }


def _name(text: object) -> str:
    r"""A name from the server as printed: every control character escaped (``a\nb.png``, ``\x1b[2J``), H-44.

    The same escaping as ``verify-copy``: a deliverable named with a newline never splits
    a list, one named with ``ESC [2J`` never clears the terminal.
    """
    return printable(str(text), keep="")


def _probe(args: argparse.Namespace, source: Any, to: Path) -> int:
    """``pull --probe``: a small copy, checked, and its throughput recorded (D2).

    Returns:
        0 when the small copy equals the server's files (the figure recorded), 3 when not.
    """
    from gpusession.core.copyhome.probe import probe
    from gpusession.core.copyhome.pull import ssh_from_env

    bar = _Bar()
    as_json = bool(getattr(args, "json", False))

    def step(line: str) -> None:  # a step names server paths: escaped (H-44)
        bar.end_line()
        print(_name(line), file=sys.stderr if as_json else sys.stdout)

    try:
        with _ended_by_signals():
            res = probe(source, to=to, deliverables=args.deliverables, ssh=ssh_from_env(args.ssh),
                        bwlimit_kbps=args.bwlimit, rsync_path=args.rsync_path, on_progress=bar,
                        on_step=step)
    finally:
        bar.end_line()
    if as_json:  # the probe's outcome as data (docs/json/pull.schema.json, "probe": true)
        from gpusession.commands._common import print_json

        print_json({"probe": True, "verified": bool(res.verified),
                    "exit_code": 0 if res.verified else EXIT_NOT_VERIFIED,
                    "reason": None if res.verified else res.reason, "what": res.what,
                    "files": len(res.files), "listed_bytes": res.listed_bytes,
                    "throughput": res.throughput.words() if res.verified and res.throughput is not None
                    else None})
        return 0 if res.verified else EXIT_NOT_VERIFIED
    if not res.verified:
        print(_name(f"PROBE NOT VERIFIED: {res.reason}; no figure recorded"))
        return EXIT_NOT_VERIFIED
    print(_name(f"probe: {len(res.files)} file(s) of the {res.what} ({res.listed_bytes:,} bytes) "
                    f"copied from {res.remote} and equal to the server's (rsync checksums)"))
    if res.throughput is not None:
        print(_name(res.throughput.words()))
    print("the small copy was removed; the copy home is made by the same command without --probe")
    return 0
