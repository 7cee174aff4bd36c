"""MIG: an instance's memory on its own handle, and a torch UUID NVML does not know.

The fake NVML refuses the whole GPU's memory when MIG is on (``NoPermission``), as NVML
does for an unprivileged caller; each instance answers on its own handle.
"""

from __future__ import annotations

from gpusession.core.gpu.devices import map_torch_device
from gpusession.core.gpu.nvml import read_nvml
from gpusession.testing import GIB, FakeGpu, FakeMig, FakeNvml

MIG_A = "MIG-1a2b3c4d-0000-5000-8000-00000000000a"
MIG_B = "MIG-1a2b3c4d-0000-5000-8000-00000000000b"


def _mig_gpu() -> FakeGpu:
    return FakeGpu(name="NVIDIA H200", uuid="GPU-7777-0000", total_bytes=141 * GIB, processes=[],
                   migs=[FakeMig(MIG_A, total_bytes=18 * GIB, used_bytes=5 * GIB),
                         FakeMig(MIG_B, total_bytes=35 * GIB, used_bytes=0)])


def test_r10_mig_instance_memory_read_on_its_own_handle() -> None:
    g = read_nvml(FakeNvml([_mig_gpu()])).gpus[0]
    assert g.memory_used_bytes is None and g.why_unread("memory") == "Insufficient Permissions"
    a, b = g.mig(MIG_A), g.mig(MIG_B.upper())
    assert a is not None and b is not None
    assert (a.memory_total_bytes, a.memory_used_bytes, a.reason) == (18 * GIB, 5 * GIB, None)
    assert (b.memory_total_bytes, b.memory_used_bytes) == (35 * GIB, 0)
    assert f"MIG instance {MIG_A}: {5 * GIB} of {18 * GIB} bytes used" in g.memory_words()


def test_r10_mig_instance_memory_unread_alone_with_the_reason() -> None:
    from gpusession.testing import NVMLError_NotSupported

    gpu = _mig_gpu()
    gpu.migs[0].errors["memory"] = NVMLError_NotSupported()
    g = read_nvml(FakeNvml([gpu])).gpus[0]
    a, b = g.mig(MIG_A), g.mig(MIG_B)
    assert a is not None and (a.memory_used_bytes, a.reason) == (None, "Not Supported")
    assert b is not None and b.memory_used_bytes == 0


def test_h05_an_unmatched_mig_uuid_is_never_turned_into_a_gpu_uuid() -> None:
    snap = read_nvml(FakeNvml([_mig_gpu()]))
    bare = "1a2b3c4d-0000-5000-8000-00000000ffff"  # torch writes a MIG instance's UUID bare
    m = map_torch_device("cuda:0", bare, snap, {"CUDA_VISIBLE_DEVICES": "MIG-1a2b3c4d-0000-5000-8000-00000000ffff"})
    assert m.uuid is not None and not m.uuid.upper().startswith("GPU-")
    assert m.unmatched_uuid == bare
    assert f"torch's device UUID {bare} matched no GPU or MIG instance NVML lists" in m.words()
    found = map_torch_device("cuda:0", MIG_A.removeprefix("MIG-"), snap, {})
    assert (found.uuid, found.physical_index, found.by, found.unmatched_uuid) == (MIG_A, 0, "uuid", None)
