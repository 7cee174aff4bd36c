"""In a real terminal (H-14): SIGHUP to the TUI during a run ends the run and
the app cleanly — the terminal is back on its normal screen with mouse reporting off
(tmux's ``alternate_on`` / ``mouse_any_flag``), the exit code is 129, no recorded
process is alive and the lock is released. Own tmux server (``-L``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import RUN_LOCK, Session

pytestmark = pytest.mark.slow


def _tmux(sock: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True,
                          timeout=30).stdout


def _journal(folder: Path, name: str) -> list[dict[str, Any]]:
    path = folder / "journal.jsonl"
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    return [r for r in recs if r.get("event") == name]


def _wait(what: Any, timeout_s: float) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _alive(folder: Path) -> list[int]:
    out = []
    for r in _journal(folder, "worker_started") + _journal(folder, "command_started"):
        try:
            p = psutil.Process(r["pid"])
            if p.status() != psutil.STATUS_ZOMBIE and abs(p.create_time() - r["create_time_s"]) < 0.05:
                out.append(p.pid)
        except psutil.Error:
            pass
    return out


def test_h14_tmux_sighup_to_the_tui_restores_the_terminal(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    root = tmp_path / "sessions"
    root.mkdir()
    s = Session.create(root, "tmux-signal")
    define_experiment(s, Experiment(id="sleepy", workload="command", varied="batch", values=(1,),
                                    runs_per_variant=1, warmup_iterations=0, cold_runs_per_variant=0,
                                    params={"command": ["sleep", "25"]}))
    sock = f"gpusession-sig-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "GPUSESSION_HOME", "TMUX")}
    env["TERM"] = "xterm-256color"
    gs = f"TERM=tmux-256color {sys.executable} -m gpusession --sessions-dir {root} open {s.name}"
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", "100",
                    "-y", "30", f"{gs}; echo GPUSESSION-EXIT $?; sleep 60"], env=env, check=True, timeout=30)
    try:
        _wait(lambda: "1 Checklist" in _tmux(sock, "capture-pane", "-p", "-t", "e2e"), 120)
        _tmux(sock, "send-keys", "-t", "e2e", "2")
        _wait(lambda: "r: start" in _tmux(sock, "capture-pane", "-p", "-t", "e2e"), 60)  # the pane has read the session
        _tmux(sock, "send-keys", "-t", "e2e", "r")
        _wait(lambda: _journal(s.folder, "command_started"), 60)
        assert _tmux(sock, "display", "-p", "-t", "e2e", "#{alternate_on}").strip() == "1"
        shell = int(_tmux(sock, "display", "-p", "-t", "e2e", "#{pane_pid}").strip())
        tui = next(p for p in psutil.Process(shell).children()
                   if "gpusession" in " ".join(p.cmdline()))
        tui.send_signal(signal.SIGHUP)
        screen = _wait(lambda: (t := _tmux(sock, "capture-pane", "-p", "-t", "e2e"))
                       and "GPUSESSION-EXIT" in t and t, 30)
        assert "GPUSESSION-EXIT 129" in screen
        assert _tmux(sock, "display", "-p", "-t", "e2e", "#{alternate_on}").strip() == "0"
        assert _tmux(sock, "display", "-p", "-t", "e2e", "#{mouse_any_flag}").strip() == "0"
        assert _alive(s.folder) == []
        assert not (s.folder / RUN_LOCK).exists()
        assert [r["signal"] for r in _journal(s.folder, "run_interrupted")] == ["SIGHUP"]
    finally:
        _tmux(sock, "kill-server")
        for pid in _alive(s.folder):
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass


@pytest.mark.parametrize("how", ["open", "run --headless"])
def test_h14_tmux_terminal_closed_during_a_run_leaves_nothing_running(tmp_path: Path, how: str) -> None:
    """The ssh drop itself: the terminal goes away (tmux's server is killed), the kernel
    hangs the terminal up; the TUI or the headless run ends the run and its processes."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    root = tmp_path / "sessions"
    root.mkdir()
    s = Session.create(root, "tmux-drop")
    define_experiment(s, Experiment(id="sleepy", workload="command", varied="batch", values=(1,),
                                    runs_per_variant=1, warmup_iterations=0, cold_runs_per_variant=0,
                                    params={"command": ["sleep", "25"]}))
    sock = f"gpusession-drop-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "GPUSESSION_HOME", "TMUX")}
    env["TERM"] = "xterm-256color"
    gs = f"TERM=tmux-256color {sys.executable} -m gpusession --sessions-dir {root} {how} {s.name}"
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", "100",
                    "-y", "30", gs], env=env, check=True, timeout=30)
    try:
        if how == "open":
            _wait(lambda: "1 Checklist" in _tmux(sock, "capture-pane", "-p", "-t", "e2e"), 120)
            _tmux(sock, "send-keys", "-t", "e2e", "2")
            _wait(lambda: "r: start" in _tmux(sock, "capture-pane", "-p", "-t", "e2e"), 60)
            _tmux(sock, "send-keys", "-t", "e2e", "r")
        _wait(lambda: _journal(s.folder, "command_started"), 60)
        shell = int(_tmux(sock, "display", "-p", "-t", "e2e", "#{pane_pid}").strip())
        me = psutil.Process(shell)  # tmux runs the command through a shell, or execs it
        ours = [me, *me.children(recursive=True)]
        gs_proc = next(p for p in ours if "gpusession" in " ".join(p.cmdline())
                       and "bench.worker" not in " ".join(p.cmdline()))
        _tmux(sock, "kill-server")  # the terminal is gone
        _wait(lambda: not _alive(s.folder), 5)
        gone, _ = psutil.wait_procs([gs_proc], timeout=15)
        assert gone, "gpusession itself still runs after the hang-up"
        _wait(lambda: _journal(s.folder, "run_interrupted"), 10)
        _wait(lambda: not (s.folder / RUN_LOCK).exists(), 10)
        assert [r["signal"] for r in _journal(s.folder, "run_interrupted")] == ["SIGHUP"]
    finally:
        _tmux(sock, "kill-server")
        for pid in _alive(s.folder):
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
