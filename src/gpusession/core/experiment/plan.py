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
from gpusession.core.experiment.params import HARNESS_PARAMS, PARAM_TYPES, param_types
from gpusession.core.experiment.placeholders import ENV, check_command, param_env, plain_value
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
#: The settings an experiment may vary besides a ``--param`` key (A3): any other varied
#: name is a workload parameter, given per variant (``--varied model --values a,b``).
VARIED = ("batch", "context", "precision")
PRECISIONS = ("fp32", "fp16", "bf16")
#: Names that are neither a setting one may vary nor a workload parameter: the
#: experiment's other fields, the command and the paths gpusession itself fills.
NOT_VARIABLE = frozenset({"id", "workload", "corpus", "values", "varied", "device", "input_order", "seed",
                          "scope", "warmup_iterations", "runs_per_variant", "order", "order_seed",
                          "cold_runs_per_variant", "protocol", "params", "run_timeout_s", "gpus", "nodes",
                          "rendezvous", "derived_from", "changed_key", "context_limit", "command", "output",
                          "params_via_env", *HARNESS_PARAMS})
_PARAM_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Longest variant id (it names a folder under ``runs/<experiment>/``).
VARIANT_ID_MAX = 100

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
        varied: the one varied parameter (A3): ``"batch"``, ``"context"``,
            ``"precision"`` or the name of a workload parameter (``"model"``), which
            ``params`` then does not hold: each variant gets its own value.
        values: its values, e.g. ``(1, 4, 8)``; precisions (``("fp32", "fp16")``); a
            parameter's plain values (``("a", "b")``, ``(10, 20)``).
        precision: ``fp32`` / ``fp16`` / ``bf16``, fixed unless it is the varied one (each
            precision then its own variant with its own quality check, R1).
        context_limit: tokens per input kept (truncation is counted, R9); ``None`` = no
            limit.
        batch: the fixed batch when ``varied`` is not ``batch``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``None`` = decided in the worker
            (``cuda`` when available, else ``cpu``).
        input_order: ``"corpus"`` (file order) — held fixed (R1).
        seed: the seed a Python workload's worker applies (``random``, numpy, torch) and
            a command gets as ``{seed}`` / ``$GPUSESSION_SEED``; rows state it only as
            applied or received (A2).
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
        params_via_env: a command workload's acknowledgement (``define
            --param-via-env``) that it reads the params it takes as no ``{param.NAME}``
            from ``$GPUSESSION_PARAM_<NAME>`` (A3): recorded as passed by variable, not
            verifiable; ``False``: every param must be a ``{param.NAME}`` argument.
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
    params_via_env: bool = False

    @property
    def variant_ids(self) -> list[str]:
        """``["batch-1", "batch-4", "batch-8"]``, ``["model-a", "model-b"]``."""
        return [variant_id(self.varied, v) for v in self.values]

    @property
    def varies_param(self) -> bool:
        """Whether the varied name is a workload parameter (not batch, context, precision)."""
        return self.varied not in VARIED

    def variant_params(self, variant: str | None) -> dict[str, Any]:
        """The workload parameters one variant is given (A3): the fixed ones, and the varied one's value.

        ``command`` is left out.
        ``variant`` ``None`` (or ``"all"``, a warm worker's load): the fixed ones only.
        """
        out = {k: v for k, v in self.params.items() if k != "command"}
        if self.varies_param and variant in self.variant_ids:
            out[self.varied] = self.values[self.variant_ids.index(variant)]
        return out

    def setting(self, variant: str) -> dict[str, Any]:
        """What one variant applies: batch, context, precision and its params (R1, A3).

        Returns:
            ``{"batch": 4, "context": None, "precision": "fp32", "params": {...}}``: the
            varied one from the variant's value, the others the fixed settings;
            ``params`` as :meth:`variant_params`.
        """
        value = self.values[self.variant_ids.index(variant)]
        batch = value if self.varied == "batch" else (self.batch or 1)
        context = value if self.varied == "context" else self.context_limit
        precision = value if self.varied == "precision" else self.precision
        return {"batch": batch, "context": context, "precision": precision,
                "params": self.variant_params(variant)}

    def to_toml(self) -> dict[str, Any]:
        """The experiment as its ``[experiments.<id>]`` table (every field but ``id``).

        ``values`` becomes a list (TOML has no tuples); ``params_via_env`` is written only
        when true; the inverse is :meth:`from_toml`.
        """
        data = asdict(self)
        data["values"] = list(self.values)
        data.pop("id")
        if not self.params_via_env:  # written only when acknowledged (A3): files before it read the same
            data.pop("params_via_env")
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


