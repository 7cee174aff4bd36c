"""The session limit and its measured retrieval reserve (D1, D2).

``retrieval.toml`` is written by ``gpusession pull`` into the session folder; its figures
make the reserve: the deliverables' size ÷ the slowest throughput × 2, at least 2 h; with
no measured pull 4 h and words saying so; a malformed file gives the default and a note.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from gpusession.core.copyhome.limit import (
    NOT_MEASURED_WORDS,
    duration_words,
    limit_of,
    measured_reserve,
    parse_hours,
    parse_reserve,
    session_limit,
    set_limit,
    when_words,
)
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session

START = datetime(2026, 12, 1, 14, 0, tzinfo=timezone.utc)
NOW = START + timedelta(days=1)
MIB = 1024 * 1024


def _pull(bytes_: int, seconds: float, *, probe: bool = False, path: str = "deliverables") -> str:
    rate = bytes_ / seconds
    return (f'[[pull]]\nat = "2026-12-02T10:00:00+00:00"\nbytes = {bytes_}\nseconds = {seconds}\n'
            f"throughput_bytes_per_s = {rate}\nprobe = {'true' if probe else 'false'}\npath = \"{path}\"\n")


@pytest.fixture
def s(sessions_root: Path) -> Session:
    return Session.create(sessions_root, "lim", package=Package("RTX A5000", 1, 3, START))


def _manifest(s: Session, size: int) -> None:
    (s.folder / "manifest.csv").write_text(f"path,size_bytes,sha256\na.bin,{size}," + "0" * 64 + "\n",
                                           encoding="utf-8")


def test_d2_no_measured_pull_keeps_4_hours_and_says_not_measured(s: Session) -> None:
    lim = session_limit(s, NOW)
    assert lim.at == START + timedelta(days=3, hours=-4)
    assert lim.reserve_s == 4 * 3600 and not lim.measured and lim.source == "default"
    assert lim.words == f"stop by Fri 10:00 UTC (4 h kept for retrieval; {NOT_MEASURED_WORDS})"


def test_d2_measured_reserve_is_size_over_the_slowest_throughput_times_two(s: Session) -> None:
    _manifest(s, 3600 * MIB * 3)  # 3 h at 1 MiB/s, ×2 = 6 h
    (s.folder / "retrieval.toml").write_text(_pull(100 * MIB, 50.0) + _pull(100 * MIB, 100.0, path="session"),
                                             encoding="utf-8")
    lim = session_limit(s, NOW)
    assert lim.measured and lim.source == "measured"
    assert lim.reserve_s == pytest.approx(6 * 3600)
    assert lim.at == START + timedelta(days=3, hours=-6)
    assert lim.words.startswith("stop by Fri 08:00 UTC (6 h kept for retrieval, ")
    assert "manifest.csv" in lim.words and "from a small copy" not in lim.words


def test_d2_a_pull_of_a_few_kib_counts_only_while_nothing_larger_was_measured(s: Session) -> None:
    """rsync times in whole seconds: 40 KiB in 1.5 s says nothing of the link."""
    _manifest(s, 3600 * MIB * 3)
    small = _pull(40 * 1024, 1.5, path="session")
    (s.folder / "retrieval.toml").write_text(_pull(100 * MIB, 100.0) + small, encoding="utf-8")
    assert session_limit(s, NOW).reserve_s == pytest.approx(6 * 3600)  # 1 MiB/s, the small one left out
    (s.folder / "retrieval.toml").write_text(small, encoding="utf-8")
    assert session_limit(s, NOW).reserve_s > 6 * 3600  # alone, it is all there is


def test_d2_a_small_reserve_is_never_under_two_hours_and_a_probe_says_so(s: Session) -> None:
    _manifest(s, 10 * MIB)
    (s.folder / "retrieval.toml").write_text(_pull(10 * MIB, 1.0, probe=True), encoding="utf-8")
    lim = session_limit(s, NOW)
    assert lim.reserve_s == 2 * 3600 and lim.measured
    assert "from a small copy" in lim.words and "2 h kept for retrieval" in lim.words


def test_d2_without_a_manifest_the_session_folder_is_the_size(s: Session) -> None:
    (s.folder / "big.bin").write_bytes(b"x" * (4 * MIB))
    (s.folder / "retrieval.toml").write_text(_pull(MIB, 3600 * 4 / 10), encoding="utf-8")  # slow link
    res = measured_reserve(s.folder)
    assert "the session folder" in res.how and res.reserve_s > 2 * 3600


@pytest.mark.parametrize("text", ["[[pull]\nbytes = ", "pull = 5\n", "[[pull]]\nbytes = 0\nseconds = 1.0\n"
                                  "throughput_bytes_per_s = 0.0\n", "\xff\xfe"])
def test_d2_a_malformed_retrieval_file_gives_the_default_with_a_note(s: Session, text: str) -> None:
    (s.folder / "retrieval.toml").write_bytes(text.encode("latin-1"))
    lim = session_limit(s, NOW)
    assert lim.reserve_s == 4 * 3600 and NOT_MEASURED_WORDS in lim.words
    assert lim.note is None or "retrieval.toml could not be read" in lim.note
    if text.startswith("[[pull]\n") or text == "pull = 5\n":
        assert lim.note is not None and "\n" not in lim.note


def test_d1_a_limit_or_a_reserve_set_by_hand_wins(s: Session) -> None:
    set_limit(s, reserve_s=parse_reserve("6h"))
    lim = session_limit(s, NOW)
    assert lim.source == "reserve" and lim.at == START + timedelta(days=3, hours=-6)
    assert lim.words == "stop by Fri 08:00 UTC (6 h kept for retrieval, set by you)"
    at = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)
    set_limit(s, at=at)
    lim = session_limit(s, NOW)
    assert lim.at == at and lim.words == "stop by Thu 12:00 UTC (26 h kept for retrieval, set by you)"
    assert not lim.passed() and lim.passed(at) and not lim.fits(at - timedelta(minutes=30), 2400)
    set_limit(s, auto=True)
    assert session_limit(s, NOW).source == "default"


def test_d1_no_window_no_limit(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "nowin", package=Package("RTX A5000", 1, None, None))
    lim = limit_of(s.folder, s.data, NOW)
    assert not lim.known and lim.fits(NOW, 1e9) and "not set" in lim.words


def test_d1_words_of_durations_and_reserves() -> None:
    assert duration_words(6 * 3600) == "6 h"
    assert duration_words(2.5 * 3600) == "2 h 30 min"
    assert duration_words(45 * 60 - 1) == "45 min"
    assert duration_words(0.175) == "175 ms"  # a figure said as it is, never "1 min"
    assert duration_words(12.3) == "12.3 s"
    assert duration_words(3 * 86400 + 3600) == "3 d 1 h"
    assert parse_reserve("1h30m") == 5400 and parse_reserve("90m") == 5400
    with pytest.raises(Exception, match="expected a duration"):
        parse_reserve("six hours")


def test_d1_checklist_session_limit_evidence_says_the_limit(s: Session) -> None:
    from gpusession.core.retrieval.evidence import session_limit_evidence

    ev = session_limit_evidence(s, now=NOW)
    assert ev == (f"2d 00h 00m left; stop by Fri 10:00 UTC (4 h kept for retrieval; {NOT_MEASURED_WORDS}): "
                  "start no new work after 2026-12-04T10:00:00+00:00 (1d 20h 00m from now)")


def test_d2_status_reads_the_session_folder_size_summary_json_records_and_never_walks(
        s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a writer recorded the folder's size, status every few seconds walks nothing."""
    import os

    from gpusession.core.copyhome import limit
    from gpusession.core.retrieval.status import refresh_counts, session_status

    (s.folder / "big.bin").write_bytes(b"x" * (4 * MIB))
    (s.folder / "retrieval.toml").write_text(_pull(MIB, 3600 * 4 / 10), encoding="utf-8")
    refresh_counts(s.folder)  # as the runner does after a row
    walked: list[object] = []
    real_walk = os.walk

    def counting_walk(*a: object, **k: object):  # type: ignore[no-untyped-def]
        walked.append(a)
        return real_walk(*a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(limit.os, "walk", counting_walk)
    first = session_status(s.folder, now=NOW)
    for _ in range(3):
        assert session_status(s.folder, now=NOW).limit == first.limit
    assert walked == []
    assert first.limit is not None and first.limit.measured and "4.00 MiB (the session folder)" in first.limit.how


def test_d2_the_recorded_folder_size_is_walked_again_at_most_once_a_minute(
        s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.core.copyhome import limit

    (s.folder / "big.bin").write_bytes(b"x" * MIB)
    size, at = limit.folder_bytes_to_record(s.folder, 1000.0)
    import json

    (s.folder / "summary.json").write_text(json.dumps({limit.FOLDER_BYTES_KEY: size,
                                                       limit.FOLDER_BYTES_AT_KEY: at}), encoding="utf-8")
    (s.folder / "more.bin").write_bytes(b"y" * MIB)
    assert limit.folder_bytes_to_record(s.folder, 1030.0) == (size, 1000.0)  # fresh: kept
    assert size < limit.folder_bytes(s.folder)  # the folder grew since
    assert limit.folder_bytes_to_record(s.folder, 1060.0) == (limit.folder_bytes(s.folder), 1060.0)


@pytest.mark.parametrize("hours", [72, 100, 1000])
def test_d1_a_reserve_at_or_over_the_package_length_is_refused(s: Session, hours: int) -> None:
    before = s.session_toml.read_bytes()
    with pytest.raises(BadInput, match=r"whole 3-day package or more \(72 h\); keep less than 72 h"):
        set_limit(s, reserve_s=hours * 3600)
    assert s.session_toml.read_bytes() == before
    set_limit(s, reserve_s=71.5 * 3600)  # just under the package: taken
    assert session_limit(s, NOW).reserve_s == 71.5 * 3600


@pytest.mark.parametrize("text", ["1_0", "1e3", "nan", "inf", "-5", "١٠", "", "6h"])
def test_d1_reserve_hours_are_plain_ascii_decimals(text: str) -> None:
    with pytest.raises(BadInput, match="expected hours such as 6 or 2.5"):
        parse_hours(text)
    assert parse_hours("10") == 10.0 and parse_hours(" 2.5 ") == 2.5


def test_d1_reserve_durations_take_ascii_digits_only() -> None:
    with pytest.raises(BadInput, match="expected a duration"):
        parse_reserve("١h")


def test_d1_stop_by_names_the_date_unless_within_the_next_six_days() -> None:
    now = datetime(2026, 12, 2, 5, 0, tzinfo=timezone.utc)  # a Wednesday
    assert when_words(now + timedelta(days=2), now) == "Fri 05:00 UTC"
    assert when_words(now - timedelta(hours=28), now) == "Tue 1 Dec 01:00 UTC"  # past: never "Tue" ahead
    assert when_words(now + timedelta(days=7), now) == "Wed 9 Dec 05:00 UTC"
