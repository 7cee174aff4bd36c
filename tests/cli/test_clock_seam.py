"""The one clock seam (A6): ``$GPUSESSION_NOW`` fixes now for every command; a value that is
not an ISO 8601 time with an offset is refused in one line before any command runs.

Every test of the suite reads ``helpers.TEST_NOW`` through it (``conftest._clock``); these
tests prove the seam itself: the same session reads "time left" from the instant set, in
this process and in a command started as a user starts it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import SESSION_START, TEST_NOW, RunCli, cli, one_line

from gpusession.core.files import clock

pytestmark = pytest.mark.calendar


def test_a6_the_clock_reads_the_instant_set_in_utc_to_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(clock.ENV_NOW, "2031-02-03T04:05:06.789+02:00")
    assert clock.utcnow() == datetime(2031, 2, 3, 2, 5, 6, tzinfo=timezone.utc)
    monkeypatch.setenv(clock.ENV_NOW, "2031-02-03T04:05:06Z")
    assert clock.utcnow() == datetime(2031, 2, 3, 4, 5, 6, tzinfo=timezone.utc)
    monkeypatch.delenv(clock.ENV_NOW)
    real = clock.utcnow()
    assert real.tzinfo is not None and real.microsecond == 0 and real != TEST_NOW


def test_a6_the_suite_reads_its_own_clock_never_today() -> None:
    assert clock.utcnow() == TEST_NOW == SESSION_START + timedelta(hours=1)


@pytest.mark.parametrize("value", ["2026-11-29T15:00:00", "tomorrow", "2026-13-01T00:00:00+00:00", "1733000000"])
def test_a6_a_clock_that_is_not_a_time_with_an_offset_is_refused_in_one_line(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, monkeypatch: pytest.MonkeyPatch,
        value: str) -> None:
    monkeypatch.setenv(clock.ENV_NOW, value)
    for args in (("list",), ("status",), ("new", "s1", "--days", "7")):
        code, out, err = cli(capsys, sessions_root, *args)
        line = one_line(err)
        assert code == 2 and out == "", (args, out)
        assert line.startswith("gpusession: error: environment variable GPUSESSION_NOW: "
                               "expected an ISO 8601 time with an offset"), line
    assert list(sessions_root.iterdir()) == []  # nothing was made


def test_a6_status_and_show_read_time_left_from_the_clock_set(
        run_cli: RunCli, capsys: pytest.CaptureFixture[str], sessions_root: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli(capsys, sessions_root, "new", "s1", "--days", "3", "--lots", "1",
               "--start", SESSION_START.isoformat())[0] == 0
    for now, left in ((SESSION_START + timedelta(hours=2), "2d 22h 00m left"),
                      (SESSION_START + timedelta(days=2, hours=12), "12h 00m left")):
        monkeypatch.setenv(clock.ENV_NOW, now.isoformat())
        in_process = cli(capsys, sessions_root, "status", "s1")[1]
        started = run_cli("status", "s1")  # a command in a process of its own reads it too
        assert started.returncode == 0, started.stderr
        assert f" · {left} · " in in_process and f" · {left} · " in started.stdout, (in_process, started.stdout)
