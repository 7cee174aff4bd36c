"""Host facts from psutil and ``/proc``: RAM, swap, the container's memory limit, CPU use.

Who calls it: the memory pane (host RAM beside the GPU figures, through
:class:`HostMemoryReader`, one reading per tick), the runner's concurrent load (R10) and
:mod:`gpusession.core.gpu.nvml` (the names of GPU processes). Not GPU memory. psutil is
imported inside the functions: the TUI's first frame must not wait for it.

The host memory limit is the one of this process's own cgroup, the tightest from it up
to the root (H-19), not the cgroup root's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Linux's largest possible PID (``/proc/sys/kernel/pid_max`` can go no higher).
PID_MAX_LIMIT = 4_194_304


def possible_pid(pid: int) -> bool:
    """Whether ``pid`` can be a process at all: 1 to :data:`PID_MAX_LIMIT` (H-33).

    NVML under a driver/library mismatch returns PIDs such as 0 or 4294967295: they are
    "unreadable", never a process to name or to count as another's.
    """
    return 0 < pid <= PID_MAX_LIMIT


#: ``host`` or ``container``: whether NVML's PIDs are this process's PIDs (else detected).
PID_NAMESPACE_ENV = "GPUSESSION_PID_NAMESPACE"


def in_container() -> bool:
    """Whether this process runs in a container (Docker, Podman, Kubernetes, containerd).

    NVML lists host PIDs; inside a container the same number names another process, or
    none, so a GPU process is never named from a local lookup there. A container that
    shares the host's PIDs (``docker run --pid=host``) says so with
    ``GPUSESSION_PID_NAMESPACE=host`` (``container`` forces the other way).
    """
    said = os.environ.get(PID_NAMESPACE_ENV, "").strip().lower()
    if said in ("host", "container"):
        return said == "container"
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        with open("/proc/1/cgroup", encoding="utf-8", errors="replace") as fh:
            text = fh.read(65536)
    except OSError:
        return False
    return any(k in text for k in ("docker", "kubepods", "containerd", "libpod", "lxc"))


def process_name(pid: int) -> str | None:
    """The name of process ``pid`` (psutil), ``None`` when it is not visible here.

    Why: NVML lists GPU processes by PID only; a name helps the reader tell them apart.
    An impossible PID (:func:`possible_pid`) is never looked up.
    """
    if not possible_pid(pid):
        return None
    try:
        import psutil
    except ImportError:
        return None
    try:
        return str(psutil.Process(pid).name())
    except (psutil.Error, OSError, ValueError):  # gone, hidden, not ours; negative pid
        return None


@dataclass(frozen=True)
class HostMemory:
    """Host RAM, swap and the container's memory limit, in bytes (psutil; not GPU memory).

    Attributes:
        total_bytes, available_bytes, used_bytes: from ``psutil.virtual_memory()``.
        swap_total_bytes, swap_used_bytes: from ``psutil.swap_memory()``.
        cgroup_limit_bytes: the tightest memory limit on this process's own cgroup and
            its ancestors (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``, H-19), else
            ``None`` (no limit / not in a cgroup / unreadable).
        cgroup_path: this process's cgroup as ``/proc/self/cgroup`` names it, e.g.
            ``"/job/abc"``; ``None`` when unknown.
    """

    total_bytes: int
    available_bytes: int
    used_bytes: int
    swap_total_bytes: int
    swap_used_bytes: int
    cgroup_limit_bytes: int | None
    cgroup_path: str | None = None

    @property
    def limit_bytes(self) -> int:
        """What this process may use: the container limit when tighter than host RAM."""
        if self.cgroup_limit_bytes is not None and self.cgroup_limit_bytes < self.total_bytes:
            return self.cgroup_limit_bytes
        return self.total_bytes

    @property
    def container_limited(self) -> bool:
        """Whether a container (cgroup) limit is tighter than the host RAM (H-19)."""
        return self.cgroup_limit_bytes is not None and self.cgroup_limit_bytes < self.total_bytes

    def limit_words(self) -> str:
        """The memory limit in words, e.g. ``"container limit 1073741824 bytes (cgroup…)"``.

        Returns:
            The container limit, saying it is one and tighter than host RAM; or that the
            host RAM is the limit (no container limit, or a looser one).
        """
        where = f" (cgroup {self.cgroup_path})" if self.cgroup_path else ""
        if self.container_limited:
            return (f"container limit {self.cgroup_limit_bytes} bytes{where}, "
                    f"tighter than host RAM {self.total_bytes} bytes")
        if self.cgroup_limit_bytes is not None:
            return (f"host RAM {self.total_bytes} bytes is the limit (container limit "
                    f"{self.cgroup_limit_bytes} bytes{where} is looser)")
        return f"host RAM {self.total_bytes} bytes is the limit (no container memory limit)"


_PROC = Path("/proc")
_CGROUP = Path("/sys/fs/cgroup")
#: cgroup v1 writes a huge number (PAGE_COUNTER_MAX pages, ~2**63) for "no limit".
_V1_UNLIMITED = 2**60


def own_cgroup(proc_root: Path = _PROC) -> tuple[str, str] | None:
    """This process's memory cgroup from ``<proc_root>/self/cgroup`` (H-19).

    Args:
        proc_root: the ``/proc`` folder (injectable for tests).

    Returns:
        ``("v1", path)`` from the line whose controllers include ``memory`` (cgroup v1,
        also in hybrid mode where memory stays on v1), else ``("v2", path)`` from the
        unified ``0::/path`` line; ``None`` when the file is unreadable or has neither.
    """
    try:
        text = (proc_root / "self" / "cgroup").read_text()
    except OSError:
        return None
    v2: str | None = None
    for line in text.splitlines():
        hier, sep1, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not (sep1 and sep2):
            continue
        if "memory" in controllers.split(","):
            return "v1", path.strip() or "/"
        if hier == "0" and controllers == "":
            v2 = path.strip() or "/"
    return ("v2", v2) if v2 is not None else None


def _limit_in(path: Path, unlimited_from: int | None) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:  # the root cgroup has no limit file; a hidden or vanished cgroup
        return None
    if not text or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    if value < 0 or (unlimited_from is not None and value >= unlimited_from):
        return None
    return value


def _cgroup_levels(mount: Path, path: str) -> list[Path]:
    """The cgroup folder of ``path`` under ``mount`` and each ancestor up to ``mount``.

    Inside a container the mount is often the container's own cgroup while ``path``
    still names it from the host's root: the walk then starts at the deepest folder
    that exists.
    """
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    levels = [mount.joinpath(*parts[:k]) for k in range(len(parts), -1, -1)]
    existing = [lv for lv in levels if lv.is_dir()]
    if not existing:
        return [mount]
    return levels[levels.index(existing[0]):]


def read_cgroup_limit(proc_root: Path = _PROC, cgroup_root: Path = _CGROUP) -> int | None:
    """The tightest memory limit on this process's own cgroup, in bytes (H-19).

    The cgroup is the one ``<proc_root>/self/cgroup`` names (not the cgroup root); the
    limit is the smallest one from that cgroup up to the root of the hierarchy, as the
    kernel enforces each of them. cgroup v2: ``memory.max`` under ``cgroup_root``
    (``max`` = no limit); v1: ``memory.limit_in_bytes`` under ``cgroup_root/memory``
    (a huge value, ≥ 2**60, = no limit).

    Args:
        proc_root: the ``/proc`` folder (injectable for tests).
        cgroup_root: where the cgroup filesystem is mounted (``/sys/fs/cgroup``).

    Returns:
        The limit in bytes, or ``None`` when no level has one or nothing is readable;
        never raises.
    """
    files, unlimited = _limit_files(own_cgroup(proc_root), cgroup_root)
    return _tightest(files, unlimited)


def _limit_files(own: tuple[str, str] | None, cgroup_root: Path) -> tuple[list[Path], int | None]:
    """The limit files of ``own`` cgroup and each ancestor, and the "no limit" floor (H-19)."""
    if own is None:
        return [], None
    kind, path = own
    if kind == "v2":
        mounts, name, unlimited = [cgroup_root], "memory.max", None
    else:
        mounts, name, unlimited = [cgroup_root / "memory"], "memory.limit_in_bytes", _V1_UNLIMITED
        try:  # v1 may mount memory together with other controllers, e.g. "memory,cpu"
            mounts += sorted(p for p in cgroup_root.iterdir()
                             if "memory" in p.name.split(",") and p.name != "memory")
        except OSError:
            pass
    mount = next((m for m in mounts if m.is_dir()), None)
    if mount is None:
        return [], unlimited
    return [lv / name for lv in _cgroup_levels(mount, path)], unlimited


def _tightest(files: list[Path], unlimited: int | None) -> int | None:
    limits = [v for f in files if (v := _limit_in(f, unlimited)) is not None]
    return min(limits) if limits else None


def read_host_memory(proc_root: Path = _PROC, cgroup_root: Path = _CGROUP) -> HostMemory:
    """Host memory now (psutil) with the container limit of this process's cgroup (H-19).

    Args:
        proc_root: the ``/proc`` folder (injectable for tests).
        cgroup_root: where the cgroup filesystem is mounted.

    Returns:
        The reading; :meth:`HostMemory.limit_words` says which limit applies.
    """
    import psutil

    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    own = own_cgroup(proc_root)
    return HostMemory(
        total_bytes=int(vm.total),
        available_bytes=int(vm.available),
        used_bytes=int(vm.total - vm.available),
        swap_total_bytes=int(sw.total),
        swap_used_bytes=int(sw.used),
        cgroup_limit_bytes=read_cgroup_limit(proc_root, cgroup_root),
        cgroup_path=own[1] if own else None,
    )



def host_cpu_percent(interval_s: float = 0.1) -> float | None:
    """Host CPU use in percent over ``interval_s`` seconds (concurrent load, R10)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        return float(psutil.cpu_percent(interval=interval_s))
    except (psutil.Error, OSError, ValueError):  # /proc unreadable; a negative interval
        return None



