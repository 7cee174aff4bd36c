"""The parsers of ``checklist``, ``manifest``, ``verify-copy``, ``report``.

Each names its handler in :mod:`gpusession.commands.checklist_cmds`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler

ACTIONS = ("show", "done", "undone", "note", "add", "evidence")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``checklist``, ``manifest``, ``verify-copy`` and ``report`` to the CLI.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser; each subcommand sets
            ``func`` to its ``cmd_*`` function.
    """
    p = sub.add_parser(
        "checklist",
        help="the checklist from the need to the retrieval: show, tick, note, add, evidence",
        description=(
            "Show the checklist by stage, or change it: `done ITEM`, `undone ITEM`, "
            "`note ITEM TEXT`, `add STAGE TEXT`, `evidence [--destination DIR]`. "
            "A probe's evidence is shown beside an item; it never ticks it. What gpusession "
            "recorded itself (a verified pull, a kept plan the package covers, an order event, a "
            "count of accepted deliverables) ticks its item, with that record as evidence; "
            "`undone ITEM --note TEXT` marks such an item not done, with why."
        ),
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("action", nargs="?", default="show", choices=ACTIONS, metavar="ACTION",
                   help="show (default), done, undone, note, add, evidence")
    p.add_argument("words", nargs="*", metavar="ARG", help="ITEM_ID [TEXT] or STAGE TEXT")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--note", metavar="TEXT",
                   help="done/undone: the note saved with the change (needed to mark not done an item "
                   "that what gpusession recorded ticks)")
    p.add_argument("--destination", metavar="DIR",
                   help="evidence: the folder the deliverables will be copied to; its free space is "
                        "checked (remembered)")
    p.add_argument("--reserve-hours", metavar="H",
                   help="evidence: hours kept free at the end of the package to copy the results "
                        "home: the session limit's reserve, as `package NAME --reserve` sets it "
                        "(default: measured by a pull, else 4)")
    p.set_defaults(func=Handler("checklist_cmds", "cmd_checklist"))

    p = sub.add_parser(
        "manifest",
        help="write manifest.csv (path, size, SHA-256) of the approved deliverables",
        description=(
            "Hash every file under DIR (the approved deliverables only). Symlinks out of DIR "
            "are not followed and are reported as skipped. Default output: manifest.csv in "
            "the session folder, or manifest-2.csv... when it exists."
        ),
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("--deliverables", metavar="DIR",
                   help="folder of approved deliverables (default: the folder of the session's approvals; "
                   "when the session has approvals, only the files approved and unchanged are listed)")
    p.add_argument("--out", metavar="FILE",
                   help="manifest file to write (refused if it exists, unless --force; never one of the "
                   "session's own data files, even with --force)")
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing --out file, or manifest.csv (without it a new "
                   "manifest-2.csv… is written beside it)")
    p.add_argument("--also-in-deliverables", action="store_true",
                   help="also write a copy as DIR/manifest.csv, so a plain cp -r or rsync of the "
                   "deliverables carries it (verify-copy ignores it)")
    p.add_argument("--json", action="store_true",
                   help="the manifest written, as JSON on stdout (docs/json/manifest.schema.json)")
    p.set_defaults(func=Handler("checklist_cmds", "cmd_manifest"))

    p = sub.add_parser(
        "verify-copy",
        help="compare a retrieved copy with its manifest by SHA-256",
        description="Run on your own computer after the copy home.",
        epilog="Exit codes: 0 the copy matches, 3 the copy differs, 2 bad input, 1 failure.",
    )
    p.add_argument("manifest", metavar="MANIFEST")
    p.add_argument("copy", metavar="DIR")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("checklist_cmds", "cmd_verify_copy"))

    p = sub.add_parser(
        "report",
        help="write one Markdown report for the person who approves the work",
        description=(
            "Opens with the answer in at most 10 lines: the verdict (distinct accepted corpora, "
            "runs validated), the package cost and the cost per accepted deliverable, the "
            "variant to keep with its ratio to the others, and the risks (incidents, rejected "
            "variants, copy home not verified, time left). Then the results per variant and "
            "phase (variants compared in words, with an exact test of whether the difference "
            "is beyond noise), validation verdicts, cost, environment and protocol, need, "
            "decision and retrieval; PNG charts beside it. --html also writes the same text as "
            "one self-contained page (report.html beside report.md: charts inline, no request, "
            "readable on a phone, printable). "
            "Without --out, the report is report.md in the session folder, and a later report "
            "replaces it (with its charts and page); --keep keeps the earlier ones and numbers "
            "the new one: report-2.md, report-3.md... The path written is printed."
        ),
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("--out", metavar="FILE",
                   help="report file to write (refused if it exists, unless --force); default "
                   "report.md in the session folder, replaced by each later report")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    p.add_argument("--json", action="store_true",
                   help="machine-readable output: the files written and the summary lines")
    p.add_argument("--keep", action="store_true",
                   help="keep earlier reports in the session folder: the next free report-2.md, "
                   "report-3.md...")
    p.add_argument("--html", action="store_true",
                   help="also write the report as one self-contained HTML page next to it "
                   "(report.html beside report.md, mode 0600)")
    p.add_argument("--no-charts", action="store_true",
                   help="write the text only, without drawing charts (matplotlib is not even "
                   "imported: about a second less); the report says the charts were not asked for")
    p.set_defaults(func=Handler("checklist_cmds", "cmd_report"))

