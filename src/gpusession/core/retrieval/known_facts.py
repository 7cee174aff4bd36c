"""What the product knows it records itself: the facts that tick checklist items (S11; seed 003 §2, §4, §5, §8).

The rental guide's checklist asks the renter to do things gpusession itself records: a
manifest of the approved deliverables, a verified copy home, a small round trip, a plan the package covers, a count of accepted
deliverables, the order's timeline. An item whose evidence is such a fact is done with
that fact as its evidence (S11, which changes S1: before it, automatic evidence never
ticked an item). An item that is a person's judgement (:data:`PERSON_ITEMS`) is never
ticked here. A person can still mark a ticked item not done, with a note
(:func:`gpusession.core.retrieval.checklist.set_done`).

The table item → fact is :data:`FACT_OF_ITEM`; the order events of stage 5 are
:data:`ORDER_EVENT_OF_ITEM`, one event per item, written out for people in
``docs/checklist-facts.md`` (a test keeps the two the same).

Who calls it: :func:`gpusession.core.retrieval.checklist.load_checklist` (so ``checklist
NAME``, ``checklist NAME --json``, the TUI's Checklist pane and the report read the same
ticks). Facts are read, never written, here: reading is cheap (``session.toml``,
``order.toml``, ``checklist.toml``, ``retrieval.toml``, the count cache; whether the
manifest is still there); no file is hashed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpusession.core.copyhome.throughput import RETRIEVAL_TOML, read_entries
from gpusession.core.files.errors import BadInput
from gpusession.core.files.seal import is_sealed
from gpusession.core.folder.session import Session
from gpusession.core.money.count import session_count
from gpusession.core.money.count_cache import cached_words
from gpusession.core.money.kept_plan import session_plan
from gpusession.core.money.order import TRACKING, load_order
from gpusession.core.retrieval.status import copy_record_doubt

#: The checklist item ticked by each fact the product records (S11).
FACT_OF_ITEM: dict[str, str] = {
    "g2.round-trip": "a verified small copy home (`gpusession pull --probe`)",
    "g4.plan-days": "a plan kept with the package, that the package covers (`package NAME --plan`)",
    "g4.package-covers": "a plan kept with the package, that the package covers (`package NAME --plan`)",
    "g4.cost-per-deliverable": "a count of accepted deliverables (approved files, else accepted outputs, "
                               "else accepted corpora)",
    "g5.configurator": "the order event `ordered` (`order NAME set`)",
    "g5.asset-network": "the order event `payment-order-issued` (`order NAME payment`)",
    "g5.active-order": "the order event `payment-sent` (`order NAME event payment-sent`)",
    "g5.paid-not-confirmed": "the order event `payment-confirmed`, from the provider's tracking",
    "g5.provisioning": "the order event `gpu-provisioned`",
    "g8.manifest": "a manifest written by `gpusession manifest` (sealed `[manifest]` of `checklist.toml`)",
    "g8.verify-copy": "a verified `gpusession pull` or `gpusession verify-copy` of this session's copy",
}

#: Stage 5: item → the one order event (and its source, ``None`` = any) that ticks it (S2, S11).
#: ``g5.order-match`` has no matching event: it stays the person's (its probe is shown beside it).
ORDER_EVENT_OF_ITEM: dict[str, tuple[str, str | None]] = {
    "g5.configurator": ("ordered", None),
    "g5.asset-network": ("payment-order-issued", None),
    "g5.active-order": ("payment-sent", None),
    "g5.paid-not-confirmed": ("payment-confirmed", TRACKING),
    "g5.provisioning": ("gpu-provisioned", None),
}

#: Items that are a person's judgement: never ticked by the product (S11). A prefix
#: ending in ``.`` covers its stage (every ``g1.`` item).
PERSON_ITEMS: tuple[str, ...] = (
    "g1.", "p1.fixed-before", "g7.one-change", "g2.inputs-open", "g6.retrieve-open", "g8.open-from-copy",
)


def is_persons(item_id: str) -> bool:
    """Whether ``item_id`` is a person's judgement, never ticked by the product (S11)."""
    return any(item_id.startswith(p) if p.endswith(".") else item_id == p for p in PERSON_ITEMS)


@dataclass(frozen=True)
class KnownFact:
    """A fact the product recorded that ticks one checklist item (S11).

    Attributes:
        item_id: the item it ticks, e.g. ``g8.verify-copy``.
        at: when the fact was recorded (aware UTC); ``None`` when the record has no time.
        evidence: the fact in words, shown as the item's evidence.
    """

    item_id: str
    at: datetime | None
    evidence: str


