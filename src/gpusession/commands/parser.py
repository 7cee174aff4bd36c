"""The full argument parser of the ``gpusession`` CLI: every registered subcommand.

Kept apart from :mod:`gpusession.cli` so that ``status``, called by tmux every few
seconds, starts without argparse (about a sixth of its start-up): the CLI's dispatch
imports this module only when the command is not a well-formed ``status`` call.
"""

from __future__ import annotations

import argparse

from gpusession import __version__


class OneLineParser(argparse.ArgumentParser):
    """argparse that exits 2 with one line (no usage dump) on a bad argument."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Exit 2 with ``PROG: error: MESSAGE (see PROG --help)``: one line, no usage dump."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered subcommand."""
    parser = OneLineParser(
        prog="gpusession",
        description=(
            "The companion for a rented GPU session: checklist, synchronized runs, memory, "
            "corpus validation, order/payment notes and cost per accepted result. "
            "With no command, opens the TUI on the most recent session."
        ),
        epilog=(
            "Exit codes: 0 ok, 1 failure (also a run stopped by Ctrl-C at a run boundary: "
            "incomplete; or output cut short because its reader closed, as `| head` does), "
            "2 bad input, 3 corpus rejected (validate) or retrieved copy "
            "differs (verify-copy) or sessions not ranked because their work differs "
            "(compare) or the GPU found differs from the order (check-host), 4 run not started: past "
            "the session limit, 129 / 130 / 143 a run ended at once by SIGHUP / a "
            "second Ctrl-C / SIGTERM."
        ),
    )
    parser.add_argument("--version", action="version", version=f"gpusession {__version__}")
    parser.add_argument(
        "--sessions-dir",
        metavar="DIR",
        default=None,
        help="folder holding session folders (default: $GPUSESSION_HOME or ./sessions)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    # Plain imports (no import by string): the modules under gpusession.commands that
    # register subcommands, in help order. Each keeps its heavy imports inside functions.
    from gpusession.commands import (
        agent_cmd,
        checklist_cmds,
        compare_cmd,
        completion_cmd,
        cost_cmds,
        host_cmd,
        pull_cmd,
        run_cmds,
        session_cmds,
        status_cmd,
        tui,
        validate_cmd,
    )

    for mod in (session_cmds, status_cmd, tui, run_cmds, agent_cmd, validate_cmd, cost_cmds, compare_cmd,
                host_cmd, checklist_cmds, pull_cmd, completion_cmd):
        mod.register(sub)
    parser.set_defaults(root_parser=parser)  # `completion` makes its script from it
    return parser


def known_commands(parser: argparse.ArgumentParser) -> set[str]:
    """The command names of ``parser`` (a word that is none of them opens a session)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()
