"""Small torch workloads for the GPU protocol tests (imported by worker subprocesses; no tests here).

The worker imports them as ``gpu_workloads:<Factory>`` (the tests put this folder on
``PYTHONPATH``, :func:`fake_workloads.with_tests_on_path`), so each check goes through the
product's own path: the runner, the worker, its load clock and its stopwatch. Each one
does a piece of work whose effect on the figures is known in advance:

* :class:`SideStream`: every ``predict`` queues its matmuls on a stream of its own;
* :class:`Rebase`: ``load`` allocates and frees a large block (the allocator keeps it),
  ``predict`` is a small job;
* :class:`OomWhileHolding`: at one batch ``predict`` holds a share of the device and then
  asks for more than is free (a real out-of-memory error with memory held);
* :class:`ContextProbe`: asks the driver whether the device's primary context exists when
  the workload is made (before the load clock) and when ``load`` starts (inside it).

:func:`primary_context_active` and :func:`side_stream_seconds` are also called by the
tests themselves.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from pathlib import Path
from typing import Any

GIB = 1 << 30
MIB = 1 << 20


def primary_context_active(ordinal: int = 0) -> bool:
    """Whether the primary CUDA context of device ``ordinal`` exists (driver API, not torch's flag).

    ``cuInit`` starts the driver without creating a context; ``cuDevicePrimaryCtxGetState``
    then reports whether some code of this process has created (retained) the primary
    context. The ordinal counts the devices ``CUDA_VISIBLE_DEVICES`` leaves, as torch does.

    Raises:
        OSError: ``libcuda.so.1`` cannot be loaded (no NVIDIA driver here).
        RuntimeError: a driver call failed (its CUresult).
    """
    lib = ctypes.CDLL("libcuda.so.1")
    rc = lib.cuInit(0)
    if rc != 0:
        raise RuntimeError(f"cuInit returned CUresult {rc}")
    dev = ctypes.c_int()
    rc = lib.cuDeviceGet(ctypes.byref(dev), ctypes.c_int(ordinal))
    if rc != 0:
        raise RuntimeError(f"cuDeviceGet({ordinal}) returned CUresult {rc}")
    flags, active = ctypes.c_uint(), ctypes.c_int()
    rc = lib.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))
    if rc != 0:
        raise RuntimeError(f"cuDevicePrimaryCtxGetState returned CUresult {rc}")
    return bool(active.value)


def _square(device: str, size: int) -> Any:
    import torch

    return torch.randn(size, size, device=device) / (size ** 0.5)  # products stay bounded


def side_stream_seconds(device: str = "cuda:0", size: int = 4096, matmuls: int = 40) -> float:
    """Seconds the work of one :class:`SideStream` ``predict`` takes, timed on its own stream.

    Warmed once, then timed from an idle device to the end of that stream's work (the
    stream itself is synchronized, nothing else is waited for).
    """
    import torch

    a = _square(device, size)
    stream = torch.cuda.Stream(device=device)
    for _ in range(2):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        with torch.cuda.stream(stream):
            x = a
            for _ in range(matmuls):
                x = x @ a
        stream.synchronize()
        took = time.perf_counter() - t0
    return took


class SideStream:
    """Every ``predict`` queues ``matmuls`` matmuls of ``size``² on a stream of its own and
    returns at once, without waiting for them: only a stopwatch that waits for every
    stream of the device sees that work."""

    classes = ["x"]

    def __init__(self, size: int = 4096, matmuls: int = 40, **_: Any) -> None:
        self.size, self.matmuls = int(size), int(matmuls)
        self.a: Any = None
        self.stream: Any = None

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        import torch

        self.a = _square(device, self.size)
        self.stream = torch.cuda.Stream(device=device)

    def predict(self, texts: list[str]) -> list[str]:
        import torch

        with torch.cuda.stream(self.stream):
            x = self.a
            for _ in range(self.matmuls):
                x = x @ self.a
        return ["x"] * len(texts)


class Rebase:
    """``load`` allocates ``carry_bytes`` and frees them (the caching allocator keeps the
    block reserved); each ``predict`` allocates and fills ``job_bytes``."""

    classes = ["x"]

    def __init__(self, carry_bytes: int = 4 * GIB, job_bytes: int = 64 * MIB, **_: Any) -> None:
        self.carry_bytes, self.job_bytes = int(carry_bytes), int(job_bytes)
        self.device = "cpu"

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        import torch

        self.device = device
        big = torch.empty(self.carry_bytes, dtype=torch.uint8, device=device)
        big.fill_(1)
        torch.cuda.synchronize(device)
        del big  # freed, still reserved by the allocator

    def predict(self, texts: list[str]) -> list[str]:
        import torch

        buf = torch.empty(self.job_bytes, dtype=torch.uint8, device=self.device)
        buf.fill_(len(texts) % 251)
        del buf
        return ["x"] * len(texts)


class OomWhileHolding:
    """At ``oom_batch``, ``predict`` holds ``hold_fraction`` of the device in a local tensor
    and then asks for the whole device: a real out-of-memory error raised while that
    memory is still referenced by the failing frame. Any other batch: ``matmuls``
    matmuls of ``size``², each into a fresh tensor."""

    classes = ["x"]

    def __init__(self, oom_batch: int = 8, hold_fraction: float = 0.3, size: int = 4096,
                 matmuls: int = 8, **_: Any) -> None:
        self.oom_batch, self.hold_fraction = int(oom_batch), float(hold_fraction)
        self.size, self.matmuls = int(size), int(matmuls)
        self.device = "cpu"
        self.w: Any = None
        self.total_bytes = 0

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        import torch

        self.device = device
        self.w = _square(device, self.size)
        self.total_bytes = int(torch.cuda.get_device_properties(torch.device(device)).total_memory)

    def predict(self, texts: list[str]) -> list[str]:
        import torch

        if len(texts) == self.oom_batch:
            held = torch.empty(int(self.total_bytes * self.hold_fraction), dtype=torch.uint8,
                               device=self.device)
            held.fill_(1)
            torch.empty(self.total_bytes, dtype=torch.uint8, device=self.device)  # more than is free
        x = self.w
        for _ in range(self.matmuls):
            x = x @ self.w
        x.sum().item()
        return ["x"] * len(texts)


class ContextProbe:
    """Writes ``{"where", "active"}`` lines to ``log``: whether the device's primary context
    exists when the workload is made (``made``: the worker does that before its load
    clock starts) and when ``load`` starts (``load``: inside the load clock)."""

    classes = ["x"]

    def __init__(self, log: str, **_: Any) -> None:
        self.log = Path(log)
        # the device this process will use: its local rank under torchrun, else the first
        self.ordinal = int(os.environ.get("LOCAL_RANK", "0"))
        self._say("made")
        self.device = "cpu"
        self.w: Any = None

    def _say(self, where: str) -> None:
        try:
            active: Any = primary_context_active(self.ordinal)
        except (OSError, RuntimeError) as exc:
            active = f"unknown: {exc}"
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"where": where, "active": active, "pid": os.getpid(),
                                 "rank": os.environ.get("RANK")}) + "\n")

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        import torch

        self._say("load")
        self.device = device
        self.w = torch.ones(256, 256, device=device)

    def predict(self, texts: list[str]) -> list[str]:
        (self.w @ self.w).sum().item()
        return ["x"] * len(texts)
