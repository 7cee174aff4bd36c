"""Order and payment timeline, stored in ``<session>/order.toml`` (S2, S3, S5).

Seed 003 §5: the configurator sets model, lots, duration and preparation; the total is
price per lot × lots (included cards are not billed again). Payment uses the asset *and*
network, the exact amount, destination and expiry of the *active* payment order.
Clicking "I have paid" keeps your notification but confirms nothing: only the provider's
tracked status confirms payment, and provisioning of the GPU is a separate, later step.
Seed 003 §6: the recognised GPU and any deviation are noted against the order number.

The Order pane, the header's status line, ``gpusession order`` and the checklist use
this module. It never stores passwords, keys or seed phrases (:mod:`.secrets`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Concatenate, ParamSpec, TypeVar

from gpusession.core.events.actions import OrderEventRecord, OrderSetRecord
from gpusession.core.files.bounds import past_bound
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.schema import kind_of
from gpusession.core.files.secrets import check_identifier, check_no_secret, shown
from gpusession.core.folder.package import (
    Package,
    check_days,
    check_lots,
    check_time_range,
    parse_start,
)
from gpusession.core.folder.session import ORDER_TOML, Session
from gpusession.core.money.cost import (
    NOT_IN_RATES,
    Rates,
    format_usd,
    load_rates,
    package_total,
)
from gpusession.core.money.rates import form_factor_words, model_matches

#: How a warning names the way to record the order (CLI words). A front end with a way of its
#: own passes its words as ``set_hint`` (the Order pane: its key), never rewrites these (A1).
SET_ORDER_HINT = "`gpusession order NAME set`"

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "STATES", "SOURCES", "YOU", "TRACKING", "OrderInfo", "PaymentOrder", "OrderEvent",
    "OrderState", "check_amount", "amounts_match", "load_order", "save_order", "set_order",
    "new_payment_order", "record_event", "amount_difference", "compare_with_order", "compare_order",
    "OrderComparison", "record_deviation",
    "ordered_memory_gb", "memory_deviation", "MEMORY_TOLERANCE",
]

STATES = (
    "ordered",
    "payment-order-issued",
    "payment-sent",
    "payment-confirmed",
    "gpu-provisioned",
    "access-received",
    "deviation-noted",
    "closed",
)
YOU = "you"
TRACKING = "provider tracking"
SOURCES = (YOU, TRACKING)
_AMOUNT_RE = re.compile(r"[0-9]+(\.[0-9]+)?")
#: Most digits after the point of an amount: an asset's smallest unit (wei is 10^-18).
AMOUNT_DECIMALS_MAX = 18


@dataclass(frozen=True)
class OrderInfo:
    """What was ordered (seed 003 §5). ``total_usd_minor`` = price per lot × lots."""

    number: str
    gpu_model: str
    lots: int
    days: int
    preparation: str | None = None
    gpus_per_lot: int | None = None
    total_usd_minor: int | None = None


@dataclass(frozen=True)
class PaymentOrder:
    """A payment order (S3): asset and network together, exact amount, destination, expiry.

    ``amount`` is the decimal string exactly as issued; it is compared digit for digit.
    """

    asset: str
    network: str
    amount: str
    destination: str
    expires_at: datetime
    issued_at: datetime
    replaced_at: datetime | None = None

    def expired(self, now: datetime | None = None) -> bool:
        """Whether the payment order has expired at ``now`` (default: now, UTC; S3 warns)."""
        return (now or utcnow()) >= self.expires_at


@dataclass(frozen=True)
class OrderEvent:
    """One entry of the timeline (S2)."""

    at: datetime
    state: str
    source: str
    note: str = ""
    order_number: str | None = None


@dataclass(frozen=True)
class OrderState:
    """Everything in ``order.toml``."""

    order: OrderInfo | None = None
    payment: PaymentOrder | None = None
    payment_history: tuple[PaymentOrder, ...] = ()
    events: tuple[OrderEvent, ...] = field(default=())
    #: One warning per value of ``order.toml`` hidden because it looked like a secret
    #: (a hand-edited seed phrase or key): never shown, never written back.
    hidden: tuple[str, ...] = ()

    def has(self, state: str, source: str | None = None) -> bool:
        """Whether the timeline holds ``state`` (from ``source`` when given; S2).

        Args:
            state: a timeline state, e.g. ``"payment-confirmed"``.
            source: who recorded it (:data:`YOU` or :data:`TRACKING`); ``None``: any.
        """
        return any(e.state == state and (source is None or e.source == source) for e in self.events)

    # Shortcuts to the order's fields (``None`` without an order), for callers that only
    # need the reference: ``state.gpu_model``, ``state.lots``, ``state.number``.
    @property
    def number(self) -> str | None:
        """The order number, ``None`` without an order."""
        return self.order.number if self.order else None

    @property
    def gpu_model(self) -> str | None:
        """The ordered GPU model, ``None`` without an order (S5)."""
        return self.order.gpu_model if self.order else None

    @property
    def lots(self) -> int | None:
        """Lots ordered, ``None`` without an order (K1)."""
        return self.order.lots if self.order else None

    @property
    def days(self) -> int | None:
        """Package length in days (3, 7 or 30), ``None`` without an order (K1)."""
        return self.order.days if self.order else None

    @property
    def paid(self) -> bool:
        """True only when provider tracking confirmed payment (S2); never for payment-sent."""
        return self.has("payment-confirmed", TRACKING)

    @property
    def timeline(self) -> list[OrderEvent]:
        """Every event, oldest first (S2)."""
        return sorted(self.events, key=lambda e: e.at)


# -- validation helpers ------------------------------------------------------------------
def check_amount(amount: str) -> str:
    """The exact amount as a decimal string with a point, kept as typed (S3).

    Raises:
        BadInput: a secret or a format character (H-24, said first, never quoted), a
            decimal comma ("12,5"), a sign, spaces, exponent or zero.
    """
    if not isinstance(amount, str):
        raise BadInput(f"expected the amount as text like \"12.50\", got {shown(amount)}", field="amount")
    check_identifier(amount, field="amount", what="the amount")  # first: H-24, never quoted
    if "," in amount:
        raise BadInput(
            f"{shown(amount)} uses a comma; write the exact amount of the payment order with a "
            "decimal point (e.g. \"12.50\"), it is compared digit for digit", field="amount")
    if not _AMOUNT_RE.fullmatch(amount):
        raise BadInput(f"expected the exact amount as digits with an optional decimal point "
                       f"(e.g. \"12.50\"), got {shown(amount)}", field="amount")
    if set(amount) <= {"0", "."}:
        raise BadInput("the amount must be greater than zero", field="amount")
    # bounded by what it can mean, on the text (H-41): the same check for the writer and
    # the reader of order.toml, so a stored amount always reads back
    if past_bound(amount, "count"):
        raise BadInput("expected an amount under 10^15 (at most 15 digits before the point)", field="amount")
    if len(amount.partition(".")[2]) > AMOUNT_DECIMALS_MAX:
        raise BadInput(f"expected at most {AMOUNT_DECIMALS_MAX} digits after the point", field="amount")
    return amount


def amounts_match(expected: str, given: str) -> bool:
    """Digit-for-digit comparison of two amount strings (S3); ``"12.5" != "12.50"``."""
    return expected == given


def amount_difference(expected: str, given: str) -> str | None:
    """How an amount sent differs from the one issued, in words; ``None`` when digit for digit the same (S3).

    Why: the help promises a digit-for-digit comparison; ``1.1`` against ``1.10`` is a
    difference in digits (a provider matching the text would miss it), said as such with
    the value equality beside it, so neither is hidden.

    Returns:
        ``amount 1.1 differs in its digits from the payment order's exact amount 1.10
        (the same value, but not the digits issued)``, or ``… differs from … (compared
        digit for digit: another value)``.
    """
    if amounts_match(expected, given):
        return None
    from decimal import Decimal, InvalidOperation

    try:
        same = Decimal(expected) == Decimal(given)
    except (InvalidOperation, ValueError):
        same = False
    if same:
        return (f"amount {given} differs in its digits from the payment order's exact amount "
                f"{expected} (the same value, but not the digits issued; compared digit for digit)")
    return (f"amount {given} differs from the payment order's exact amount {expected} "
            "(compared digit for digit: another value)")


def _text(value: Any, fld: str, *, required: bool = True, address: bool = False) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise BadInput("required; expected a non-empty value", field=fld)
        return None
    if not isinstance(value, str):
        raise BadInput(f"expected text, got {kind_of(value)}", field=fld)
    # first: a secret or an invisible / direction-changing character (H-24: a reversed
    # destination pays another wallet); the value is never repeated
    check_identifier(value, field=fld, what=f"the {fld}", address=address)
    if any(ord(c) < 32 or ord(c) == 127 for c in value.strip()):
        raise BadInput("the value contains a control character (line break, tab, escape); "
                       "expected one line of text", field=fld)
    return value.strip()


def _source(source: str) -> str:
    aliases = {"you": YOU, "tracking": TRACKING, "provider tracking": TRACKING,
               "provider": TRACKING}
    if source not in aliases:
        raise BadInput(f"expected source 'you' or 'tracking' (provider tracking), got {shown(source)}",
                       field="source")
    return aliases[source]


# -- load / save --------------------------------------------------------------------------
def _dt(value: Any, fld: str, path: Any) -> datetime:
    if isinstance(value, str):
        return parse_start(value, field=fld, path=path)
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise BadInput("expected a date-time with UTC offset", path=path, field=fld)
    return check_time_range(value, field=fld, path=path)


def _payment_from(d: Any, fld: str, path: Any) -> PaymentOrder:
    if not isinstance(d, dict):
        raise BadInput("expected a table", path=path, field=fld)
    amount = d.get("amount")
    if not isinstance(amount, str):
        raise BadInput(f"expected the exact amount as text like \"12.50\" (a TOML number loses "
                       f"digits), got {shown(amount)}", path=path, field=f"{fld}.amount")
    try:
        check_amount(amount)
    except BadInput as exc:
        raise BadInput(exc.message, path=path, field=f"{fld}.amount") from None
    try:
        return PaymentOrder(
            asset=str(d["asset"]), network=str(d["network"]), amount=amount,
            destination=str(d["destination"]),
            expires_at=_dt(d["expires_at"], f"{fld}.expires_at", path),
            issued_at=_dt(d["issued_at"], f"{fld}.issued_at", path),
            replaced_at=_dt(d["replaced_at"], f"{fld}.replaced_at", path)
            if "replaced_at" in d else None,
        )
    except KeyError as exc:
        raise BadInput("missing required key", path=path, field=f"{fld}.{exc.args[0]}") from None


def load_order(session: Session) -> OrderState:
    """Read ``order.toml`` into an :class:`OrderState` (empty when nothing is recorded).

    The kinds of every value are checked first (:mod:`gpusession.core.files.schema`); a value
    that looks like a secret is replaced by a mark and listed in ``hidden``.

    Raises:
        BadInput: a malformed table, an unknown state or source, with the file and field.
    """
    path = session.folder / ORDER_TOML
    doc = session.read_doc(ORDER_TOML)
    order = None
    o = doc.get("order")
    if o is not None:
        if not isinstance(o, dict) or "number" not in o:
            raise BadInput("expected a table with number, gpu_model, lots, days", path=path,
                           field="order")
        for key in ("gpus_per_lot", "total_usd_minor"):
            v = o.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise BadInput(f"expected a whole number ≥ 0 (USD cents for a total), got {shown(v)}",
                               path=path, field=f"order.{key}")
        order = OrderInfo(
            number=str(o["number"]), gpu_model=str(o.get("gpu_model", "")),
            lots=check_lots(o.get("lots"), path=path), days=check_days(o.get("days"), path=path),
            preparation=o.get("preparation"), gpus_per_lot=o.get("gpus_per_lot"),
            total_usd_minor=o.get("total_usd_minor"),
        )
    payment = _payment_from(doc["payment"], "payment", path) if "payment" in doc else None
    history = tuple(_payment_from(p, f"payment_history[{i}]", path)
                    for i, p in enumerate(doc.get("payment_history", [])))
    events = []
    for i, e in enumerate(doc.get("events", [])):
        fld = f"events[{i}]"
        if not isinstance(e, dict):
            raise BadInput("expected a table", path=path, field=fld)
        if e.get("state") not in STATES:
            raise BadInput(f"unknown state {shown(e.get('state'))}; expected one of {', '.join(STATES)}",
                           path=path, field=f"{fld}.state")
        if e.get("source") not in SOURCES:
            raise BadInput(f"unknown source {shown(e.get('source'))}; expected 'you' or "
                           "'provider tracking'", path=path, field=f"{fld}.source")
        events.append(OrderEvent(at=_dt(e.get("at"), f"{fld}.at", path), state=e["state"],
                                 source=e["source"], note=str(e.get("note", "")),
                                 order_number=e.get("order_number")))
    return OrderState(order, payment, history, tuple(events),
                      tuple(session.hidden.get(ORDER_TOML, ())))


def _payment_doc(p: PaymentOrder) -> dict[str, Any]:
    return {"asset": p.asset, "network": p.network, "amount": p.amount,
            "destination": p.destination, "expires_at": p.expires_at, "issued_at": p.issued_at,
            "replaced_at": p.replaced_at}


def save_order(session: Session, state: OrderState) -> None:
    """Write ``order.toml`` atomically (S7)."""
    doc: dict[str, Any] = {}
    if state.order is not None:
        o = state.order
        doc["order"] = {"number": o.number, "gpu_model": o.gpu_model, "lots": o.lots,
                        "days": o.days, "preparation": o.preparation,
                        "gpus_per_lot": o.gpus_per_lot, "total_usd_minor": o.total_usd_minor}
    if state.payment is not None:
        doc["payment"] = _payment_doc(state.payment)
    if state.payment_history:
        doc["payment_history"] = [_payment_doc(p) for p in state.payment_history]
    if state.events:
        doc["events"] = [{"at": e.at, "state": e.state, "source": e.source, "note": e.note,
                          "order_number": e.order_number} for e in state.events]
    session.write_doc(ORDER_TOML, doc)


def _append(session: Session, state: OrderState, event: OrderEvent) -> OrderState:
    new = replace(state, events=(*state.events, event))
    save_order(session, new)

    session.journal(OrderEventRecord(state=event.state, source=event.source, note=event.note,
                                     order_number=event.order_number, event_at=event.at.isoformat()))
    return new


def _one_writer(func: Callable[Concatenate[Session, _P], _R]) -> Callable[Concatenate[Session, _P], _R]:
    """Run ``func`` (read ``order.toml``, change, write) under the session's lock.

    Two processes recording order events at once then keep both (the folder lock of
    :meth:`gpusession.core.folder.session.Session.locked`, with its timeout and message).
    """

    @functools.wraps(func)
    def wrapper(session: Session, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with session.locked("updating order.toml"):
            return func(session, *args, **kwargs)

    return wrapper


# -- operations -------------------------------------------------------------------------------
@_one_writer
def set_order(
    session: Session,
    *,
    number: str,
    gpu_model: str,
    lots: int,
    days: int,
    preparation: str | None = None,
    rates: Rates | None = None,
    at: datetime | None = None,
) -> tuple[OrderState, list[str]]:
    """Record what was ordered; total = price per lot × lots (seed 003 §5, K1).

    Adds an ``ordered`` event the first time this order number is recorded.

    Returns:
        The new state and warnings (e.g. "price not in the rates file").

    Raises:
        BadInput: empty number/model, bad lots/days, a secret in a field; nothing written.
    """
    num = _text(number, "number")
    model = _text(gpu_model, "gpu")
    prep = _text(preparation, "preparation", required=False)
    check_lots(lots)
    check_days(days)
    assert num is not None and model is not None
    rates = rates or load_rates(session_folder=session.folder)
    total = package_total(rates, model, days, lots)
    warnings = []
    if total.total_usd_minor is None:
        warnings.append(f"order total not computed: {total.missing_reason}")
    state = load_order(session)
    info = OrderInfo(num, model, lots, days, prep, total.gpus_per_lot, total.total_usd_minor)
    state = replace(state, order=info)
    if any(e.state == "ordered" and e.order_number == num for e in state.events):
        save_order(session, state)

        session.journal(OrderSetRecord(number=num, gpu_model=model, lots=lots, days=days))
        return state, warnings
    ev = OrderEvent(at or utcnow(), "ordered", YOU,
                    f"{model}, {lots} lot(s), {days} days, total {format_usd(total.total_usd_minor)}",
                    num)
    return _append(session, state, ev), warnings


@_one_writer
def new_payment_order(
    session: Session,
    *,
    asset: str,
    network: str,
    amount: str,
    destination: str,
    expires_at: datetime,
    now: datetime | None = None,
    set_hint: str = SET_ORDER_HINT,
) -> tuple[OrderState, list[str]]:
    """Record a payment order; it replaces the active one, kept in history (S3).

    ``set_hint``: how a warning names the way to record the order (a front end's own words).

    Returns:
        The new state and warnings.

    Raises:
        BadInput: asset or network missing (they are chosen together), an amount that
            is not an exact decimal with a point ("12,5"), no destination, an expiry
            already past, a secret in a field; nothing written.
    """
    now = now or utcnow()
    a = _text(asset, "asset")
    n = _text(network, "network")
    amt = check_amount(amount.strip() if isinstance(amount, str) else amount)
    dest = _text(destination, "destination", address=True)
    if expires_at.tzinfo is None:
        raise BadInput("expected an expiry with UTC offset", field="expires")
    expires_at = expires_at.astimezone(timezone.utc)
    if expires_at <= now:
        raise BadInput(f"the payment order expired at {expires_at.isoformat()}; record the "
                       "active payment order (ask the provider for a new one), nothing was written",
                       field="expires")
    assert a and n and dest
    state = load_order(session)
    warnings = []
    history = state.payment_history
    if state.payment is not None:
        history = (*history, replace(state.payment, replaced_at=now))
        warnings.append(f"replaced the previous payment order ({state.payment.amount} "
                        f"{state.payment.asset}); it is kept in the history — use only the new "
                        "one's amount, destination and expiry")
    pay = PaymentOrder(a, n, amt, dest, expires_at, now)
    state = replace(state, payment=pay, payment_history=history)
    number = state.order.number if state.order else None
    if number is None:
        warnings.append(f"no order recorded yet; record it with {set_hint}")
    ev = OrderEvent(now, "payment-order-issued", YOU,
                    f"{amt} {a} on {n}, expires {expires_at.isoformat()}", number)
    return _append(session, state, ev), warnings


@_one_writer
def record_event(
    session: Session,
    state: str,
    *,
    source: str,
    note: str = "",
    at: datetime | None = None,
    amount: str | None = None,
    set_hint: str = SET_ORDER_HINT,
) -> list[str]:
    """Append a timeline event (S2, S3). Returns warnings (possibly empty).

    Rules: ``payment-confirmed`` only from provider tracking; ``gpu-provisioned`` from
    provider tracking, or from you once ``access-received`` is recorded; a
    ``payment-sent`` after the active payment order's expiry, without a payment order,
    or with an amount differing digit for digit warns (S3). ``set_hint``: how a warning
    names the way to record the order (a front end's own words, A1).

    Raises:
        BadInput: unknown state/source, a refused source, a secret in the note, a bad
            amount; nothing written.
    """
    if state not in STATES:
        raise BadInput(f"unknown state {shown(state)}; expected one of {', '.join(STATES)}",
                       field="state")
    if amount is not None:  # the payment order's check, before anything else (S3)
        amount = check_amount(amount.strip() if isinstance(amount, str) else amount)
    src = _source(source)
    if note and any((ord(c) < 32 and c not in "\n\t") or ord(c) == 127 for c in note):
        raise BadInput("the note contains a control character (escape, …); expected text",
                       field="note")
    check_no_secret(note, field="note")
    when = at.astimezone(timezone.utc) if at is not None else utcnow()
    current = load_order(session)
    warnings: list[str] = []
    if state == "payment-confirmed" and src == YOU:
        raise BadInput("payment-confirmed comes only from the provider's tracking; clicking "
                       "\"I have paid\" is payment-sent; nothing was written", field="source")
    if state == "gpu-provisioned" and src == YOU and not current.has("access-received"):
        raise BadInput("you can record gpu-provisioned yourself only once you have access: record "
                       "access-received first, or use --source tracking; nothing was written",
                       field="source")
    if state == "payment-sent":
        pay = current.payment
        if pay is None:
            warnings.append("no payment order recorded: payment must use the exact amount, "
                            "destination and expiry of the active payment order")
        else:
            if when >= pay.expires_at:
                warnings.append(f"the active payment order expired at {pay.expires_at.isoformat()}; "
                                "a payment must use the active order's exact amount, destination "
                                "and expiry — ask the provider for a new payment order")
            if amount is not None and (differs := amount_difference(pay.amount, amount)):
                warnings.append(differs)
        warnings.append("payment sent is not payment confirmed: only the provider's tracking "
                        "confirms receipt, and the GPU is provisioned separately")
    if state == "ordered" and current.order is None:
        warnings.append("no order recorded: record its number, GPU, lots and days with "
                        f"{set_hint} so deviations can be noted against it")
    if state in ("gpu-provisioned", "access-received") and not current.paid:
        warnings.append("provisioning is separate from payment: payment is not confirmed by "
                        "provider tracking")
    if amount is not None:
        note = f"{note} (amount {amount})".strip()
    number = current.order.number if current.order else None
    _append(session, current, OrderEvent(when, state, src, note, number))
    return warnings


@dataclass(frozen=True)
class OrderComparison:
    """What was observed against the order (S5, D8).

    Attributes:
        deviation: the deviation in words, ready to quote against the order number;
            ``None`` when nothing compared differs.
        not_compared: one phrase per figure that could not be compared, and why
            (``"count not compared: GPUs per lot of A100 80GB not in the rates file"``):
            never a deviation, never recorded against the order.
        form_factor_unchecked: the order states SXM/PCIe/NVL and the card's name does not
            (H-61): the card is then never said to match the order.
    """

    deviation: str | None
    not_compared: tuple[str, ...] = ()
    form_factor_unchecked: bool = False


def compare_order(
    state: OrderState,
    rates: Rates,
    observed_gpu_model: str | None,
    observed_gpu_count: int | None,
    *,
    package: Package | None = None,
    observed_memory_bytes: int | None = None,
    observed_pci_device_id: int | None = None,
) -> OrderComparison:
    """Compare what was observed with the order: model, count, memory (S5, D8).

    Expected GPU count = lots × GPUs per lot (rates file, else the order's saved figure);
    when neither knows it, the count is not compared and says so (it is no deviation: the
    rates file is what is missing, not a GPU). Without a recorded order the session's
    ``package`` (GPU model, lots) is the reference, and the message says that no order
    number is recorded yet. A value not observed (``None``) is not compared.
    ``observed_memory_bytes`` (the smallest GPU's total, bytes) is compared with the
    memory the ordered model names (:func:`ordered_memory_gb`), when it names one. The form
    factor the order states (SXM, PCIe, NVL) is compared when the name seen, else
    ``observed_pci_device_id``, states one, and said not checked when neither does
    (:func:`form_factor_words`, H-61).

    Raises:
        BadInput: neither an order nor a package GPU model to compare with.
    """
    model: str
    lots: int | None
    per_lot_saved: int | None
    if state.order is not None:
        o = state.order
        model, lots, per_lot_saved = o.gpu_model, o.lots, o.gpus_per_lot
        ref = f"order {o.number}"
    elif package is not None and package.gpu_model:
        model, lots, per_lot_saved = package.gpu_model, package.lots, None
        ref = "the session's package (no order number recorded yet)"
    else:
        raise BadInput("no order recorded; record it with `gpusession order NAME set` before "
                       "comparing the GPU seen with it", field="order")
    problems: list[str] = []
    unknown: list[str] = []
    if observed_gpu_model is not None and not model_matches(model, observed_gpu_model):
        problems.append(f"GPU model seen {shown(observed_gpu_model)}, ordered {shown(model)}")
    form_unchecked: str | None = None
    if observed_gpu_model is not None and not problems:
        form_differs, form_unchecked = form_factor_words(model, observed_gpu_model,
                                                         pci_device_id=observed_pci_device_id)
        problems += [form_differs] if form_differs else []
        unknown += [form_unchecked] if form_unchecked else []
    rate = rates.find(model)
    per_lot = rate.gpus_per_lot if rate is not None else per_lot_saved
    if observed_gpu_count is not None and lots is not None:
        if per_lot is None:
            unknown.append(f"count not compared: GPUs per lot of {model} {NOT_IN_RATES}")
        elif observed_gpu_count != lots * per_lot:
            problems.append(f"GPU count seen {observed_gpu_count}, ordered {lots} lot(s) × "
                            f"{per_lot} GPU(s) per lot = {lots * per_lot}")
    memory = memory_deviation(model, observed_memory_bytes)
    if memory is not None:
        problems.append(memory)
    deviation = f"deviation from {ref}: " + "; ".join(problems) if problems else None
    return OrderComparison(deviation, tuple(unknown), form_unchecked is not None)


def compare_with_order(
    state: OrderState,
    rates: Rates,
    observed_gpu_model: str | None,
    observed_gpu_count: int | None,
    *,
    package: Package | None = None,
    observed_memory_bytes: int | None = None,
) -> str | None:
    """The deviation of :func:`compare_order`, or ``None`` if none (S5, D8).

    A figure that could not be compared is no deviation (see :func:`compare_order`).

    Raises:
        BadInput: neither an order nor a package GPU model to compare with.
    """
    return compare_order(state, rates, observed_gpu_model, observed_gpu_count, package=package,
                         observed_memory_bytes=observed_memory_bytes).deviation


_MEMORY_RE = re.compile(r"(?<![0-9])([0-9]{1,4})\s*GB\b", re.IGNORECASE)
#: How far a GPU's total may read below or above the memory its model is sold with
#: before it is a deviation: ECC and the driver keep a few percent (an L40S sold as
#: 48 GB shows 45 GiB), an A100 40GB in place of an 80GB shows half.
MEMORY_TOLERANCE = 0.10


def ordered_memory_gb(gpu_model: str) -> int | None:
    """The memory per GPU the ordered model names, e.g. ``"A100 80GB"`` → 80 (D8).

    Returns:
        The figure in GB as sold (read as GiB, as NVML counts), ``None`` when the model
        names none (``"RTX A5000"``): memory is then not compared.
    """
    m = _MEMORY_RE.search(gpu_model or "")
    return int(m.group(1)) if m else None


def memory_deviation(gpu_model: str, observed_memory_bytes: int | None) -> str | None:
    """The memory difference in words, or ``None`` when there is none to say (D8).

    ``None`` also when equal within :data:`MEMORY_TOLERANCE`, not observed, or not named
    by the ordered model.
    """
    want = ordered_memory_gb(gpu_model)
    if want is None or observed_memory_bytes is None:
        return None
    seen_gib = observed_memory_bytes / 1024**3
    if abs(seen_gib - want) <= MEMORY_TOLERANCE * want:
        return None
    return f"GPU memory seen {seen_gib:.1f} GiB per GPU, ordered {want} GB ({shown(gpu_model)})"


@_one_writer
def record_deviation(
    session: Session,
    observed_gpu_model: str | None,
    observed_gpu_count: int | None,
    *,
    rates: Rates | None = None,
    at: datetime | None = None,
    observed_memory_bytes: int | None = None,
) -> str | None:
    """Compare the GPU seen with the order; record a mismatch against the order number (S5).

    ``observed_memory_bytes``: the smallest GPU's memory in bytes, compared as in
    :func:`compare_with_order` (D8); ``None``: not compared.

    A ``deviation-noted`` event (source you) is appended unless the same deviation is
    already the latest one recorded.

    Without a recorded order, the session's package is the reference (the event then
    has no order number and says so).

    Returns:
        The deviation message, or ``None`` when model and count match.

    Raises:
        BadInput: neither an order nor a package GPU model; a negative count; an empty
            or multi-line GPU model.
    """
    if observed_gpu_count is not None and observed_gpu_count < 0:
        raise BadInput(f"expected a GPU count ≥ 0, got {observed_gpu_count}", field="count")
    if observed_gpu_model is not None:
        observed_gpu_model = _text(observed_gpu_model, "gpu")
    rates = rates or load_rates(session_folder=session.folder)
    state = load_order(session)
    msg = compare_with_order(state, rates, observed_gpu_model, observed_gpu_count,
                             package=session.package, observed_memory_bytes=observed_memory_bytes)
    if msg is None:
        return None
    devs = [e for e in state.events if e.state == "deviation-noted"]
    if not devs or devs[-1].note != msg:
        number = state.order.number if state.order else None
        _append(session, state, OrderEvent(at or utcnow(), "deviation-noted", YOU, msg, number))
    return msg
