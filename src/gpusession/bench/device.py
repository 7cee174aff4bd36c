"""The worker's device and its channel to the runner (R4, R10, M1–M5).

The torch device a workload runs on (activation, synchronisation, allocator figures, the
environment it records) and the one line-per-event channel with its run boundaries.
Who calls it: :mod:`gpusession.bench.worker` and :mod:`gpusession.bench.phases` (the
load, warm-up and measured loop). Imported only in worker processes (torch is imported
inside the methods that need it).
"""

from __future__ import annotations

import json
import os
import platform
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from gpusession.bench.program_digest import code_revision
from gpusession.bench.ranks import DeviceUnavailable
from gpusession.bench.timing import SyncTimer
from gpusession.core.events import (
    WorkerEvent,
    WorkerReady,
    WorkerRunStarted,
    WorkerStopped,
)
from gpusession.core.files.safefile import link_refused, make_private_dir
from gpusession.core.gpu.nvml import RunMeter, read_clocks, read_nvml


class Channel:
    """The JSON-lines channel to the parent (a dup of the original stdout).

    Args:
        out: where events are written, one JSON object per line.
        inp: the parent's commands, one per line (``go`` / ``stop``).
    """

    def __init__(self, out: IO[str], inp: IO[str]) -> None:
        """Keep both ends; ``stopped`` becomes ``True`` once the parent says stop."""
        self.out = out
        self.inp = inp
        self.stopped = False

    def send(self, event: WorkerEvent) -> None:
        """Write one typed event as a JSON line and flush."""
        self.out.write(json.dumps(event.to_json(), default=str) + "\n")
        self.out.flush()

    def wait_go(self) -> bool:
        """Block until the parent's next line: ``True`` for ``go``, else ``False`` (stop, EOF; H-12)."""
        line = self.inp.readline()
        return line.strip() == "go"

    def runs(self, spec: dict[str, Any]) -> Iterator[tuple[dict[str, Any], Path, int]]:
        """Yield ``(run, output path, order)`` for each scheduled run the parent lets start.

        ``order`` is the run's 1-based position in this process's schedule. Before each
        run the worker says ``ready`` and waits for ``go``; on ``stop`` it says
        ``stopped`` and the iteration ends, so a cancel lands exactly on a run boundary
        (H-12). ``run_started`` is sent just before the run is yielded.
        """
        out_dir = Path(spec["output_dir"])
        suffix = spec.get("output_suffix", ".jsonl")
        for order, run in enumerate(spec["runs"], start=1):
            self.send(WorkerReady(run_key=run["run_key"]))
            if not self.wait_go():
                self.send(WorkerStopped(run_key=run["run_key"]))
                self.stopped = True
                return
            self.send(WorkerRunStarted(run_key=run["run_key"]))
            yield run, out_dir / run["variant_id"] / f"{run['phase']}-{run['run_index']}{suffix}", order


def runtime_version(torch: Any, device: str) -> str | None:
    """The GPU runtime torch was built with: ``"CUDA 12.4"`` / ``"HIP 6.1"`` (R10).

    Args:
        torch: the torch module.
        device: the device used, e.g. ``"cuda:0"`` or ``"cpu"``.

    Returns:
        ``None`` on CPU or when torch names no runtime. A ROCm build has
        ``torch.version.cuda = None``: it reads ``"HIP …"``, never ``"CUDA None"`` (H-07).
    """
    if not device.startswith("cuda"):
        return None
    hip = getattr(torch.version, "hip", None)
    if hip:
        return f"HIP {hip}"
    cuda = getattr(torch.version, "cuda", None)
    if cuda:
        return f"CUDA {cuda}"
    return None


def prepare_output(path: Path, root: Path) -> None:
    """Before a command writes ``path`` itself: its folders real (made 0700), itself no link.

    A command opens its ``{output}`` as it likes; gpusession refuses the run instead of
    letting it write through a link planted there.

    Raises:
        BadInput: ``path`` or a folder between ``root`` and it is a symbolic link.
        OSError: the disk refused.
    """
    make_private_dir(path.parent, root=root)
    if os.path.islink(path):
        raise link_refused(path)


