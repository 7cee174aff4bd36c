"""The validation report: verdicts, counts, first offenders, per-class scores (V1-V8).

Built by :mod:`gpusession.core.validation.checks`; read by the CLI (``validate``), the
run engine (:meth:`ValidationReport.row_fields` fills the CSV row) and the TUI's
Validation pane. :meth:`ValidationReport.summary_lines` is the one readable verdict
both the CLI and the TUI show, so the words are the same everywhere.
:meth:`ValidationReport.write` archives it in the session's ``validation/`` folder (V8).
"""

from __future__ import annotations

import glob
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gpusession.core.files import clock
from gpusession.core.files.csvtext import csv_bytes
from gpusession.core.files.safefile import make_private_dir
from gpusession.core.files.secrets import check_free_text, check_identifier, mask_record
from gpusession.core.files.textio import printable
from gpusession.core.files.tomlio import write_atomic_bytes, write_toml_archive
from gpusession.core.validation.metrics import METRICS, ClassScore
from gpusession.core.validation.model import BadRecord

#: How many offenders a summary line quotes.
QUOTE_N = 5
#: How a validated row's notes name its output: ``output sha256:<64 hex digits>``
#: (:attr:`ValidationReport.output_sha256`). The word ``sha256`` before the digits tells
#: the secret check it is a digest, not a key.
OUTPUT_SHA256_NOTE = "output sha256:"
# the "; " before the digest, or (first in the note) the one after it: never a note that starts "; "
_OUTPUT_DIGEST_RE = re.compile(r"; " + re.escape(OUTPUT_SHA256_NOTE) + r"[0-9a-f]{64}|"
                               + re.escape(OUTPUT_SHA256_NOTE) + r"[0-9a-f]{64}(?:; )?")


def without_output_digest(note: str) -> str:
    """``note`` without its ``output sha256:<hex>`` part and one ``; `` beside it.

    Why: every validated row's note names its own output, so notes that say the same
    thing differ by the digest; a reader that groups identical notes (the report) groups
    them on this.
    """
    return _OUTPUT_DIGEST_RE.sub("", note)


def _quote_ids(ids: list[str], total: int) -> str:
    shown = ", ".join(repr(x) for x in ids[:QUOTE_N])
    more = total - min(len(ids), QUOTE_N)
    return shown + (f" … and {more:,} more" if more > 0 else "")


