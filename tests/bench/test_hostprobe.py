"""D8: the host check's fixed probe in its worker: real figures on a GPU, nothing made up without."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from gpusession.bench import hostprobe
from gpusession.core.gpu.hostfacts import ProbeResult


def test_d8_probe_worker_output_reads_back_as_a_result() -> None:
    line = json.dumps({"status": "measured", "words": "measured 1 GPU(s) in 10.0 s", "seconds": 10.0,
                       "dtype": "float16", "matrix_n": 8192, "copy_bytes": 1, "torch_version": "2.13",
                       "gpus": [{"uuid": "GPU-a", "name": "H200", "matmul_tflops": 700.0,
                                 "h2d_gb_per_s": 50.0, "d2h_gb_per_s": 51.0}]})
    r = hostprobe.result_from(json.loads(line))
    assert (r.status, r.gpus[0].uuid, r.gpus[0].matmul_tflops, r.gpus[0].d2h_gb_per_s) == (
        "measured", "GPU-a", 700.0, 51.0)


def test_d8_probe_without_torch_is_said_not_faked(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    r = hostprobe.run_probe()
    assert r.status == "failed" and "has no torch" in r.words and r.gpus == ()


def test_d8_probe_worker_that_prints_nothing_is_a_failure_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "RuntimeError: CUDA error: no kernel image\n")

    real_find_spec = importlib.util.find_spec

    def torch_found(name: str, *a: object) -> object:  # the worker is faked: no torch needed here
        return object() if name == "torch" else real_find_spec(name, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(importlib.util, "find_spec", torch_found)
    r = hostprobe.run_probe()
    assert r == ProbeResult("failed", "probe failed: RuntimeError: CUDA error: no kernel image")


@pytest.mark.torch
def test_d8_probe_worker_without_a_gpu_says_no_gpu_visible() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the GPU twin below runs instead")
    out = subprocess.run([sys.executable, "-m", "gpusession.bench.hostprobe"], capture_output=True,
                         text=True, timeout=120, check=True)
    r = hostprobe.result_from(json.loads(out.stdout.strip().splitlines()[-1]))
    assert (r.status, r.words, r.gpus, r.seconds) == ("no-gpu", "no GPU visible: no probe", (), None)


@pytest.mark.gpu
def test_d8_probe_measures_every_visible_gpu_in_about_ten_seconds() -> None:
    import torch

    from gpusession.core.gpu.nvml import read_nvml

    r = hostprobe.run_probe()
    assert r.status == "measured", r.words
    assert len(r.gpus) == torch.cuda.device_count()
    assert r.seconds is not None and 8.0 <= r.seconds <= 20.0
    nvml_uuids = {g.uuid for g in read_nvml().gpus}
    for g in r.gpus:
        assert g.matmul_tflops is not None and g.matmul_tflops > 1.0  # any CUDA GPU does more
        assert g.h2d_gb_per_s is not None and g.h2d_gb_per_s > 0.5
        assert g.d2h_gb_per_s is not None and g.d2h_gb_per_s > 0.5
        assert g.uuid in nvml_uuids  # named as NVML names it, so it is kept beside its GPU


@pytest.mark.gpu
def test_d8_check_on_first_open_on_a_real_gpu_records_nvml_and_probe(session: object) -> None:
    from gpusession.commands.host_cmd import check_on_first_open
    from gpusession.core.money import host_check as hc

    lines = check_on_first_open(session)  # type: ignore[arg-type]
    assert lines and "checked against the order" in lines[0]
    (check,) = hc.load_host_checks(session).values()  # type: ignore[arg-type]
    assert check.facts.gpus and check.facts.gpus[0].memory_total_bytes
    assert check.facts.gpus[0].pcie_max_generation is not None
    assert check.probe is not None and check.probe.status == "measured"
    assert check_on_first_open(session) == []  # type: ignore[arg-type]
