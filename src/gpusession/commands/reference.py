"""The command reference (``docs/cli.md``) and the man page, made from the parser as built.

Both come from the argument parser ``--help`` reads, so neither can drift from it. Called by ``python -m gpusession.commands.reference`` (rewrites both files, or
``--check``: exit 1 naming the stale file) and by ``tests/test_cli_reference.py``. The
Markdown is ours (every command, its usage, its help, every option's help); the man page is
``argparse-manpage``'s (the ``test`` extra, never a runtime dependency). Both are made at a
fixed width and date so that they are the same on every machine and day (A6).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpusession import __version__
from gpusession.commands.parser import build_parser

#: The files made here, relative to the repository root.
MARKDOWN_PATH = Path("docs/cli.md")
MAN_PATH = Path("docs/man/gpusession.1")
#: The command a person runs to make them again (said by ``--check`` and the test).
REGENERATE = "python -m gpusession.commands.reference"
#: Width of the usage lines in the Markdown (characters); the man page's lines are not
#: wrapped (man reflows them), so no terminal's width reaches either file.
USAGE_WIDTH = 100
_NO_WRAP = 10_000
#: The option every command also takes (``sessions_dir_opt.accept_after_command``): said once.
GLOBAL_OPTION = "--sessions-dir"


@dataclass(frozen=True)
class Command:
    """One (sub)command of the parser: its words, the names it also answers to, its parser."""

    words: tuple[str, ...]
    aliases: tuple[str, ...]
    help: str | None
    parser: argparse.ArgumentParser

    @property
    def title(self) -> str:
        """``gpusession experiment define``: how a person types it."""
        return " ".join(("gpusession", *self.words))


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[Command]:
    """Every command under ``parser``, depth first in help order.

    ``experiment`` comes before ``experiment define``; an alias is listed with its command,
    never as one of its own.
    """
    sub = _subparsers(parser)
    if sub is None:
        return []
    helps = {a.dest: a.help for a in sub._choices_actions}
    names: dict[int, list[str]] = {}
    for name, child in sub.choices.items():
        names.setdefault(id(child), []).append(name)
    found: list[Command] = []
    seen: set[int] = set()
    for name, child in sub.choices.items():
        if id(child) in seen or helps.get(name) == argparse.SUPPRESS:
            continue
        seen.add(id(child))
        here = (*words, name)
        found.append(Command(here, tuple(names[id(child)][1:]), helps.get(name), child))
        found.extend(commands(child, here))
    return found


def _flat(text: str) -> str:
    """``text`` as argparse's default formatter shows it: whitespace runs made one space."""
    return " ".join(text.split())


def _usage(parser: argparse.ArgumentParser, width: int) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=width)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _invocation(action: argparse.Action) -> str:
    """``--gpu MODEL`` / ``--headless`` / ``NAME``: an argument as typed (argparse's metavar)."""
    formatter = argparse.HelpFormatter("gpusession", width=_NO_WRAP)
    if not action.option_strings:
        return formatter._format_args(action, action.dest)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    args = formatter._format_args(action, action.dest.upper())
    return ", ".join(f"{option} {args}" for option in action.option_strings)


def _help(action: argparse.Action) -> str:
    formatter = argparse.HelpFormatter("gpusession", width=_NO_WRAP)
    return _flat(formatter._expand_help(action)) if action.help else ""


def _md(text: str) -> str:
    """``text`` safe in Markdown prose: ``<`` and ``*`` escaped outside code spans."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("<", r"\<").replace("*", r"\*")
                   for p in parts)


def _anchor(title: str) -> str:
    """GitHub's anchor for a ``## title`` heading (lower case, spaces to ``-``)."""
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def _arguments(parser: argparse.ArgumentParser, said_above: frozenset[str]) -> list[str]:
    lines = []
    for action in parser._actions:
        if (action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction)
                or isinstance(action, argparse._SubParsersAction)
                or said_above.intersection(action.option_strings)):
            continue
        said = _help(action)
        lines.append(f"- `{_invocation(action)}`" + (f": {_md(said)}" if said else ""))
    return lines


