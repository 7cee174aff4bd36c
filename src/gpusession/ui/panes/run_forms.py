"""The Run pane's forms, as modal screens: pick an experiment, define one, derive one.

Who calls it: :class:`gpusession.ui.panes.run.RunPane` (keys ``e``, ``d``, ``v``), which
pushes one of these screens and stores what a Save returns through the one define form
parser (:func:`gpusession.core.experiment.form.experiment_from_form`, as ``experiment
define`` does) or ``experiment derive``'s parser (D4). Why a module of its own: a form is
a screen over the pane, not a part of it (Textual's ``ModalScreen``); the pane keeps
only what a saved form changes.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from gpusession.core.files.errors import BadInput
from gpusession.ui.modals import Field, FormModal, SaveCheck

if TYPE_CHECKING:
    from gpusession.core.experiment.form import DefineForm

#: every workload the Define form accepts (bench.plan; ``command`` needs the Command field)
WORKLOADS = ("bbc-news", "synthetic-mlp", "command", "module:factory")


#: the Define form's scope choice that leaves the scope to the workload (R2)
DEFAULT_SCOPE = "default"


def define_fields(cur: Any) -> list[Field]:
    """The Define form's fields, prefilled with ``cur`` (the current experiment) or the
    defaults; their names are the define form's (:class:`gpusession.core.experiment.form.DefineForm`),
    so an error's field is the one focused."""
    from gpusession.core.experiment.form import param_text
    from gpusession.core.experiment.plan import PRECISIONS, Experiment, value_text
    from gpusession.core.validation import DEFAULT_METRIC, METRICS

    exp = cur if cur is not None else Experiment(id="exp-1", workload="bbc-news", values=(1, 4, 8))
    protocol = dict(exp.protocol or {})
    # the command and the overlap check's id files have fields of their own
    own = ("command", "train_corpus", "tune_corpus")
    shown_params = [(k, param_text(exp.workload, k, v)) for k, v in (exp.params or {}).items() if k not in own]
    # the scope the workload gets by itself is shown as the default (a command: full-chain)
    default_scope = "full-chain" if exp.workload == "command" else "processing"

    def opt(value: Any) -> str:
        return "" if value is None else str(value)

    return [
        Field("id", "Experiment id", exp.id),
        Field("workload", f"Workload ({', '.join(WORKLOADS)})", exp.workload),
        Field("command", "Command (command workload only: program and arguments, split like a "
              "shell; {batch} {output} {corpus} {context} {precision} {param.NAME} as whole arguments)",
              shlex.join(str(a) for a in (exp.params or {}).get("command") or ()),
              placeholder="e.g. python score.py --batch {batch} --out {output}"),
        Field("corpus", "Corpus (JSONL/CSV, relative to the session folder)", opt(exp.corpus),
              placeholder="e.g. corpus/eval.jsonl"),
        Field("varied", "Varied parameter (batch, context, precision or a param's name)", exp.varied),
        Field("values", "Values, comma-separated (1,4,8; fp32,bf16; a,b)",
              ",".join(value_text(v) for v in exp.values)),
        Field("runs_per_variant", "Measured runs per variant", str(exp.runs_per_variant)),
        Field("warmup_iterations", "Warm-up iterations", str(exp.warmup_iterations)),
        Field("order", "Order", exp.order, choices=("interleaved", "shuffled")),
        Field("scope", "Stopwatch scope", DEFAULT_SCOPE if exp.scope == default_scope else exp.scope,
              choices=(DEFAULT_SCOPE, "processing", "full-chain"),
              labels=("default (processing; full-chain for a command)", "processing", "full-chain")),
        Field("gpus", "GPUs (processes on this node; more than 1 runs through torchrun)", str(exp.gpus)),
        Field("precision", "Precision (another precision is another experiment)", exp.precision,
              choices=PRECISIONS),
        Field("device", "Device (cpu, cuda or cuda:N; empty: cuda when available)", opt(exp.device)),
        Field("context_limit", "Context limit (tokens per input; empty: none)", opt(exp.context_limit)),
        Field("seed", "Seed of the workload", str(exp.seed)),
        Field("params", "Params (KEY=VALUE, separated by spaces; quote a value with spaces)",
              shlex.join(f"{k}={t}" for k, t in shown_params if t is not None),
              placeholder="e.g. model_dir=models"),
        Field("params_via_env", "A command reads the params it takes as no {param.NAME} from "
              "$GPUSESSION_PARAM_<NAME> (else such a param is refused)", "yes" if exp.params_via_env else "no",
              choices=("no", "yes")),
        Field("classes", "Declared classes, comma-separated (empty: no validation protocol)",
              ",".join(str(c) for c in protocol.get("classes") or ())),
        Field("metric", "Quality metric", str(protocol.get("metric", DEFAULT_METRIC)), choices=tuple(METRICS)),
        Field("threshold", "Acceptance threshold 0-1 (required with classes: your decision)",
              opt(protocol.get("threshold"))),
        Field("tolerance", "Accepted shortfall below the threshold", opt(protocol.get("tolerance"))),
        Field("reference_value", "Reference quality (empty: none; with the maximum degradation)",
              opt(protocol.get("reference_value"))),
        Field("max_degradation", "Maximum degradation below the reference (fixed before the run)",
              opt(protocol.get("max_degradation"))),
        Field("train_ids", "Training set's id file, checked for overlap (empty: not checked)",
              opt((exp.params or {}).get("train_corpus")), placeholder="e.g. corpus/train.jsonl"),
        Field("tune_ids", "Tuning set's id file, checked for overlap (empty: not checked)",
              opt((exp.params or {}).get("tune_corpus"))),
    ]


