"""A command's handler named by its module and function, imported only when it runs.

Why: ``gpusession --help``, ``--version`` and ``COMMAND --help`` build the parser
(:mod:`gpusession.commands.parsers`) and must not import polars or the core's readers,
which the handlers' modules import at their top; a parser's ``func`` is therefore a
:class:`Handler`, whose module is imported on dispatch only, by a plain import in
:func:`handler_module` (no import by string: a missing module is a bug mypy sees).
``tests/cli/test_fast_help.py`` resolves every handler of the whole parser and checks
that ``--help`` leaves polars, textual and torch unloaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import ModuleType


def handler_module(module: str) -> ModuleType:
    """The module ``gpusession.commands.<module>``, imported now.

    Raises:
        KeyError: ``module`` holds no handlers (a bug in a parser's ``Handler``).
    """
    if module == "session_cmds":
        from gpusession.commands import session_cmds
        return session_cmds
    if module == "tui":
        from gpusession.commands import tui
        return tui
    if module == "run_cmds":
        from gpusession.commands import run_cmds
        return run_cmds
    if module == "agent_cmd":
        from gpusession.commands import agent_cmd
        return agent_cmd
    if module == "validate_cmd":
        from gpusession.commands import validate_cmd
        return validate_cmd
    if module == "rates_cmd":
        from gpusession.commands import rates_cmd
        return rates_cmd
    if module == "cost_cmds":
        from gpusession.commands import cost_cmds
        return cost_cmds
    if module == "deliverables_cmd":
        from gpusession.commands import deliverables_cmd
        return deliverables_cmd
    if module == "compare_cmd":
        from gpusession.commands import compare_cmd
        return compare_cmd
    if module == "host_cmd":
        from gpusession.commands import host_cmd
        return host_cmd
    if module == "checklist_cmds":
        from gpusession.commands import checklist_cmds
        return checklist_cmds
    if module == "pull_cmd":
        from gpusession.commands import pull_cmd
        return pull_cmd
    raise KeyError(f"no handler module gpusession.commands.{module}")


class Handler:
    """``func`` of a subcommand: ``gpusession.commands.<module>.<name>``, called with the parsed args.

    Args:
        module: the module's name under :mod:`gpusession.commands`, e.g. ``"run_cmds"``
            (one of :func:`handler_module`'s).
        name: the function's name in it, e.g. ``"cmd_run"``; it takes the
            ``argparse.Namespace`` and returns the exit code (``None``: 0).
    """

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        """Name the handler; nothing is imported until it is resolved or called."""
        self.module = module
        self.name = name

    def resolve(self) -> Callable[[argparse.Namespace], int | None]:
        """The function itself, its module imported now.

        Raises:
            KeyError, AttributeError: the module or the function does not exist (a bug,
                caught by the test that resolves every handler of the whole parser).
        """
        func: Callable[[argparse.Namespace], int | None] = getattr(handler_module(self.module), self.name)
        return func

    def __call__(self, args: argparse.Namespace) -> int | None:
        """Run the handler with ``args``; returns its exit code."""
        return self.resolve()(args)

    def __repr__(self) -> str:
        """``Handler('run_cmds', 'cmd_run')``: what ``--help`` debugging and test failures show."""
        return f"Handler({self.module!r}, {self.name!r})"
