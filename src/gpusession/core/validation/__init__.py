"""Corpus validation: a corpus is accepted only when every check passes (V1-V8, seed 000 §1).

Who calls it: the run engine (once :func:`load_expected` per experiment, then
:func:`validate_output` per run; fast and free of side effects), the ``validate``
command, and the TUI's Validation pane, which shows :class:`ValidationReport` fields
and :meth:`ValidationReport.summary_lines` -- the same words as the CLI.

One-way flow, no cycles (design.md, "Target after the restructuring"):

* :mod:`.metrics` -- the one table of quality metrics, ``{name: function}``
  (:data:`METRICS`), and the per-class tally they are computed from;
* :mod:`.model` -- :class:`Protocol`, :class:`Expected`, the report's small values;
* :mod:`.read` -- bytes → records (strict UTF-8 via :mod:`gpusession.core.files.textio`,
  BOM, CRLF, line numbers; CSV); :mod:`.read_jsonl` -- JSONL, built on :mod:`.read`;
* :mod:`.expected` -- the expected IDs, references and train/tune lists;
* :mod:`.checks` -- records → the four checks (the quality one in :mod:`.quality`);
  :mod:`.report` -- the report, its words and its TOML.

The checks, all with polars and no Python loop over rows:

* IDs (V2, V3): missing, extra, duplicated in the output, duplicated in the expected
  list -- sets are compared, equal line counts never count as a match.
* Format per record (V4): parseable, ``id`` and ``label`` present and strings, ID not
  empty, label among the declared classes; encoding problems reported.
* Quality (V6): macro-F1 over the declared classes (a class never predicted scores 0)
  or accuracy, over every expected ID with a reference; one without a valid
  prediction (missing, malformed, label outside the classes) counts as a wrong
  prediction (H-21). Identical to ``sklearn.metrics.f1_score(y, p, labels=classes,
  average="macro", zero_division=0)`` with such a prediction kept as a label outside
  ``classes``.
* Overlap (V7): training and tuning IDs must not meet the evaluation IDs (or each other).

``corpus_accepted`` is the conjunction (V1); each part keeps its own reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from gpusession.core.files.digest import sha256_bytes
from gpusession.core.files.textio import MAX_LINE_BYTES, read_bytes
from gpusession.core.records.summary import accepted_unique_corpora
from gpusession.core.validation.checks import run_checks
from gpusession.core.validation.expected import load_expected, read_id_list
from gpusession.core.validation.metrics import DEFAULT_METRIC, METRICS
from gpusession.core.validation.model import OUTPUT_FORMATS, Expected, Protocol
from gpusession.core.validation.read import ParsedRecords, parse_csv
from gpusession.core.validation.read_jsonl import parse_jsonl
from gpusession.core.validation.report import ValidationReport, free_run_name

__all__ = [
    "Expected",
    "Protocol",
    "ValidationReport",
    "accepted_corpora",
    "free_run_name",
    "load_expected",
    "parse_output",
    "validate_output",
    "DEFAULT_METRIC",
    "METRICS",
    "OUTPUT_FORMATS",
]


def _read_ids(source: Path | Sequence[str] | None) -> tuple[pl.Series | None, str | None]:
    if source is None:
        return None, None
    return read_id_list(source)


def parse_output(output: Path, output_format: str) -> ParsedRecords:
    """Read a run's output file record by record (V4).

    Raises:
        BadInput: the file is missing, unreadable, not a regular file (a FIFO, a device)
            or holds a line longer than :data:`~gpusession.core.files.textio.MAX_LINE_BYTES`
            (content problems are reported).
    """
    data = read_bytes(Path(output), max_line_bytes=MAX_LINE_BYTES)
    return parse_csv(data) if output_format == "csv" else parse_jsonl(data)


def validate_output(
    output: Path,
    expected: Expected,
    protocol: Protocol,
    *,
    train_ids: Path | Sequence[str] | None = None,
    tune_ids: Path | Sequence[str] | None = None,
    classes_source: str = "declared in the protocol",
) -> ValidationReport:
    """Validate one run's output against the expected IDs and the protocol (V1-V7).

    Args:
        output: the run's output file (``protocol.output_format``: JSONL or CSV).
        expected: from :func:`load_expected`.
        protocol: classes, metric, threshold, tolerance, reference, format (V5).
        train_ids: training IDs (a file or the IDs) that must not overlap (V7).
        tune_ids: tuning IDs (a file or the IDs), as ``train_ids``.
        classes_source: where the classes came from, in words, for the report.

    Returns:
        The report, with ``output_sha256`` the SHA-256 (64 hex digits) of the output's
        bytes as validated, which ties an accepted corpus to the run that wrote it;
        nothing is written (call :meth:`ValidationReport.write`).

    Raises:
        BadInput: the output or an ID list is missing or unreadable.
    """
    data = read_bytes(Path(output), max_line_bytes=MAX_LINE_BYTES)
    parsed = parse_csv(data) if protocol.output_format == "csv" else parse_jsonl(data, protocol.classes)
    train, train_desc = _read_ids(train_ids)
    tune, tune_desc = _read_ids(tune_ids)
    report = run_checks(
        Path(output),
        parsed,
        expected,
        protocol,
        train=train,
        train_desc=train_desc,
        tune=tune,
        tune_desc=tune_desc,
        classes_source=classes_source,
    )
    # the digest of the very bytes validated: no second read a writer could change in
    # between, and no second pass over a large output (hashlib reads the buffer in place)
    report.output_sha256 = sha256_bytes(data)
    return report


def accepted_corpora(frame: pl.DataFrame) -> int:
    """Distinct ``corpus_revision``s with at least one accepted run (K3, K4).

    Never a count of rows. Same as :func:`gpusession.core.records.summary.accepted_unique_corpora`.
    """
    return accepted_unique_corpora(frame)
