"""The fish completion script of ``gpusession completion fish``, read off the argparse parser.

Why it exists: shtab (which makes the bash and zsh scripts) makes none for fish; this is
the small hand-made equivalent, walking the same parser so that a new command or option
completes without a hand-kept list. Session names come from the sessions folder found by
the commands' rule (``--sessions-dir`` on the line, ``$GPUSESSION_HOME``, ``./sessions``,
the folder used last); experiment ids from the ``[experiments.ID]`` tables of the
session named on the line.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

#: The options that name an experiment of the session on the line (``derive --from`` too).
EXPERIMENT_DESTS = ("experiment", "origin")

#: The fish function that lists the session names (folders holding a session.toml).
SESSIONS_FUNCTION = r"""function __gpusession_root
    set -l root ""
    set -l prev ""
    for w in (commandline -opc)
        test "$prev" = --sessions-dir; and set root $w
        string match -q -- '--sessions-dir=*' $w; and set root (string replace -- '--sessions-dir=' '' $w)
        set prev $w
    end
    test -z "$root"; and set -q GPUSESSION_HOME; and set root $GPUSESSION_HOME
    test -z "$root"; and test -d ./sessions; and set root ./sessions
    if test -z "$root"
        set -l state $HOME/.local/state
        set -q XDG_STATE_HOME; and set state $XDG_STATE_HOME
        test -f $state/gpusession/last-sessions-dir; and set root (cat $state/gpusession/last-sessions-dir)
    end
    echo $root
end
function __gpusession_sessions
    set -l root (__gpusession_root)
    test -n "$root"; and test -d "$root"; or return 0
    for f in $root/*/session.toml
        basename (dirname $f)
    end
end
function __gpusession_experiments
    # the [experiments.ID] tables of the first word on the line that names a session
    set -l root (__gpusession_root)
    test -n "$root"; and test -d "$root"; or return 0
    for w in (commandline -opc)[2..-1]
        if not string match -q -- '-*' $w; and test -f "$root/$w/session.toml"
            string replace -r -f '^\[experiments\.(?:([A-Za-z0-9_-]+)|"([^"]+)")\]\s*$' '$1$2' <$root/$w/session.toml
            return 0
        end
    end
end
function __gpusession_words_at_most
    # true while the line holds at most $argv[1] words that are no option (the command's own
    # names): a session's name is offered where it goes, not again after it
    set -l count 0
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
        else if test "$w" = --sessions-dir
            set skip 1
        else if not string match -q -- '-*' $w
            set count (math $count + 1)
        end
    end
    test $count -le $argv[1]
end"""


def _quoted(text: str) -> str:
    """``text`` as one fish single-quoted word (backslash and quote escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _short(help_text: str | None) -> str:
    """The first clause of an option's help, at most 60 characters (fish shows it beside)."""
    words = (help_text or "").replace("%(default)s", "").replace("%%", "%").split()
    text = " ".join(words).split("; ")[0].split(" (")[0]
    return text if len(text) <= 60 else text[:59].rstrip() + "…"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser`` by name (empty when it has none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each subcommand's one-line help, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _option_lines(parser: argparse.ArgumentParser, condition: str) -> Iterator[str]:
    """One ``complete`` line per option of ``parser`` under ``condition`` (``""``: always)."""
    when = f" -n {_quoted(condition)}" if condition else ""
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        flags = "".join(f" -l {o[2:]}" if o.startswith("--") else f" -s {o[1:]}"
                        for o in action.option_strings)
        takes = action.nargs != 0
        values = (" -x -a " + _quoted(" ".join(str(c) for c in action.choices))
                  if takes and action.choices
                  else " -x -a '(__gpusession_experiments)'" if takes and action.dest in EXPERIMENT_DESTS
                  else " -r" if takes else "")
        yield f"complete -c gpusession{when}{flags}{values} -d {_quoted(_short(action.help))}"


def _named_session(parser: argparse.ArgumentParser) -> bool:
    """Whether ``parser`` takes an existing session's name as a positional argument."""
    return any(not a.option_strings and a.dest in ("name", "session_name", "sessions")
               for a in parser._actions)


def _command_lines(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[str]:
    """The lines of the subcommands of ``parser`` reached by ``path`` (the names before it)."""
    children = _subparsers(parser)
    if not children:
        return
    helps = _helps(parser)
    seen = "; and ".join(f"__fish_seen_subcommand_from {name}" for name in path)
    none_yet = f"not __fish_seen_subcommand_from {' '.join(children)}"
    offer = f"{seen}; and {none_yet}" if seen else none_yet
    for name in children:
        yield (f"complete -c gpusession -f -n {_quoted(offer)} -a {_quoted(name)} "
               f"-d {_quoted(_short(helps.get(name)))}")
    for name, child in children.items():
        here = (f"{seen}; and " if seen else "") + f"__fish_seen_subcommand_from {name}"
        yield from _option_lines(child, here)
        for action in child._actions:  # a positional argument of fixed choices: its values
            if not action.option_strings and action.choices and not isinstance(
                    action, argparse._SubParsersAction):
                yield (f"complete -c gpusession -f -n {_quoted(here)} "
                       f"-a {_quoted(' '.join(str(c) for c in action.choices))}")
        if _named_session(child) and not (not path and name == "new"):  # a new name is no existing one
            named = f"{here}; and __gpusession_words_at_most {len(path) + 1}"
            yield f"complete -c gpusession -f -n {_quoted(named)} -a '(__gpusession_sessions)'"
        yield from _command_lines(child, (*path, name))


def fish_script(root: argparse.ArgumentParser) -> str:
    """The whole fish script, a text of ``complete`` lines and two functions.

    Use: ``gpusession completion fish | source``, or save it as
    ``~/.config/fish/completions/gpusession.fish``.
    """
    lines = ["# gpusession completion for fish, made from its parser", SESSIONS_FUNCTION,
             "complete -c gpusession -f"]
    lines += _option_lines(root, "")
    lines += _command_lines(root, ())
    return "\n".join(lines) + "\n"
