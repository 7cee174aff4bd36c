"""One change, replayed: a new experiment equal to an old one but for one element (D4).

Who calls it: ``gpusession experiment NAME derive`` (:mod:`gpusession.commands.run_cmds`),
the Run pane's derive form, ``experiment list`` and ``show``. The rental guide's advice
when a trial goes wrong is to change one element and replay the same case, so that an
improvement can be put down to an identified change: :func:`derive_experiment` takes
exactly one ``KEY=VALUE``, parses the value with the define form's parser
(:func:`gpusession.core.experiment.form.experiment_from_form`, same errors as
``define``) and records ``derived_from`` and ``changed_key`` on the new experiment.

A replay varies what the experiment varies: ``id``, ``varied`` and ``values`` are not
keys. :func:`differences` and :func:`derived_words` say what differs from the
experiment it was derived from; :func:`comparison_lines` compares the two in words
(warm median and verdict per variant, before and after the change, D5). Pure: the
session folder stores the result (:func:`gpusession.core.folder.experiments.store_derived`).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpusession.core.experiment.form import (
    DefineForm,
    ProtocolCheck,
    experiment_from_form,
    param_text,
)
from gpusession.core.experiment.plan import Experiment, value_text
from gpusession.core.files.digest import sha256_file
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import check_identifier, shown
from gpusession.core.files.units import format_seconds
from gpusession.core.records.kinds import protocol_kind
from gpusession.core.records.summary import SummaryRow, recommended_variant

#: The keys of ``derive --set``, as ``experiment define`` names its options, and the
#: define form's field each one fills. ``param.NAME`` is a workload parameter.
DERIVE_KEYS: dict[str, str] = {
    "workload": "workload",
    "command": "command",
    "corpus": "corpus",
    "precision": "precision",
    "context-limit": "context_limit",
    "batch": "batch",
    "device": "device",
    "seed": "seed",
    "scope": "scope",
    "warmup": "warmup_iterations",
    "runs": "runs_per_variant",
    "order": "order",
    "order-seed": "order_seed",
    "cold-runs": "cold_runs_per_variant",
    "gpus": "gpus",
    "nodes": "nodes",
    "rendezvous": "rendezvous",
    "timeout": "run_timeout_s",
    "classes": "classes",
    "metric": "metric",
    "threshold": "threshold",
    "tolerance": "tolerance",
    "reference-value": "reference_value",
    "max-degradation": "max_degradation",
    "train-ids": "train_ids",
    "tune-ids": "tune_ids",
    "param-via-env": "params_via_env",
}
#: What a replay never changes: it varies what the experiment varies.
NOT_DERIVED = ("id", "varied", "values")
_PROTOCOL_KEYS = ("classes", "metric", "threshold", "tolerance", "reference_value", "max_degradation")
#: ``derive --set`` keys stored as params (V7's split files, named as ``validate`` names them).
_PARAM_KEYS = {"train-ids": "train_corpus", "tune-ids": "tune_corpus"}
#: The define form's attribute names read as the option names (``runs_per_variant`` → ``runs``).
_ALIASES = {field.replace("_", "-"): key for key, field in DERIVE_KEYS.items()}
_FIELD = "--set"
#: What the refusal of a second ``--set`` says (the rental guide's advice, in words).
ONE_AT_A_TIME = ("one element at a time: the rental guide asks to change one element and "
                 "replay the same case, so that the change explains the difference")


def derive_key(text: str) -> str:
    """The canonical name of a ``--set`` key: ``context_limit`` → ``context-limit``.

    Args:
        text: the key as typed; ``_`` and ``-`` are the same, the define form's
            attribute names are read too (``runs_per_variant``, ``run_timeout_s``),
            ``param.NAME`` keeps ``NAME`` as typed.

    Raises:
        BadInput: ``id``, ``varied`` or ``values`` (a replay varies what the experiment
            varies), ``param.`` without a name, or a key ``define`` does not take.
    """
    t = text.strip()
    if t.startswith("param."):
        if not t[len("param."):].strip():
            raise BadInput("param. needs the parameter's name, e.g. param.width=64", field=_FIELD)
        check_identifier(t[len("param."):].strip(), field="param name",
                         what="the param's name")  # never echoed (H-46)
        return "param." + t[len("param."):].strip()
    k = t.lower().replace("_", "-")
    k = _ALIASES.get(k, k)
    if k in NOT_DERIVED:
        raise BadInput(f"{k} is not changed by a replay: it varies what the experiment varies "
                       "(define a new experiment to vary something else)", field=_FIELD)
    if k not in DERIVE_KEYS:
        raise BadInput(f"{shown(t)} is not a setting of `experiment define`; expected one of "
                       f"{', '.join(DERIVE_KEYS)} or param.NAME", field=_FIELD)
    return k


def one_setting(items: Sequence[str]) -> tuple[str, str]:
    """The one ``KEY=VALUE`` of ``derive --set``: ``("precision", "fp16")``.

    Raises:
        BadInput: none given, more than one (:data:`ONE_AT_A_TIME`), no ``=``, or a key
            :func:`derive_key` refuses.
    """
    if not items:
        raise BadInput("expected one --set KEY=VALUE (the element the replay changes)", field=_FIELD)
    if len(items) > 1:
        keys = ", ".join(shown(i.partition("=")[0]) for i in items)
        raise BadInput(f"{ONE_AT_A_TIME}; got {len(items)} ({keys}): derive once per element, "
                       "each from the one before", field=_FIELD)
    key, sep, value = items[0].partition("=")
    if not sep or not key.strip():
        raise BadInput(f"expected KEY=VALUE, got {shown(items[0])}", field=_FIELD)
    return derive_key(key), value


def derive_experiment(
    old: Experiment,
    new_id: str,
    item: str,
    *,
    folder: Path | None = None,
    check_protocol: ProtocolCheck | None = None,
    pinned_corpus_revision: str | None = None,
) -> Experiment:
    """The experiment ``old`` with the one element of ``item`` changed, its lineage recorded (D4).

    Args:
        old: the experiment replayed.
        new_id: the new experiment's id.
        item: ``KEY=VALUE`` (:func:`one_setting`); an empty value is the define form's
            empty field (no limit, the automatic device, no protocol for ``classes``), and
            for ``param.NAME`` removes the parameter.
        folder: the session folder (the corpus is checked there, as ``define`` does).
        check_protocol: checks a protocol table, as for ``define``.
        pinned_corpus_revision: the corpus revision ``old`` holds (its rows', else the
            one kept: :func:`gpusession.core.folder.corpus_pin.pinned_revision`); ``None``:
            its corpus file's revision now. A ``corpus`` is compared by revision, never
            by the path's text (H-68): the same path edited since is a change, another
            spelling of the same file (``dir/./corpus.jsonl``) is none.

    Returns:
        The new experiment (not stored), with ``derived_from = old.id`` and
        ``changed_key`` the canonical key.

    Raises:
        BadInput: a key refused by :func:`one_setting`, a value the define form refuses
            (same words as ``define``), a protocol figure for an experiment without a
            protocol, the varied parameter itself (a fixed value the schedule would never
            apply, A3), or a value that changes nothing.
    """
    key, value = one_setting([item])
    varied_field = {"batch": "batch", "context": "context_limit", "precision": "precision"}.get(old.varied)
    if (DERIVE_KEYS.get(key) == varied_field if varied_field else key == f"param.{old.varied}"):
        # a fixed value the schedule would never apply (A3)
        values = ",".join(value_text(v) for v in old.values)
        raise BadInput(f"{key} is varied in {old.id} ({old.varied} {values}): a fixed {key} would not be "
                       f"applied; change --values in a new define", field=_FIELD)
    form = _form_for(old, new_id, key, value)
    exp = experiment_from_form(form, folder=folder, base=old, check_protocol=check_protocol)
    same = _setup(exp) == _setup(old)
    if key == "corpus":  # by revision, never by the path's text (H-68)
        now = _corpus_revision(exp.corpus, folder)
        before = pinned_corpus_revision or _corpus_revision(old.corpus, folder)
        if now is not None and before is not None:
            same = now == before and _setup(replace(exp, corpus=old.corpus)) == _setup(old)
            if same:
                raise BadInput(f"{key}={shown(value)} changes nothing: it is the corpus {old.id} "
                               f"already holds (revision {now[:6]}…)", field=_FIELD)
    if same:
        raise BadInput(f"{key}={shown(value)} changes nothing: {old.id} already has "
                       f"{setting_words(setting_value(old, key))}", field=_FIELD)
    return replace(exp, derived_from=old.id, changed_key=key)


def _corpus_revision(corpus: str | None, folder: Path | None) -> str | None:
    """The SHA-256 of the corpus file an experiment names (relative to ``folder``), ``None`` unread."""
    if not corpus:
        return None
    path = Path(corpus)
    if not path.is_absolute():
        if folder is None:
            return None
        path = folder / path
    try:
        return sha256_file(path) if path.is_file() else None
    except OSError:
        return None


def _form_for(old: Experiment, new_id: str, key: str, value: str) -> DefineForm:
    """The define form holding the id and the one changed field; the rest comes from ``old``."""
    if key.startswith("param."):
        name = key[len("param."):]
        items = [f"{k}={t}" for k, v in old.params.items()
                 if k not in ("command", name) and (t := param_text(old.workload, k, v)) is not None]
        if value.strip():
            items.append(f"{name}={value}")
        return DefineForm(id=new_id, params=tuple(items))
    kind = protocol_kind(old.protocol)
    if DERIVE_KEYS.get(key, key) in _PROTOCOL_KEYS and not kind.classification:
        raise BadInput(f"{old.id} is judged by its {kind.name}, not by classes and a metric: two kinds never "
                       "mix in one experiment; define a new experiment for a classification", field=_FIELD)
    if DERIVE_KEYS[key] in _PROTOCOL_KEYS and not old.protocol:
        raise BadInput(f"{old.id} has no validation protocol to change: define an experiment "
                       f"with --classes and --threshold (both your decision), then change the {key}",
                       field=_FIELD)
    if key == "param-via-env":  # the acknowledgement that the command reads $GPUSESSION_PARAM_<NAME> (A3)
        if value.strip().lower() not in ("true", "false"):
            raise BadInput(f"param-via-env is true or false, got {shown(value)}", field=_FIELD)
        return DefineForm(id=new_id, params_via_env=value.strip().lower() == "true")
    fields: dict[str, Any] = {DERIVE_KEYS[key]: value}
    return DefineForm(id=new_id, **fields)


def _setup(exp: Experiment) -> dict[str, Any]:
    data = exp.to_toml()
    for k in ("derived_from", "changed_key"):
        data.pop(k, None)
    return data


def setting_value(exp: Experiment, key: str) -> Any:
    """The value of one ``--set`` key in ``exp`` (``None`` = unset).

    ``command`` is the argv joined like a shell; ``classes``, ``metric``, ``threshold``
    and ``tolerance`` come from the protocol; ``param.NAME`` from the params.
    """
    if key.startswith("param."):
        return exp.params.get(key[len("param."):])
    if key == "command":
        argv = exp.params.get("command")
        return shlex.join(str(a) for a in argv) if isinstance(argv, list) else None
    if key in _PARAM_KEYS:
        return exp.params.get(_PARAM_KEYS[key])
    if DERIVE_KEYS.get(key, key) in _PROTOCOL_KEYS:
        v = (exp.protocol or {}).get(DERIVE_KEYS.get(key, key))
        return ",".join(str(c) for c in v) if key == "classes" and isinstance(v, list) else v
    return getattr(exp, DERIVE_KEYS[key])


def setting_words(value: Any) -> str:
    """A setting's value for people: ``fp16``, ``64``, ``unset`` for ``None``."""
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return shown(value) if isinstance(value, str) and not value.isprintable() else str(value)


