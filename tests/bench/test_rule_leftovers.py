"""What an accept rule left alive when its run was killed ends at the session's next run (H-79)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gpusession.core.folder.processes import (
    PARENT_ENV,
    RULE_MARKER,
    end_recorded,
    identify,
    rule_marker,
    session_tag,
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.fixture
def spawned() -> Iterator[list[int]]:
    """PIDs a test started: killed at its end whatever happened."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


RUNNER = """\
import sys
from pathlib import Path
from gpusession.bench.accept_run import run_rule
rule = [sys.executable, "-c", (
    "import subprocess, sys, time, pathlib; "
    "p = subprocess.Popen(['sleep', '40'], start_new_session=True); "
    "pathlib.Path(sys.argv[1]).write_text(f'{p.pid}'); time.sleep(40)"), sys.argv[2]]
run_rule(rule, Path(sys.argv[1]), 60)
"""


def test_h79_the_next_run_ends_what_an_accept_rule_left_when_its_run_was_killed(
        tmp_path: Path, spawned: list[int]) -> None:
    """``run`` is killed (SIGKILL) while its rule judges: the rule and its ``setsid`` child
    live on; the session's next run ends both and says so; another session's leftover and a
    rule of a live runner are never touched."""
    folder = tmp_path / "s"
    folder.mkdir()
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    pid_file = tmp_path / "escapee.pid"
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(folder), str(pid_file)],
                              start_new_session=True)
    spawned.append(runner.pid)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    escapee = int(pid_file.read_text())
    spawned.append(escapee)
    dead = identify(runner.pid)
    rule_pids = [c.pid for c in psutil.Process(runner.pid).children()]
    spawned.extend(rule_pids)
    runner.kill()
    runner.wait()
    assert _alive(escapee) and rule_pids and all(_alive(p) for p in rule_pids)  # the fault: they outlive run
    # a leftover of another session's killed run, and a rule of a live runner (this process) here
    other_marker = f"{RULE_MARKER}:{session_tag(other_folder)}:{dead.pid}:{dead.create_time_s:.3f}:t0"
    other = subprocess.Popen(["sleep", "40"], start_new_session=True, env={**os.environ, PARENT_ENV: other_marker})
    live = subprocess.Popen(["sleep", "40"], start_new_session=True,
                            env={**os.environ, PARENT_ENV: rule_marker(folder, "t1")})
    spawned.extend([other.pid, live.pid])
    said = end_recorded([], folder)
    assert len(said) == 1 and str(escapee) in said[0] and "accept rule" in said[0], said  # one tree, said once
    assert all(any(str(p) in s for s in said) for p in rule_pids), said
    assert _gone(escapee, 5.0) and all(_gone(p, 5.0) for p in rule_pids)
    assert other.poll() is None and live.poll() is None
    assert not any(f"pid {other.pid}" in s or f"pid {live.pid}" in s for s in said), said
    assert end_recorded([], folder) == []  # nothing left to end
    for p in (other, live):
        p.kill()
        p.wait()