def make_output_private(path: Path) -> None:
    """After a command wrote ``path``: mode 0600, whatever its umask gave (the folder is private).

    The command creates its output itself, so the umask decides its mode (0644, 0666
    under ``umask 000``); the session folder promises 0600. A link or anything but a
    regular file is left alone (never followed); a missing output is the validation's
    to report.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, 0o600)
    except OSError:
        pass
    finally:
        os.close(fd)


#: Frameworks a workload may compute with: import name → distribution name (for its version).
FRAMEWORKS = {
    "torch": "torch", "sklearn": "scikit-learn", "tensorflow": "tensorflow", "jax": "jax",
    "onnxruntime": "onnxruntime", "transformers": "transformers", "xgboost": "xgboost",
    "lightgbm": "lightgbm", "vllm": "vllm", "tensorrt": "tensorrt", "numpy": "numpy",
}


def frameworks_used(workload: Any) -> dict[str, str]:
    """The frameworks ``workload`` computes with, and their versions (R10).

    Read from what the workload holds, not from what is imported in the worker (which
    imports torch for its clock): the packages of its own module's imports, of its class
    and of its attributes' types. A framework found there without a readable version
    says ``"version not read"``.

    Returns:
        ``{"scikit-learn": "1.5.2", …}`` in :data:`FRAMEWORKS` order; ``{}`` when none.
    """
    import importlib.metadata
    import inspect

    seen: set[str] = set()
    module = sys.modules.get(type(workload).__module__)
    held = [workload, *vars(workload).values()] if hasattr(workload, "__dict__") else [workload]
    names = [type(v).__module__ for v in held]
    if module is not None:
        names += [m.__name__ for m in vars(module).values() if inspect.ismodule(m)]
        names += [getattr(v, "__module__", None) or "" for v in vars(module).values()
                  if inspect.isclass(v) or inspect.isfunction(v)]
    for name in names:
        seen.add(str(name).split(".")[0])
    out: dict[str, str] = {}
    for top, dist in FRAMEWORKS.items():
        if top in seen and not (top == "numpy" and len(seen & set(FRAMEWORKS)) > 1):
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                out[dist] = "version not read"
    return out


#: Environment variables that change how the GPU work runs (device order, visibility,
#: allocator, TF32 overrides, cuBLAS workspace, module loading), recorded with the
#: environment; ``"unset"`` when absent. ``PYTORCH_ALLOC_CONF`` is the allocator's
#: current name, ``PYTORCH_CUDA_ALLOC_CONF`` its alias: both are kept.
SPEED_ENV_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF",
                  "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES", "NVIDIA_TF32_OVERRIDE",
                  "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG",
                  "CUDA_MODULE_LOADING")

#: The ``torch.backends`` precision settings of torch ≥ 2.9 (``fp32_precision``), by
#: their place: ``(backend, op)``; ``None`` is the backend's own setting.
FP32_PRECISION_PLACES = (("", None), ("cuda", "matmul"), ("cudnn", None), ("cudnn", "conv"),
                         ("cudnn", "rnn"), ("mkldnn", None), ("mkldnn", "matmul"),
                         ("mkldnn", "conv"), ("mkldnn", "rnn"))

#: ``fp32_precision`` → the legacy ``get_float32_matmul_precision()`` word.
_MATMUL_WORDS = {"ieee": "highest", "tf32": "high", "bf16": "medium"}


def fp32_precisions(torch: Any) -> dict[str, str] | None:
    """Every ``torch.backends.*.fp32_precision`` as ``{"cuda.matmul": "tf32", …}`` (R10).

    ``""`` names the generic ``torch.backends.fp32_precision``. Read through the new API
    only: once a workload set it, the legacy getters (``allow_tf32``,
    ``get_float32_matmul_precision``) raise or warn.

    Returns:
        ``None`` on a torch without the API (before 2.9); a place this torch lacks is
        left out.
    """
    backends = torch.backends
    if not hasattr(backends, "fp32_precision"):
        return None
    out: dict[str, str] = {}
    for backend, op in FP32_PRECISION_PLACES:
        try:
            obj = getattr(backends, backend) if backend else backends
            if op is not None:
                obj = getattr(obj, op)
            out[".".join(p for p in (backend, op) if p) or "generic"] = str(obj.fp32_precision)
        except (AttributeError, RuntimeError):  # a backend this build lacks
            continue
    return out


def _effective(precisions: dict[str, str], place: str) -> str:
    """The precision that applies at ``place`` (``"cuda.matmul"``): ``"none"`` defers up, to IEEE."""
    backend = place.split(".")[0]
    for key in (place, backend, "generic"):
        value = precisions.get(key, "none")
        if value != "none":
            return value
    return "ieee"

def speed_env_vars(environ: dict[str, str] | None = None) -> dict[str, str]:
    """:data:`SPEED_ENV_VARS` as lower-case keys, each its value or ``"unset"`` (R10)."""
    env = os.environ if environ is None else environ
    return {k.lower(): env.get(k, "unset") for k in SPEED_ENV_VARS}


class TorchDevice:
    """torch facts for the chosen device: what to synchronize, allocator readings.

    Args:
        requested: ``"cpu"``, ``"cuda"``, ``"cuda:N"``; ``None``, ``""`` or ``"auto"``
            picks ``cuda`` when torch sees a device, else ``cpu``.

    Raises:
        RuntimeError: a CUDA device was requested and torch sees none (or a bad device
            string, from ``torch.device``).
    """

    def __init__(self, requested: str | None) -> None:
        """Import torch and resolve the device; no CUDA context is created here.

        A bare ``cuda`` is ``cuda:0``: in the fresh worker process the current device is
        torch's default, 0, and reading it through ``torch.cuda.current_device()`` would
        initialise CUDA outside the load clock. The device is selected and its context
        created by :meth:`activate`, inside the timed load, for every spelling.
        """
        import torch

        self.torch = torch
        if requested in (None, "", "auto"):
            requested = "cuda" if torch.cuda.is_available() else "cpu"
        dev = torch.device(requested)
        self.index: int | None = None
        if dev.type == "cuda":
            if not torch.cuda.is_available():
                raise DeviceUnavailable(f"device {requested} requested but torch sees no CUDA/ROCm device")
            self.index = dev.index if dev.index is not None else 0
            if self.index >= torch.cuda.device_count():
                raise DeviceUnavailable(f"device {requested} requested but torch sees "
                                        f"{torch.cuda.device_count()} GPU(s): cuda:0 to "
                                        f"cuda:{torch.cuda.device_count() - 1}")
            self.device = f"cuda:{self.index}"
        else:
            self.device = "cpu"

    def activate(self) -> None:
        """Select the device and create its CUDA context (H-02); nothing on CPU.

        Called first thing inside the timed load region, so context creation is part of
        the load phase whether the device was spelled ``cuda`` or ``cuda:N`` (R3). The
        workload's device becomes the current one, so a bare ``"cuda"`` tensor, a stream
        or an event without a device lands there, not on ``cuda:0`` (H-02).
        """
        if self.index is None:
            return
        cuda = self.torch.cuda
        cuda.set_device(self.index)
        cuda.synchronize(self.torch.device(self.device))  # needs, so creates, the context

    def load_baselines(self) -> dict[str, tuple[int, int]]:
        """Allocator ``device → (allocated, reserved)`` bytes read right before the load (M1).

        Read on every GPU torch sees, since the load may put tensors on any of them; the
        device's peak counters are reset there, so the load's peaks are its own (another
        GPU's peaks count from the worker's start, before which it held nothing of this
        process: its baseline says so). ``{}`` on CPU (M4).
        """
        if self.index is None:
            return {}
        cuda = self.torch.cuda
        out = {f"cuda:{i}": (int(cuda.memory_allocated(i)), int(cuda.memory_reserved(i)))
               for i in range(cuda.device_count())}
        cuda.reset_peak_memory_stats(self.torch.device(self.device))
        return out

    @property
    def is_gpu(self) -> bool:
        """``True`` for a CUDA/ROCm device, ``False`` on CPU."""
        return self.device.startswith("cuda")

    def used_devices(self, workload: Any) -> list[str]:
        """GPUs that hold the workload's tensors (R10), not ``device_count()``."""
        if not self.is_gpu:
            return []
        cuda = self.torch.cuda
        used = {self.device}
        for d in getattr(workload, "devices_used", lambda: [])() or []:
            if str(d).startswith("cuda"):
                used.add(str(d) if ":" in str(d) else self.device)
        for i in range(cuda.device_count()):
            if cuda.memory_allocated(i) > 0:
                used.add(f"cuda:{i}")
        return sorted(used)

    def timer(self, devices: list[str]) -> SyncTimer:
        """The one stopwatch for work on ``devices`` (R8, M1).

        Args:
            devices: every device the work uses, e.g. ``["cuda:0"]``; each is
                synchronized by name (H-02). Ignored on CPU.

        Returns:
            A :class:`SyncTimer` with torch's device operations and CUDA events on this
            device, reading the allocator of every device in ``devices`` (the largest
            peak is kept, naming its device); on CPU a plain wall-clock timer (memory
            cells stay ``None``, M4).
        """
        if not self.is_gpu:
            return SyncTimer([])
        from gpusession.bench.timing import TorchCudaOps

        ops = TorchCudaOps(self.torch)
        return SyncTimer(devices, ops, event_factory=ops.event_pair(self.device))

    def environment(self, workload: Any, code_dir: Path | None) -> dict[str, Any]:
        """Environment observed in this process (R10, H-05 to H-07)."""
        from gpusession.core.gpu.nvml import read_nvml

        torch = self.torch
        snap = read_nvml()
        used = self.used_devices(workload)
        frameworks = frameworks_used(workload)
        env: dict[str, Any] = {
            "device": self.device,
            "python_version": platform.python_version(),
            # torch only when the workload uses it: the worker imports torch for its own
            # clock, so a scikit-learn workload would otherwise read "PyTorch 2.x"
            "torch_version": str(torch.__version__) if "torch" in frameworks or self.is_gpu else None,
            "frameworks": ", ".join(f"{n} {v}" for n, v in frameworks.items()) or None,
            "runtime_version": runtime_version(torch, self.device),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "gpus_used": used,
            "gpu_count": len(used),
            "driver_version": snap.driver_version,
            "nvml_reason": snap.reason,
            "code_revision": code_revision(code_dir) if code_dir else None,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }
        env.update(self.speed_settings())
        if self.is_gpu:
            env["gpu_model"] = torch.cuda.get_device_name(torch.device(self.device))
            from gpusession.core.gpu.devices import map_torch_device, torch_device_uuid

            mapping = map_torch_device(self.device, torch_device_uuid(torch, self.device), snap)
            env["gpu_uuid"], env["gpu_physical_index"] = mapping.uuid, mapping.physical_index
            env["gpu_mapping"] = mapping.words()  # by UUID, or by position (H-05)
            try:
                env["allocator_backend"] = str(torch.cuda.get_allocator_backend())
            except (AttributeError, RuntimeError):  # an older torch; a CUDA error
                env["allocator_backend"] = None
            # read last, right before the warm-up and the runs start
            env.update(read_clocks(env["gpu_physical_index"], uuid=env.get("gpu_uuid")))
        return env

    def speed_settings(self) -> dict[str, Any]:
        """What changes speed and results besides the device (R10), readable on CPU too.

        TF32 flags, ``torch.get_float32_matmul_precision()``, the grad mode the harness
        calls ``predict`` under (the worker's own; a workload may change it inside), and
        :data:`SPEED_ENV_VARS`. On torch ≥ 2.9 also every ``fp32_precision`` setting
        (``fp32_precision``, one line ``"generic=none, cuda.matmul=tf32, …"``), and the
        TF32 flags and matmul precision are read from them, never from the legacy
        getters (which raise once the new API was used, and warn of their deprecation).
        """
        torch = self.torch
        precisions = fp32_precisions(torch)
        if precisions is None:
            flags: dict[str, Any] = {
                "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
                "float32_matmul_precision": str(torch.get_float32_matmul_precision()),
            }
        else:
            matmul = _effective(precisions, "cuda.matmul")
            flags = {
                "tf32_matmul": matmul == "tf32",
                "tf32_cudnn": _effective(precisions, "cudnn.conv") == "tf32",
                "float32_matmul_precision": _MATMUL_WORDS.get(matmul, matmul),
                "fp32_precision": ", ".join(f"{k}={v}" for k, v in precisions.items()),
            }
        return {**flags, "grad_enabled": bool(torch.is_grad_enabled()), **speed_env_vars()}


