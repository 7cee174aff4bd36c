"""Placeholders of a command workload: where they may stand, and how they are filled (H-34).

A command workload is an argv list (``params.command``) run without a shell, with
placeholders ``{batch}``, ``{output}``, ``{corpus}``, ``{context}``, ``{precision}``, ``{seed}``
and ``{param.NAME}`` (a workload parameter, A3). The guarantee is
in *what* is substituted: never a user's file name, only a plain path gpusession made
(a link ``corpus.jsonl`` in a private folder; the run's output path, plain), integers
(the seed too), the precision word (``fp32``, ``fp16``, ``bf16``)
(:mod:`gpusession.core.folder.plainpaths`) and a parameter's plain value
(:func:`plain_value`: a number, ``true``/``false``, a word or path of ``A-Z a-z 0-9 . _ /
-`` not starting with ``-``), so no program -- ``make --eval=``, ``sg``,
``hyperfine``, a script that runs ``eval`` on its arguments -- can read code out of a value.
A placeholder is filled only where it is the whole argument (``{corpus}``) or the value
of a flag (``--out={output}``); every value is also given to the command as an
environment variable (:data:`ENV`: ``GPUSESSION_CORPUS``…; :func:`param_env`:
``--param model=b`` → ``GPUSESSION_PARAM_MODEL=b``).

:func:`check_command` is advice on top, checked when the experiment is defined (and
again whenever it is read): it refuses a placeholder pasted into a longer argument
(``out-{batch}.jsonl``), an unknown ``{name}``, an empty command, and a placeholder
anywhere a program would run it as code: after a shell with ``-c`` anywhere among its
arguments (``sh -c -- {corpus}``), in or after an interpreter's code option (``python
-c``, ``node --eval={corpus}``, ``perl -ne``), as an interpreter's script or awk/sed
program, in any argument of ``ssh``, ``su``, ``eval``, ``exec``, ``xargs``, ``env -S`` or
``sudo -s`` -- wrappers (``env``, ``timeout``, ``nice``, ``sudo``…) skipped first -- with
the advice to read ``$GPUSESSION_<NAME>`` in the script. A plain ``python3 script.py
{batch}`` stays allowed (H-15). :func:`fill_argument` is what the worker applies
(:mod:`gpusession.bench.worker`). No torch here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpusession.core.files.errors import BadInput

#: The placeholders, in the order they are documented.
NAMES = ("batch", "output", "corpus", "context", "precision", "seed")
#: Placeholder → the environment variable that carries its value to the command.
ENV = {name: f"GPUSESSION_{name.upper()}" for name in NAMES}

#: ``param.NAME``: a workload parameter's placeholder (A3).
_PARAM = r"param\.[A-Za-z_][A-Za-z0-9_]*"
_ANY = re.compile(r"\{(" + "|".join(NAMES) + "|" + _PARAM + r")\}")
#: ``{name}`` that is not shell syntax (``${x}``): a placeholder, known or not.
_BRACED = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: ``{x}`` alone, or ``-f={x}`` / ``--flag={x}``: the only forms that are filled.
_WHOLE = re.compile(r"(?P<flag>--?[A-Za-z0-9][A-Za-z0-9_.-]*=)?\{(?P<name>" + "|".join(NAMES) + "|"
                    + _PARAM + r")\}")
#: A plain parameter value (H-34): a number, or a word or path not starting with ``-``.
_PLAIN_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_.+][A-Za-z0-9_.+-]*")
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_.+/][A-Za-z0-9_.+/-]*")
#: Longest parameter value passed to a command.
PLAIN_VALUE_MAX = 200
#: The ``device`` a command workload defined without ``--device`` records: gpusession
#: does not choose it, the command does (never "not recorded": nothing was left out).
COMMAND_DEVICE = "chosen by the command"
#: What each placeholder's value is, in a refusal.
WHAT = {"batch": "the batch size", "output": "the output file name",
        "corpus": "the corpus file name", "context": "the context limit",
        "precision": "the precision", "seed": "the seed"}

#: Shells: with ``-c`` anywhere after them, every later argument may become code.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "oksh", "ash", "yash",
                     "fish", "tcsh", "csh", "rbash", "posh", "elvish", "xonsh", "nu"})
#: Programs that hand (some of) their arguments to a shell or run them as a command
#: line: a placeholder in any argument after them is refused.
_RUNS_TEXT = frozenset({"ssh", "slogin", "rsh", "su", "runuser", "eval", "exec", "xargs",
                        "watch", "script", "flock", "tmux", "screen", "parallel", "at"})
#: Of those, the names distinct enough to be a program wherever they appear.
_RUNS_TEXT_ANYWHERE = frozenset({"ssh", "slogin", "rsh", "su", "runuser", "xargs"})

#: Programs that are not interpreters but run one of their arguments as code (or as a
#: command line) through an option: program → those options (an option written
#: ``--opt=VALUE`` counts too; for the vi family, any ``+CMD`` argument). A placeholder
#: in or after such an option is refused. docs/rules.md lists this table with the others.
CODE_OPTIONS: dict[str, frozenset[str]] = {
    name: frozenset(opts) for names, opts in (
        (("find", "gfind"), ("-exec", "-execdir", "-ok", "-okdir")),
        (("gdb", "cuda-gdb"), ("-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex",
                               "-init-eval-command", "--init-eval-command", "-x", "--command",
                               "-ix", "--init-command")),
        (("vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "rvim"), ("-c", "--cmd", "-S")),
        (("emacs",), ("--eval", "-eval", "-l", "--load", "-f", "--funcall")),
    ) for name in names
}
#: Of :data:`CODE_OPTIONS`, the programs where a ``+CMD`` argument is code (``vim +CMD``).
_PLUS_CODE = frozenset({"vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "rvim"})

#: Interpreter → (its short code letters, options that take a value, options whose value
#: is the script). Every interpreter also has the long code options of :data:`_CODE_LONG`.
_INTERPRETERS: dict[str, tuple[str, frozenset[str], frozenset[str]]] = {}
for _names, _letters, _values, _scripts in (
    (("python", "pypy"), "c", ("-W", "-X", "-Q", "--check-hash-based-pycs"), ("-m",)),
    (("perl",), "eEM", ("-I", "-x"), ()),
    (("ruby", "irb"), "er", ("-I", "-C", "-E", "-F", "-K"), ()),
    (("node", "nodejs", "bun", "deno"), "epr",
     ("--title", "--input-type", "-C", "--conditions"), ()),
    (("php",), "rBREF", ("-c", "-d", "-z", "-t"), ("-f",)),
    (("lua", "luajit"), "el", (), ()),
    (("rscript", "r"), "e", (), ("-f", "--file")),
    (("julia",), "eEL", ("-J", "-t", "-p"), ()),
    (("awk", "gawk", "mawk", "nawk"), "e", ("-v", "-F", "--assign", "--field-separator"),
     ("-f", "--file")),
    (("sed", "gsed"), "e", ("-l", "--line-length"), ("-f", "--file")),
    (("tclsh", "wish", "osascript"), "e", (), ()),
    (("pwsh", "powershell"), "ce", (), ("-File", "-f")),
):
    for _name in _names:
        _INTERPRETERS[_name] = (_letters, frozenset(_values), frozenset(_scripts))
del _names, _letters, _values, _scripts, _name
#: Long options that make the next argument (or the ``=`` value) code, in any interpreter.
_CODE_LONG = frozenset({"--eval", "--print", "--exec", "--execute", "--command", "--expr",
                        "--expression", "--source", "--require", "--import", "--loader",
                        "--experimental-loader", "--load", "-command", "-encodedcommand",
                        "-commandwithargs", "-cwa", "-ec", "eval"})
#: Programs that only start the next one (after their options, VAR=val and a fixed number
#: of positional arguments): ``env X=1 timeout 5 nice -n 5 python3 …``.
_WRAPPERS: dict[str, tuple[int, frozenset[str]]] = {
    name: (count, frozenset(opts)) for name, count, opts in (
        ("env", 0, ("-u", "--unset", "-C", "--chdir")),
        ("timeout", 1, ("-s", "--signal", "-k", "--kill-after")),
        ("nice", 0, ("-n", "--adjustment")),
        ("nohup", 0, ()), ("setsid", 0, ()), ("unbuffer", 0, ()), ("chronic", 0, ()),
        ("command", 0, ()), ("builtin", 0, ()), ("busybox", 0, ()), ("toybox", 0, ()),
        ("stdbuf", 0, ("-i", "-o", "-e", "--input", "--output", "--error")),
        ("taskset", 1, ()), ("chrt", 1, ()), ("chroot", 1, ()),
        ("numactl", 0, ("-N", "-m", "-C", "-p", "-i", "--cpunodebind", "--membind",
                        "--physcpubind", "--preferred", "--interleave")),
        ("ionice", 0, ("-c", "-n", "-p", "-P", "-u", "--class", "--classdata")),
        ("time", 0, ("-f", "--format", "-o", "--output")),
        ("sudo", 0, ("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user",
                     "--group", "--chdir", "--host", "--prompt")),
        ("doas", 0, ("-u", "-C")),
        ("prlimit", 0, ("-p", "--pid")),
        ("nsenter", 0, ("-t", "--target")),
        ("cgexec", 0, ("-g",)),
        ("strace", 0, ("-o", "-e", "-p", "-s", "-u")),
        ("ltrace", 0, ("-o", "-e", "-p", "-s", "-u")),
    )
}


def param_env(name: str) -> str:
    """``model`` → ``GPUSESSION_PARAM_MODEL`` (upper-cased, ``.`` and ``-`` as ``_``; A3)."""
    return "GPUSESSION_PARAM_" + name.upper().replace(".", "_").replace("-", "_")


def env_name(name: str) -> str:
    """The variable of a placeholder: ``batch`` → ``GPUSESSION_BATCH``, ``param.model`` → ``GPUSESSION_PARAM_MODEL``."""
    return param_env(name[len("param."):]) if name.startswith("param.") else ENV[name]


def what_value(name: str) -> str:
    """What a placeholder's value is, in words: ``the batch size``, ``the parameter model``."""
    return f"the parameter {name[len('param.'):]}" if name.startswith("param.") else WHAT[name]


