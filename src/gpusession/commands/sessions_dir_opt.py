"""``--sessions-dir`` accepted after the subcommand too (``gpusession show --sessions-dir D NAME``).

A shell user types options where the command is; ``status`` already took it there.
"""

from __future__ import annotations

import argparse

SESSIONS_DIR_HELP = ("folder holding session folders (default: $GPUSESSION_HOME, else ./sessions when "
                     "it exists, else the folder used last)")


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for child in action.choices.values():
                if id(child) not in seen:  # an alias maps to the same parser
                    seen.add(id(child))
                    found.append(child)
    return found


def accept_after_command(parser: argparse.ArgumentParser) -> None:
    """Add ``--sessions-dir DIR`` to every subcommand (and their subcommands) that lacks it.

    The default is suppressed, so a value given before the command is kept unless the
    same option is given again after it (the later one wins, as argparse does).

    Args:
        parser: the top-level parser, its subcommands registered.
    """
    for child in _subparsers(parser):
        if "--sessions-dir" not in child._option_string_actions:
            child.add_argument("--sessions-dir", metavar="DIR", default=argparse.SUPPRESS,
                               help=SESSIONS_DIR_HELP)
        accept_after_command(child)
