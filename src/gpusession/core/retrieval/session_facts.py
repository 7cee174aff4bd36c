"""What a person is told about a session, computed once in one typed record (A1; S6, S8, S10, K1-K4, D5, D7).

:class:`SessionFacts` holds the package and its window, the one count of accepted
deliverables in the session's unit with its source and the cost per deliverable
(:class:`~gpusession.core.money.answer.CostAnswer`), each variant's verdict, the variant
to keep and why (its statistics), the risks, the typed incidents, the time left, the copy
home's state and the energy per deliverable. A figure not measured is an
:class:`Unmeasured` with its reason, never 0 and never a sentence read back later.

Who renders it: ``show`` and ``cost`` (text and ``--json``), the report's summary and its
cost section, ``export`` (each variant's verdict), ``compare`` (its per-session answer) and
the TUI's Cost, Run and Validation panes (built in their thread workers). None of them
decides a figure of its own.

Why: the same session gave two answers (a count in the first lines of the report, none in
its cost section; a rejected variant shown as the reference) when each front end chose
its own figures.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.folder.approvals import approvals_path, load_approvals
from gpusession.core.folder.journal_digest import journal_digest
from gpusession.core.folder.package import Package
from gpusession.core.money.answer import CostAnswer, session_answer
from gpusession.core.money.count import CORPORA, cost_line
from gpusession.core.money.host_check import deviation_words
from gpusession.core.money.rates import format_usd
from gpusession.core.money.window import PackageWindow, package_window
from gpusession.core.records.energy import EnergySummary, energy_summary
from gpusession.core.records.summary import SummaryRow, accepted_unique_corpora, session_summary
from gpusession.core.records.variants import compare_variants
from gpusession.core.retrieval.incidents import (
    SessionIncident,
    SessionIncidents,
    pair_row_facts,
    row_facts,
    session_incidents,
)
from gpusession.core.retrieval.json_contract import package_json
from gpusession.core.retrieval.keep import KeepFacts, keep_facts
from gpusession.core.retrieval.status import Retrieval, retrieval_state

if TYPE_CHECKING:
    import polars as pl

    from gpusession.core.events.reading import JournalRead
    from gpusession.core.folder.approvals import FileState
    from gpusession.core.folder.session import Session


@dataclass(frozen=True)
class Unmeasured:
    """A figure that was not measured, with why (C3: never 0, never a sentence parsed later).

    Attributes:
        reason: one line for a person (``nothing accepted yet``, ``package start not set``).
    """

    reason: str


class Verdict(enum.Enum):
    """A variant's verdict (D5, V1): its value is the word every front end prints."""

    ACCEPTED = "accepted"
    REJECTED = "REJECTED"
    NOT_VALIDATED = "not validated"


@dataclass(frozen=True)
class VariantVerdict:
    """One variant's verdict over its timed runs (cold and warm) of the current attempt (D5).

    Attributes:
        experiment_id: the experiment.
        variant_id: the variant.
        verdict: REJECTED when any validated run was rejected, accepted when every
            validated run was accepted, not validated when no run holds a verdict.
        validated: runs validated; accepted: runs accepted.
        rejections: the rejected runs' defects in words (``ids: 300 missing``).
        warm_median_s: the warm median in seconds; ``None`` when not measured warm.
        kept: whether it is its experiment's variant to keep.
    """

    experiment_id: str
    variant_id: str
    verdict: Verdict
    validated: int
    accepted: int
    rejections: tuple[str, ...] = ()
    warm_median_s: float | None = None
    kept: bool = False

    def words(self) -> str:
        """``accepted``, ``REJECTED (ids: 300 missing)``, ``REJECTED 2 of 5 (…)``, ``not validated``."""
        if self.verdict is not Verdict.REJECTED:
            return self.verdict.value
        rejected = self.validated - self.accepted
        some = "" if self.accepted == 0 else f" {rejected} of {self.validated}"
        why = "; ".join(self.rejections) or "see the validation report"
        return f"REJECTED{some} ({why})"

    def to_json(self) -> dict[str, Any]:
        """``experiment_id``, ``variant_id``, ``verdict`` (its word), ``words``, ``validated``, ``accepted``, ``warm_median_s``, ``kept``."""
        return {"experiment_id": self.experiment_id, "variant_id": self.variant_id,
                "verdict": self.verdict.value, "words": self.words(), "validated": self.validated,
                "accepted": self.accepted, "warm_median_s": self.warm_median_s, "kept": self.kept}


