"""Order and payment timeline: S2, S3, S5 and the secrets guard."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from helpers import SESSION_START
from mnemonic import Mnemonic

from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import check_no_secret, find_secret
from gpusession.core.folder.session import Session
from gpusession.core.money import order as om
from gpusession.core.money.cost import load_rates
from gpusession.core.money.order_text import order_lines, order_status_line, order_to_json

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

T0 = SESSION_START  # the shared session's package start
HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


@pytest.fixture
def ordered(session: Session) -> Session:
    om.set_order(session, number="A-1234", gpu_model="RTX A5000", lots=1, days=7,
                 preparation="PyTorch 2.4")
    return session


def _pay(s: Session, amount: str = "55.00", expires: datetime | None = None) -> om.OrderState:
    state, _ = om.new_payment_order(
        s, asset="USDT", network="TRC20", amount=amount, destination="TXyzDest",
        expires_at=expires or utcnow() + timedelta(hours=2),
    )
    return state


def _order_bytes(s: Session) -> bytes:
    return (s.folder / "order.toml").read_bytes()


# -- order ---------------------------------------------------------------------------------
def test_order_total_is_price_per_lot_times_lots(session: Session) -> None:
    state, warnings = om.set_order(session, number="A-1", gpu_model="RTX A5000", lots=2, days=3)
    assert state.order is not None and state.order.total_usd_minor == 4714 and not warnings
    again = om.load_order(session)
    assert again.order == state.order
    assert [e.state for e in again.events] == ["ordered"]
    assert again.events[0].order_number == "A-1"
    assert order_status_line(again) == "order A-1: ordered — no payment order — GPU not provisioned"


def test_order_unknown_price_is_recorded_without_total(session: Session) -> None:
    state, warnings = om.set_order(session, number="B-1", gpu_model="B200", lots=1, days=7)
    assert state.order is not None and state.order.total_usd_minor is None
    assert state.order.gpus_per_lot == 2
    assert any("not in the rates file" in w for w in warnings)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [({"lots": 0}, "lots"), ({"lots": -2}, "lots"), ({"days": 5}, "3, 7 or 30"),
     ({"number": ""}, "number"), ({"preparation": HEX_KEY}, "private key")],
)
def test_order_bad_input_writes_nothing(session: Session, kw: dict, needle: str) -> None:
    before = _order_bytes(session)
    args = {"number": "A-1", "gpu_model": "RTX A5000", "lots": 1, "days": 7, **kw}
    with pytest.raises(BadInput, match=needle):
        om.set_order(session, **args)
    assert _order_bytes(session) == before


def test_no_order_recorded_status(session: Session) -> None:
    assert order_status_line(om.load_order(session)) == "no order recorded"


# -- S2: timeline, sent ≠ confirmed, provisioning separate ------------------------------------
def test_s2_payment_sent_is_never_shown_as_paid(ordered: Session) -> None:
    _pay(ordered)
    warnings = om.record_event(ordered, "payment-sent", source="you", note="clicked I have paid")
    assert any("not payment confirmed" in w for w in warnings)
    state = om.load_order(ordered)
    line = order_status_line(state)
    assert not state.paid
    assert "payment sent — not confirmed" in line and "paid (" not in line
    assert not line.startswith("paid")
    assert any("does not confirm receipt" in x for x in order_lines(state))


def test_s2_payment_confirmed_refused_from_you_nothing_written(ordered: Session) -> None:
    before = _order_bytes(ordered)
    with pytest.raises(BadInput, match="provider's tracking"):
        om.record_event(ordered, "payment-confirmed", source="you")
    assert _order_bytes(ordered) == before


def test_s2_confirmed_by_tracking_is_paid_but_gpu_not_provisioned(ordered: Session) -> None:
    _pay(ordered)
    om.record_event(ordered, "payment-sent", source="you")
    om.record_event(ordered, "payment-confirmed", source="tracking")
    state = om.load_order(ordered)
    assert state.paid
    assert order_status_line(state) == (
        "order A-1234: paid (provider tracking) — GPU not provisioned")
    om.record_event(ordered, "gpu-provisioned", source="tracking")
    assert order_status_line(om.load_order(ordered)).endswith("— GPU provisioned")


def test_s2_gpu_provisioned_by_you_only_once_you_have_access(ordered: Session) -> None:
    with pytest.raises(BadInput, match="access-received"):
        om.record_event(ordered, "gpu-provisioned", source="you")
    warnings = om.record_event(ordered, "access-received", source="you")
    assert any("separate from payment" in w for w in warnings)
    om.record_event(ordered, "gpu-provisioned", source="you")
    state = om.load_order(ordered)
    assert [e.state for e in state.timeline][-2:] == ["access-received", "gpu-provisioned"]
    assert not state.paid  # access is not payment confirmation


def test_s2_timeline_keeps_time_source_note_and_order_number(ordered: Session) -> None:
    at = T0 + timedelta(hours=1)
    om.record_event(ordered, "closed", source="you", note="done, copy checked", at=at)
    ev = om.load_order(ordered).events[-1]
    assert (ev.at, ev.state, ev.source, ev.note, ev.order_number) == (
        at, "closed", "you", "done, copy checked", "A-1234")
    assert any(r["event"] == "order_event" and r["state"] == "closed" for r in ordered.read_journal())


def test_s2_unknown_state_or_source_refused(ordered: Session) -> None:
    with pytest.raises(BadInput, match="unknown state"):
        om.record_event(ordered, "paid", source="you")
    with pytest.raises(BadInput, match="source"):
        om.record_event(ordered, "ordered", source="bank")


# -- S3: payment order ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "needle"),
    [({"asset": ""}, "asset"), ({"network": " "}, "network"), ({"amount": "12,5"}, "decimal point"),
     ({"amount": "1e3"}, "exact amount"), ({"amount": "-5"}, "exact amount"),
     ({"amount": "0.00"}, "greater than zero"), ({"destination": ""}, "destination")],
)
def test_s3_payment_order_needs_asset_network_exact_amount_destination(
    ordered: Session, kw: dict, needle: str
) -> None:
    before = _order_bytes(ordered)
    args = {"asset": "USDT", "network": "TRC20", "amount": "12.50", "destination": "TX",
            "expires_at": utcnow() + timedelta(hours=1), **kw}
    with pytest.raises(BadInput, match=needle):
        om.new_payment_order(ordered, **args)
    assert _order_bytes(ordered) == before


def test_s3_already_expired_payment_order_refused(ordered: Session) -> None:
    before = _order_bytes(ordered)
    with pytest.raises(BadInput, match="expired"):
        _pay(ordered, expires=utcnow() - timedelta(minutes=1))
    assert _order_bytes(ordered) == before


def test_s3_amount_kept_as_typed_and_compared_digit_for_digit(ordered: Session) -> None:
    state = _pay(ordered, amount="12.50")
    assert state.payment is not None and state.payment.amount == "12.50"
    assert om.load_order(ordered).payment.amount == "12.50"  # type: ignore[union-attr]
    assert om.amounts_match("12.50", "12.50") and not om.amounts_match("12.50", "12.5")
    warnings = om.record_event(ordered, "payment-sent", source="you", amount="12.5")
    assert any("differs" in w and "12.50" in w for w in warnings)
    warnings = om.record_event(ordered, "payment-sent", source="you", amount="12.50")
    assert not any("differs" in w for w in warnings)


def test_s3_new_payment_order_replaces_active_and_keeps_history(ordered: Session) -> None:
    _pay(ordered, amount="55.00")
    state, warnings = om.new_payment_order(
        ordered, asset="USDC", network="ERC20", amount="55.10", destination="0xabc",
        expires_at=utcnow() + timedelta(hours=3))
    assert any("replaced" in w for w in warnings)
    loaded = om.load_order(ordered)
    assert loaded.payment is not None and loaded.payment.amount == "55.10"
    assert loaded.payment.asset == "USDC" and loaded.payment.network == "ERC20"
    assert [p.amount for p in loaded.payment_history] == ["55.00"]
    assert loaded.payment_history[0].replaced_at is not None


def test_s3_sending_after_expiry_warns_to_use_active_order(ordered: Session) -> None:
    state = _pay(ordered)
    assert state.payment is not None
    late = state.payment.expires_at + timedelta(minutes=10)
    warnings = om.record_event(ordered, "payment-sent", source="you", at=late)
    assert any("expired" in w and "active order's exact amount" in w for w in warnings)
    line = order_status_line(om.load_order(ordered), now=late)
    assert "not confirmed" in line


def test_s3_expired_payment_order_shows_in_status(ordered: Session) -> None:
    state = _pay(ordered)
    assert state.payment is not None
    later = state.payment.expires_at + timedelta(seconds=1)
    assert "payment order EXPIRED" in order_status_line(state, now=later)
    assert any("EXPIRED" in x for x in order_lines(state, now=later))


def test_s3_payment_sent_without_payment_order_warns(ordered: Session) -> None:
    warnings = om.record_event(ordered, "payment-sent", source="you")
    assert any("no payment order recorded" in w for w in warnings)


# -- S5: deviation -------------------------------------------------------------------------------
def test_s5_matching_gpu_records_nothing(ordered: Session) -> None:
    assert om.record_deviation(ordered, "NVIDIA RTX A5000", 1) is None
    assert not om.load_order(ordered).has("deviation-noted")


def test_s5_deviation_recorded_against_order_number_once(ordered: Session) -> None:
    msg = om.record_deviation(ordered, "NVIDIA RTX A4000", 2)
    assert msg is not None and "order A-1234" in msg
    assert "RTX A4000" in msg and "GPU count seen 2" in msg
    om.record_deviation(ordered, "NVIDIA RTX A4000", 2)
    devs = [e for e in om.load_order(ordered).events if e.state == "deviation-noted"]
    assert len(devs) == 1 and devs[0].order_number == "A-1234" and devs[0].note == msg
    assert "deviation noted" in order_status_line(om.load_order(ordered))


def test_s5_b200_expected_count_is_lots_times_two(session: Session) -> None:
    om.set_order(session, number="B-9", gpu_model="B200", lots=2, days=7)
    assert om.record_deviation(session, "NVIDIA B200", 4) is None
    msg = om.record_deviation(session, "NVIDIA B200", 2)
    assert msg is not None and "2 lot(s) × 2 GPU(s) per lot = 4" in msg


def test_s5_without_order_compares_with_the_package(session: Session) -> None:
    msg = om.record_deviation(session, "RTX A5000", 3)
    assert msg is not None and "no order number recorded yet" in msg
    empty = Session.create(session.folder.parent, "empty")
    with pytest.raises(BadInput, match="no order recorded"):
        om.record_deviation(empty, "RTX A5000", 1)


def test_s5_compare_uses_rates_file_gpus_per_lot(ordered: Session) -> None:
    state = om.load_order(ordered)
    assert om.compare_with_order(state, load_rates(), "RTX A5000", 1) is None
    assert om.compare_with_order(state, load_rates(), None, 1) is None


# -- secrets ------------------------------------------------------------------------------------
@pytest.mark.parametrize("strength", [128, 160, 192, 224, 256])
def test_secrets_bip39_mnemonic_refused_any_standard_length(strength: int) -> None:
    phrase = Mnemonic("english").generate(strength)
    assert len(phrase.split()) in (12, 15, 18, 21, 24)
    reason = find_secret(f"my wallet: {phrase}")
    assert reason is not None and "seed phrase" in reason
    numbered = " ".join(f"{i}. {w}" for i, w in enumerate(phrase.split(), 1))
    assert find_secret(numbered) is not None


def test_secrets_private_key_refused_and_never_echoed() -> None:
    for text in (HEX_KEY, "0x" + HEX_KEY, f"key={HEX_KEY}",
                 "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"):
        with pytest.raises(BadInput) as exc:
            check_no_secret(text, field="note")
        assert HEX_KEY not in str(exc.value) and "5HueCGU8" not in str(exc.value)


def test_secrets_ordinary_notes_pass() -> None:
    for text in ("paid 55.00 USDT on TRC20 at 14:02, tx 4c0883a6…3f362318",
                 "the provider says the GPU will be ready within one hour after confirmation",
                 "abandon ability able about above absent absorb abstract absurd abuse access",
                 "TXyzDestinationAddr1234567890abcdef", ""):
        assert find_secret(text) is None, text


def test_secrets_mnemonic_in_event_note_writes_nothing(ordered: Session) -> None:
    before = _order_bytes(ordered)
    journal_before = ordered.journal_path.read_bytes()
    phrase = Mnemonic("english").generate(128)
    with pytest.raises(BadInput, match="seed phrase"):
        om.record_event(ordered, "payment-sent", source="you", note=phrase)
    with pytest.raises(BadInput, match="seed phrase"):
        om.new_payment_order(ordered, asset="USDT", network="TRC20", amount="1.00",
                             destination=phrase, expires_at=utcnow() + timedelta(hours=1))
    assert _order_bytes(ordered) == before
    assert ordered.journal_path.read_bytes() == journal_before


# -- file --------------------------------------------------------------------------------------
def test_order_toml_bad_state_reported_with_file_and_field(ordered: Session) -> None:
    path = ordered.folder / "order.toml"
    text = path.read_text().replace('state = "ordered"', 'state = "paid"')
    path.write_text(text)
    with pytest.raises(BadInput) as exc:
        om.load_order(ordered)
    assert exc.value.path == path and exc.value.field == "events[0].state"


def test_order_json_has_status_and_paid_flag(ordered: Session) -> None:
    _pay(ordered)
    om.record_event(ordered, "payment-sent", source="you")
    data = order_to_json(om.load_order(ordered))
    assert data["paid"] is False and data["payment"]["amount"] == "55.00"
    assert [e["state"] for e in data["events"]] == ["ordered", "payment-order-issued", "payment-sent"]


def test_secrets_destination_of_64_hex_is_refused_like_a_private_key(
    ordered: Session,
) -> None:
    """64 hex digits cannot be told from a private key, in an address too."""
    for key in (HEX_KEY, "0x" + HEX_KEY):
        with pytest.raises(BadInput, match="private key"):
            om.new_payment_order(ordered, asset="SUI", network="Sui", amount="10",
                                 destination=key, expires_at=utcnow() + timedelta(hours=1))
    eth = "0x52908400098527886E0F7030069857D2E4169EE7"
    state, _ = om.new_payment_order(ordered, asset="ETH", network="ERC20", amount="10",
                                    destination=eth, expires_at=utcnow() + timedelta(hours=1))
    assert state.payment is not None and state.payment.destination == eth
    with pytest.raises(BadInput, match="private key"):
        om.record_event(ordered, "payment-sent", source="you", note=f"key {HEX_KEY}")


def test_s5_ordered_event_without_order_warns(session: Session) -> None:
    warnings = om.record_event(session, "ordered", source="you", note="ordered on the site")
    assert any("no order recorded" in w for w in warnings)
    assert order_status_line(om.load_order(session)).startswith("order (number not recorded)")


def test_s5_nvml_name_with_vendor_and_memory_suffix_is_not_a_deviation() -> None:
    from gpusession.core.money.rates import model_matches

    assert model_matches("H100", "NVIDIA H100 80GB HBM3")
    assert model_matches("RTX A5000", "NVIDIA RTX A5000")
    assert not model_matches("H100", "NVIDIA A100-SXM4-80GB")
    assert not model_matches("RTX A5000", "NVIDIA RTX A4000")


def test_s5_order_h100_seen_as_full_nvml_name_records_no_deviation(session: Session) -> None:
    om.set_order(session, number="H-1", gpu_model="H100", lots=1, days=3)
    assert om.record_deviation(session, "NVIDIA H100 80GB HBM3", None) is None
    assert [e for e in om.load_order(session).events if e.state == "deviation-noted"] == []


def test_s2_after_payment_confirmed_the_order_says_paid_and_what_is_open(ordered: Session) -> None:
    """A confirmed payment is no longer an active payment order with a countdown."""
    _pay(ordered)
    om.record_event(ordered, "payment-sent", source="you")
    om.record_event(ordered, "payment-confirmed", source="tracking")
    text = "\n".join(order_lines(om.load_order(ordered)))
    assert "Active payment order" not in text and "expires in" not in text
    assert "Payment: PAID — exactly 55.00 USDT on network TRC20, confirmed on" in text
    assert "Still open: GPU provisioning" in text
    om.record_event(ordered, "gpu-provisioned", source="tracking")
    text = "\n".join(order_lines(om.load_order(ordered)))
    assert "Still open: access" in text and "GPU provisioning" not in text
    # still no countdown once provisioned
    assert "expires in" not in text


def test_s2_payment_sent_keeps_the_countdown(ordered: Session) -> None:
    _pay(ordered)
    om.record_event(ordered, "payment-sent", source="you")
    text = "\n".join(order_lines(om.load_order(ordered)))
    assert "Active payment order" in text and "expires in" in text and "PAID" not in text


@pytest.mark.parametrize(("issued", "sent"), [("1.10", "1.1"), ("55.00", "55.0")])
def test_s3_same_value_in_other_digits_is_a_difference_in_digits_said_with_the_equality(
        ordered: Session, issued: str, sent: str) -> None:
    _pay(ordered, amount=issued)
    warnings = om.record_event(ordered, "payment-sent", source="you", amount=sent)
    said = [w for w in warnings if "differs" in w]
    assert len(said) == 1, warnings
    assert f"amount {sent} differs in its digits from the payment order's exact amount {issued}" in said[0]
    assert "the same value" in said[0]
    other = om.amount_difference(issued, "2.10")
    assert other is not None and "another value" in other and "the same value" not in other
    assert om.amount_difference(issued, issued) is None
