"""Experiments and their schedules: what is varied, what is held fixed, in which order.

Who calls it: ``gpusession demo`` / ``gpusession run`` and the run pane (through
:class:`gpusession.bench.runner.Runner`). No torch here: the parent process plans, the
worker processes measure.

An experiment is stored in ``session.toml`` under ``[experiments.<id>]`` *before* it
runs (R1, V5). It varies one announced parameter (e.g. ``batch = [1, 4, 8]``); corpus,
input order, model, precision, context limit, device, seed, scope and the validation
protocol are fixed. Changing a fixed setting after a measurement exists starts a new
experiment id (``batch-sweep-2``), so rows of two different setups never share an id.

The schedule separates phases (R3): ``load`` (timed once per worker process), ``cold``
(the first run of a variant in a fresh process) and ``warm`` (after the announced
warm-up, R4, in one long-lived process), with five measured runs per variant by default
in interleaved or seeded pre-drawn order (R5); the drawn order is stored.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gpusession.core.experiment.keys import RunKey
from gpusession.core.experiment.placeholders import ENV, check_command
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import check_identifier, shown

SCOPES = ("processing", "full-chain")
#: The largest value of a varied parameter (a batch, a context length…): a signed 32-bit
#: whole number, far above any real setting and inside TOML's 64-bit integers.
VALUE_MAX = 2**31 - 1
_ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_ENDPOINT_RE = re.compile(r"[A-Za-z0-9_.-]+:[0-9]{1,5}")
#: Upper bound on runs, warm-up iterations and cold runs per variant (a typo guard).
COUNT_MAX = 10_000
ORDERS = ("interleaved", "shuffled")
VARIED = ("batch", "context")
PRECISIONS = ("fp32", "fp16", "bf16")

#: Keys that define an experiment's setup; a change to any of them after a
#: measurement exists means a new experiment id (R1, V5).
FIXED_KEYS = (
    "workload",
    "corpus",
    "varied",
    "values",
    "precision",
    "context_limit",
    "batch",
    "device",
    "input_order",
    "seed",
    "scope",
    "warmup_iterations",
    "runs_per_variant",
    "order",
    "order_seed",
    "cold_runs_per_variant",
    "protocol",
    "params",
    "gpus",
    "nodes",
)


@dataclass(frozen=True)
class Experiment:
    """One announced experiment (R1-R5, V5).

    Attributes:
        id: experiment id, e.g. ``"batch-sweep"`` (a safe slug).
        workload: ``"bbc-news"``, ``"synthetic-mlp"``, ``"command"`` or a
            ``"module:factory"`` entry point.
        corpus: path of the corpus (JSONL/CSV with ``id``, ``text``), relative to the
            session folder or absolute; ``None`` for synthetic workloads.
        varied: the one varied parameter (``"batch"`` or ``"context"``).
        values: its values, e.g. ``(1, 4, 8)``.
        precision: ``fp32`` / ``fp16`` / ``bf16`` (fixed; its own experiment, R1).
        context_limit: tokens per input kept (truncation is counted, R9); ``None`` = no
            limit.
        batch: the fixed batch when ``varied`` is not ``batch``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``None`` = decided in the worker
            (``cuda`` when available, else ``cpu``).
        input_order: ``"corpus"`` (file order) — held fixed (R1).
        seed: seed of the workload and of the split.
        scope: ``"processing"`` (predict calls only) or ``"full-chain"`` (R2).
        warmup_iterations: warm-up runs per variant before the measured warm runs (R4).
        runs_per_variant: measured warm runs per variant (R5, default 5).
        order: ``"interleaved"`` or ``"shuffled"`` (seeded by ``order_seed``, R5).
        order_seed: seed of the shuffled order.
        cold_runs_per_variant: fresh processes per variant for the cold run (R3).
        protocol: the validation protocol (classes, metric, threshold, tolerance, …),
            fixed before the first measurement (V5).
        params: workload parameters (e.g. ``command`` argv, MLP width/depth). A
            command's placeholders are whole arguments or ``--flag={x}`` only, never
            inside a ``-c`` script (:mod:`gpusession.core.experiment.placeholders`).
        run_timeout_s: a run taking longer is killed and kept as a failed row (R7).
        gpus: processes per node: ``1`` runs one worker process; ``N > 1``
            starts the worker through torchrun with ``N`` ranks, each on
            ``cuda:LOCAL_RANK`` (NCCL) or on CPU (gloo), the corpus split by rank.
        nodes: nodes of the torchrun group; more than one needs
            ``rendezvous``; each other node runs ``gpusession agent`` (:mod:`gpusession.bench.agent`).
        rendezvous: ``"host:port"`` of the c10d rendezvous the runner's node hosts;
            not part of the setup (a new address is not a new experiment).
        derived_from: the experiment this one replays with one element changed
            (``experiment derive``, D4); ``None`` for one defined on its own. Not part
            of the setup: it says where the setup came from.
        changed_key: the one element the replay changed, as ``derive --set`` names it
            (``precision``, ``context-limit``, ``param.width``); ``None`` with
            ``derived_from``.
    """

    id: str
    workload: str
    corpus: str | None = None
    varied: str = "batch"
    values: tuple[Any, ...] = (1,)
    precision: str = "fp32"
    context_limit: int | None = None
    batch: int | None = None
    device: str | None = None
    input_order: str = "corpus"
    seed: int = 0
    scope: str = "processing"
    warmup_iterations: int = 2
    runs_per_variant: int = 5
    order: str = "interleaved"
    order_seed: int = 0
    cold_runs_per_variant: int = 1
    protocol: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    run_timeout_s: float = 3600.0
    gpus: int = 1
    nodes: int = 1
    rendezvous: str | None = None
    derived_from: str | None = None
    changed_key: str | None = None

    @property
    def variant_ids(self) -> list[str]:
        """``["batch-1", "batch-4", "batch-8"]``."""
        return [variant_id(self.varied, v) for v in self.values]

    def setting(self, variant: str) -> dict[str, Any]:
        """Batch and context of one variant."""
        value = self.values[self.variant_ids.index(variant)]
        batch = value if self.varied == "batch" else (self.batch or 1)
        context = value if self.varied == "context" else self.context_limit
        return {"batch": batch, "context": context}

    def to_toml(self) -> dict[str, Any]:
        """The experiment as its ``[experiments.<id>]`` table (every field but ``id``).

        ``values`` becomes a list (TOML has no tuples); the inverse is :meth:`from_toml`.
        """
        data = asdict(self)
        data["values"] = list(self.values)
        data.pop("id")
        return data

    @classmethod
    def from_toml(cls, exp_id: str, data: Mapping[str, Any]) -> Experiment:
        """Build from ``[experiments.<id>]``; unknown keys are ignored (forward compatible).

        Raises:
            BadInput: a missing workload or a value of the wrong kind.
        """
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "id"}
        if "workload" not in known:
            raise BadInput("missing workload", field=f"experiments.{exp_id}.workload")
        known["values"] = tuple(known.get("values", (1,)))
        try:
            return check(cls(id=exp_id, **known))
        except TypeError as exc:
            raise BadInput(str(exc), field=f"experiments.{exp_id}") from None


def variant_id(varied: str, value: Any) -> str:
    """``variant_id("batch", 4) == "batch-4"``."""
    return f"{varied}-{value}"


def check(exp: Experiment) -> Experiment:
    """Check an experiment's settings; return it unchanged.

    Raises:
        BadInput: naming the field: precision varied (precision is its own experiment,
            R1), an unknown scope/order/precision, no values, duplicate values, fewer
            than one run, a negative warm-up.
    """
    if isinstance(exp.id, str):  # first: the field below names the id
        check_identifier(exp.id, field="experiments", what="the experiment id")
    f = f"experiments.{exp.id}"
    if not isinstance(exp.id, str) or not _ID_RE.fullmatch(exp.id) or ".." in exp.id:
        # the id names folders under runs/ and validation/: never a path
        raise BadInput(f"experiment id {shown(exp.id)}: use ASCII letters (A-Z, a-z), digits, '.', "
                       "'_' or '-' (no '/', no '..', no spaces, not starting with '.' or '-')", field=f)
    if exp.varied == "precision":
        raise BadInput(
            "precision cannot be the varied parameter: define one experiment per precision "
            "(each with its own quality check, R1)",
            field=f"{f}.varied",
        )
    if exp.varied not in VARIED:
        raise BadInput(f"expected one of {', '.join(VARIED)}, got {shown(exp.varied)}", field=f"{f}.varied")
    if not exp.values:
        raise BadInput("no values to vary", field=f"{f}.values")
    if len(set(exp.values)) != len(exp.values):
        raise BadInput(f"duplicate values {list(exp.values)}", field=f"{f}.values")
    for v in exp.values:
        if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > VALUE_MAX:
            raise BadInput(f"expected whole numbers from 1 to {VALUE_MAX:,}, got {shown(v)}", field=f"{f}.values")
    if exp.scope not in SCOPES:
        raise BadInput(f"expected one of {', '.join(SCOPES)}, got {shown(exp.scope)}", field=f"{f}.scope")
    if exp.order not in ORDERS:
        raise BadInput(f"expected one of {', '.join(ORDERS)}, got {shown(exp.order)}", field=f"{f}.order")
    if exp.precision not in PRECISIONS:
        raise BadInput(
            f"expected one of {', '.join(PRECISIONS)}, got {shown(exp.precision)}", field=f"{f}.precision"
        )
    for key in ("runs_per_variant", "warmup_iterations", "cold_runs_per_variant", "seed", "order_seed"):
        v = getattr(exp, key)
        if not isinstance(v, int) or isinstance(v, bool):
            raise BadInput(f"expected a whole number, got {shown(v)}", field=f"{f}.{key}")
    for key in ("runs_per_variant", "warmup_iterations", "cold_runs_per_variant"):
        if getattr(exp, key) > COUNT_MAX:
            raise BadInput(f"expected at most {COUNT_MAX:,}, got {getattr(exp, key):,}",
                           field=f"{f}.{key}")
    t = exp.run_timeout_s
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise BadInput(f"expected a number of seconds > 0, got {shown(t)}", field=f"{f}.run_timeout_s")
    if exp.runs_per_variant < 1:
        raise BadInput("expected at least 1 measured run per variant", field=f"{f}.runs_per_variant")
    for key in ("warmup_iterations", "cold_runs_per_variant"):
        if getattr(exp, key) < 0:
            raise BadInput(f"expected a count ≥ 0, got {getattr(exp, key)}", field=f"{f}.{key}")
    for key in ("context_limit", "batch"):
        v = getattr(exp, key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise BadInput(f"expected a whole number ≥ 1 (or leave it unset), got {shown(v)}",
                           field=f"{f}.{key}")
    if exp.device is not None and not (exp.device == "cpu" or exp.device.startswith("cuda")):
        raise BadInput(f"expected cpu, cuda or cuda:N, got {shown(exp.device)}", field=f"{f}.device")
    _check_gpus(exp, f)
    for key in ("derived_from", "changed_key"):
        v = getattr(exp, key)
        if v is not None and (not isinstance(v, str) or not v):
            raise BadInput(f"expected an experiment id or a setting's name, got {shown(v)}",
                           field=f"{f}.{key}")
    if exp.workload == "command":
        argv = exp.params.get("command")
        if not argv:  # say what to type, not the file's shape
            raise BadInput("--command is empty: a command workload needs the program and its "
                           "arguments, e.g. --command 'python3 score.py {batch}'",
                           field=f"{f}.params.command")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise BadInput("expected a list of arguments (text)", field=f"{f}.params.command")
        check_command(argv, field=f"{f}.params.command")  # a value never becomes code
    if exp.varied == "context":
        _check_context_varied(exp, f)
    return exp


def _check_gpus(exp: Experiment, f: str) -> None:
    """Check ``gpus`` and ``nodes``: whole numbers ≥ 1.

    More than one process needs a torch workload on ``cuda``/``cpu`` and the processing
    scope; several nodes need a rendezvous endpoint ``host:port``.

    Why: several GPUs in one run go through torchrun, which a bad count would fail late.
    """
    g = exp.gpus
    if not isinstance(g, int) or isinstance(g, bool) or g < 1:
        raise BadInput(f"expected a whole number of GPUs ≥ 1, got {shown(g)}", field=f"{f}.gpus")
    if g > COUNT_MAX:
        raise BadInput(f"expected at most {COUNT_MAX:,}, got {g:,}", field=f"{f}.gpus")
    n = exp.nodes
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > COUNT_MAX:
        raise BadInput(f"expected a whole number of nodes from 1 to {COUNT_MAX:,}, got {shown(n)}",
                       field=f"{f}.nodes")
    r = exp.rendezvous
    if n > 1 and (not isinstance(r, str) or not _ENDPOINT_RE.fullmatch(r)
                  or not 0 < int(r.rpartition(":")[2]) < 65536):
        raise BadInput(f"{n} nodes need a rendezvous endpoint host:port (port 1-65535), "
                       + ("none given (--rendezvous HOST:PORT: the runner's node, a free port every node reaches)"
                          if r is None else f"got {shown(r)}"), field=f"{f}.rendezvous")
    if n == 1 and r is not None:
        raise BadInput("a rendezvous endpoint is for several nodes: set nodes or leave it out",
                       field=f"{f}.rendezvous")
    g = g * n  # every check below is about processes in the group
    if g > 1 and exp.workload == "command":
        raise BadInput("a command workload runs as one process: leave gpus and nodes at 1 "
                       "(the command may start its own processes)", field=f"{f}.gpus")
    if g > 1 and exp.scope != "processing":
        raise BadInput(f"with {g} GPUs only the processing scope is measured for now: the "
                       "outputs are gathered and written after the clock stops", field=f"{f}.scope")
    if g > 1 and exp.device is not None and exp.device not in ("cpu", "cuda"):
        raise BadInput(f"with {g} GPUs each process uses its own device: set the device to "
                       f"cuda, cpu or leave it unset, not {shown(exp.device)}", field=f"{f}.device")


#: Built-in workloads that cannot apply a context limit per run.
_NO_CONTEXT = {"synthetic-mlp": "it has no tokens (random inputs)"}


def _check_context_varied(exp: Experiment, f: str) -> None:
    """Refuse ``varied = "context"`` where the workload cannot apply the run's limit.

    A ``module:factory`` workload is checked in the worker, at load (it needs
    ``set_context``), since importing it here could import torch (M5).
    """
    if exp.workload in _NO_CONTEXT:
        raise BadInput(f"the {exp.workload} workload cannot vary the context: "
                       f"{_NO_CONTEXT[exp.workload]}; vary the batch instead", field=f"{f}.varied")
    if exp.workload == "command":
        argv = exp.params.get("command") or []
        if not any("{context}" in str(a) or ENV["context"] in str(a) for a in argv):
            raise BadInput("a command that varies the context must pass it on: put {context} "
                           f"in params.command, or read ${ENV['context']} in its script",
                           field=f"{f}.varied")


@dataclass(frozen=True)
class ScheduledRun:
    """One measured run of the schedule.

    Attributes:
        phase: ``"cold"`` or ``"warm"`` (``load`` rows are produced once per worker).
        variant_id: e.g. ``"batch-4"``.
        run_index: 1-based index within (variant, phase), offset past earlier
            invocations of the same experiment so that rows and output files stay
            unique.
        worker: which worker process runs it (``"cold-batch-4-1"``, ``"warm"``).
    """

    phase: str
    variant_id: str
    run_index: int
    worker: str

    def key(self, experiment_id: str) -> RunKey:
        """The run's journal key (:class:`gpusession.core.folder.journal.RunKey`)."""
        return RunKey(experiment_id, self.phase, self.variant_id, self.run_index)

    @property
    def run_key(self) -> str:
        """The key inside the experiment, ``"warm:batch-4:2"`` (worker protocol, messages)."""
        return self.key("").local


