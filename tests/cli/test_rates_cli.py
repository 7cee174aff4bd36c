"""``gpusession rates`` and ``rates set``: the user's own prices, each price's source (K7, K2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.files.tomlio import tomllib
from gpusession.core.folder.session import Session
from gpusession.core.money.rates import user_rates_file

#: ``cost`` reads the clock (package window, extensions): run again a year ahead and a month
#: back by .ci/run (A6).
pytestmark = pytest.mark.calendar


def _gpusession(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m gpusession ARGS`` from ``cwd``, no ``--sessions-dir``: as typed anywhere."""
    env = {k: v for k, v in os.environ.items() if k != "GPUSESSION_HOME"}
    return subprocess.run([sys.executable, "-m", "gpusession", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_k7_rates_set_then_cost_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, elsewhere = tmp_path / "config", tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    done = _gpusession("rates", "set", "H100 SXM", "--days", "7", "--price", "1234.56", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    path = config / "gpusession" / "rates.toml"
    assert str(path) in done.stdout and "1234.56 USD" in done.stdout
    assert tomllib.loads(path.read_text())["gpu"]["H100 SXM"] == {
        "gpus_per_lot": 1, "package_price_usd": {"7": "1234.56"}}  # a decimal string, never a float (K2)
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    other = tmp_path / "another"
    other.mkdir()
    cost = _gpusession("cost", "--gpu", "H100 SXM", "--days", "7", "--lots", "1", cwd=other)
    assert cost.returncode == 0, cost.stderr
    assert "= 1234.56 USD" in cost.stdout and f"from your rates file {path}" in cost.stdout
    listed = _gpusession("rates", cwd=other)
    assert listed.returncode == 0, listed.stderr
    assert "7 days: 1234.56 USD (user)" in listed.stdout
    assert "7 days: 55.00 USD (bundled)" in listed.stdout  # the bundled A5000 is not hidden


def test_k7_rates_shows_the_source_of_each_price(new_session: object, sessions_root: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    s: Session = new_session(name="s1")  # type: ignore[operator]
    (s.folder / "rates.toml").write_text('schema = 1\n[gpu."RTX A5000"]\ngpus_per_lot = 1\n'
                                         '[gpu."RTX A5000".package_price_usd]\n7 = "50.00"\n')
    code, out, err = cli(capsys, sessions_root, "rates", "set", "RTX A5000", "--days", "30", "--price", "200")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "rates", "--session", "s1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [f["source"] for f in doc["files"]] == ["session", "user", "bundled"]
    a5000 = next(g for g in doc["gpus"] if g["gpu_model"] == "RTX A5000")
    assert [(p["days"], p["price_usd"], p["source"]) for p in a5000["prices"]] == [
        (3, "23.57", "bundled"), (7, "50.00", "session"), (30, "200.00", "user")]
    assert a5000["prices"][2]["path"] == str(user_rates_file()) and a5000["missing_days"] == []
    b200 = next(g for g in doc["gpus"] if g["gpu_model"] == "B200")
    assert b200["prices"] == [] and b200["missing_days"] == [3, 7, 30]  # never invented
    code, out, err = cli(capsys, sessions_root, "rates", "--session", "s1")
    assert code == 0, err
    assert " 7 days: 50.00 USD (session)" in out and "30 days: 200.00 USD (user)" in out
    assert " 3 days: 23.57 USD (bundled)" in out
    code, out, err = cli(capsys, sessions_root, "cost", "s1")
    assert code == 0, err
    assert "= 50.00 USD" in out and "the 7-day price from the session's rates file" in out
    given = s.folder.parent / "given.toml"
    given.write_text('schema = 1\n[gpu."RTX A5000"]\ngpus_per_lot = 1\n[gpu."RTX A5000".package_price_usd]\n'
                     '3 = "20.00"\n')
    code, out, err = cli(capsys, sessions_root, "rates", "--session", "s1", "--rates", str(given), "--json")
    assert code == 0, err
    doc = json.loads(out)  # --rates takes the session file's place for this call
    assert [(f["source"], f["path"]) for f in doc["files"]] == [
        ("given", str(given)), ("user", str(user_rates_file())), ("bundled", None)]
    a5000 = next(g for g in doc["gpus"] if g["gpu_model"] == "RTX A5000")
    assert [(p["days"], p["price_usd"], p["source"]) for p in a5000["prices"]] == [
        (3, "20.00", "given"), (7, "55.00", "bundled"), (30, "200.00", "user")]


def test_k7_rates_set_changes_one_price_and_keeps_the_others(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = user_rates_file()
    path.parent.mkdir(parents=True)
    path.write_text('schema = 1\ncurrency = "USD"\n[gpu."H100 SXM"]\ngpus_per_lot = 1\nsource = "quote Q-7"\n'
                    '[gpu."H100 SXM".package_price_usd]\n3 = "600.00"\n[gpu."L40S"]\ngpus_per_lot = 1\n'
                    '[gpu."L40S".package_price_usd]\n7 = "300.00"\n')
    code, out, err = cli(capsys, sessions_root, "rates", "set", "h100  sxm", "--days", "7", "--price", "1234")
    assert code == 0, err
    assert "H100 SXM, 7 days: 1234.00 USD" in out and "(new)" in out
    code, out, err = cli(capsys, sessions_root, "rates", "set", "H100 SXM", "--days", "3", "--price", "650.5")
    assert code == 0, err
    assert "was 600.00 USD" in out
    doc = tomllib.loads(path.read_text())
    assert doc["gpu"]["H100 SXM"] == {"gpus_per_lot": 1, "source": "quote Q-7",
                                      "package_price_usd": {"3": "650.50", "7": "1234.00"}}
    assert doc["gpu"]["L40S"]["package_price_usd"] == {"7": "300.00"} and doc["schema"] == 1
    code, out, err = cli(capsys, sessions_root, "rates", "set", "B200", "--days", "7", "--price", "2400.00")
    assert code == 0, err
    assert "2 GPU(s)" in out and "GPUs per lot: bundled rates file" in out  # the card's lot, not 1
    assert tomllib.loads(path.read_text())["gpu"]["B200"]["gpus_per_lot"] == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--days", "7", "--price", "12,50"), "decimal point"),
        (("--days", "7", "--price", "0"), "positive price"),
        (("--days", "7", "--price", "-1"), "positive price"),
        (("--days", "7", "--price", "1.234"), "at most 2 decimals"),
        (("--days", "7", "--price", "1e3"), "positive price"),
        (("--days", "7", "--price", "nan"), "positive price"),
        (("--days", "5", "--price", "10"), "3, 7 or 30"),
        (("--days", "0", "--price", "10"), "3, 7 or 30"),
        (("--days", "seven", "--price", "10"), "3, 7 or 30"),
        (("--days", "7", "--price", "10", "--gpus-per-lot", "0"), "GPUs per lot"),
        (("--days", "7"), "--price"),
    ],
)
def test_k7_rates_set_refuses_malformed_input_in_one_line_and_writes_nothing(
        sessions_root: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str) -> None:
    code, out, err = cli(capsys, sessions_root, "rates", "set", "H100 SXM", *args)
    assert code == 2 and out == ""
    assert needle in one_line(err)
    assert not os.path.lexists(user_rates_file()) and not user_rates_file().parent.exists()


def test_k7_rates_set_names_a_user_file_that_does_not_parse_and_keeps_it(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = user_rates_file()
    path.parent.mkdir(parents=True)
    for body, line in (('schema = 1\n[gpu."X"]\ngpus_per_lot = 1\n[gpu."X".package_price_usd]\n7 = 12.5\n', 5),
                       ('schema = 1\n[gpu."X"\n', 2)):
        path.write_text(body)
        code, out, err = cli(capsys, sessions_root, "rates", "set", "H100", "--days", "7", "--price", "1.00")
        assert code == 2 and out == ""
        assert f"{path}:{line}:" in one_line(err)
        assert path.read_text() == body  # nothing lost, nothing half-written
        code, out, err = cli(capsys, sessions_root, "rates")  # every reader names it the same way
        assert code == 2 and f"{path}:{line}:" in one_line(err)


def test_k7_cost_without_a_price_names_the_user_file_and_rates_set(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "cost", "--gpu", "H100 SXM", "--days", "7", "--lots", "1")
    assert code == 2 and out == ""
    line = one_line(err)
    assert "not in the rates file" in line and "never guessed" in line
    assert 'gpusession rates set "H100 SXM" --days 7 --price USD' in line and str(user_rates_file()) in line
    code, out, err = cli(capsys, sessions_root, "cost", "--gpu", "B200", "--days", "7", "--lots", "1")
    assert code == 0, err
    assert "not in the rates file; nothing is guessed" in out
    assert f'To price it: gpusession rates set "B200" --days 7 --price USD (writes your rates file ' \
           f"{user_rates_file()})" in out


def test_k7_the_user_file_follows_xdg_config_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = Path(os.path.expanduser("~"))
    assert not user_rates_file().is_relative_to(home / ".config")  # conftest: never the real ~/.config
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert user_rates_file() == tmp_path / "gpusession" / "rates.toml"
    for ignored in ("", "relative/config"):  # the XDG spec: a relative path is ignored
        monkeypatch.setenv("XDG_CONFIG_HOME", ignored)
        assert user_rates_file() == home / ".config" / "gpusession" / "rates.toml"


def test_k7_rates_set_at_once_from_eight_threads_keeps_every_price() -> None:
    """The read, change and replace hold the folder's lock: no price set at the same time is lost."""
    from concurrent.futures import ThreadPoolExecutor
    from decimal import Decimal

    from gpusession.core.money.rates import load_rates, set_user_price

    path = user_rates_file()
    cards = [f"Card {i}" for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda c: set_user_price(path, c, 7, Decimal("10.00")), cards))
    rates = load_rates()
    for card in cards:
        rate = rates.find(card)
        assert rate is not None and rate.package_price_usd == {7: Decimal("10.00")}, card
