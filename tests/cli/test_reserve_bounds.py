"""A reserve from the user (``checklist evidence --reserve-hours``, ``package --reserve``) is
shorter than the package, a plain number of hours, or refused in one line with nothing written (D1).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, digest, one_line


@pytest.fixture
def three_days(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    code, _, err = cli(capsys, sessions_root, "new", "rv", "--days", "3", "--gpu", "RTX A5000")
    assert code == 0, err
    return sessions_root / "rv"


@pytest.mark.parametrize("args", [
    ("checklist", "rv", "evidence", "--reserve-hours", "100"),
    ("checklist", "rv", "evidence", "--reserve-hours", "72"),
    ("checklist", "rv", "evidence", "--reserve-hours", "1_0"),
    ("checklist", "rv", "evidence", "--reserve-hours", "1e1"),
    ("checklist", "rv", "evidence", "--reserve-hours", "100", "--destination", "/tmp"),
    ("package", "rv", "--reserve", "100h"),
    ("package", "rv", "--reserve", "72h"),
])
def test_d1_a_reserve_not_shorter_than_the_package_or_not_plain_hours_is_refused(
        three_days: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    before = digest(three_days)
    code, out, err = cli(capsys, sessions_root, *args)
    assert code == 2
    line = one_line(err)
    assert "package or more (72 h); keep less than 72 h" in line or "expected hours such as 6 or 2.5" in line
    assert digest(three_days) == before
    code, out, _ = cli(capsys, sessions_root, "status", "rv")
    assert code == 0 and "past the session limit" not in out


def test_d1_a_reserve_just_under_the_package_is_taken(
        three_days: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "checklist", "rv", "evidence", "--reserve-hours", "10")
    assert code == 0, err
    code, out, _ = cli(capsys, sessions_root, "status", "rv")
    assert "(10 h kept for retrieval" in out


def test_d1_shortening_the_package_under_its_reserve_is_refused(
        three_days: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, sessions_root, "package", "rv", "--days", "7", "--reserve", "100h")[0] == 0
    before = digest(three_days)
    code, _, err = cli(capsys, sessions_root, "package", "rv", "--days", "3")
    assert code == 2 and "--reserve auto" in one_line(err)
    assert digest(three_days) == before
    assert cli(capsys, sessions_root, "package", "rv", "--days", "3", "--reserve", "auto")[0] == 0
