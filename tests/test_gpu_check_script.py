"""``scripts/gpu-check.sh`` where no GPU is lent: it refuses at once, and its budget fits.

The GPU steps themselves run only on a GPU machine; what is checked here is what a
machine without one can check: the script parses, says "no GPU visible: nothing checked"
at once with no traceback and a non-zero exit, and its step timeouts add up to under
5 minutes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu-check.sh"

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _torch_sees_a_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@needs_bash
def test_gpu_check_parses() -> None:
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@needs_bash
def test_gpu_check_without_its_folder_argument_is_a_usage_error() -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "usage:" in done.stderr


@needs_bash
@pytest.mark.skipif(_torch_sees_a_gpu(), reason="a GPU is visible here: the script would check it")
def test_gpu_check_without_a_gpu_says_nothing_checked_at_once_and_fails(tmp_path: Path) -> None:
    # a loaded machine may take more than the script's 10 s to import torch: the test
    # gives detection room (T_DETECT) and asserts what is said, never how fast (A6)
    env = {**os.environ, "PYTHON": sys.executable, "T_DETECT": "300"}
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "logs")], capture_output=True,
                          text=True, env=env, timeout=600, check=False)
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    assert said.startswith("no GPU visible: nothing checked"), said
    assert "Traceback" not in said
    assert "== 1." not in said  # at once: no step was started
    assert (tmp_path / "logs" / "summary.txt").read_text().startswith("no GPU visible: nothing checked")
    assert [p.name for p in (tmp_path / "logs").iterdir()] == ["summary.txt"]


def test_gpu_check_step_timeouts_add_up_to_under_5_minutes_on_one_gpu() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    defaults = dict(re.findall(r"\b(T_[A-Z]+)=\$\{\1:-(\d+)\}", text))
    assert {"T_DETECT", "T_PYTEST", "T_DEMO", "T_BENCH"} <= set(defaults), defaults
    one_gpu = {k: int(v) for k, v in defaults.items() if k != "T_RANKS"}  # two GPUs only
    assert sum(one_gpu.values()) < 300, one_gpu
    used = set(re.findall(r'timeout -k \d+ "\$(T_[A-Z]+)"', text))
    assert used == set(defaults), (used, set(defaults))  # every step under its own timeout