#: What a risk is about; the report's risks line lists them in this order.
RiskKind = Literal["incidents", "rejected_variants", "rejected_files", "copy_home", "gpu_deviation", "time_left"]


@dataclass(frozen=True)
class Risk:
    """One risk a person should know before deciding (D5, S4, D8, S6).

    Attributes:
        kind: what it is about (:data:`RiskKind`).
        words: the risk in words (``2 incidents``, ``REJECTED: batch-8``).
    """

    kind: RiskKind
    words: str


@dataclass(frozen=True)
class SessionFacts:
    """What a person is told about one session, computed once (A1).

    Immutable. The figures made of the summary table and the journal (the verdicts, the
    keep, the risks, the incidents, the energy) are worked out on first reading and kept
    (``cost``'s text reads the answer alone and never decodes the journal, A5); each is
    computed once, from the results and the journal as the builder read them.

    Attributes:
        name: the session.
        package: the package as stored (K1).
        window: start, end and time left of the package (S6).
        time_left_s: seconds until the package ends (negative once ended), or why not known.
        answer: the package total, the one count in the session's unit with its source and
            the cost per deliverable from the one formula (K1-K4, S8, S10).
        accepted_corpora: distinct accepted corpora of the results (K4); ``None`` when the
            results do not read.
        result_rows: rows of the results CSV; ``None`` when it does not read.
        retrieval: the copy home's state (S4).
        summary: the summary table per experiment, variant and phase (R6), which the
            verdicts and the keep are made of (``show`` prints it).
        verdicts: each variant's verdict, in the summary's order (D5).
        keep: the variant to keep per experiment measured warm, with its statistics (D5, D7).
        risks: the risks, in the report's order (without live GPU probes: the report adds them).
        incidents: the session's incidents, each once and typed (R7, S7).
        legacy_incidents: rows older than typed incidents whose notes hold one.
        energy_j: GPU energy of every measured run in joules, or why not known.
        energy_gpu_runs: measured runs on a GPU (failed ones included); 0 on CPU only.
        energy_per_variant: ``(experiment_id, variant_id, median_j, runs)`` per variant
            over its runs that returned with a reading.
    """

    name: str
    package: Package
    window: PackageWindow
    time_left_s: float | Unmeasured
    answer: CostAnswer
    accepted_corpora: int | None
    result_rows: int | None
    retrieval: Retrieval
    #: what the lazy figures are made of: the session, its results as read (``None``: they
    #: do not read), each row's typed facts with the journal read when the caller had them
    session: Any = field(repr=False, compare=False)
    frame: Any = field(default=None, repr=False, compare=False)
    rows_read: Any = field(default=None, repr=False, compare=False)

    @cached_property
    def summary(self) -> tuple[SummaryRow, ...]:
        """The summary table (:func:`session_summary`); empty when the results do not read."""
        return () if self.frame is None else tuple(session_summary(self.session, self.frame))

    @cached_property
    def _timed(self) -> list[SummaryRow]:
        return [r for r in self.summary if r.phase in ("cold", "warm") and r.attempt is None]

    @cached_property
    def keep(self) -> tuple[KeepFacts, ...]:
        """The variant to keep per experiment measured warm (:func:`keep_facts`, D5, D7)."""
        timed = self._timed
        if not timed:
            return ()
        table = list(self.summary)
        comparisons = compare_variants(self.frame, table)
        exps = list(dict.fromkeys(r.experiment_id for r in timed if r.phase == "warm"))
        return tuple(keep_facts(table, comparisons, e) for e in exps)

    @cached_property
    def verdicts(self) -> tuple[VariantVerdict, ...]:
        """Each variant's verdict over its timed runs, the variant to keep marked (D5)."""
        return _verdicts(list(self.summary),
                         {str(k.experiment_id): k.variant_id for k in self.keep if k.variant_id is not None})

    @cached_property
    def _rows(self) -> tuple[list[Any], JournalRead] | None:
        if self.frame is None:
            return None
        if self.rows_read is not None:
            return cast("tuple[list[Any], JournalRead]", self.rows_read)
        digest = journal_digest(self.session.folder)  # the saved digest and the lines since (A5)
        if digest is None:  # a journal that is no plain file: read as before
            read = self.session.journal_read()
            return row_facts(self.frame, read.records), read
        return pair_row_facts(self.frame, digest.row_facts_queues()), digest.incidents_read()

    @cached_property
    def _found(self) -> SessionIncidents:
        rows = self._rows
        return SessionIncidents() if rows is None else session_incidents(self.frame, rows[0], rows[1])

    @property
    def incidents(self) -> tuple[SessionIncident, ...]:
        """The session's incidents, each once and typed (R7, S7)."""
        return self._found.incidents

    @property
    def legacy_incidents(self) -> int:
        """Rows older than typed incidents whose notes hold one."""
        return len(self._found.legacy)

    @cached_property
    def _energy(self) -> EnergySummary | None:
        rows = self._rows
        return None if rows is None else energy_summary(self.frame, rows[0])

    @property
    def energy_j(self) -> float | Unmeasured:
        """GPU energy of every measured run in joules, or why not known (C3: never 0 for unread)."""
        energy = self._energy
        if self.frame is None:
            return Unmeasured("the results do not read")
        if energy is None:
            return Unmeasured("no run was measured on a GPU")
        if energy.total_j is None:
            return Unmeasured(energy.reason or "a measured GPU run has no energy reading")
        return energy.total_j

    @property
    def energy_gpu_runs(self) -> int:
        """Measured runs on a GPU (failed ones included); 0 on CPU only."""
        return 0 if self._energy is None else self._energy.gpu_runs

    @property
    def energy_per_variant(self) -> tuple[tuple[str, str, float, int], ...]:
        """``(experiment_id, variant_id, median_j, runs)`` per variant with a reading."""
        return () if self._energy is None else self._energy.per_variant

    @cached_property
    def risks(self) -> tuple[Risk, ...]:
        """The risks in the report's order (without the live GPU probes: the report adds them)."""
        return _risks(self.session, self.verdicts, len(self._found), bool(self._timed), self.retrieval,
                      self.window)

    @property
    def count(self) -> int | Unmeasured:
        """The count of accepted deliverables every cost divides by (S10), or why it is not measured (K3)."""
        a = self.answer
        if a.count is None:
            return Unmeasured(f"the count does not read: {a.count_problem}")
        if a.count.n is None:
            return Unmeasured(a.source_words() if a.count.source == CORPORA else a.count.words())
        return a.count.n

    @property
    def package_total_usd_minor(self) -> int | Unmeasured:
        """The package price × lots in cents (K1, K2), or why it is not priced (K7)."""
        a = self.answer
        if a.inputs is None:
            return Unmeasured(f"cost not computed: {a.problem}")
        total = a.inputs.package_total()
        if total is None:
            return Unmeasured("the package is not set (GPU model, days, lots)")
        if total.total_usd_minor is None:
            return Unmeasured(total.missing_reason or "the package price is not in the rates file")
        return total.total_usd_minor

    @property
    def per_deliverable_usd_minor(self) -> int | Unmeasured:
        """The cost per accepted deliverable in cents, rounded once half-up (K2, K3), or why not shown."""
        a = self.answer
        if a.per.per_accepted_usd_minor is not None:
            return a.per.per_accepted_usd_minor
        if a.count is None:
            return Unmeasured(f"the count does not read ({a.count_problem})")
        total = self.package_total_usd_minor
        if isinstance(total, Unmeasured):
            return total
        return Unmeasured(a.per.reason or "no count of accepted deliverables")

    @property
    def energy_per_deliverable_j(self) -> float | Unmeasured:
        """GPU energy ÷ the one count (S10), or why it is not shown (nothing accepted, a run unread)."""
        if isinstance(self.energy_j, Unmeasured):
            return self.energy_j
        count = self.count
        if isinstance(count, Unmeasured):
            return count
        if count == 0:
            return Unmeasured("nothing accepted yet")
        return self.energy_j / count

    def count_words(self) -> str:
        """The count in the session's unit with its source, in words (S8, S10, A1).

        ``4 approved charts (approved by a person, distinct by SHA-256 (approvals.toml))``,
        ``1 accepted corpus (distinct accepted corpora)``, ``accepted corpus: not measured
        yet (no validated run yet)`` (K3), or ``count unreadable: …`` naming the file.
        The Validation pane's top line and the deliverables box say it so.
        """
        a = self.answer
        if a.count is None:
            return a.source_words()
        if a.count.n is None:
            return f"{a.count.words()} ({a.source_words()})"
        return a.count.with_source()

    def cost_words(self) -> str:
        """``55.00 USD ÷ 18 approved visuals = 3.06 USD per visual`` (K2, K3, S8, S10), or what is known and why not.

        The figure is the answer's (one formula); ``show`` prints it on its ``cost`` line.
        A count that does not read is said so here, its file named once by the count's own
        line (``answer.count_problem``).
        """
        a = self.answer
        total = self.package_total_usd_minor
        if a.count is None:
            head = "" if isinstance(total, Unmeasured) else f"{format_usd(total)} for the package; "
            return f"{head}no cost per deliverable: the count does not read"
        if isinstance(total, Unmeasured):
            return f"{a.count.words()}; {total.reason}"
        return cost_line(total, a.count)

    def verdict_of(self, experiment_id: Any, variant_id: Any) -> VariantVerdict | None:
        """The verdict of one variant; ``None`` when it has no timed run."""
        return next((v for v in self.verdicts if v.experiment_id == str(experiment_id)
                     and v.variant_id == str(variant_id)), None)

    def best_keep(self) -> KeepFacts | None:
        """The fastest variant to keep over the session's experiments (``compare``'s time); ``None`` when none."""
        kept = [k for k in self.keep if k.best is not None]
        return min(kept, key=lambda k: float(k.warm_median_s or 0.0), default=None)

    def count_json(self) -> dict[str, Any]:
        """``count`` (``null`` when not measured), ``count_unmeasured`` (why), ``unit``, ``unit_plural``, ``source``, ``source_words``, ``count_words``."""
        a = self.answer
        count = self.count
        return {"count": None if isinstance(count, Unmeasured) else count,
                "count_unmeasured": count.reason if isinstance(count, Unmeasured) else None,
                "unit": a.count.unit.singular if a.count is not None else None,
                "unit_plural": a.count.unit.plural if a.count is not None else None,
                "source": a.count.source if a.count is not None else None,
                "source_words": a.source_words(),
                "count_words": a.count.words() if a.count is not None else None}

    def cost_json(self) -> dict[str, Any]:
        """``package_total_usd_minor``, ``per_deliverable_usd_minor`` (each ``null`` + ``*_unmeasured`` when not known), ``per_unit_line``."""
        total, per = self.package_total_usd_minor, self.per_deliverable_usd_minor
        return {"package_total_usd_minor": None if isinstance(total, Unmeasured) else total,
                "package_total_unmeasured": total.reason if isinstance(total, Unmeasured) else None,
                "per_deliverable_usd_minor": None if isinstance(per, Unmeasured) else per,
                "per_deliverable_unmeasured": per.reason if isinstance(per, Unmeasured) else None,
                "per_unit_line": self.answer.per_unit_line()}

    def to_json(self) -> dict[str, Any]:
        """The record as JSON (``show --json`` and ``cost --json`` under ``answer``).

        A figure not measured is ``null`` beside a ``*_unmeasured`` key with its reason.
        """
        left, energy = self.time_left_s, self.energy_per_deliverable_j
        return {
            "name": self.name, "package": package_json(self.package),
            "time_left_s": None if isinstance(left, Unmeasured) else left,
            "time_left_unmeasured": left.reason if isinstance(left, Unmeasured) else None,
            **self.count_json(), **self.cost_json(), "cost_words": self.cost_words(),
            "accepted_corpora": self.accepted_corpora, "result_rows": self.result_rows,
            "verdicts": [v.to_json() for v in self.verdicts],
            "keep": [k.to_json() for k in self.keep],
            "risks": [{"kind": r.kind, "words": r.words} for r in self.risks],
            "incidents": [{"kind": i.kind, "words": i.words, "runs": [list(w) for w in i.runs]}
                          for i in self.incidents],
            "legacy_incidents": self.legacy_incidents,
            "retrieval": {"verified": self.retrieval.verified, "words": self.retrieval.words},
            "energy_per_deliverable_j": None if isinstance(energy, Unmeasured) else energy,
            "energy_unmeasured": energy.reason if isinstance(energy, Unmeasured) else None,
        }


