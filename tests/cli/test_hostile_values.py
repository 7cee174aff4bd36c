"""Hostile values in order.toml / checklist.toml / experiments and on the
command line (K2, K6, S1, S3, V5): one line naming file and field, exit 2, no traceback,
nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, digest, one_line


@pytest.fixture
def base(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> Path:
    steps = [
        ["new", "base", "--gpu", "RTX A5000", "--lots", "1", "--days", "7"],
        ["order", "base", "set", "--number", "ORD-1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7"],
        ["order", "base", "payment", "--asset", "USDT", "--network", "TRC20", "--amount", "12.50",
         "--destination", "TXabc", "--expires", "2099-01-01T00:00:00Z"],
        ["checklist", "base", "done", "g1.approver"],
        ["checklist", "base", "note", "g1.sample", "hard cases"],
        ["experiment", "base", "define", "--id", "e1", "--workload", "synthetic-mlp", "--values", "1,2"],
    ]
    for step in steps:
        code, _, err = cli(capsys, sessions_root, *step)
        assert code == 0, (step, err)
    return sessions_root / "base"


# -- K2 / S3: money in order.toml is exact text, never a float ----------------------------
@pytest.mark.parametrize(
    "old, new, field",
    [
        ('amount = "12.50"', "amount = 12.5", "payment.amount"),
        ('amount = "12.50"', 'amount = "12,5"', "payment.amount"),
        ('amount = "12.50"', 'amount = "١٢.٥٠"', "payment.amount"),
        ("total_usd_minor = 5500", "total_usd_minor = 55.0", "order.total_usd_minor"),
        ("expires_at = 2099-01-01 00:00:00+00:00", 'expires_at = "tomorrow"', "payment.expires_at"),
    ],
)
def test_k2_order_toml_money_and_times_are_checked_on_read(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, old: str, new: str, field: str
) -> None:
    toml = base / "order.toml"
    text = toml.read_text()
    assert old in text, text
    toml.write_text(text.replace(old, new, 1))
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "order", "base", "show")
    assert code == 2
    line = one_line(err)
    assert "order.toml" in line and field in line
    assert digest(base) == before


@pytest.mark.parametrize("amount", ["12,5", "1e2", "-5", "٣", "0.00"])
def test_s3_payment_amount_must_be_plain_digits(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, amount: str
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "order", "base", "payment", "--asset", "USDT",
                       "--network", "TRC20", "--amount", amount, "--destination", "T",
                       "--expires", "2099-01-01T00:00:00Z")
    assert code == 2 and "amount" in one_line(err)
    assert digest(base) == before


# -- K6: plans ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "plan, words",
    [
        ("0.25,,1", "duration 2 is empty"),
        ("1,", "duration 2 is empty"),
        ("1e3", "digits and a decimal point"),
        ("1_000", "digits and a decimal point"),
        ("٣", "digits and a decimal point"),
        ("0,25", "decimal point"),
        ("400", "more than 366"),
    ],
)
def test_k6_odd_plans_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, plan: str, words: str
) -> None:
    code, _, err = cli(capsys, sessions_root, "cost", "--gpu", "RTX A5000", "--days", "7",
                       "--lots", "1", "--plan", plan)
    assert code == 2 and words in one_line(err)


def test_k6_ten_tenths_are_exactly_one_day(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    code, out, err = cli(capsys, sessions_root, "cost", "--gpu", "RTX A5000", "--days", "3",
                         "--lots", "1", "--plan", ",".join(["0.1"] * 30))
    assert code == 0, err
    assert "= 3 days → the 3-day package covers it" in out


# -- S1: checklist.toml and its notes ------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, field",
    [
        ("done = true", 'done = "false"', "items.g1.approver.done"),
        ("done = true", 'done = "yes"', "items.g1.approver.done"),
        ('note = "hard cases"', "note = 5", "items.g1.sample.note"),
    ],
)
def test_s1_checklist_wrong_types_are_bad_input(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, old: str, new: str, field: str
) -> None:
    toml = base / "checklist.toml"
    text = toml.read_text()
    assert old in text, text
    toml.write_text(text.replace(old, new, 1))
    code, _, err = cli(capsys, sessions_root, "checklist", "base")
    assert code == 2
    line = one_line(err)
    assert "checklist.toml" in line and field in line


@pytest.mark.parametrize("hours", ["nan", "inf", "-5", "100000"])
def test_s1_reserve_hours_must_be_finite_and_sane(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, hours: str
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "evidence", "--reserve-hours", hours)
    assert code == 2 and "hours" in one_line(err)
    assert digest(base) == before


@pytest.mark.parametrize(
    "text",
    [
        "seed: abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "root password: hunter2",
    ],
)
def test_s1_checklist_notes_refuse_secrets(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, text: str
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.sample", text)
    assert code == 2 and "refused" in one_line(err)
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "add", "2", text)
    assert code == 2 and "refused" in one_line(err)
    assert digest(base) == before
    assert "hunter2" not in err and "abandon" not in err


def test_s3_order_note_refuses_a_private_key_block(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "order", "base", "event", "payment-sent",
                       "--note", "-----BEGIN RSA PRIVATE KEY-----")
    assert code == 2 and "private key" in one_line(err)
    assert digest(base) == before


# -- V5: experiment definitions ----------------------------------------------------------
@pytest.mark.parametrize(
    "args, field",
    [
        (["--command", "'unterminated"], "command"),
        (["--timeout", "nan"], "run_timeout_s"),
        (["--timeout", "-1"], "run_timeout_s"),
        (["--runs", "99999999999"], "runs_per_variant"),
        (["--context-limit", "-5"], "context_limit"),
        (["--varied", "context", "--batch", "0"], "batch"),
        (["--cold-runs", "-2"], "cold_runs_per_variant"),
        (["--values", "1,,2"], "values"),
    ],
)
def test_v5_experiment_define_refuses_odd_settings(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, args: list[str], field: str
) -> None:
    workload = "command" if "--command" in args else "synthetic-mlp"
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "define", "--id", "e9",
                       "--workload", workload, "--values", "1", *args)
    assert code == 2 and field in one_line(err)
    assert digest(base) == before


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("runs_per_variant = 5", 'runs_per_variant = "five"', "experiments.e1.runs_per_variant"),
        ("run_timeout_s = 3600.0", "run_timeout_s = -1", "experiments.e1.run_timeout_s"),
    ],
)
def test_v5_hand_edited_experiment_names_session_toml(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, old: str, new: str, field: str
) -> None:
    toml = base / "session.toml"
    text = toml.read_text()
    assert old in text, text
    toml.write_text(text.replace(old, new, 1))
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "list")
    assert code == 2
    line = one_line(err)
    assert "session.toml" in line and field in line


# -- S2 / S5: one-line order fields --------------------------------------------------------
@pytest.mark.parametrize(
    "args, field",
    [
        (["set", "--number", "A\nB", "--gpu", "RTX A5000", "--lots", "1", "--days", "7"], "number"),
        (["set", "--number", "A", "--gpu", "RTX\x1b[2JA5000", "--lots", "1", "--days", "7"], "gpu"),
        (["deviation", "--gpu", "", "--count", "1"], "gpu"),
        (["deviation", "--gpu", "x\ny", "--count", "1"], "gpu"),
        (["event", "payment-sent", "--note", "paid\x1b[2J"], "note"),
    ],
)
def test_s5_order_fields_are_one_line_text(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, args: list[str], field: str
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "order", "base", *args)
    assert code == 2 and field in one_line(err)
    assert digest(base) == before


def test_s1_evidence_says_when_the_destination_does_not_exist(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "not" / "there"
    code, out, err = cli(capsys, sessions_root, "checklist", "base", "evidence", "--destination", str(missing))
    assert code == 0, err
    assert f"destination {missing} does not exist yet" in out


# -- K2 / K7: a hand-edited rates file ------------------------------------------------------
@pytest.mark.parametrize("price", ['"٥٥.00"', '"99999999999999999999999.00"', "10000000000000000000000000"])
def test_k2_rates_price_is_ascii_and_bounded(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path, price: str
) -> None:
    rates = tmp_path / "rates.toml"
    rates.write_text('schema = 1\ncurrency = "USD"\n[gpu."RTX A5000"]\ngpus_per_lot = 1\n'
                     f'[gpu."RTX A5000".package_price_usd]\n7 = {price}\n')
    code, _, err = cli(capsys, sessions_root, "cost", "--gpu", "RTX A5000", "--days", "7",
                       "--lots", "10000", "--accepted-results", "3", "--rates", str(rates))
    assert code == 2
    line = one_line(err)
    assert "rates.toml:6" in line and "package_price_usd.7" in line


def test_k2_largest_price_times_most_lots_stays_exact(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path
) -> None:
    rates = tmp_path / "rates.toml"
    rates.write_text('schema = 1\ncurrency = "USD"\n[gpu."RTX A5000"]\ngpus_per_lot = 1\n'
                     '[gpu."RTX A5000".package_price_usd]\n7 = "999999999.99"\n')
    code, out, err = cli(capsys, sessions_root, "cost", "--gpu", "RTX A5000", "--days", "7",
                         "--lots", "10000", "--accepted-results", "3", "--rates", str(rates))
    assert code == 0, err
    assert "= 9999999999900.00 USD" in out and "3333333333300.00 USD" in out


def test_v1_validate_with_empty_classes_is_bad_input(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "c.csv"
    corpus.write_text("id,label\n1,a\n2,b\n")
    code, _, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--predictions",
                       str(corpus), "--classes", "")
    assert code == 2 and "--classes" in one_line(err)


# -- S6: times outside any rental ----------------------------------------------------------
@pytest.mark.parametrize(
    "start", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00+14:00", "1970-01-01T00:00:00Z"]
)
def test_s6_package_start_far_outside_a_rental_is_bad_input(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, start: str
) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "x1", "--days", "30", "--start", start)
    assert code == 2 and "outside 2000-2099" in one_line(err)
    assert not (sessions_root / "x1").exists()


def test_s6_a_hand_edited_far_start_names_the_file(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    import re

    toml = base / "session.toml"
    text = toml.read_text()
    edited = re.sub(r"(?m)^start = .*$", "start = 9999-12-31T23:59:59Z", text)
    assert edited != text
    toml.write_text(edited)
    for command in (["show", "base"], ["report", "base"]):
        code, _, err = cli(capsys, sessions_root, *command)
        assert code == 2
        line = one_line(err)
        assert "session.toml" in line and "package.start" in line


def test_s2_event_time_far_outside_a_rental_is_bad_input(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "order", "base", "event", "ordered", "--at",
                       "9999-12-31T23:59:59-12:00")
    assert code == 2 and "at" in one_line(err)
    assert digest(base) == before


def test_s3_spaces_around_a_sent_amount_are_not_a_difference(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    code, out, err = cli(capsys, sessions_root, "order", "base", "event", "payment-sent",
                         "--amount", " 12.50 ")
    assert code == 0, err
    assert "differs" not in err
    code, out, err = cli(capsys, sessions_root, "order", "base", "event", "payment-sent",
                         "--amount", "12.5")
    assert code == 0 and "differs" in err  # digit for digit: 12.5 is not 12.50


@pytest.mark.parametrize("action", [["note", "g1.sample"], ["add", "2"]])
def test_s1_checklist_text_with_terminal_escapes_is_refused(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, action: list[str]
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "checklist", "base", *action, "ok\x1b[2Jwiped")
    assert code == 2 and "control character" in one_line(err)
    assert digest(base) == before


def test_s1_a_multi_line_note_is_still_fine(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.sample", "line 1\nline 2")
    assert code == 0, err
