"""core/gpu: NVML via a fake module (nvml), host memory (host), device mapping (devices)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpusession.core.gpu.devices import device_for, parse_visible_devices, visible_device_map
from gpusession.core.gpu.environment import read_concurrent_load
from gpusession.core.gpu.host import read_cgroup_limit, read_host_memory
from gpusession.core.gpu.nvml import decode_nvml_str, read_nvml


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
    assert not load.quiet and not load2.quiet  # another process; processes not known


def test_host_memory_reads_psutil() -> None:
    hm = read_host_memory()
    assert hm.total_bytes > 0 and 0 <= hm.available_bytes <= hm.total_bytes
    assert hm.limit_bytes <= hm.total_bytes


def _cgroup_tree(tmp_path: Path, self_cgroup: str, files: dict[str, str]) -> tuple[Path, Path]:
    proc, cg = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(self_cgroup)
    cg.mkdir()
    for rel, text in files.items():
        f = cg / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return proc, cg


def test_h19_cgroup_v2_limit_is_the_process_own_cgroup_not_the_root(tmp_path: Path) -> None:
    proc, cg = _cgroup_tree(tmp_path, "0::/job/abc\n", {
        "memory.max": "max\n",            # the root: no limit
        "job/memory.max": "max\n",
        "job/abc/memory.max": "1073741824\n",
    })
    assert read_cgroup_limit(proc, cg) == 2**30
    hm = read_host_memory(proc, cg)
    assert hm.cgroup_limit_bytes == 2**30 and hm.cgroup_path == "/job/abc"
    assert hm.container_limited and hm.limit_bytes == 2**30
    assert hm.limit_words().startswith("container limit 1073741824 bytes (cgroup /job/abc)")
    assert "tighter than host RAM" in hm.limit_words()


def test_h19_poller_reader_gives_the_own_cgroup_limit_and_rereads_it_every_slow_s(
    tmp_path: Path,
) -> None:
    """The memory pane's reader: the same figures as read_host_memory (own cgroup, v2 and
    v1), RAM at every reading, swap and limit again only once ``slow_s`` has passed."""
    from gpusession.core.gpu.host import HostMemoryReader

    proc, cg = _cgroup_tree(tmp_path, "0::/job/abc\n", {
        "memory.max": "max\n", "job/abc/memory.max": "1073741824\n"})
    now = [100.0]
    reader = HostMemoryReader(proc, cg, slow_s=10.0, clock=lambda: now[0])
    first = reader.read()
    assert (first.cgroup_limit_bytes, first.cgroup_path) == (2**30, "/job/abc")
    assert first.total_bytes == read_host_memory(proc, cg).total_bytes
    (cg / "job" / "abc" / "memory.max").write_text("536870912\n")
    now[0] += 9.0
    assert reader.read().cgroup_limit_bytes == 2**30  # younger than slow_s: kept
    now[0] += 1.0
    assert reader.read().cgroup_limit_bytes == 2**29  # slow_s passed: read again
    proc, cg = _cgroup_tree(tmp_path / "v1", "9:memory:/job/abc\n", {
        "memory/memory.limit_in_bytes": str(2**63 - 4096),
        "memory/job/abc/memory.limit_in_bytes": "1073741824\n"})
    assert HostMemoryReader(proc, cg).read().cgroup_limit_bytes == 2**30


def test_h19_cgroup_v2_tightest_limit_up_the_hierarchy(tmp_path: Path) -> None:
    proc, cg = _cgroup_tree(tmp_path, "0::/job/abc\n", {
        "job/memory.max": "536870912\n",   # the parent is tighter than the child
        "job/abc/memory.max": "1073741824\n",
    })
    assert read_cgroup_limit(proc, cg) == 2**29
    proc, cg = _cgroup_tree(tmp_path / "none", "0::/job/abc\n", {"job/abc/memory.max": "max\n"})
    assert read_cgroup_limit(proc, cg) is None
    # a namespaced container: the mount is the container's own cgroup, the path the host's
    proc, cg = _cgroup_tree(tmp_path / "ns", "0::/kubepods/pod1/c1\n", {"memory.max": "2147483648\n"})
    assert read_cgroup_limit(proc, cg) == 2 * 2**30
    assert read_cgroup_limit(tmp_path / "no-proc", cg) is None


def test_h19_cgroup_v1_memory_controller_line(tmp_path: Path) -> None:
    proc, cg = _cgroup_tree(tmp_path, "12:cpu,cpuacct:/other\n9:memory:/job/abc\n0::/job/abc\n", {
        "memory/memory.limit_in_bytes": str(2**63 - 4096),    # the root: "unlimited"
        "memory/job/memory.limit_in_bytes": str(2**63 - 4096),
        "memory/job/abc/memory.limit_in_bytes": "1073741824\n",
        "job/abc/memory.max": "max\n",  # hybrid: the unified tree has no memory limit
    })
    assert read_cgroup_limit(proc, cg) == 2**30
    proc, cg = _cgroup_tree(tmp_path / "unlimited", "9:memory:/job/abc\n", {
        "memory/job/abc/memory.limit_in_bytes": str(2**63 - 4096)})
    assert read_cgroup_limit(proc, cg) is None


def test_h19_looser_container_limit_leaves_host_ram_as_the_limit(tmp_path: Path) -> None:
    from gpusession.core.gpu.host import HostMemory

    hm = HostMemory(8 * 2**30, 4 * 2**30, 4 * 2**30, 0, 0, 64 * 2**30, "/job/abc")
    assert not hm.container_limited and hm.limit_bytes == 8 * 2**30
    assert "is looser" in hm.limit_words()


def test_m5_gpu_modules_never_import_torch() -> None:
    code = (
        "import sys, gpusession.core.gpu.environment, gpusession.core.gpu.devices as d;"
        "import gpusession.core.gpu.nvml as n, gpusession.core.gpu.host as h;"
        "n.read_nvml(); n.read_clocks(0); h.read_host_memory(); d.visible_device_map({});"
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
    from gpusession.core.gpu.devices import gpu_for_uuid

    snap = read_nvml(FakeMigNvml())
    gpu, uuid = gpu_for_uuid("bbbb-1111", snap)  # torch: props.uuid without prefix
    assert gpu is not None and gpu.index == 1 and uuid == "GPU-bbbb-1111"
    gpu, uuid = gpu_for_uuid("1111-AAAA", snap)  # a MIG instance, any case
    assert gpu is not None and gpu.index == 1 and uuid == "MIG-1111-aaaa"
    assert gpu_for_uuid("GPU-aaaa-0000", snap)[0] is not None
    assert gpu_for_uuid("cccc", snap) == (None, None)
    assert gpu_for_uuid("bbbb", snap) == (None, None)  # a prefix is not torch's full UUID


def _three_gpus(**errors: BaseException) -> Any:
    from gpusession.testing import FakeGpu, FakeNvml

    gpus = [FakeGpu(uuid=f"GPU-{i}{i}{i}{i}-0000", processes=[(1000 + i, 2**20)]) for i in range(3)]
    for reading, exc in errors.items():
        gpus[1].errors[reading] = exc
    return FakeNvml(gpus)


def test_h18_gpu_with_unsupported_memory_readout_is_kept_and_mapping_unchanged() -> None:
    import pynvml

    snap = read_nvml(_three_gpus(memory=pynvml.NVMLError_NotSupported()))
    assert snap.available and [g.index for g in snap.gpus] == [0, 1, 2]
    g1 = snap.gpus[1]
    assert g1.uuid == "GPU-1111-0000" and g1.name == "NVIDIA RTX A5000"  # identity by UUID
    assert g1.memory_total_bytes is None and g1.memory_used_bytes is None  # unknown, not 0
    assert g1.why_unread("memory") == "Not Supported"
    assert g1.memory_words() == "memory unknown (NVML: Not Supported)"
    assert snap.gpus[2].memory_total_bytes == 24 * 2**30
    for env in ({}, {"CUDA_VISIBLE_DEVICES": "0,1,2"}):
        mapped = visible_device_map(env, snap)
        assert [(d.torch_index, d.physical_index) for d in mapped] == [(0, 0), (1, 1), (2, 2)]
        dev = device_for("cuda:2", env, snap)
        assert dev is not None and dev.physical_index == 2 and dev.uuid == "GPU-2222-0000"
    by_uuid = visible_device_map({"CUDA_VISIBLE_DEVICES": "GPU-2222,GPU-1111"}, snap)
    assert [(d.physical_index, d.by) for d in by_uuid] == [(2, "uuid"), (1, "uuid")]


def test_h18_every_gpu_reading_fails_alone() -> None:
    import pynvml

    for reading in ("uuid", "name", "memory", "processes", "utilization", "sm_clock"):
        snap = read_nvml(_three_gpus(**{reading: pynvml.NVMLError_NotSupported()}))
        assert len(snap.gpus) == 3, reading
        g0, g1, g2 = snap.gpus
        assert g1.why_unread(reading) == "Not Supported", reading
        assert [r for r, _ in g1.unread] == [reading]
        assert g0.unread == () and g2.unread == (), reading
        assert device_for("cuda:2", {}, snap).physical_index == 2  # type: ignore[union-attr]
    snap = read_nvml(_three_gpus(handle=pynvml.NVMLError_Unknown()))
    assert [g.index for g in snap.gpus] == [0, 1, 2]
    assert snap.gpus[1].why_unread("handle") and snap.gpus[1].uuid is None
    assert device_for("cuda:2", {"CUDA_VISIBLE_DEVICES": "0,1,2"}, snap).physical_index == 2  # type: ignore[union-attr]
    ok = read_nvml(_three_gpus())
    assert ok.gpus[1].utilization_percent == 0 and ok.gpus[1].sm_clock_mhz == 1695


def test_h18_odd_memory_fields_fail_alone_too() -> None:
    fake = FakeNvml()
    fake.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(total="n/a", used=None)  # type: ignore[method-assign]
    snap = read_nvml(fake)
    assert len(snap.gpus) == 2 and snap.gpus[0].memory_total_bytes is None
    assert snap.gpus[0].processes[0].pid == 111


def test_r10_other_gpu_processes_unknown_when_nvml_cannot_list_them() -> None:
    import pynvml

    snap = read_nvml(_three_gpus(processes=pynvml.NVMLError_NoPermission()))
    assert not snap.gpus[1].processes_known and snap.gpus[0].processes_known
    load = read_concurrent_load(own_pids={1000, 1002}, snapshot=snap, interval_s=0.0)
    assert load.unlisted_gpus == ((1, "Insufficient Permissions"),)
    assert not load.gpu_processes_known
    words = load.describe()
    assert "none on GPU 0, 2" in words
    assert "unknown on GPU 1 (NVML could not list them: Insufficient Permissions)" in words
    assert not words.endswith("none")
    listed = read_concurrent_load(own_pids={1000, 1001, 1002}, snapshot=read_nvml(_three_gpus()),
                                  interval_s=0.0)
    assert listed.describe().endswith("other GPU processes: none") and listed.gpu_processes_known
    other = read_concurrent_load(own_pids={1000}, snapshot=snap, interval_s=0.0)
    assert "pid 1002 on GPU 2" in other.describe() and "unknown on GPU 1" in other.describe()
    # R11: the rows remark on a load from this typed fact, never by reading the words back
    assert listed.quiet and not load.quiet and not other.quiet


def test_r10_mig_processes_read_through_each_instance_handle() -> None:
    from gpusession.testing import FakeGpu, FakeMig, FakeNvml, NVMLError_NoPermission

    migs = [FakeMig("MIG-aaaa", processes=[(501, 2**20)]), FakeMig("MIG-bbbb", processes=[(502, 2**21)])]
    gpu = FakeGpu(uuid="GPU-cccc", processes=[], migs=migs,
                  errors={"processes": NVMLError_NoPermission()})  # the whole GPU: privileged only
    snap = read_nvml(FakeNvml([gpu]))
    g = snap.gpus[0]
    assert g.mig_uuids == ("MIG-aaaa", "MIG-bbbb") and g.processes_known
    assert [(p.pid, p.mig_uuid) for p in g.processes] == [(501, "MIG-aaaa"), (502, "MIG-bbbb")]
    migs[1].errors["processes"] = NVMLError_NoPermission()
    g = read_nvml(FakeNvml([gpu])).gpus[0]
    assert not g.processes_known and g.processes == ()
    assert g.why_unread("processes") == "Insufficient Permissions; MIG instance: Insufficient Permissions"
    words = read_concurrent_load(snapshot=read_nvml(FakeNvml([gpu])), interval_s=0.0).describe()
    assert "unknown on GPU 0" in words and "none" not in words


def test_h05_mapping_says_by_position_when_torch_gives_no_uuid() -> None:
    from gpusession.core.gpu.devices import map_torch_device, torch_device_uuid

    snap = read_nvml(_three_gpus())
    old_torch = SimpleNamespace(
        cuda=SimpleNamespace(get_device_properties=lambda d: SimpleNamespace(name="x")),
        device=lambda name: name)
    assert torch_device_uuid(old_torch, "cuda:1") is None
    m = map_torch_device("cuda:1", None, snap, {})
    assert (m.uuid, m.physical_index, m.by) == ("GPU-1111-0000", 1, "position")
    assert m.words().startswith("by position")
    new_torch = SimpleNamespace(
        cuda=SimpleNamespace(get_device_properties=lambda d: SimpleNamespace(uuid="2222-0000")),
        device=lambda name: name)
    m = map_torch_device("cuda:0", torch_device_uuid(new_torch, "cuda:0"), snap, {})
    assert (m.uuid, m.physical_index, m.by, m.words()) == ("GPU-2222-0000", 2, "uuid", "by UUID")
    m = map_torch_device("cuda:0", None, snap, {"CUDA_VISIBLE_DEVICES": "GPU-1111"})
    assert (m.physical_index, m.by) == (1, "uuid")
    gone = map_torch_device("cuda:5", "9999", snap, {})
    assert (gone.uuid, gone.physical_index, gone.by) == ("9999", None, "unresolved")
    assert gone.words() == "unresolved; torch's device UUID 9999 matched no GPU or MIG instance NVML lists"


def test_h18_evidence_names_the_kept_gpu_with_memory_unknown() -> None:
    import pynvml

    from gpusession.core.retrieval.evidence import _gpu_words

    snap = read_nvml(_three_gpus(memory=pynvml.NVMLError_NotSupported()))
    assert _gpu_words(snap.gpus[1]) == "GPU 1 NVIDIA RTX A5000 (GPU-1111-0000, memory unknown (Not Supported))"
    assert "24.0 GiB" in _gpu_words(snap.gpus[0])


def test_h33_impossible_pids_from_nvml_are_unreadable_never_named_nor_other_processes(
        monkeypatch: Any) -> None:
    """A driver/library mismatch: NVML lists PIDs 0 and 4294967295 on the device used."""
    from gpusession.testing import FakeGpu, FakeNvml
    from gpusession.ui.panes.memory import gpu_lines

    names: list[int] = []
    monkeypatch.setattr("gpusession.core.gpu.nvml.process_name", lambda pid: names.append(pid) or "init")
    snap = read_nvml(FakeNvml([FakeGpu(uuid="GPU-aaaa-0000", processes=[(0, 2**20), (4294967295, 2**21)])]))
    assert names == [] and all(p.name is None for g in snap.gpus for p in g.processes)  # never looked up
    load = read_concurrent_load(own_pids={12345}, snapshot=snap, interval_s=0.0)
    assert load.other_gpu_processes == ()  # never counted as another's process
    said = load.describe()
    assert "2 unreadable on GPU 0" in said and "pid 0" not in said and "pid 4294967295" not in said
    lines = "\n".join(gpu_lines(snap))
    assert lines.count("unreadable process (NVML gave PID") == 2 and "init" not in lines


def test_h33_in_a_container_a_host_pid_is_never_named_from_a_local_lookup(monkeypatch: Any) -> None:
    """PID 1 here is another program than the host's PID 1 that holds the GPU."""
    import os

    from gpusession.testing import FakeGpu, FakeNvml
    from gpusession.ui.panes.memory import gpu_lines

    monkeypatch.setenv("GPUSESSION_PID_NAMESPACE", "container")
    snap = read_nvml(FakeNvml([FakeGpu(uuid="GPU-aaaa-0000", processes=[(1, 2**20)])]))
    assert [p.name for p in snap.gpus[0].processes] == [None]
    assert "process not visible from this container (host PID 1)" in "\n".join(gpu_lines(snap))
    said = read_concurrent_load(own_pids={os.getpid()}, snapshot=snap, interval_s=0.0).describe()
    assert "host PID 1 (not visible from this container) on GPU 0" in said
    monkeypatch.setenv("GPUSESSION_PID_NAMESPACE", "host")  # --pid=host: the name is looked up
    named = read_nvml(FakeNvml([FakeGpu(uuid="GPU-aaaa-0000", processes=[(os.getpid(), 2**20)])]))
    assert named.gpus[0].processes[0].name
