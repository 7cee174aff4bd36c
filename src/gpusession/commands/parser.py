"""The argument parser of the ``gpusession`` CLI: every registered subcommand, or one's.

Kept apart from :mod:`gpusession.cli` so that ``status``, called by tmux every few
seconds, starts without argparse (about a sixth of its start-up): the CLI's dispatch
imports this module only when the command is not a well-formed ``status`` call.

A known command builds only the parser of the module that registers it
(:data:`COMMAND_MODULES`): ``report`` then imports nothing that ``run`` or ``cost`` import
at their top (about a sixth of its start-up). ``--help``, a mistyped command and
``completion`` (its script names every command) build the whole parser.
"""

from __future__ import annotations

import argparse

from gpusession import __version__
from gpusession.commands.command_names import COMMAND_MODULES


class OneLineParser(argparse.ArgumentParser):
    """argparse that exits 2 with one line (no usage dump) on a bad argument."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Exit 2 with ``PROG: error: MESSAGE (see PROG --help)``: one line, no usage dump.

        argparse quotes what was typed (an unknown option, a bad choice): a secret typed
        there is masked and a control character escaped, as in every refusal (H-46).
        """
        import re

        from gpusession.core.files.textio import printable

        # each value argparse quotes is masked on its own, so argparse's words around it
        # ("invalid choice", "choose from") are kept, never read as part of a seed phrase
        message = re.sub(r"'([^']*)'", lambda m: f"'{printable(m.group(1), keep='')}'", message)
        self.exit(2, f"{self.prog}: error: {printable(message, keep='')} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every registered subcommand, or only those of ``command``'s module.

    Args:
        command: a name in :data:`COMMAND_MODULES`: only the module that registers it is
            imported and registered (its other commands come along); ``None``, or a
            command that needs the whole parser: every module, in help order.
    """
    only = COMMAND_MODULES.get(command) if command is not None else None

    def want(module: str) -> bool:
        return only is None or only == module

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
        help=("folder holding session folders (default: $GPUSESSION_HOME, else ./sessions when it exists, "
              "else the folder used last)"),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    # Plain imports (no import by string): the modules that register subcommands, in help
    # order; each imported only when its commands are built. They import no handler: a
    # command's ``func`` is a dispatch.Handler, its module imported when it runs.
    if want("session_cmds"):
        from gpusession.commands.parsers import session_cmds
        session_cmds.register(sub)
    if want("status_cmd"):
        from gpusession.commands import status_cmd
        status_cmd.register(sub)
    if want("tui"):
        from gpusession.commands.parsers import tui
        tui.register(sub)
    if want("run_cmds"):
        from gpusession.commands.parsers import run_cmds
        run_cmds.register(sub)
    if want("agent_cmd"):
        from gpusession.commands.parsers import agent_cmd
        agent_cmd.register(sub)
    if want("validate_cmd"):
        from gpusession.commands.parsers import validate_cmd
        validate_cmd.register(sub)
    if want("cost_cmds"):
        from gpusession.commands.parsers import cost_cmds
        cost_cmds.register(sub)
    if want("rates_cmd"):
        from gpusession.commands.parsers import rates_cmd
        rates_cmd.register(sub)
    if want("deliverables_cmd"):
        from gpusession.commands.parsers import deliverables_cmd
        deliverables_cmd.register(sub)
    if want("compare_cmd"):
        from gpusession.commands.parsers import compare_cmd
        compare_cmd.register(sub)
    if want("host_cmd"):
        from gpusession.commands.parsers import host_cmd
        host_cmd.register(sub)
    if want("checklist_cmds"):
        from gpusession.commands.parsers import checklist_cmds
        checklist_cmds.register(sub)
    if want("pull_cmd"):
        from gpusession.commands.parsers import pull_cmd
        pull_cmd.register(sub)
    if want("completion_cmd"):
        from gpusession.commands import completion_cmd
        completion_cmd.register(sub)
    from gpusession.commands.sessions_dir_opt import accept_after_command

    accept_after_command(parser)  # `gpusession show --sessions-dir D NAME`
    parser.set_defaults(root_parser=parser)  # `completion` makes its script from it
    return parser


def known_commands(parser: argparse.ArgumentParser) -> set[str]:
    """The command names of ``parser`` (a word that is none of them opens a session)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()
