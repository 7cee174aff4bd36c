"""The parsers of ``approve``, ``reject``, ``deliverables``.

Each names its handler in :mod:`gpusession.commands.deliverables_cmd`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler
from gpusession.commands.parsers import DELIVERABLE_FORMATS, shown


def _count(text: str) -> int:
    from gpusession.core.files.bounds import past_bound

    t = text.strip()
    if not t.isascii() or not t.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {shown(text)}")
    if past := past_bound(t, "count"):  # the reader's bound (H-41), checked on the text
        raise argparse.ArgumentTypeError(past)
    if int(t) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {shown(text)}")
    return int(t)


def add_unit_args(p: argparse.ArgumentParser) -> None:
    """``--unit``, ``--unit-plural``, ``--expected-count``, ``--force-unit`` (S8)."""
    p.add_argument("--unit", metavar="NOUN",
                   help="the unit of the deliverables, a short singular noun, e.g. visual (fixed once "
                   "results are counted; default for a classification session: accepted corpus)")
    p.add_argument("--unit-plural", metavar="NOUN", help="its plural when not NOUN + s")
    p.add_argument("--expected-count", type=_count, metavar="N", help="deliverables expected, e.g. 18")
    p.add_argument("--force-unit", metavar="NOTE",
                   help="change the unit although results are counted; the note is recorded in the journal")


def add_accept_args(q: argparse.ArgumentParser) -> None:
    """``--accept``, ``--expected-outputs``, ``--deliverable-format``, ``--accept-timeout`` (S9)."""
    q.add_argument("--accept", metavar="'PROGRAM ARGS {output}'",
                   help="accept each run's output by your program: exit 0 accepted, 1 rejected, anything "
                   "else (or past --accept-timeout) could not be judged; its first output line is kept as "
                   "the reason. {output} and {corpus} are filled as plain paths, as in --command. It runs "
                   "after the timed run, in its own process group. Not with --classes/--metric/--threshold")
    q.add_argument("--expected-outputs", metavar="FILE",
                   help="the file names the output folder must hold, one per line: none missing, none "
                   "extra, none twice (also under Unicode normalization); checked before the rule runs")
    q.add_argument("--deliverable-format", choices=DELIVERABLE_FORMATS,
                   help="every output file's format, checked by its first bytes (png, jpeg, pdf) or by "
                   "reading it (svg, json, text)")
    q.add_argument("--accept-timeout", metavar="SECONDS", help="seconds the rule may take (default 60)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``approve``, ``reject`` and ``deliverables`` to the CLI (S9)."""
    for name, decision in (("approve", "approved"), ("reject", "rejected")):
        p = sub.add_parser(
            name, help=f"{name} deliverable files as a named person (kept with each file's SHA-256)",
            description=(f"Record that WHO {decision} each file, with the file's SHA-256 now, when, and "
                         + ("the criteria" if decision == "approved" else "why")
                         + ", in approvals.toml of the session (and the journal). A file whose bytes "
                         "change after its approval is no longer approved. `cost NAME` counts the approved "
                         "files, distinct by SHA-256."))
        p.add_argument("name", metavar="NAME", help="the session")
        p.add_argument("paths", nargs="+", metavar="PATH", help="deliverable files")
        p.add_argument("--by", required=True, metavar="WHO", help="who decides, e.g. \"Ana Reviewer\"")
        if decision == "approved":
            p.add_argument("--criteria", metavar="TEXT", help="what was checked")
        else:
            p.add_argument("--why", required=True, metavar="TEXT", help="why it is rejected")
        p.add_argument("--deliverables", metavar="DIR",
                       help="the folder of the deliverables (default: the one recorded, else the folder of "
                       "the first file); paths are kept relative to it")
        p.set_defaults(func=Handler("deliverables_cmd", "cmd_decide"), decision=decision)
    p = sub.add_parser("deliverables", help="the deliverables: approved, rejected, still to decide",
                       description="Each file of the deliverables folder with its decision (who, when), the "
                       "files changed after their approval, and the count that `cost` uses.")
    p.add_argument("name", metavar="NAME", help="the session")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("deliverables_cmd", "cmd_deliverables"))

