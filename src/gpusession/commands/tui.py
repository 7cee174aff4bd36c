"""``gpusession [NAME]`` / ``gpusession open NAME``: the TUI (issue 6)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpusession.commands._common import root_of
from gpusession.core.session import Session, most_recent


def register(sub: Any) -> None:
    p = sub.add_parser("open", help="open the TUI on a session (default: the most recent)")
    p.add_argument("name", nargs="?", metavar="NAME")
    p.set_defaults(func=cmd_open)


def cmd_open(args: argparse.Namespace) -> int:
    root = root_of(args)
    name = args.name or most_recent(root)
    if name is None:
        print(
            f"no session in {root} yet. Create one with `gpusession new NAME --gpu MODEL "
            "--lots N --days 7`, or try `gpusession demo`.",
            file=sys.stderr,
        )
        return 1
    session = Session.open(root, name)
    try:
        from gpusession.ui.app import run_app
    except ImportError:
        print(f"session {session.name}: the TUI is not built yet; use `gpusession show {name}`.")
        return 0
    return run_app(session)
