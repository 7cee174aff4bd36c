"""A known command builds only its module's parser, and that parser is the whole parser's."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from gpusession.commands.dispatch import Handler
from gpusession.commands.parser import COMMAND_MODULES, build_parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _module(parser: argparse.ArgumentParser) -> str:
    """The module of the command's handler (a command with subcommands: of its first one)."""
    func = parser._defaults.get("func")
    if func is None:
        return _module(next(iter(_commands(parser).values())))
    if isinstance(func, Handler):  # named, imported on dispatch
        return func.module
    return str(func.__module__).rsplit(".", 1)[-1]


def test_the_table_names_every_command_and_the_module_that_registers_it() -> None:
    whole = _commands(build_parser())
    assert set(COMMAND_MODULES) == set(whole)
    for name, parser in whole.items():
        assert COMMAND_MODULES[name] in (_module(parser), None), name
    assert [n for n, m in COMMAND_MODULES.items() if m is None] == ["completion"]  # its script names all


@pytest.mark.parametrize("command", sorted(COMMAND_MODULES))
def test_a_command_alone_parses_as_in_the_whole_parser(command: str) -> None:
    alone, whole = _commands(build_parser(command)), _commands(build_parser())
    assert alone[command].format_help() == whole[command].format_help()


def test_report_loads_neither_run_nor_cost_and_help_lists_every_command(
        sessions_root: Path, new_session) -> None:
    new_session(name="r1")
    code = ("import sys; from gpusession.cli import main; "
            f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'report', 'r1', '--no-charts']); "
            "print('LOADED', [m for m in ('gpusession.commands.run_cmds', 'gpusession.commands.cost_cmds') "
            "if m in sys.modules], rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "LOADED [] 0" in done.stdout, done.stdout + done.stderr
    help_text = subprocess.run([sys.executable, "-m", "gpusession", "--help"], capture_output=True,
                               text=True, timeout=60).stdout
    assert all(name in help_text for name in COMMAND_MODULES if name != "open")