def plain_value(value: Any, *, path: bool) -> str | None:
    """A parameter's value as passed to a command, when it is plain (H-34); else ``None``.

    Args:
        value: a stored param: ``int``, ``float``, ``bool`` or text.
        path: whether ``/`` is allowed (a fixed param may be a path; a varied value names
            its variant's folder, so it may not).

    Returns:
        ``"4"``, ``"0.5"``, ``"true"``, ``"a"``; ``None`` for a list, a table, an empty or
        longer text, or a text with other characters or starting with ``-`` (a program
        would read it as an option), unless it is a number.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else None
    if not isinstance(value, str) or not value or len(value) > PLAIN_VALUE_MAX:
        return None
    if _PLAIN_NUMBER.fullmatch(value) or (_PLAIN_PATH if path else _PLAIN_WORD).fullmatch(value):
        return value
    return None


def received_params(argv: Sequence[Any]) -> set[str]:
    """The names ``NAME`` of the ``{param.NAME}`` placeholders among a command's arguments."""
    return {m.group(1)[len("param."):] for a in argv for m in _ANY.finditer(str(a))
            if m.group(1).startswith("param.")}


def _program_name(arg: str) -> str:
    """``/usr/bin/python3.11`` → ``python``; ``BASH.EXE`` → ``bash``; ``lua5.4`` → ``lua``."""
    name = os.path.basename(arg).lower()
    name = name.removesuffix(".exe")
    return name.rstrip("0123456789.-_") or name