def _utc(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return _utc(parsed)
    return None


def _when(at: datetime | None) -> str:
    return f" {at:%Y-%m-%d %H:%M} UTC" if at is not None else ""


def _copy_facts(session: Session, checklist: dict[str, Any]) -> list[KnownFact]:
    """``g8.verify-copy`` ← a verified pull or ``verify-copy`` of this session (S4, S11).

    The newest check of the copy decides: a pull or ``verify-copy`` that found it
    different after a verified one leaves the item open.
    """
    found: list[tuple[datetime | None, bool, str]] = []
    for key, what in (("retrieval", "gpusession pull"), ("verify_copy", "gpusession verify-copy")):
        rec = checklist.get(key)
        if isinstance(rec, dict) and is_sealed(rec) and isinstance(rec.get("verified"), bool):  # a hand-made table is no fact (H-58)
            when = _utc(rec.get("at"))
            src = rec.get("source") or rec.get("copy")
            # the seal is public: a verified check counts only when it re-derives (H-78)
            verified = rec["verified"] and copy_record_doubt(rec, session.folder)[0] is None
            found.append((when, verified, f"copy home verified{_when(when)} by {what}"
                          + (f" ({src})" if isinstance(src, str) and src else "")))
    if not found:
        return []
    at, verified, words = max(found, key=lambda f: f[0] or datetime.min.replace(tzinfo=timezone.utc))
    return [KnownFact("g8.verify-copy", at, words)] if verified else []


def _manifest_fact(session: Session, checklist: dict[str, Any]) -> list[KnownFact]:
    """``g8.manifest`` ← the manifest ``gpusession manifest`` wrote and sealed (S4, S11, A4).

    A ``[manifest]`` table written or edited by hand is the person's, no fact; nor is a
    manifest no longer there (at its path, or in this folder: a copy home holds it under
    its name).
    """
    rec = checklist.get("manifest")
    if not (isinstance(rec, dict) and is_sealed(rec) and isinstance(rec.get("path"), str)):
        return []
    path = Path(rec["path"])
    if not (path.is_file() or (session.folder / path.name).is_file()):
        return []
    at = _utc(rec.get("at"))
    files, size = rec.get("files"), rec.get("total_bytes")
    what = f": {files} file(s)" if isinstance(files, int) and not isinstance(files, bool) else ""
    if what and isinstance(size, int) and not isinstance(size, bool):
        what += f", {size:,} bytes"
    return [KnownFact("g8.manifest", at, f"manifest {rec['path']}{what} (SHA-256), written{_when(at)} by "
                                         f"gpusession manifest")]


def _probe_fact(session: Session) -> list[KnownFact]:
    """``g2.round-trip`` ← a verified small copy (``pull --probe``) in ``retrieval.toml`` (D2, S11)."""
    probes = [e for e in read_entries([session.folder / RETRIEVAL_TOML]) if e.get("probe") is True]
    if not probes:
        return []
    last = probes[-1]
    at = _utc(last.get("at"))
    moved = last.get("bytes")
    size = f", {moved:,} bytes" if isinstance(moved, int) and not isinstance(moved, bool) else ""
    return [KnownFact("g2.round-trip", at, f"a small copy home verified{_when(at)} by gpusession pull --probe{size}")]


def _plan_facts(session: Session) -> list[KnownFact]:
    """``g4.plan-days``, ``g4.package-covers`` ← a kept plan the package covers (K6, S11)."""
    try:
        plan = session_plan(session)
    except BadInput:  # a [plan] broken by hand ticks nothing; `show` names it
        return []
    if plan is None or plan.covered_by(session.package) is not True:
        return []
    words = plan.words(session.package)
    at = _journal_time(session, "plan_set")
    return [KnownFact("g4.plan-days", at, f"kept: {words} (days per task {plan.text()})"),
            KnownFact("g4.package-covers", at, f"kept: {words}")]


def _journal_time(session: Session, event: str) -> datetime | None:
    """When the newest journal record ``event`` was written; ``None`` when none reads."""
    at = None
    for r in session.journal_records():
        if getattr(r, "EVENT", None) == event:
            at = _utc(getattr(r, "at", None))
    return at


def _count_fact(session: Session) -> list[KnownFact]:
    """``g4.cost-per-deliverable`` ← a count of accepted deliverables exists (S10, S11).

    Read from the count the last ``approve``/``reject``/``cost``/``manifest`` cached when
    it still holds (no hashing), else counted now.
    """
    cached = cached_words(session.folder)
    if cached is not None and (isinstance(cached.get("count"), int) or cached.get("count") is None):
        n, words = cached.get("count"), str(cached["words"])
    else:
        try:
            count = session_count(session)
        except BadInput:
            return []
        n, words = count.n, f"{count.words()} ({count.source_words()})"
    if not n:
        return []
    return [KnownFact("g4.cost-per-deliverable", None,
                      f"{words}: `gpusession cost {session.name}` divides the package by it")]


def _order_facts(session: Session) -> list[KnownFact]:
    """Stage 5 ← the order events of :data:`ORDER_EVENT_OF_ITEM` (S2, S11)."""
    try:
        state = load_order(session)
    except BadInput:  # an unreadable order.toml ticks nothing; `order NAME show` names it
        return []
    out = []
    for item_id, (event, source) in ORDER_EVENT_OF_ITEM.items():
        found = [e for e in state.timeline if e.state == event and (source is None or e.source == source)]
        if found:
            e = found[-1]
            who = "the provider's tracking" if e.source == TRACKING else "you"
            out.append(KnownFact(item_id, e.at, f"order event {event}{_when(e.at)} (recorded by {who})"))
    return out


def known_facts(session: Session, checklist: dict[str, Any]) -> dict[str, KnownFact]:
    """Every fact the product holds that ticks a checklist item, by item id (S11).

    Args:
        session: the open session.
        checklist: its parsed ``checklist.toml`` (the copy-home records live there).

    Returns:
        ``{item id: fact}`` for the items of :data:`FACT_OF_ITEM` whose fact exists;
        never an item of :data:`PERSON_ITEMS`. A file that does not read gives no fact
        (the command that owns it says why).
    """
    facts = [*_copy_facts(session, checklist), *_manifest_fact(session, checklist), *_probe_fact(session),
             *_plan_facts(session),
             *_count_fact(session), *_order_facts(session)]
    return {f.item_id: f for f in facts if f.item_id in FACT_OF_ITEM and not is_persons(f.item_id)}


__all__ = ["FACT_OF_ITEM", "KnownFact", "ORDER_EVENT_OF_ITEM", "PERSON_ITEMS", "is_persons", "known_facts"]
