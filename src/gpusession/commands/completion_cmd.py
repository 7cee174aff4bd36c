"""``gpusession completion bash|zsh|fish``: the shell completion script, from the parser itself.

Made by shtab (a kept library) from the same argparse parser the commands use, so a new
command or option completes without a hand-kept list; shtab makes no fish script, so
:mod:`gpusession.commands.fish_completion` walks the same parser for fish. Imports shtab
only when asked.
"""

from __future__ import annotations

import argparse

from gpusession.commands.fish_completion import EXPERIMENT_DESTS  # one list for every shell

SHELLS = ("bash", "zsh", "fish")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``completion`` to the CLI."""
    p = sub.add_parser(
        "completion",
        help="print the shell completion script (bash, zsh or fish)",
        description=(
            "Print the completion script for your shell, made from gpusession's own parser. "
            "bash: add `eval \"$(gpusession completion bash)\"` to ~/.bashrc. zsh: "
            "`gpusession completion zsh > ~/.zfunc/_gpusession` with ~/.zfunc in $fpath, "
            "then `autoload -U compinit && compinit`. fish: "
            "`gpusession completion fish > ~/.config/fish/completions/gpusession.fish`. "
            "Session names complete from the sessions folder every command uses."
        ),
    )
    p.add_argument("shell", choices=SHELLS, help="the shell: bash, zsh or fish")
    # the whole parser, set by gpusession.cli.build_parser (no import of cli from here)
    p.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    """Print the completion script for ``args.shell``.

    Returns:
        0.
    """
    if args.shell == "fish":  # shtab makes none: the same parser, walked for fish
        from gpusession.commands.fish_completion import fish_script

        print(fish_script(args.root_parser), end="")
        return 0
    import shtab

    names = _name_actions(args.root_parser)
    experiments = experiment_actions(args.root_parser)
    for action in names:  # the session names of the sessions folder, found by the commands' rule
        action.complete = {"bash": "_gpusession_sessions", "zsh": "_gpusession_sessions"}  # type: ignore[attr-defined]
    for action in experiments:  # the experiment ids of the session named on the line
        action.complete = {"bash": "_gpusession_experiments", "zsh": "_gpusession_experiments"}  # type: ignore[attr-defined]
    try:
        print(shtab.complete(args.root_parser, shell=args.shell, preamble=PREAMBLE[args.shell]))
    finally:
        for action in names + experiments:
            del action.complete  # type: ignore[attr-defined]
    return 0


#: The shell function listing session names: --sessions-dir on the line, else
#: $GPUSESSION_HOME, else ./sessions when it exists, else the folder used last (as every command).
_FIND_ROOT = (
    'local root="" w prev=""; for w in "${COMP_WORDS[@]}"; do '
    '[[ $prev == --sessions-dir ]] && root=$w; [[ $w == --sessions-dir=* ]] && root=${w#*=}; prev=$w; done; '
    '[[ -z $root ]] && root=${GPUSESSION_HOME:-}; [[ -z $root && -d ./sessions ]] && root=./sessions; '
    '[[ -z $root ]] && root=$(cat "${XDG_STATE_HOME:-$HOME/.local/state}/gpusession/last-sessions-dir" 2>/dev/null); '
)
#: The experiment ids of the first word on the line that names a session of that folder:
#: the ``[experiments.ID]`` tables of its session.toml (bare or quoted keys).
_FIND_IDS = (
    'local s="" w; for w in "${COMP_WORDS[@]}"; do [[ -n $w && $w != -* && -f $root/$w/session.toml ]] '
    '&& { s=$root/$w/session.toml; break; }; done; '
    "local ids=\"\"; [[ -n $s ]] && ids=$(sed -n -E -e 's/^\\[experiments\\.([A-Za-z0-9_-]+)\\][[:space:]]*$/\\1/p' "
    "-e 's/^\\[experiments\\.\"([^\"]+)\"\\][[:space:]]*$/\\1/p' \"$s\"); "
)
PREAMBLE = {
    "bash": ("_gpusession_sessions() {\n  " + _FIND_ROOT + "\n"
             '  [[ -d $root ]] && compgen -W "$(cd "$root" && for d in */; do [[ -f $d/session.toml ]] '
             '&& printf \'%s \' "${d%/}"; done)" -- "$1"\n}\n'
             "_gpusession_experiments() {\n  " + _FIND_ROOT + "\n  " + _FIND_IDS + "\n"
             '  [[ -n $ids ]] && compgen -W "$ids" -- "$1"\n}\n'),
    "zsh": ("_gpusession_sessions() {\n  local -a COMP_WORDS; COMP_WORDS=(${words[@]})\n  " + _FIND_ROOT + "\n"
            '  [[ -d $root ]] && compadd -- ${root}/*/session.toml(N:h:t)\n}\n'
            "_gpusession_experiments() {\n  local -a COMP_WORDS; COMP_WORDS=(${words[@]})\n  " + _FIND_ROOT
            + "\n  " + _FIND_IDS + "\n"
            '  [[ -n $ids ]] && compadd -- ${(f)ids}\n}\n'),
}



def experiment_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options that take an existing experiment's id, in every subcommand."""
    found: list[argparse.Action] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += [a for a in child._actions if a.option_strings and a.dest in EXPERIMENT_DESTS
                          and a not in found]
                found += [a for a in experiment_actions(child) if a not in found]
    return found


def _name_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The positional arguments that name an existing session, in every subcommand (``new`` excepted)."""
    found: list[argparse.Action] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, child in action.choices.items():
                if command == "new":
                    continue
                found += [a for a in child._actions if not a.option_strings
                          and a.dest in ("name", "session_name", "sessions") and a not in found]
                found += [a for a in _name_actions(child) if a not in found]
    return found