def whole(arg: str) -> tuple[str, str] | None:
    """``(flag prefix, name)`` when ``arg`` is ``{name}`` or ``--flag={name}``, else ``None``."""
    m = _WHOLE.fullmatch(arg)
    if m is None:
        return None
    return m.group("flag") or "", m.group("name")


def _option_name(opt: str) -> str:
    return opt.partition("=")[0]


def _wrapper_end(args: Sequence[str], i: int) -> tuple[int, str | None]:
    """The index of the program a wrapper at ``i`` starts, and why all after it is text.

    Returns ``(index, reason)``: ``reason`` is set when the wrapper itself hands its
    arguments to a shell (``env -S``, ``sudo -s``/``-i``).
    """
    name = _program_name(args[i])
    count, takes_value = _WRAPPERS[name]
    k = i + 1
    reason = None
    while k < len(args):
        a = args[k]
        if a == "--":
            k += 1
            break
        if a.startswith("-") and len(a) > 1:
            opt = _option_name(a)
            if name == "env" and (opt in ("-S", "--split-string")
                                  or (not a.startswith("--") and "S" in a[1:])):
                reason = "env -S splits its text into a command line"
            if name == "sudo" and (opt in ("--shell", "--login")
                                   or (not a.startswith("--") and a[1:].isalpha()
                                       and ("s" in a[1:] or "i" in a[1:]))):
                reason = "sudo -s/-i runs the command through a shell"
            k += 2 if opt in takes_value and "=" not in a else 1
            continue
        if name == "env" and "=" in a and not a.startswith("="):
            k += 1
            continue
        break
    return k + count, reason


def _is_shell_code_option(prog: str, arg: str) -> bool:
    """``-c``, ``-ec``, ``-lc``, ``+c``, ``--command``, fish ``-C``/``--init-command``."""
    if re.fullmatch(r"[-+][A-Za-z]*c[A-Za-z]*", arg):
        return True
    if _option_name(arg) in ("--command", "--init-command"):
        return True
    return prog == "fish" and re.fullmatch(r"-[A-Za-z]*C[A-Za-z]*", arg) is not None


