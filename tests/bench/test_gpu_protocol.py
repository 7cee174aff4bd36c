"""The measurement protocol on a real GPU, through the runner and its worker.

Each test runs a small torch workload of ``tests/gpu_workloads.py`` whose effect on the
figures is known in advance, so it fails when the product measures it wrongly: work on a
side stream, a large freed block before a small job, an out-of-memory error with memory
held, the clocks, the device's UUID under each ``CUDA_VISIBLE_DEVICES`` spelling, this
process in NVML's list, the primary context before and inside the load clock, and a
torchrun group that runs out of memory. Skipped with the reason where torch sees no GPU
(``tests/conftest.py``); a skip is never a pass.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="torch not installed")

from fake_workloads import with_tests_on_path
from gpu_workloads import GIB, MIB, primary_context_active, side_stream_seconds
from helpers import processes_naming

from gpusession.bench.runner import Runner
from gpusession.bench.timing import RESERVED_CARRY_NOTE
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session

pytestmark = pytest.mark.gpu


@pytest.fixture
def workloads_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes (and torchrun ranks) import ``gpu_workloads``."""
    with_tests_on_path(monkeypatch)


def _session(root: Path, name: str) -> Session:
    return Session.create(root, name, package=Package("H200", 1, 7))


def _define(s: Session, exp_id: str, workload: str, **kw: Any) -> Experiment:
    base: dict[str, Any] = dict(
        id=exp_id, workload=f"gpu_workloads:{workload}", corpus=None, varied="batch",
        values=(4,), runs_per_variant=3, warmup_iterations=1, cold_runs_per_variant=0,
        device="cuda", run_timeout_s=120.0, params={"n_inputs": 4},
    )
    base.update(kw)
    return define_experiment(s, Experiment(**base))


def _warm(s: Session, exp_id: str | None = None) -> list[Any]:
    return [r for r in s.results.rows()
            if r.phase == "warm" and (exp_id is None or r.experiment_id == exp_id)]


def _total_bytes() -> int:
    import torch

    return int(torch.cuda.get_device_properties(0).total_memory)


def _cuda0_in_nvml() -> tuple[str, int]:
    """NVML's UUID and index of the GPU torch calls ``cuda:0`` in this process."""
    import torch

    from gpusession.core.gpu.devices import gpu_for_uuid, torch_device_uuid
    from gpusession.core.gpu.nvml import read_nvml

    snap = read_nvml()
    torch_uuid = torch_device_uuid(torch, "cuda:0")
    if not snap.available or not torch_uuid:
        pytest.skip(f"no UUID to map by here (NVML: {snap.reason}; torch's UUID: {torch_uuid})")
    gpu, uuid = gpu_for_uuid(torch_uuid, snap)
    assert gpu is not None and uuid, f"torch's cuda:0 UUID {torch_uuid} is not in NVML's list"
    return uuid, gpu.index


# -- the stopwatch waits for every stream of the device ------------------------------------
def test_work_on_a_side_stream_is_inside_the_wall_time(sessions_root: Path, workloads_env: None) -> None:
    """The workload queues ~100 ms of matmuls on its own stream and returns at once; each
    warm row's elapsed is at least that work timed on its own (a stopwatch that waited
    for the current stream only would read the launch time, a fraction of a millisecond).
    The CUDA-event figure is journal-only: what it covered is printed with a failure."""
    side_s = side_stream_seconds("cuda:0", 4096, 40)
    assert side_s > 0.01, f"the side-stream work took only {side_s:.4f} s: too short to tell"
    s = _session(sessions_root, "stream")
    _define(s, "side", "SideStream", params={"n_inputs": 4, "size": 4096, "matmuls": 40})
    out = Runner(s, "side").run()
    assert out.completed, out.incidents
    warm = _warm(s)
    assert len(warm) == 3
    events = [r.get("event_elapsed_s") for r in s.read_journal() if r.get("event") == "run_finished"]
    for r in warm:
        assert r.elapsed_seconds is not None
        assert r.elapsed_seconds >= 0.8 * side_s, (
            f"warm elapsed {r.elapsed_seconds:.4f} s < side-stream work {side_s:.4f} s "
            f"(event figures {events})")


