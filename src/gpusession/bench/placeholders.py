"""Placeholders of a command workload, filled so that a value can never inject (issue 12).

A command workload is an argv list (``params.command``) run without a shell, with
placeholders ``{batch}``, ``{output}``, ``{corpus}`` and ``{context}``. A value (a corpus
named ``x$(touch P).jsonl``) is only ever *one argument*: a placeholder is filled only
where it is the whole argument (``{corpus}``) or the value of a flag
(``--out={output}``). Every value is also given to the command as an environment
variable (:data:`ENV`: ``GPUSESSION_CORPUS``…), which a shell or Python ``-c`` script
reads safely (``"$GPUSESSION_CORPUS"``).

:func:`check_command` refuses, when the experiment is defined (and again whenever it is
read), a placeholder pasted into a longer argument (``out-{batch}.jsonl``) or into the
script of a shell or interpreter ``-c`` (``sh -c 'cat {corpus}'``): there the value
would become code. :func:`fill_argument` is what the worker applies
(:mod:`gpusession.bench.worker`). No torch here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpusession.core.errors import BadInput

#: The placeholders, in the order they are documented.
NAMES = ("batch", "output", "corpus", "context")
#: Placeholder → the environment variable that carries its value to the command.
ENV = {name: f"GPUSESSION_{name.upper()}" for name in NAMES}

_ANY = re.compile(r"\{(" + "|".join(NAMES) + r")\}")
#: ``{x}`` alone, or ``-f={x}`` / ``--flag={x}``: the only forms that are filled.
_WHOLE = re.compile(r"(?P<flag>--?[A-Za-z0-9][A-Za-z0-9_.-]*=)?\{(?P<name>" + "|".join(NAMES) + r")\}")
#: Programs whose ``-c``/``-e`` argument is code: shells and script interpreters.
_SHELL = re.compile(r"(?:[a-z]*sh|busybox)")
_INTERPRETER = re.compile(
    r"(?:python|pypy|perl|ruby|node|nodejs|php|lua|Rscript|pwsh|powershell|osascript|tclsh)"
    r"[0-9.]*(?:\.exe)?"
)


def whole(arg: str) -> tuple[str, str] | None:
    """``(flag prefix, name)`` when ``arg`` is ``{name}`` or ``--flag={name}``, else ``None``."""
    m = _WHOLE.fullmatch(arg)
    if m is None:
        return None
    return m.group("flag") or "", m.group("name")


def _script_indexes(argv: Sequence[str]) -> set[int]:
    """Indexes of arguments that a shell or interpreter runs as code (``sh -c SCRIPT``).

    Any program of the argv counts (``env``, ``timeout`` or ``nice`` may come first). For
    a shell, an option group holding ``c`` (``-c``, ``-lc``, ``-ec``) makes the next
    argument the script; for an interpreter, ``-c``, ``-e``, ``-E``, ``-p``, ``-r`` or
    ``-Command``.
    """
    out: set[int] = set()
    for i, arg in enumerate(argv):
        prog = os.path.basename(arg)
        shell = bool(_SHELL.fullmatch(prog))
        if not shell and not _INTERPRETER.fullmatch(prog):
            continue
        for j in range(i + 1, len(argv)):
            opt = argv[j]
            if not opt.startswith("-") or opt == "--" or opt.startswith("--"):
                break
            letters = opt[1:]
            if (shell and letters.isalpha() and "c" in letters) or (not shell and (
                    letters == "Command" or (letters.isalpha() and letters[-1] in "ceEpr"))):
                if j + 1 < len(argv):
                    out.add(j + 1)
                break
    return out


def check_command(argv: Sequence[Any], *, field: str) -> None:
    """Refuse a command whose placeholders could let a value inject code (issue 12).

    Args:
        argv: ``params.command``: the program and its arguments.
        field: the field named in the error (``experiments.<id>.params.command``).

    Raises:
        BadInput: a placeholder inside the script of ``sh -c`` / ``bash -c`` /
            ``python -c`` … (advice: read ``$GPUSESSION_<NAME>`` there), a placeholder
            pasted into a longer argument (advice: a whole argument, ``--flag={x}``, or
            the environment variable), or a placeholder as the program itself.
    """
    args = [str(a) for a in argv]
    scripts = _script_indexes(args)
    for i, arg in enumerate(args):
        names = [m.group(1) for m in _ANY.finditer(arg)]
        if not names:
            continue
        env = ", ".join(f"${ENV[n]}" for n in dict.fromkeys(names))
        where = f"argument {i + 1}"
        if i in scripts:
            raise BadInput(
                f"{where} is a script run by a shell or interpreter (-c) and holds a "
                f"placeholder: its value (a file name) would become code. Read the value "
                f"from the environment instead, quoted: {env} (e.g. sh -c 'cat "
                f"\"${ENV[names[0]]}\"'); nothing was written", field=field)
        if i == 0:
            raise BadInput(f"the program itself cannot be a placeholder; name the program "
                           f"and pass the value as an argument or read {env}; nothing was "
                           "written", field=field)
        if whole(arg) is None:
            raise BadInput(
                f"{where} pastes a placeholder into a longer text; a placeholder is filled "
                f"only as a whole argument ({{{names[0]}}}) or as --flag={{{names[0]}}}, so a "
                f"value stays one argument. Pass it that way, or read {env} from the "
                "environment; nothing was written", field=field)


def fill_argument(arg: str, values: Mapping[str, Any]) -> str:
    """One argument with its placeholder filled, if it is ``{x}`` or ``--flag={x}``.

    Any other text is left exactly as written (the value never lands inside a longer
    text; :func:`check_command` refuses such commands when they are defined).

    Args:
        arg: one argv entry, e.g. ``"--out={output}"``.
        values: a value for each name of :data:`NAMES`.

    Returns:
        The argument, filled with ``str(value)`` when it is a whole placeholder.

    Raises:
        KeyError: ``values`` lacks the placeholder ``arg`` is.
    """
    found = whole(arg)
    if found is None:
        return arg
    flag, name = found
    return flag + str(values[name])


def environment(values: Mapping[str, Any]) -> dict[str, str]:
    """``{"GPUSESSION_BATCH": "4", "GPUSESSION_OUTPUT": …}`` for the command's environment."""
    return {ENV[name]: "" if values.get(name) is None else str(values[name]) for name in NAMES}


__all__ = ["ENV", "NAMES", "check_command", "environment", "fill_argument", "whole"]
