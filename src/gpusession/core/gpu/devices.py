"""Which physical GPU a torch device is: ``CUDA_VISIBLE_DEVICES``, UUIDs, NVML's order.

Who calls it: the worker (the environment record of a run: the GPU its device really
is, R10) and the checklist probes (the GPU seen vs the order, S5). NVML numbers GPUs in
PCI order while CUDA/PyTorch follow ``CUDA_VISIBLE_DEVICES`` (H-05):
:func:`visible_device_map` maps torch's ``cuda:N`` to the physical GPU by the variable's
list (indices or UUIDs), and :func:`map_torch_device` by torch's own UUID first, so a
reading is for the GPU the workload used. torch is passed in, never imported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpusession.core.gpu.nvml import GpuReading, NvmlSnapshot, read_nvml

#: How a torch device was matched to a physical GPU (:attr:`VisibleDevice.by`).
BY_UUID = "uuid"
BY_POSITION = "position"


@dataclass(frozen=True)
class VisibleDevice:
    """Torch's ``cuda:N`` mapped to a physical GPU (H-05).

    Attributes:
        torch_index: ``N`` in ``cuda:N`` (position in ``CUDA_VISIBLE_DEVICES``).
        physical_index: NVML (PCI-order) index, ``None`` when it cannot be resolved.
        uuid: the physical GPU's UUID, ``None`` when unknown.
        name: its model name, ``None`` when unknown.
        gpu: the full NVML reading, ``None`` when unknown.
        by: :data:`BY_UUID` when a UUID names the GPU, :data:`BY_POSITION` when an index
            or the order does (right only if CUDA numbers GPUs as NVML does, i.e.
            ``CUDA_DEVICE_ORDER=PCI_BUS_ID``).
    """

    torch_index: int
    physical_index: int | None
    uuid: str | None
    name: str | None
    gpu: GpuReading | None = None
    by: str = BY_POSITION


def parse_visible_devices(value: str | None) -> list[str] | None:
    """``CUDA_VISIBLE_DEVICES`` as a list of entries; ``None`` when the variable is unset.

    Entries are stripped; as in CUDA, the list stops at the first empty or invalid entry
    (``-1`` hides every later device). An empty string hides every device (``[]``).
    """
    if value is None:
        return None
    out: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            break
        if entry.lstrip("-").isdigit():
            if int(entry) < 0:
                break
            out.append(str(int(entry)))
        elif entry.upper().startswith(("GPU-", "MIG-")):
            out.append(entry)
        else:
            break
    return out


def visible_device_map(
    env: Mapping[str, str] | None = None, snapshot: NvmlSnapshot | None = None
) -> tuple[VisibleDevice, ...]:
    """Map torch's ``cuda:N`` to the physical GPU via ``CUDA_VISIBLE_DEVICES`` (H-05).

    Args:
        env: environment (default ``os.environ``); ``CUDA_VISIBLE_DEVICES`` may hold
            physical indices (``"1,0"``) or UUIDs / UUID prefixes (``"GPU-8f2c"``).
        snapshot: an NVML reading (default: :func:`read_nvml`).

    Returns:
        One entry per device torch will see, in torch's order: ``result[N]`` is
        ``cuda:N``. With the variable unset, torch sees every GPU; the map is then NVML's
        order (set ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` for CUDA to agree). Entries whose
        physical GPU cannot be found keep ``physical_index=None``; with NVML unavailable
        indices are kept as given and the rest is ``None``. A GPU whose readings failed
        is still at its index (H-18): the map neither shifts nor stops there.
    """
    env = os.environ if env is None else env
    snap = snapshot if snapshot is not None else read_nvml()
    entries = parse_visible_devices(env.get("CUDA_VISIBLE_DEVICES"))
    gpus = list(snap.gpus)
    by_index = {g.index: g for g in gpus}
    if entries is None:
        count = max(by_index, default=-1) + 1
        return tuple(
            VisibleDevice(n, n, g.uuid if g else None, g.name if g else None, g)
            for n in range(count)
            for g in (by_index.get(n),)
        )
    out: list[VisibleDevice] = []
    for n, entry in enumerate(entries):
        gpu: GpuReading | None = None
        physical: int | None = None
        mig_uuid: str | None = None
        if entry.isdigit():
            physical = int(entry)
            gpu = by_index.get(physical)
            if snap.available and gpu is None:
                break  # CUDA stops at an index that does not exist
        else:
            gpu, mig_uuid = _gpu_for_uuid_entry(entry, gpus)
            physical = gpu.index if gpu else None
        out.append(
            VisibleDevice(
                torch_index=n,
                physical_index=physical,
                uuid=mig_uuid if mig_uuid else gpu.uuid if gpu else (entry if not entry.isdigit() else None),
                name=gpu.name if gpu else None,
                gpu=gpu,
                by=BY_POSITION if entry.isdigit() else BY_UUID,
            )
        )
    return tuple(out)


def _gpu_for_uuid_entry(entry: str, gpus: list[GpuReading]) -> tuple[GpuReading | None, str | None]:
    """The physical GPU for one UUID entry of ``CUDA_VISIBLE_DEVICES`` (H-05).

    The entry may be a unique prefix, as CUDA accepts; the MIG instance's UUID is
    returned too when the entry names one. A GPU whose UUID NVML could not read matches
    nothing.

    ``GPU-…`` names a GPU; ``MIG-…`` a MIG instance (matched against each GPU's
    instances); the CUDA 11.0-11.x form ``MIG-GPU-<gpu uuid>/<gi>/<ci>`` names an instance
    of that GPU.
    """
    low = entry.lower()
    if low.startswith("mig-gpu-"):
        parent = low[len("mig-"):].split("/", 1)[0]
        found = [g for g in gpus if g.uuid and g.uuid.lower().startswith(parent)]
        return (found[0], entry) if len(found) == 1 else (None, None)
    if low.startswith("mig-"):
        hits = [(g, m) for g in gpus for m in g.mig_uuids if m.lower().startswith(low)]
        return hits[0] if len(hits) == 1 else (None, None)
    found = [g for g in gpus if g.uuid and g.uuid.lower().startswith(low)]
    return (found[0], None) if len(found) == 1 else (None, None)


def gpu_for_uuid(uuid: str, snapshot: NvmlSnapshot) -> tuple[GpuReading | None, str | None]:
    """The physical GPU whose UUID (or one of whose MIG instances' UUID) is ``uuid``.

    Args:
        uuid: as torch reports it (``torch.cuda.get_device_properties(d).uuid``: bare
            ``"8f2c…"`` without prefix) or as NVML does (``"GPU-8f2c…"``, ``"MIG-…"``).
        snapshot: an NVML reading.

    Returns:
        ``(gpu, uuid_as_nvml_writes_it)``, or ``(None, None)`` when no GPU matches (H-05:
        the GPU the process really used, whatever ``CUDA_VISIBLE_DEVICES`` or
        ``CUDA_DEVICE_ORDER`` say).
    """
    bare = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if bare.startswith(prefix):
            bare = bare[len(prefix):]
    if not bare:
        return None, None
    for g in snapshot.gpus:
        for candidate in (*((g.uuid,) if g.uuid else ()), *g.mig_uuids):
            low = candidate.lower()
            if low.split("-", 1)[-1] == bare or low == bare:
                return g, candidate
    return None, None


def device_for(torch_device: str, env: Mapping[str, str] | None = None,
               snapshot: NvmlSnapshot | None = None) -> VisibleDevice | None:
    """The physical GPU behind a torch device string (H-05).

    Args:
        torch_device: ``"cuda"`` (device 0), ``"cuda:1"``, ``"cpu"``…
        env: environment (default ``os.environ``), for ``CUDA_VISIBLE_DEVICES``.
        snapshot: an NVML reading (default: :func:`read_nvml`).

    Returns:
        The mapped device; ``None`` for CPU or when it cannot be resolved.
    """
    if not torch_device.startswith("cuda"):
        return None
    _, _, idx = torch_device.partition(":")
    n = int(idx) if idx.isdigit() else 0
    mapping = visible_device_map(env, snapshot)
    return mapping[n] if n < len(mapping) else None


def torch_device_uuid(torch: Any, device: str) -> str | None:
    """Torch's own UUID of ``device``, or ``None`` when this torch cannot give one.

    ``torch.cuda.get_device_properties(d).uuid`` exists from torch 1.10 (CUDA); older
    builds, ROCm builds of some versions and failures give ``None`` and the mapping to
    a physical GPU is then by position (:func:`map_torch_device`).

    Args:
        torch: the ``torch`` module (passed in: this module never imports it).
        device: e.g. ``"cuda:1"``.

    Returns:
        The UUID as torch writes it (bare hex, or ``GPU-…``/``MIG-…``), or ``None``.
    """
    try:
        value = torch.cuda.get_device_properties(torch.device(device)).uuid
    except (RuntimeError, AssertionError, AttributeError):
        # RuntimeError: a CUDA error or a bad device string; AssertionError: torch's
        # "Invalid device id" / "not compiled with CUDA"; AttributeError: no ``uuid``
        # in this torch build's device properties.
        return None
    return str(value) or None


@dataclass(frozen=True)
class GpuMapping:
    """The physical GPU behind a torch device and how it was found (H-05, H-18).

    Attributes:
        uuid: the GPU's (or MIG instance's) UUID as NVML writes it, else torch's.
        physical_index: NVML (PCI-order) index, ``None`` when unresolved.
        by: :data:`BY_UUID` (a UUID names it: torch's own, or one in
            ``CUDA_VISIBLE_DEVICES``), :data:`BY_POSITION` (an index or the order: right
            only if CUDA numbers GPUs as NVML does), or ``"unresolved"``.
        unmatched_uuid: torch's own UUID of the device, as torch gave it, when it
            matched no GPU or MIG instance NVML lists; ``None`` when it matched or torch
            gave none. Never turned into ``"GPU-…"``: torch writes a MIG instance's UUID
            bare too, so a prefix would be a guess.
    """

    uuid: str | None
    physical_index: int | None
    by: str
    unmatched_uuid: str | None = None

    def words(self) -> str:
        """How the mapping was made, in words, for the environment record."""
        unmatched = (f"; torch's device UUID {self.unmatched_uuid} matched no GPU or MIG "
                     "instance NVML lists" if self.unmatched_uuid else "")
        if self.by == BY_UUID:
            return "by UUID" + unmatched
        if self.by == BY_POSITION:
            return ("by position (no device UUID from torch matched NVML; right only if "
                    "CUDA_DEVICE_ORDER=PCI_BUS_ID)" + unmatched)
        return "unresolved" + unmatched


def map_torch_device(device: str, torch_uuid: str | None, snapshot: NvmlSnapshot,
                     env: Mapping[str, str] | None = None) -> GpuMapping:
    """The physical GPU behind ``device``: by torch's UUID first, else by position.

    Args:
        device: e.g. ``"cuda:1"``.
        torch_uuid: :func:`torch_device_uuid`'s answer (``None``: torch too old).
        snapshot: an NVML reading.
        env: environment (default ``os.environ``) for ``CUDA_VISIBLE_DEVICES``.

    Returns:
        The mapping with how it was made; ``by`` says "position" when torch gave no UUID
        (or NVML does not know it) and an index or the order decided. A torch UUID NVML
        does not know is kept as torch gave it, in ``unmatched_uuid`` (and as ``uuid``
        when nothing else names the device), and said in :meth:`GpuMapping.words`.
    """
    if torch_uuid:
        gpu, nvml_uuid = gpu_for_uuid(torch_uuid, snapshot)
        if gpu is not None:
            return GpuMapping(nvml_uuid, gpu.index, BY_UUID)
    unmatched = torch_uuid or None
    phys = device_for(device, env, snapshot=snapshot)
    if phys is None:
        return GpuMapping(unmatched, None, "unresolved", unmatched)
    if phys.physical_index is None:
        return GpuMapping(phys.uuid or unmatched, None, "unresolved", unmatched)
    return GpuMapping(phys.uuid or unmatched, phys.physical_index, phys.by, unmatched)



__all__ = [
    "BY_POSITION",
    "BY_UUID",
    "GpuMapping",
    "VisibleDevice",
    "device_for",
    "gpu_for_uuid",
    "map_torch_device",
    "parse_visible_devices",
    "torch_device_uuid",
    "visible_device_map",
]
