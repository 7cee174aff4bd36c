"""Run launcher on a real GPU (skipped with the reason where torch sees none), and the
synthetic-mlp workload's expected memory on CPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="torch not installed")

from gpusession.bench.runner import Runner
from gpusession.bench.workloads.synthetic_mlp import expected_memory
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session


def _mlp(session: Session, device: str, **kw: Any) -> Experiment:
    base: dict[str, Any] = dict(
        id="mlp", workload="synthetic-mlp", corpus=None, varied="batch", values=(64, 256),
        runs_per_variant=2, warmup_iterations=1, cold_runs_per_variant=1, device=device,
        params={"width": 1024, "depth": 4, "n_inputs": 512},
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))


def test_m1_synthetic_mlp_expected_bytes_computed_beside_measurement() -> None:
    e = expected_memory(width=1024, depth=4, batch=64, precision="fp32")
    assert e["parameter_bytes"] == 4 * (1024 * 1024 + 1024) * 4
    assert e["activation_bytes"] == 3 * 64 * 1024 * 4  # input + a layer's input and output
    assert e["activation_upper_bytes"] == 5 * 64 * 1024 * 4
    half = expected_memory(1024, 4, 64, "bf16")
    assert half == expected_memory(1024, 4, 64, "fp16")
    assert all(half[k] * 2 == e[k] for k in e)
    assert expected_memory(1024, 1, 64)["activation_bytes"] == 2 * 64 * 1024 * 4


@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_m1_synthetic_mlp_expected_activation_bytes_equal_the_live_tensor_peak(
        depth: int, precision: str) -> None:
    """The expected figure is checked against what predict() really keeps alive (CPU)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from gpusession.bench.workloads.synthetic_mlp import SyntheticMlp

    class LivePeak(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live = self.peak = 0
            self.keep: list[Any] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if isinstance(out, torch.Tensor):
                n = out.untyped_storage().nbytes()
                self.live += n
                self.peak = max(self.peak, self.live)
                self.keep.append(weakref.finalize(out, self._free, n))
            return out

        def _free(self, n: int) -> None:
            self.live -= n

    w = SyntheticMlp(width=64, depth=depth)
    w.load("cpu", precision, None)
    with LivePeak() as mode:
        w.predict(["x"] * 32)
    assert mode.peak == expected_memory(64, depth, 32, precision)["activation_bytes"]
    assert mode.peak <= expected_memory(64, depth, 32, precision)["activation_upper_bytes"]


@pytest.mark.slow
def test_m4_synthetic_mlp_on_cpu_keeps_memory_cells_empty(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "m", package=Package("RTX A5000", 1, 7))
    exp = _mlp(s, "cpu", values=(64,), runs_per_variant=1, cold_runs_per_variant=0,
               params={"width": 256, "depth": 2, "n_inputs": 128})
    out = Runner(s, exp.id).run()
    assert out.completed
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert warm[0].elapsed_seconds is not None and warm[0].peak_allocated_bytes is None
    fin = [r for r in s.read_journal() if r["event"] == "run_finished"]
    assert fin[0]["expected_memory"]["parameter_bytes"] == 2 * (256 * 256 + 256) * 4


@pytest.mark.gpu
def test_h01_r8_gpu_harness_matches_cuda_events_and_beats_unsynchronized() -> None:
    import torch

    from gpusession.bench.timing import SyncTimer, TorchCudaOps

    dev = "cuda:0"
    a = torch.randn(8192, 8192, device=dev)
    b = torch.randn(8192, 8192, device=dev)
    a @ b
    torch.cuda.synchronize(dev)
    ops = TorchCudaOps(torch)
    timer = SyncTimer([dev], ops, event_factory=ops.event_pair(dev))
    t0 = time.perf_counter_ns()
    a @ b
    unsync = (time.perf_counter_ns() - t0) / 1e9
    torch.cuda.synchronize(dev)
    m = timer.measure(lambda: a @ b)
    assert m.event_elapsed_s is not None
    assert m.elapsed_s >= 0.95 * m.event_elapsed_s  # never faster than the work
    assert m.elapsed_s > unsync  # the unsynchronized reading misses the work
    assert m.event_elapsed_s > 0.5 * m.elapsed_s  # the events bracket the matmul itself
    assert m.peak_allocated_bytes is not None and m.peak_allocated_bytes >= 3 * 8192 * 8192 * 4


@pytest.mark.gpu
def test_m1_r10_gpu_run_fills_memory_cells_and_environment(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "g", package=Package("RTX A5000", 1, 7))
    exp = _mlp(s, "cuda")
    out = Runner(s, exp.id).run()
    assert out.completed, out.incidents
    params_bytes = expected_memory(1024, 4, 64)["parameter_bytes"]
    rows = s.results.rows()
    for r in rows:
        if r.phase == "load":
            assert r.peak_allocated_bytes is not None and r.peak_allocated_bytes >= params_bytes
            continue
        assert r.elapsed_seconds is not None
        assert r.baseline_allocated_bytes is not None and r.baseline_allocated_bytes >= params_bytes
        assert r.peak_allocated_bytes is not None and r.peak_reserved_bytes is not None
        # the run's own activations show above its baseline (the reset itself is checked
        # where it can fail: test_gpu_protocol's freed 4 GiB block before a 64 MiB job)
        assert r.peak_allocated_bytes - r.baseline_allocated_bytes >= expected_memory(1024, 4, r.batch)["activation_bytes"]
        assert r.device is not None and r.device.startswith("cuda:")
        assert r.runtime_version and r.runtime_version.split()[0] in ("CUDA", "HIP")
        assert "None" not in r.runtime_version  # H-07
        assert r.gpu_count == 1 and r.gpu_model
    env = s.data["environment"]
    assert env["gpus_used"] == [env["device"]]
    assert "cudnn_benchmark" in env
    assert "tf32_matmul" in env and "float32_matmul_precision" in env and "allocator_backend" in env
    assert env.get("sm_clock_mhz") or env.get("clock_reason")  # read, or unknown with the reason
    assert env.get("gpu_uuid", "").startswith(("GPU-", "MIG-"))  # torch's own UUID at least
    if not env.get("nvml_reason"):
        assert env.get("driver_version") and env.get("gpu_uuid")  # H-06, H-05
        assert env.get("gpu_physical_index") is not None  # found in NVML by UUID (H-05)
    warm = [r for r in rows if r.phase == "warm"]
    assert all(isinstance(r.peak_reserved_bytes, int) for r in warm)  # bytes, M1


@pytest.mark.gpu
def test_r7_gpu_oom_is_a_failed_row_and_the_other_variant_runs(sessions_root: Path) -> None:
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    s = Session.create(sessions_root, "o", package=Package("RTX A5000", 1, 7))
    # rows chosen so batch 1 needs half the device (input + output) and batch 8 twice it
    # for its input alone; batch 8 runs first, so batch 1 starts right after the OOM
    rows = max(1, int(total // (4096 * 4) // 4))
    exp = _mlp(s, "cuda", values=(8, 1), runs_per_variant=1, cold_runs_per_variant=0,
               warmup_iterations=0,
               params={"width": 4096, "depth": 1, "n_inputs": 8, "rows_per_input": rows})
    out = Runner(s, exp.id, continue_on_reject=True).run()  # an OOM first run: D3 would stop there
    warm = {r.variant_id: r for r in s.results.rows() if r.phase == "warm"}
    assert warm["batch-8"].elapsed_seconds is None
    assert "out of memory" in (warm["batch-8"].notes or "")
    assert warm["batch-1"].elapsed_seconds is not None
    # the failed run's blocks were handed back before the next baseline: only the weights
    assert warm["batch-1"].baseline_reserved_bytes is not None
    assert warm["batch-1"].baseline_reserved_bytes < total // 8
    assert out.completed


@pytest.mark.gpu
def test_h02_gpu_second_device_synchronized_by_name() -> None:
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs (H-02: work on cuda:1 while cuda:0 is current)")
    from gpusession.bench.timing import SyncTimer, TorchCudaOps

    a = torch.randn(8192, 8192, device="cuda:1")
    torch.cuda.set_device(0)
    timer = SyncTimer(["cuda:0", "cuda:1"], TorchCudaOps(torch),
                      event_factory=TorchCudaOps(torch).event_pair("cuda:1"))
    m = timer.measure(lambda: a @ a)
    assert m.event_elapsed_s is not None and m.elapsed_s >= 0.95 * m.event_elapsed_s
    # events recorded on cuda:1's stream (not the current cuda:0's) cover the work
    assert m.event_elapsed_s > 0.5 * m.elapsed_s


@pytest.mark.gpu
@pytest.mark.parametrize("spelling", ["cuda", "cuda:0"])
def test_m1_r3_gpu_load_row_baseline_measured_and_context_inside_the_load(
        sessions_root: Path, spelling: str) -> None:
    """The load row's baseline is read right before load() (never a 0 not measured), its
    peaks are the load's, and no CUDA context exists before the load clock starts: the
    driver's own answer (``cuDevicePrimaryCtxGetState``), not torch's flag, is false after
    the device is resolved and true once it is activated."""
    import subprocess
    import sys

    tests = str(Path(__file__).resolve().parents[1])
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from gpu_workloads import primary_context_active as a;"
             f"from gpusession.bench.device import TorchDevice; d = TorchDevice({spelling!r});"
             "before = a(0); d.activate(); print(d.device, before, a(0))")
    done = subprocess.run([sys.executable, "-c", probe, tests], capture_output=True, text=True, check=False)
    if "libcuda.so.1" in done.stderr:
        pytest.skip("libcuda.so.1 cannot be loaded here: not an NVIDIA driver")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cuda:0", "False", "True"]
    s = Session.create(sessions_root, "l", package=Package("RTX A5000", 1, 7))
    exp = _mlp(s, spelling, values=(64,), runs_per_variant=1, cold_runs_per_variant=0)
    out = Runner(s, exp.id).run()
    assert out.completed, out.incidents
    load = [r for r in s.results.rows() if r.phase == "load"][0]
    assert load.baseline_allocated_bytes is not None and load.baseline_reserved_bytes is not None
    assert load.peak_allocated_bytes is not None
    assert load.peak_allocated_bytes >= load.baseline_allocated_bytes + expected_memory(1024, 4, 64)["parameter_bytes"]
    assert load.elapsed_seconds is not None and load.elapsed_seconds > 0


@pytest.mark.gpu
def test_r7_m1_gpu_run_after_an_oom_is_preceded_by_an_unmeasured_pass(
        sessions_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``values = 8,1``: each batch-1 run follows a real OOM at batch 8 in the same worker,
    raised while the failing code holds 30 % of the device; it is preceded by one
    unmeasured pass, measured from a baseline without the held block, and its reserved
    figures carry the note that the allocator keeps blocks between runs."""
    import torch
    from fake_workloads import with_tests_on_path

    from gpusession.bench.timing import RESERVED_CARRY_NOTE

    total = torch.cuda.get_device_properties(0).total_memory
    with_tests_on_path(monkeypatch)
    s = Session.create(sessions_root, "p", package=Package("RTX A5000", 1, 7))
    exp = define_experiment(s, Experiment(
        id="huge", workload="gpu_workloads:OomWhileHolding", corpus=None, varied="batch", values=(8, 1),
        runs_per_variant=2, warmup_iterations=0, cold_runs_per_variant=0, device="cuda",
        params={"oom_batch": 8, "hold_fraction": 0.3, "size": 1024, "matmuls": 2, "n_inputs": 8}))
    out = Runner(s, exp.id, continue_on_reject=True).run()  # an OOM first run: D3 would stop there
    assert out.completed
    assert len([r for r in s.read_journal() if r.get("event") == "worker_started"]) == 1
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert [r.variant_id for r in warm] == ["batch-8", "batch-1", "batch-8", "batch-1"]
    for r in warm:
        if r.variant_id == "batch-8":
            assert r.elapsed_seconds is None and "out of memory" in (r.notes or "")
        else:
            assert r.elapsed_seconds is not None and r.peak_reserved_bytes is not None
            assert "unmeasured pass after an out-of-memory run" in (r.notes or "")
            assert r.baseline_reserved_bytes is not None and r.baseline_reserved_bytes < 0.1 * total
            assert RESERVED_CARRY_NOTE in (r.notes or "")
    passes = [r for r in s.read_journal()
              if r.get("event") == "run_finished" and r.get("variant_id") == "batch-1"]
    assert [r.get("unmeasured_pass") for r in passes] == ["after an out-of-memory run"] * 2
