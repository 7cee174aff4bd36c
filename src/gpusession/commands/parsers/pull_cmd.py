"""The parsers of ``pull``.

Each names its handler in :mod:`gpusession.commands.pull_cmd`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pull`` to the CLI.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser.
    """
    p = sub.add_parser(
        "pull",
        help="copy a session and its deliverables home with rsync, and verify them",
        description=(
            "Run on your own computer. Copies SRC ([USER@]HOST:PATH/sessions/NAME, or a local "
            "folder) with rsync over ssh into TO/NAME (per-file checksums; every TOML and the "
            "results CSV are read back; a re-pull proves again only the files changed since the "
            "last pull, by their size, times and inode), the deliverables into TO/NAME-deliverables, and "
            "compares them with the newest SHA-256 manifest made on the server (gpusession "
            "manifest). With that manifest, only the files it lists (the approved ones) are "
            "copied; the others stay on the server and are named. An interrupted pull resumes "
            "when rerun. The outcome is written into the local copy's checklist: a verified copy "
            "reads as the item g8.verify-copy done, with the pull as evidence. Every pull measures its "
            "throughput from rsync's own figures and appends it to retrieval.toml in the server's "
            "session folder (where the session limit reads it); a server that refuses the write "
            "keeps the figure at home, and the pull is not failed for it."
        ),
        epilog="Exit codes: 0 verified, 3 copied but not verified (differs, or no manifest), "
        "1 the transfer failed, 2 bad input (unknown host, no such folder).",
    )
    p.add_argument("source", metavar="SRC", help="[USER@]HOST:PATH/sessions/NAME or a local session folder")
    p.add_argument("--deliverables", metavar="REMOTE_DIR",
                   help="the deliverables folder on the same host (default: the folder of the "
                   "newest manifest recorded in the session's journal)")
    p.add_argument("--to", metavar="LOCAL_DIR", help="where to copy (default: the sessions root, ./sessions)")
    p.add_argument("--ssh", metavar="CMD", help="remote shell for rsync, e.g. \"ssh -p 2222 -i KEY\" "
                   "(default: $RSYNC_RSH, else ssh with your ~/.ssh/config)")
    p.add_argument("--bwlimit", type=int, metavar="KIBPS", help="limit the bandwidth (KiB/s), as rsync --bwlimit")
    p.add_argument("--rsync-path", metavar="PROGRAM", help="the rsync program on the server, if not on its PATH")
    p.add_argument("--checksum", action="store_true",
                   help="compare the deliverables by checksum too (fetches a file changed in the copy "
                   "whose size and time stayed the same), and prove every file of the copy again "
                   "(the record of the last pull is not read)")
    p.add_argument("--probe", action="store_true",
                   help="a small copy first: move at most 64 MiB of the deliverables (or, while "
                   "there are none, of the session folder), check it against the server's files "
                   "and record the measured throughput in the server's retrieval.toml (marked from "
                   "a small copy); the copy home is not made")
    p.add_argument("--json", action="store_true",
                   help="the outcome as JSON on stdout, and nothing else there (docs/json/pull.schema.json); "
                   "progress and steps go to stderr")
    p.set_defaults(func=Handler("pull_cmd", "cmd_pull"))

