"""``gpusession cost`` and ``gpusession order`` through a subprocess."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from helpers import RunCli, one_line
from mnemonic import Mnemonic

from gpusession.core.files.clock import utcnow
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

A5000 = ("--gpu", "RTX A5000")


def _one_line_error(p: CompletedProcess[str], needle: str) -> None:
    assert p.returncode == 2, p.stderr
    line = one_line(p.stderr)
    assert needle in line, line


def test_cli_cost_worked_example(run_cli: RunCli) -> None:
    p = run_cli("cost", *A5000, "--days", "7", "--lots", "1", "--accepted-results", "18",
                "--plan", "0.25,1,1,0.5,0.5")
    assert p.returncode == 0, p.stderr
    assert "55.00 USD ÷ 18 = 3.06 USD" in p.stdout
    assert "= 3.25 days → the 7-day package covers it (3-day does not)" in p.stdout
    assert "No projection" in p.stdout
    j = run_cli("cost", *A5000, "--days", "7", "--lots", "1", "--accepted-results", "18", "--json")
    data = json.loads(j.stdout)
    assert data["total_usd_minor"] == 5500 and data["cost_per_accepted_usd_minor"] == 306


def test_k3_cli_without_accepted_shows_only_package_cost(run_cli: RunCli) -> None:
    p = run_cli("cost", *A5000, "--days", "3", "--lots", "2")
    assert p.returncode == 0
    assert "= 47.14 USD" in p.stdout
    assert "Cost per accepted deliverable: not shown" in p.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--days", "7", "--lots", "0"), "lots"),
        (("--days", "7", "--lots", "-1"), "lots"),
        (("--days", "5", "--lots", "1"), "3, 7 or 30"),
        (("--days", "7", "--lots", "1", "--plan", "0,25"), "plan"),
    ],
)
def test_cli_cost_bad_input_is_one_line_exit_2(run_cli: RunCli, args: tuple[str, ...], needle: str) -> None:
    _one_line_error(run_cli("cost", *A5000, *args), needle)


def test_k7_cli_unknown_gpu_is_not_in_the_rates_file(run_cli: RunCli) -> None:
    _one_line_error(run_cli("cost", "--gpu", "H100", "--days", "7", "--lots", "1"),
                    "not in the rates file")


def test_k7_cli_rates_file_option_and_bad_file(run_cli: RunCli, tmp_path: Path) -> None:
    rates = tmp_path / "r.toml"
    rates.write_text('schema = 1\n[gpu."H100"]\ngpus_per_lot = 1\n'
                     '[gpu."H100".package_price_usd]\n7 = "99.99"\n')
    p = run_cli("cost", "--gpu", "H100", "--days", "7", "--lots", "2", "--rates", str(rates))
    assert p.returncode == 0 and "= 199.98 USD" in p.stdout
    rates.write_text('schema = 1\n[gpu."H100"]\ngpus_per_lot = 1\n'
                     '[gpu."H100".package_price_usd]\n7 = 99.99\n')
    p = run_cli("cost", "--gpu", "H100", "--days", "7", "--lots", "2", "--rates", str(rates))
    _one_line_error(p, f"{rates}:5:")


@pytest.mark.slow
def test_k4_cli_session_repetitions_count_once(run_cli: RunCli, sessions_root: Path) -> None:
    assert run_cli("new", "s1", *A5000, "--lots", "1", "--days", "7").returncode == 0
    s = Session.open(sessions_root, "s1")
    for i in range(5):  # five repetitions of one accepted corpus: one deliverable
        s.results.append(ResultRow(experiment_id="e", variant_id="b1", corpus_revision="c1",
                                   phase="warm", run_index=i, corpus_accepted=True,
                                   package_total_usd_minor=5500))
    s.results.append(ResultRow(experiment_id="e", variant_id="b4", corpus_revision="c2",
                               phase="warm", run_index=0, corpus_accepted=False))
    p = run_cli("cost", "--session", "s1", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["accepted_count"] == data["accepted_corpora"] == 1
    assert data["total_usd_minor"] == 5500 and data["cost_per_accepted_usd_minor"] == 5500
    assert data["window"]["days"] == 7 and data["window"]["ended"] is False
    text = run_cli("cost", "--session", "s1", "--accepted-results", "18").stdout
    assert "3.06 USD" in text and "Package window:" in text and "left" in text
    positional = run_cli("cost", "s1", "--json")  # as most commands take the session
    assert positional.returncode == 0
    timeless = {k: v for k, v in json.loads(positional.stdout).items() if k not in ("window", "lines")}
    assert timeless == {k: v for k, v in data.items() if k not in ("window", "lines")}
    _one_line_error(run_cli("cost", "s1", "--session", "s2"), "two sessions given")
    _one_line_error(run_cli("cost"), "gpusession cost NAME")


def test_cli_session_rates_file_is_used(run_cli: RunCli, sessions_root: Path) -> None:
    assert run_cli("new", "s2", "--gpu", "B200", "--lots", "2", "--days", "7").returncode == 0
    p = run_cli("cost", "--session", "s2")
    assert p.returncode == 0 and "not in the rates file" in p.stdout
    (sessions_root / "s2" / "rates.toml").write_text(
        'schema = 1\n[gpu."B200"]\ngpus_per_lot = 2\n[gpu."B200".package_price_usd]\n7 = "300.00"\n')
    p = run_cli("cost", "--session", "s2")
    assert "2 lot(s) × 2 GPU(s) per lot = 4 GPU(s)" in p.stdout and "= 600.00 USD" in p.stdout


@pytest.mark.slow
def test_s2_s3_cli_order_flow(run_cli: RunCli, sessions_root: Path) -> None:
    assert run_cli("new", "o1", *A5000, "--lots", "1", "--days", "7").returncode == 0
    p = run_cli("order", "o1", "set", "--number", "A-77", *A5000, "--lots", "1", "--days", "7",
                "--preparation", "PyTorch")
    assert p.returncode == 0 and "55.00 USD" in p.stdout
    order_toml = sessions_root / "o1" / "order.toml"

    before = order_toml.read_bytes()
    expires = (utcnow() + timedelta(hours=2)).isoformat()
    pay = ("--asset", "USDT", "--network", "TRC20", "--destination", "TXdest", "--expires")
    _one_line_error(run_cli("order", "o1", "payment", *pay, expires, "--amount", "12,5"),
                    "decimal point")
    past = (utcnow() - timedelta(hours=1)).isoformat()
    _one_line_error(run_cli("order", "o1", "payment", *pay, past, "--amount", "12.50"), "expired")
    _one_line_error(run_cli("order", "o1", "event", "payment-sent", "--note",
                            Mnemonic("english").generate(128)), "seed phrase")
    _one_line_error(run_cli("order", "o1", "event", "payment-confirmed"), "provider's tracking")
    assert order_toml.read_bytes() == before

    assert run_cli("order", "o1", "payment", *pay, expires, "--amount", "12.50").returncode == 0
    p = run_cli("order", "o1", "event", "payment-sent", "--amount", "12.5")
    assert p.returncode == 0 and "differs" in p.stderr
    assert "payment sent — not confirmed" in p.stdout
    p = run_cli("order", "o1", "event", "payment-confirmed", "--source", "tracking")
    assert "paid (provider tracking) — GPU not provisioned" in p.stdout
    p = run_cli("order", "o1", "deviation", "--gpu", "NVIDIA RTX A5000", "--count", "2")
    assert p.returncode == 0 and "order A-77" in p.stdout
    show = run_cli("order", "o1", "show", "--json")
    data = json.loads(show.stdout)
    assert data["paid"] is True and data["payment"]["amount"] == "12.50"
    assert [e["state"] for e in data["events"]] == [
        "ordered", "payment-order-issued", "payment-sent", "payment-confirmed", "deviation-noted"]
    text = run_cli("order", "o1", "show").stdout
    assert "exactly 12.50 USDT on network TRC20" in text and "deviation noted" in text


def test_k6_cli_plan_without_days_prices_the_covering_package(run_cli: RunCli) -> None:
    """`cost --plan` without `--days` picks the smallest covering package (K6)."""
    p = run_cli("cost", *A5000, "--lots", "1", "--accepted-results", "18", "--plan", "0.25,1,1,0.5,0.5")
    assert p.returncode == 0, p.stderr
    assert "Package: 7 days × 1 lot(s) at 55.00 USD per lot = 55.00 USD" in p.stdout
    assert "priced as the 7-day package, the smallest that covers the 3.25-day plan" in p.stdout
    assert "3.06 USD" in p.stdout
    j = run_cli("cost", *A5000, "--lots", "1", "--plan", "2.5", "--json")
    data = json.loads(j.stdout)
    assert data["package"]["days"] == 3 and data["total_usd_minor"] is not None
    # without a plan, --days is still required (one line, exit 2)
    _one_line_error(run_cli("cost", *A5000, "--lots", "1"), "--days")


@pytest.mark.parametrize("amount", ["-5", "1e3", "12,50"])
def test_s3_payment_sent_amount_checked_like_the_payment_order(
        run_cli: RunCli, sessions_root: Path, amount: str) -> None:
    """A bad amount is refused the same way by ``event payment-sent`` and ``payment``.

    Before the fix, ``payment-sent`` without a payment order recorded any amount (exit 0).
    """
    assert run_cli("new", "o2", *A5000, "--lots", "1", "--days", "7").returncode == 0
    expires = (utcnow() + timedelta(hours=2)).isoformat()
    sent = run_cli("order", "o2", "event", "payment-sent", "--amount", amount)
    issued = run_cli("order", "o2", "payment", "--asset", "USDT", "--network", "TRC20",
                     "--destination", "TXdest", "--expires", expires, "--amount", amount)
    _one_line_error(sent, repr(amount))
    _one_line_error(issued, repr(amount))
    assert one_line(sent.stderr) == one_line(issued.stderr)  # one check, the same words
    assert not (sessions_root / "o2" / "order.toml").exists() or "payment" not in (
        sessions_root / "o2" / "order.toml").read_text()


def test_k3_cli_report_and_tui_say_alike_that_nothing_is_validated_yet(
    run_cli: RunCli, sessions_root: Path
) -> None:
    """No validated run: the accepted count is not measured (K3), never "0 distinct"."""
    from gpusession.core.retrieval.report import render_report
    from gpusession.ui.panes.cost import accepted_words, load_facts

    assert run_cli("new", "k3", *A5000, "--lots", "1", "--days", "7").returncode == 0
    s = Session.open(sessions_root, "k3")
    s.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm", run_index=1,
                               elapsed_seconds=1.0))  # measured, never validated
    p = run_cli("cost", "--session", "k3")
    assert p.returncode == 0, p.stderr
    assert "Accepted deliverables: not measured (no validated run yet in session k3)" in p.stdout
    assert "0 distinct" not in p.stdout
    report = render_report(s)
    assert "Accepted deliverables: not measured (no validated run yet)" in report and "0 distinct" not in report
    assert accepted_words(load_facts(s).answer, s.name) == (None, "no validated run yet in session k3")


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_session_rates_file_that_is_no_plain_file_is_refused_not_passed_over(
        run_cli: RunCli, sessions_root: Path, kind: str) -> None:
    """The bundled prices never stand in silently for a rates.toml that is there but unreadable."""
    import os

    assert run_cli("new", "s3", "--gpu", "RTX A5000", "--lots", "1", "--days", "7").returncode == 0
    rates = sessions_root / "s3" / "rates.toml"
    if kind == "fifo":
        os.mkfifo(rates)
    else:
        rates.mkdir()
    p = run_cli("cost", "--session", "s3")
    _one_line_error(p, f"{rates}: is a {'FIFO' if kind == 'fifo' else 'folder'}")
    assert p.stdout == ""
