"""The parsers of ``open``.

Each names its handler in :mod:`gpusession.commands.tui`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``open`` (the TUI) to the CLI; ``gpusession [NAME]`` is rewritten to it.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser.
    """
    p = sub.add_parser(
        "open",
        help="open the TUI on a session (default: the most recent)",
        description=(
            "Open the TUI (six panes: 1 Checklist, 2 Run, 3 Memory, 4 Validation, 5 Order, "
            "6 Cost) on session NAME, or on the most recently changed session. "
            "`gpusession NAME` is the same. With no session yet, offers to create one."
        ),
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="session name (default: the most recent)")
    p.set_defaults(func=Handler("tui", "cmd_open"))