@dataclass(frozen=True)
class Difference:
    """One setting that differs between a derived experiment and its origin (D4).

    Attributes:
        key: the ``--set`` key (``precision``, ``param.width``).
        before: its value in the origin (``None`` = unset).
        after: its value in the derived experiment.
    """

    key: str
    before: Any
    after: Any

    def words(self) -> str:
        """``precision fp16 (was fp32)``."""
        return f"{self.key} {setting_words(self.after)} (was {setting_words(self.before)})"


def differences(origin: Experiment, derived: Experiment) -> list[Difference]:
    """Every ``--set`` key whose value differs, the recorded change first.

    A change the define form implies (a command workload is timed full-chain) is listed
    after the recorded one, so the words never hide a difference.
    """
    keys = list(DERIVE_KEYS)
    params = [f"param.{k}" for k in {**origin.params, **derived.params} if k != "command"]
    out = [Difference(k, setting_value(origin, k), setting_value(derived, k))
           for k in [*keys, *params] if setting_value(origin, k) != setting_value(derived, k)]
    out.sort(key=lambda d: d.key != derived.changed_key)
    return out


def derived_words(exp: Experiment, by_id: Mapping[str, Experiment]) -> str | None:
    """``derived from kw: precision fp16 (was fp32)``; ``None`` for an experiment not derived.

    Args:
        exp: the experiment.
        by_id: the session's experiments by id (the origin is looked up there).
    """
    if exp.derived_from is None:
        return None
    origin = by_id.get(exp.derived_from)
    if origin is None:
        return (f"derived from {exp.derived_from} (no longer defined): "
                f"{exp.changed_key or 'one element'} changed")
    diffs = differences(origin, exp)
    if not diffs:
        return f"derived from {origin.id}: the same settings (edited by hand since?)"
    return f"derived from {origin.id}: " + "; ".join(d.words() for d in diffs)


