"""Worker → runner events: one JSON line each on the worker's stdout.

Why it exists: what a worker process did (loaded, warmed up, ran, failed) is told in
these types, and the row is filled from them (R4). Who calls it: the worker
(:mod:`gpusession.bench.worker`) sends them; :mod:`gpusession.bench.process` and the
runner read them back through :func:`gpusession.core.events.event_from_json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpusession.core.events.base import Channel, Event, _opt


@dataclass(frozen=True, kw_only=True)
class WorkerEvent(Event):
    """Base of the events a worker process sends."""

    CHANNEL: ClassVar[Channel] = "worker"


@dataclass(frozen=True, kw_only=True)
class WorkerHello(WorkerEvent):
    """The worker started (its PID and its name in the schedule)."""

    EVENT: ClassVar[str] = "hello"
    pid: int | None = None
    worker: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerCommandStarted(WorkerEvent):
    """The worker started the user's command: its PID and start time.

    ``create_time_s`` is seconds since the epoch as psutil reads it, ``None`` when it
    could not be read.
    """

    EVENT: ClassVar[str] = "command_started"
    pid: int | None = None
    create_time_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerDescendantsEnded(WorkerEvent):
    """The worker ended processes the user's command left alive after it exited (H-25).

    A process the command started in a session of its own (``setsid``, a server
    started "in the background") escapes its process group; the worker, a child
    subreaper, inherits it and ends it so that two measurements never overlap.
    ``pids``: the processes ended; ``names``: their program names, in the same order;
    ``where``: as in :class:`~gpusession.core.events.records.DescendantsEndedRecord`
    (the runner's supervisor says ``"after the worker"`` for what it ended itself).
    """

    EVENT: ClassVar[str] = "descendants_ended"
    pids: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    where: str = "after the command"


@dataclass(frozen=True, kw_only=True)
class WorkerEnvironment(WorkerEvent):
    """The environment observed in the worker process (R10)."""

    EVENT: ClassVar[str] = "environment"
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WorkerApplied(WorkerEvent):
    """What a Python workload's worker applied before ``load()``: the rows state these (A2).

    Sent once per process, after seeding and building the workload and before its load,
    so a load that fails still has its row's seed and precision from the worker.

    Attributes:
        seed: the seed given to ``random``, numpy and torch (:mod:`gpusession.bench.seeding`).
        seeded: the generators seeded (``random``, ``numpy``, ``torch``, ``torch.cuda``).
        precision: the precision passed to ``load()``.
        context_limit: the context limit passed to ``load()`` in tokens; ``None``: none.
        params: the keyword arguments the factory got, less ``seed`` (its own column).
    """

    EVENT: ClassVar[str] = "applied"
    seed: int | None = None
    seeded: list[str] = field(default_factory=list)
    precision: str | None = None
    context_limit: int | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WorkerLoaded(WorkerEvent):
    """The load phase ended (R3); ``elapsed_s`` is ``None`` when not timed (a command).

    ``memory_note``: which GPU the allocator figures come from when several held the
    workload's tensors; ``setup_note``: under torchrun, what the group's set-up took
    besides the load (joining, NCCL start), in words; each ``None`` when there is none.
    """

    EVENT: ClassVar[str] = "loaded"
    elapsed_s: float | None = None
    revisions: dict[str, Any] = field(default_factory=dict)
    rss_peak_bytes: int | None = None
    n_inputs: int | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    memory_note: str | None = _opt()
    setup_note: str | None = _opt()


@dataclass(frozen=True, kw_only=True)
class WorkerWarmupDone(WorkerEvent):
    """The warm-up ended (R4).

    Attributes:
        iterations: the announced iterations per variant.
        runs: warm-up iterations performed in all.
        per_variant: iterations performed per variant id (fewer than announced when one
            failed).
    """

    EVENT: ClassVar[str] = "warmup_done"
    iterations: int = 0
    runs: int = 0
    per_variant: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WorkerReady(WorkerEvent):
    """The worker waits for ``go`` or ``stop`` before the run ``run_key`` (H-12)."""

    EVENT: ClassVar[str] = "ready"
    run_key: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkerRunStarted(WorkerEvent):
    """The run ``run_key`` (local key, ``phase:variant:index``) starts now."""

    EVENT: ClassVar[str] = "run_started"
    run_key: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkerRunFinished(WorkerEvent):
    """One scheduled run ended, with what the worker *did* (R3, R4, R7).

    Attributes:
        run_key: the local key of the run.
        ok: the work returned; ``False`` with ``error_type``/``message``/``oom``.
        phase: ``"cold"`` or ``"warm"`` as run by this process.
        warmup_iterations: warm-up iterations of this run's variant performed by this
            process before the run (0 when none, e.g. a cold worker).
        scope: the stopwatch scope used (``processing`` / ``full-chain``, R2).
        order: 1-based position of the run in this process's schedule.
        elapsed_s, event_elapsed_s: wall clock and CUDA-event seconds (``None`` when
            not measured).
        baseline_*/peak_*_bytes: allocator readings (M1); ``None`` on CPU (M4).
        truncated: inputs cut at ``context``, the context limit the run used (R9), as
            the workload counted them; ``None``: the limit was passed, no cut observed.
        tokens: tokens the workload processed after the cut, when it can count them.
        unmeasured_pass: why one unmeasured pass of the run's shape preceded it (e.g.
            after an out-of-memory run), ``None`` when none did.
        ranks: ranks of a torchrun group that ran it; ``None`` for one
            process. Its elapsed is the wall time between the barriers, the longest
            over the ranks, and its memory figures are the maximum over ranks.
        rank_note: the ranks in words (slowest rank, where the peak was), for notes.
        failed_rank: the rank whose work failed, ``None`` when none did.
        energy_j: joules the run drew on every GPU it held (NVML's energy counter at
            its boundaries, outside the timed region); ``None`` when not measured.
        energy_words: ``"energy 123.4 J"`` or why there is none (``"energy not
            supported by this GPU (NVML: Not Supported)"``), for the notes; ``None`` on CPU.
        energy_unsupported: ``True`` when a GPU the run held has no energy counter (typed:
            the row's fact never reads it from ``energy_words``, A1); ``None`` otherwise.
        throttled: which GPU was slowed at the end of the run and why, in words;
            ``None`` when none was (or on CPU).
        unrecoverable: the GPU reported an error no later call of this process can
            recover from (an illegal address, a device-side assert): the worker ends.
        worker_ends: in words, that the worker ends after this run and what becomes of
            the runs left; ``None`` when it goes on.
        memory_note: which GPU the allocator figures come from when several were used.
        failed_peak_allocated_bytes, failed_peak_reserved_bytes: a failed run's allocator
            peaks before it failed (for its notes; the figures stay empty), ``None``
            when not read.
        event_stream: which stream the CUDA events timed, in words (journal only).
        reported: what a command workload reported it ran on through
            ``$GPUSESSION_REPORT`` (``device``, ``python_version``, ``torch_version``),
            checked; ``None`` when it reported nothing
            (:mod:`gpusession.core.experiment.command_report`).
        report_note: what of its report was refused, in words, for the notes.
        cpu_user_s, cpu_system_s: a command's CPU seconds in user and kernel mode, itself
            and the children it waited for (``os.wait4``, read with the wait that ends
            the run); ``None`` when not measured (a torch worker, no ``wait4``).
        max_rss_bytes: the largest resident set of that command or a child it waited
            for, in bytes (``ru_maxrss``); ``None`` when not measured.
        applied: the settings the run used, as the worker applied them (A2): for a
            Python workload ``batch``, ``context``, ``seed`` and ``precision``; for a
            command only those it received as an argument placeholder (``{batch}``,
            ``{seed}``…), with the value filled in. ``None``: not said (the row then
            keeps the schedule's batch and context).
        offered: for a command, the settings given only as ``$GPUSESSION_<NAME>``
            (``batch``, ``context``, ``seed``, ``precision``): offered, not verifiable.
    """

    EVENT: ClassVar[str] = "run_finished"
    run_key: str = ""
    ok: bool = False
    phase: str | None = None
    warmup_iterations: int = 0
    scope: str | None = None
    order: int | None = None
    elapsed_s: float | None = None
    event_elapsed_s: float | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    output: str | None = None
    message: str | None = None
    error_type: str | None = None
    oom: bool = False
    truncated: int | None = 0
    tokens: int | None = None
    context: int | None = None
    unmeasured_pass: str | None = None
    n_inputs: int | None = None
    rss_peak_bytes: int | None = None
    expected_memory: Any = None
    ranks: int | None = _opt()
    rank_note: str | None = _opt()
    failed_rank: int | None = _opt()
    energy_j: float | None = _opt()
    energy_words: str | None = _opt()
    energy_unsupported: bool | None = _opt()
    throttled: str | None = _opt()
    unrecoverable: bool | None = _opt()
    worker_ends: str | None = _opt()
    memory_note: str | None = _opt()
    failed_peak_allocated_bytes: int | None = _opt()
    failed_peak_reserved_bytes: int | None = _opt()
    event_stream: str | None = _opt()
    reported: dict[str, str] | None = _opt()
    report_note: str | None = _opt()
    cpu_user_s: float | None = _opt()
    cpu_system_s: float | None = _opt()
    max_rss_bytes: int | None = _opt()
    applied: dict[str, Any] | None = _opt()
    offered: list[str] | None = _opt()


@dataclass(frozen=True, kw_only=True)
class WorkerIncident(WorkerEvent):
    """Something failed in the worker (``where``: ``load``, ``warmup``, ``worker``).

    ``unrecoverable``: the GPU reported an error the process cannot recover from.
    """

    EVENT: ClassVar[str] = "incident"
    where: str = "worker"
    ok: bool = False
    oom: bool = False
    error_type: str | None = None
    message: str | None = None
    trace: str | None = None
    variant_id: str | None = None
    unrecoverable: bool | None = _opt()


@dataclass(frozen=True, kw_only=True)
class WorkerStopped(WorkerEvent):
    """The parent said ``stop`` before ``run_key``: the worker ends here (H-12)."""

    EVENT: ClassVar[str] = "stopped"
    run_key: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkerDone(WorkerEvent):
    """The worker ran its whole share."""

    EVENT: ClassVar[str] = "done"

