"""The variant to keep, in the words the report, the demo and the TUI share (D5, D7).

One sentence per experiment: the accepted variant with the fastest warm median, its
ratio to the slowest other one and whether that can be told from noise. When no other
variant differs from it beyond noise, the sentence says so *first* ("none is faster
beyond noise with 5 runs; batch-4 has the lowest median …"): a rerun may name another
variant, and an approver must not read a coin toss as a decision.

Who calls it: the report's summary (:mod:`gpusession.core.retrieval.report`), the TUI's
Run and Cost panes. No textual, no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusession.core.files.textio import printable
from gpusession.core.files.units import format_seconds
from gpusession.core.records.summary import recommended_variant, session_summary
from gpusession.core.records.variants import compare_variants

if TYPE_CHECKING:
    import polars as pl

    from gpusession.core.folder.session import Session


def _plain(value: Any) -> str:
    return printable(str(value))


@dataclass(frozen=True)
class KeepFacts:
    """The variant to keep of one experiment and why, as figures (D5, D7, A1).

    Attributes:
        experiment_id: the experiment.
        best: the accepted variant's warm summary row (``median_seconds`` in s), the
            fastest accepted one (:func:`recommended_variant`); ``None`` when no variant
            was accepted (none is named).
        widest: the comparison of ``best`` with the variant it differs most from
            (``ratio``, ``p_value``: an exact Mann-Whitney test); ``None`` when it is the
            only variant measured warm.
        distinguishable: whether any comparison of ``best`` is beyond noise with the runs taken.
        runs: the run counts the comparisons rest on (sorted, distinct).
    """

    experiment_id: Any
    best: Any | None
    widest: Any | None
    distinguishable: bool
    runs: tuple[int, ...] = ()

    @property
    def variant_id(self) -> str | None:
        """The variant to keep; ``None`` when none was accepted."""
        return None if self.best is None else str(self.best.variant_id)

    @property
    def warm_median_s(self) -> float | None:
        """The kept variant's warm median in seconds; ``None`` when none is kept."""
        return None if self.best is None else self.best.median_seconds

    def words(self, cell: Callable[[Any], str] = _plain) -> str:
        """The variant to keep in words, without the ``Keep:`` label or a final stop (:func:`keep_words`)."""
        exp, best, c = self.experiment_id, self.best, self.widest
        if best is None:
            return f"no accepted variant in {cell(exp)} (none is named)"
        median = format_seconds(best.median_seconds)
        if c is None:
            return f"{cell(best.variant_id)} of {cell(exp)}, warm median {median}; the only variant measured warm"
        how = (f"{c.ratio:.1f}× faster than {cell(c.other)}" if (c.ratio or 0) >= 1.05
               else f"about as fast as {cell(c.other)}")
        if self.distinguishable:
            return f"{cell(best.variant_id)} of {cell(exp)}, warm median {median}; {how}, {c.noise_words()}"
        runs = self.runs
        with_runs = f"{runs[0]} runs" if len(runs) == 1 else f"{runs[0]}–{runs[-1]} runs"
        p = f" (p = {c.p_value:.2g})" if c.p_value is not None else ""
        return (f"none is faster beyond noise with {with_runs}{p}; {cell(best.variant_id)} of {cell(exp)} "
                f"has the lowest warm median, {median}, {how}")

    def to_json(self) -> dict[str, Any]:
        """``experiment_id``, ``variant_id``, ``warm_median_s``, ``ratio``, ``other``, ``p_value``, ``beyond_noise``, ``words``."""
        c = self.widest
        return {"experiment_id": self.experiment_id, "variant_id": self.variant_id,
                "warm_median_s": self.warm_median_s,
                "other": None if c is None else c.other, "ratio": None if c is None else c.ratio,
                "p_value": None if c is None else c.p_value, "beyond_noise": self.distinguishable,
                "words": self.words()}


def keep_facts(table: Sequence[Any], comparisons: Sequence[Any], exp: Any) -> KeepFacts:
    """The variant to keep of ``exp`` with the statistics behind it (D5, D7).

    Args:
        table: the summary rows (:func:`gpusession.core.records.summary.session_summary`).
        comparisons: :func:`gpusession.core.records.variants.compare_variants` of them.
        exp: the experiment id.
    """
    best = recommended_variant(table, exp)
    if best is None:
        return KeepFacts(exp, None, None, False)
    mine = [c for c in comparisons if c.experiment_id == exp and c.ratio is not None]
    if not mine:
        return KeepFacts(exp, best, None, False)
    widest = max(mine, key=lambda c: c.ratio or 0.0)
    runs = tuple(sorted({len(m.best_times_s) for m in mine} | {len(m.other_times_s) for m in mine}))
    return KeepFacts(exp, best, widest, any(m.distinguishable for m in mine), runs)


def keep_words(table: Sequence[Any], comparisons: Sequence[Any], exp: Any,
               cell: Callable[[Any], str] = _plain) -> str:
    """The variant to keep of ``exp``, without the ``Keep:`` label or a final stop.

    Args:
        table: the summary rows (:func:`gpusession.core.records.summary.session_summary`).
        comparisons: :func:`gpusession.core.records.variants.compare_variants` of them.
        exp: the experiment id.
        cell: how a name is written (the report escapes Markdown; the TUI prints it plain).

    Returns:
        ``batch-8 of batch-sweep, warm median 525 ms; 3.9× faster than batch-1, beyond
        noise (…)``, or, when no comparison is beyond noise, ``none is faster beyond noise
        with 5 runs (p = 0.69); batch-4 of batch-sweep has the lowest warm median, 525 ms,
        1.2× faster than batch-1`` (the p of the widest gap): :meth:`KeepFacts.words`.
    """
    return keep_facts(table, comparisons, exp).words(cell)


def keep_lines(session: Session, frame: pl.DataFrame | None = None) -> list[str]:
    """``Keep: …`` per experiment measured warm, as the report's summary says it (D5, D7).

    Args:
        session: an open session.
        frame: its results (``session.results.read()`` when not given).

    Returns:
        One plain line per experiment (no Markdown), in the order of the summary table;
        empty when nothing was measured warm.

    Raises:
        BadInput: a malformed results CSV (as the report).
    """
    frame = session.results.read() if frame is None else frame
    if not frame.height:
        return []
    table = session_summary(session, frame)
    timed = [r for r in table if r.phase == "warm" and r.attempt is None]
    exps = list(dict.fromkeys(r.experiment_id for r in timed))
    if not exps:
        return []
    comparisons = compare_variants(frame, table)
    return [f"Keep: {keep_words(table, comparisons, exp)}." for exp in exps]


__all__ = ["KeepFacts", "keep_facts", "keep_lines", "keep_words"]
