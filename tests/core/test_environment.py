"""gpusession.core.environment: NVML via a fake module, host memory, device mapping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpusession.core.environment import (
    decode_nvml_str,
    device_for,
    parse_visible_devices,
    read_cgroup_limit,
    read_concurrent_load,
    read_host_memory,
    read_nvml,
    visible_device_map,
)


class FakeNvml:
    """A pynvml-like module: two GPUs in PCI order, strings as bytes or str."""

    def __init__(self, *, as_bytes: bool = False, init_error: Exception | None = None) -> None:
        self.as_bytes = as_bytes
        self.init_error = init_error
        self.shutdown_called = False
        self.gpus = [
            ("GPU-aaaa-0000", "NVIDIA RTX A5000", 24 * 2**30, 1 * 2**30, [(111, 500 * 2**20)]),
            ("GPU-bbbb-1111", "NVIDIA RTX A5000", 24 * 2**30, 2 * 2**30, [(222, None)]),
        ]

    def _s(self, text: str) -> Any:
        return text.encode() if self.as_bytes else text

    def nvmlInit(self) -> None:
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.shutdown_called = True

    def nvmlSystemGetDriverVersion(self) -> Any:
        return self._s("535.104.05")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, h: int) -> Any:
        return self._s(self.gpus[h][0])

    def nvmlDeviceGetName(self, h: int) -> Any:
        return self._s(self.gpus[h][1])

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=self.gpus[h][2], used=self.gpus[h][3], free=0)

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return [SimpleNamespace(pid=p, usedGpuMemory=u) for p, u in self.gpus[h][4]]


def test_h06_driver_version_bytes_and_str_decode_the_same() -> None:
    assert decode_nvml_str(b"535.104.05") == "535.104.05"
    assert decode_nvml_str("535.104.05") == "535.104.05"
    for as_bytes in (True, False):
        snap = read_nvml(FakeNvml(as_bytes=as_bytes))
        assert snap.available
        assert snap.driver_version == "535.104.05"
        assert snap.gpus[0].name == "NVIDIA RTX A5000"
        assert snap.gpus[1].uuid == "GPU-bbbb-1111"


def test_h07_nvml_init_failure_gives_reason_not_exception() -> None:
    fake = FakeNvml(init_error=RuntimeError("Driver Not Loaded"))
    snap = read_nvml(fake)
    assert snap.available is False
    assert snap.gpus == ()
    assert snap.driver_version is None
    assert snap.reason is not None and "Driver Not Loaded" in snap.reason
    assert "no NVIDIA driver" in snap.reason


def test_h07_nvml_missing_on_this_machine_never_raises() -> None:
    snap = read_nvml()  # real pynvml, no driver here (or a real GPU: then available)
    assert snap.available or snap.reason


def test_h04_process_memory_is_nvml_device_total_with_unknown_kept_none() -> None:
    snap = read_nvml(FakeNvml())
    p0 = snap.gpus[0].processes[0]
    assert p0.pid == 111 and p0.used_bytes == 500 * 2**20
    assert snap.gpus[1].processes[0].used_bytes is None  # not reported ≠ 0 (M4 spirit)
    assert snap.gpus[0].memory_used_bytes == 2**30


def test_h05_visible_devices_map_torch_index_to_physical_gpu() -> None:
    snap = read_nvml(FakeNvml())
    one = visible_device_map({"CUDA_VISIBLE_DEVICES": "1"}, snap)
    assert [(d.torch_index, d.physical_index, d.uuid) for d in one] == [(0, 1, "GPU-bbbb-1111")]
    swapped = visible_device_map({"CUDA_VISIBLE_DEVICES": "1,0"}, snap)
    assert [d.uuid for d in swapped] == ["GPU-bbbb-1111", "GPU-aaaa-0000"]
    by_uuid = visible_device_map({"CUDA_VISIBLE_DEVICES": "GPU-aaaa"}, snap)
    assert by_uuid[0].physical_index == 0
    unset = visible_device_map({}, snap)
    assert [d.physical_index for d in unset] == [0, 1]
    assert visible_device_map({"CUDA_VISIBLE_DEVICES": ""}, snap) == ()
    dev = device_for("cuda:1", {"CUDA_VISIBLE_DEVICES": "1,0"}, snap)
    assert dev is not None and dev.uuid == "GPU-aaaa-0000"
    assert device_for("cpu", {}, snap) is None


def test_h05_parse_visible_devices_stops_at_invalid_entry() -> None:
    assert parse_visible_devices(None) is None
    assert parse_visible_devices("0,2,-1,1") == ["0", "2"]
    assert parse_visible_devices(" 1 , 0 ") == ["1", "0"]
    assert parse_visible_devices("0,,1") == ["0"]


def test_r10_concurrent_load_lists_other_gpu_processes() -> None:
    snap = read_nvml(FakeNvml())
    load = read_concurrent_load(own_pids={111}, snapshot=snap, interval_s=0.0)
    assert load.other_gpu_processes == ((222, 1, None),)
    assert "pid 222 on GPU 1" in load.describe()
    failed = read_nvml(FakeNvml(init_error=RuntimeError("x")))
    load2 = read_concurrent_load(snapshot=failed, interval_s=0.0)
    assert "unknown" in load2.describe()


def test_host_memory_and_cgroup_limit(tmp_path: Path) -> None:
    hm = read_host_memory()
    assert hm.total_bytes > 0 and 0 <= hm.available_bytes <= hm.total_bytes
    v2 = tmp_path / "memory.max"
    v2.write_text("max\n")
    assert read_cgroup_limit(v2, tmp_path / "none") is None
    v2.write_text("1073741824\n")
    assert read_cgroup_limit(v2, tmp_path / "none") == 2**30
    v1 = tmp_path / "limit"
    v1.write_text(str(2**63 - 4096))
    assert read_cgroup_limit(tmp_path / "none", v1) is None


def test_m5_environment_module_never_imports_torch() -> None:
    code = (
        "import sys, gpusession.core.environment as e; e.read_nvml(); e.read_host_memory();"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


class FakeMigNvml(FakeNvml):
    """GPU 1 is in MIG mode with two instances; GPU 0 does not support MIG."""

    MIGS = {1: ["MIG-1111-aaaa", "MIG-2222-bbbb"]}

    def nvmlDeviceGetMaxMigDeviceCount(self, h: Any) -> int:
        if h not in self.MIGS:
            raise RuntimeError("Not Supported")
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: int, i: int) -> Any:
        if i >= len(self.MIGS[h]):
            raise RuntimeError("Not Found")
        return ("mig", h, i)

    def nvmlDeviceGetUUID(self, h: Any) -> Any:
        if isinstance(h, tuple):
            return self._s(self.MIGS[h[1]][h[2]])
        return super().nvmlDeviceGetUUID(h)


def test_h05_mig_ids_in_visible_devices_map_to_the_parent_gpu() -> None:
    snap = read_nvml(FakeMigNvml(as_bytes=True))
    assert snap.gpus[1].mig_uuids == ("MIG-1111-aaaa", "MIG-2222-bbbb")
    assert snap.gpus[0].mig_uuids == ()
    mig = visible_device_map({"CUDA_VISIBLE_DEVICES": "MIG-2222"}, snap)
    assert [(d.physical_index, d.uuid) for d in mig] == [(1, "MIG-2222-bbbb")]
    old_style = visible_device_map({"CUDA_VISIBLE_DEVICES": "MIG-GPU-bbbb-1111/1/0"}, snap)
    assert [(d.physical_index, d.uuid) for d in old_style] == [(1, "MIG-GPU-bbbb-1111/1/0")]
    unknown = visible_device_map({"CUDA_VISIBLE_DEVICES": "MIG-9999"}, snap)
    assert [(d.physical_index, d.uuid) for d in unknown] == [(None, "MIG-9999")]


def test_h05_gpu_for_uuid_accepts_torch_bare_uuid_and_nvml_prefixes() -> None:
    from gpusession.core.environment import gpu_for_uuid

    snap = read_nvml(FakeMigNvml())
    gpu, uuid = gpu_for_uuid("bbbb-1111", snap)  # torch: props.uuid without prefix
    assert gpu is not None and gpu.index == 1 and uuid == "GPU-bbbb-1111"
    gpu, uuid = gpu_for_uuid("1111-AAAA", snap)  # a MIG instance, any case
    assert gpu is not None and gpu.index == 1 and uuid == "MIG-1111-aaaa"
    assert gpu_for_uuid("GPU-aaaa-0000", snap)[0] is not None
    assert gpu_for_uuid("cccc", snap) == (None, None)
    assert gpu_for_uuid("bbbb", snap) == (None, None)  # a prefix is not torch's full UUID
