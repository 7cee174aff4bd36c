"""The session's count of accepted deliverables: one source, named, with the unit (S10; K3, K4).

The count is, in the order of the registered kinds of deliverable
(:mod:`gpusession.core.records.kinds`; seed 000 §5: count only what was validated, never twice):

1. **approved** deliverables, distinct by SHA-256, once a person has decided on any file
   (:mod:`gpusession.core.folder.approvals`); a file changed after its approval is not
   counted;
2. else the distinct files of the outputs an experiment's **accept rule** accepted
   (:mod:`gpusession.core.validation.accept_rule`);
3. else the distinct **accepted corpora** (K4).

Each kind counts itself; the three above count from rooms this module stands on, so their
counters are here and bound to their kinds (:func:`gpusession.core.records.kinds.bind_count`).

One source, named beside the figure; never a sum of two. The cost per deliverable reads
``55.00 USD ÷ 18 approved visuals = 3.06 USD per visual`` (:func:`cost_line`).

Each count is cached in ``count-cache.json`` (by ``approve``, ``reject``, ``cost``,
``manifest`` and the end of every run) keyed on the files' size and modification
time, so ``status --format tmux`` says ``18 visuals`` without hashing anything
(:func:`gpusession.core.money.count_cache.cached_words`: standard library only, no polars).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.core.files.textio import printable
from gpusession.core.files.tomlio import write_atomic_bytes
from gpusession.core.folder.approvals import (
    Conflict,
    FileState,
    SameBytes,
    approvals_path,
    approved_digests,
    conflicts,
    file_states,
    same_bytes,
)
from gpusession.core.folder.unit import Unit, unit_of
from gpusession.core.money.cost import cost_per_accepted
from gpusession.core.money.count_cache import (
    CACHE_FILE,
    CORPORA,
    cache_check,
    cache_key,
    cached_words,
    shown_in_status,
)
from gpusession.core.money.period import Period, session_period
from gpusession.core.money.rates import format_usd
from gpusession.core.records import kinds
from gpusession.core.records.kinds import (
    CountScope,
    DeliverableKind,
    KindCount,
    kind_named,
    registered,
)
from gpusession.core.records.old_words import files_digest_from_old_notes
from gpusession.core.records.summary import accepted_revisions, validated_count
from gpusession.core.validation.accept_rule import (
    RunKey,
    accepted_output_digests,
    files_digests_of_runs,
    has_accept_rule,
)

if TYPE_CHECKING:
    from gpusession.core.folder.session import Session

#: The count's sources as stored (``source`` in JSON and the cache): the kinds' keys (S10).
APPROVED, ACCEPT_RULE = kinds.APPROVED.key, kinds.ACCEPT_RULE.key


@dataclass(frozen=True)
class DeliverableCount:
    """How many deliverables count, from which one source, in which unit (S10).

    Attributes:
        n: the count; ``None`` when not measured (no run validated, nothing decided).
        source: the key of the kind that counted (``approved``, ``accept-rule``,
            ``corpora``; :mod:`gpusession.core.records.kinds`).
        unit: the session's unit (S8).
        not_counted: files decided but not counted, in words (changed after approval).
        to_decide: files of the deliverables folder still to decide.
        same_bytes: approved files repeating the bytes of one approved before (counted once).
        conflicts: bytes approved under one name and rejected under another, to settle.
    """

    n: int | None
    source: str
    unit: Unit
    not_counted: tuple[str, ...] = ()
    to_decide: int = 0
    same_bytes: tuple[SameBytes, ...] = ()
    conflicts: tuple[Conflict, ...] = ()

    @property
    def kind(self) -> DeliverableKind:
        """The kind of deliverable counted (:func:`gpusession.core.records.kinds.kind_named`)."""
        return kind_named(self.source)

    def noun(self) -> str:
        """What one counted deliverable is called: ``approved visual``, ``accepted corpus``."""
        return self._noun(1)

    def _noun(self, n: int) -> str:
        name = self.unit.name(n)
        adj = self.kind.adjective
        return name if name.startswith(adj) else f"{adj} {name}"

    def words(self) -> str:
        """``18 approved visuals``; ``0 accepted corpora``; ``no approved visual yet``.

        A declared unit that nothing has counted yet (no approval, no rule, no validated
        run) is ``no approved visual yet``: the guide's words, and never a zero (C3). A
        measured zero is ``0 approved visuals``, followed by the first deliverable left out
        in its kind's own words (``visual-01.png changed after approval …; approve it
        again``) so that "yet" never hides a file that must be decided again (S9). Every
        front end says the count in these words (A1).
        """
        if self.n is None:
            return self.kind.unmeasured_words(self._noun(1), self.unit.singular, self.unit.declared)
        said = f"{self.n:,} {self._noun(self.n)}"
        if self.n == 0 and self.not_counted:
            more = len(self.not_counted) - 1
            first = printable(" ".join(self.not_counted[0].split()), keep="")  # a name from disk: one line (H-44)
            said += f"; {first}" + (f" (and {more} more)" if more else "")
        return said

    def short(self) -> str:
        """``18 visuals`` (the tmux form and ``list``); ``? visuals`` when not measured (C3: never 0)."""
        if self.n is None:
            return f"? {self.unit.plural}"
        return self.unit.words(self.n)

    def source_words(self) -> str:
        """Where the figure comes from, in words."""
        return self.kind.source_words

    def with_source(self) -> str:
        """``4 approved charts (approved by a person, distinct by SHA-256 (approvals.toml))`` (S10).

        The count and its source in the one form ``deliverables``, the Validation pane
        and its deliverables box say it (A1).
        """
        return f"{self.words()} ({self.source_words()})"

    def to_json(self) -> dict[str, Any]:
        """The count as JSON (show, cost, compare, deliverables).

        Keys: ``count``, ``source``, ``words``, ``unit`` …, ``not_counted``, ``to_decide``,
        ``same_bytes`` (``path``, ``same_as``, ``sha256``) and ``conflicts`` (``sha256``,
        ``approved`` and ``rejected``: ``path``, ``by``).
        """
        return {"count": self.n, "source": self.source, "source_words": self.source_words(),
                "words": self.words(), **self.unit.to_json(), "not_counted": list(self.not_counted),
                "to_decide": self.to_decide,
                "same_bytes": [{"path": r.path, "same_as": r.same_as, "sha256": r.sha256} for r in self.same_bytes],
                "conflicts": [{"sha256": c.sha256,
                               "approved": [{"path": p, "by": b} for p, b in c.approved],
                               "rejected": [{"path": p, "by": b} for p, b in c.rejected]} for c in self.conflicts]}

    def said(self) -> list[str]:
        """What a person settles or should know beside the figure, one line each.

        The conflicts first, then the repeats counted once; ``cost`` prints them under its
        cost line (``deliverables`` and the Validation pane render the same facts per file).
        """
        return [c.words() for c in self.conflicts] + [r.words() for r in self.same_bytes]


def cost_line(total_usd_minor: int | None, count: DeliverableCount) -> str:
    """``55.00 USD ÷ 18 approved visuals = 3.06 USD per visual`` (K2, K3): words only.

    The figure is :func:`gpusession.core.money.cost.cost_per_accepted`'s, the one formula
    (rounded once, half-up). With nothing counted yet: the package cost only and ``no
    approved visual yet``; nothing accepted, ``0 approved visuals``.
    """
    if total_usd_minor is None:
        return f"{count.words()}; the package price is not in the rates file"
    per = cost_per_accepted(total_usd_minor, count.n).per_accepted_usd_minor
    if per is None:
        return f"{format_usd(total_usd_minor)} for the package; {count.words()}"
    return (f"{format_usd(total_usd_minor)} ÷ {count.words()} = {format_usd(per)} per "
            f"{count.unit.singular}")


def rule_accepted_runs(rows: Any, records: Iterable[Any] = ()) -> dict[RunKey, str | None]:
    """The rows an accept rule accepted (H-57), each with the files digest its run recorded (H-72).

    The digest is the run's typed journal field (``run_finished.files_digest``,
    :func:`files_digests_of_runs` of ``records``); a run journalled before it was typed
    has it only in its row's notes, read by the old-folder adapter
    (:func:`files_digest_from_old_notes`).

    Returns:
        ``(experiment, variant, phase, run index)`` → the digest of the report's files the
        run recorded when the rule accepted, ``None`` when none.
    """
    import polars as pl

    if rows.height == 0:
        return {}
    typed = files_digests_of_runs(records)
    marker = kinds.ACCEPT_RULE.row_marker
    mine = rows.filter((pl.col("quality_metric") == marker) & pl.col("corpus_accepted").fill_null(False))
    out: dict[RunKey, str | None] = {}
    for e, v, p, i, n in mine.select("experiment_id", "variant_id", "phase", "run_index", "notes").iter_rows():
        if i is not None:
            run = (str(e), str(v), str(p), int(i))
            out[run] = typed[run] if run in typed else files_digest_from_old_notes(n)
    return out


def _rows_in_period(rows: Any, period: Period) -> tuple[Any, set[tuple[str, str]]]:
    """The rows validated inside the window, and the accepted corpora only rows outside it accepted.

    Returns ``(rows inside, {(corpus revision, "before" | "after")})`` (seed 000 §5).
    """
    import polars as pl

    if not period.scanned or rows.height == 0:
        return rows, set()
    keys = rows.select("experiment_id", "variant_id", "phase", "run_index").iter_rows()
    sides = [period.side((str(e), str(v), p, i)) for e, v, p, i in keys]
    kept = rows.filter(pl.Series([s is None for s in sides]))
    dropped = accepted_revisions(rows) - accepted_revisions(kept)
    outside = rows.filter(pl.Series([s is not None for s in sides]))
    side_of = {rev: side for rev, side in zip(outside["corpus_revision"].to_list(),
                                             [s for s in sides if s is not None], strict=True)}
    return kept, {(rev, side_of.get(rev, "after")) for rev in dropped}


def _outside_words(period: Period, sides: list[str | None], one: str, many: str) -> tuple[str, ...]:
    """``2 accepted corpora validated before the package started (…): outside the period …``.

    ``sides``: ``"before"`` or ``"after"`` for each deliverable left out.
    """
    return tuple(period.words(n, one if n == 1 else many, side)
                 for side in ("before", "after") if (n := sides.count(side)))


class _Scope:
    """What the kinds count from (:class:`gpusession.core.records.kinds.CountScope`): each read once."""

    def __init__(self, session: Session, frame: Any, states: list[FileState] | None) -> None:
        self.session = session
        self._frame, self._states = frame, states
        self._period: Period | None = None

    def rows(self) -> Any:
        if self._frame is None:
            self._frame = self.session.results.read()
        return self._frame

    def period(self) -> Period:
        if self._period is None:
            self._period = session_period(self.session)  # seed 000 §5: validated in the period
        return self._period

    def states(self) -> list[FileState]:
        if self._states is None:
            self._states = file_states(self.session)
        return self._states


def _count_approved(scope: CountScope) -> KindCount | None:
    """Files approved by a person, distinct by SHA-256, once anything is decided (S9, S10)."""
    if not approvals_path(scope.session).exists():
        return None
    states = scope.states()
    return KindCount(
        len(approved_digests(states)),
        tuple(s.words() for s in states if s.state in ("changed", "missing", "refused") and s.decision
              and s.decision.decision == "approved"),
        sum(1 for s in states if s.state == "to-decide"), tuple(same_bytes(states)), tuple(conflicts(states)))


def _count_rule(scope: CountScope) -> KindCount | None:
    """Distinct files of the outputs an experiment's rule accepted inside the period (S9, S10, H-57)."""
    if not has_accept_rule(scope.session):
        return None
    period = scope.period()
    runs = rule_accepted_runs(scope.rows(), scope.session.journal_records())
    inside = {r: tie for r, tie in runs.items() if period.side(r) is None}
    digests, validated, left_out = accepted_output_digests(scope.session, inside)
    return KindCount(len(digests) if validated else None,
                     (*_outside_words(period, [period.side(r) for r in runs.keys() - inside.keys()],
                                      "accepted run", "accepted runs"), *left_out[:20]))


