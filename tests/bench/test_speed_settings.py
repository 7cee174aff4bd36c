"""The settings that change speed and results, recorded in the worker's environment (R10).

The allocator, TF32 and cuBLAS variables, and on torch ≥ 2.9 the ``fp32_precision``
settings, read without the legacy getters (they raise once the new API was used, and
warn of their deprecation). Each case runs in a fresh Python with warnings as errors,
so a setting made here never leaks into another test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpusession.bench.device import SPEED_ENV_VARS, speed_env_vars

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _settings_after(setup: str) -> dict[str, Any]:
    """``TorchDevice("cpu").speed_settings()`` in a fresh Python after ``setup``, warnings as errors."""
    code = ("import json, warnings\nwarnings.simplefilter('error')\nimport torch\n"
            f"{setup}\n"
            "from gpusession.bench.device import TorchDevice\n"
            "print(json.dumps(TorchDevice('cpu').speed_settings()))\n")
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True,
                         env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_r10_allocator_tf32_cublas_and_module_loading_variables_are_recorded() -> None:
    env = {"PYTORCH_ALLOC_CONF": "expandable_segments:True", "NVIDIA_TF32_OVERRIDE": "0",
           "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
           "CUDA_MODULE_LOADING": "EAGER", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}
    said = speed_env_vars(env)
    assert said["pytorch_alloc_conf"] == "expandable_segments:True"
    assert said["pytorch_cuda_alloc_conf"] == "max_split_size_mb:128"  # the alias, kept beside it
    assert said["nvidia_tf32_override"] == "0"
    assert said["torch_allow_tf32_cublas_override"] == "1"
    assert said["cublas_workspace_config"] == ":4096:8"
    assert said["cuda_module_loading"] == "EAGER"
    assert set(speed_env_vars({}).values()) == {"unset"} and len(SPEED_ENV_VARS) == len(said)


@pytest.mark.slow
@pytest.mark.torch
def test_r10_fp32_precision_is_read_through_the_new_api_after_a_workload_set_it() -> None:
    torch = pytest.importorskip("torch")
    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("torch before 2.9: no fp32_precision settings")
    got = _settings_after("torch.backends.cuda.matmul.fp32_precision = 'tf32'\n"
                          "torch.backends.cudnn.conv.fp32_precision = 'ieee'")
    places = dict(p.split("=") for p in got["fp32_precision"].split(", "))
    assert places["cuda.matmul"] == "tf32" and places["cudnn.conv"] == "ieee"
    assert {"generic", "cudnn", "cudnn.rnn", "mkldnn"} <= set(places)
    assert got["tf32_matmul"] is True and got["tf32_cudnn"] is False
    assert got["float32_matmul_precision"] == "high"


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("setup", [
    "",
    "torch.backends.cuda.matmul.allow_tf32 = True",
    "torch.set_float32_matmul_precision('high')",
    "torch.backends.cudnn.allow_tf32 = False",
])
def test_r10_tf32_flags_read_from_fp32_precision_agree_with_the_legacy_getters(setup: str) -> None:
    """Set through the legacy API (where its getters still answer): the same words."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("torch before 2.9: the legacy getters are the source")
    legacy = ("print(json.dumps({'m': torch.backends.cuda.matmul.allow_tf32, "
              "'c': torch.backends.cudnn.allow_tf32, 'p': torch.get_float32_matmul_precision()}))")
    got = _settings_after(f"{setup}\n{legacy}")
    code = f"import json, torch\n{setup}\n{legacy}\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    want = json.loads(out.stdout.strip().splitlines()[-1])
    assert (got["tf32_matmul"], got["tf32_cudnn"], got["float32_matmul_precision"]) == (
        want["m"], want["c"], want["p"])
