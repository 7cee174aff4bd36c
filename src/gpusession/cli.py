"""Command line of gpusession: every pane's job, headless (design.md).

``gpusession`` with no argument opens the TUI on the most recent session;
``gpusession NAME`` opens that session. Every other job is a subcommand; each lives in
a module under :mod:`gpusession.commands` that registers its own parser.

Exit codes: 0 success; 1 failure (something broke that is not your input; also output
cut short because its reader went away, ``| head``: said nowhere, see :func:`main`); 2 bad input
(one line naming the file/field and what was expected); 3 a corpus was rejected
(``validate``) or a retrieved copy differs from its manifest (``verify-copy``); 129, 130,
143 a run ended at once by SIGHUP, a second Ctrl-C (SIGINT), SIGTERM (docs/exit-codes.md).
This module imports neither textual nor torch (design.md §Layers).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace

#: ``typing.TYPE_CHECKING`` without importing typing (type checkers read the name): the
#: parser's modules stay out of typing, a few ms of ``--help``'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or only ``command``'s (:func:`gpusession.commands.parser.build_parser`)."""
    from gpusession.commands.parser import build_parser as build  # not on the status path

    return build(command)


def _known_commands(parser: argparse.ArgumentParser) -> set[str]:
    from gpusession.commands.parser import known_commands

    return known_commands(parser)


def _early_status(args_list: list[str]) -> int | None:
    """Run ``status`` before the full parser is built (tmux calls it every few seconds).

    Returns:
        Its exit code, or ``None`` when the command is not ``status`` or its words need
        the full parser (:func:`gpusession.commands.status_cmd.parse_fast`).
    """
    sessions_dir: str | None = None
    i = 0
    while i < len(args_list):
        word = args_list[i]
        if word == "--sessions-dir" and i + 1 < len(args_list):
            sessions_dir = args_list[i + 1]
            i += 2
        elif word.startswith("--sessions-dir="):
            sessions_dir = word.split("=", 1)[1]
            i += 1
        else:
            break
    if i >= len(args_list) or args_list[i] != "status":
        return None
    from gpusession.commands import status_cmd

    args = status_cmd.parse_fast(args_list[i + 1 :], sessions_dir)
    if args is None:  # --help, a mistake or an unusual form: the full parser answers it
        return None
    return status_cmd.cmd_status(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gpusession`` console script. Returns the exit code.

    A reader that goes away (``gpusession list | head -1``) ends the command quietly
    with exit 1, as Python's documentation shows (signal module, "Note on SIGPIPE"):
    stdout is flushed here so that the broken pipe shows inside this function (else
    Python's last flush at exit prints "Exception ignored … BrokenPipeError" and exits
    120), then pointed at /dev/null so that nothing else tries to write to it. Exit 1,
    not 0: a write failed, so output was lost, and the command may have stopped
    part-way (a command that prints as it works ends at the print that failed); a
    script with ``set -o pipefail`` learns that, as it would from other tools killed by
    SIGPIPE. Nothing is printed: the person chose to read only the start.
    """
    _escape_unencodable()
    try:
        try:
            return _main(argv)
        finally:
            _flush_stdout()
    except BrokenPipeError:
        _stdout_to_devnull()
        return 1


def _escape_unencodable() -> None:
    """Write what the output's encoding cannot hold as an escape (``\\xf7``), never a traceback.

    Why: ``PYTHONIOENCODING=ascii`` (or a C locale on an old server) made ``cost`` end in
    ``UnicodeEncodeError`` at its first ``÷``; the words stay readable escaped.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure) and getattr(stream, "errors", None) == "strict":
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot be changed keeps its own
                pass


def _flush_stdout() -> None:
    """Flush stdout now; a broken pipe is raised, other write errors (a terminal gone
    after a hang-up: EIO) leave the exit code as it is — there is no one to tell."""
    if sys.stdout is None:  # started with stdout closed
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError:
        _stdout_to_devnull()


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null (its file descriptor when it has one), so that the
    flush at exit writes its buffered rest nowhere instead of failing again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test's capture)
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives until exit
    finally:
        os.close(devnull)


#: Options that name a file or folder to write or read (``args`` attribute → option).
_PATH_OPTIONS = {"out": ("--out",), "output": ("--output", "--predictions", "--out"),
                 "deliverables": ("--deliverables",), "to": ("--to",), "sessions_dir": ("--sessions-dir",)}


def _typed(names: Sequence[str], argv: Sequence[str]) -> str:
    """The one of ``names`` the person typed (``--predictions`` for ``validate``), else the first."""
    return next((n for n in names if any(w == n or w.startswith(n + "=") for w in argv)), names[0])


