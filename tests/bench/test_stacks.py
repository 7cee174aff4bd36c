"""A run that times out names the rank still working and where it stood.

A real process per rank, a real SIGUSR1 and faulthandler's real dump (no torch).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from helpers import wait_for

from gpusession.bench.stacks import (
    STACK_DIR_ENV,
    ask_stacks,
    hung_words,
    innermost_frame,
    register_dump,
    stack_path,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGUSR1 is POSIX only")

_SRC = str(Path(__file__).resolve().parents[2] / "src")


def _rank(tmp_path: Path, folder: Path, rank: int, where: str) -> subprocess.Popen[bytes]:
    """A process standing in ``predict`` (working) or in a function of a file named rank_group.py."""
    mod = tmp_path / ("rank_group.py" if where == "barrier" else "user_model.py")
    mod.write_text(textwrap.dedent("""\
        import os, threading, time
        def _there():  # the test asks only once each rank stands where it will be asked
            open(os.environ["READY"], "w").close()
        def barrier():
            _there()
            time.sleep(600)
        def predict():
            _there()
            time.sleep(600)
        threading.Thread(target=lambda: time.sleep(600), daemon=True).start()  # a side thread
        """))
    code = (f"import sys; sys.path[:0] = [{_SRC!r}, {str(tmp_path)!r}]\n"
            f"from gpusession.bench.stacks import register_dump\nregister_dump({rank})\n"
            f"import {mod.stem} as m\nm.{'barrier' if where == 'barrier' else 'predict'}()\n")
    env = {**os.environ, STACK_DIR_ENV: str(folder), "READY": str(tmp_path / "ready")}
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def test_a_timed_out_group_names_the_rank_still_working_and_where(tmp_path: Path) -> None:
    folder = tmp_path / "stacks"
    folder.mkdir()
    procs = []
    for r in range(2):
        (tmp_path / f"r{r}").mkdir()
        procs.append(_rank(tmp_path / f"r{r}", folder, r, "barrier" if r == 0 else "work"))
    try:
        wait_for(lambda: all(stack_path(folder, r).is_file() for r in range(2)), timeout_s=30)
        wait_for(lambda: all((tmp_path / f"r{r}" / "ready").is_file() for r in range(2)), timeout_s=30)
        stacks = ask_stacks(folder, [p.pid for p in procs], [platform.node()] * 2,
                            [psutil.Process(p.pid).create_time() for p in procs])
        assert all(p.poll() is None for p in procs)  # asked, not ended (the runner ends the group)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert sorted(stacks) == [0, 1]
    assert innermost_frame(stacks[1])[2] == "predict"  # the main thread's, not the side thread's
    words = hung_words(stacks, 2)
    assert words is not None
    assert words.startswith("rank 1 of 2 was still working, in predict (user_model.py line 9)")
    assert "rank 0 had finished its share and waited at the barrier" in words


def test_ranks_never_asked_when_not_ready_elsewhere_or_pid_reused(tmp_path: Path) -> None:
    folder = tmp_path / "stacks"
    folder.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # no handler
    try:
        # rank 0: no stack file (SIGUSR1 would end it); rank 1: another host; rank 2: PID reused
        stack_path(folder, 1).write_text("")
        stack_path(folder, 2).write_text("")
        create = psutil.Process(other.pid).create_time()
        got = ask_stacks(folder, [other.pid, other.pid, other.pid], [None, "elsewhere", None],
                         [create, create, create - 100], wait_s=0.2)
        assert got == {} and other.poll() is None
    finally:
        other.kill()
        other.wait()
    assert hung_words({}, 2) is None


def test_register_dump_needs_its_folder(tmp_path: Path) -> None:
    assert register_dump(0, {}) is None
    assert register_dump(0, {STACK_DIR_ENV: str(tmp_path / "missing")}) is None


def test_where_a_rank_stood_is_its_main_threads_frame_outside_torch() -> None:
    dump = ("main thread 0x0000000000000007\n"
            "Thread 0x0000000000000009 (most recent call first):\n"
            '  File "/usr/lib/python3.11/threading.py", line 3 in run\n\n'
            "Current thread 0x0000000000000007 (most recent call first):\n"
            '  File "/v/site-packages/torch/distributed/distributed_c10d.py", line 5356 in barrier\n'
            '  File "/s/gpusession/bench/rank_group.py", line 130 in barrier\n'
            '  File "/s/gpusession/bench/rank_group.py", line 191 in measure\n')
    assert innermost_frame(dump) == ("/s/gpusession/bench/rank_group.py", 130, "barrier")
    assert hung_words({0: dump}, 2) == ("rank 0 had finished its share and waited at the barrier; "
                                        "1 rank(s) not asked (another node, or not started)")
    only_torch = dump.replace('  File "/s/gpusession/bench/rank_group.py", line 130 in barrier\n', "").replace(
        '  File "/s/gpusession/bench/rank_group.py", line 191 in measure\n', "")
    assert innermost_frame(only_torch) == ("/v/site-packages/torch/distributed/distributed_c10d.py", 5356, "barrier")
    assert innermost_frame("no frame here\n") is None
