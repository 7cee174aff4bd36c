"""Test doubles: a clock, NVML, host memory and a runner that stand still (never product code).

Not used by the application: nothing under ``gpusession.core``, ``bench``, ``commands`` or
``ui`` imports this module. It lives in the package (rather than under ``tests/``) only
because ``benchmarks/bench_startup.py`` builds its session with :func:`make_session`.

Who calls it: the UI tests and snapshot apps (``build_app(..., clock=FakeClock(...),
nvml=FakeNvml(...), host_memory=fixed_host_memory)``), ``benchmarks/bench_startup.py`` and
``benchmarks/bench_tui_stall.py`` (:func:`workers_done`, the Pilot tests' one wait for
workers, which a benchmark cannot import from ``tests/``).
:class:`FakeNvml` has the pynvml surface that
:func:`gpusession.core.gpu.nvml.read_nvml` uses, so the real reader runs on it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

# nvidia-ml-py is a dependency: the fake raises pynvml's own error classes, so the reader
# meets them as it does on a real machine.
from pynvml import (
    NVMLError,
    NVMLError_FunctionNotFound,
    NVMLError_NoPermission,
    NVMLError_NotFound,
    NVMLError_NotSupported,
    nvmlMemory_v2,
)

from gpusession.core.records.outcome import RunOutcome

GIB = 1024**3
MIB = 1024**2


class FakeClock:
    """A clock that stands still until :meth:`advance` is called (aware UTC datetimes)."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
        self._start = self.now

    def __call__(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        """Seconds advanced since this clock was made (a ``time.monotonic`` stand-in)."""
        return (self.now - self._start).total_seconds()

    def advance(self, seconds: float) -> None:
        self.now = self.now + timedelta(seconds=seconds)


@dataclass
class FakeMig:
    """One MIG instance of a :class:`FakeGpu`: UUID, processes, failing readings."""

    uuid: str
    processes: list[tuple[int, int]] = field(default_factory=list)
    errors: dict[str, BaseException] = field(default_factory=dict)
    total_bytes: int = 18 * GIB
    used_bytes: int = 1 * GIB
    reserved_bytes: int = 0

    def check(self, reading: str) -> None:
        """Raise what NVML raises for ``reading`` on this instance, if anything."""
        if reading in self.errors:
            raise self.errors[reading]


@dataclass
class FakeGpu:
    """One fake GPU: name, UUID, memory in bytes, processes as ``(pid, used_bytes)``.

    ``errors`` maps a reading (``"handle"``, ``"uuid"``, ``"name"``, ``"memory"``,
    ``"processes"``, ``"utilization"``, ``"sm_clock"``, ``"throttle"``, ``"temperature"``,
    ``"power"``) to the exception NVML raises for it, e.g.
    ``{"memory": NVMLError_NotSupported()}`` (H-18). ``migs``: MIG instances.
    ``throttle_reasons``: NVML's clock event reason bits; ``power_mw``: milliwatts.
    ``reserved_bytes``: memory the driver reserves (R510+): v1's "used" includes it,
    v2's does not. ``mig_memory_refused``: with ``migs``, the whole GPU's memory is
    refused (``NoPermission``), as NVML does for an unprivileged caller.
    ``energy_mj``: the total-energy counter in millijoules (``None``: "Not Supported",
    as before Volta); a test advances it to stand for a run's draw.
    ``applications_clock_mhz``: the SM application clock.
    """

    name: str = "NVIDIA RTX A5000"
    uuid: str = "GPU-5f1c0a2e-0000-4000-8000-00000000a500"
    total_bytes: int = 24 * GIB
    used_bytes: int = 3 * GIB
    reserved_bytes: int = 0
    processes: list[tuple[int, int]] = field(default_factory=lambda: [(4_194_000, 2 * GIB)])  # a PID that can exist, held by no process here
    utilization_percent: int = 0
    sm_clock_mhz: int = 1695
    throttle_reasons: int = 0x1
    temperature_c: int = 41
    power_mw: int = 68_500
    energy_mj: int | None = 7_200_000_000
    applications_clock_mhz: int = 1695
    errors: dict[str, BaseException] = field(default_factory=dict)
    migs: list[FakeMig] = field(default_factory=list)
    #: The board (host check): PCIe link now and at most, power limit in mW, ECC, MIG mode;
    #: their readings fail through ``errors`` under ``"pcie"``, ``"power_limit"``,
    #: ``"ecc"``, ``"mig_mode"``.
    pcie_generation: int = 4
    pcie_width: int = 16
    pcie_max_generation: int = 4
    pcie_max_width: int = 16
    power_limit_mw: int = 230_000
    ecc_on: bool = False
    mig_on: bool = False
    mig_memory_refused: bool = True
    #: The PCI device id (``0x2330``: H100 SXM5); ``None``: ``nvmlDeviceGetPciInfo`` not supported.
    pci_device_id: int | None = None

    def check(self, reading: str) -> None:
        """Raise what NVML raises for ``reading`` on this GPU, if anything."""
        if reading in self.errors:
            raise self.errors[reading]


class FakeNvml:
    """A pynvml-like object (``nvmlInit``, ``nvmlDeviceGetMemoryInfo``, ...).

    Raises pynvml's own error classes (``NVMLError_NotSupported``…) where a reading is
    told to fail, and exposes ``NVMLError`` as pynvml does.

    Args:
        gpus: the fake devices; empty for a driver with no GPU.
        fail: when given, ``nvmlInit`` raises with this text (no driver, H-07), or
            raises this exception (e.g. ``NVMLError(18)``: a driver/library mismatch).
        driver: the driver version string (returned as ``bytes`` when ``as_bytes``, H-06).
        memory_v2: the driver has ``nvmlDeviceGetMemoryInfo_v2``; ``False``: calling it
            raises ``NVMLError_FunctionNotFound`` as an old driver does.
    """

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_NoPermission = NVMLError_NoPermission
    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0
    nvmlMemory_v2 = nvmlMemory_v2

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        fail: str | bool | BaseException | None = None,
        driver: str = "535.104.05",
        as_bytes: bool = False,
        memory_v2: bool = True,
    ) -> None:
        self.gpus = [FakeGpu()] if gpus is None else gpus
        self.fail = fail
        self.driver = driver
        self.as_bytes = as_bytes
        self.memory_v2 = memory_v2
        self.init_calls = 0
        self.shutdown_calls = 0

    def _s(self, text: str) -> Any:
        return text.encode() if self.as_bytes else text

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        self.init_calls += 1
        if isinstance(self.fail, BaseException):
            raise self.fail
        if self.fail:
            raise RuntimeError(self.fail)

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self) -> Any:  # noqa: N802
        return self._s(self.driver)

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:  # noqa: N802
        self.gpus[i].check("handle")
        return self.gpus[i]

    def nvmlDeviceGetHandleByUUID(self, uuid: Any) -> FakeGpu:  # noqa: N802
        wanted = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        for g in self.gpus:
            if g.uuid == wanted:
                g.check("handle")
                return g
        raise NVMLError_NotFound()

    def nvmlDeviceGetUUID(self, h: FakeGpu | FakeMig) -> Any:  # noqa: N802
        if isinstance(h, FakeGpu):
            h.check("uuid")
        return self._s(h.uuid)

    def nvmlDeviceGetName(self, h: FakeGpu) -> Any:  # noqa: N802
        h.check("name")
        return self._s(h.name)

    def nvmlDeviceGetMemoryInfo(self, h: FakeGpu | FakeMig, version: int | None = None) -> Any:  # noqa: N802
        h.check("memory")
        if isinstance(h, FakeGpu) and h.migs and h.mig_memory_refused:
            raise NVMLError_NoPermission()  # the whole GPU's memory, MIG on, unprivileged
        free = h.total_bytes - h.used_bytes - h.reserved_bytes
        if not version:  # v1: "used" includes what the driver reserves
            return SimpleNamespace(total=h.total_bytes, used=h.used_bytes + h.reserved_bytes, free=free)
        if not self.memory_v2:
            raise NVMLError_FunctionNotFound()
        return SimpleNamespace(version=version, total=h.total_bytes, reserved=h.reserved_bytes,
                               used=h.used_bytes, free=free)

    def nvmlDeviceGetUtilizationRates(self, h: FakeGpu) -> Any:  # noqa: N802
        h.check("utilization")
        return SimpleNamespace(gpu=h.utilization_percent, memory=0)

    def nvmlDeviceGetClockInfo(self, h: FakeGpu, clock_type: int) -> int:  # noqa: N802
        h.check("sm_clock")
        return h.sm_clock_mhz

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("throttle")
        return h.throttle_reasons

    def nvmlDeviceGetTemperature(self, h: FakeGpu, sensor: int) -> int:  # noqa: N802
        h.check("temperature")
        return h.temperature_c

    def nvmlDeviceGetPowerUsage(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("power")
        return h.power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("energy")
        if h.energy_mj is None:
            raise NVMLError_NotSupported()
        return h.energy_mj

    def nvmlDeviceGetApplicationsClock(self, h: FakeGpu, clock_type: int) -> int:  # noqa: N802
        h.check("app_clock")
        return h.applications_clock_mhz

    def nvmlDeviceGetComputeRunningProcesses(self, h: FakeGpu | FakeMig) -> list[Any]:  # noqa: N802
        if isinstance(h, FakeMig):
            if "processes" in h.errors:
                raise h.errors["processes"]
        else:
            h.check("processes")
        return [SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in h.processes]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("pcie")
        return h.pcie_generation

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("pcie")
        return h.pcie_width

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("pcie")
        return h.pcie_max_generation

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("pcie")
        return h.pcie_max_width

    def nvmlDeviceGetPciInfo(self, h: FakeGpu) -> Any:  # noqa: N802
        if h.pci_device_id is None:
            raise NVMLError_NotSupported()
        return SimpleNamespace(pciDeviceId=(h.pci_device_id << 16) | 0x10DE)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: FakeGpu) -> int:  # noqa: N802
        h.check("power_limit")
        return h.power_limit_mw

    def nvmlDeviceGetEccMode(self, h: FakeGpu) -> list[int]:  # noqa: N802
        h.check("ecc")
        return [int(h.ecc_on), int(h.ecc_on)]

    def nvmlDeviceGetMigMode(self, h: FakeGpu) -> list[int]:  # noqa: N802
        h.check("mig_mode")
        return [int(h.mig_on), int(h.mig_on)]

    def nvmlDeviceGetMaxMigDeviceCount(self, h: FakeGpu) -> int:  # noqa: N802
        if not h.migs:
            raise NVMLError_NotSupported()
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: FakeGpu, i: int) -> FakeMig:  # noqa: N802
        if i >= len(h.migs):
            raise NVMLError_NotFound()
        return h.migs[i]