def derive_notes(origin: Experiment, derived: Experiment) -> list[str]:
    """What a derive says beside the stored experiment: a precision change is its own experiment.

    The measurement protocol keeps precision fixed inside an experiment and asks for the
    quality check again when it changes (R1): a derived experiment at another precision
    says so, and says when no protocol would check it.
    """
    notes: list[str] = []
    if origin.precision != derived.precision:
        notes.append(f"{derived.id} runs at {derived.precision} ({origin.id}: {origin.precision}): "
                     "another precision is a new experiment with its own quality check; its "
                     f"outputs are validated again and its times are never pooled with {origin.id}'s")
        if not derived.protocol:
            notes.append(f"{derived.id} has no validation protocol, so nothing checks its quality: "
                         "define it again with --classes and --threshold before trusting its times")
    return notes


def _warm(rows: Sequence[SummaryRow], exp_id: str) -> dict[str, SummaryRow]:
    return {str(r.variant_id): r for r in rows if r.experiment_id == exp_id and r.phase == "warm"}


def _side(row: SummaryRow | None, seconds: Callable[[float], str]) -> str:
    if row is None or row.median_seconds is None:
        return "not measured yet" if row is None else f"no warm run measured, {row.verdict_words()}"
    return f"{seconds(row.median_seconds)}, {row.verdict_words()}"