def _is_code_option(prog: str, arg: str) -> bool:
    """Whether ``arg`` (an option of interpreter ``prog``) makes what follows code."""
    letters = _INTERPRETERS[prog][0]
    if arg.startswith("--") or (prog in ("pwsh", "powershell") and len(arg) > 2):
        return _option_name(arg).lower() in _CODE_LONG
    if not arg.startswith("-") or len(arg) < 2:
        return arg in _CODE_LONG  # ``deno eval CODE``
    if arg[1] in letters:
        return True  # -c, -e, also with the code attached (-eprint)
    return arg[1:].isalpha() and any(c in letters for c in arg[1:])  # perl -ne, -lne


def _refusals(args: Sequence[str]) -> tuple[dict[int, str], int]:
    """``({index: why}, program index)``: why a placeholder there could run as code (or pick what runs).

    Wrappers (``env``, ``timeout``, ``nice``, ``sudo``…) are skipped to the program they
    start. After a shell with ``-c`` anywhere, every argument; after ``ssh``, ``su``,
    ``eval``, ``xargs``, ``env -S``…, every argument; for an interpreter (python, node,
    perl, ruby, php, lua, Rscript, julia, awk, sed…) the arguments from a code option
    (``-c``, ``-e``, ``--eval=``, ``-p``…) on, and its options and script (the first
    argument that is not an option: the program text of awk and sed). A shell or
    interpreter anywhere later (``docker run img sh -c …``) counts with its code
    options. When unsure, refused.
    """
    out: dict[int, str] = {}

    def refuse(start: int, stop: int, why: str) -> None:
        for k in range(start, stop):
            out.setdefault(k, why)

    n = len(args)
    # the chain of wrappers, then the program they start
    prog = 0
    programs = {0}
    while prog < n and _program_name(args[prog]) in _WRAPPERS:
        end, reason = _wrapper_end(args, prog)
        if reason:
            refuse(prog + 1, n, reason)
        refuse(prog + 1, min(end, n), f"it is an argument of {_program_name(args[prog])}, "
                                      "before the program it starts: a value there could "
                                      "choose what runs")
        prog = end
        programs.add(prog)
    for i in range(n):
        name = _program_name(args[i])
        shown = os.path.basename(args[i])
        if name in _RUNS_TEXT_ANYWHERE or (i in programs and name in _RUNS_TEXT):
            refuse(i + 1, n, f"{shown} hands its arguments on as a command line")
            continue
        if name in CODE_OPTIONS:
            hit = next((j for j in range(i + 1, n)
                        if _option_name(args[j]) in CODE_OPTIONS[name]
                        or (name in _PLUS_CODE and args[j].startswith("+"))), None)
            if hit is not None:
                refuse(hit, n, f"it is in or after {shown} {_option_name(args[hit])}, which runs "
                               "its argument as code")
            continue
        if name in _SHELLS:
            found = next((a for a in args[i + 1:] if _is_shell_code_option(name, a)), None)
            if found is not None:
                refuse(i + 1, n, f"it follows {shown} {_option_name(found)}, whose script is code")
                continue
            if i == prog:
                refuse(i + 1, _first_positional(args, i, frozenset({"-o", "+o", "-O", "+O"}),
                                                frozenset()) + 1,
                       f"it is an option of {shown} or the script it runs")
            continue
        if name not in _INTERPRETERS:
            continue
        _letters, takes_value, script_opts = _INTERPRETERS[name]
        code = None
        j = i + 1
        while j < n:
            a = args[j]
            if a == "--":
                break
            if _is_code_option(name, a):
                code = j
                break
            if not a.startswith("-") or len(a) < 2:
                break
            j += 2 if a in takes_value or a in script_opts else 1
        if code is not None:
            refuse(i + 1, n, f"it is in or after {shown} {_option_name(args[code])}, whose "
                             "script is code")
        elif i == prog:
            p = _first_positional(args, i, takes_value, script_opts)
            refuse(i + 1, p + 1, f"it is an option of {shown} or the script it runs")
    return out, prog


def _first_positional(args: Sequence[str], i: int, takes_value: frozenset[str],
                      script_opts: frozenset[str]) -> int:
    """Index of the script a shell/interpreter at ``i`` runs (its first non-option)."""
    j = i + 1
    while j < len(args):
        a = args[j]
        if a == "--":
            return j + 1
        if a in script_opts:
            return j + 1
        if not a.startswith(("-", "+")) or len(a) < 2:
            return j
        j += 2 if a in takes_value else 1
    return j