def physical_gpu(torch: Any, device: str, snap: Any,
                 env: dict[str, str] | None = None) -> tuple[str | None, int | None]:
    """``(uuid, NVML index)`` of the physical GPU behind ``device`` (H-05).

    torch's own UUID of the device is looked up in the NVML snapshot first; only when
    torch gives none (or NVML does not know it) does ``CUDA_VISIBLE_DEVICES`` or the
    order decide (:func:`gpusession.core.gpu.devices.map_torch_device`, the one place).

    Args:
        torch: the ``torch`` module.
        device: e.g. ``"cuda:1"``.
        snap: an NVML snapshot (:func:`gpusession.core.gpu.nvml.read_nvml`).
        env: environment for ``CUDA_VISIBLE_DEVICES`` (default ``os.environ``).

    Returns:
        The UUID (NVML's, else torch's) and the NVML index, each ``None`` when unknown.
    """
    from gpusession.core.gpu.devices import map_torch_device, torch_device_uuid

    mapping = map_torch_device(device, torch_device_uuid(torch, device), snap, env)
    return mapping.uuid, mapping.physical_index


def meter_gpus(env: dict[str, Any], mapped: list[tuple[str | None, int | None]],
               leader: bool | None) -> list[tuple[int | None, str | None]] | None:
    """``(nvml_index, uuid)`` of every GPU a worker's runs hold, for :class:`RunMeter`.

    Args:
        env: the worker's environment record (``rank_gpu_uuids``, ``rank_hosts`` under
            torchrun).
        mapped: ``(uuid, index)`` of each device in ``gpus_used`` (:func:`physical_gpu`).
        leader: under torchrun whether this rank leads; ``None`` for one process.

    Returns:
        One process: its mapped GPUs, each once. A group's leader: every rank's GPU by
        UUID (NVML sees every GPU of the host, whatever ``CUDA_VISIBLE_DEVICES`` says).
        ``None`` for the other ranks (the leader reads their GPUs); ``[]`` for a group on
        several hosts (one host's NVML cannot read another's GPUs: said, not measured).
    """
    if leader is None:
        return list(dict.fromkeys((index, uuid) for uuid, index in mapped))
    if not leader:
        return None
    if len(set(env.get("rank_hosts") or ())) > 1:
        return []
    return [(None, u) for u in dict.fromkeys(env.get("rank_gpu_uuids") or ()) if u]


#: What each run of a group on several hosts says instead of its energy.
SEVERAL_HOSTS = "energy not measured: the group's ranks are on several hosts"


def run_meter(dev: TorchDevice, env: dict[str, Any], group: Any = None) -> RunMeter | None:
    """The energy and clock meter of a worker's measured runs (R10); ``None`` on CPU.

    Why here: the GPUs the workload held are known once it is loaded (``gpus_used``),
    and the meter reads each by the UUID torch gave it (H-05).
    """
    if not dev.is_gpu:
        return None
    snap = read_nvml()
    mapped = [physical_gpu(dev.torch, d, snap) for d in env.get("gpus_used") or [dev.device]]
    gpus = meter_gpus(env, mapped, None if group is None else bool(group.is_leader))
    if gpus is None:
        return None
    return RunMeter(gpus) if gpus else RunMeter([], refused=SEVERAL_HOSTS)