def comparison_lines(origin: Experiment, derived: Experiment, rows: Sequence[SummaryRow],
                     seconds: Callable[[float], str] = format_seconds) -> list[str]:
    """Before and after the change in words: warm median and verdict per variant (D4, D5).

    Args:
        origin: the experiment derived from.
        derived: the derived experiment.
        rows: the session's summary table
            (:func:`gpusession.core.records.summary.session_summary`).
        seconds: how a median (s) is written (default: the summary table's ``102 ms``).

    Returns:
        One line per variant of the derived experiment (``batch-8 warm median: 412 ms,
        accepted → 231 ms, accepted``), then the variant to keep before and after
        (the accepted one with the fastest warm median; a rejected one is never named).
    """
    before, after = _warm(rows, origin.id), _warm(rows, derived.id)
    out = [f"{v} warm median: {_side(before.get(v), seconds)} → {_side(after.get(v), seconds)}"
           for v in derived.variant_ids]

    def kept(exp_id: str) -> str:
        r = recommended_variant(rows, exp_id)
        return "no accepted variant" if r is None else f"{r.variant_id} ({seconds(float(r.median_seconds or 0.0))})"

    out.append(f"fastest accepted: {kept(origin.id)} before, {kept(derived.id)} after")
    return out


__all__ = [
    "DERIVE_KEYS",
    "Difference",
    "NOT_DERIVED",
    "ONE_AT_A_TIME",
    "comparison_lines",
    "derive_experiment",
    "derive_key",
    "derive_notes",
    "derived_words",
    "differences",
    "one_setting",
    "setting_value",
    "setting_words",
]
