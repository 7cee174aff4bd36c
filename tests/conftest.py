"""Shared fixtures: a temporary sessions root, a CLI runner, and the GPU skip rule.

Tests marked ``@pytest.mark.gpu`` need a CUDA/ROCm device; where torch sees none they
are *skipped with the reason* -- never counted as passed. Tests marked
``@pytest.mark.torch`` need torch itself (a real worker or workload); on a Python without
torch (the 3.10/3.12 runs of ``.ci/run``) they are skipped with "torch not installed".
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA/ROCm device visible to torch on this machine (GPU-only test)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("torch") is None:
        for it in items:
            if it.get_closest_marker("torch"):
                it.add_marker(pytest.mark.skip(reason="torch not installed"))
    gpu_items = [it for it in items if it.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _gpu_reason()
    if reason:
        for it in gpu_items:
            it.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def sessions_root(tmp_path: Path) -> Path:
    """An empty sessions root in a temporary folder."""
    root = tmp_path / "sessions"
    root.mkdir()
    return root


@pytest.fixture
def run_cli(sessions_root: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m gpusession --sessions-dir ROOT ARGS...`` in a subprocess.

    Returns the CompletedProcess (text mode); pass ``cwd=`` / ``env=`` / ``input=`` /
    ``timeout=`` through keyword arguments.
    """

    def _run(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        env.pop("GPUSESSION_HOME", None)
        env.update(kw.pop("env", {}) or {})  # type: ignore[arg-type]
        cmd = [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), *args]
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env=env,
            timeout=kw.pop("timeout", 120),  # type: ignore[arg-type]
            **kw,  # type: ignore[arg-type]
        )

    return _run
