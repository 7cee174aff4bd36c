"""Text and JSON views of the order timeline (S2, S3).

Who calls it: the header's status line, the Order pane's lines and ``gpusession order
NAME show [--json]``.

Payment and provisioning are shown separately; ``payment-sent`` reads "payment sent —
not confirmed", never "paid" (S2). Depends on :mod:`gpusession.core.money.order` (the model);
the model never imports its text (no import cycle).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpusession.core.files.clock import utcnow
from gpusession.core.files.textio import printable
from gpusession.core.money.rates import format_usd
from gpusession.core.money.window import local_str, short_timedelta

if TYPE_CHECKING:
    from gpusession.core.money.order import OrderState, PaymentOrder


def order_status_line(state: OrderState, now: datetime | None = None) -> str:
    """One line for the header (S2): payment and provisioning shown separately.

    ``payment-sent`` reads "payment sent — not confirmed", never "paid".
    """
    if state.order is None and not state.events and state.payment is None:
        return "no order recorded"
    now = now or utcnow()
    head = f"order {state.order.number}: " if state.order else "order (number not recorded): "
    if state.has("closed"):
        return head + "closed"
    if state.paid:
        pay = "paid (provider tracking)"
    elif state.has("payment-sent"):
        pay = "payment sent — not confirmed"
    elif state.payment is not None:
        pay = ("payment order EXPIRED — not paid" if state.payment.expired(now)
               else "payment order issued — not paid")
    else:
        pay = "ordered — no payment order"
    if state.has("access-received"):
        prov = "access received"
    elif state.has("gpu-provisioned"):
        prov = "GPU provisioned"
    else:
        prov = "GPU not provisioned"
    text = f"{head}{pay} — {prov}"
    if state.has("deviation-noted"):
        text += " — deviation noted"
    return text


#: How the order lines name the way to record an order (CLI words); the Order pane passes its key.
SET_ORDER_LINE_HINT = "(gpusession order NAME set --number N --gpu M --lots L --days D)"


def order_lines(state: OrderState, now: datetime | None = None, tz: Any = None, *,
                set_hint: str = SET_ORDER_LINE_HINT) -> list[str]:
    """Readable lines for ``gpusession order NAME show`` and the Order pane (S2, S3).

    ``set_hint``: how to record the order, said while none is (a front end's own words,
    e.g. the Order pane's key, A1: never a rewrite of these lines).
    """
    now = now or utcnow()
    out = [f"Status: {order_status_line(state, now)}"]
    o = state.order
    if o is None:
        out.append(f"Order: not recorded {set_hint}")
    else:
        per_lot = f", {o.gpus_per_lot} GPU(s) per lot" if o.gpus_per_lot else ""
        out.append(f"Order {o.number}: {o.gpu_model}, {o.lots} lot(s){per_lot}, {o.days} days, "
                   f"preparation {o.preparation or 'not recorded'}")
        out.append(f"  total {format_usd(o.total_usd_minor)} (price per lot × lots; the GPUs of a "
                   "lot are not billed again)")
    p = state.payment
    if p is None:
        out.append("Payment order: none recorded")
    elif state.paid:
        # Once tracking confirmed it, the payment order is no longer "active"
        # and has no countdown; what is left open is provisioning (S2).
        when = [e.at for e in state.timeline if e.state == "payment-confirmed"]
        at = f" on {local_str(when[-1], tz)}" if when else ""
        out.append(f"Payment: PAID — exactly {p.amount} {p.asset} on network {p.network}, confirmed{at} by "
                   "the provider's tracking; nothing more to pay on this payment order")
        out.append(f"  to {p.destination}")
    else:
        left = p.expires_at - now
        exp = (f"EXPIRED {short_timedelta(-left)} ago — do not pay it; ask for a new payment order"
               if p.expired(now) else f"expires in {short_timedelta(left)}")
        out.append(f"Active payment order: exactly {p.amount} {p.asset} on network {p.network}")
        out.append(f"  to {p.destination}")
        out.append(f"  expires {local_str(p.expires_at, tz)} — {exp}")
    if state.payment_history:
        out.append(f"Replaced payment orders (history, do not use): {len(state.payment_history)}")
        for h in state.payment_history:
            out.append(f"  {h.amount} {h.asset} on {h.network}, issued {local_str(h.issued_at, tz)}")
    out.append("Timeline:" if state.events else "Timeline: empty")
    for e in state.timeline:
        note = f" — {e.note}" if e.note else ""
        out.append(f"  {local_str(e.at, tz)}  {e.state:<20} ({e.source}){note}")
    if state.paid and not state.has("closed"):
        out.append(f"Still open: {_still_open(state)}")
    if state.has("payment-sent") and not state.paid:
        out.append("\"I have paid\" keeps your notification; it does not confirm receipt nor "
                   "assign the GPU. Only the provider's tracking confirms payment.")
    return [printable(line) for line in out]  # hand-edited text shown escaped (H-17)


def _still_open(state: OrderState) -> str:
    """What remains after payment is confirmed: provisioning, then access (S2)."""
    if not state.has("gpu-provisioned") and not state.has("access-received"):
        return ("GPU provisioning — record gpu-provisioned when the provider assigns the GPU "
                "(the package window starts then), then access-received")
    if not state.has("access-received"):
        return "access — record access-received when you can log in to the server"
    return "nothing on the order side; the package window runs"


def order_to_json(state: OrderState, now: datetime | None = None) -> dict[str, Any]:
    """Plain data for ``order NAME show --json`` (datetimes ISO 8601)."""
    now = now or utcnow()

    def pay(p: PaymentOrder) -> dict[str, Any]:
        return {"asset": p.asset, "network": p.network, "amount": p.amount,
                "destination": p.destination, "expires_at": p.expires_at.isoformat(),
                "issued_at": p.issued_at.isoformat(), "expired": p.expired(now),
                "replaced_at": p.replaced_at.isoformat() if p.replaced_at else None}

    o = state.order
    return {
        "status": order_status_line(state, now),
        "paid": state.paid,
        "order": None if o is None else {
            "number": o.number, "gpu_model": o.gpu_model, "lots": o.lots, "days": o.days,
            "preparation": o.preparation, "gpus_per_lot": o.gpus_per_lot,
            "total_usd_minor": o.total_usd_minor},
        "payment": None if state.payment is None else pay(state.payment),
        "payment_history": [pay(p) for p in state.payment_history],
        "events": [{"at": e.at.isoformat(), "state": e.state, "source": e.source, "note": e.note,
                    "order_number": e.order_number} for e in state.timeline],
    }
