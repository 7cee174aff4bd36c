"""``gpusession completion bash|zsh``: the shell completion script, from the parser itself.

Made by shtab (a kept library) from the same argparse parser the commands use, so a new
command or option completes without a hand-kept list. Imports shtab only when asked.
"""

from __future__ import annotations

import argparse
from typing import Any

SHELLS = ("bash", "zsh")


def register(sub: Any) -> None:
    """Add ``completion`` to the CLI."""
    p = sub.add_parser(
        "completion",
        help="print the shell completion script (bash or zsh)",
        description=(
            "Print the completion script for your shell, made from gpusession's own parser. "
            "bash: add `eval \"$(gpusession completion bash)\"` to ~/.bashrc. zsh: "
            "`gpusession completion zsh > ~/.zfunc/_gpusession` with ~/.zfunc in $fpath, "
            "then `autoload -U compinit && compinit`."
        ),
    )
    p.add_argument("shell", choices=SHELLS, help="the shell: bash or zsh")
    # the whole parser, set by gpusession.cli.build_parser (no import of cli from here)
    p.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    """Print the completion script for ``args.shell``.

    Returns:
        0.
    """
    import shtab

    print(shtab.complete(args.root_parser, shell=args.shell))  # the parser that parsed this call
    return 0