def _section(parser: argparse.ArgumentParser, level: str, title: str, summary: str | None,
             aliases: Sequence[str] = (), said_above: frozenset[str] = frozenset()) -> list[str]:
    lines = [f"{level} {title}", ""]
    if summary:
        lines += [_md(_flat(summary)).rstrip(".") + ".", ""]
    if aliases:
        lines += ["Also: " + ", ".join(f"`{a}`" for a in aliases) + ".", ""]
    lines += ["```", _usage(parser, USAGE_WIDTH), "```", ""]
    if parser.description:
        lines += [_md(_flat(parser.description)), ""]
    arguments = _arguments(parser, said_above)
    if arguments:
        lines += [*arguments, ""]
    sub = _subparsers(parser)
    if sub is not None:
        lines += [f"Commands: {', '.join(f'`{name}`' for name in sub.choices)} (below).", ""]
    if parser.epilog:
        lines += [_md(_flat(parser.epilog)), ""]
    return lines


def markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """``docs/cli.md``: the program, then every command (usage, help, each option's help).

    Args:
        parser: the whole parser (default: :func:`gpusession.commands.parser.build_parser`).

    Returns:
        The Markdown text, one line end (LF) per line, one final newline.
    """
    parser = parser or build_parser()
    every = commands(parser)
    lines = [
        "# Command reference",
        "",
        f"Made from the argument parser by `{REGENERATE}`: do not edit by hand (a test fails "
        "when this file differs from the parser). `gpusession COMMAND --help` says the same; "
        "`man gpusession` too, once installed.",
        "",
        "| command | what it does |",
        "| --- | --- |",
    ]
    for c in every:
        lines.append(f"| [`{c.title}`](#{_anchor(c.title)}) | {_md(_flat(c.help or ''))} |")
    lines.append("")
    lines += _section(parser, "##", "gpusession", None)
    lines += [f"`{GLOBAL_OPTION}` is taken before or after the command too; it is not repeated below.", ""]
    for c in every:
        level = "##" if len(c.words) == 1 else "###"
        lines += _section(c.parser, level, c.title, c.help, c.aliases, frozenset({GLOBAL_OPTION}))
    return "\n".join(lines).rstrip("\n") + "\n"


@contextmanager
def _columns(width: int) -> Iterator[None]:
    """Fix ``COLUMNS`` (argparse reads the terminal's width there) while a page is made."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def manpage(parser: argparse.ArgumentParser | None = None) -> str:
    """``docs/man/gpusession.1``: argparse-manpage's page of the whole parser (roff).

    Its date field holds the version, never today's date (the page is the same on any day).

    Raises:
        ModuleNotFoundError: argparse-manpage is not installed (``pip install -e '.[test]'``).
    """
    try:
        from argparse_manpage.manpage import Manpage
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            "the man page is made by argparse-manpage: pip install -e '.[test]'") from e
    with _columns(_NO_WRAP):
        parser = parser or build_parser()
        page = Manpage(parser, _data={
            "date": f"version {__version__}",
            "project_name": "gpusession",
            "version": __version__,
            "manual_title": "gpusession manual",
            "description": "a companion for a GPU server rented for 3, 7 or 30 days",
        })
        text = str(page)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def made(root: Path) -> dict[Path, str]:
    """Each file this module makes under ``root`` and the text it should hold."""
    return {root / MARKDOWN_PATH: markdown(), root / MAN_PATH: manpage()}


def stale(root: Path) -> list[Path]:
    """The made files under ``root`` that are missing or differ from the parser."""
    return [path for path, text in made(root).items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gpusession.commands.reference [--root DIR] [--check]``.

    Writes ``docs/cli.md`` and ``docs/man/gpusession.1`` under the repository root (the
    current folder by default); ``--check`` writes nothing and exits 1 naming each stale file.
    """
    cli = argparse.ArgumentParser(prog="python -m gpusession.commands.reference",
                                  description="make docs/cli.md and the man page from the parser")
    cli.add_argument("--root", type=Path, default=Path("."), help="the repository root (default: .)")
    cli.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is stale")
    args = cli.parse_args(argv)
    if not (args.root / "pyproject.toml").is_file():
        print(f"{cli.prog}: error: {args.root} is not the repository root (no pyproject.toml)",
              file=sys.stderr)
        return 2
    if args.check:
        old = stale(args.root)
        for path in old:
            print(f"{path} differs from the parser: run {REGENERATE}", file=sys.stderr)
        return 1 if old else 0
    for path, text in made(args.root).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
