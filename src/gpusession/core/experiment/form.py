"""The define form: the text a person typed → one :class:`Experiment`, by one set of rules.

Who calls it: ``gpusession experiment NAME define`` (:mod:`gpusession.commands.run_cmds`)
and the TUI's Define form (:mod:`gpusession.ui.panes.run`). Both hand their fields over
as text, so the same input gives the same stored experiment (R1, V5) and the same error,
naming the field, wherever it was typed. The runner, the worker and the validation of a
run find the corpus with :func:`resolve_corpus`, as the define form checked it.

The rules, one for each kind of field:

* **counts and seeds** (values, runs, warm-up, cold runs, GPUs, nodes, context limit,
  batch, seeds) are whole numbers in ASCII digits (``-`` allowed): ``1.5``, ``1e3``,
  ``1_000`` and ``٣`` are refused, never rounded or read in another script;
* **decimals** (threshold, tolerance, timeout) are plain decimal numbers (``0.9``,
  ``.5``, ``1e-3``), finite;
* **params** (``KEY=VALUE``) take the type the workload's param table declares
  (:data:`gpusession.core.experiment.params.PARAM_TYPES`: ``width`` of ``synthetic-mlp``
  is a whole number, ``model_dir`` text); an undeclared one is read like a TOML scalar: a
  whole number, a decimal, ``true``/``false``, or else text — ``"1.10"`` in double quotes
  is always the text ``1.10``.

A field left out (``None``) takes the value of ``base`` (the experiment the TUI form
was opened on) or, without one, the :class:`Experiment` default; an empty optional
field (corpus, device, context limit, batch, scope, classes) is the default: no corpus,
the device decided in the worker, no limit, the workload's scope, no protocol.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from gpusession.core.experiment.params import param_types
from gpusession.core.experiment.plan import (
    PRECISIONS,
    VARIED,
    Experiment,
    check,
    check_params_reach,
)
from gpusession.core.files.bounds import number_past_bound
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import check_identifier, shown
from gpusession.core.files.textio import read_bytes
from gpusession.core.records.kinds import protocol_kind

_WHOLE_RE = re.compile(r"-?[0-9]+")
_DECIMAL_RE = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEVICE_RE = re.compile(r"cpu|cuda|cuda:[0-9]+")
#: Longest whole number read (digits): far past any count, short of Python's int limit.
_WHOLE_DIGITS_MAX = 30

#: Checks a protocol table (``gpusession.core.validation.Protocol.from_toml``): the
#: experiment room may not import validation, so the callers hand the check in.
ProtocolCheck = Callable[[Mapping[str, Any]], object]


@dataclass(frozen=True)
class DefineForm:
    """The define form's fields as typed: text, ``None`` = not given (base or default).

    Names are :class:`Experiment`'s attributes, so an error's field names the form field
    in the CLI and the TUI alike (``runs_per_variant: expected a whole number, got
    'five'``); ``classes``, ``metric``, ``threshold``, ``tolerance``,
    ``reference_value`` and ``max_degradation`` make the validation protocol (V5; a
    threshold is required with classes or a metric: nobody's default is stored);
    ``train_ids`` / ``tune_ids`` are the training and tuning ID files checked for overlap
    (V7; stored as the ``train_corpus`` / ``tune_corpus`` params, ``""`` removes one);
    ``params`` are ``KEY=VALUE`` items; ``command`` is the command line of a ``command``
    workload, split like a shell; ``params_via_env`` acknowledges that the command reads
    the params it takes as no ``{param.NAME}`` from ``$GPUSESSION_PARAM_<NAME>`` (A3).
    """

    id: str | None = None
    workload: str | None = None
    command: str | None = None
    corpus: str | None = None
    varied: str | None = None
    values: str | None = None
    precision: str | None = None
    context_limit: str | None = None
    batch: str | None = None
    device: str | None = None
    seed: str | None = None
    scope: str | None = None
    warmup_iterations: str | None = None
    runs_per_variant: str | None = None
    order: str | None = None
    order_seed: str | None = None
    cold_runs_per_variant: str | None = None
    gpus: str | None = None
    nodes: str | None = None
    rendezvous: str | None = None
    run_timeout_s: str | None = None
    classes: str | None = None
    metric: str | None = None
    threshold: str | None = None
    tolerance: str | None = None
    reference_value: str | None = None
    max_degradation: str | None = None
    train_ids: str | None = None
    tune_ids: str | None = None
    params: tuple[str, ...] | None = None
    params_via_env: bool | None = None


def resolve_corpus(folder: Path, corpus: str) -> Path:
    """The corpus file an experiment names: relative to the session folder, or absolute.

    The one rule for the define form's check, the runner, the worker and the run's
    validation, so that the file checked at define time is the file measured (R1).
    ``~`` is not expanded (the shell does that before gpusession sees it).

    Args:
        folder: the session folder.
        corpus: the experiment's ``corpus`` (or a ``train_corpus`` / ``tune_corpus``
            param), e.g. ``"corpus/eval.jsonl"`` or ``"/data/eval.jsonl"``.

    Returns:
        ``folder / corpus``, or ``corpus`` itself when it is absolute.

    Raises:
        BadInput: an empty path (field ``corpus``).
    """
    if not corpus:
        raise BadInput("no corpus path given", field="corpus")
    path = Path(corpus)
    return path if path.is_absolute() else folder / path


def whole_number(text: str, field: str, bound: str = "whole") -> int:
    """A count or a seed typed as text: ASCII digits, an optional ``-``; surrounding spaces ignored.

    Args:
        text: the number as typed.
        field: the field named in a refusal.
        bound: the kind whose bound the reader applies to the stored number
            (:data:`gpusession.core.files.bounds.BOUNDS`, H-41): a seed within 64 bits.

    Raises:
        BadInput: anything else (``1.5``, ``1e3``, ``five``, ``٣``), or past the reader's
            bound, naming ``field``.
    """
    t = text.strip()
    if not _WHOLE_RE.fullmatch(t) or len(t.lstrip("-")) > _WHOLE_DIGITS_MAX:
        raise BadInput(f"expected a whole number, got {shown(t)}", field=field)
    if past := number_past_bound(int(t), bound):
        raise BadInput(past, field=field)
    return int(t)


def decimal_number(text: str, field: str, bound: str = "count") -> float:
    """A threshold, tolerance or number of seconds typed as text (``0.9``, ``.5``, ``1e-3``).

    Args:
        text: the number as typed.
        field: the field named in a refusal.
        bound: the kind whose bound the reader applies to the stored number
            (:data:`gpusession.core.files.bounds.BOUNDS`, H-41): ``duration`` for seconds
            (under a year), ``count`` for other numbers (under 10^15).

    Raises:
        BadInput: not a plain decimal number, not finite (``nan``, ``inf``, ``1e999``),
            or past the reader's bound, naming ``field``.
    """
    t = text.strip()
    value = float(t) if _DECIMAL_RE.fullmatch(t) else math.nan
    if not math.isfinite(value):
        raise BadInput(f"expected a number, got {shown(t)}", field=field)
    if past := number_past_bound(value, bound):
        raise BadInput(past, field=field)
    return value


def param_value(workload: str, key: str, text: str) -> Any:
    """A ``KEY=VALUE`` param's value: the declared type, else read like a TOML scalar.

    Args:
        workload: the experiment's workload (its param table,
            :data:`gpusession.core.experiment.params.PARAM_TYPES`).
        key: the param's name.
        text: the value as typed; surrounding spaces are ignored, and a value in double
            quotes is text (the quotes removed).

    Returns:
        ``int`` / ``float`` / ``bool`` / ``str`` as the table declares; an undeclared
        param: a whole number → ``int``, a decimal → ``float``, ``true``/``false`` (any
        case) → ``bool``, anything else → the text.

    Raises:
        BadInput: a value that is not of the declared type (field ``params``, the key in
            the message).
    """
    field = "params"
    t = text.strip()
    quoted = len(t) >= 2 and t[0] == t[-1] == '"'
    if quoted:
        t = t[1:-1]
    declared = param_types(workload).get(key)
    if declared is int:
        return _declared(whole_number, t, field, workload, key, "a whole number")
    if declared is float:
        return _declared(decimal_number, t, field, workload, key, "a number")
    if declared is bool:
        if t.lower() in ("true", "false"):
            return t.lower() == "true"
        raise BadInput(f"{workload}'s {key} is true or false, got {shown(t)}", field=field)
    if declared is str or quoted:
        return t
    if _WHOLE_RE.fullmatch(t) and len(t.lstrip("-")) <= _WHOLE_DIGITS_MAX:
        return int(t)
    if _DECIMAL_RE.fullmatch(t) and math.isfinite(float(t)):
        return float(t)
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    return t


def _declared(read: Callable[[str, str], Any], text: str, field: str, workload: str, key: str,
              what: str) -> Any:
    try:
        return read(text, field)
    except BadInput:
        raise BadInput(f"{workload}'s {key} is {what}, got {shown(text)}", field=field) from None


def param_text(workload: str, key: str, value: Any) -> str | None:
    """A stored param as the form shows it: :func:`param_value` reads it back to ``value``.

    Returns:
        ``"true"`` for ``True``, ``"64"``, ``"0.5"``; a text that would read back as
        something else in double quotes (``'"1.10"'``); ``None`` for a list or a table
        (a hand-edited file), which a one-line field cannot show.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        try:
            same = param_value(workload, key, value) == value
        except BadInput:  # not of the declared type: shown as it is, refused on save
            return value
        return value if same else f'"{value}"'
    return None


