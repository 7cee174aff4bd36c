"""The torch worker's phases: load, warm-up, the measured runs, their outputs (R3, R4, R7).

Who calls it: :func:`gpusession.bench.worker.run_torch_worker`, for one process and for
each rank of a torchrun group alike (``group`` is then the rank's
:class:`gpusession.bench.rank_group.RankGroup`, else ``None``), and the command worker
for the helpers it shares (outputs, failure fields). Runs only inside a worker process:
torch is reached through the worker's device (M5).

Every measured interval goes through a :class:`~gpusession.bench.timing.SyncTimer`; a
failure of the user's workload (out of memory or any other exception) is a failed
observation with its fields, never a crash (R7). After an out-of-memory failure the next
measured run is preceded by one unmeasured pass of its shape (the allocator holds no
blocks for it after ``empty_cache``), so its time is not an outlier.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.bench.timing import Measurement, SyncTimer, largest_peaks, memory_words
from gpusession.core.events import (
    WorkerDone,
    WorkerIncident,
    WorkerRunFinished,
    WorkerWarmupDone,
)
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_json
from gpusession.core.files.safefile import make_private_dir, open_private
from gpusession.core.files.secrets import mask_text
from gpusession.core.records.ranks import RANKS_FILE, append_rank_rows

if TYPE_CHECKING:
    from gpusession.bench.device import Channel, TorchDevice

#: The exit code of a worker (every rank of a group) whose load failed, said as an incident.
LOAD_FAILED_EXIT = 3


def peak_rss_bytes() -> int | None:
    """Peak resident set size of this process in bytes (host memory, not GPU)."""
    try:
        import resource  # POSIX only

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak) * (1 if sys.platform == "darwin" else 1024)
    except (ImportError, OSError):
        pass
    try:
        import psutil
    except ImportError:
        return None
    try:
        return int(psutil.Process().memory_info().rss)
    except (psutil.Error, OSError):
        return None


#: How the CUDA libraries say a full device: cuBLAS and cuDNN fail to allocate their
#: workspace or handle on the first matmul or convolution, not with torch's own words.
LIBRARY_ALLOC_FAILURES = ("cublas_status_alloc_failed", "cudnn_status_alloc_failed",
                          "cudnn_status_not_initialized")

#: How CUDA says an error that stays with the process: every later call fails the same
#: way, so the runs left need a fresh worker (CUDA runtime error strings and names).
STICKY_CUDA_ERRORS = (
    "illegal memory access", "cudaerrorillegaladdress", "device-side assert",
    "cudaerrorassert", "unspecified launch failure", "cudaerrorlaunchfailure",
    "misaligned address", "cudaerrormisalignedaddress", "illegal instruction",
    "cudaerrorillegalinstruction", "uncorrectable ecc error", "cudaerroreccuncorrectable",
)

#: The words of a run after which the worker ends (one process); the runner goes on.
UNRECOVERABLE_WORDS = "the GPU reported an unrecoverable error"


def is_oom(exc: BaseException) -> bool:
    """Out of memory on the device or the host (R7: a failed observation).

    torch's ``OutOfMemoryError``, an "out of memory" message (CUDA, HIP), and the
    libraries' allocation failures (:data:`LIBRARY_ALLOC_FAILURES`): each gets the
    unmeasured pass before the next run.
    """
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    text = str(exc).lower()
    return (name == "OutOfMemoryError" or "out of memory" in text
            or any(w in text for w in LIBRARY_ALLOC_FAILURES))


def is_unrecoverable(exc: BaseException) -> bool:
    """A sticky CUDA error (:data:`STICKY_CUDA_ERRORS`): this process cannot use the GPU again (R7)."""
    text = str(exc).lower()
    return not is_oom(exc) and any(w in text for w in STICKY_CUDA_ERRORS)


def read_corpus_file(path: Path) -> tuple[list[str], list[str]]:
    """IDs and texts of a JSONL (``id``, ``text``) or CSV corpus, in file order."""
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        ids, texts = [], []
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if line.strip():
                    rec = loads_json(line, path, number)  # bounded: nested too deep is refused (H-39)
                    ids.append(str(rec["id"]))
                    texts.append(str(rec.get("text", "")))
        return ids, texts
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [str(r["id"]) for r in rows], [str(r.get("text", "")) for r in rows]


def session_root(spec: dict[str, Any]) -> Path:
    """The session folder of a worker spec: ``output_dir`` is ``<session>/runs/<experiment>``."""
    return Path(spec["output_dir"]).parent.parent


def write_outputs(path: Path, ids: list[str], labels: list[str], *, root: Path | None = None) -> None:
    """``{"id", "label"}`` per line (V8), mode 0600, never through a symbolic link.

    Args:
        path: ``runs/<experiment>/<variant>/<phase>-<index>.jsonl``.
        ids: the corpus IDs, in order.
        labels: one label per ID.
        root: the session folder: no folder between it and ``path`` may be a link
            (missing ones are created 0700); ``None`` checks the file only.

    Raises:
        BadInput: ``path`` or a folder on its way is a link (its target is untouched).
        OSError: the disk refused.
    """
    if root is None:
        make_private_dir(path.parent, parents=True)
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, root=root)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
        for i, label in zip(ids, labels, strict=False):
            fh.write(json.dumps({"id": i, "label": label}, ensure_ascii=False) + "\n")



def run_batches(workload: Any, texts: list[str], batch: int) -> list[str]:
    """The workload's labels for ``texts``, ``batch`` texts per ``predict`` call, in order."""
    labels: list[str] = []
    for s in range(0, len(texts), batch):
        labels.extend(workload.predict(texts[s : s + batch]))
    return labels


