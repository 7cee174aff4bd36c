"""``gpusession status [NAME] [--format plain|tmux | --json] [--verbose]``: one line, fast (S6).

Dispatched by :func:`gpusession.cli.main` before the full argument parser is built, so a
call from tmux's ``status-right`` every few seconds imports only this module and
:mod:`gpusession.core.retrieval.status` (no argparse, polars, torch or textual): its words
are read by :func:`parse_fast`. It is also registered in the full parser, which answers
``--help`` and every form the fast reader leaves to it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import SimpleNamespace

#: ``typing.TYPE_CHECKING`` without importing typing (type checkers read the name): the
#: parser's modules stay out of typing, a few ms of ``--help``'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from datetime import datetime
    from pathlib import Path
    from typing import Any

FORMATS = ("plain", "tmux")
HELP = "one short line: session, time left, result rows, accepted deliverables, copy home verified"
DESCRIPTION = (
    "One line for a glance or for tmux: session, package time left, result rows (loads, runs, incidents), the "
    "accepted deliverables in the session's unit (approved files, a rule's outputs, else distinct accepted corpora), "
    "and whether the copy home is verified; warns 24 h and 2 h before "
    "the package ends while the copy is not verified, and says when the package ended. "
    "Without NAME: the most recently used session. Sessions folder: --sessions-dir, else "
    "$GPUSESSION_HOME, else ./sessions, else the one used last (remembered in "
    "$XDG_STATE_HOME/gpusession/last-sessions-dir), so it works from any folder. In "
    "~/.tmux.conf: set -g status-right '#(gpusession status --format tmux)'. On a shared "
    "machine the folder used last may be another person's: pin yours, e.g. "
    "set -g status-right '#(gpusession status --format tmux --sessions-dir ~/sessions)', "
    "and add --verbose once to see which folder the line comes from. In tmux form "
    "an error is a short text and exit 0 (the status bar shows no garbage); run "
    "`gpusession status` for the whole line. --json gives the tmux line's fields for scripts."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``NAME``, ``--format``, ``--json`` and ``--verbose`` to ``status``'s parser."""
    p.add_argument("name", nargs="?", metavar="NAME", help="session (default: the most recently used)")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--format", choices=FORMATS, default="plain",
                      help="plain (default) or tmux (for status-right: short, warning in red)")
    form.add_argument("--json", action="store_true",
                      help="the fields of the tmux line as one JSON object, for scripts")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also show the session's folder (which sessions folder the line comes from)")


def register(sub: Any) -> None:
    """Add ``status`` to the full parser (for ``--help``, errors and unusual forms; see :func:`parse_fast`)."""
    import argparse  # loaded already by the full parser; the fast path never comes here

    p = sub.add_parser("status", help=HELP, description=DESCRIPTION)
    add_arguments(p)
    from gpusession.commands.sessions_dir_opt import SESSIONS_DIR_HELP

    p.add_argument("--sessions-dir", metavar="DIR", default=argparse.SUPPRESS, help=SESSIONS_DIR_HELP)
    p.set_defaults(func=cmd_status)


def parse_fast(argv: Sequence[str], sessions_dir: str | None = None) -> SimpleNamespace | None:
    """``status``'s words read without argparse (a sixth of its start-up), for tmux's every few seconds.

    Only the forms :func:`add_arguments` defines, each word once: ``NAME``, ``--format
    plain|tmux`` (or ``--format=…``), ``--json``, ``-v``/``--verbose``, ``--sessions-dir
    DIR`` (or ``=DIR``). Anything else (``--help``, a typo, a bad value, two names,
    ``--json`` with ``--format``) gives ``None``: the full parser then answers it, with
    its help or its one-line error. A test checks both parsers agree on the forms read here.

    Args:
        argv: the words after ``status``.
        sessions_dir: ``--sessions-dir`` given before the command, if any.

    Returns:
        The arguments (``name``, ``format``, ``json``, ``verbose``, ``sessions_dir``), or ``None``.
    """
    got: dict[str, Any] = {"name": None, "format": None, "json": False, "verbose": False,
                           "sessions_dir": sessions_dir}
    seen: set[str] = set()
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        key, _, inline = word.partition("=")
        if key in ("--format", "--sessions-dir"):
            if not inline and "=" not in word:
                if i + 1 >= len(words) or words[i + 1].startswith("-"):
                    return None
                i += 1
                inline = words[i]
            if key in seen or not inline:
                return None
            seen.add(key)
            got[key[2:].replace("-", "_")] = inline
        elif word in ("--json", "-v", "--verbose"):
            flag = "json" if word == "--json" else "verbose"
            if flag in seen:
                return None
            seen.add(flag)
            got[flag] = True
        elif word.startswith("-") or got["name"] is not None:
            return None
        else:
            got["name"] = word
        i += 1
    if got["format"] is not None and (got["format"] not in FORMATS or got["json"]):
        return None
    got["format"] = got["format"] or "plain"
    return SimpleNamespace(**got)


