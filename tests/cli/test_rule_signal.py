"""H-69: SIGTERM or SIGHUP to ``run`` while an accept rule judges an output ends the rule's
whole group (and what it left, a ``setsid`` child included) with the run, never at the
rule's timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers import RENDER, cli, hangup_default

from gpusession.core.folder.session import Session

#: A rule that records its PID and an escaped child's, then judges for 120 s.
HANGING_RULE = """\
import subprocess, sys, time, pathlib
child = subprocess.Popen(["sleep", "120"], start_new_session=True)
pathlib.Path(sys.argv[2]).write_text(f"{__import__('os').getpid()} {child.pid}")
time.sleep(120)
"""
#: Polls of 0.05 s: every wait is bounded by a count, never by a stopwatch in the test.
POLLS = 600


def _poll(what: object) -> bool:
    for _ in range(POLLS):
        if what():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_h69_a_signal_to_run_during_an_accept_rule_ends_the_rule_with_the_run(
        sig: signal.Signals, session: Session, sessions_root: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    (session.folder / "render.py").write_text(RENDER)
    (session.folder / "rule.py").write_text(HANGING_RULE)
    (session.folder / "expected.txt").write_text("v-1.png\nv-2.png\nv-3.png\n")
    pids = session.folder / "rule-pids"
    assert cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "render",
               "--workload", "command", "--values", "1", "--runs", "1", "--warmup", "0",
               "--command", f"{sys.executable} render.py {{output}} 3",
               "--expected-outputs", "expected.txt", "--deliverable-format", "png",
               "--accept", f"{sys.executable} rule.py {{output}} {pids}",
               "--accept-timeout", "300")[0] == 0
    env = {k: v for k, v in os.environ.items() if k != "GPUSESSION_HOME"}
    run = subprocess.Popen([sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root),
                            "run", session.name, "--headless"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                           preexec_fn=hangup_default)
    rule_pid = child_pid = 0
    try:
        assert _poll(lambda: pids.is_file() and len(pids.read_text().split()) == 2), "the rule never ran"
        rule_pid, child_pid = map(int, pids.read_text().split())
        run.send_signal(sig)
        out, err = run.communicate(timeout=60)  # never the rule's 300 s
        assert run.returncode == 128 + sig, out[-2000:] + err[-2000:]
        assert _poll(lambda: _gone(rule_pid) and _gone(child_pid)), "the rule outlived the run"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in (rule_pid, child_pid):
            if pid and not _gone(pid):
                os.kill(pid, signal.SIGKILL)