class HostMemoryReader:
    """:func:`read_host_memory` for a poller: one psutil reading per call (H-19).

    Why: the memory pane reads host memory every second; walking the cgroup tree and
    reading swap each time cost more than the RAM reading itself (about 0.5 ms against
    0.1 ms). The cgroup and its limit files are found once; RAM is read at every call,
    swap and the container limit at most every ``slow_s`` seconds (they change rarely).

    Args:
        proc_root: the ``/proc`` folder (injectable for tests).
        cgroup_root: where the cgroup filesystem is mounted.
        slow_s: the longest age in seconds of the swap and limit figures shown.
        clock: a monotonic clock in seconds (injectable for tests).
    """

    def __init__(self, proc_root: Path = _PROC, cgroup_root: Path = _CGROUP, *,
                 slow_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        """Nothing is read yet: the first :meth:`read` reads every figure."""
        self._proc_root, self._cgroup_root = proc_root, cgroup_root
        self._slow_s, self._clock = slow_s, clock
        self._own: tuple[str, str] | None = None
        self._files: list[Path] | None = None
        self._unlimited: int | None = None
        self._slow_at: float | None = None
        self._swap = (0, 0)
        self._limit: int | None = None

    def read(self) -> HostMemory:
        """Host memory now; swap and limit no older than ``slow_s`` seconds.

        Returns:
            The reading, as :func:`read_host_memory` gives it.
        """
        import psutil

        vm = psutil.virtual_memory()
        now = self._clock()
        if self._files is None:
            self._own = own_cgroup(self._proc_root)
            self._files, self._unlimited = _limit_files(self._own, self._cgroup_root)
        if self._slow_at is None or now - self._slow_at >= self._slow_s:
            sw = psutil.swap_memory()
            self._swap = (int(sw.total), int(sw.used))
            self._limit = _tightest(self._files, self._unlimited)
            self._slow_at = now
        return HostMemory(
            total_bytes=int(vm.total),
            available_bytes=int(vm.available),
            used_bytes=int(vm.total - vm.available),
            swap_total_bytes=self._swap[0],
            swap_used_bytes=self._swap[1],
            cgroup_limit_bytes=self._limit,
            cgroup_path=self._own[1] if self._own else None,
        )


__all__ = [
    "HostMemory",
    "HostMemoryReader",
    "host_cpu_percent",
    "own_cgroup",
    "process_name",
    "read_cgroup_limit",
    "read_host_memory",
]