def fixed_host_memory() -> Any:
    """A fixed host reading (64 GiB RAM, 20 GiB used, 8 GiB swap, 48 GiB cgroup limit)."""
    from gpusession.core.gpu.host import HostMemory

    return HostMemory(
        total_bytes=64 * GIB,
        available_bytes=44 * GIB,
        used_bytes=20 * GIB,
        swap_total_bytes=8 * GIB,
        swap_used_bytes=512 * MIB,
        cgroup_limit_bytes=48 * GIB,
    )


class FakeRunner:
    """A runner with the real one's shape: blocking ``run()``, events, cancel at boundaries.

    It walks the experiment's schedule (``bench.plan.schedule``), sleeps ``step_s`` per
    run, appends one deterministic row per run to the session's results CSV, emits
    ``progress`` / ``row`` / ``finished`` events and stops at the next run boundary once
    ``cancel`` is set (H-12). No torch, no subprocess.
    """

    def __init__(
        self,
        session: Any,
        experiment_id: str,
        on_event: Any,
        cancel: Any,
        *,
        step_s: float = 0.0,
        accepted: bool = True,
    ) -> None:
        self.session = session
        self.experiment_id = experiment_id
        self.on_event = on_event
        self.cancel = cancel
        self.step_s = step_s
        self.accepted = accepted
        self.boundaries_checked = 0

    @classmethod
    def factory(cls, step_s: float = 0.0, **kw: Any) -> Any:
        """A ``runner_factory`` for :func:`gpusession.ui.app.build_app`."""

        def make(session: Any, experiment_id: str, on_event: Any, cancel: Any,
                 **_stops_off: bool) -> FakeRunner:  # the Run pane's R passes the stops off
            return cls(session, experiment_id, on_event, cancel, step_s=step_s, **kw)

        return make

    def run(self) -> RunOutcome:
        import time

        from gpusession.core.events import Finished, Progress, RowAppended
        from gpusession.core.experiment.plan import schedule
        from gpusession.core.folder.experiments import get_experiment
        from gpusession.core.records.results import ResultRow

        exp = get_experiment(self.session, self.experiment_id)
        runs = schedule(exp)
        done = 0
        for sr in runs:
            self.boundaries_checked += 1
            if self.cancel.is_set():
                break
            if self.step_s:
                time.sleep(self.step_s)
            value = sr.variant_id.rsplit("-", 1)[-1]
            batch = int(value) if value.isdigit() else 1
            elapsed = round((0.5 if sr.phase == "cold" else 0.1) / batch + 0.001 * sr.run_index, 6)
            row = ResultRow(
                experiment_id=exp.id, variant_id=sr.variant_id, corpus_revision="sha256:eval-1",
                device="cpu", phase=sr.phase, run_index=sr.run_index, batch=batch,
                expected_ids=1000, observed_ids=1000, ids_match=True, format_valid=True,
                quality_metric="macro_f1", quality_threshold=0.9, quality_tolerance=0.01,
                quality_value=0.95 if self.accepted else 0.5, corpus_accepted=self.accepted,
                elapsed_seconds=elapsed,
            )
            self.session.results.append(row)
            done += 1
            self.on_event(RowAppended(row=row, done=done, total=len(runs)))
            self.on_event(Progress(done=done, total=len(runs), variant_id=sr.variant_id,
                                   phase=sr.phase, run_index=sr.run_index))
        out = RunOutcome(rows_written=done, completed=done == len(runs), cancelled=self.cancel.is_set())
        self.on_event(Finished(outcome=out))
        return out