def value_text(value: Any) -> str:
    """A varied value as a variant id and a command argument write it: ``4``, ``a``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def variant_id(varied: str, value: Any) -> str:
    """``variant_id("batch", 4) == "batch-4"``, ``variant_id("model", "a") == "model-a"``."""
    return f"{varied}-{value_text(value)}"


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
    _check_varied(exp, f)
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
    if not isinstance(exp.params_via_env, bool):
        raise BadInput(f"expected true or false, got {shown(exp.params_via_env)}", field=f"{f}.params_via_env")
    return exp


def _check_varied(exp: Experiment, f: str) -> None:
    """The varied name and its values (R1, A3): what each variant gets is a value its program can take.

    ``batch`` and ``context``: whole numbers from 1 to :data:`VALUE_MAX`; ``precision``:
    :data:`PRECISIONS`; a parameter: a name (letters, digits, ``_``) the fixed params do
    not also hold, each value a plain word or number
    (:func:`gpusession.core.experiment.placeholders.plain_value`, H-34) whose variant id
    is a safe folder name.
    """
    varied = exp.varied
    if not isinstance(varied, str) or not _PARAM_NAME_RE.fullmatch(varied) or varied in NOT_VARIABLE:
        raise BadInput(f"expected batch, context, precision or a workload parameter's name (letters, "
                       f"digits, '_'), got {shown(varied)}", field=f"{f}.varied")
    if not exp.values:
        raise BadInput("no values to vary", field=f"{f}.values")
    if len(set(exp.variant_ids)) != len(exp.values):
        raise BadInput(f"duplicate values {list(exp.values)}", field=f"{f}.values")
    for v in exp.values:
        if varied in ("batch", "context"):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > VALUE_MAX:
                raise BadInput(f"expected whole numbers from 1 to {VALUE_MAX:,}, got {shown(v)}",
                               field=f"{f}.values")
        elif varied == "precision":
            if v not in PRECISIONS:
                raise BadInput(f"expected precisions among {', '.join(PRECISIONS)}, got {shown(v)}",
                               field=f"{f}.values")
        elif plain_value(v, path=False) is None or len(variant_id(varied, v)) > VARIANT_ID_MAX:
            raise BadInput(f"a value of {varied} names its variant ({varied}-VALUE) and is passed as one "
                           "argument: a number, true/false, or a word of A-Z a-z 0-9 . _ - not "
                           f"starting with '-' (at most {VARIANT_ID_MAX} characters), got {shown(v)}",
                           field=f"{f}.values")
    if exp.varies_param and varied in exp.params:
        raise BadInput(f"{varied} is varied: its values are --values, not a fixed --param {varied}",
                       field=f"{f}.params.{varied}")


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


def unreceived_params(exp: Experiment) -> list[str]:
    """A command workload's params its arguments never carry as ``{param.NAME}`` (A3).

    The varied one included; the params gpusession itself reads (``code_dir``,
    ``train_corpus``, ``tune_corpus``, ``n_inputs``) are not the program's and are left
    out. ``[]`` for a Python workload: its factory gets every param.
    """
    if exp.workload != "command":
        return []
    argv = [str(a) for a in exp.params.get("command") or []]
    names = [*exp.variant_params(None), *([exp.varied] if exp.varies_param else [])]
    return [n for n in names if n not in NOT_VARIABLE and not any(f"{{param.{n}}}" in a for a in argv)]


def check_params_reach(exp: Experiment) -> Experiment:
    """Refuse a param the program never receives (A3), naming it.

    A command's param without ``{param.NAME}`` (unless ``params_via_env``); a built-in
    workload's param its constructor does not take.

    Checked when an experiment is defined or derived (never when one is read back, so a
    stored session stays readable): ``--param model=b`` on ``prog {corpus} {output}``
    would be recorded and compared as if the program ran with it.

    Raises:
        BadInput: one line naming the first such param, its ``{param.NAME}`` and
            ``$GPUSESSION_PARAM_<NAME>`` (field ``params``).
    """
    if exp.workload in PARAM_TYPES:  # a built-in workload's constructor takes only its own
        taken = param_types(exp.workload)
        # typed params (a hand-edited list or table, which no define field shows, is kept as written)
        names = [k for k, v in exp.params.items() if isinstance(v, (str, int, float, bool))]
        unknown = [n for n in [*names, *([exp.varied] if exp.varies_param else [])] if n not in taken]
        if unknown:
            raise BadInput(f"the {exp.workload} workload takes no parameter {unknown[0]} (it takes "
                           f"{', '.join(sorted(taken))}); nothing was written", field="params")
    missing = unreceived_params(exp)
    if missing and not exp.params_via_env:
        name = missing[0]
        raise BadInput(f"the command never receives {name}: no {{param.{name}}} in its arguments; put "
                       f"{{param.{name}}} where the program takes it (e.g. --{name}={{param.{name}}}), or, "
                       f"if it reads ${param_env(name)}, say so with --param-via-env (recorded as passed "
                       "by variable, not verifiable); nothing was written", field="params")
    for name, value in exp.variant_params(None).items() if exp.workload == "command" else ():
        if name not in NOT_VARIABLE and plain_value(value, path=True) is None:
            raise BadInput(f"{name}={shown(value)} is passed to the command as one argument or variable: "
                           "a number, true/false, or a word or path of A-Z a-z 0-9 . _ / - not starting "
                           "with '-'; nothing was written", field="params")
    return exp


__all__ = [
    "Experiment",
    "check_params_reach",
    "unreceived_params",
    "value_text",
    "ScheduledRun",
    "check",
    "draw_warm_order",
    "schedule",
    "variant_id",
    "workers_of",
]
