"""The environment a session's runs meet: what else was running when an experiment started.

Who calls it: the runner, at the start of an experiment (R10: the concurrent load is
observed, not taken from the order). It combines one NVML reading
(:mod:`gpusession.core.gpu.nvml`) with the host CPU use (:mod:`gpusession.core.gpu.host`);
device naming lives in :mod:`gpusession.core.gpu.devices`.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from gpusession.core.gpu.host import host_cpu_percent
from gpusession.core.gpu.nvml import NvmlSnapshot, read_nvml


@dataclass(frozen=True)
class ConcurrentLoad:
    """What else was running when an experiment started (R10).

    Attributes:
        host_cpu_percent: host CPU use in percent, ``None`` if unknown.
        other_gpu_processes: ``(pid, physical_gpu_index, used_bytes)`` of GPU processes
            that are not ours, on the GPUs whose processes NVML could list; a PID no
            process can have is never one of them (H-33).
        unreadable: ``(physical_gpu_index, nvml_pid)`` of the entries whose PID cannot be
            a process (0, 4294967295: a driver/library mismatch), said as unreadable.
        foreign: the PIDs are the host's, seen from a container: never named.
        nvml_reason: why GPU processes are unknown, when NVML is unavailable.
        unlisted_gpus: ``(physical_gpu_index, reason)`` of the GPUs whose processes NVML
            could not list (MIG without privileges, some containers): unknown, not none.
        listed_gpus: physical indices of the GPUs whose processes NVML did list.
    """

    host_cpu_percent: float | None
    other_gpu_processes: tuple[tuple[int, int, int | None], ...]
    nvml_reason: str | None
    unlisted_gpus: tuple[tuple[int, str], ...] = ()

    listed_gpus: tuple[int, ...] = ()
    unreadable: tuple[tuple[int, int], ...] = ()
    foreign: bool = False

    @property
    def gpu_processes_known(self) -> bool:
        """Whether NVML listed the processes of every GPU (so "none" means none)."""
        return not self.nvml_reason and not self.unlisted_gpus

    @property
    def quiet(self) -> bool:
        """No other load to say: every GPU's processes listed, none but ours, none unreadable (R11)."""
        return self.gpu_processes_known and not self.other_gpu_processes and not self.unreadable

    def describe(self) -> str:
        """One line in words, e.g. ``host CPU 12%; other GPU processes: none``.

        "none" only when NVML listed every GPU's processes; a GPU it could not list
        reads "unknown on GPU 1 (NVML could not list them: reason)".
        """
        cpu = "unknown" if self.host_cpu_percent is None else f"{self.host_cpu_percent:.0f}%"
        if self.nvml_reason:
            return f"host CPU {cpu}; other GPU processes: unknown ({self.nvml_reason})"
        who = "host PID {} (not visible from this container)" if self.foreign else "pid {}"
        parts = [
            who.format(p) + f" on GPU {i}" + (f" ({u} bytes)" if u is not None else "")
            for p, i, u in self.other_gpu_processes
        ]
        parts += [f"{n} unreadable on GPU {i} (NVML gave PIDs no process can have: "
                  "a driver/library mismatch?)"
                  for i, n in sorted(Counter(i for i, _ in self.unreadable).items())]
        if not self.unlisted_gpus:
            return f"host CPU {cpu}; other GPU processes: {', '.join(parts) or 'none'}"
        busy = {i for _, i, _ in self.other_gpu_processes}
        quiet = [i for i in self.listed_gpus if i not in busy]
        if quiet:
            parts.append("none on GPU " + ", ".join(str(i) for i in quiet))
        parts += [f"unknown on GPU {i} (NVML could not list them: {why})"
                  for i, why in self.unlisted_gpus]
        return f"host CPU {cpu}; other GPU processes: {'; '.join(parts)}"


def read_concurrent_load(
    own_pids: set[int] | None = None,
    snapshot: NvmlSnapshot | None = None,
    interval_s: float = 0.1,
) -> ConcurrentLoad:
    """Host CPU % and the GPU processes other than ``own_pids`` (R10); never raises.

    A GPU whose processes NVML could not list (MIG without privileges, containers) is
    reported as unknown with the reason, never as "none".
    """
    own = own_pids or {os.getpid()}
    snap = snapshot if snapshot is not None else read_nvml()
    others = tuple(
        (p.pid, g.index, p.used_bytes)
        for g in snap.gpus
        for p in g.processes
        if p.pid not in own and p.readable
    )
    unreadable = tuple((g.index, p.pid) for g in snap.gpus for p in g.processes if not p.readable)
    unlisted = tuple(
        (g.index, g.why_unread("handle") or g.why_unread("processes") or "not read")
        for g in snap.gpus
        if not g.processes_known
    )
    return ConcurrentLoad(
        host_cpu_percent=host_cpu_percent(interval_s),
        other_gpu_processes=others,
        nvml_reason=None if snap.available else snap.reason,
        unlisted_gpus=unlisted,
        listed_gpus=tuple(g.index for g in snap.gpus if g.processes_known),
        unreadable=unreadable,
        foreign=any(p.foreign for g in snap.gpus for p in g.processes),
    )

__all__ = ["ConcurrentLoad", "read_concurrent_load"]
