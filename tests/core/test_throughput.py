"""The throughput of a pull from rsync's own ``--stats`` figures, and ``retrieval.toml`` (D2)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from gpusession.core.copyhome import pull as pull_mod
from gpusession.core.copyhome.throughput import (
    RsyncStats,
    combine,
    merge_entries,
    parse_stats,
    read_entries,
    write_home,
)

#: rsync 3.2.7's --stats lines (LC_ALL=C), progress lines mixed in as they come.
STATS = """\
      3,000,003 100%  314.42MB/s    0:00:00 (xfr#2, to-chk=0/4)

Number of files: 4 (reg: 2, dir: 2)
Total file size: 3,000,003 bytes
Total transferred file size: 3,000,003 bytes
Literal data: 3,000,003 bytes
Total bytes sent: 3,000,943
Total bytes received: 65

sent 3,000,943 bytes  received 65 bytes  1,200,403.20 bytes/sec
total size is 3,000,003  speedup is 1.00
"""
AT = datetime(2026, 12, 2, 1, 0, tzinfo=timezone.utc)


def test_d2_stats_give_the_bytes_moved_and_rsyncs_elapsed_time() -> None:
    st = parse_stats(STATS)
    assert st is not None
    assert st.transferred_bytes == 3_000_003
    assert st.seconds == pytest.approx((3_000_943 + 65) / 1_200_403.20)  # 2.5 s, as rsync counted
    assert parse_stats("no stats here") is None
    nothing = parse_stats(STATS.replace("1,200,403.20", "0.00"))
    assert nothing is not None and nothing.seconds is None


def test_d2_one_figure_per_pull_from_every_transfer() -> None:
    fig = combine([RsyncStats(1_000, 0.5, wire_bytes=1_000), RsyncStats(3_000, 1.5, wire_bytes=3_000), RsyncStats(9, None, wire_bytes=9)], at=AT,
                  path="rsync over ssh")
    assert fig is not None
    assert (fig.bytes, fig.seconds, fig.throughput_bytes_per_s) == (4_000, 2.0, 2_000.0)
    t = fig.to_toml()
    assert t == {"at": "2026-12-02T01:00:00+00:00", "bytes": 4000, "seconds": 2.0, "rsync_seconds": 2.0,
                 "throughput_bytes_per_s": 2000.0, "probe": False, "path": "rsync over ssh"}
    assert combine([RsyncStats(0, 0.5, wire_bytes=0)], path="x") is None  # nothing moved: no figure, never 0 B/s
    assert combine([], path="x") is None


def test_d2_a_transfer_that_moved_no_files_bytes_is_not_a_measure_of_the_link() -> None:
    """A re-pull with nothing new: its bytes are rsync's file list, its time the walk of both trees."""
    walk = RsyncStats(0, 1.5, clock_seconds=1.2, wire_bytes=1_500_000)  # 71,507 files listed, none sent
    assert combine([walk, RsyncStats(0, 0.5, clock_seconds=0.1, wire_bytes=900)], path="x") is None
    moved = RsyncStats(2_000_000, 1.0, clock_seconds=0.5, wire_bytes=2_000_100)
    fig = combine([walk, moved], at=AT, path="x")
    assert fig is not None and (fig.bytes, fig.seconds) == (2_000_100, 0.5)  # the walk's figures left out


def test_d2_entries_merge_once_and_write_as_pull_tables(tmp_path: Path) -> None:
    a = {"at": "2026-12-02T01:00:00+00:00", "bytes": 1, "seconds": 1.0, "throughput_bytes_per_s": 1.0,
         "probe": False, "path": "rsync over ssh"}
    b = {**a, "at": "2026-12-01T01:00:00+00:00", "bytes": 2, "throughput_bytes_per_s": 2.0, "probe": True}
    assert merge_entries([a], [b, a]) == [b, a]
    path = tmp_path / "retrieval.toml"
    write_home(path, [b, a])
    text = path.read_text(encoding="utf-8")
    assert text.startswith("schema = 1") and text.count("[[pull]]") == 2
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_entries([path, tmp_path / "absent.toml"]) == [b, a]
    (tmp_path / "bad.toml").write_text("[[pull]\n")
    assert read_entries([tmp_path / "bad.toml"]) == []  # an unreadable file never stops a pull


def test_d2_whole_retry_path_keeps_the_retrys_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_rsync(cmd: list[str], **_kw: Any) -> RsyncStats:
        calls.append(cmd)
        if len(calls) == 1:  # rsync refused its own partial file: the copy starts again whole
            raise pull_mod.TransferFailed("refused", 1, resume_refused=True)
        return RsyncStats(5_000, 2.5, wire_bytes=5_000)

    monkeypatch.setattr(pull_mod, "run_rsync", fake_rsync)
    t = pull_mod.Transfer(pull_mod.Source("me@gpu1", "/srv/sessions/s1"), tmp_path, None, None, None, None)
    t.copy("deliverables", "/srv/out", tmp_path / "copy", checksum=False)
    assert len(calls) == 2 and "--stats" in calls[0]
    assert t.stats == [RsyncStats(5_000, 2.5, wire_bytes=5_000)]
    assert t.path_words == "rsync over ssh, copied again whole"
    fig = combine(t.stats, path=t.path_words)
    assert fig is not None and fig.throughput_bytes_per_s == 2_000.0
    assert t.remote_file("retrieval.toml") == "me@gpu1:/srv/sessions/s1/retrieval.toml"


def test_d2_the_time_is_gpusessions_clock_around_each_rsync_and_rsyncs_figure_is_kept_beside() -> None:
    # rsync said 1.0 s (whole seconds + 0.5) for copies our clock timed at 0.15 s and 0.05 s
    fig = combine([RsyncStats(3_000_000, 1.0, clock_seconds=0.15, wire_bytes=3_000_000),
                   RsyncStats(1_000_000, 1.0, clock_seconds=0.05, wire_bytes=1_000_000)],
                  at=AT, path="rsync (local folder)")
    assert fig is not None and fig.seconds == pytest.approx(0.2)
    assert fig.throughput_bytes_per_s == pytest.approx(20_000_000.0)
    assert fig.to_toml()["rsync_seconds"] == 2.0 and fig.to_toml()["seconds"] == pytest.approx(0.2)


@pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed (apt-get install rsync)")
def test_d2_a_local_probe_records_seconds_from_gpusessions_clock_beside_rsyncs_bytes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import cli

    root = tmp_path / "server"
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "3")[0] == 0
    deliv = tmp_path / "deliverables"
    deliv.mkdir()
    (deliv / "part.bin").write_bytes(os.urandom(4 * 1024 * 1024))
    code, out, err = cli(capsys, root, "pull", str(root / "s1"), "--deliverables", str(deliv),
                         "--to", str(tmp_path / "home"), "--probe")
    assert code == 0, out + err
    (entry,) = read_entries([root / "s1" / "retrieval.toml"])
    assert entry["probe"] is True and int(entry["bytes"]) >= 4 * 1024 * 1024
    assert 0 < float(entry["seconds"]) < 0.5  # rsync alone would say at least 0.5 s
    assert float(entry["rsync_seconds"]) >= 0.5 and float(entry["seconds"]) < float(entry["rsync_seconds"])