def check_command(argv: Sequence[Any], *, field: str) -> None:
    """Refuse a command whose placeholders a program would run as code: advice, H-34 holds anyway.

    Args:
        argv: ``params.command``: the program and its arguments.
        field: the field named in the error (``experiments.<id>.params.command``).

    Raises:
        BadInput: an empty command; a placeholder that is the program (also after a
            wrapper such as ``env``/``timeout``/``nice``); a placeholder in an argument a
            shell or interpreter may run as code (``sh -c``, ``sh -c --``, ``python -c``,
            ``node --eval=``, ``perl -e``, ``awk PROGRAM``, ``ssh``, ``env -S``, ``su``,
            ``eval``, ``xargs``…; advice: read ``$GPUSESSION_<NAME>`` in the script); a
            placeholder pasted into a longer argument (advice: a whole argument,
            ``--flag={x}``, or the environment variable); an unknown ``{name}``
            (naming the known ones).
    """
    args = [str(a) for a in argv]
    if not args or not args[0].strip():
        raise BadInput("--command is empty: give the program and its arguments, e.g. "
                       "--command 'python3 score.py {batch}'; nothing was written", field=field)
    refused, prog = _refusals(args)
    for i, arg in enumerate(args):
        names = [m.group(1) for m in _ANY.finditer(arg)]
        if not names:
            unknown = [m.group(1) for m in _BRACED.finditer(arg) if m.group(1) not in NAMES]
            if unknown and i not in refused:
                known = ", ".join(f"{{{n}}}" for n in (*NAMES, "param.NAME"))
                raise BadInput(f"argument {i + 1} holds {{{unknown[0]}}}, which is not a "
                               f"placeholder; the placeholders are {known}; nothing was "
                               "written", field=field)
            continue
        env = ", ".join(f"${env_name(n)}" for n in dict.fromkeys(names))
        what = " and ".join(what_value(n) for n in dict.fromkeys(names))
        where = f"argument {i + 1}"
        if i == 0 or (i == prog and i not in refused):
            raise BadInput(f"the program itself cannot be a placeholder; name the program "
                           f"and pass the value as an argument or read {env}; nothing was "
                           "written", field=field)
        if i in refused:
            raise BadInput(
                f"{where} holds a placeholder where it may run as code ({refused[i]}): "
                f"its value ({what}) would become part of a script. Read the value from "
                f"the environment instead, quoted: {env} (e.g. sh -c 'cat "
                f"\"${env_name(names[0])}\"'), or pass it to a script file as a whole argument "
                "(python3 score.py {" + names[0] + "}); nothing was written", field=field)
        if whole(arg) is None:
            raise BadInput(
                f"{where} pastes a placeholder into a longer text; a placeholder is filled "
                f"only as a whole argument ({{{names[0]}}}) or as --flag={{{names[0]}}}, so "
                f"{what} stays one argument. Pass it that way, or read {env} from the "
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
    """``{"GPUSESSION_BATCH": "4", "GPUSESSION_OUTPUT": …, "GPUSESSION_PARAM_MODEL": "a"}`` for the command.

    ``values`` holds each name of :data:`NAMES` and, for each parameter, ``param.NAME``.
    """
    env = {ENV[name]: "" if values.get(name) is None else str(values[name]) for name in NAMES}
    env.update({param_env(k[len("param."):]): str(v) for k, v in values.items() if k.startswith("param.")})
    return env


def unvaried_words(argv: Sequence[Any], varied: str) -> str | None:
    """A warning when a command's arguments never carry the varied value, else ``None`` (R1).

    Why: ``--varied batch`` with ``./predict.sh {corpus} {output}`` runs the same thing for
    every variant, and the comparison then ranks identical runs. The command may still
    read the value from its environment, so this is a warning, never a refusal (a
    varied parameter is refused instead, unless read by variable:
    :func:`gpusession.core.experiment.plan.check_params_reach`).

    Args:
        argv: the command's arguments as stored.
        varied: the experiment's varied setting (``batch``, ``context``, ``precision``).
    """
    if varied not in NAMES or any(f"{{{varied}}}" in str(a) for a in argv):
        return None
    return (f"the command never receives the varied {varied}: no {{{varied}}} in its arguments, so "
            f"every variant runs the same thing unless the program reads ${ENV[varied]}; add "
            f"{{{varied}}} where the program takes it (e.g. --{varied}={{{varied}}})")


__all__ = ["COMMAND_DEVICE", "ENV", "NAMES", "PLAIN_VALUE_MAX", "WHAT", "check_command", "env_name", "environment",
           "fill_argument", "param_env", "plain_value", "received_params", "unvaried_words", "what_value", "whole"]
