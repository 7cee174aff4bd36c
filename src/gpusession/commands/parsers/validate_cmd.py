"""The parsers of ``validate``.

Each names its handler in :mod:`gpusession.commands.validate_cmd`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.aliases import OlderName
from gpusession.commands.dispatch import Handler
from gpusession.commands.parsers import (
    DEFAULT_METRIC,
    DEFAULT_THRESHOLD,
    MAX_LINE_BYTES,
    METRIC_NAMES,
    OUTPUT_FORMATS,
    shown,
)

#: ``typing.TYPE_CHECKING`` without importing typing (type checkers read the name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _path(text: str) -> Path:
    """The file named, as the handler takes it; pathlib loads when a value is parsed, never for ``--help``."""
    from pathlib import Path

    return Path(text)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {shown(text)}") from None


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``validate`` to the CLI.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser.
    """
    p = sub.add_parser(
        "validate",
        help="check one output file against the expected IDs and the quality rule",
        description=(
            "Accept a corpus only if every expected ID is present exactly once, no other ID "
            "appears, every record is well-formed with a declared label, the quality rule "
            "holds and training/tuning IDs do not overlap the evaluation IDs. Every file read "
            f"must be a regular file (not a FIFO or a device) with lines of at most "
            f"{MAX_LINE_BYTES // (1024 * 1024)} MiB. "
            "Exit 0 accepted, 3 rejected, 2 unusable input."
        ),
    )
    p.add_argument("session_name", nargs="?", metavar="NAME",
                   help="a session: archive the report there (as --session NAME)")
    p.add_argument("--corpus", required=True, type=_path, metavar="FILE",
                   help="expected IDs: CSV/JSONL/Parquet with an 'id' column (+ 'label'), or one ID per line")
    p.add_argument("--predictions", "--output", dest="output", required=True, type=_path, metavar="FILE",
                   action=OlderName,
                   help="the predictions to check (the run's output): JSONL {\"id\", \"label\"} or CSV "
                   "id,label; --output is its older name")
    p.add_argument("--references", type=_path, metavar="FILE", help="separate id,label reference file")
    p.add_argument("--classes", metavar="A,B,C",
                   help="declared classes (default: the labels found in the corpus/references, said so)")
    # The table itself: a metric added to core.validation.metrics is offered here at once.
    p.add_argument("--metric", choices=METRIC_NAMES, default=DEFAULT_METRIC,
                   help=f"quality metric (default {DEFAULT_METRIC})")
    p.add_argument("--threshold", type=_float, default=None, metavar="X",
                   help=f"acceptance threshold (default {DEFAULT_THRESHOLD}, said in the verdict line: "
                   "a one-off check only; with --session, whose row counts toward the cost, and in "
                   "an experiment's protocol it is required: nobody's default is stored)")
    p.add_argument("--tolerance", type=_float, default=None, metavar="X",
                   help="accepted shortfall below the threshold (default: none chosen, read as 0 "
                   "and said so)")
    p.add_argument("--reference-value", type=_float, metavar="X", help="the metric of a reference configuration")
    p.add_argument("--max-degradation", type=_float, metavar="X",
                   help="how far below --reference-value is still accepted")
    p.add_argument("--format", choices=OUTPUT_FORMATS, dest="output_format",
                   help="output format (default: csv for a .csv file, else jsonl)")
    p.add_argument("--train-ids", type=_path, metavar="FILE", help="training IDs, checked for overlap")
    p.add_argument("--tune-ids", type=_path, metavar="FILE", help="tuning IDs, checked for overlap")
    p.add_argument("--session", metavar="NAME", help="archive the report in this session's validation/ folder")
    p.add_argument("--name", metavar="RUN", help="report name in the session (default: validate-<output name>)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("validate_cmd", "cmd_validate"))


