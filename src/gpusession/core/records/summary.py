"""Session-level figures computed from the results rows (K3, K4).

``accepted_unique_corpora`` is a count of *distinct* corpus revisions with at least one
accepted run -- never a count of rows: five repetitions of one corpus are one
deliverable (seed 000 §5). The validation issue may refine the package-period filter.

:func:`summary_rows` is the one summary table (durations, quality figure, verdicts) that
``show``, the Run pane and the report print (R6, R7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from gpusession.core.records.csvkeys import UNFINISHED_KIND as UNFINISHED_KIND
from gpusession.core.records.kinds import row_kind
from gpusession.core.records.results import elapsed_statistics

if TYPE_CHECKING:
    import polars as pl

    from gpusession.core.records.results import ResultsFile


def accepted_unique_corpora(
    frame: pl.DataFrame,
    *,
    period_start: datetime | None = None,
    period_end: datetime | None = None,
) -> int:
    """Distinct ``corpus_revision`` values with ``corpus_accepted = true`` (K3, K4).

    Args:
        frame: results rows (38 columns).
        period_start: reserved for a per-period filter; rows carry no timestamp, so
            every row of the session counts (a session is one package).
        period_end: reserved, as ``period_start``.

    Returns:
        The count (0 when nothing is accepted). Rows without a corpus revision are
        not counted: an accepted run of an unknown corpus cannot be told apart.
    """
    return len(accepted_revisions(frame))


def corpora_cell(quality_metric: str | None, accepted_revisions: set[str] | frozenset[str]) -> int | None:
    """The ``accepted_unique_corpora`` cell of a row judged by the kind its ``quality_metric`` names (K4, S10).

    Args:
        quality_metric: the row's ``quality_metric`` cell (``macro_f1``, ``accept-rule``, empty).
        accepted_revisions: the distinct accepted corpus revisions of the session so far.

    Returns:
        ``len(accepted_revisions)`` for a row of a classification corpus (the seed's
        column: distinct accepted corpora, never summed over rows); ``None`` (empty: not
        a count of this row's kind) for a row judged by another kind (an accept rule):
        its deliverables are counted in the session's unit by ``gpusession cost``, the one
        count (S10), and a ``0`` beside ``corpus_accepted = true`` would read as "accepted,
        yet nothing accepted" (docs/session-folder.md, "accepted_unique_corpora").
    """
    return len(accepted_revisions) if row_kind(quality_metric).classification else None


def accepted_revisions(frame: pl.DataFrame) -> set[str]:
    """The distinct ``corpus_revision`` values with at least one accepted run (K4).

    A runner keeps this set and adds each accepted row's revision, instead of
    re-reading the whole CSV for every row it appends.
    """
    if frame.height == 0:
        return set()
    import polars as pl

    accepted = frame.filter(
        pl.col("corpus_accepted").fill_null(False) & pl.col("corpus_revision").is_not_null()
    )
    return set(accepted["corpus_revision"].to_list())


#: The row fields that only a validation fills (V1): all empty = the output was never
#: validated (as :func:`gpusession.core.events.corpus_verdict` reads one row).
VALIDATION_FIELDS = ("ids_match", "format_valid", "quality_value")


def corpus_verdict_expr() -> pl.Expr:
    """The verdict of each row: ``true`` accepted, ``false`` rejected, null never validated.

    A run that failed, was interrupted or was recovered after a crash holds no verdict
    (V1, R7, S7). Its ``corpus_accepted`` cell is written empty; rows written before
    that rule (``false`` with no elapsed time and no validation field) read as not
    validated too, so a count of validated rows never includes them. A run
    whose output could not be read (elapsed measured) stays rejected.

    Returns:
        A polars expression over the 38 columns, named ``corpus_accepted``.
    """
    import polars as pl

    never = (pl.col("corpus_accepted").eq(False) & pl.col("elapsed_seconds").is_null()
             & pl.all_horizontal([pl.col(c).is_null() for c in VALIDATION_FIELDS]))
    return (pl.when(never).then(pl.lit(None, dtype=pl.Boolean))
            .otherwise(pl.col("corpus_accepted")).alias("corpus_accepted"))


def validated_count() -> pl.Expr:
    """Rows whose corpus was validated (accepted or rejected), as a polars aggregation."""
    return corpus_verdict_expr().is_not_null().sum()


# -- the summary table every front end shows (R6, R7) ---------------------------
#: How a metric is named for people (V6).
METRIC_WORDS = {"macro_f1": "macro-F1", "accuracy": "accuracy"}


def metric_words(metric: str | None) -> str:
    """A quality metric named for people: ``macro_f1`` → ``macro-F1`` (V6).

    The one naming of a metric id (``core.validation.metrics.METRICS``, the
    ``quality_metric`` column) in human text: the validation report's reason (the
    ``validate`` CLI), the summary table and the TUI's Validation pane.

    Args:
        metric: the stored id; an unknown id is shown as it is, ``None`` or ``""`` reads
            ``quality``.
    """
    if not metric:
        return "quality"
    return METRIC_WORDS.get(metric, metric)
#: ``variant_id`` of a warm worker's load row: one load serves every variant's warm runs.
ALL_VARIANTS = "all"


def variant_words(variant_id: str | None, phase: str | None) -> str:
    """The variant column in words: the warm worker's load (``all``) reads ``all variants``.

    Args:
        variant_id: as stored in the results CSV (``batch-4``, ``all``…); ``None`` reads ``-``.
        phase: ``load``, ``cold``, ``warm`` or ``None``.

    Returns:
        ``"all variants"`` for the one load of the warm worker, else the id (issue: misc
        item 4; the stored id stays ``all``).
    """
    if variant_id is None:
        return "-"
    return "all variants" if phase == "load" and variant_id == ALL_VARIANTS else str(variant_id)



#: How a group measured in full reads (:attr:`SummaryRow.measured_in_full`): decided by the field, never by these words.
MEASURED_IN_FULL = "all measured"

#: The experiment id of a standalone ``gpusession validate --session`` row (no phase).
STANDALONE = "validate"


@dataclass(frozen=True)
class SummaryRow:
    """One line of the summary table: per experiment, variant and phase (R6).

    Attributes:
        experiment_id: the experiment (``"validate"`` for standalone validations).
        variant_id: the variant (for a validation: its run name).
        phase: ``load``, ``cold`` or ``warm``; ``None`` for a standalone validation row.
        runs: rows in the group.
        n: rows with a measured ``elapsed_seconds``.
        failed: timed rows without ``elapsed_seconds`` (a failed observation, R7); 0 for
            validations, which are not timed.
        median_seconds: median of the measured durations (s), ``None`` when none.
        min_seconds: fastest measured duration (s), ``None`` when none.
        max_seconds: slowest measured duration (s), ``None`` when none.
        p95_seconds: ``None`` below 20 observations (R6).
        quality_metric: the metric of the group's validated rows (``macro_f1``…).
        quality_min: lowest quality value (0–1) of the group, ``None`` when none.
        quality_max: highest quality value (0–1) of the group, ``None`` when none.
        validated: rows whose corpus was validated (:func:`corpus_verdict_expr` true or
            false); a failed, interrupted or recovered run is not one.
        accepted: rows with ``corpus_accepted = true``.
        rejections: the defects of the group's rejected rows in words (``ids: 300
            missing``, ``format invalid``, ``quality 0.333 below the floor 0.9 − 0.0``).
        attempts_pooled: how many attempts (invocations) of the experiment wrote the rows
            the summary pools (0 when the journal does not say).
        attempt: for rows of an attempt that stopped before measuring anything, its
            number (1, 2…); ``None`` for the current rows.
        unfinished: for the rows of an experiment whose newest run never ended (killed;
            recorded by crash recovery), how far it got in words ("2 of 10 runs
            done, the run did not finish"); ``None`` otherwise.
    """

    experiment_id: str | None
    variant_id: str | None
    phase: str | None
    runs: int
    n: int
    failed: int
    median_seconds: float | None
    min_seconds: float | None
    max_seconds: float | None
    p95_seconds: float | None
    quality_metric: str | None = None
    quality_min: float | None = None
    quality_max: float | None = None
    validated: int = 0
    accepted: int = 0
    attempt: int | None = None
    unfinished: str | None = None
    rejections: tuple[str, ...] = ()
    attempts_pooled: int = 0

    @property
    def rejected(self) -> int:
        """Rows whose corpus was rejected (validated and not accepted, V1)."""
        return self.validated - self.accepted

    @property
    def all_accepted(self) -> bool:
        """Every validated row accepted, and at least one validated: the verdict ``accepted`` (V1)."""
        return self.validated > 0 and self.rejected == 0

    @property
    def any_rejected(self) -> bool:
        """At least one validated row rejected: the verdict ``REJECTED …`` (V1, D5), typed for colour and choice."""
        return self.validated > 0 and self.rejected > 0

    @property
    def measured_in_full(self) -> bool:
        """Every run of the group measured: what :meth:`outcome_words` says as ``all measured`` (R7).

        False for a standalone validation (not timed), a failed attempt, a failed run or
        an experiment whose run did not finish.
        """
        return self.attempt is None and not self.is_validation and not self.failed and not self.unfinished

    def verdict_words(self) -> str:
        """The verdict in words, apart from how complete the measurement is (D5, V1).

        ``accepted`` (every validated row accepted), ``REJECTED (ids: at least 300 missing)`` /
        ``REJECTED (quality 0.333 below the floor 0.9 − 0.0)`` (the floor applied:
        threshold − tolerance), ``REJECTED 2 of 5 (…)`` when only some rows were, and
        ``not validated`` when no row holds a verdict (a load, a failed run, no protocol).
        """
        if self.validated == 0:
            return "not validated"
        if self.all_accepted:
            return "accepted"
        some = "" if self.accepted == 0 else f" {self.rejected} of {self.validated}"
        why = "; ".join(self.rejections) or "see the validation report"
        return f"REJECTED{some} ({why})"

    def variant_words(self) -> str:
        """The variant column for people: ``all variants`` for the warm worker's load."""
        return variant_words(self.variant_id, self.phase)

    @property
    def is_validation(self) -> bool:
        """A standalone ``validate --session`` row: not timed, not a run.

        Its experiment is ``"validate"`` with no phase; a run's row whose phase was lost
        (a hand edit) stays with its experiment's runs, shown with ``-``.
        """
        return self.phase is None and self.experiment_id == STANDALONE

    def quality_words(self) -> str:
        """``macro-F1 0.962`` (or a range ``0.951–0.962``); ``-`` when nothing was scored."""
        if self.quality_min is None or self.quality_max is None:
            return "-"
        name = metric_words(self.quality_metric)
        if f"{self.quality_min:.3f}" == f"{self.quality_max:.3f}":
            return f"{name} {self.quality_max:.3f}"
        return f"{name} {self.quality_min:.3f}–{self.quality_max:.3f}"

    def outcome_words(self) -> str:
        """The last column in words: failures, a validation's verdict, a failed attempt.

        A standalone validation reads "accepted validation" / "rejected validation"
        (never "failed"); rows of an attempt that never measured anything say
        so; otherwise "all measured" or "N failed (kept; the report says why)" (R7) --
        never "all measured" for an experiment whose run did not finish.
        """
        if self.attempt is not None:
            return f"attempt {self.attempt}: did not load, nothing measured (the report says why)"
        if self.is_validation:
            rejected = self.validated - self.accepted
            if self.validated == 0:
                return "validation: no verdict"
            if rejected == 0:
                return "accepted validation" if self.accepted == 1 else f"{self.accepted} accepted validations"
            if self.accepted == 0:
                return "rejected validation" if rejected == 1 else f"{rejected} rejected validations"
            return f"validations: {self.accepted} accepted, {rejected} rejected"
        if self.measured_in_full:
            return MEASURED_IN_FULL
        failed = f"{self.failed} failed (kept; the report says why)" if self.failed else None
        if self.unfinished:
            return self.unfinished if failed is None else f"{failed}; {self.unfinished}"
        return failed or MEASURED_IN_FULL

    def to_json(self) -> dict[str, Any]:
        """Plain data (``show --json``): the fields plus ``quality``, ``outcome`` and ``verdict`` in words."""
        d = asdict(self)
        d["quality"] = self.quality_words()
        d["outcome"] = self.outcome_words()
        d["verdict"] = self.verdict_words()
        d["validation"] = self.is_validation  # a `validate --session` output, not an experiment
        d["rejections"] = list(self.rejections)
        return d


def _decimal(value: float) -> str:
    """``0.9`` → ``0.9``, ``0.0`` → ``0.0``, ``0.01`` → ``0.01`` (a protocol figure as typed)."""
    text = f"{value:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _span(low: Any, high: Any, fmt: Any = str) -> str:
    return fmt(low) if low == high else f"{fmt(low)}–{fmt(high)}"


def rejection_words(r: Mapping[str, Any]) -> tuple[str, ...]:
    """The defects of a group's rejected rows in words, from :func:`_verdict_aggregates` (V1, D5).

    The quality value is said with enough digits never to read as reaching the floor.
    The 38 columns hold the expected and the observed counts only, so an ID gap is said
    as a lower bound: 152 observed of 200 expected with a duplicate and an unknown ID
    among them is "at least 48 missing" (the validation report has the exact counts).
    """
    out: list[str] = []
    if r.get("_ids_bad"):
        parts = []
        if r.get("_missing_max"):
            parts.append(f"at least {_span(r['_missing_min'], r['_missing_max'], lambda n: f'{n:,}')} missing")
        if r.get("_extra_max"):
            parts.append(f"at least {_span(r['_extra_min'], r['_extra_max'], lambda n: f'{n:,}')} "
                         "extra or duplicate")
        out.append("ids: " + (", ".join(parts) if parts else "not the expected set"))
    if r.get("_format_bad"):
        out.append("format invalid")
    low, high, thr = r.get("_low_min"), r.get("_low_max"), r.get("_threshold")
    if low is not None and high is not None and thr is not None:
        chosen = r.get("_tolerance")
        tol = chosen or 0.0
        floor = thr - tol

        def fmt(v: float) -> str:
            for digits in range(3, 9):
                if float(f"{v:.{digits}f}") < floor:
                    return f"{v:.{digits}f}"
            return repr(v)

        minus = "" if chosen is None else f" − {_decimal(tol)}"  # no tolerance chosen: the floor is the threshold
        out.append(f"quality {_span(low, high, fmt)} below the floor {_decimal(thr)}{minus}")
    if r.get("_unreadable"):
        out.append("output could not be validated: the notes say why")
    return tuple(out)


def _verdict_aggregates() -> list[pl.Expr]:
    """What the verdict words need of a group's rejected rows (V1, D5)."""
    import polars as pl

    rejected = corpus_verdict_expr().eq(False)
    ids_bad = rejected & pl.col("ids_match").eq(False)
    gap = pl.col("expected_ids") - pl.col("observed_ids")
    missing = pl.when(ids_bad & (gap > 0)).then(gap)
    extra = pl.when(ids_bad & (gap < 0)).then(-gap)
    floor = pl.col("quality_threshold") - pl.col("quality_tolerance").fill_null(0.0)
    low = pl.when(rejected & (pl.col("quality_value") < floor)).then(pl.col("quality_value"))
    unreadable = rejected & pl.all_horizontal([pl.col(c).is_null() for c in VALIDATION_FIELDS])
    return [
        ids_bad.sum().alias("_ids_bad"),
        missing.min().alias("_missing_min"), missing.max().alias("_missing_max"),
        extra.min().alias("_extra_min"), extra.max().alias("_extra_max"),
        (rejected & pl.col("format_valid").eq(False)).sum().alias("_format_bad"),
        low.min().alias("_low_min"), low.max().alias("_low_max"),
        pl.col("quality_threshold").drop_nulls().first().alias("_threshold"),
        pl.col("quality_tolerance").drop_nulls().first().alias("_tolerance"),
        unreadable.sum().alias("_unreadable"),
    ]


# UNFINISHED_KIND (the incident of an invocation that never ended) lives in csvkeys, light
# enough for the TUI's first frame (Session.needs_recovery); imported above, kept here.


def _key_of(row: Mapping[str, Any]) -> str:
    return f"{row.get('experiment_id')}:{row.get('phase')}:{row.get('variant_id')}:{row.get('run_index')}"


def _writer(by_attempt: Mapping[str, Sequence[Any]] | None, cells: Mapping[str, Any],
            key: str) -> int | None:
    """The number of the attempt that wrote the row ``key`` (D5); the newest when no record names it.

    Run indexes continue from the rows written, so a key two attempts scheduled was
    written by the later one (the earlier left it without a row).
    """
    if by_attempt is None or cells.get("phase") is None:
        return None
    found = by_attempt.get(str(cells.get("experiment_id")), [])
    for a in reversed(found):
        if key in a.keys:
            return int(a.number)
    return int(found[-1].number) if found else None


def _attempt_said(found: Sequence[Any], group: Mapping[str, Any]) -> str | None:
    """What the attempts that wrote a group's rows say about it (D5): one's own words only.

    An attempt that ended without running all it scheduled says so on its loads and on
    the groups it left unfinished; the number is said when the experiment had several.
    """
    wrote = set(group.get("_wrote") or [])
    said = []
    for a in found:
        if a.words is None or a.number not in wrote:
            continue
        if group.get("phase") == "load" or (group.get("variant_id"), group.get("phase")) in a.left:
            said.append(a.words if len(found) == 1 else f"attempt {a.number}: {a.words}")
    return "; ".join(said) or None


def summary_rows(frame: pl.DataFrame, attempts: Mapping[str, int] | None = None,
                 unfinished: Mapping[str, str] | None = None,
                 unfinished_in: Mapping[str, frozenset[tuple[str, str]]] | None = None,
                 written_by: Mapping[str, Sequence[Any]] | None = None) -> list[SummaryRow]:
    """The summary table of ``frame``: timing, quality and verdicts per group (R6, R7, V6).

    Timed rows are grouped per experiment, variant and phase (load, cold, warm in that
    order); standalone validations (no phase) are their own groups, after the runs, and
    never count as failed runs; rows of an attempt that stopped before measuring anything
    (``attempts``) are grouped per attempt, after the current rows.

    Args:
        frame: rows as read by ``ResultsFile.read`` (38 columns).
        attempts: ``{run key → attempt}`` (:func:`gpusession.core.events.facts.failed_attempts`);
            ``None`` = none.
        unfinished: ``{experiment id → words}`` (``JournalFacts.unfinished_words``): the
            outcome of that experiment's timed rows says its run did not finish.
        unfinished_in: ``{experiment id → (variant, phase) groups}``
            (``JournalFacts.unfinished_groups``): only those groups and the experiment's loads say it
            (a variant measured in full reads "all measured"); every group of the
            experiment when none of those has a row. ``None``: every group.
        written_by: ``{experiment id → its attempts}`` (``JournalFacts.attempts``: each
            with ``number``, ``keys``, ``words``, ``left``). When given, a group's
            completeness words come from the attempts that wrote its rows (D5): an
            attempt that left runs of the group (or wrote its load) says so about itself
            ("attempt 2: 2 of 18 runs done, the run was cancelled"), never about rows of
            an earlier, complete attempt; ``unfinished`` and ``unfinished_in`` are then unused.

    Returns:
        The rows of the table, in display order.
    """
    if frame.height == 0:
        return []
    by_attempt = dict(written_by) if written_by is not None else None
    grouped = _grouped(frame, attempts or {}, by_attempt)
    out = [_summary_row(r, unfinished, by_attempt) for r in grouped.iter_rows(named=True)]
    wrote: dict[str, set[int]] = {}
    for r in grouped.iter_rows(named=True):
        if r["_attempt"] is None and not r["_validation"]:
            wrote.setdefault(str(r["experiment_id"]), set()).update(r["_wrote"] or [])
    out = [replace(s, attempts_pooled=len(wrote.get(str(s.experiment_id), ())))
           if s.attempt is None and not s.is_validation else s for s in out]
    if unfinished_in is not None and by_attempt is None:
        out = _unfinished_only_in(out, unfinished_in)
    order = {"load": 0, "cold": 1, "warm": 2}
    out.sort(key=lambda s: (s.attempt is not None, s.is_validation, s.attempt or 0,
                            str(s.experiment_id), str(s.variant_id), order.get(str(s.phase), 9)))
    return out


def _grouped(frame: pl.DataFrame, attempts: Mapping[str, int],
             by_attempt: dict[str, Sequence[Any]] | None) -> pl.DataFrame:
    """One row per (attempt, validation, experiment, variant, phase) with its statistics."""
    import polars as pl


    frame = measured_again_dropped(frame)
    cells = list(frame.select("experiment_id", "phase", "variant_id", "run_index").iter_rows(named=True))
    keys = [_key_of(r) for r in cells]
    frame = frame.with_columns(
        pl.Series("_attempt", [attempts.get(k) for k in keys], dtype=pl.Int64),
        pl.Series("_wrote", [_writer(by_attempt, r, k) for r, k in zip(cells, keys, strict=True)],
                  dtype=pl.Int64),
        (pl.col("phase").is_null() & (pl.col("experiment_id") == STANDALONE)).alias("_validation"),
    )
    q = pl.col("quality_value")
    return (
        frame.group_by(["_attempt", "_validation", "experiment_id", "variant_id", "phase"],
                       maintain_order=True)
        .agg(
            *elapsed_statistics(),
            pl.col("quality_metric").drop_nulls().first().alias("quality_metric"),
            q.min().alias("quality_min"),
            q.max().alias("quality_max"),
            validated_count().alias("validated"),
            pl.col("corpus_accepted").fill_null(False).sum().alias("accepted"),
            pl.col("_wrote").drop_nulls().unique().sort().alias("_wrote"),
            *_verdict_aggregates(),
        )
    )


def measured_again_dropped(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` without the unmeasured rows of runs that were measured again (R7, S7).

    ``run --resume`` measures again a run whose row says it was cut short (its incident
    row stays in the CSV): the run is one of the schedule, counted once, by its measured
    row. A cold or warm row without ``elapsed_seconds`` is left out when a row of the
    same (experiment, phase, variant, run index) has one; every other row stays.
    """
    import polars as pl

    slot = ["experiment_id", "phase", "variant_id", "run_index"]
    timed = pl.col("phase").is_in(["cold", "warm"])
    done = (frame.filter(timed & pl.col("elapsed_seconds").is_not_null())
            .select(slot).unique().with_columns(pl.lit(True).alias("_measured")))
    if done.height == 0:
        return frame
    marked = frame.with_row_index("_order").join(done, on=slot, how="left", nulls_equal=True)
    keep = ~(timed & pl.col("elapsed_seconds").is_null() & pl.col("_measured").fill_null(False))
    return marked.filter(keep).sort("_order").drop("_order", "_measured")


def _summary_row(r: Mapping[str, Any], unfinished: Mapping[str, str] | None,
                 by_attempt: dict[str, Sequence[Any]] | None) -> SummaryRow:
    """One group of :func:`_grouped` as a row of the table, its completeness words included."""
    validation = bool(r["_validation"])
    return SummaryRow(
        experiment_id=r["experiment_id"], variant_id=r["variant_id"], phase=r["phase"],
        runs=int(r["runs"]), n=int(r["n"]), failed=0 if validation else int(r["failed"]),
        median_seconds=r["median_seconds"], min_seconds=r["min_seconds"],
        max_seconds=r["max_seconds"],
        p95_seconds=r["_p95"] if r["n"] >= 20 else None,
        quality_metric=r["quality_metric"], quality_min=r["quality_min"],
        quality_max=r["quality_max"], validated=int(r["validated"]),
        accepted=int(r["accepted"]), attempt=r["_attempt"],
        unfinished=None if validation or r["_attempt"] is not None
        else (unfinished or {}).get(str(r["experiment_id"])) if by_attempt is None
        else _attempt_said(by_attempt.get(str(r["experiment_id"]), []), r),
        rejections=rejection_words(r),
    )


def _unfinished_only_in(out: list[SummaryRow],
                        unfinished_in: Mapping[str, frozenset[tuple[str, str]]]) -> list[SummaryRow]:
    """The did-not-finish words kept on the groups the run left unfinished and on its loads."""

    def says(s: SummaryRow) -> bool:
        return s.phase == "load" or (s.variant_id, s.phase) in unfinished_in.get(str(s.experiment_id), frozenset())

    tagged = {str(s.experiment_id) for s in out if s.unfinished and says(s)}
    return [s if not s.unfinished or str(s.experiment_id) not in tagged or says(s)
            else replace(s, unfinished=None) for s in out]


def variant_verdicts(frame: pl.DataFrame) -> tuple[int, int]:
    """Variants of ``frame`` (one invocation's rows) accepted and rejected (D5).

    A variant is rejected when any of its measured (cold or warm) rows' corpus was
    rejected, accepted when every validated one was accepted; a variant with no verdict
    (no protocol, every run failed) is neither. The run end of ``run`` and of the Run pane.

    Returns:
        ``(accepted, rejected)`` counts of variants.
    """
    verdicts: dict[str, bool] = {}
    for r in summary_rows(frame):
        if r.phase not in ("cold", "warm") or r.validated == 0:
            continue
        key = str(r.variant_id)
        verdicts[key] = verdicts.get(key, True) and r.rejected == 0
    accepted = sum(verdicts.values())
    return accepted, len(verdicts) - accepted


def recommended_variant(rows: Sequence[SummaryRow], experiment_id: str | None) -> SummaryRow | None:
    """The variant to keep: the accepted one with the fastest warm median (D5).

    Only warm rows of ``experiment_id`` count whose corpus was validated and never
    rejected (``accepted``, :meth:`SummaryRow.verdict_words`) and that have a measured
    median; a faster variant that was rejected or not validated is never named.

    Args:
        rows: the summary table (:func:`summary_rows`, :func:`session_summary`).
        experiment_id: the experiment.

    Returns:
        Its warm :class:`SummaryRow` (``median_seconds`` in s), ``None`` when no
        variant was accepted. Ties go to the first in the table's order.
    """
    kept = [r for r in rows if r.experiment_id == experiment_id and r.phase == "warm"
            and r.validated > 0 and r.rejected == 0 and r.median_seconds is not None]
    return min(kept, key=lambda r: float(r.median_seconds or 0.0), default=None)


def every_run_failed(frame: pl.DataFrame) -> bool:
    """Whether every cold and warm row of ``frame`` (one invocation's) has no measured time.

    "experiment complete, with 2 incidents" would read as a success with remarks; when
    nothing was measured the end of the run says "every run failed" (R7).

    Returns:
        ``True`` when there is at least one cold or warm row and none has an
        ``elapsed_seconds``; ``False`` otherwise (loads alone are not runs).
    """
    import polars as pl

    runs = frame.filter(pl.col("phase").is_in(["cold", "warm"]))
    return runs.height > 0 and runs["elapsed_seconds"].is_null().all()


def verdict_count_words(accepted: int, rejected: int) -> str:
    """``variants: 2 accepted, 1 REJECTED`` (D5); ``no variant validated`` when neither."""
    if accepted == 0 and rejected == 0:
        return "no variant validated"
    return f"variants: {accepted} accepted, {rejected} REJECTED"


class SummaryFacts(Protocol):
    """The journal's facts :func:`session_summary` reads (``core.events.facts.JournalFacts``).

    A Protocol, not the class: ``events`` stands on this floor (``records``) and must
    not be imported from it.
    """

    @property
    def failed_attempts(self) -> Mapping[str, int]:
        """``{run key → attempt number}`` of rows of an attempt that measured nothing."""

    @property
    def unfinished_words(self) -> Mapping[str, str]:
        """``{experiment id → words}`` of experiments whose run did not finish."""

    @property
    def unfinished_groups(self) -> Mapping[str, frozenset[tuple[str, str]]]:
        """``{experiment id → (variant, phase) groups}`` it did not finish."""

    @property
    def attempts(self) -> Mapping[str, Sequence[Any]]:
        """``{experiment id → its attempts}`` (``events.facts.Attempt``)."""


class SummarySession(Protocol):
    """What :func:`session_summary` reads of a session (``core.folder.session.Session``).

    A Protocol: ``folder`` stands above this floor and imports this module.
    """

    @property
    def results(self) -> ResultsFile:
        """The session's ``results.csv``."""

    def journal_facts(self) -> SummaryFacts:
        """The journal read typed, once."""


def session_summary(session: SummarySession, frame: pl.DataFrame | None = None) -> list[SummaryRow]:
    """The summary table of a session: :func:`summary_rows` with the journal's facts.

    Args:
        session: the open session (:class:`SummarySession`: a
            ``core.folder.session.Session``); its ``journal_facts()`` reads the journal
            typed (:mod:`gpusession.core.events.facts`).
        frame: its rows, when already read (else read here), possibly filtered.

    Returns:
        The rows of the table (R6, R7).

    Raises:
        BadInput: an unreadable results CSV.
    """
    rows = session.results.read() if frame is None else frame
    facts = session.journal_facts()
    return summary_rows(rows, facts.failed_attempts, facts.unfinished_words, facts.unfinished_groups,
                        written_by=facts.attempts)
