"""Cost core: rates file, package total, plan coverage, cost per accepted,
package window. Rules K1–K7 and S6; seed 003 §4 worked example."""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusession.core.files.errors import BadInput
from gpusession.core.folder.package import Package
from gpusession.core.money.cost import (
    NO_PROJECTION_LINE,
    NOT_IN_RATES,
    Rates,
    cost_per_accepted,
    cost_report,
    format_usd,
    load_rates,
    package_total,
    parse_plan,
    plan_coverage,
)
from gpusession.core.money.rates import (
    RatesSource,
    bundled_rates,
    merge_rates,
    read_rates_file,
    user_rates_file,
)
from gpusession.core.money.window import package_window

WORKED_PLAN = ["0.25", "1", "1", "0.5", "0.5"]


@pytest.fixture(scope="module")
def bundled() -> Rates:
    return bundled_rates()


def write_rates(path: Path, body: str) -> Path:
    path.write_text("schema = 1\n" + textwrap.dedent(body), encoding="utf-8")
    return path


B200_PRICED = """
[gpu."B200"]
gpus_per_lot = 2
[gpu."B200".package_price_usd]
7 = "100.00"
"""


def _no_floats(value: Any) -> bool:
    if isinstance(value, float):
        return False
    if isinstance(value, dict):
        return all(_no_floats(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_no_floats(v) for v in value)
    return True


# -- worked example (seed 003 §4) ---------------------------------------------------------
def test_worked_example_seed_003(bundled: Rates) -> None:
    rep = cost_report(bundled, "RTX A5000", 7, 1, accepted=18, plan=WORKED_PLAN)
    assert rep.total.total_usd_minor == 5500
    assert rep.per_accepted.per_accepted_usd_minor == 306
    assert format_usd(rep.per_accepted.per_accepted_usd_minor) == "3.06 USD"
    assert rep.plan is not None and rep.plan.total_days == Decimal("3.25")
    assert rep.plan.package_days == 7
    text = "\n".join(rep.lines())
    assert "55.00 USD ÷ 18 = 3.06 USD" in text
    assert "0.25 + 1 + 1 + 0.5 + 0.5 = 3.25 days" in text
    assert "3-day does not" in text


# -- K1: full package × lots, no pro-rating, B200 per lot -----------------------------------
def test_k1_total_is_full_package_price_times_lots(bundled: Rates) -> None:
    t = package_total(bundled, "RTX A5000", 3, 2)
    assert (t.price_usd_minor, t.total_usd_minor, t.gpu_count) == (2357, 4714, 2)


def test_k1_no_pro_rating_of_a_partial_plan(bundled: Rates) -> None:
    # 3.25 days of work is billed as the whole 7-day package, not 3.25/7 of it
    rep = cost_report(bundled, "RTX A5000", 7, 1, accepted=None, plan=WORKED_PLAN)
    assert rep.plan_packages_usd_minor == 5500
    assert rep.total.total_usd_minor == 5500


def test_k1_b200_lot_is_billed_per_lot_not_per_gpu(tmp_path: Path) -> None:
    rates = load_rates(write_rates(tmp_path / "r.toml", B200_PRICED))
    t = package_total(rates, "B200", 7, 2)
    assert t.gpus_per_lot == 2 and t.gpu_count == 4
    assert t.total_usd_minor == 20000  # 2 lots × 100.00, not 4 GPUs × 100.00
    lines = cost_report(rates, "B200", 7, 2, accepted=None, extensions=False).lines()
    assert "GPU: B200 — 2 lot(s) × 2 GPU(s) per lot = 4 GPU(s)" in lines[0]
    assert lines[1].endswith("= 200.00 USD (full package price, no pro-rating)")
    assert "400.00" not in "\n".join(lines)


@pytest.mark.parametrize("lots", [0, -1, True, 1.5])
def test_k1_lots_must_be_a_whole_number_at_least_one(bundled: Rates, lots: Any) -> None:
    with pytest.raises(BadInput, match="lots"):
        package_total(bundled, "RTX A5000", 7, lots)


@pytest.mark.parametrize("days", [1, 4, 14, 31, 0, -7])
def test_k1_days_must_be_3_7_or_30(bundled: Rates, days: int) -> None:
    with pytest.raises(BadInput, match="3, 7 or 30"):
        package_total(bundled, "RTX A5000", days, 1)


# -- K2: exact money -------------------------------------------------------------------
def test_k2_point_one_ten_times_is_exactly_one(tmp_path: Path) -> None:
    cov = plan_coverage(["0.1"] * 10)
    assert cov.total_days == Decimal("1.00") and cov.package_days == 3
    rates = load_rates(write_rates(tmp_path / "r.toml", """
        [gpu."Tiny"]
        gpus_per_lot = 1
        [gpu."Tiny".package_price_usd]
        3 = "0.10"
        """))
    assert package_total(rates, "Tiny", 3, 10).total_usd_minor == 100
    assert format_usd(100) == "1.00 USD"


@given(cents=st.integers(0, 10**7), lots=st.integers(1, 500))
@settings(max_examples=200, deadline=None)
def test_k2_decimal_price_times_lots_is_exact(cents: int, lots: int) -> None:
    price = f"{cents // 100}.{cents % 100:02d}"
    rates = Rates(gpus={}, origin="t")
    from gpusession.core.money.cost import GpuRate

    rates = Rates(gpus={"X": GpuRate("X", 1, {7: Decimal(price)})}, origin="t")
    assert package_total(rates, "X", 7, lots).total_usd_minor == cents * lots


@given(total=st.integers(0, 10**8), accepted=st.integers(1, 10**5))
@settings(max_examples=300, deadline=None)
def test_k2_cost_per_accepted_times_count_within_half_a_cent_per_item(
    total: int, accepted: int
) -> None:
    per = cost_per_accepted(total, accepted).per_accepted_usd_minor
    assert isinstance(per, int)
    assert 2 * abs(per * accepted - total) <= accepted


def test_k2_half_up_rounding_once_at_the_end() -> None:
    assert cost_per_accepted(5, 2).per_accepted_usd_minor == 3  # 2.5 → 3 (half up)
    assert cost_per_accepted(7857, 18).per_accepted_usd_minor == 437  # 436.5 → 437


def test_k2_float_price_in_rates_file_refused_with_file_and_line(tmp_path: Path) -> None:
    path = write_rates(tmp_path / "r.toml", """
        [gpu."RTX A5000"]
        gpus_per_lot = 1
        [gpu."RTX A5000".package_price_usd]
        7 = 55.0
        """)
    with pytest.raises(BadInput) as exc:
        load_rates(path)
    assert exc.value.path == path and exc.value.line == 6
    assert "quoted decimal string" in str(exc.value)


def test_k2_report_json_has_no_float(bundled: Rates) -> None:
    data = cost_report(bundled, "RTX A5000", 7, 1, accepted=18, plan=WORKED_PLAN).to_json()
    assert _no_floats(data)
    assert data["total_usd_minor"] == 5500 and data["cost_per_accepted_usd_minor"] == 306


# -- K3 / K4 -----------------------------------------------------------------------------
def test_k3_without_accepted_count_only_package_cost_with_reason(bundled: Rates) -> None:
    rep = cost_report(bundled, "RTX A5000", 7, 1, accepted=None)
    assert rep.per_accepted.per_accepted_usd_minor is None
    assert "--accepted-results" in (rep.per_accepted.reason or "")
    assert any(line.startswith("Cost per accepted deliverable: not shown") for line in rep.lines())
    assert all(e.new_per_accepted.per_accepted_usd_minor is None for e in rep.extensions)


def test_k3_zero_accepted_shows_no_cost_per_deliverable(bundled: Rates) -> None:
    rep = cost_report(bundled, "RTX A5000", 7, 1, accepted=0)
    assert rep.per_accepted.per_accepted_usd_minor is None
    assert "nothing accepted yet" in (rep.per_accepted.reason or "")


def test_k3_negative_accepted_refused() -> None:
    with pytest.raises(BadInput):
        cost_per_accepted(5500, -1)


def test_k4_line_says_repetitions_count_once(bundled: Rates) -> None:
    lines = cost_report(bundled, "RTX A5000", 7, 1, accepted=1).lines()
    assert any("a repetition counts once (one corpus, or one file by SHA-256)" in line for line in lines)


# -- K5: no projection ---------------------------------------------------------------------
def test_k5_extensions_use_the_accepted_count_as_it_stands(bundled: Rates) -> None:
    rep = cost_report(bundled, "RTX A5000", 7, 1, accepted=18)
    by_days = {e.days: e for e in rep.extensions}
    assert by_days[3].new_total_usd_minor == 5500 + 2357
    # the new cost per deliverable divides by the 18 accepted now, never a projected count
    assert by_days[3].new_per_accepted.per_accepted_usd_minor == 437
    assert by_days[7].new_per_accepted.per_accepted_usd_minor == 611
    assert by_days[30].price_usd_minor is None and NOT_IN_RATES in by_days[30].line()
    assert NO_PROJECTION_LINE in rep.lines()
    assert rep.to_json()["projection"] is None


# -- K6: plan coverage -----------------------------------------------------------------------
def test_k6_3_25_days_is_not_covered_by_3(bundled: Rates) -> None:
    cov = plan_coverage(WORKED_PLAN)
    assert cov.total_days == Decimal("3.25") and cov.package_days == 7


@pytest.mark.parametrize(
    ("plan", "days"), [(["3"], 3), (["2.99"], 3), (["3.01"], 7), (["7"], 7), (["7.5"], 30), (["30"], 30)]
)
def test_k6_smallest_covering_package(plan: list[str], days: int) -> None:
    assert plan_coverage(plan).package_days == days


def test_k6_longer_than_30_days_says_how_to_cover_it() -> None:
    cov = plan_coverage(["20", "11"])
    assert cov.package_days is None and cov.thirty_day_packages == 2
    assert cov.combination == (30, 3)
    assert "2 × 30-day packages" in cov.line() and "30 + 3" in cov.line()
    big = plan_coverage(["65"])
    assert big.thirty_day_packages == 3 and big.combination == (30, 30, 7)


def test_k6_plan_parsing_refuses_bad_durations() -> None:
    assert parse_plan("0.25, 1,1 ,0.5,0.5") == [Decimal(x) for x in WORKED_PLAN]
    for bad in ("", "abc", "1,-2", "1,0", "nan"):
        with pytest.raises(BadInput):
            plan_coverage(parse_plan(bad))


def test_k6_current_package_too_short_for_plan_is_said(bundled: Rates) -> None:
    lines = cost_report(bundled, "RTX A5000", 3, 1, accepted=None, plan=WORKED_PLAN).lines()
    assert any("current 3-day package does not cover" in line for line in lines)


# -- K7: rates file ---------------------------------------------------------------------------
def test_k7_bundled_rates_hold_only_the_source_prices(bundled: Rates) -> None:
    a = bundled.find("RTX A5000")
    b = bundled.find("b200")
    assert a is not None and b is not None
    assert a.gpus_per_lot == 1 and dict(a.package_price_usd) == {3: Decimal("23.57"), 7: Decimal("55.00")}
    assert b.gpus_per_lot == 2 and dict(b.package_price_usd) == {}
    assert set(bundled.models()) == {"RTX A5000", "B200"}


def test_k7_missing_price_is_not_in_the_rates_file_never_guessed(bundled: Rates) -> None:
    t = package_total(bundled, "RTX A5000", 30, 1)
    assert t.total_usd_minor is None and NOT_IN_RATES in (t.missing_reason or "")
    b = package_total(bundled, "B200", 7, 1)
    assert b.total_usd_minor is None and b.gpu_count == 2
    u = package_total(bundled, "H100", 7, 1)
    assert not u.gpu_known and NOT_IN_RATES in (u.missing_reason or "")
    rep = cost_report(bundled, "B200", 7, 1, accepted=3)
    assert rep.per_accepted.per_accepted_usd_minor is None
    assert NOT_IN_RATES in (rep.per_accepted.reason or "")


def test_k7_precedence_explicit_then_session_then_user_then_bundled_price_by_price(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "sess"
    folder.mkdir()
    assert load_rates(session_folder=folder).origin == "bundled rates file"
    write_rates(folder / "rates.toml", B200_PRICED)
    in_session = load_rates(session_folder=folder)
    b200 = in_session.find("B200")
    assert b200 is not None and b200.package_price_usd == {7: Decimal("100.00")}
    assert b200.price_sources[7].kind == "session"
    a5000 = in_session.find("RTX A5000")  # a session's file never hides the bundled A5000
    assert a5000 is not None and a5000.package_price_usd[7] == Decimal("55.00")
    assert a5000.price_sources[7].kind == "bundled"
    user = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    user_file = user_rates_file()
    assert user_file == user / "gpusession" / "rates.toml"
    user_file.parent.mkdir(parents=True)
    write_rates(user_file, """
        [gpu."b200"]
        gpus_per_lot = 2
        [gpu."b200".package_price_usd]
        7 = "999.00"
        3 = "50.00"
        [gpu."RTX A5000"]
        gpus_per_lot = 1
        [gpu."RTX A5000".package_price_usd]
        7 = "60.00"
        """)
    both = load_rates(session_folder=folder)
    b200 = both.find("B200")
    assert b200 is not None and b200.gpu_model == "B200"  # the session's spelling, above
    assert b200.package_price_usd == {7: Decimal("100.00"), 3: Decimal("50.00")}  # 7 session, 3 user
    assert (b200.price_sources[7].kind, b200.price_sources[3].kind) == ("session", "user")
    a5000 = both.find("RTX A5000")
    assert a5000 is not None and a5000.package_price_usd == {7: Decimal("60.00"), 3: Decimal("23.57")}
    assert both.price_origin("RTX A5000", 7) == f"your rates file {user_file}"
    assert both.price_origin("RTX A5000", 3) == "bundled rates file"
    assert [s.kind for s in both.sources] == ["session", "user", "bundled"]
    explicit = write_rates(tmp_path / "mine.toml", """
        [gpu."H100"]
        gpus_per_lot = 1
        """)
    r = load_rates(explicit, session_folder=folder)  # --rates takes the session file's place
    assert r.models() == ["H100", "b200", "RTX A5000"]
    assert r.origin == f"{explicit}, then your rates file {user_file}, then bundled rates file"
    h100 = r.find("h100")
    assert h100 is not None and h100.package_price_usd == {}  # a card without a price: none invented


def test_k7_a_lower_file_for_another_lot_size_gives_no_price(tmp_path: Path) -> None:
    """A price for a lot of 1 B200 never prices a lot of 2: the lower file's prices are left out."""
    low = read_rates_file(write_rates(tmp_path / "low.toml", """
        [gpu."B200"]
        gpus_per_lot = 1
        [gpu."B200".package_price_usd]
        3 = "40.00"
        7 = "80.00"
        """), RatesSource("user", tmp_path / "low.toml"))
    high_path = write_rates(tmp_path / "high.toml", B200_PRICED.replace('7 = "100.00"', ""))
    high = read_rates_file(high_path, RatesSource("session", high_path))
    merged = merge_rates([high, low])
    b200 = merged.find("B200")
    assert b200 is not None and b200.gpus_per_lot == 2 and b200.package_price_usd == {}


@pytest.mark.parametrize(
    ("body", "line", "needle"),
    [
        ('[gpu."X"]\ngpus_per_lot = 1\n[gpu."X".package_price_usd]\n7 = "12,50"\n', 5, "decimal point"),
        ('[gpu."X"]\ngpus_per_lot = 1\n[gpu."X".package_price_usd]\n5 = "12.50"\n', 5, "3, 7 or 30"),
        ('[gpu."X"]\ngpus_per_lot = 0\n', 3, "gpus_per_lot"),
        ('[gpu."X"\n', 2, "syntax"),
    ],
)
def test_k7_bad_rates_file_names_file_and_line(tmp_path: Path, body: str, line: int, needle: str) -> None:
    path = write_rates(tmp_path / "r.toml", body)
    with pytest.raises(BadInput) as exc:
        load_rates(path)
    assert exc.value.path == path and exc.value.line == line
    assert needle in str(exc.value)


# -- S6: package window ---------------------------------------------------------------------
T0 = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)


def test_s6_window_start_end_time_left_in_utc_shown_local() -> None:
    pkg = Package(gpu_model="RTX A5000", lots=1, days=7, start=T0)
    tz = timezone(timedelta(hours=1), "CET")
    w = package_window(pkg, T0 + timedelta(days=2, hours=3), tz=tz)
    assert w.end_utc == T0 + timedelta(days=7)
    assert w.time_left == timedelta(days=4, hours=21) and not w.ended
    assert w.end_local.startswith("2026-12-06 15:00 CET")
    line = w.window_line()
    assert "RTX A5000" in line and "7-day package" in line and "4d 21h 00m left" in line
    assert "3h 00m left" in package_window(pkg, T0 + timedelta(days=6, hours=21)).window_line()


def test_s6_window_ended_and_unknown() -> None:
    pkg = Package(gpu_model="RTX A5000", lots=1, days=3, start=T0)
    w = package_window(pkg, T0 + timedelta(days=3, minutes=5))
    assert w.ended and "ENDED 5m ago" in w.window_line()
    nostart = package_window(Package(gpu_model="B200", lots=1, days=7), T0)
    assert not nostart.known and nostart.time_left is None
    assert "package window not set (no start)" in nostart.window_line()


def test_s6_extension_options_say_when_the_extended_package_would_end(bundled: Rates) -> None:
    pkg = Package(gpu_model="RTX A5000", lots=1, days=7, start=T0)
    w = package_window(pkg, T0 + timedelta(days=6))
    rep = cost_report(bundled, "RTX A5000", 7, 1, accepted=18, window=w, tz=timezone.utc)
    by_days = {e.days: e for e in rep.extensions}
    assert by_days[3].new_end_utc == T0 + timedelta(days=10)
    assert "would end 2026-12-09 14:00" in by_days[3].line()
    assert rep.to_json()["extensions"][0]["new_end"] == (T0 + timedelta(days=10)).isoformat()
    assert by_days[30].line().startswith("  +30 days × 1 lot(s): price not in the rates file")


def test_k7_an_extension_without_a_price_names_the_command_that_adds_it(bundled: Rates) -> None:
    rep = cost_report(bundled, "RTX A5000", 7, 1, accepted=18)
    by_days = {e.days: e for e in rep.extensions}
    assert by_days[30].price_usd_minor is None
    assert '(to price it: gpusession rates set "RTX A5000" --days 30 --price USD)' in by_days[30].line()
    assert by_days[3].price_hint is None and "rates set" not in by_days[3].line()