def failure_fields(exc: BaseException) -> dict[str, Any]:
    """The fields of a failed observation (R7): ``ok``, ``oom``, ``error_type``, first line of ``message``.

    ``unrecoverable: True`` is added for a sticky CUDA error (:func:`is_unrecoverable`).
    The whole text is masked before its first line is taken: a secret cut to one line
    (a PEM body, a few words of a seed) would no longer be recognised (S6).
    """
    said = mask_text(str(exc))[0].strip()
    fields: dict[str, Any] = {
        "ok": False,
        "oom": is_oom(exc),
        "error_type": type(exc).__name__,
        "message": said.splitlines()[0] if said else "",
    }
    if is_unrecoverable(exc):
        fields["unrecoverable"] = True
    return fields



def end_group_after(group: Any, failed_rank: int) -> int:
    """A rank's run failed: the group ends with that run (R7).

    One barrier first: every rank reaches it only after the leader has sent the run's
    report (its ``run_finished`` naming the rank and the error), so torchrun tearing the
    group down cannot cut that report off. The failed rank then exits with
    :data:`~gpusession.bench.ranks.RUN_FAILED_EXIT` (torchrun names it as the root cause,
    the runner puts its exit code in the row), the others with 0; the runner starts a
    fresh group for the runs left.

    Returns:
        This rank's exit code.
    """
    from gpusession.bench.ranks import RUN_FAILED_EXIT

    try:
        group.barrier()
    except Exception:  # noqa: BLE001, S110 - a rank already gone: the group ends anyway
        pass
    return RUN_FAILED_EXIT if failed_rank == group.rank else 0


def group_loaded(group: Any, ch: Channel, failure: dict[str, Any] | None) -> bool:
    """Whether every rank loaded (R7): one collective after each rank's load.

    A rank that failed passes its failure fields; the leader reports the first failed
    rank as one load incident naming it, and every rank then exits 3 together (none is
    left waiting in a collective for a rank that is gone).
    """
    every = group.all_gather(failure)
    failed = [(r, f) for r, f in enumerate(every) if f]
    if not failed:
        return True
    r, f = failed[0]
    ch.send(WorkerIncident(where="load", **{**f, "message": f"rank {r} of {group.world_size}: {f.get('message')}"}))
    return False