#: rsync's --stats of a resumed pull: 100 MB of files, 70 MB of them already in the partial
#: file (matched), 30 MB crossing the link in 5 s.
RESUMED = """\
Number of files: 2 (reg: 1, dir: 1)
Total file size: 100,000,000 bytes
Total transferred file size: 100,000,000 bytes
Literal data: 30,000,000 bytes
Matched data: 70,000,000 bytes
Total bytes sent: 430,000
Total bytes received: 30,010,000

sent 430,000 bytes  received 30,010,000 bytes  4,058,666.67 bytes/sec
total size is 100,000,000  speedup is 3.28
"""


def test_h62_a_resumed_pull_counts_only_the_bytes_that_crossed_the_link() -> None:
    st = parse_stats(RESUMED)
    assert st is not None and st.wire_bytes == 30_440_000 and st.transferred_bytes == 100_000_000
    fig = combine([dataclasses.replace(st, clock_seconds=5.0)], at=AT, path="rsync over ssh")
    assert fig is not None and fig.bytes == 30_440_000
    assert fig.throughput_bytes_per_s == pytest.approx(6_088_000.0)  # never 20 MB/s
    assert combine([RsyncStats(100_000_000, 5.0)], path="x") is None  # wire bytes unsaid: no figure


@pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed (apt-get install rsync)")
def test_h62_a_real_rsync_resuming_a_partial_file_is_measured_on_the_bytes_sent(tmp_path: Path) -> None:
    # a remote shell that runs the server's rsync here: rsync then uses its delta transfer
    # and reuses the partial file, as over ssh
    shim = tmp_path / "ssh-here"
    shim.write_text('#!/bin/sh\nshift\nexec "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    src = tmp_path / "server"
    src.mkdir()
    body = os.urandom(8 * 1024 * 1024)
    (src / "model.bin").write_bytes(body)
    work, dest = tmp_path / "work", tmp_path / "home"
    (work / "partial").mkdir(parents=True)
    (work / "tmp").mkdir()
    (work / "partial" / "model.bin").write_bytes(body[: 6 * 1024 * 1024])  # an interrupted pull
    cmd = pull_mod.rsync_command("localhost:" + str(src) + "/", dest, work=work, checksum=False,
                                 ssh=str(shim))
    st = pull_mod.run_rsync(cmd, host="localhost", dest=dest, where="test")
    assert (dest / "model.bin").read_bytes() == body
    assert st is not None and st.transferred_bytes == 8 * 1024 * 1024
    assert st.wire_bytes is not None and st.wire_bytes < 4 * 1024 * 1024  # 2 MiB new + checksums
    fig = combine([st], at=AT, path="rsync over ssh")
    assert fig is not None and fig.bytes == st.wire_bytes
