"""Process lifetime helpers: a whole group ends, a descendant in a session of
its own (a torchrun rank) ends too, and a child with the parent-death signal ends with
its parent even when the parent gets SIGKILL."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gpusession.core.folder.processes import PARENT_ENV, ProcessId, alive, end_group, identify

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process groups and prctl")

# A "launcher" that starts a "rank" in a session of its own (as torchrun does), writes
# the rank's PID to a file, then waits. The rank may call die_with_parent first.
LAUNCHER = textwrap.dedent(f"""
    import os, subprocess, sys, time
    env = {{**os.environ, "{PARENT_ENV}": str(os.getpid())}}
    rank = subprocess.Popen([sys.executable, "-c", sys.argv[2]], start_new_session=True, env=env)
    open(sys.argv[1], "w").write(str(rank.pid))
    time.sleep(60)
""")
RANK_PLAIN = "import time; time.sleep(60)"
RANK_DIES_WITH_LAUNCHER = ("from gpusession.bench.lifetime import die_with_parent; "
                           "import time; die_with_parent(); time.sleep(60)")


@pytest.fixture
def spawned() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


def _launch(tmp_path: Path, rank: str, spawned: list[int]) -> tuple[subprocess.Popen[bytes], int]:
    pid_file = tmp_path / "rank.pid"
    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(pid_file), rank],
                                start_new_session=True, env=env)
    spawned.append(launcher.pid)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    rank_pid = int(pid_file.read_text())
    spawned.append(rank_pid)
    return launcher, rank_pid


def _dead(pid: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.01)
    return False


def test_end_group_reaches_a_descendant_in_its_own_session(tmp_path: Path, spawned: list[int]) -> None:
    launcher, rank = _launch(tmp_path, RANK_PLAIN, spawned)
    assert os.getsid(rank) != os.getsid(launcher.pid)  # killpg alone would miss it
    ended = end_group(identify(launcher.pid))
    assert set(ended) >= {launcher.pid, rank}
    launcher.wait(timeout=5)
    assert _dead(rank)


def test_rank_with_parent_death_signal_ends_with_a_killed_launcher(
    tmp_path: Path, spawned: list[int]
) -> None:
    launcher, rank = _launch(tmp_path, RANK_DIES_WITH_LAUNCHER, spawned)
    time.sleep(0.5)  # the rank has imported and set its death signal
    assert psutil.Process(rank).status() != psutil.STATUS_ZOMBIE  # the check kept it alive
    launcher.kill()  # SIGKILL: the launcher can do nothing itself
    launcher.wait(timeout=5)
    assert _dead(rank)


def test_a_recorded_pid_with_another_start_time_is_not_ours(spawned: list[int]) -> None:
    p = subprocess.Popen(["sleep", "30"])
    spawned.append(p.pid)
    me = identify(p.pid)
    assert alive(me) is not None
    assert me.create_time_s is not None
    assert alive(ProcessId(p.pid, me.create_time_s - 50)) is None
    assert end_group(ProcessId(p.pid, me.create_time_s - 50)) == []
    assert p.poll() is None
    p.kill()
    p.wait()