def group_warmup(group: Any, ch: Channel, done: dict[str, int],
                  failures: list[tuple[str, dict[str, Any]]]) -> dict[str, int]:
    """Warm-up iterations every rank did, per variant (the least over ranks; R4).

    The leader reports the other ranks' warm-up failures as incidents naming the rank.
    """
    every = group.all_gather({"done": done, "failures": failures})
    if group.is_leader:
        for r, doc in enumerate(every):
            for variant, failure in doc["failures"] if r != group.leader else []:
                ch.send(WorkerIncident(where="warmup", variant_id=variant, **{
                    **failure, "message": f"rank {r} of {group.world_size}: {failure.get('message')}"}))
    return {v: min(doc["done"].get(v, 0) for doc in every) for v in done}


def measure_ranks(group: Any, timer: SyncTimer, work: Callable[[], Any], dev: TorchDevice,
                   own_uuid: str | None, run: dict[str, Any], spec: dict[str, Any],
                   fields: dict[str, Any], after_run: Callable[[], dict[str, float | None]] | None = None,
                   ) -> tuple[Measurement | None, dict[str, Any]]:
    """One scheduled run across ranks: the protocol, the gather, ``ranks.csv``.

    Every rank calls it; the leader gets a :class:`Measurement` whose elapsed is the wall
    time between the barriers, whose memory figures are the maximum over ranks (each
    baseline from the rank holding that peak) and whose result is the gathered labels
    in corpus order. Other ranks get ``(None, failure)``: they report nothing.
    ``fields`` (the run's event fields) receives ``ranks``, ``rank_note`` and, on a
    failure, ``failed_rank``. ``after_run`` (the leader's, with a meter) reads the energy
    right after the closing barrier and gives joules by GPU UUID for ``ranks.csv``.
    """
    from gpusession.bench.rank_group import rank_notes

    rr = group.measure(timer, work, gpu_uuid=own_uuid, on_failure=failure_fields)
    energy_by_gpu = after_run() if after_run is not None else {}
    failure = dict(rr.failure)
    if failure:
        fields["failed_rank"] = failure.pop("rank", None)
        empty_cache(dev)
    labels = None if failure else group.gather_to_first(list(rr.result or []))
    fields["ranks"] = group.world_size
    fields["rank_note"] = rank_notes(rr)
    if not group.is_leader:
        return None, failure
    try:
        per_rank = [{**r, "energy_j": energy_by_gpu.get(str(r.get("gpu_uuid")))} for r in rr.per_rank]
        append_rank_rows(Path(spec["output_dir"]) / RANKS_FILE, run["run_key"],
                         str(spec.get("worker")), per_rank, root=session_root(spec))
    except (OSError, BadInput) as exc:  # the per-rank table is beside the row: say so, keep the run
        fields["rank_note"] += f"; ranks.csv not written ({exc})"
    if failure:
        return None, failure
    peak_a, rank_a = rr.max_of("peak_allocated_bytes")
    peak_r, rank_r = rr.max_of("peak_reserved_bytes")
    by_rank = {r["rank"]: r for r in rr.per_rank}
    return Measurement(
        elapsed_ns=round(float(rr.elapsed_s) * 1e9),
        baseline_allocated_bytes=by_rank[rank_a]["baseline_allocated_bytes"] if rank_a is not None else None,
        baseline_reserved_bytes=by_rank[rank_r]["baseline_reserved_bytes"] if rank_r is not None else None,
        peak_allocated_bytes=peak_a, peak_reserved_bytes=peak_r, result=labels,
    ), failure



def empty_cache(dev: TorchDevice) -> None:
    """Return the allocator's cached blocks after a failure, so the next baseline is clean (M1)."""
    if dev.is_gpu:
        gc.collect()  # tensors held only by reference cycles of the failed run
        try:
            dev.torch.cuda.empty_cache()
        except RuntimeError:  # a CUDA error left by the failed run (torch.AcceleratorError)
            pass


