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
    verdict, code, reason = run_rule([sys.executable, str(tmp_path / "slow.py"), str(pid_file)], tmp_path, 1.5)
    assert verdict == UNJUDGED and code is None and "took over 1.5 s" in reason
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)  # the rule's own process group ended with it


def _gone_within(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


ESCAPES = """\
import subprocess, sys, pathlib
# a child in a session of its own that keeps the rule's stdout open (H-49), and one that
# only lingers (nohup … &, H-50)
holder = subprocess.Popen(["sleep", "40"], start_new_session=True)
lingerer = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL)
pathlib.Path(sys.argv[1]).write_text(f"{holder.pid} {lingerer.pid}")
print("ok")
"""


def test_h50_a_rule_whose_children_escape_returns_at_once_and_leaves_nothing(tmp_path: Path) -> None:
    """The rule exits 0 at once; a setsid child holds its stdout for 40 s, another lingers
    300 s: the verdict comes when the rule exits, never when the pipe closes, and both
    children are ended and named (a hang catcher only: the pipe would hold 40 s)."""
    (tmp_path / "escape.py").write_text(ESCAPES)
    pids_file = tmp_path / "pids"
    t0 = time.monotonic()
    verdict, code, reason = run_rule([sys.executable, str(tmp_path / "escape.py"), str(pids_file)], tmp_path, 3)
    took_s = time.monotonic() - t0
    pids = [int(p) for p in pids_file.read_text().split()]
    try:
        assert (verdict, code) == (ACCEPTED, 0), reason
        assert took_s < 30, took_s  # never the 40 s the escaped child holds the pipe
        assert reason.startswith("ok; ended what it left running: ") and reason.count("sleep (pid ") == 2, reason
        assert all(_gone_within(pid, 2.0) for pid in pids)  # none alive 2 s after (H-50)
    finally:
        for pid in pids:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def test_h49_a_rule_that_hangs_with_an_escaped_child_is_ended_at_its_timeout(tmp_path: Path) -> None:
    script = tmp_path / "hang.sh"
    script.write_text("setsid sleep 40 &\necho \"$!\" > \"$1\"\necho ok\nsleep 40\n")
    pid_file = tmp_path / "pid"
    t0 = time.monotonic()
    verdict, code, reason = run_rule(["sh", str(script), str(pid_file)], tmp_path, 2)
    took_s = time.monotonic() - t0
    assert verdict == UNJUDGED and code is None and reason.startswith("the rule took over 2 s and was ended")
    assert took_s < 30, took_s  # ended at its timeout, not at the end of the 40 s sleeps
    assert _gone_within(int(pid_file.read_text()), 2.0)


def test_h51_a_rule_that_floods_its_stdout_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """``exec yes ok``: the stream is read to the timeout, only its first and last 4 KiB held."""
    import resource

    from gpusession.bench import accept_run

    seen: list[accept_run._BoundedReader] = []
    real = accept_run._BoundedReader

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, fd: int) -> None:
            super().__init__(fd)
            seen.append(self)

    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    accept_run._BoundedReader = Counting  # type: ignore[misc]
    try:
        verdict, code, reason = run_rule(["sh", "-c", "exec yes ok"], tmp_path, 2)
    finally:
        accept_run._BoundedReader = real  # type: ignore[misc]
    assert verdict == UNJUDGED and "took over 2 s" in reason and "Traceback" not in reason
    reader = seen[0]
    assert reader.total_bytes > 10 * 1024 * 1024  # it did flood (counted, never held)
    assert len(reader.head) == accept_run.RULE_HEAD_BYTES and len(reader.tail) == accept_run.RULE_TAIL_BYTES
    assert bytes(reader.head).startswith(b"ok\nok\n")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_kb) / 1024
    assert grown_mb < 100, grown_mb