def parse_params(workload: str, items: tuple[str, ...]) -> dict[str, Any]:
    """``("width=64", "model_dir=models")`` → ``{"width": 64, "model_dir": "models"}``.

    Raises:
        BadInput: an item that is not ``KEY=VALUE`` (field ``params``), a key that is not
            a name (letters, digits, ``_``), a key given twice, ``command`` (it is the
            ``--command`` field), or a value not of the declared type.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BadInput(f"expected KEY=VALUE, got {shown(item)}", field="params")
        check_identifier(key, field="param name", what="the param's name")  # never echoed (H-46)
        if not _KEY_RE.fullmatch(key):
            raise BadInput(f"a param's name is letters, digits and '_' (a workload's argument), "
                           f"got {shown(key)}", field="params")
        if key == "command":
            raise BadInput("a command workload's command is its own field (--command)", field="params")
        if key in out:
            raise BadInput(f"{key} is given twice", field="params")
        out[key] = param_value(workload, key, value)
    return out


def experiment_from_form(
    form: DefineForm,
    *,
    folder: Path | None = None,
    base: Experiment | None = None,
    check_protocol: ProtocolCheck | None = None,
    cwd: Path | None = None,
    said: list[str] | None = None,
) -> Experiment:
    """Build and check the experiment a define form describes (R1, R2, R4, R5, V5).

    Args:
        form: the fields as typed (``None`` = not given).
        folder: the session folder; when given, the corpus must be a regular file there
            (:func:`resolve_corpus`), so an experiment that could not run is not stored.
        base: the experiment the form was opened on: a field not given keeps its value
            (the TUI form shows a part of the settings); ``None``: the defaults.
        check_protocol: checks the protocol table built from ``classes``, ``metric``,
            ``threshold`` and ``tolerance`` (``Protocol.from_toml``).
        cwd: the directory the person typed the paths in (the CLI's current
            directory); with ``folder``, a relative path found only there is stored
            absolute (:func:`settle_path`), ``None``: no such fallback.
        said: receives one sentence per path so stored (the CLI prints them).

    Returns:
        The experiment, checked by :func:`gpusession.core.experiment.plan.check`; not
        stored (``define_experiment`` stores it).

    Raises:
        BadInput: naming the field: a number not of its kind (see the module), values not
            whole numbers separated by commas, a device other than ``cpu``/``cuda``/
            ``cuda:N``, a bad param, a command that does not split like a shell or is
            given for another workload, a processing scope for a command workload, a
            corpus that is not a file, a bad protocol, or a setting :func:`check` refuses.
    """
    start: dict[str, Any] = (
        {f.name: getattr(base, f.name) for f in fields(Experiment)} if base is not None else {}
    )
    data = dict(start)
    # a form defines an experiment on its own: a replay's lineage is derive's (D4)
    data.pop("derived_from", None)
    data.pop("changed_key", None)
    data.setdefault("id", "")
    for name in ("id", "workload", "varied", "precision", "order"):
        text = getattr(form, name)
        if text is not None:
            data[name] = text.strip()
    if not data.get("workload"):
        raise BadInput("expected a workload: bbc-news, synthetic-mlp, command or module:factory",
                       field="workload")
    workload = str(data["workload"])
    _numbers_and_words(form, data)
    data["params"] = _all_params(form, workload, start.get("params"))
    _overlap_files(form, data["params"])
    if folder is not None:  # one rule for every relative path: the session folder
        _settle_paths(data, folder, cwd, said if said is not None else [])
    data["scope"] = _scope(form.scope, workload, start.get("scope"))
    data["protocol"] = _protocol(form, start.get("protocol"), check_protocol)
    if form.params_via_env is not None:
        data["params_via_env"] = bool(form.params_via_env)
    if folder is not None and data.get("corpus"):
        _check_corpus(folder, str(data["corpus"]))
    exp = Experiment(**data)
    return check_params_reach(check(exp))  # every param reaches the program (A3)


def _numbers_and_words(form: DefineForm, data: dict[str, Any]) -> None:
    """Put the form's numbers, corpus, rendezvous and device into ``data``, each checked (R1).

    A field not given (``None``) keeps ``data``'s value; an empty ``context_limit``,
    ``batch``, ``corpus`` or ``rendezvous`` clears it.
    """
    if form.values is not None:
        data["values"] = _values(form.values, str(data.get("varied") or "batch"), str(data["workload"]))
    for name in ("seed", "warmup_iterations", "runs_per_variant", "order_seed", "cold_runs_per_variant",
                 "gpus", "nodes"):
        text = getattr(form, name)
        if text is not None:
            data[name] = whole_number(text, name)
    for name in ("context_limit", "batch"):
        text = getattr(form, name)
        if text is not None:
            data[name] = whole_number(text, name) if text.strip() else None
    if form.run_timeout_s is not None:
        data["run_timeout_s"] = decimal_number(form.run_timeout_s, "run_timeout_s", "duration")
    for name in ("corpus", "rendezvous"):
        text = getattr(form, name)
        if text is not None:
            data[name] = text.strip() or None
    if form.device is not None:
        data["device"] = _device(form.device)


def _overlap_files(form: DefineForm, params: dict[str, Any]) -> None:
    """Set (or clear, when empty) the train and tune id files of the overlap check in ``params`` (V7).

    Named as ``validate`` names them: ``train_corpus`` and ``tune_corpus``.
    """
    for name, key in (("train_ids", "train_corpus"), ("tune_ids", "tune_corpus")):
        text = getattr(form, name)
        if text is not None:
            params.pop(key, None)
            if text.strip():
                params[key] = text.strip()


def _values(text: str, varied: str, workload: str) -> tuple[Any, ...]:
    """The varied values as typed, comma-separated, read by what is varied (R1, A3).

    ``batch``/``context``: whole numbers (``1,4,8``); ``precision``: precision words
    (``fp32,bf16``); a parameter: each read as :func:`param_value` reads a ``--param``
    (``a,b``; ``10,20``); the plan's check then holds each to a plain value.
    """
    parts = [v.strip() for v in text.split(",")]
    if varied == "precision":
        if not all(v in PRECISIONS for v in parts):
            raise BadInput(f"expected precisions separated by commas, among {', '.join(PRECISIONS)}, "
                           f"got {shown(text)}", field="values")
        return tuple(parts)
    if varied not in VARIED:
        if not all(parts):
            raise BadInput(f"expected values separated by commas, e.g. a,b, got {shown(text)}", field="values")
        return tuple(param_value(workload, varied, v) for v in parts)
    if not all(_WHOLE_RE.fullmatch(v) and len(v.lstrip("-")) <= _WHOLE_DIGITS_MAX for v in parts):
        raise BadInput(f"expected whole numbers separated by commas, e.g. 1,4,8, got {shown(text)}",
                       field="values")
    return tuple(int(v) for v in parts)


def _device(text: str) -> str | None:
    t = text.strip()
    if not t:
        return None
    if not _DEVICE_RE.fullmatch(t):
        raise BadInput(f"expected cpu, cuda or cuda:N, got {shown(t)}", field="device")
    return t


def _all_params(form: DefineForm, workload: str, before: Any) -> dict[str, Any]:
    """The params table: the form's items (or the base's), and the command's argv.

    A base param a one-line field cannot show (a list or a table written by hand) is kept.
    """
    base = {k: v for k, v in dict(before or {}).items() if k != "command"}
    if form.params is None:
        params = base
    else:
        kept = {k: v for k, v in base.items() if param_text(workload, k, v) is None}
        params = {**kept, **parse_params(workload, form.params)}
    if form.command is None:
        argv = dict(before or {}).get("command") if workload == "command" else None
    else:
        argv = _argv(form.command)
        if argv and workload != "command":
            raise BadInput(f"a command line is for the command workload, not {shown(workload)}: "
                           "clear it, or choose the command workload", field="command")
    if argv:
        params["command"] = argv
    return params


def _argv(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:  # "No closing quotation"
        raise BadInput(f"{exc} in {shown(text)}; quote like a shell", field="command") from None


def _scope(text: str | None, workload: str, before: Any) -> str:
    """The stopwatch scope (R2): ``None`` keeps the base's, ``""`` is the workload's default.

    A command's process is timed as a whole, from start to exit: its scope is full-chain.
    """
    scope = text.strip() if text is not None else None
    if workload == "command":
        if scope == "processing":
            raise BadInput("a command workload is timed as a whole process, from start to exit: its "
                           "scope is full-chain (leave the scope out)", field="scope")
        return "full-chain"
    if scope is None:
        return str(before) if before else "processing"
    return scope or "processing"


def _protocol(form: DefineForm, before: Any, check_protocol: ProtocolCheck | None) -> dict[str, Any]:
    """The validation protocol (V5): classes, metric, threshold, tolerance, reference; ``{}`` = none.

    The threshold is the person's decision (seed §1: "there is no universal value"): a
    protocol without one, from this form or the base, is refused rather than given a
    default. A tolerance left out is stored as not chosen (no key), read as 0 by the
    rule and said so by :func:`acceptance_words` (V5).

    Raises:
        BadInput: classes or a metric without a threshold (field ``protocol.threshold``),
            a number not of its kind, or what ``check_protocol`` refuses.
    """
    base = dict(before or {})
    if not protocol_kind(base).classification and not (form.classes or "").strip():
        return base  # an output judged by another kind (a rule) keeps it (S9): the form shows no field of it
    metric = form.metric.strip() if form.metric is not None and form.metric.strip() else None
    if form.classes is None:
        protocol = base
    elif not form.classes.strip():
        return {}
    else:
        protocol = {**base, "classes": [c.strip() for c in form.classes.split(",") if c.strip()]}
        protocol.setdefault("metric", "macro_f1")
        protocol.setdefault("output_format", "jsonl")
    numbers = {name: decimal_number(text, f"protocol.{name}")
               for name in ("threshold", "tolerance", "reference_value", "max_degradation")
               if (text := getattr(form, name)) is not None and text.strip()}
    chosen_now = bool(form.classes is not None and form.classes.strip()) or metric is not None
    if chosen_now and "threshold" not in protocol and "threshold" not in numbers:
        chose = "--classes" if form.classes else "--metric"
        raise BadInput(f"{chose} needs --threshold: the acceptance threshold is your decision "
                       "(there is no universal value), e.g. --threshold 0.9",
                       field="protocol.threshold")
    if protocol:
        if metric is not None:
            protocol["metric"] = metric
        protocol.update(numbers)
        for name in ("reference_value", "max_degradation"):
            text = getattr(form, name)
            if text is not None and not text.strip():
                protocol.pop(name, None)  # an empty field clears an optional setting
        if check_protocol is not None:
            check_protocol(protocol)
    return protocol


#: How the metric is named in words.
_METRIC_WORDS = {"macro_f1": "macro-F1", "accuracy": "accuracy"}


def acceptance_words(protocol: Mapping[str, Any]) -> str:
    """The floor a protocol accepts at, in words (V5, V6): what was chosen, said back.

    ``accepted at macro-F1 ≥ 0.90 − 0.00``, then the reference and maximum degradation
    when set (``; at most 0.02 below the reference 0.95``); ``no validation protocol``
    for ``{}``. An accept rule (S9) is said by
    :func:`gpusession.commands.deliverables_cmd.protocol_words`, never as a floor.
    """
    if not protocol:
        return "no validation protocol"
    metric = str(protocol.get("metric", "macro_f1"))
    tolerance = protocol.get("tolerance")
    words = (f"accepted at {_METRIC_WORDS.get(metric, metric)} ≥ {float(protocol.get('threshold', 0)):.2f} "
             + ("(tolerance not chosen)" if tolerance is None else f"− {float(tolerance):.2f}"))
    ref, drop = protocol.get("reference_value"), protocol.get("max_degradation")
    if ref is not None and drop is not None:
        words += f"; at most {float(drop):.2f} below the reference {float(ref):.2f}"
    elif ref is not None:
        words += f"; reference {float(ref):.2f} (no maximum degradation set)"
    return words


def overlap_words(params: Mapping[str, Any]) -> str:
    """What V7 checks the experiment's outputs against, in words, from its params.

    ``overlap checked against training corpus/train.jsonl, tuning corpus/tune.jsonl``, or
    ``overlap not checked: no training set given`` (the validation report says the same).
    """
    given = [f"{what} {params[key]}" for what, key in (("training", "train_corpus"), ("tuning", "tune_corpus"))
             if params.get(key)]
    if not given:
        return "overlap not checked: no training set given (--train-ids)"
    return "overlap checked against " + ", ".join(given)


#: Params whose value is a path (relative to the session folder, as the corpus is).
PATH_PARAM_SUFFIXES = ("_dir", "_corpus", "_file", "_path")


def settle_path(text: str, folder: Path, cwd: Path | None) -> tuple[str, bool]:
    """One relative path of an experiment, by the one rule: relative to the session folder.

    So that a run from any directory, and a pulled copy, find the same file. A path
    that exists only relative to ``cwd`` (where the person typed it) is made absolute
    there, and the caller says so.

    Args:
        text: the path as typed (``corpus/eval.jsonl``, ``./predict.sh``).
        folder: the session folder.
        cwd: the directory it was typed in; ``None``: no fallback.

    Returns:
        ``(path to store, whether it was made absolute)``; ``text`` itself when it is
        absolute, exists under ``folder``, or exists in neither place.
    """
    if not text or os.path.isabs(text) or os.path.lexists(folder / text):
        return text, False
    if cwd is not None and os.path.lexists(cwd / text):
        return os.path.abspath(cwd / text), True
    return text, False


def _settle_paths(data: dict[str, Any], folder: Path, cwd: Path | None, said: list[str]) -> None:
    """The corpus, path params and the command's program and file arguments (one rule)."""
    def settle(text: str, field: str) -> str:
        stored, moved = settle_path(text, folder, cwd)
        if moved:
            said.append(f"{field}: {text} is not in the session folder ({folder}) but in the current "
                        f"directory: stored as {stored} (a relative path is relative to the session folder)")
        return stored

    if data.get("corpus"):
        data["corpus"] = settle(str(data["corpus"]), "corpus")
    params = dict(data.get("params") or {})
    for key, value in params.items():
        if isinstance(value, str) and key.endswith(PATH_PARAM_SUFFIXES):
            params[key] = settle(value, f"param {key}")
    argv = params.get("command")
    if isinstance(argv, list) and argv:
        params["command"] = [_settle_arg(str(a), i, folder, settle) for i, a in enumerate(argv)]
    data["params"] = params


