"""The Run pane's forms, as modal screens: pick an experiment, define one, derive one.

Who calls it: :class:`gpusession.ui.panes.run.RunPane` (keys ``e``, ``d``, ``v``), which
pushes one of these screens; a Save stores what the form says (:func:`save_defined`,
:func:`save_derived`) through the one define form parser
(:func:`gpusession.core.experiment.form.experiment_from_form`, as ``experiment define``
does) or ``experiment derive``'s parser (D4). Why a module of its own: a form is a screen
over the pane, not a part of it (Textual's ``ModalScreen``); the pane keeps only what a
saved form changes.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from textual.containers import Vertical

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


def save_defined(session: Any, result: dict[str, str], cur: Any) -> str:
    """Store the experiment the Define form describes (``cur``: the one it was prefilled
    with) through the one define form parser, as ``experiment define`` does (R1); its id.

    Raises:
        BadInput: a field that does not parse, naming the field (the form stays open and says it).
    """
    from gpusession.core.experiment import form
    from gpusession.core.folder import experiments
    from gpusession.core.validation import Protocol

    exp = form.experiment_from_form(define_form(result), folder=session.folder, base=cur,
                                    check_protocol=Protocol.from_toml)
    return str(experiments.define_experiment(session, exp).id)


def save_derived(session: Any, result: dict[str, str], cur: Any) -> tuple[str, list[str]]:
    """Store the replay of ``cur`` the derive form describes, through ``experiment derive``'s
    parser (D4): its id and the notes to say (a precision change: its own quality check).

    Raises:
        BadInput: a bad id or change, naming the field (the form stays open and says it).
    """
    from gpusession.core.experiment.derive import derive_experiment, derive_notes
    from gpusession.core.folder.corpus_pin import pinned_revision
    from gpusession.core.folder.experiments import store_derived
    from gpusession.core.validation import Protocol

    exp = derive_experiment(cur, result["id"].strip(), result["set"], folder=session.folder,
                            check_protocol=Protocol.from_toml,
                            pinned_corpus_revision=pinned_revision(session, cur.id))
    exp = store_derived(session, exp)
    return str(exp.id), list(derive_notes(cur, exp))


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


class RunFormKeys(Vertical):
    """The Run pane's form keys (``e`` pick, ``d`` define, ``v`` derive), a base of
    :class:`gpusession.ui.panes.run.RunPane`: each pushes its modal and a saved form makes
    its experiment the current one. The pane holds the state named here and re-reads the
    session (``reload``) and its status line (``_status``)."""

    ctx: Any
    running: bool
    experiments: list[Any]
    experiment_id: str | None
    last_outcome: str

    def reload(self) -> None:
        raise NotImplementedError

    def _status(self, text: str | None = None) -> None:
        raise NotImplementedError

    def current_experiment(self) -> Any | None:
        return next((e for e in self.experiments if e.id == self.experiment_id), None)

    def action_pick(self) -> None:
        if self.running or not self.experiments:
            return

        def chosen(result: dict[str, str] | None) -> None:
            if result:
                if result["experiment"] != self.experiment_id:
                    self.last_outcome = ""  # the words of the last run here were about another experiment
                self.experiment_id = result["experiment"]
                self.reload()  # its summary, read in the pane's worker
                self._status()

        self.app.push_screen(PickModal(tuple(e.id for e in self.experiments), self.experiment_id), chosen)

    def action_define(self) -> None:
        """The Define form, prefilled with the current experiment; a refused save keeps the
        form open, naming the field (R1, V5; :func:`save_defined`)."""
        if self.running:
            self.notify("a run is in progress", title="cannot define now")
            return
        cur = self.current_experiment()
        self.app.push_screen(DefineModal(cur, on_save=lambda result: self._saved(
            save_defined(self.ctx.session, result, cur))))

    def action_derive(self) -> None:
        """The derive form: a new id and the one change (``KEY=VALUE``), as ``experiment
        derive`` takes them (D4; :func:`save_derived`)."""
        if self.running:
            self.notify("a run is in progress", title="cannot derive now")
            return
        cur = self.current_experiment()
        if cur is None:
            self.notify("define an experiment first (d)", title="derive")
            return
        ids = {e.id for e in self.experiments}
        self.app.push_screen(DeriveModal(cur, ids, on_save=lambda result: self._saved(
            *save_derived(self.ctx.session, result, cur))))

    def _saved(self, experiment_id: str, notes: list[str] | None = None) -> None:
        """A form stored ``experiment_id``: it is current; ``notes`` are said (a derive's)."""
        self.experiment_id = experiment_id
        self.reload()
        for note in notes or ():  # a precision change: its own quality check
            self.notify(note, title="derived", timeout=12)


__all__ = ["DEFAULT_SCOPE", "WORKLOADS", "DefineModal", "DeriveModal", "PickModal", "RunFormKeys",
           "define_fields", "define_form", "save_defined", "save_derived"]
