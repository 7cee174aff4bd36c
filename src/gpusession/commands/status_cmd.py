"""``gpusession status [NAME] [--format plain|tmux]``: one line, fast (S6).

Dispatched by :func:`gpusession.cli.main` before the full argument parser is built, so a
call from tmux's ``status-right`` every few seconds imports only this module and
:mod:`gpusession.core.retrieval.status` (no polars, torch or textual). It is also registered in
the full parser, so ``gpusession --help`` lists it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

FORMATS = ("plain", "tmux")
HELP = "one short line: session, time left, result rows, accepted corpora, copy home verified"
DESCRIPTION = (
    "One line for a glance or for tmux: session, package time left, result rows (loads, runs, incidents), distinct "
    "accepted corpora, and whether the copy home is verified; warns 24 h and 2 h before "
    "the package ends while the copy is not verified, and says when the package ended. "
    "Without NAME: the most recently used session. Sessions folder: --sessions-dir, else "
    "$GPUSESSION_HOME, else ./sessions, else the one used last (remembered in "
    "$XDG_STATE_HOME/gpusession/last-sessions-dir), so it works from any folder. In "
    "~/.tmux.conf: set -g status-right '#(gpusession status --format tmux)'. In tmux form "
    "an error is a short text and exit 0 (the status bar shows no garbage); run "
    "`gpusession status` for the whole line."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``NAME`` and ``--format`` to a parser (the early one and the full tree's)."""
    p.add_argument("name", nargs="?", metavar="NAME", help="session (default: the most recently used)")
    p.add_argument("--format", choices=FORMATS, default="plain",
                   help="plain (default) or tmux (for status-right: short, warning in red)")


def register(sub: Any) -> None:
    """Add ``status`` to the full parser (for ``--help``; the call itself goes through :func:`main`)."""
    p = sub.add_parser("status", help=HELP, description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(func=cmd_status)


def cmd_status(args: argparse.Namespace, *, now: datetime | None = None) -> int:
    """Print the status line of one session (S6).

    Args:
        args: ``name`` (or ``None``), ``format``, ``sessions_dir``.
        now: the instant (tests); default now.

    Returns:
        0; 2 when there is no such session or a file is refused (the one line
        ``gpusession show`` gives, on stderr); 1 when the disk refuses a read (one
        line). In tmux form any error is a short text on stdout and exit 0, never a
        traceback, so the status bar shows a word, not a cut path
        (``gpusession: no session`` / ``gpusession: NAME: run gpusession status``).
    """
    from gpusession.core.files.errors import GpusessionError
    from gpusession.core.retrieval.status import most_recent_session, session_status, status_root

    root = status_root(getattr(args, "sessions_dir", None))
    tmux = args.format == "tmux"
    name = args.name
    try:
        name = name or most_recent_session(root)
        if name is None:
            raise GpusessionError(f"no session in {root}; create one with: gpusession new NAME")
        status = session_status(root / name, now=now)
    except Exception as exc:  # noqa: BLE001 - tmux's status bar never shows a traceback
        if tmux:  # tmux shows stdout only; the whole line is one `gpusession status` away
            if name is None or not (root / name).is_dir():
                print("gpusession: no session")
            else:
                print(f"gpusession: {name[:24]}: run gpusession status".replace("#", "##"))
            return 0
        if isinstance(exc, GpusessionError):
            print(f"gpusession: error: {exc}", file=sys.stderr)
            return 2
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            # the disk refused (as every other command says it): one line, exit 1
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"gpusession: error: {where}{exc.strerror or exc}", file=sys.stderr)
            return 1
        raise
    print(status.tmux() if tmux else status.line())
    return 0


def main(argv: Sequence[str], sessions_dir: str | None = None,
         parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> int:
    """Parse ``status``'s own arguments and run it (the early path of :func:`gpusession.cli.main`).

    Args:
        argv: the words after ``status``.
        sessions_dir: ``--sessions-dir`` given before the command, if any.
        parser_class: the CLI's parser class (one-line errors), passed in so this module
            never imports :mod:`gpusession.cli` (no import cycle).

    Returns:
        The exit code.
    """
    parser = parser_class(prog="gpusession status", description=DESCRIPTION)
    add_arguments(parser)
    parser.add_argument("--sessions-dir", metavar="DIR", default=sessions_dir,
                        help="folder holding session folders (default: $GPUSESSION_HOME or ./sessions)")
    args = parser.parse_args(list(argv))
    return cmd_status(args)