async def workers_done(pilot: Any, app: Any, rounds: int = 200) -> None:
    """Wait until no worker of ``app`` runs and what they handed to the event loop is shown.

    The panes read the session in thread workers, some started after a refresh: each
    round waits for the workers running now, then lets the loop handle what they posted
    (and start what that starts). Bounded by ``rounds``, never by a stopwatch (a loaded
    machine only makes each round longer); a worker replaced by a newer one (exclusive)
    counts as done.

    Args:
        pilot: the ``textual.pilot.Pilot`` driving ``app``.
        app: the running Textual app.
        rounds: the most rounds waited.

    Raises:
        AssertionError: workers still run after ``rounds`` rounds.
    """
    from textual.worker import WorkerState  # textual loads only where an app runs

    for _ in range(rounds):
        await pilot.pause()
        busy = [w for w in app.workers if not w.is_finished]
        if not busy:
            return
        await asyncio.gather(*(w.wait() for w in busy if w.state != WorkerState.PENDING),
                             return_exceptions=True)
    raise AssertionError(f"workers still running after {rounds} rounds: {list(app.workers)}")


#: The fixed "now" of tests and snapshots, and the package start two days before it.
FIXED_NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
FIXED_START = datetime(2026, 11, 27, 9, 0, tzinfo=timezone.utc)


def make_session(
    root: Any,
    name: str = "visuals-test-01",
    *,
    experiment: bool = True,
    runs: int = 5,
) -> Any:
    """A session with the seed's package (RTX A5000, 1 lot, 7 days) and ``batch-sweep``.

    Deterministic (fixed dates) so snapshots do not move. The experiment is batch
    1/4/8, ``runs`` measured runs per variant, 2 warm-up, interleaved, scope processing.
    """
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session

    s = Session.create(root, name, package=Package("RTX A5000", 1, 7, FIXED_START), now=FIXED_START)
    if experiment:
        from gpusession.core.experiment.plan import Experiment
        from gpusession.core.folder.experiments import define_experiment

        define_experiment(
            s,
            Experiment(id="batch-sweep", workload="bbc-news", varied="batch", values=(1, 4, 8),
                       runs_per_variant=runs, warmup_iterations=2, order="interleaved",
                       scope="processing", params={"model_dir": "models"}),
        )
    return s