# -- peaks rebased after a reset; reserved carry-over said ---------------------------------
def test_peak_is_rebased_after_a_freed_4_gib_block_and_reserved_carry_is_said(
        sessions_root: Path, workloads_env: None) -> None:
    """The load allocates 4 GiB and frees it; each run allocates 64 MiB. Without the peak
    reset before each run its peak allocated would read ≥ 4 GiB; with it, the job's own
    64 MiB. The allocator still holds the freed block: the baseline reserved shows it
    and the row's notes say that reserved bytes carry blocks of earlier work."""
    s = _session(sessions_root, "rebase")
    _define(s, "rebase", "Rebase", params={"n_inputs": 4, "carry_bytes": 4 * GIB, "job_bytes": 64 * MIB})
    out = Runner(s, "rebase").run()
    assert out.completed, out.incidents
    load = [r for r in s.results.rows() if r.phase == "load"][0]
    assert load.peak_allocated_bytes is not None and load.peak_allocated_bytes >= 4 * GIB  # it really held 4 GiB
    warm = _warm(s)
    assert len(warm) == 3
    for r in warm:
        assert r.peak_allocated_bytes is not None
        assert 64 * MIB <= r.peak_allocated_bytes < 512 * MIB, r.peak_allocated_bytes  # rebased
        assert r.baseline_reserved_bytes is not None and r.baseline_reserved_bytes >= 4 * GIB
        assert r.peak_reserved_bytes is not None and r.peak_reserved_bytes >= 4 * GIB
        assert RESERVED_CARRY_NOTE in (r.notes or "")


def test_timer_peak_is_the_measured_work_s_own_after_a_freed_block() -> None:
    """The stopwatch itself, on torch's allocator: a 4 GiB block allocated and freed before
    the measurement does not show in its peak allocated; it does in the reserved baseline."""
    import torch

    from gpusession.bench.timing import SyncTimer, TorchCudaOps

    big = torch.empty(4 * GIB, dtype=torch.uint8, device="cuda:0")
    big.fill_(1)
    del big
    ops = TorchCudaOps(torch)
    timer = SyncTimer(["cuda:0"], ops, event_factory=ops.event_pair("cuda:0"))

    def job() -> None:
        buf = torch.empty(64 * MIB, dtype=torch.uint8, device="cuda:0")
        buf.fill_(3)

    m = timer.measure(job)
    assert m.peak_allocated_bytes is not None and 64 * MIB <= m.peak_allocated_bytes < 512 * MIB
    assert m.baseline_reserved_bytes is not None and m.baseline_reserved_bytes >= 4 * GIB
    torch.cuda.empty_cache()


# -- out of memory with memory held ---------------------------------------------------------
def test_oom_while_holding_30_percent_returns_memory_and_the_next_run_is_not_an_outlier(
        sessions_root: Path, workloads_env: None) -> None:
    """Batch 8 holds 30 % of the device, then asks for the whole device (a real OOM with
    the held tensor referenced by the failing frame); each batch-1 run follows one. After
    it the allocator is back where a clean run starts (allocated equal to a run that saw
    no OOM, reserved well under the 30 %), and no batch-1 run is over 1.5× the median of
    the same job in an experiment without OOM."""
    total = _total_bytes()
    s = _session(sessions_root, "oom")
    params = {"n_inputs": 8, "oom_batch": 8, "hold_fraction": 0.3, "size": 4096, "matmuls": 8}
    _define(s, "clean", "OomWhileHolding", values=(1,), runs_per_variant=5, params=params)
    _define(s, "ooms", "OomWhileHolding", values=(8, 1), runs_per_variant=3, warmup_iterations=0,
            params=params)
    Runner(s, "clean").run()
    clean = _warm(s, "clean")
    assert len(clean) == 5 and all(r.elapsed_seconds is not None for r in clean)
    median_s = statistics.median(r.elapsed_seconds for r in clean)
    out = Runner(s, "ooms", continue_on_reject=True).run()  # an OOM first run: D3 would stop there
    warm = _warm(s, "ooms")
    failed = [r for r in warm if r.variant_id == "batch-8"]
    after = [r for r in warm if r.variant_id == "batch-1"]
    assert len(failed) == 3 and len(after) == 3
    for r in failed:
        assert r.elapsed_seconds is None and "out of memory" in (r.notes or "").lower(), r.notes
    for r in after:
        assert r.elapsed_seconds is not None, r.notes
        assert r.baseline_allocated_bytes == clean[0].baseline_allocated_bytes  # nothing left held
        assert r.baseline_reserved_bytes is not None and r.baseline_reserved_bytes < 0.1 * total
        assert r.elapsed_seconds <= 1.5 * median_s, (
            f"run after an OOM took {r.elapsed_seconds:.4f} s, median without OOM {median_s:.4f} s")
    assert len([r for r in s.read_journal() if r.get("event") == "worker_started"]) == 2  # one each
    assert out.completed, out.incidents