def draw_warm_order(exp: Experiment) -> list[str]:
    """The warm runs' variant order (R5): interleaved round-robin, or a seeded shuffle.

    Returns:
        ``runs_per_variant × len(values)`` variant ids, e.g. interleaved
        ``[b1, b4, b8, b1, b4, b8, …]``.
    """
    order = [v for _ in range(exp.runs_per_variant) for v in exp.variant_ids]
    if exp.order == "shuffled":
        random.Random(exp.order_seed).shuffle(order)
    return order


def schedule(exp: Experiment, offsets: Mapping[tuple[str, str], int] | None = None) -> list[ScheduledRun]:
    """Turn an experiment into its ordered runs (R3, R5).

    Cold runs come first, one fresh worker per (variant, cold run); then one warm worker
    runs the warm-up (not scheduled here; its count is stored, R4) and the measured warm
    runs in the drawn order.

    Args:
        exp: the experiment.
        offsets: ``(phase, variant_id) → last run_index already measured`` so a second
            invocation continues numbering instead of overwriting.

    Returns:
        Cold runs, then warm runs.
    """
    offsets = offsets or {}
    runs: list[ScheduledRun] = []
    for v in exp.variant_ids:
        base = offsets.get(("cold", v), 0)
        for i in range(1, exp.cold_runs_per_variant + 1):
            runs.append(ScheduledRun("cold", v, base + i, f"cold-{v}-{base + i}"))
    counters: dict[str, int] = {}
    for v in draw_warm_order(exp):
        counters[v] = counters.get(v, 0) + 1
        runs.append(ScheduledRun("warm", v, offsets.get(("warm", v), 0) + counters[v], "warm"))
    return runs


def workers_of(runs: list[ScheduledRun]) -> list[tuple[str, list[ScheduledRun]]]:
    """Group scheduled runs by worker process, keeping the schedule's order."""
    out: dict[str, list[ScheduledRun]] = {}
    for r in runs:
        out.setdefault(r.worker, []).append(r)
    return list(out.items())


__all__ = [
    "Experiment",
    "ScheduledRun",
    "check",
    "draw_warm_order",
    "schedule",
    "variant_id",
    "workers_of",
]
