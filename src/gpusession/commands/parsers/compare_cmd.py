"""The parsers of ``compare``, ``export``.

Each names its handler in :mod:`gpusession.commands.compare_cmd`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.aliases import OlderName
from gpusession.commands.dispatch import Handler


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``compare`` and ``export`` to the CLI."""
    p = sub.add_parser(
        "compare",
        help="sessions side by side: cost and time per accepted deliverable, same work or not",
        description="One table of the sessions given (names in the sessions folder, or the "
        "folders of pulled home copies): GPU, lots, package and its cost, accepted distinct "
        "corpora, cost per accepted deliverable (as `cost --session` says), time per accepted "
        "deliverable (the warm median of the recommended variant) and the quality figure. "
        "Sessions are ranked by cost per accepted deliverable only when they ran the same "
        "work (corpus revision, model and tokenizer revisions, declared classes, metric, "
        "threshold, tolerance, stopwatch scope, precision, context limit); otherwise what "
        "differs is named and the ranking refused (exit 3) unless --allow-different; sessions "
        "that count another unit or kind of deliverable are never ranked, --allow-different "
        "or not (a cost per one is no cost per the other). "
        "compare writes nothing; a home copy given as a folder is only read.",
    )
    p.add_argument("sessions", nargs="+", metavar="SESSION",
                   help="a session name, or the folder of a session (a pulled home copy)")
    p.add_argument("--allow-different", action="store_true",
                   help="rank the sessions even where their work differs (the ranking says so); "
                   "never across another unit or kind of deliverable")
    p.add_argument("--rates", metavar="FILE", help="rates file for every session, in place of each "
                   "session's rates.toml; your own rates file and the bundled one lie under either")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--html", metavar="FILE", nargs="?", const=True,
                   help="also write the comparison as one self-contained HTML page, at --out FILE (the "
                   "table, what differs, the ranking, a chart of the cost per accepted deliverable; no "
                   "external request); never over an existing file, never in a session folder. "
                   "--html FILE is the older form of --html --out FILE")
    p.add_argument("--out", metavar="FILE", help="the HTML page to write (with --html)")
    p.set_defaults(func=Handler("compare_cmd", "cmd_compare"))

    p = sub.add_parser(
        "export",
        help="an experiment's warm runs in another tool's format (hyperfine's JSON, CSV, Markdown)",
        description="Write the warm runs of each variant of one experiment (one file per sweep, as "
        "one hyperfine run) in hyperfine's JSON export layout "
        "(results[] with command, mean, stddev, median, user, system, min, max, times, "
        "memory_usage_byte, exit_codes, parameters; seconds, bytes), so hyperfine's analysis scripts "
        "read it; the verdict is in the extra key gpusession_verdict. For a command workload, user "
        "and system are the mean CPU seconds of its runs and memory_usage_byte each run's peak "
        "resident set (os.wait4); where not measured (a Python workload), user and system are null "
        "and memory_usage_byte is left out. An existing file is never overwritten without --force, and never when it "
        "is in the session folder.",
    )
    p.add_argument("name", metavar="NAME", help="session name, or the folder of a session")
    p.add_argument("--format", required=True, choices=("hyperfine-json", "csv", "markdown"),
                   help="hyperfine-json (--export-json), csv (--export-csv: command, mean, stddev, "
                   "median, user, system, min, max, parameter_<name>) or markdown (--export-markdown's "
                   "table, relative to the fastest)")
    p.add_argument("--experiment", metavar="ID",
                   help="the experiment exported: one file per sweep, as one hyperfine run (default: "
                   "the last one run, said when the session holds several)")
    p.add_argument("--out", "--output", dest="output", metavar="FILE", action=OlderName,
                   help="write there (default: standard output); --output is its older name")
    p.add_argument("--force", action="store_true", help="replace an existing --out file "
                   "(never one inside the session folder)")
    p.set_defaults(func=Handler("compare_cmd", "cmd_export"))