# -- clocks read idle and under load, recorded ----------------------------------------------
def _clock_fields(doc: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(v, dict):
                out.update(_clock_fields(v, f"{prefix}{k}."))
            elif "clock" in str(k).lower() or "throttl" in str(k).lower():
                out[f"{prefix}{k}"] = v
    return out


def test_clocks_are_read_idle_and_at_the_end_of_each_run_and_a_throttled_run_is_named(
        sessions_root: Path, workloads_env: None) -> None:
    """NVML's SM clock is read idle (the environment, before the warm-up) and under load
    (the end of each measured run: a clock field of its ``run_finished`` record, or a
    clock in MHz in the row's notes); a run whose reading names a throttle reason says
    so in its notes. Checks the observable only: the record's field names are the
    product's own (any key holding ``clock`` / ``throttl``)."""
    from gpusession.core.gpu.nvml import read_clock_state

    idle = read_clock_state(0)
    if idle.sm_clock_mhz is None:
        pytest.skip(f"NVML gives no SM clock here ({idle.reason})")
    s = _session(sessions_root, "clocks")
    _define(s, "clocks", "SideStream", params={"n_inputs": 4, "size": 4096, "matmuls": 40})
    out = Runner(s, "clocks").run()
    assert out.completed, out.incidents
    env = s.data["environment"]
    assert isinstance(env.get("sm_clock_mhz"), int) and env["sm_clock_mhz"] > 0, env.get("clock_reason")
    finished = {r.get("run_key"): r for r in s.read_journal()
                if r.get("event") == "run_finished" and r.get("phase") == "warm"}
    assert len(finished) == 3
    for row in _warm(s):
        rec = next(r for r in finished.values()
                   if r.get("variant_id") == row.variant_id and r.get("run_index") == row.run_index)
        fields = _clock_fields(rec)
        clocks = [v for k, v in fields.items() if "clock" in k.lower() and isinstance(v, int)]
        assert clocks or "MHz" in (row.notes or ""), f"no clock read at the end of the run: {rec}"
        reasons = " ".join(str(v) for k, v in fields.items() if "throttl" in k.lower() or "reason" in k.lower())
        if any(w in reasons for w in ("thermal", "power")):
            assert "throttl" in (row.notes or "").lower(), (reasons, row.notes)


# -- the device is mapped by UUID whatever CUDA_VISIBLE_DEVICES says ------------------------
@pytest.mark.parametrize("spelling", ["unset", "index", "uuid", "uuid-prefix"])
def test_device_maps_by_uuid_for_every_visible_devices_spelling(
        sessions_root: Path, workloads_env: None, monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    """``CUDA_VISIBLE_DEVICES`` unset, ``0``, the full UUID and its first 12 characters
    (``GPU-`` and 8 hex digits): the run's environment names the GPU by its NVML UUID,
    found by UUID, at its NVML index. Expected: the GPU torch calls ``cuda:0`` here
    (with the variable unset on a machine of several GPUs, CUDA's own first GPU)."""
    import torch

    uuid, index = _cuda0_in_nvml()
    value = {"unset": None, "index": "0", "uuid": uuid, "uuid-prefix": uuid[:12]}[spelling]
    if value is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    s = _session(sessions_root, f"cvd-{spelling}")
    _define(s, "map", "Rebase", runs_per_variant=1, warmup_iterations=0,
            params={"n_inputs": 4, "carry_bytes": MIB, "job_bytes": MIB})
    out = Runner(s, "map").run()
    assert out.completed, out.incidents
    env = s.data["environment"]
    assert env.get("cuda_visible_devices") == value
    assert env.get("gpu_mapping") == "by UUID", env.get("gpu_mapping")
    if value in (None, "0") and torch.cuda.device_count() > 1:  # CUDA's own order decides
        assert str(env.get("gpu_uuid", "")).startswith(("GPU-", "MIG-"))
        return
    assert env.get("gpu_uuid") == uuid
    assert env.get("gpu_physical_index") == index


# -- this process in NVML's list, or said not visible ---------------------------------------
def test_own_pid_is_in_nvml_s_list_on_bare_metal_or_said_not_visible_in_a_container(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """This process holds a CUDA context; NVML lists it by PID on bare metal (with its
    name), while in a container every listed PID is the host's and is said "not visible
    from this container", never named from a local lookup."""
    import torch

    from gpusession.core.gpu.host import in_container
    from gpusession.core.gpu.nvml import read_nvml

    monkeypatch.delenv("GPUSESSION_PID_NAMESPACE", raising=False)  # detected, as on a user's machine
    x = torch.ones(MIB, device="cuda:0")
    torch.cuda.synchronize()
    snap = read_nvml()
    assert snap.available, snap.reason
    uuid, index = _cuda0_in_nvml()
    gpu = snap.gpus[index]
    if not gpu.processes_known:
        reason = gpu.why_unread("processes") or gpu.why_unread("handle")
        assert reason, "processes neither listed nor said why"
        pytest.skip(f"NVML cannot list the processes of {uuid} here: {reason}")
    words = [p.words() for p in gpu.processes]
    if in_container():
        assert not any(p.name for p in gpu.processes), words  # never a local name for a host PID
        assert all("not visible from this container" in w or w.startswith("unreadable") for w in words), words
    else:
        import psutil

        mine = [p for p in gpu.processes if p.pid == os.getpid()]
        assert mine, f"PID {os.getpid()} not in NVML's list: {words}"
        assert mine[0].name == psutil.Process().name(), words
    del x


# -- the primary context is created inside the load clock ------------------------------------
def _probe_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _needs_libcuda() -> None:
    try:
        primary_context_active(0)
    except OSError as exc:
        pytest.skip(f"libcuda.so.1 cannot be loaded here ({exc}): not an NVIDIA driver")


@pytest.mark.parametrize("torchrun", [False, True], ids=["one-process", "torchrun-rank"])
def test_primary_context_is_created_inside_the_load_phase(
        sessions_root: Path, workloads_env: None, torchrun: bool) -> None:
    """The driver's own answer (``cuDevicePrimaryCtxGetState``), not torch's flag: no
    primary context when the worker makes the workload (before the load clock starts),
    one when ``load`` starts (inside the clock), in one process and in a torchrun rank
    alike; the load row is measured."""
    _needs_libcuda()
    s = _session(sessions_root, "ctx-rank" if torchrun else "ctx")
    log = s.folder / "probe.jsonl"
    _define(s, "ctx", "ContextProbe", runs_per_variant=1, warmup_iterations=0,
            params={"n_inputs": 4, "log": str(log)})
    out = Runner(s, "ctx", torchrun=torchrun).run()
    assert out.completed, out.incidents
    lines = [r for r in _probe_lines(log) if r["pid"] != os.getpid()]  # the workers' only
    made = [r for r in lines if r["where"] == "made"]
    loaded = [r for r in lines if r["where"] == "load"]
    assert made and loaded, lines
    assert all(r["active"] is False for r in made), f"a context existed before the load clock: {lines}"
    assert all(r["active"] is True for r in loaded), lines
    load = [r for r in s.results.rows() if r.phase == "load"][0]
    assert load.elapsed_seconds is not None and load.elapsed_seconds > 0


def test_the_probe_sees_a_context_torch_created(tmp_path: Path) -> None:
    """The probe itself can fail: false in a fresh process, true once torch has created
    the context (run in a child process, so this one's context does not answer)."""
    import subprocess
    import sys

    _needs_libcuda()
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from gpu_workloads import primary_context_active as a;"
            "b = a(0); import torch; torch.ones(1, device='cuda:0'); torch.cuda.synchronize(); print(b, a(0))")
    tests = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code, tests], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


# -- a one-rank torchrun group that runs out of memory ---------------------------------------
def test_one_rank_torchrun_oom_fails_the_row_ends_the_group_and_a_fresh_group_goes_on(
        sessions_root: Path, workloads_env: None) -> None:
    """NCCL, one rank: batch 8 runs out of memory while holding 30 % of the device. Its
    row fails naming the OOM, that group ends, a fresh group runs batch 1 (measured), and
    the whole experiment ends well inside its timeouts with no process left."""
    s = _session(sessions_root, "rank-oom")
    _define(s, "rank-oom", "OomWhileHolding", values=(8, 1), runs_per_variant=1, warmup_iterations=0,
            run_timeout_s=90.0,
            params={"n_inputs": 8, "oom_batch": 8, "hold_fraction": 0.3, "size": 2048, "matmuls": 2})
    t0 = time.monotonic()
    out = Runner(s, "rank-oom", torchrun=True, continue_on_reject=True).run()  # an OOM first run: D3 would stop there
    took = time.monotonic() - t0
    warm = {r.variant_id: r for r in _warm(s)}
    assert warm["batch-8"].elapsed_seconds is None
    assert "out of memory" in (warm["batch-8"].notes or "").lower(), warm["batch-8"].notes
    assert warm["batch-1"].elapsed_seconds is not None, warm["batch-1"].notes
    order = [r.variant_id for r in _warm(s)]  # rows are written as the runs end
    groups = [r for r in s.read_journal() if r.get("event") == "worker_started"]
    if order.index("batch-8") < order.index("batch-1"):
        assert len(groups) == 2, groups  # the failed group ended; a fresh one ran batch 1
        assert any("a fresh group" in i for i in out.incidents), out.incidents
    assert took < 80, f"took {took:.0f} s: a group waited for the failed one"
    assert processes_naming(s.folder) == []
