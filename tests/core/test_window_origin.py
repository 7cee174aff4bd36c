"""Which event the package window counts from, and the offer to restart it (S6)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gpusession.core.money.window import window_origin

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def test_s6_window_counts_from_session_creation_until_the_gpu_is_provisioned() -> None:
    o = window_origin(T0, T0 + timedelta(seconds=2), None)
    assert o.event == "session-created" and not o.offer
    assert o.words() == "window from session creation"
    assert "record gpu-provisioned" in (o.offer_line("s") or "")


def test_s6_gpu_provisioned_later_offers_to_restart_the_window() -> None:
    later = T0 + timedelta(hours=5)
    o = window_origin(T0, T0, later)
    assert o.event == "session-created" and o.offer and o.provisioned_at == later
    assert "--start-from gpu-provisioned" in (o.offer_line("s") or "")
    moved = window_origin(later, T0, later)
    assert moved.event == "gpu-provisioned" and not moved.offer and moved.offer_line("s") is None
    assert moved.words() == "window from gpu-provisioned"


def test_s6_a_start_given_by_hand_is_said_so() -> None:
    o = window_origin(T0 - timedelta(days=1), T0, None)
    assert o.event == "given" and o.words() == "window from the start you set" and not o.offer
    assert window_origin(None, T0, None).words() == "window not set"