def _settle_arg(arg: str, index: int, folder: Path, settle: Callable[[str, str], str]) -> str:
    """One argv entry: a placeholder or a flag is left; a path found is settled.

    The program (``index`` 0) with a ``/`` must exist (in the session folder, or where
    typed): a run would fail on every variant otherwise. A plain word (``python3``,
    ``predict``) is looked up on ``PATH`` at run time, never here.
    """
    if "{" in arg or (arg.startswith("-") and "=" not in arg):
        return arg
    flag, eq, value = arg.partition("=") if arg.startswith("-") else ("", "", arg)
    stored = settle(value, "command program" if index == 0 else "command argument")
    if index == 0 and "/" in value and not os.path.lexists(
            stored if os.path.isabs(stored) else folder / stored):
        raise BadInput(f"the command's program {shown(value)} is not in the session folder "
                       f"({folder}) nor in the current directory (a relative path is relative to "
                       "the session folder)", field="command")
    return f"{flag}{eq}{stored}"


def _check_corpus(folder: Path, corpus: str) -> None:
    """The corpus is a regular file (a folder, a FIFO, a device are said as such)."""
    path = resolve_corpus(folder, corpus)
    if path.is_file():
        return
    if path.exists():

        read_bytes(path, what="corpus")  # raises, saying what it is
    raise BadInput("corpus file not found (a relative path is relative to the session folder)",
                   path=path, field="corpus")


__all__ = [
    "DefineForm",
    "acceptance_words",
    "overlap_words",
    "decimal_number",
    "experiment_from_form",
    "param_text",
    "param_value",
    "parse_params",
    "resolve_corpus",
    "whole_number",
]