def _shown_folder(root: Path) -> str:
    """The sessions folder as a person reads it: absolute, the home folder as ``~``."""
    text = os.path.abspath(root)
    home = os.path.expanduser("~")
    return "~" + text[len(home):] if home not in ("", "/") and (text == home or text.startswith(home + os.sep)) else text


def cmd_status(args: Any, *, now: datetime | None = None) -> int:
    r"""Print the status line of one session (S6).

    Args:
        args: ``name`` (or ``None``), ``format``, ``json``, ``verbose``, ``sessions_dir``.
        now: the instant (tests); default now.

    Returns:
        0; 2 when there is no such session, its name is refused (the words of every
        other command: :func:`gpusession.core.files.sessionname.check_name`, e.g. a path
        separator or over 100 characters) or a file is refused (the one line
        ``gpusession show`` gives, on stderr); 1 when the disk refuses a read (one
        line). In tmux form any error is a short text on stdout and exit 0, never a
        traceback, so the status bar shows a word, not a cut path
        (``gpusession: no session`` / ``gpusession: NAME: run gpusession status``).
        Every form but ``--json`` (where JSON escapes them) shows control and
        direction-changing characters escaped, as ``show`` does (``\x1b``, ``\u202e``).
    """
    from gpusession.core.files.errors import GpusessionError
    from gpusession.core.files.sessionname import check_name
    from gpusession.core.files.textio import json_safe, printable
    from gpusession.core.folder.root import elsewhere_words, most_recent_session, status_root
    from gpusession.core.retrieval.status import session_status

    root = status_root(getattr(args, "sessions_dir", None))
    tmux = args.format == "tmux" and not getattr(args, "json", False)
    verbose = getattr(args, "verbose", False)
    where = f" [{_shown_folder(root)}]".replace("#", "##") if verbose else ""
    name = args.name
    try:
        if name is not None:  # before any path is built from it (`c1/`, `../c1`, 300 characters)
            check_name(name)
        name = name or most_recent_session(root)
        if name is None:
            raise GpusessionError(f"no session in {root}; create one with: gpusession new NAME")
        if args.name is not None and not _is_session_dir(root, name):  # said where it is (H-67)
            elsewhere = elsewhere_words(name, root)
            if elsewhere:
                raise GpusessionError(f"no session {name!r} in {root}{elsewhere}")
        status = session_status(root / name, now=now)
    except Exception as exc:  # noqa: BLE001 - tmux's status bar never shows a traceback
        if tmux:  # tmux shows stdout only; the whole line is one `gpusession status` away
            if name is None or not _is_session_dir(root, name):
                print(printable(f"gpusession: no session{where}"))
            else:
                print(printable(f"gpusession: {name[:24]}: run gpusession status".replace("#", "##") + where))
            return 0
        if isinstance(exc, GpusessionError):
            print(printable(f"gpusession: error: {exc}"), file=sys.stderr)
            return 2
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            # the disk refused (as every other command says it): one line, exit 1
            where = f"{exc.filename}: " if exc.filename else ""
            print(printable(f"gpusession: error: {where}{exc.strerror or exc}"), file=sys.stderr)
            return 1
        raise
    folder = root / name
    if getattr(args, "json", False):
        from gpusession.core.retrieval.json_contract import json_text, versioned

        print(json_safe(json_text({**versioned(status.to_json()), "folder": os.path.abspath(folder),
                                   "sessions_dir": os.path.abspath(root)})))
    elif tmux:
        print(printable(status.tmux() + (f" [{_shown_folder(folder)}]".replace("#", "##") if verbose else "")))
    else:
        print(printable(status.line() + (f" · folder {_shown_folder(folder)}" if verbose else "")))
    return 0


def _is_session_dir(root: Path, name: str) -> bool:
    """Whether ``root / name`` is a folder; ``False`` when the name cannot even be looked up.

    A name the file system refuses (too long, a NUL) is no session: tmux's line stays a word.
    """
    try:
        return (root / name).is_dir()
    except (OSError, ValueError):
        return False