@dataclass(eq=False)
class ValidationReport:
    """Everything one validation found. ``True`` verdicts mean the check passed.

    Verdicts: ``ids_match`` (V1-V3), ``format_valid`` (V4), ``quality_met`` (V6),
    ``no_overlap`` (V7), ``corpus_accepted`` = all four (V1). Each has a ``*_reason``.

    Counts: ``expected_ids`` (records in the expected list, duplicates included),
    ``observed_ids`` (output records carrying a readable string ID, duplicates
    included), ``records`` (output records, bad ones included), ``missing_count``,
    ``extra_count``, ``duplicate_output_count`` / ``duplicate_expected_count``
    (distinct IDs appearing more than once), ``bad_record_count``, ``scored_records``
    (expected IDs with a reference: every one is scored, H-21) and
    ``predictions_missing`` / ``_malformed`` / ``_undeclared`` (those of them scored as
    a wrong prediction, and why).

    Full lists (polars frames, written beside the report): ``missing_ids`` (id,
    expected_line), ``extra_ids`` (id, line), ``duplicates`` (id, found_in, count,
    lines), ``overlap`` (id, between), ``bad_records_all`` (line, problem).
    """

    output_path: str
    expected_path: str
    references_path: str | None
    output_format: str
    label_set: tuple[str, ...]
    classes_source: str
    # IDs
    ids_match: bool
    ids_reason: str
    expected_ids: int
    expected_unique: int
    observed_ids: int
    observed_unique: int
    records: int
    missing_count: int
    extra_count: int
    duplicate_output_count: int
    duplicate_expected_count: int
    missing_ids: pl.DataFrame
    extra_ids: pl.DataFrame
    duplicates: pl.DataFrame
    # format
    format_valid: bool
    format_reason: str
    bad_record_count: int
    bad_records: list[BadRecord]
    bad_records_all: pl.DataFrame
    problem_counts: dict[str, int]
    file_problems: list[str]
    encoding_notes: list[str]
    # quality
    quality_met: bool
    quality_reason: str
    quality_metric: str
    quality_threshold: float
    quality_tolerance: float | None
    quality_value: float | None
    quality_margin: float | None
    reference_value: float | None
    max_degradation: float | None
    #: Every metric of :data:`~gpusession.core.validation.metrics.METRICS` by name
    #: (``None``: nothing scored); ``quality_value`` is the protocol's one (V6).
    metric_values: dict[str, float | None]
    scored_records: int
    per_class: list[ClassScore]
    quality_notes: list[str]
    # overlap
    no_overlap: bool
    overlap_reason: str
    overlap_checked: bool
    overlap: pl.DataFrame
    # verdict
    corpus_accepted: bool
    notes: list[str] = field(default_factory=list)
    #: Notes under the IDs check (an extra ID differing from a missing one only in
    #: Unicode normalization, H-16).
    ids_notes: list[str] = field(default_factory=list)
    #: Expected IDs with a reference but no valid prediction, each scored as a wrong
    #: prediction (H-21): no record, a malformed record, a label outside the classes.
    predictions_missing: int = 0
    predictions_malformed: int = 0
    predictions_undeclared: int = 0
    #: SHA-256 (64 hex digits) of the output's bytes as validated: which run's output
    #: this verdict is about (``None`` for a report built without reading a file).
    output_sha256: str | None = None

    @property
    def macro_f1(self) -> float | None:
        """Macro-F1 over the declared classes, 0 to 1; ``None`` when nothing was scored (V6)."""
        return self.metric_values.get("macro_f1")

    @property
    def accuracy(self) -> float | None:
        """Right predictions over the scored IDs, 0 to 1; ``None`` when nothing was scored (V6)."""
        return self.metric_values.get("accuracy")

    # -- the CSV row ----------------------------------------------------------
    def row_fields(self) -> dict[str, Any]:
        """The fields of the results CSV row this report fills (seed 000 §4, C5)."""
        return {
            "expected_ids": self.expected_ids,
            "observed_ids": self.observed_ids,
            "ids_match": self.ids_match,
            "format_valid": self.format_valid,
            "quality_metric": self.quality_metric,
            "quality_threshold": self.quality_threshold,
            "quality_tolerance": self.quality_tolerance,
            "quality_value": self.quality_value,
            "corpus_accepted": self.corpus_accepted,
        }

    @property
    def failed_checks(self) -> list[str]:
        """Names of the checks that failed, in report order."""
        checks = [("IDs", self.ids_match), ("format", self.format_valid),
                  ("quality", self.quality_met), ("overlap", self.no_overlap)]
        return [name for name, ok in checks if not ok]

    # -- words ----------------------------------------------------------------
    def verdict_line(self) -> str:
        """``corpus ACCEPTED`` or ``corpus REJECTED: IDs, format failed``."""
        if self.corpus_accepted:
            if not self.overlap_checked:
                return ("corpus ACCEPTED: IDs, format and quality passed; overlap not checked: "
                        "no training set given")
            return "corpus ACCEPTED: all four checks passed (IDs, format, quality, overlap)"
        return f"corpus REJECTED: {', '.join(self.failed_checks)} failed"

    def summary_lines(self) -> list[str]:
        """The readable verdict: one block per check, pass/fail in words (V1)."""
        word = {True: "PASS", False: "FAIL"}
        out = [self.verdict_line(), f"  output   {self.output_path} ({self.output_format})",
               f"  expected {self.expected_path}"
               + (f", references {self.references_path}" if self.references_path else "")]
        out.append(f"  classes  {', '.join(self.label_set)} ({self.classes_source})")
        out.append(f"IDs      {word[self.ids_match]}  {self.ids_reason}")
        if self.missing_count:
            out.append(f"         missing: {_quote_ids(self.missing_ids['id'].head(QUOTE_N).to_list(), self.missing_count)}")
        if self.extra_count:
            out.append(f"         extra: {_quote_ids(self.extra_ids['id'].head(QUOTE_N).to_list(), self.extra_count)}")
        for n in self.ids_notes:
            out.append(f"         note: {n}")
        dup = self.duplicates.head(QUOTE_N)
        for row in dup.iter_rows(named=True):
            out.append(f"         duplicate {row['id']!r}: {row['count']}× in the {row['found_in']} (lines {row['lines'].replace(';', ', ')})")
        out.append(f"format   {word[self.format_valid]}  {self.format_reason}")
        for p in self.file_problems:
            out.append(f"         {p}")
        for b in self.bad_records[:QUOTE_N]:
            out.append(f"         line {b.line}: {b.problem}: {b.text}")
        if self.bad_record_count > QUOTE_N:
            out.append(f"         … {self.bad_record_count - QUOTE_N:,} more bad records (first 20 in the report)")
        for n in self.encoding_notes:
            out.append(f"         note: {n}")
        out.append(f"quality  {word[self.quality_met]}  {self.quality_reason}")
        if self.per_class:
            out.append(f"         {'class':<16} {'precision':>9} {'recall':>7} {'F1':>7} {'support':>8} {'predicted':>9}")
            from rich.cells import set_cell_size  # loaded only for a table (start-up)

            for c in self.per_class:
                # 16 terminal cells, not 16 characters: a wide (CJK) label takes two each;
                # escaped first (a label is the output's text: no ESC, no U+202E raw)
                label = set_cell_size(printable(c.label, keep=""), 16)
                out.append(
                    f"         {label} {c.precision:>9.4f} {c.recall:>7.4f} {c.f1:>7.4f} "
                    f"{c.support:>8,} {c.predicted:>9,}"
                )
        for n in self.quality_notes:
            out.append(f"         note: {n}")
        state = word[self.no_overlap] if self.overlap_checked else "SKIP"
        out.append(f"overlap  {state}  {self.overlap_reason}")
        for row in self.overlap.head(QUOTE_N).iter_rows(named=True):
            out.append(f"         {row['id']!r} is in both {row['between']}")
        for n in self.notes:
            out.append(f"note: {n}")
        return out

    # -- data -----------------------------------------------------------------
    def to_dict(self, *, first_n: int = 20) -> dict[str, Any]:
        """A JSON/TOML-able summary (first ``first_n`` offenders of each list)."""
        return {
            "corpus_accepted": self.corpus_accepted,
            "verdict": self.verdict_line(),
            "output": self.output_path,
            "output_sha256": self.output_sha256,
            "output_format": self.output_format,
            "expected": self.expected_path,
            "references": self.references_path,
            "label_set": list(self.label_set),
            "classes_source": self.classes_source,
            "ids": {
                "passed": self.ids_match,
                "reason": self.ids_reason,
                "expected_ids": self.expected_ids,
                "expected_unique": self.expected_unique,
                "observed_ids": self.observed_ids,
                "observed_unique": self.observed_unique,
                "records": self.records,
                "missing": self.missing_count,
                "extra": self.extra_count,
                "duplicated_in_output": self.duplicate_output_count,
                "duplicated_in_expected": self.duplicate_expected_count,
                "first_missing": self.missing_ids["id"].head(first_n).to_list(),
                "first_extra": self.extra_ids["id"].head(first_n).to_list(),
                "first_duplicates": self.duplicates.head(first_n).to_dicts(),
                "notes": list(self.ids_notes),
            },
            "format": {
                "passed": self.format_valid,
                "reason": self.format_reason,
                "bad_records": self.bad_record_count,
                "problem_counts": dict(self.problem_counts),
                "file_problems": list(self.file_problems),
                "encoding_notes": list(self.encoding_notes),
                "first_bad_records": [asdict(b) for b in self.bad_records[:first_n]],
            },
            "quality": {
                "passed": self.quality_met,
                "reason": self.quality_reason,
                "metric": self.quality_metric,
                "threshold": self.quality_threshold,
                "tolerance": self.quality_tolerance,
                "value": self.quality_value,
                "margin": self.quality_margin,
                "reference_value": self.reference_value,
                "max_degradation": self.max_degradation,
                **{name: self.metric_values.get(name) for name in METRICS},
                "scored_records": self.scored_records,
                "counted_wrong": {
                    "missing": self.predictions_missing,
                    "malformed": self.predictions_malformed,
                    "outside_declared_classes": self.predictions_undeclared,
                },
                "per_class": [asdict(c) for c in self.per_class],
                "notes": list(self.quality_notes),
            },
            "overlap": {
                "passed": self.no_overlap,
                "checked": self.overlap_checked,
                "reason": self.overlap_reason,
                "first_overlaps": self.overlap.head(first_n).to_dicts(),
            },
            "notes": list(self.notes),
        }

    def write(self, folder: Path, run_name: str, *, root: Path | None = None) -> Path:
        """Archive the report in ``folder`` (V2, V8).

        ``<run_name>.toml`` (with ``summary``, the lines of :meth:`summary_lines`, and
        ``row``, the CSV fields) plus the full lists ``.missing.csv``, ``.extra.csv``, ``.duplicates.csv``, ``.bad_records.csv``
        and ``.overlap.csv`` beside it. Every file is written atomically; the TOML last,
        so a report whose TOML exists has all its lists.

        Args:
            folder: the archive folder (``validation/`` or below).
            run_name: the stem of the report's files.
            root: the session folder ``folder`` lies under: no folder between the two may
                be a symbolic link (refused) and missing ones are created 0700;
                ``None``: ``folder`` and its parents are created as they are.

        Returns:
            The path of the TOML report.

        Raises:
            BadInput: ``run_name`` looks like a secret or is too long, or (with ``root``) a
                folder on the way is a symbolic link; nothing is written.
            OSError: the disk refused (earlier files of the same report may remain).
        """
        folder = Path(folder)
        # The name a person chose (``validate --name``) names files and the CSV row: it is
        # checked like every field written (no secret, no invisible character); the corpus
        # quoted in the report is an archive (V8) and is not.
        check_identifier(run_name, field="run", what="the report name")
        check_free_text({"run": run_name}, folder)
        if root is not None:
            make_private_dir(folder, root=root)
        else:
            folder.mkdir(parents=True, exist_ok=True)
        lists = {
            "missing": self.missing_ids,
            "extra": self.extra_ids,
            "duplicates": self.duplicates,
            "bad_records": self.bad_records_all,
            "overlap": self.overlap,
        }
        files = {}
        for kind, frame in lists.items():
            path = folder / f"{run_name}.{kind}.csv"
            write_atomic_bytes(path, csv_bytes(frame))
            files[kind] = path.name
        doc = {"run": run_name, "written_at": clock.utcnow()}
        doc.update(self.to_dict())
        doc["row"] = self.row_fields()
        doc["files"] = files
        doc["summary"] = self.summary_lines()  # the same words as the CLI, for the TUI
        target = folder / f"{run_name}.toml"
        write_toml_archive(target, _tomlable(_masked_words(doc)))
        return target


def _masked_words(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with secrets hidden in its words: the summary, the row and every ``notes``.

    Why: those words carry what the workload's output said and go home with the session;
    the ID lists and quoted records stay as found (V8: an ID may be a 64-hex digest).
    """
    def walk(value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return {k: (mask_record(v, k) if k in ("summary", "row") or k.endswith("notes")
                        else walk(v, k)) for k, v in value.items()}
        return value

    return walk(doc, "")


def _tomlable(value: Any) -> Any:
    """TOML has no null and no mixed-type arrays of tables with None: drop Nones."""
    if isinstance(value, dict):
        return {str(k): _tomlable(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_tomlable(v) for v in value if v is not None]
    return value


def free_run_name(folder: Path, base: str) -> str:
    """The first free report name in ``folder`` (V8: a report is never overwritten).

    Returns:
        ``base``, else ``base-2``, ``base-3``… whichever has no report yet.
    """
    folder = Path(folder)
    name, n = base, 1
    while any(folder.glob(f"{glob.escape(name)}.*")):
        n += 1
        name = f"{base}-{n}"
    return name
