"""M5: the UI process never imports torch (no CUDA context in the UI; NVML only).

Checked in a fresh interpreter, the way harlequin guards its core: import the UI, build
the app and run it headless for a moment with a fake runner, then look at ``sys.modules``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from datetime import timezone
    import gpusession.ui
    import gpusession.ui.app
    from gpusession.testing import FIXED_NOW, FakeClock, FakeNvml, FakeRunner, make_session
    import gpusession.bench.runner  # the default runner is imported when a run starts
    assert "torch" not in sys.modules, "importing the UI imported torch"
    s = make_session(sys.argv[1])

    async def go():
        app = gpusession.ui.app.build_app(
            s, clock=FakeClock(FIXED_NOW), nvml=FakeNvml(), runner_factory=FakeRunner.factory(),
            poll_s=0.05, tz=timezone.utc)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("2", "r")
            await app.workers.wait_for_complete()
            await pilot.press("3", "4", "5", "6")

    asyncio.run(go())
    print("scipy" in sys.modules or "matplotlib" in sys.modules)  # the report's only
    print("torch" in sys.modules, "textual" in sys.modules)
    """
)


@pytest.mark.slow
def test_m5_ui_import_and_run_leave_torch_out_of_sys_modules(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-3:] == ["False", "False", "True"]


def test_m5_core_and_cli_import_neither_textual_nor_torch() -> None:
    code = (
        "import sys, gpusession.cli, gpusession.commands.tui; "
        "print('torch' in sys.modules, 'textual' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False"]


def test_h11_escape_delay_raised_before_textual_reads_it() -> None:
    """Over ssh + tmux an arrow key's bytes can arrive split; a longer ESCDELAY keeps
    them one key instead of a lone Escape (a value the user set is kept)."""
    code = "import gpusession.ui, textual.constants as c; print(c.ESCAPE_DELAY)"
    env_without = {k: v for k, v in __import__("os").environ.items() if k != "ESCDELAY"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=env_without)
    assert done.stdout.strip() == "0.3"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**env_without, "ESCDELAY": "500"})
    assert done.stdout.strip() == "0.5"