def measure_or_fail(timer: SyncTimer, work: Callable[[], Any],
                    dev: TorchDevice) -> tuple[Measurement | None, dict[str, Any]]:
    """``timer.measure(work)``; on an exception (OOM or other, R7) the failure fields.

    After a failure the allocator cache is emptied *outside* the ``except`` block: while
    the exception lives, its traceback holds the failed run's frames and so its tensors,
    and ``empty_cache()`` could not return them; the next variant's baseline/peak
    reserved bytes (M1) would then include the failed variant's blocks.
    """
    failure: dict[str, Any] = {}
    try:
        return timer.measure(work), failure
    except Exception as exc:  # noqa: BLE001 - the user's workload can raise anything: a failed observation, kept as a row (R7)
        failure = failure_fields(exc)
    empty_cache(dev)
    return None, failure




def load_failed(ch: Channel, group: Any, exc: BaseException) -> int:
    """Report a load failure (the workload, its device, its ``load()``) and return the exit code.

    One handler for every failure before the measured runs, called in the ``except``
    block (the trace is the exception's). Under torchrun every rank learns it and the
    leader says which rank failed (:func:`group_loaded`); one process says it as a
    ``load`` incident (R7).

    Returns:
        :data:`LOAD_FAILED_EXIT`.
    """
    failed = {**failure_fields(exc), "trace": mask_text(traceback.format_exc(limit=3))[0]}
    if group is not None:
        group_loaded(group, ch, failed)
    else:
        ch.send(WorkerIncident(where="load", **failed))
    return LOAD_FAILED_EXIT


def select_variant(workload: Any, variant: str) -> None:
    """Point a per-variant workload at ``variant`` (A3); any other workload is left as it is."""
    select = getattr(type(workload), "select_variant", None)
    if callable(select):
        workload.select_variant(variant)


