"""The parsers of ``new``, ``list``, ``show``, ``package``.

Each names its handler in :mod:`gpusession.commands.session_cmds`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler
from gpusession.commands.parsers import LOTS_MAX, PACKAGE_DAYS, shown
from gpusession.commands.parsers.deliverables_cmd import add_unit_args


def _lots(text: str) -> int:
    digits = text.strip()
    if not digits.isascii() or not digits.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {shown(text)}")
    value = int(digits)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {shown(text)}")
    if value > LOTS_MAX:
        raise argparse.ArgumentTypeError(f"expected at most {LOTS_MAX:,} lots, got {shown(text)}")
    return value


def _days(text: str) -> int:
    if text not in {str(d) for d in PACKAGE_DAYS}:
        raise argparse.ArgumentTypeError(f"expected 3, 7 or 30, got {shown(text)}")
    return int(text)


def add_package_args(p: argparse.ArgumentParser) -> None:
    """Add ``--gpu``, ``--lots``, ``--days`` and ``--start`` (the package) to a parser.

    Shared by ``new`` and ``package``. Lots are a whole number from 1 to ``LOTS_MAX``;
    days are 3, 7 or 30 (packages are whole, K1); the start is ISO 8601 with an offset.

    Args:
        p: The subcommand's parser.
    """
    p.add_argument("--gpu", metavar="MODEL", help='GPU model as ordered, e.g. "RTX A5000"')
    p.add_argument("--lots", type=_lots, metavar="N", help="number of lots (B200: 1 lot = 2 GPUs)")
    p.add_argument("--days", type=_days, metavar="{3,7,30}", help="package length in days")
    p.add_argument(
        "--start",
        metavar="ISO8601",
        help="when the GPU was provisioned, with offset, e.g. 2026-11-29T14:00:00Z "
        "(`new` without it: now)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``new``, ``list``, ``show`` and ``package`` to the CLI.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser; each subcommand sets
            ``func`` to its ``cmd_*`` function.
    """
    p = sub.add_parser("new", help="create a session folder", description="Create sessions/NAME.")
    p.add_argument("name", metavar="NAME", help="a safe slug: letters, digits, '.', '_', '-'")
    add_package_args(p)
    add_unit_args(p)
    p.add_argument("--from", dest="from_session", metavar="PREVIOUS",
                   help="start from a previous session: carry its unit, experiment definitions and "
                   "protocol, plan and decision note (and the files the definitions name); never its "
                   "results, order or payment")
    p.add_argument("--json", action="store_true", help="machine-readable output: the session created")
    p.set_defaults(func=Handler("session_cmds", "cmd_new"))

    p = sub.add_parser(
        "list", help="list sessions (name, GPU, package window, result rows, accepted)",
        description="Every session under the sessions root, most recent first; a session "
        "that does not open is listed with the reason.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("session_cmds", "cmd_list"))

    p = sub.add_parser(
        "show", help="readable summary of one session",
        description="Package and its window (start, end, time left), runs and distinct "
        "accepted corpora, and per experiment/variant/phase: runs, median and min–max "
        "seconds, failures. Empty cells mean not measured, never 0. Opening a session "
        "after a crash records the run that was in flight as an incident.",
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("session_cmds", "cmd_show"))

    p = sub.add_parser(
        "package", help="change the package (GPU, lots, days, start) of a session",
        description="Change what was bought: GPU model, lots, days (3, 7 or 30: packages are "
        "whole) and when the window starts (when the GPU was provisioned). Only the options "
        "given change. `show` and the TUI header say the window's end and the time left; "
        "the cost is always the full package price × lots.",
    )
    p.add_argument("name", metavar="NAME", help="the session")
    add_package_args(p)
    p.add_argument("--start-from", choices=["gpu-provisioned"], metavar="gpu-provisioned",
                   help="(re)start the package window at the order's gpu-provisioned event")
    p.add_argument("--limit", metavar="ISO8601|auto",
                   help="the session limit: `run` starts no run that would end after it, e.g. "
                   "2026-12-05T14:00Z (default: the package end minus the retrieval reserve; "
                   "auto goes back to that)")
    p.add_argument("--reserve", metavar="DURATION|auto",
                   help="time kept before the package end to retrieve the work, e.g. 6h or 1h30m, "
                   "instead of the reserve measured by `gpusession pull` (4 h until measured; "
                   "auto goes back to the measured one)")
    p.add_argument("--plan", metavar="D,D,...",
                   help="the plan kept with the package: days per task, e.g. 0.25,1,1,0.5,0.5 (`cost` "
                   "prices it; `show` says which package covers it; a longer plan later is kept and "
                   "warned about, never shrunk to fit)")
    p.add_argument("--plan-names", metavar="NAME,NAME,...",
                   help="one name per task of --plan, e.g. prepare,render,review,fix,copy")
    add_unit_args(p)
    p.add_argument("--json", action="store_true",
                   help="the package and session limit now, as JSON (docs/json/package.schema.json)")
    p.set_defaults(func=Handler("session_cmds", "cmd_package"))

