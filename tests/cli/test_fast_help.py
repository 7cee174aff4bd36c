"""Help without the handlers: ``--help``, ``--version`` and ``COMMAND --help`` load neither
polars, textual nor torch (counted in ``sys.modules``, never timed: ``bench_help.py``
times them), and every command still reaches its handler."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from gpusession.commands.dispatch import Handler, handler_module
from gpusession.commands.parser import COMMAND_MODULES, build_parser

#: The heavy libraries a help text must not load.
HEAVY = ("polars", "textual", "torch")

#: Runs ``main`` on each argument list in one process, then prints the heavy packages loaded.
PROBE = """
import contextlib, io, sys
{before}
from gpusession.cli import main
for words in {cases!r}:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(words)
        except SystemExit as stop:
            code = stop.code
    assert code in (0, None) and out.getvalue().strip(), (words, code, out.getvalue())
print(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy!r}))
"""


def _heavy_loaded(cases: list[list[str]], before: str = "") -> list[str]:
    code = PROBE.format(cases=cases, heavy=set(HEAVY), before=before)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our own probe's list


def _handlers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    """Every command path of ``parser`` and its ``func`` (``("order", "show")`` → its Handler)."""
    found: dict[tuple[str, ...], object] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if "func" in child._defaults:
                    found[(*path, name)] = child._defaults["func"]
                found.update(_handlers(child, (*path, name)))
    return found


@pytest.mark.parametrize("words", [["--help"], ["--version"], ["run", "--help"]])
def test_help_and_version_load_neither_polars_textual_nor_torch(words: list[str]) -> None:
    assert _heavy_loaded([words]) == []


def test_every_commands_help_loads_neither_polars_textual_nor_torch() -> None:
    commands = sorted(c for c in COMMAND_MODULES if c != "open") + ["open"]
    cases = [["--help"], ["--version"]] + [[c, "--help"] for c in commands]
    cases += [["experiment", "x", "define", "--help"], ["order", "x", "set", "--help"]]
    assert _heavy_loaded(cases) == []


def test_the_probe_sees_polars_when_it_is_loaded() -> None:
    assert _heavy_loaded([["--version"]], before="import polars") == ["polars"]


def test_every_handler_of_the_whole_parser_resolves_to_a_function() -> None:
    handlers = _handlers(build_parser())
    assert len(handlers) >= 30, sorted(handlers)  # every command and subcommand that runs
    for path, func in handlers.items():
        if isinstance(func, Handler):
            assert callable(func.resolve()), path
            assert func.resolve().__module__ == f"gpusession.commands.{func.module}", path
        else:  # status and completion register themselves: their modules are light
            assert callable(func) and path[0] in ("status", "completion"), path


def test_every_module_of_the_table_has_its_handler_import() -> None:
    for module in {m for m in COMMAND_MODULES.values() if m not in (None, "status_cmd", "completion_cmd")}:
        assert handler_module(module).__name__ == f"gpusession.commands.{module}"
    with pytest.raises(KeyError, match="no handler module"):
        Handler("no_such_cmd", "cmd_x").resolve()


def test_a_command_runs_through_its_handler(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser("cost").parse_args(["cost", "--gpu", "RTX A5000", "--days", "7", "--lots", "1"])
    assert isinstance(args.func, Handler) and (args.func.module, args.func.name) == ("cost_cmds", "cmd_cost")
    assert args.func(args) == 0
    assert "RTX A5000" in capsys.readouterr().out


def test_the_parsers_names_are_the_core_tables() -> None:
    """The parser offers core's tables by name without importing them (polars, typing)."""
    from gpusession.commands import parsers
    from gpusession.core.files.textio import MAX_LINE_BYTES
    from gpusession.core.folder.package import LOTS_MAX, PACKAGE_DAYS
    from gpusession.core.money.order import STATES
    from gpusession.core.money.rates import PRICE_WORDS
    from gpusession.core.validation import DEFAULT_METRIC, METRICS, OUTPUT_FORMATS
    from gpusession.core.validation.accept_rule import FORMATS

    assert parsers.METRIC_NAMES == tuple(METRICS) and parsers.DEFAULT_METRIC == DEFAULT_METRIC
    assert parsers.OUTPUT_FORMATS == OUTPUT_FORMATS and parsers.DELIVERABLE_FORMATS == FORMATS
    assert parsers.ORDER_STATES == STATES
    assert (parsers.PACKAGE_DAYS, parsers.LOTS_MAX) == (PACKAGE_DAYS, LOTS_MAX)
    assert parsers.MAX_LINE_BYTES == MAX_LINE_BYTES and parsers.PRICE_WORDS == PRICE_WORDS