def define_form(result: dict[str, str]) -> DefineForm:
    """The Define form's values as the define form's text fields.

    The default scope choice is an empty scope (the workload's own); the params field is
    split like a shell into ``KEY=VALUE`` items.

    Raises:
        BadInput: quotes that do not close in the params field (field ``params``).
    """
    from gpusession.core.experiment.form import DefineForm

    try:
        params = tuple(shlex.split(result["params"]))
    except ValueError as exc:  # "No closing quotation"
        raise BadInput(f"{exc}; quote like a shell", field="params") from None
    names = {"id", "workload", "command", "corpus", "varied", "values", "runs_per_variant",
             "warmup_iterations", "order", "gpus", "precision", "device", "context_limit", "seed",
             "classes", "metric", "threshold", "tolerance", "reference_value", "max_degradation",
             "train_ids", "tune_ids"}
    scope = result["scope"]
    return DefineForm(**{k: v for k, v in result.items() if k in names},
                      scope="" if scope == DEFAULT_SCOPE else scope, params=params,
                      params_via_env=result.get("params_via_env", "no") == "yes")


class PickModal(FormModal):
    """Pick one of the defined experiments (``ids``, in definition order); dismisses with
    ``{"experiment": id}`` or ``None``."""

    def __init__(self, ids: tuple[str, ...], current: str | None) -> None:
        super().__init__("Pick an experiment", [Field("experiment", "Experiment", current or "", choices=ids)])


class DefineModal(FormModal):
    """The Define form: every setting as text, prefilled with ``cur`` (the current
    experiment, ``None``: the defaults); ``on_save`` stores it or raises BadInput, and the
    form stays open naming the field (R1, V5)."""

    def __init__(self, cur: Any, on_save: SaveCheck) -> None:
        super().__init__("Define an experiment (one varied parameter)", define_fields(cur), on_save=on_save)


class DeriveModal(FormModal):
    """The derive form of ``cur``: a new id (the first ``ID-N`` not in ``ids``) and the one
    change as ``KEY=VALUE``, as ``experiment derive`` takes them (D4); ``on_save`` stores
    the replay or raises BadInput."""

    def __init__(self, cur: Any, ids: set[str], on_save: SaveCheck) -> None:
        from gpusession.core.experiment.derive import DERIVE_KEYS

        new_id = next(f"{cur.id}-{n}" for n in range(2, len(ids) + 3) if f"{cur.id}-{n}" not in ids)
        fields = [Field("id", "New experiment id", new_id),
                  Field("set", "The one change, KEY=VALUE", "",
                        placeholder="e.g. precision=fp16, runs=10, param.width=64")]
        help_text = (f"Replay {cur.id} with one element changed, so that the change explains the "
                     f"difference. KEY: {', '.join(DERIVE_KEYS)} or param.NAME; "
                     "id, varied and values stay.")
        super().__init__(f"Derive from {cur.id} (one change)", fields, help_text=help_text, on_save=on_save)


__all__ = ["DEFAULT_SCOPE", "WORKLOADS", "DefineModal", "DeriveModal", "PickModal", "define_fields",
           "define_form"]