def open_workload(spec: dict[str, Any], seed: int | None = None) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The experiment's workload, resolved from its name and parameters (not loaded yet).

    Every param reaches the factory (A3); a varied precision or param makes one instance
    per variant of this worker (:class:`gpusession.bench.workloads.per_variant.PerVariant`),
    each built with its variant's value and loaded at its variant's precision.

    Args:
        spec: the worker spec.
        seed: the seed the worker applied, passed as ``seed=`` to a factory that names
            one (:func:`gpusession.bench.workloads.base.factory_kwargs`, A2).

    Returns:
        The workload and, per variant id of this worker, the keyword arguments its
        factory got (the rows' ``params``, A2).

    Raises:
        ValueError: a context sweep (``varied = "context"``, R9) of a workload with no
            ``set_context(limit)``.
        Exception: whatever resolving the user's workload raises (a load incident).
    """
    from gpusession.bench.workloads.base import build, supports_context
    from gpusession.bench.workloads.per_variant import PerVariant

    exp = spec["experiment"]
    params = dict(exp.get("params", {})) | spec.get("params", {})
    workload: Any
    settings = {s["variant_id"]: s for s in [*spec.get("warmup", []), *spec.get("runs", [])]}
    varied = str(exp.get("varied", "batch"))
    if varied in ("batch", "context"):  # applied per call: one instance serves every variant
        workload, kwargs = build(exp["workload"], params, seed)
        given = dict.fromkeys(settings, kwargs)
    else:  # A3: the factory (a param) or load() (precision) takes it: one instance per variant
        built = {v: build(exp["workload"], params | ({varied: s["params"][varied]} if varied in s.get("params", {})
                                                     else {}), seed)
                 for v, s in settings.items()}
        workload = PerVariant(
            {v: b[0] for v, b in built.items()},
            {v: str(s.get("precision") or exp.get("precision", "fp32")) for v, s in settings.items()})
        given = {v: b[1] for v, b in built.items()}
    if exp.get("varied") == "context" and not supports_context(workload):
        raise ValueError(f"the workload {exp['workload']} cannot vary the context: it has no "
                         "set_context(limit) to apply each run's limit")
    return workload, given


@dataclass(frozen=True)
class Inputs:
    """What the worker processes: the corpus (or synthetic inputs) and this rank's shard.

    Attributes:
        corpus: the corpus file, ``None`` for synthetic inputs (``params.n_inputs``, 1024).
        ids: every input's ID, in corpus order (counts stay corpus-wide).
        texts: every input's text.
        work_texts: the texts this process works on: all of them, or under torchrun the
            rank's contiguous shard.
    """

    corpus: Path | None
    ids: list[str]
    texts: list[str]
    work_texts: list[str]

    @classmethod
    def read(cls, spec: dict[str, Any], group: Any) -> Inputs:
        """Read the spec's corpus (JSONL or CSV) and take this rank's shard of it."""
        corpus = Path(spec["corpus"]) if spec.get("corpus") else None
        if corpus is not None:
            ids, texts = read_corpus_file(corpus)
        else:
            n = int(spec["experiment"].get("params", {}).get("n_inputs", 1024))
            ids, texts = [f"synthetic-{i:05d}" for i in range(n)], ["x"] * n
        work_texts = texts if group is None else texts[slice(*group.shard(len(texts)))]
        return cls(corpus, ids, texts, work_texts)


@dataclass(frozen=True)
class Load:
    """A timed load (R3, M1).

    Attributes:
        used: every device the load left the workload's tensors on (H-02).
        baseline_allocated_bytes, baseline_reserved_bytes: the allocator before
            ``load()`` (``None`` on CPU), of the device holding each peak.
        measurement: the timer's reading of the load.
        peak_allocated_bytes, peak_reserved_bytes: the largest peaks over ``used``.
        memory_note: which GPU they are from when several were used, else ``None``.
    """

    used: list[str]
    baseline_allocated_bytes: int | None
    baseline_reserved_bytes: int | None
    measurement: Measurement
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    memory_note: str | None = None

    def figures(self, on_gpu: bool) -> dict[str, Any]:
        """The ``loaded`` event's figures: elapsed seconds; bytes only on a GPU (M1, M4)."""
        m = self.measurement
        return dict(
            elapsed_s=m.elapsed_s,
            baseline_allocated_bytes=self.baseline_allocated_bytes if on_gpu else None,
            baseline_reserved_bytes=self.baseline_reserved_bytes if on_gpu else None,
            peak_allocated_bytes=self.peak_allocated_bytes if on_gpu else None,
            peak_reserved_bytes=self.peak_reserved_bytes if on_gpu else None,
            memory_note=self.memory_note if on_gpu else None,
        )


def load_phase(dev: TorchDevice, workload: Any, exp: dict[str, Any], timer: SyncTimer) -> Load:
    """Time the load once per process: device selected, context created, model to device (R3).

    The clock starts before :meth:`TorchDevice.activate`, for every device spelling; the
    allocator baselines are read and the peaks reset right before ``load()`` (M1); every
    device the load used is synchronized by name (H-02) and its peaks read: the largest
    is kept, with its device's baseline, and named when several devices were used.

    Raises:
        Exception: whatever the user's ``load()`` raises, out of memory included.
    """
    def load() -> tuple[list[str], dict[str, tuple[int, int]]]:
        dev.activate()
        baselines = dev.load_baselines()
        workload.load(dev.device, exp.get("precision", "fp32"), exp.get("context_limit"))
        used = dev.used_devices(workload)
        for d in used:
            dev.torch.cuda.synchronize(dev.torch.device(d))
        return used, baselines

    m = timer.measure(load, presync=False)
    used, baselines = m.result
    kept = largest_peaks(timer.peaks(used) if used else {}, baselines)
    return Load(used, kept["baseline_allocated_bytes"], kept["baseline_reserved_bytes"], m,
                kept["peak_allocated_bytes"], kept["peak_reserved_bytes"],
                memory_words(used, kept["peak_allocated_device"], kept["peak_reserved_device"]))


@dataclass
class TorchWork:
    """What the warm-up and the measured runs work with, once loaded.

    Attributes:
        spec: the worker spec the runner wrote.
        ch: the channel to the runner.
        group: this rank's group under torchrun, ``None`` for one process.
        dev: the device.
        workload: the loaded workload.
        inputs: the corpus and this rank's shard.
        timer: the timer of the runs (every device the load used).
        meter: reads energy and clocks at each run's boundaries on every GPU the
            workload held (:class:`gpusession.core.gpu.nvml.RunMeter`); ``None`` on CPU
            and on a group's other ranks (the leader reads every rank's GPU).
        unrecoverable: the type of a sticky CUDA error seen in the warm-up (this process
            cannot use the GPU again), else ``None``.
        applied: what the worker applied before the load (``seed``, ``precision``,
            ``context_limit``: :class:`gpusession.core.events.WorkerApplied`; ``params``:
            the factory's keyword arguments by variant id, less ``seed``), echoed in each
            run's ``applied`` with its batch and context (A2).
    """

    spec: dict[str, Any]
    ch: Channel
    group: Any
    dev: TorchDevice
    workload: Any
    inputs: Inputs
    timer: SyncTimer
    meter: Any = None
    unrecoverable: str | None = None
    applied: dict[str, Any] = field(default_factory=dict)

    @property
    def per_context(self) -> bool:
        """A context sweep applies each run's limit to the work (R9), through ``set_context``."""
        return bool(self.spec["experiment"].get("varied") == "context")

    def batches(self, batch: int) -> Callable[[], list[str]]:
        """The unvalidated work of one pass over this rank's texts at ``batch``."""
        return lambda: run_batches(self.workload, self.inputs.work_texts, batch)


def warmup_phase(w: TorchWork) -> tuple[dict[str, int], bool]:
    """The announced warm-up, with exactly the measured shapes (R4, H-03).

    Each variant runs ``warmup_iterations`` times, unmeasured; a failure ends that
    variant's warm-up with an incident, a sticky CUDA error the whole warm-up (the
    process cannot use the GPU again: ``w.unrecoverable``). Under torchrun what every rank did is merged
    (:func:`group_warmup`). ``warmup_done`` is sent when there was a warm-up.

    Returns:
        Iterations performed per variant id, and whether a warm-up ran out of memory
        (the first measured run is then preceded by one unmeasured pass).
    """
    warm = w.spec.get("warmup", [])
    iterations = int(w.spec.get("warmup_iterations", 0))
    done: dict[str, int] = {}
    failures: list[tuple[str, dict[str, Any]]] = []
    after_oom = False
    for v in warm:
        if w.unrecoverable:
            break
        done[v["variant_id"]] = 0
        select_variant(w.workload, v["variant_id"])
        if w.per_context:  # the warm-up shape is (batch, context)
            w.workload.set_context(v.get("context"))
        for _ in range(iterations):
            _m, failure = measure_or_fail(w.timer, w.batches(int(v["batch"])), w.dev)
            if failure:
                after_oom = after_oom or bool(failure.get("oom"))
                w.unrecoverable = failure["error_type"] if failure.get("unrecoverable") else None
                w.ch.send(WorkerIncident(where="warmup", variant_id=v["variant_id"], **failure))
                failures.append((v["variant_id"], failure))
                break
            done[v["variant_id"]] += 1
    if w.group is not None:  # what every rank did
        done = group_warmup(w.group, w.ch, done, failures)
    if warm:
        w.ch.send(WorkerWarmupDone(iterations=iterations, runs=sum(done.values()), per_variant=done))
    return done, after_oom


def measured_phase(w: TorchWork, warm_done: dict[str, int], after_oom: bool,
                   own_uuid: str | None) -> int:
    """Every scheduled run the runner lets start, each reported by ``run_finished`` (R3-R5, R7).

    Under torchrun a failed run ends the group (:func:`end_group_after`); the runner
    starts a fresh one for the runs left. One process ends after a sticky CUDA error
    (the run's ``worker_ends`` says so; the runner goes on in a fresh worker), or
    before the runs when the warm-up met one. ``done`` is sent unless the runner said
    stop or the worker ends early.

    Returns:
        The exit code: 0, or the rank's under torchrun after a failed run.
    """
    try:
        if w.group is None and w.unrecoverable:  # the warm-up left the GPU unusable here
            w.ch.send(WorkerIncident(where="warmup", error_type=w.unrecoverable, message=(
                f"{UNRECOVERABLE_WORDS} in the warm-up; the worker ended before its measured runs")))
            return 0
        for run, out_path, order in w.ch.runs(w.spec):
            fields, after_oom = measured_run(w, run, out_path, order, warm_done, after_oom, own_uuid)
            ends = w.group is None and bool(fields.get("unrecoverable"))
            if ends:
                fields["worker_ends"] = unrecoverable_words(order < len(w.spec["runs"]))
            w.ch.send(WorkerRunFinished(run_key=run["run_key"], rss_peak_bytes=peak_rss_bytes(), **fields))
            if ends:
                return 0
            if w.group is not None and fields.get("failed_rank") is not None:
                return end_group_after(w.group, int(fields["failed_rank"]))
    finally:
        if w.meter is not None:
            w.meter.close()  # NVML stays open over the runs only
    if not w.ch.stopped:
        w.ch.send(WorkerDone())
    return 0


def unrecoverable_words(runs_left: bool) -> str:
    """What becomes of a worker after a sticky CUDA error, for the run's notes (R7)."""
    return UNRECOVERABLE_WORDS + ("; the remaining runs go on in a fresh worker" if runs_left
                                  else "; the worker ended")


def measured_run(w: TorchWork, run: dict[str, Any], out_path: Path, order: int,
                 warm_done: dict[str, int], after_oom: bool,
                 own_uuid: str | None) -> tuple[dict[str, Any], bool]:
    """One measured run: its ``run_finished`` fields, and whether it ran out of memory.

    The fields say what the worker did (phase, warm-up iterations of the run's variant,
    scope, position; R4), the cut at the context limit (R9), the figures or the failure
    (R7); ``after_oom`` puts one unmeasured pass of the run's shape before it. A failed
    run keeps the allocator peaks it reached before the failure (one process).
    """
    from gpusession.bench.workloads.base import count_tokens, count_truncated

    batch = int(run["batch"])
    context = run.get("context")
    select_variant(w.workload, run["variant_id"])
    if w.per_context:
        w.workload.set_context(context)
    texts = w.inputs.texts
    fields: dict[str, Any] = {
        "truncated": count_truncated(w.workload, texts, context),
        "tokens": count_tokens(w.workload, texts), "context": context,
        "n_inputs": len(w.inputs.ids), "phase": run["phase"], "scope": _scope(w),
        "order": order, "warmup_iterations": warm_done.get(run["variant_id"], 0),
        "applied": applied_settings(w, run, batch, context),
    }
    if after_oom:
        fields["unmeasured_pass"] = _unmeasured_pass(w, batch)
    work = _work(w, batch, out_path)
    after_run = _metered(w, fields)  # the counters read here, before the timer starts
    if w.group is None:
        m, failure = measure_or_fail(w.timer, work, w.dev)
        if after_run is not None:
            after_run()
    else:
        m, failure = measure_ranks(w.group, w.timer, work, w.dev, own_uuid, run, w.spec, fields,
                                   after_run)
    ran_out = bool(failure.get("oom"))
    if m is not None:
        failure = _keep_outputs(w, m, out_path, fields)
    elif failure and w.group is None:  # the peaks the run reached before it failed
        peaks = largest_peaks(w.timer.peaks(), {})
        fields.update(failed_peak_allocated_bytes=peaks["peak_allocated_bytes"],
                      failed_peak_reserved_bytes=peaks["peak_reserved_bytes"])
    if failure:
        fields.update(failure)
    expected = getattr(w.workload, "expected_memory", None)
    if callable(expected):
        fields["expected_memory"] = expected(batch)
    return fields, ran_out


def applied_settings(w: TorchWork, run: dict[str, Any], batch: int, context: int | None) -> dict[str, Any]:
    """The settings one run used, as the worker applied them (A2): the row's cells come from these.

    ``batch``: texts per ``predict`` call; ``context``: the limit the work ran under
    (the run's own, through ``set_context``, in a context sweep; else the one ``load()``
    got); ``seed``: the process's (:attr:`TorchWork.applied`); ``precision``: the one its
    variant's instance was loaded at (a precision sweep, A3), else the process's;
    ``params``: the keyword arguments its variant's factory got, less ``seed``.
    """
    varied = w.spec["experiment"].get("varied")
    precision = (run.get("precision") or w.applied.get("precision")) if varied == "precision" \
        else w.applied.get("precision")
    return {"batch": batch, "context": context if w.per_context else w.applied.get("context_limit"),
            "seed": w.applied.get("seed"), "precision": precision,
            "params": dict(w.applied.get("params", {}).get(run["variant_id"], {}))}


def _metered(w: TorchWork, fields: dict[str, Any]) -> Callable[[], dict[str, float | None]] | None:
    """Read the energy counters now; the returned call reads them again after the run (R10).

    Both readings lie outside the timed region: the first right before the timer starts,
    the second right after it stops. The second puts ``energy_j``, ``energy_words``,
    ``energy_unsupported`` and ``throttled`` in ``fields`` and returns the joules by GPU; ``None`` without a meter.
    """
    meter = w.meter
    if meter is None:
        return None
    before = meter.start()

    def after_run() -> dict[str, float | None]:
        energy, clocks = meter.stop(before)
        fields.update(energy_j=energy.energy_j, energy_words=energy.words(), throttled=clocks.words(),
                      energy_unsupported=energy.unsupported or None)
        return dict(energy.per_gpu_j)

    return after_run


def _scope(w: TorchWork) -> str | None:
    """The stopwatch scope (R2): ``processing`` (default) or ``full-chain``."""
    scope: str | None = w.spec["experiment"].get("scope", "processing")
    return scope


def _unmeasured_pass(w: TorchWork, batch: int) -> str:
    """One unmeasured pass of the run's shape after an out-of-memory run; why, in words."""
    said = "after an out-of-memory run"
    _m, failure = measure_or_fail(w.timer, w.batches(batch), w.dev)
    if failure:
        said += f" (it failed too: {failure['error_type']})"
    return said


def _work(w: TorchWork, batch: int, out_path: Path) -> Callable[[], list[str]]:
    """The measured work of one run: the passes, and in ``full-chain`` reading and writing too (R2)."""
    if _scope(w) != "full-chain":
        return w.batches(batch)
    corpus, inputs, root = w.inputs.corpus, w.inputs, session_root(w.spec)

    def full_chain() -> list[str]:
        ids, texts = read_corpus_file(corpus) if corpus else (inputs.ids, inputs.texts)
        labels = run_batches(w.workload, texts, batch)
        write_outputs(out_path, ids, labels, root=root)
        return labels

    return full_chain


def _keep_outputs(w: TorchWork, m: Measurement, out_path: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """Write a returned run's labels (V8) and put its figures in ``fields``; the failure, else ``{}``.

    Writing the outputs can fail (disk full, labels that are not JSON or have no
    ``len()``, a link in place of the output or its folder): the run then fails, named.
    """
    ids = w.inputs.ids
    try:
        labels = m.result
        if _scope(w) != "full-chain":
            write_outputs(out_path, ids, labels, root=session_root(w.spec))
        fields.update(
            ok=True,
            elapsed_s=m.elapsed_s,
            event_elapsed_s=m.event_elapsed_s,
            baseline_allocated_bytes=m.baseline_allocated_bytes,
            baseline_reserved_bytes=m.baseline_reserved_bytes,
            peak_allocated_bytes=m.peak_allocated_bytes,
            peak_reserved_bytes=m.peak_reserved_bytes,
            memory_note=m.memory_note(),
            event_stream=m.event_stream,
            output=str(out_path),
        )
        if len(labels) != len(ids):
            fields["message"] = f"predict returned {len(labels)} labels for {len(ids)} inputs"
    except (OSError, TypeError, ValueError, BadInput) as exc:
        return failure_fields(exc)
    return {}


__all__ = [
    "LOAD_FAILED_EXIT", "Inputs", "Load", "TorchWork", "empty_cache", "end_group_after",
    "failure_fields", "group_loaded", "group_warmup", "is_oom", "is_unrecoverable", "load_failed", "load_phase",
    "measure_or_fail", "measure_ranks", "measured_phase", "measured_run", "open_workload",
    "applied_settings", "peak_rss_bytes", "read_corpus_file", "run_batches", "session_root", "unrecoverable_words", "warmup_phase",
    "write_outputs",
]