def _count_corpora(scope: CountScope) -> KindCount:
    """Distinct accepted corpora validated inside the period (K4); not measured before a validated run (K3)."""
    rows = scope.rows()
    validated_n = 0 if rows.height == 0 else int(rows.select(validated_count()).item())
    kept, outside = _rows_in_period(rows, scope.period())
    return KindCount(len(accepted_revisions(kept)) if validated_n else None,
                     _outside_words(scope.period(), [side for _, side in outside],
                                    "accepted corpus", "accepted corpora"))


kinds.bind_count(kinds.APPROVED.key, _count_approved)
kinds.bind_count(kinds.ACCEPT_RULE.key, _count_rule)
kinds.bind_count(kinds.CORPUS.key, _count_corpora)


def session_count(session: Session, frame: Any = None, *, cache: bool = False,
                  states: list[FileState] | None = None) -> DeliverableCount:
    """The session's one count of accepted deliverables (S10).

    Each registered kind of deliverable is asked in its order
    (:func:`gpusession.core.records.kinds.registered`); the first that counts in the
    session is the one source, never a sum of two. Files approved or accepted by a rule
    in a session that never declared a unit are the kind's default unit (``deliverable``),
    never "approved accepted corpora" (S8).

    Args:
        session: the open session.
        frame: its results rows when already read.
        cache: keep the count for ``status`` (``approve``, ``reject``, ``cost`` and the
            end of a run do; a reader such as ``show`` or ``compare`` writes nothing).
        states: :func:`file_states` of the session when the caller has them (the
            Validation pane lists them too: the files are walked and hashed once).

    Raises:
        BadInput: ``approvals.toml`` or the results do not read.
    """
    declared = unit_of(session.data)
    scope = _Scope(session, frame, states)
    kind: DeliverableKind = kinds.CORPUS
    got: KindCount | None = None
    for kind in registered():
        got = kind.count(scope)
        if got is not None:
            break
    if got is None:  # no kind counts: the corpora's "not measured" (K3)
        kind, got = kinds.CORPUS, KindCount(None)
    unit = declared if declared.declared else Unit(*kind.default_unit)
    count = DeliverableCount(got.n, kind.key, unit, got.not_counted, got.to_decide, got.same_bytes,
                             got.conflicts)
    if cache:
        try:
            write_cache(session, count)
        except OSError:
            pass  # a cache only: the figure is still right
    return count


def write_cache(session: Session, count: DeliverableCount) -> None:
    """Keep the count for ``status`` (atomic; S7)."""
    folder = Path(session.folder)
    doc = {"schema": 1, "count": count.n, "source": count.source, "short": count.short(),
           "words": count.words(), "declared": count.unit.declared, "unit": count.unit.singular,
           "unit_plural": count.unit.plural, "left_out": len(count.not_counted),
           "key": cache_key(folder, session.data)}
    doc["check"] = cache_check(doc)  # a hand edit of the count reads as no cache (H-47)
    write_atomic_bytes(folder / CACHE_FILE, json.dumps(doc, ensure_ascii=False).encode("utf-8"))


__all__ = ["ACCEPT_RULE", "APPROVED", "CORPORA", "DeliverableCount", "cached_words", "cost_line",
           "session_count", "shown_in_status", "write_cache"]