def _refuse_secret_paths(args: Any, argv: Sequence[str] = ()) -> None:
    """Refuse a file or folder name that holds a secret, before anything is written (H-46).

    Why: the name would be echoed in ``wrote …`` lines and kept on disk; the session's
    texts already refuse a token, so a path typed beside them does too (never shown).

    Raises:
        BadInput: naming the option and the kind of secret, never the value.
    """
    named = [(_typed(opts, argv), v) for attr, opts in _PATH_OPTIONS.items()
             if isinstance(v := getattr(args, attr, None), (str, os.PathLike))]
    if isinstance(getattr(args, "html", None), str):  # compare's older ``--html FILE``
        named.append(("--html", args.html))
    if os.environ.get("GPUSESSION_HOME"):  # the sessions folder every command names in its lines
        named.append(("environment variable GPUSESSION_HOME", os.environ["GPUSESSION_HOME"]))
    if not named:
        return
    from gpusession.core.files.errors import BadInput
    from gpusession.core.files.secretgate import may_hold_secret

    for opt, value in named:
        text = os.fspath(value)
        if not may_hold_secret(text):
            continue
        from gpusession.core.files.secrets import find_secret

        reason = find_secret(text)
        if reason is not None:
            raise BadInput(f"refused: the name given: {reason}; choose a name without it "
                           "(nothing was read or written)", field=opt)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    from gpusession.commands.argtext import refusal

    refused = refusal(args_list)  # bytes that are not UTF-8, before anything is parsed (H-40)
    if refused is not None:
        print(refused, file=sys.stderr)
        return 2
    if args_list == ["--version"]:  # said before any command module (and polars) is loaded
        from gpusession import __version__

        print(f"gpusession {__version__}")
        return 0
    from gpusession.core.files.clock import ClockSettingError, fixed_now

    try:  # the clock a test or demo fixes is checked before any command reads it (A6)
        fixed_now()
    except ClockSettingError as exc:
        print(f"gpusession: error: {exc}", file=sys.stderr)
        return 2
    early = _early_status(args_list)
    if early is not None:
        return early
    from gpusession.commands.command_names import COMMAND_MODULES

    commands = set(COMMAND_MODULES)
    # `gpusession` and `gpusession NAME` open the TUI; find the first positional word.
    i = 0
    while i < len(args_list):
        word = args_list[i]
        if word == "--sessions-dir":
            if i + 1 >= len(args_list):
                build_parser().error("argument --sessions-dir: expected one argument (a folder)")
            i += 2
            continue
        if word.startswith("--sessions-dir="):
            i += 1
            continue
        break
    if i >= len(args_list):
        args_list.append("open")
    elif not args_list[i].startswith("-") and args_list[i] not in commands:
        rest = args_list[i + 1 :]
        if any(not w.startswith("-") or w in ("-h", "--help") for w in rest):
            # `gpusession shwo demo` / `gpusession shwo --help`: a mistyped command
            from gpusession.core.files.secrets import shown  # only on this error path (status)

            print(
                f"gpusession: error: unknown command {shown(args_list[i])}; expected one of "
                f"{', '.join(sorted(commands))} (to open a session: gpusession open NAME)",
                file=sys.stderr,
            )
            return 2
        args_list.insert(i, "open")
    # The TUI: no cyclic collection while it starts (its imports, the session's document);
    # run_app resumes the collector once the first frame is painted (A5), and at the latest here.
    paused = args_list[i] == "open" and gc.isenabled()
    if paused:
        gc.disable()
    try:
        opened = open_words(args_list)
        if opened is not None:  # the TUI as typed: its words read without argparse
            from gpusession.commands.tui import cmd_open

            return _run(cmd_open, opened, args_list)
        return _dispatch(args_list, args_list[i] if args_list[i] in commands else None)
    finally:
        if paused:
            gc.enable()


def open_words(args_list: Sequence[str]) -> SimpleNamespace | None:
    """``[--sessions-dir DIR] open [NAME]`` read without argparse (its import and the parser's
    build are a few ms of ``gpusession NAME``'s first frame, A5).

    Only these forms, each word once: ``--sessions-dir DIR`` (or ``=DIR``, not empty, DIR not
    an option), then ``open``, then at most one ``NAME`` not starting with ``-``. Anything
    else (``--help``, an abbreviated option, a second name, an option after ``open``) gives
    ``None``: the full parser answers it. A test checks both parsers agree on these forms.

    Returns:
        ``name`` and ``sessions_dir`` as the parser sets them, with ``command`` (``open``),
        or ``None``.
    """
    words = list(args_list)
    sessions_dir: str | None = None
    if words and words[0].startswith("--sessions-dir="):
        sessions_dir = words.pop(0).partition("=")[2]
    elif words[:1] == ["--sessions-dir"] and len(words) > 1 and not words[1].startswith("-"):
        sessions_dir = words[1]
        del words[:2]
    if sessions_dir == "" or words[:1] != ["open"] or len(words) > 2:
        return None
    name = words[1] if len(words) == 2 else None
    if name is not None and (name.startswith("-") or not name):
        return None
    return SimpleNamespace(sessions_dir=sessions_dir, command="open", name=name)


def _dispatch(args_list: list[str], command: str | None) -> int:
    """Parse ``args_list`` with ``command``'s parser (all of them for ``None``) and run its handler."""
    # a known command builds its own module's parser only; an option first (--help) all
    parser = build_parser(command)
    args = parser.parse_args(args_list)
    if not hasattr(args, "func"):  # pragma: no cover - every subcommand sets one
        parser.error("expected a command")
    return _run(args.func, args, args_list)


def _run(func: Callable[[Any], int | None], args: Any, args_list: list[str]) -> int:
    """Run a command's handler on its parsed ``args``: a refusal or an error said in one line, its exit code."""
    # loaded once a command is to run: --help and --version never load it (nor its pathlib)
    from gpusession.core.files.errors import GpusessionError, shown_field

    try:
        _refuse_secret_paths(args, args_list)
        return int(func(args) or 0)
    except GpusessionError as exc:
        print(f"gpusession: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gpusession: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away: main() ends quietly (not "error: Broken pipe")
        raise
    except OSError as exc:
        # The disk or the system refused (full disk, read-only folder, a file where a
        # folder is expected): one line, no traceback; atomic writes left old files intact.
        # the path masked as BadInput masks it (H-46)
        where = f"{shown_field(str(exc.filename))}: " if exc.filename else ""
        print(f"gpusession: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
