"""H-63: SIGTERM or SIGHUP to ``gpusession pull`` ends its rsync (and whatever rsync started)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers import cli, hangup_default

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None,
                                reason="rsync not installed (apt-get install rsync)")

#: Polls of 0.05 s: the bound of each wait is a count of polls, never a stopwatch in the test.
POLLS = 400


def _rsyncs_naming(path: Path) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        try:
            if (p.info["status"] != psutil.STATUS_ZOMBIE and p.info["name"] == "rsync"
                    and any(str(path) in a for a in (p.info["cmdline"] or []))):
                out.append(p)
        except psutil.Error:
            pass
    return out


def _poll(what: object, polls: int = POLLS) -> bool:
    for _ in range(polls):
        if what():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_h63_a_signal_to_pull_ends_its_rsync(sig: signal.Signals, sessions_root: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    deliv = tmp_path / "deliverables"
    deliv.mkdir()
    (deliv / "big.bin").write_bytes(os.urandom(4 * 1024 * 1024))  # 64 s at --bwlimit 64
    assert cli(capsys, sessions_root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    env = {k: v for k, v in os.environ.items() if k != "GPUSESSION_HOME"}
    pull = subprocess.Popen(
        [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), "pull",
         str(sessions_root / "s1"), "--deliverables", str(deliv), "--to", str(tmp_path / "home"),
         "--bwlimit", "64"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=hangup_default)
    try:
        assert _poll(lambda: _rsyncs_naming(deliv)), "rsync of the deliverables never started"
        rsyncs = _rsyncs_naming(deliv)
        pull.send_signal(sig)
        _, err = pull.communicate(timeout=60)
        assert pull.returncode == 128 + sig, err
        assert f"pull ended by {sig.name}" in err and "Traceback" not in err
        assert _poll(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE
                                     for p in rsyncs)), "an rsync outlived the pull"
        assert _rsyncs_naming(deliv) == []
    finally:
        if pull.poll() is None:
            pull.kill()
            pull.wait()
        for p in _rsyncs_naming(deliv):
            p.kill()
