"""The accept rule's process: its exit status, its timeout, its own process group (S9)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from gpusession.bench.accept_run import run_rule
from gpusession.core.validation.accept_rule import ACCEPTED, REJECTED, UNJUDGED

SLOW = """\
import subprocess, sys, time, pathlib
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
pathlib.Path(sys.argv[1]).write_text(str(child.pid))
print("still judging")
sys.stdout.flush()
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return True


def test_s9_exit_0_1_and_other_statuses(tmp_path: Path) -> None:
    def rule(code: int, line: str) -> tuple[str, int | None, str]:
        return run_rule([sys.executable, "-c", f"print({line!r}); raise SystemExit({code})"], tmp_path, 30)

    assert rule(0, "fine") == (ACCEPTED, 0, "fine")
    assert rule(1, "text cut") == (REJECTED, 1, "text cut")
    verdict, code, reason = rule(2, "crashed")
    assert verdict == UNJUDGED and code == 2 and reason == "the rule exited with status 2: crashed"
    verdict, _, reason = run_rule(["/nonexistent/rule"], tmp_path, 30)
    assert verdict == UNJUDGED and reason.startswith("the rule could not start")


def test_s9_a_rule_past_its_timeout_is_ended_with_its_group(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(SLOW)
    pid_file = tmp_path / "child.pid"
    t0 = time.monotonic()
    verdict, code, reason = run_rule([sys.executable, str(tmp_path / "slow.py"), str(pid_file)], tmp_path, 1.5)
    assert time.monotonic() - t0 < 20
    assert verdict == UNJUDGED and code is None and "took over 1.5 s" in reason
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)  # the rule's own process group ended with it