def _verdicts(table: list[SummaryRow], kept: dict[str, str]) -> tuple[VariantVerdict, ...]:
    """Each variant's verdict over its timed rows of the current attempt (D5)."""
    groups: dict[tuple[str, str], list[SummaryRow]] = {}
    for r in table:
        if r.phase in ("cold", "warm") and r.attempt is None:
            groups.setdefault((str(r.experiment_id), str(r.variant_id)), []).append(r)
    out = []
    for (exp, variant), rows in groups.items():
        validated = sum(r.validated for r in rows)
        accepted = sum(r.accepted for r in rows)
        verdict = (Verdict.NOT_VALIDATED if validated == 0 else
                   Verdict.ACCEPTED if validated == accepted else Verdict.REJECTED)
        rejections = tuple(dict.fromkeys(w for r in rows for w in r.rejections))
        warm = next((r.median_seconds for r in rows if r.phase == "warm"), None)
        out.append(VariantVerdict(exp, variant, verdict, validated, accepted, rejections, warm,
                                  kept.get(exp) == variant))
    return tuple(out)


def rejected_files_words(session: Session) -> str | None:
    """``1 file REJECTED by a person (chart-5.png)`` when approvals hold a rejection (S9), else ``None``."""
    if not approvals_path(session).exists():
        return None
    try:
        names = sorted(rel for rel, d in load_approvals(session).items() if d.decision == "rejected")
    except BadInput:
        return None  # the count's own line names the file that does not read
    if not names:
        return None
    shown = ", ".join(printable(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{len(names)} {'file' if len(names) == 1 else 'files'} REJECTED by a person ({shown})"


def _risks(session: Session, verdicts: tuple[VariantVerdict, ...], incidents: int, timed: bool,
           retrieval: Retrieval, window: PackageWindow) -> tuple[Risk, ...]:
    """The risks in the report's order: incidents, rejected variants and files, copy home, GPU, time left."""
    risks = [Risk("incidents", f"{incidents} {'incident' if incidents == 1 else 'incidents'}"
                  if incidents else "no incident")]
    if timed:
        rejected = list(dict.fromkeys(v.variant_id for v in verdicts if v.verdict is Verdict.REJECTED))
        risks.append(Risk("rejected_variants", f"REJECTED: {', '.join(rejected)}" if rejected
                          else "no variant rejected"))
    if (files := rejected_files_words(session)) is not None:
        risks.append(Risk("rejected_files", files))
    risks.append(Risk("copy_home", retrieval.words))
    risks += [Risk("gpu_deviation", w) for w in deviation_words(session)]  # D8
    if session.package.end is not None:
        risks.append(Risk("time_left", window.time_left_words(minutes=False)))
    return tuple(risks)


def session_facts(session: Session, rates_path: Path | None = None, *, frame: pl.DataFrame | None = None,
                  now: datetime | None = None, cache: bool = False,
                  rows_read: tuple[list[Any], JournalRead] | None = None,
                  states: list[FileState] | None = None) -> SessionFacts:
    """The session's :class:`SessionFacts`: each file read once, each figure decided here (A1).

    Args:
        session: the open session.
        rates_path: a rates file for this call in place of the session's (K7).
        frame: the results rows when already read; a results file that does not read is
            said by the count (``answer.count_problem``), never raised.
        now: the instant of the time left (aware); default the clock (A6).
        cache: keep the count for ``status`` (``cost`` does; readers do not).
        rows_read: each row's typed facts and the journal read, when the caller has them
            (the report matches them once for its sections too).
        states: the deliverables' file states when the caller has them (the Validation
            pane: ``approvals.toml`` parsed and each file hashed once per reload, A5).

    Returns:
        The record.

    Raises:
        Nothing of its own for unreadable session files the answer says; an OSError of
        the disk passes through.
    """
    now = now or utcnow()
    if frame is None:
        try:
            frame = session.results.read()
        except BadInput:
            frame = None  # the answer's count says which file and line (H-39)
    answer = session_answer(session, rates_path, frame=frame, cache=cache, states=states)
    pkg = session.package
    window = package_window(pkg, now)
    left = pkg.time_left(now)
    time_left: float | Unmeasured = (left.total_seconds() if left is not None
                                     else Unmeasured("the package start or length is not set"))
    retrieval = retrieval_state(session.folder)
    return SessionFacts(session.name, pkg, window, time_left, answer,
                        None if frame is None else accepted_unique_corpora(frame),
                        None if frame is None else frame.height, retrieval, session, frame, rows_read)


__all__ = ["Risk", "SessionFacts", "Unmeasured", "VariantVerdict", "Verdict", "rejected_files_words",
           "session_facts"]
