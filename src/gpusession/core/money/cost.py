"""Rates, package totals, plan coverage and cost per accepted deliverable (K1–K7).

The Cost pane, the ``gpusession cost`` command, the checklist and the report all call
this module; it is pure computation over a :class:`Rates` table (loaded from a TOML
rates file, K7) and never touches the UI.

Money rules (K2): prices are decimal strings in files, parsed with :mod:`decimal`;
results are integer USD cents (``*_usd_minor``). Nothing here ever converts money to a
binary float. Cost per accepted deliverable is the exact quotient rounded *once*, half
up, to the cent (seed 003 §4: 55 ÷ 18 → 3.06 USD).

Sources: seed 003 §4–§5 (packages, lots, worked example), seed 000 §5 (cost without
inventing output), rules.md K1–K7.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, tzinfo
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.folder.package import PACKAGE_DAYS, Package, check_days, check_lots
from gpusession.core.money.rates import (
    CENT,
    NOT_IN_RATES,
    RATES_FILENAME,
    GpuRate,
    Rates,
    format_usd,
    load_rates,
    normalize_model,
    round_half_up_cents,
    set_price_hint,
    usd_to_minor,
)
from gpusession.core.money.window import PackageWindow, local_str, package_window
from gpusession.core.records.summary import accepted_revisions, validated_count

if TYPE_CHECKING:
    import polars as pl

    from gpusession.core.folder.session import Session

__all__ = [
    "CENT", "NOT_IN_RATES", "RATES_FILENAME", "GpuRate", "Rates", "format_usd", "load_rates",
    "normalize_model", "round_half_up_cents", "usd_to_minor", "NO_PROJECTION_LINE",
    "PackageTotal", "package_total", "PlanCoverage", "parse_plan", "plan_coverage",
    "CostPerAccepted", "cost_per_accepted", "ExtensionOption", "CostReport", "cost_report",
    "PackageWindow", "package_window", "SessionCostInputs", "session_cost_inputs",
]

NO_PROJECTION_LINE = (
    "No projection: these figures use only what is accepted so far; a measured pace "
    "is never extrapolated to 3, 7 or 30 days."
)


# -- package total (K1, K2) ------------------------------------------------------------
@dataclass(frozen=True)
class PackageTotal:
    """Full package price × lots (K1), in integer cents (K2).

    Attributes:
        gpu_model: the model as spelled in the rates file (as given when not in it).
        days: package length in days (3, 7 or 30).
        lots: lots bought (whole, ≥ 1).
        gpus_per_lot: from the rates file; ``None`` when the model is not in it.
        price_usd_minor: price of one lot for ``days``; ``None`` when absent.
        total_usd_minor: ``price_usd_minor × lots``; ``None`` when the price is absent.
        missing_reason: why the total is absent (contains "not in the rates file").
    """

    gpu_model: str
    days: int
    lots: int
    gpus_per_lot: int | None
    price_usd_minor: int | None
    total_usd_minor: int | None
    missing_reason: str | None = None

    @property
    def gpu_known(self) -> bool:
        """Whether the GPU model is in the rates file (K7)."""
        return self.gpus_per_lot is not None

    @property
    def gpu_count(self) -> int | None:
        """GPUs the package holds: lots × GPUs per lot (never billed per GPU)."""
        return None if self.gpus_per_lot is None else self.lots * self.gpus_per_lot


def package_total(rates: Rates, gpu_model: str, days: int, lots: int) -> PackageTotal:
    """Price of the package: full package price for ``days`` × ``lots`` (K1, K2).

    No pro-rating of partial days; a multi-GPU lot (B200: 2 GPUs) is billed per lot,
    never per GPU. An unknown model or an absent price gives ``total_usd_minor=None``
    with ``missing_reason`` -- never a guess (K7).

    Args:
        rates: The rates table (K7).
        gpu_model: The GPU model as ordered (matched without regard to case and spaces).
        days: Package length in days: 3, 7 or 30.
        lots: Lots bought, a whole number ≥ 1.

    Returns:
        The total in integer cents, or why it is absent.

    Raises:
        BadInput: ``lots`` not a whole number ≥ 1, or ``days`` not 3, 7 or 30.
    """
    check_days(days)
    check_lots(lots)
    rate = rates.find(gpu_model)
    if rate is None:
        known = ", ".join(rates.models()) or "none"
        return PackageTotal(gpu_model, days, lots, None, None, None,
                            f"GPU model {shown(gpu_model)} is {NOT_IN_RATES} (known: {known})")
    price = rate.price_usd_minor(days)
    if price is None:
        return PackageTotal(rate.gpu_model, days, lots, rate.gpus_per_lot, None, None,
                            f"the {days}-day price of a {rate.gpu_model} lot is {NOT_IN_RATES}")
    return PackageTotal(rate.gpu_model, days, lots, rate.gpus_per_lot, price, price * lots)


# -- plan coverage (K6) -----------------------------------------------------------------
@dataclass(frozen=True)
class PlanCoverage:
    """Which package covers a plan (K6, seed 003 §4).

    Attributes:
        durations_days: the task durations, exact.
        total_days: their sum (exact ``Decimal``).
        package_days: smallest of 3/7/30 that covers the plan; ``None`` above 30 days.
        thirty_day_packages: above 30 days, how many consecutive 30-day packages cover it.
        combination: above 30 days, the combination of 3/7/30-day packages covering the
            plan with the fewest packages (then fewest days), largest first.
    """

    durations_days: tuple[Decimal, ...]
    total_days: Decimal
    package_days: int | None
    thirty_day_packages: int | None = None
    combination: tuple[int, ...] = ()

    @property
    def packages(self) -> tuple[int, ...]:
        """The packages to buy, in days: one package, or the combination above 30 days."""
        return (self.package_days,) if self.package_days is not None else self.combination

    def line(self) -> str:
        """The plan in words: the sum of the durations and the package that covers it (K6)."""
        terms = " + ".join(_fmt_days(d) for d in self.durations_days)
        head = f"Plan: {terms} = {_fmt_days(self.total_days)} days"
        if self.package_days is not None:
            smaller = [d for d in PACKAGE_DAYS if d < self.package_days]
            tail = f" → the {self.package_days}-day package covers it"
            if smaller:
                tail += f" ({' and '.join(f'{d}-day' for d in smaller)} does not)"
            return head + tail
        combo = " + ".join(str(d) for d in self.combination)
        return (f"{head} → longer than one 30-day package: {self.thirty_day_packages} × 30-day "
                f"packages, or {combo} days ({sum(self.combination)} days) in a row")


def _fmt_days(value: Decimal) -> str:
    return format(value.normalize(), "f")


#: A plan duration as typed: ASCII digits with an optional decimal point; no exponent,
#: no digit separators, no other scripts' digits (K2: what is read is what was meant).
_DURATION_RE = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")
#: A plan longer than this many days is a unit mistake (hours typed as days?), not a rental.
PLAN_MAX_DAYS = 366


def _parse_duration(value: str | Decimal | int, index: int) -> Decimal:
    if isinstance(value, float) or isinstance(value, bool):
        raise BadInput(f"duration {index + 1}: expected a decimal string like 0.25, got {shown(value)}",
                       field="plan")
    if isinstance(value, str) and not _DURATION_RE.fullmatch(value.strip()):
        hint = " (use a decimal point: 0.25, not 0,25)" if "," in value else ""
        raise BadInput(f"duration {index + 1}: expected a number of days written like 0.25 "
                       f"(digits and a decimal point), got {shown(value)}{hint}", field="plan")
    try:
        d = Decimal(value.strip()) if isinstance(value, str) else Decimal(value)
    except InvalidOperation:
        hint = " (use a decimal point: 0.25, not 0,25)" if isinstance(value, str) and "," in value else ""
        raise BadInput(f"duration {index + 1}: {shown(value)} is not a number of days{hint}",
                       field="plan") from None
    if not d.is_finite() or d <= 0:
        raise BadInput(f"duration {index + 1}: expected a number of days > 0, got {shown(value)}",
                       field="plan")
    return d


def parse_plan(text: str) -> list[Decimal]:
    """Parse a plan: ``"0.25,1,1,0.5,0.5"`` → exact durations in days (K2, K6).

    Args:
        text: Task durations in days, separated by commas, with a decimal point.

    Returns:
        The durations as exact decimals, in the order given.

    Raises:
        BadInput: An empty plan or duration, a decimal comma (``0,25``), a duration that
            is not a positive number of days, an exponent or non-ASCII digits.
    """
    if re.fullmatch(r"\s*0,[0-9]+\s*", text):
        raise BadInput(f"{shown(text.strip())} reads as two durations, 0 and {text.split(',')[1].strip()}; "
                       "use a decimal point (0.25, not 0,25) and commas between tasks", field="plan")
    parts = [s.strip() for s in text.split(",")]
    if not any(parts):
        raise BadInput("expected task durations in days separated by commas, e.g. 0.25,1,0.5",
                       field="plan")
    for i, p in enumerate(parts):
        if not p:
            raise BadInput(f"duration {i + 1} is empty in {shown(text)}; expected one number of days "
                           "between each pair of commas, e.g. 0.25,1,0.5", field="plan")
    return [_parse_duration(p, i) for i, p in enumerate(parts)]


def plan_coverage(durations: Sequence[str | Decimal]) -> PlanCoverage:
    """Sum task durations exactly and pick the smallest package that covers them (K6).

    3.25 days is *not* covered by a 3-day package (seed 003 §4). Above 30 days the
    result says how many 30-day packages, or which 3/7/30 combination, covers it.

    Args:
        durations: Task durations in days, as decimal strings or ``Decimal``.

    Returns:
        The exact total and the covering package(s).

    Raises:
        BadInput: no durations, a duration that is not a positive decimal, or a plan
            longer than 366 days (a unit mistake).
    """
    if not durations:
        raise BadInput("the plan has no task durations", field="plan")
    ds = tuple(_parse_duration(d, i) for i, d in enumerate(durations))
    total = sum(ds, Decimal(0))
    if total > PLAN_MAX_DAYS:
        raise BadInput(f"the plan adds up to {_fmt_days(total)} days, more than {PLAN_MAX_DAYS}; "
                       "durations are in days (0.25 = 6 hours)", field="plan")
    for days in PACKAGE_DAYS:
        if total <= days:
            return PlanCoverage(ds, total, days)
    n30 = math.ceil(total / 30)
    best: tuple[int, int, tuple[int, ...]] | None = None
    for a in range(n30 + 1):
        rest_a = total - 30 * a
        max_b = max(0, math.ceil(rest_a / 7)) if rest_a > 0 else 0
        for b in range(max_b + 1):
            rest = rest_a - 7 * b
            c = max(0, math.ceil(rest / 3)) if rest > 0 else 0
            combo = (30,) * a + (7,) * b + (3,) * c
            key = (len(combo), sum(combo), combo)
            if best is None or key[:2] < best[:2]:
                best = key
    assert best is not None
    return PlanCoverage(ds, total, None, n30, best[2])


# -- cost per accepted deliverable (K3, K4) -------------------------------------------
@dataclass(frozen=True)
class CostPerAccepted:
    """Cost per distinct accepted deliverable (K3).

    Attributes:
        total_usd_minor: the package total in cents; ``None`` when the price is absent.
        accepted: distinct accepted corpora/deliverables; ``None`` = not measured.
        per_accepted_usd_minor: total ÷ accepted, rounded once half-up to the cent;
            ``None`` when not shown.
        reason: why it is not shown (``None`` when shown).
        count_words: the count in the session's unit (``4 approved charts``) when the
            caller gave it (S8: the count names its unit); ``None``: the bare figure.
        unit: the unit's singular (``chart``), with ``count_words``.
    """

    total_usd_minor: int | None
    accepted: int | None
    per_accepted_usd_minor: int | None
    reason: str | None = None
    count_words: str | None = None
    unit: str | None = None

    def line(self) -> str:
        """The cost per accepted deliverable in words, or why it is not shown (K3).

        ``Cost per accepted deliverable: 55.00 USD ÷ 4 approved charts = 13.75 USD per
        chart (…)`` with the unit's words (S8), ``… ÷ 4 = 13.75 USD (…)`` without.
        """
        if self.per_accepted_usd_minor is None:
            return f"Cost per accepted deliverable: not shown — {self.reason}"
        head = f"Cost per accepted deliverable: {format_usd(self.total_usd_minor)} ÷ "
        per = format_usd(self.per_accepted_usd_minor)
        if self.count_words and self.unit:  # the report's section 3: its page holds 80 lines
            return (f"{head}{self.count_words} = {per} per {self.unit} (rounded once, half-up; "
                    "outside costs and own time excluded)")
        return (f"{head}{self.accepted} = {per} (rounded once, half-up to the cent; outside costs "
                "and own time excluded)")


#: How to get a count where none was measured, as ``gpusession cost`` says it (the Cost pane
#: passes its own words, :func:`cost_report`'s ``count_hint``: never a rewrite of these).
COUNT_HINT = "validate a corpus, or give --accepted-results N"


def cost_per_accepted(total_usd_minor: int | None, accepted: int | None, *,
                      count_hint: str = COUNT_HINT) -> CostPerAccepted:
    """Package total ÷ distinct accepted deliverables, exact, rounded once (K3, K4).

    Args:
        total_usd_minor: package total in cents (``None`` when the price is absent).
        accepted: count of *distinct* accepted corpora (repetitions count once, K4);
            ``None`` when not measured.
        count_hint: how to get a count, in the reason when none was measured (a front
            end's own words; default the CLI's :data:`COUNT_HINT`).

    Returns:
        The cost per deliverable in cents, rounded once half-up, or the reason it is not
        shown: no price, no count, or nothing accepted yet (K3).

    Raises:
        BadInput: ``accepted`` negative or not a whole number.
    """
    if accepted is not None and (not isinstance(accepted, int) or isinstance(accepted, bool)
                                 or accepted < 0):
        raise BadInput(f"expected a whole number ≥ 0 of accepted results, got {shown(accepted)}",
                       field="accepted-results")
    if total_usd_minor is None:
        return CostPerAccepted(None, accepted, None,
                               f"the package price is {NOT_IN_RATES}")
    if accepted is None:
        return CostPerAccepted(total_usd_minor, None, None,
                               f"no count of distinct accepted results ({count_hint}); only the "
                               "package cost is shown")
    if accepted == 0:
        return CostPerAccepted(total_usd_minor, 0, None,
                               "nothing accepted yet; a cost per deliverable needs at least one "
                               "accepted result, so only the package cost is shown")
    per = round_half_up_cents(Decimal(total_usd_minor) / Decimal(accepted))
    return CostPerAccepted(total_usd_minor, accepted, per)


# -- the whole report --------------------------------------------------------------------
@dataclass(frozen=True)
class ExtensionOption:
    """One way to extend the package: ``days`` × current lots, judged as it stands now.

    Attributes:
        days: length of the extension package (3, 7 or 30).
        lots: the current lots (an extension keeps them).
        price_usd_minor: the extension's price in cents; ``None`` when not in the rates.
        new_total_usd_minor: current total + extension in cents; ``None`` when either
            price is absent.
        new_per_accepted: the cost per accepted deliverable with the new total and the
            accepted count *so far* (no projection, K5).
        missing_reason: why the price is absent.
        new_end_utc: when the extended package would end; ``None`` when the start is
            not known.
        new_end_local: the same in local time, with its offset (S6).
        price_hint: the ``rates set`` command that adds the missing price (K7).
    """

    days: int
    lots: int
    price_usd_minor: int | None
    new_total_usd_minor: int | None
    new_per_accepted: CostPerAccepted
    missing_reason: str | None = None
    new_end_utc: datetime | None = None
    new_end_local: str | None = None
    price_hint: str | None = None

    def line(self, *, shell: bool = True) -> str:
        """One indented line: price, new total, new cost per deliverable, new end.

        A missing price names how to add it (K7): the ``rates set`` command, or with
        ``shell=False`` (the TUI, whose words name no command) the rates file.
        """
        head = f"  +{self.days} days × {self.lots} lot(s): "
        if self.price_usd_minor is None:
            text = head + f"price {NOT_IN_RATES}"
            if self.price_hint is not None:
                text += (f" (to price it: {self.price_hint})" if shell
                         else f" (to price it: add the {self.days}-day price to your rates file)")
        else:
            text = (f"{head}{format_usd(self.price_usd_minor)} → total "
                    f"{format_usd(self.new_total_usd_minor)}")
            per = self.new_per_accepted.per_accepted_usd_minor
            if per is not None:
                text += f", {format_usd(per)} per accepted deliverable"
        if self.new_end_local is not None:
            text += f"; would end {self.new_end_local}"
        return text


@dataclass(frozen=True)
class CostReport:
    """Everything the Cost pane and ``gpusession cost`` show (K1–K7).

    Attributes:
        total: the package total (K1, K2).
        per_accepted: the cost per distinct accepted deliverable (K3, K4).
        plan: the plan's coverage (K6); ``None`` without a plan.
        plan_packages_usd_minor: price in cents of the packages covering the plan ×
            lots; ``None`` when a price is absent.
        extensions: the 3/7/30-day extension options × current lots.
        rates_origin: which rates file the prices come from (K7).
        accepted_source: where the accepted count comes from, shown beside it.
        notes: extra lines (e.g. the package window), shown before the K5 line.
        plan_source: where the plan comes from (kept with the session's package, or
            given for this call), shown beside it; ``None`` without a plan.
    """

    total: PackageTotal
    per_accepted: CostPerAccepted
    plan: PlanCoverage | None
    plan_packages_usd_minor: int | None
    extensions: tuple[ExtensionOption, ...]
    rates_origin: str
    accepted_source: str | None = None
    notes: tuple[str, ...] = field(default=())
    plan_source: str | None = None

    def lines(self, *, gpu: bool = True, measured_count: bool = True,
              projection: str = NO_PROJECTION_LINE, after_answer: Sequence[str] = (),
              shell: bool = True) -> list[str]:
        """Readable lines, the same in the CLI and the TUI.

        Args:
            gpu: include the GPU line (the report says the GPU elsewhere).
            measured_count: include the ``Accepted deliverables: N distinct`` line (the
                report's verdict says the count; a count not measured is always said).
            projection: the words of the K5 line.
            after_answer: lines said right after the cost per deliverable (the Cost
                pane's variant to keep, D7), placed here rather than found by their words.
            shell: name the ``rates set`` command for a missing extension price; the TUI
                names the rates file instead (it shows no command lines).
        """
        t = self.total
        out: list[str] = []
        if not gpu:
            pass
        elif t.gpus_per_lot is None:
            out.append(f"GPU: {t.gpu_model} — {t.missing_reason}")
        else:
            lot_note = " (the lot price covers all its GPUs)" if t.gpus_per_lot > 1 else ""
            out.append(f"GPU: {t.gpu_model} — {t.lots} lot(s) × {t.gpus_per_lot} GPU(s) per lot "
                       f"= {t.gpu_count} GPU(s){lot_note}")
        if t.total_usd_minor is None:
            out.append(f"Package: {t.days} days × {t.lots} lot(s) — {t.missing_reason}; "
                       "nothing is guessed")
        else:
            out.append(f"Package: {t.days} days × {t.lots} lot(s) at {format_usd(t.price_usd_minor)} "
                       f"per lot = {format_usd(t.total_usd_minor)} (full package price, no "
                       "pro-rating)")
        if self.per_accepted.accepted is not None and not measured_count:
            pass
        elif self.per_accepted.accepted is not None:
            src = f" ({self.accepted_source})" if self.accepted_source else ""
            out.append(f"Accepted deliverables: {self.per_accepted.accepted} distinct{src}; "
                       "a repetition counts once (one corpus, or one file by SHA-256)")
        elif self.accepted_source:  # a session's count that is not measured yet (K3): said, as in the TUI
            out.append(f"Accepted deliverables: {NOT_MEASURED_WORDS} ({self.accepted_source}) — only the "
                       "package cost is shown (a cost per deliverable needs a measured count).")
        out.append(self.per_accepted.line())
        out.extend(after_answer)
        if self.plan is not None:
            out.append(self.plan.line())
            if self.plan_source:
                out.append(f"  ({self.plan_source})")
            if self.plan.package_days is not None and self.plan.package_days > t.days:
                out.append(f"  The current {t.days}-day package does not cover this plan; "
                           "fix the plan or the package, never shrink the estimate.")
            if self.plan_packages_usd_minor is not None:
                out.append(f"  Covering packages × {t.lots} lot(s): "
                           f"{format_usd(self.plan_packages_usd_minor)}")
            elif t.gpu_known:
                out.append(f"  Price of the covering package(s): {NOT_IN_RATES}")
        if self.extensions:
            acc = self.per_accepted.accepted
            now = f"{acc} accepted so far" if acc is not None else "accepted count not known"
            out.append(f"Extension options, as it stands now ({now}):")
            out.extend(opt.line(shell=shell) for opt in self.extensions)
        out.extend(self.notes)
        out.append(projection)
        out.append(f"Rates: {self.rates_origin}")
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain data: cents as integers, days as decimal strings, no floats.

        The package priced is under ``package`` with the keys ``show``, ``list`` and
        ``status`` give it (C6: one fact, one key; ``start`` and ``end`` are ``None``
        here, the caller that knows a session fills them); ``accepted_count`` is the count
        the cost per accepted deliverable divides by (K3), ``accepted_source`` where it
        comes from.
        """
        t = self.total
        return {
            "package": {"gpu_model": t.gpu_model, "lots": t.lots, "days": t.days,
                        "start": None, "end": None},
            "gpus_per_lot": t.gpus_per_lot,
            "gpu_count": t.gpu_count,
            "price_per_lot_usd_minor": t.price_usd_minor,
            "total_usd_minor": t.total_usd_minor,
            "missing_reason": t.missing_reason,
            "accepted_count": self.per_accepted.accepted,
            "accepted_source": self.accepted_source,
            "cost_per_accepted_usd_minor": self.per_accepted.per_accepted_usd_minor,
            "cost_per_accepted_reason": self.per_accepted.reason,
            "plan": None if self.plan is None else {
                "durations_days": [str(d) for d in self.plan.durations_days],
                "total_days": str(self.plan.total_days),
                "package_days": self.plan.package_days,
                "thirty_day_packages": self.plan.thirty_day_packages,
                "combination_days": list(self.plan.combination),
                "packages_usd_minor": self.plan_packages_usd_minor,
                "source": self.plan_source,
            },
            "extensions": [
                {
                    "days": e.days,
                    "lots": e.lots,
                    "price_usd_minor": e.price_usd_minor,
                    "new_total_usd_minor": e.new_total_usd_minor,
                    "new_cost_per_accepted_usd_minor": e.new_per_accepted.per_accepted_usd_minor,
                    "missing_reason": e.missing_reason,
                    "new_end": e.new_end_utc.isoformat() if e.new_end_utc else None,
                }
                for e in self.extensions
            ],
            "projection": None,
            "rates": self.rates_origin,
            "lines": self.lines(),
        }


def cost_report(
    rates: Rates,
    gpu_model: str,
    days: int,
    lots: int,
    *,
    accepted: int | None,
    plan: Sequence[str | Decimal] | None = None,
    accepted_source: str | None = None,
    extensions: bool = True,
    notes: Sequence[str] = (),
    window: PackageWindow | None = None,
    tz: tzinfo | None = None,
    plan_source: str | None = None,
    count_hint: str = COUNT_HINT,
    count_words: tuple[str, str] | None = None,
) -> CostReport:
    """Build the cost report (K1–K7) for the Cost pane and ``gpusession cost``.

    Args:
        rates: the rates table (K7).
        gpu_model: the GPU model as ordered.
        days: package length in days: 3, 7 or 30.
        lots: lots bought, a whole number ≥ 1.
        accepted: distinct accepted deliverables, or ``None`` when not measured (K3).
        plan: optional task durations in days (K6).
        accepted_source: where the count comes from, shown beside it.
        extensions: include the 3/7/30-day extension options × current lots.
        notes: extra lines (e.g. the package window) shown before the K5 line.
        window: the package window now (S6); when its end is known, each extension
            option says when the extended package would end (shown in ``tz``).
        tz: the zone for that end time (default: local).
        plan_source: where ``plan`` comes from, said beside it (the session's kept plan,
            or one given for this call).
        count_hint: how to get a count, said when none was measured (K3): the CLI's
            :data:`COUNT_HINT`, or a front end's own words.
        count_words: ``(count in its unit, unit singular)``, e.g. ``("4 approved charts",
            "chart")``, from the session's record: the cost per deliverable line then says
            ``÷ 4 approved charts = 13.75 USD per chart`` (S8), never a bare ``÷ 4``.

    Returns:
        The report; :meth:`CostReport.lines` and :meth:`CostReport.to_json` render it.

    Raises:
        BadInput: bad lots/days/accepted or a malformed plan. An unknown model is *not*
            raised here (the report says "not in the rates file"); the CLI refuses it.
    """
    total = package_total(rates, gpu_model, days, lots)
    per = cost_per_accepted(total.total_usd_minor, accepted, count_hint=count_hint)
    if count_words is not None:
        per = replace(per, count_words=count_words[0], unit=count_words[1])
    coverage = plan_coverage(plan) if plan is not None else None
    plan_cost: int | None = None
    if coverage is not None:
        prices = [package_total(rates, gpu_model, d, lots).total_usd_minor for d in coverage.packages]
        if prices and all(p is not None for p in prices):
            plan_cost = sum(p for p in prices if p is not None)
    opts: list[ExtensionOption] = []
    end = window.end_utc if window is not None else None
    if extensions and total.gpu_known:
        for d in PACKAGE_DAYS:
            ext = package_total(rates, gpu_model, d, lots)
            new_total = (None if ext.total_usd_minor is None or total.total_usd_minor is None
                         else total.total_usd_minor + ext.total_usd_minor)
            new_end = end + timedelta(days=d) if end is not None else None
            opts.append(ExtensionOption(d, lots, ext.total_usd_minor, new_total,
                                        cost_per_accepted(new_total, accepted, count_hint=count_hint),
                                        ext.missing_reason,
                                        new_end, local_str(new_end, tz) if new_end else None,
                                        None if ext.total_usd_minor is not None
                                        else set_price_hint(ext.gpu_model, d, with_file=False)))
    return CostReport(total, per, coverage, plan_cost, tuple(opts), _origin_words(rates, gpu_model, days),
                      accepted_source, tuple(notes), plan_source if coverage is not None else None)


def _origin_words(rates: Rates, gpu_model: str, days: int) -> str:
    """The file the package price comes from, then every file read when there are several (K7)."""
    price = rates.price_origin(gpu_model, days)
    return price if price == rates.origin else f"the {days}-day price from {price}; files read: {rates.origin}"


#: How an accepted count that was not measured (no run validated yet, K3) is said.
NOT_MEASURED_WORDS = "not measured"
#: Why, for a session whose results hold no validated run.
NO_VALIDATED_RUN = "no validated run yet"


# -- one session's cost inputs (K3, K4, K7) ----------------------------------------------
@dataclass(frozen=True)
class SessionCostInputs:
    """What a session's cost is computed from: its package, the rates, the accepted corpora.

    Attributes:
        package: the session's package (GPU model, lots, days, start).
        rates: the rates table in force for the session (K7).
        accepted_revisions: the distinct ``corpus_revision`` values with an accepted run
            (K4); ``None`` when the results were not read (``count_accepted=False``).
        validated_runs: rows whose corpus was validated (0: nothing validated yet, so
            the accepted count is not measured, K3); a failed or cut run is not one.
    """

    package: Package
    rates: Rates
    accepted_revisions: frozenset[str] | None
    validated_runs: int

    @property
    def accepted(self) -> int | None:
        """Distinct accepted corpora (K3, K4); ``None`` when not counted."""
        return None if self.accepted_revisions is None else len(self.accepted_revisions)

    @property
    def accepted_measured(self) -> int | None:
        """Like :attr:`accepted`, but ``None`` while no run was validated (K3)."""
        return self.accepted if self.validated_runs else None

    def package_total(self) -> PackageTotal | None:
        """Full package × lots (K1); ``None`` when GPU, days or lots are not set."""
        pkg = self.package
        if not (pkg.gpu_model and pkg.days and pkg.lots):
            return None
        return package_total(self.rates, pkg.gpu_model, pkg.days, pkg.lots)


def session_cost_inputs(
    session: Session,
    rates_path: Path | None = None,
    *,
    frame: pl.DataFrame | None = None,
    count_accepted: bool = True,
) -> SessionCostInputs:
    """Assemble a session's cost inputs: the one place that does it.

    Used by ``gpusession cost --session``, the Cost pane, the runner's per-row package
    total (:mod:`gpusession.bench.run_validation`) and the report.

    Args:
        session: the open session.
        rates_path: a rates file given by the user, in place of the session's ``rates.toml``;
            the user's own file and the bundled one lie under either (K7, :func:`load_rates`).
        frame: the results rows when the caller has already read them (default: read
            ``resultats-bruts.csv`` now).
        count_accepted: ``False`` skips reading the results (only package and rates
            are needed, e.g. the package total of a row).

    Returns:
        The package, the rates in force and the distinct accepted corpus revisions
        (``None`` when not counted) with the number of validated runs.

    Raises:
        BadInput: an unreadable rates file or results file (one line naming it).
    """
    rates = load_rates(rates_path, session_folder=session.folder)
    if not count_accepted:
        return SessionCostInputs(session.package, rates, None, 0)
    rows = session.results.read() if frame is None else frame
    validated = 0 if rows.height == 0 else int(rows.select(validated_count()).item())
    return SessionCostInputs(session.package, rates, frozenset(accepted_revisions(rows)), validated)
