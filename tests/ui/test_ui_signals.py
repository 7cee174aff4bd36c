"""SIGTERM/SIGHUP in the TUI (H-14): the run started from the Run pane ends at
once, the journal says where, the lock is released and the app exits cleanly (so the
terminal gets its screen back) with 128 + the signal's number.

The real runner runs a command workload (``sleep 25``): the path from the signal to the
killed worker group is the production one; only the event loop's signal handler is
called directly (the test process's own SIGTERM stays pytest's).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from ui.pilot import SIZE, MakeApp

from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import RUN_LOCK, Session


def _journal(folder: Path, name: str | None = None) -> list[dict[str, Any]]:
    path = folder / "journal.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    return [r for r in recs if name is None or r.get("event") == name]


def _alive(folder: Path) -> list[int]:
    out = []
    for r in _journal(folder):
        if r.get("event") in ("worker_started", "command_started"):
            try:
                p = psutil.Process(r["pid"])
                if p.status() != psutil.STATUS_ZOMBIE and abs(p.create_time() - r["create_time_s"]) < 0.05:
                    out.append(p.pid)
            except psutil.Error:
                pass
    return out


def _kill_all(folder: Path) -> None:
    for pid in _alive(folder):
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


@pytest.mark.slow
async def test_h14_tui_sigterm_ends_the_run_releases_the_lock_and_exits(
    sessions_root: Path, make_app: MakeApp
) -> None:
    s = Session.create(sessions_root, "tui-signal")
    define_experiment(s, Experiment(id="sleepy", workload="command", varied="batch", values=(1,),
                                    runs_per_variant=1, warmup_iterations=0, cold_runs_per_variant=0,
                                    params={"command": ["sleep", "25"]}))
    app = make_app(session=s)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("2")
            await pilot.pause(0.1)
            await pilot.press("r")
            for _ in range(600):
                if _journal(s.folder, "command_started"):
                    break
                await asyncio.sleep(0.05)
            assert _journal(s.folder, "command_started"), "the run never started its command"
            assert len(_alive(s.folder)) == 2
            t0 = time.monotonic()
            app.end_on_signal(int(signal.SIGTERM))  # what the loop's SIGTERM handler calls
            app.end_on_signal(int(signal.SIGTERM))  # a second signal changes nothing
            for _ in range(400):
                if app.return_code is not None:
                    break
                await asyncio.sleep(0.05)
            elapsed = time.monotonic() - t0
        assert app.return_code == 128 + signal.SIGTERM
        assert app.return_value == 128 + signal.SIGTERM  # what run_app returns
        print(f"\nTUI SIGTERM: app exited {elapsed:.3f} s after the signal")
        assert _alive(s.folder) == []
        assert not (s.folder / RUN_LOCK).exists()
        interrupted = _journal(s.folder, "run_interrupted")
        assert [(r["signal"], r["run_key"]) for r in interrupted] == [("SIGTERM", "sleepy:warm:batch-1:1")]
    finally:
        _kill_all(s.folder)
