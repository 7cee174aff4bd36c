"""Deterministic stand-ins for the clock, NVML and host memory (tests, snapshots, bench).

Who calls it: the UI tests and snapshot apps (``build_app(..., clock=FakeClock(...),
nvml=FakeNvml(...), host_memory=fixed_host_memory)``) and ``benchmarks/bench_startup.py``.
:class:`FakeNvml` has the pynvml surface that
:func:`gpusession.core.environment.read_nvml` uses, so the real reader runs on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

GIB = 1024**3
MIB = 1024**2


class FakeClock:
    """A clock that stands still until :meth:`advance` is called (aware UTC datetimes)."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now = self.now + timedelta(seconds=seconds)


@dataclass
class FakeGpu:
    """One fake GPU: name, UUID, memory in bytes, processes as ``(pid, used_bytes)``."""

    name: str = "NVIDIA RTX A5000"
    uuid: str = "GPU-5f1c0a2e-0000-4000-8000-00000000a500"
    total_bytes: int = 24 * GIB
    used_bytes: int = 3 * GIB
    processes: list[tuple[int, int]] = field(default_factory=lambda: [(4242, 2 * GIB)])


class FakeNvml:
    """A pynvml-like object (``nvmlInit``, ``nvmlDeviceGetMemoryInfo``, ...).

    Args:
        gpus: the fake devices; empty for a driver with no GPU.
        fail: when given, ``nvmlInit`` raises with this text (no driver, H-07).
        driver: the driver version string (returned as ``bytes`` when ``as_bytes``, H-06).
    """

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        fail: str | None = None,
        driver: str = "535.104.05",
        as_bytes: bool = False,
    ) -> None:
        self.gpus = [FakeGpu()] if gpus is None else gpus
        self.fail = fail
        self.driver = driver
        self.as_bytes = as_bytes
        self.init_calls = 0

    def _s(self, text: str) -> Any:
        return text.encode() if self.as_bytes else text

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        self.init_calls += 1
        if self.fail:
            raise RuntimeError(self.fail)

    def nvmlShutdown(self) -> None:  # noqa: N802
        pass

    def nvmlSystemGetDriverVersion(self) -> Any:  # noqa: N802
        return self._s(self.driver)

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:  # noqa: N802
        return self.gpus[i]

    def nvmlDeviceGetUUID(self, h: FakeGpu) -> Any:  # noqa: N802
        return self._s(h.uuid)

    def nvmlDeviceGetName(self, h: FakeGpu) -> Any:  # noqa: N802
        return self._s(h.name)

    def nvmlDeviceGetMemoryInfo(self, h: FakeGpu) -> Any:  # noqa: N802
        return SimpleNamespace(total=h.total_bytes, used=h.used_bytes, free=h.total_bytes - h.used_bytes)

    def nvmlDeviceGetComputeRunningProcesses(self, h: FakeGpu) -> list[Any]:  # noqa: N802
        return [SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in h.processes]


def fixed_host_memory() -> Any:
    """A fixed host reading (64 GiB RAM, 20 GiB used, 8 GiB swap, 48 GiB cgroup limit)."""
    from gpusession.core.environment import HostMemory

    return HostMemory(
        total_bytes=64 * GIB,
        available_bytes=44 * GIB,
        used_bytes=20 * GIB,
        swap_total_bytes=8 * GIB,
        swap_used_bytes=512 * MIB,
        cgroup_limit_bytes=48 * GIB,
    )
