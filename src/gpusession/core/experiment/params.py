"""The parameters each built-in workload needs and the type of each, checked when an experiment is defined.

Who calls it: :func:`gpusession.core.folder.experiments.define_experiment` (the ``experiment define``
command and the TUI Define form), so that an experiment the worker could not build is
refused before it is stored, not at run time with a traceback; the define form
(:mod:`gpusession.core.experiment.form`) reads a ``KEY=VALUE`` param as the type declared
here. No torch here: the parent process and the TUI read it; tests keep these tables in
step with the workloads' constructors (:mod:`.bbc_news`, :mod:`.synthetic_mlp`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpusession.core.files.errors import BadInput

#: Built-in workload → its required parameter → (placeholder, what it is, in words).
REQUIRED_PARAMS: dict[str, dict[str, tuple[str, str]]] = {
    "bbc-news": {
        "model_dir": ("DIR", "the trained model's folder, e.g. from `gpusession demo`"),
    },
    "synthetic-mlp": {},
}

#: Params every workload may take → their type: the corpus splits checked for overlap
#: (V7, relative to the session folder), the inputs of a run without a corpus, the folder
#: whose git revision is recorded (R10).
COMMON_PARAMS: dict[str, type] = {
    "train_corpus": str,
    "tune_corpus": str,
    "n_inputs": int,
    "code_dir": str,
}

#: The params gpusession itself reads (the overlap check's splits, the synthetic inputs'
#: count, the folder of the code revision): never passed to a command, never varied (A3).
HARNESS_PARAMS = frozenset(COMMON_PARAMS)

#: Built-in workload → each constructor argument → its type (the annotation): a value
#: typed in the define form is read as this type, so ``width=64`` is the number 64 and
#: ``model_dir=2024`` the folder ``2024``.
PARAM_TYPES: dict[str, dict[str, type]] = {
    "bbc-news": {"model_dir": str, "cpu_threads": int},
    "synthetic-mlp": {"width": int, "depth": int, "rows_per_input": int},
}


def param_types(workload: str) -> dict[str, type]:
    """The declared params of ``workload`` and their types: its own and :data:`COMMON_PARAMS`.

    Args:
        workload: ``bbc-news``, ``synthetic-mlp``, ``command`` or ``module:factory``
            (the last two declare only the common params).

    Returns:
        ``{"width": int, …}``; an undeclared param is read like a TOML scalar by the form.
    """
    return {**COMMON_PARAMS, **PARAM_TYPES.get(workload, {})}


def check_params(workload: str, params: Mapping[str, Any], field: str = "params") -> None:
    """Refuse a built-in workload defined without a parameter its constructor needs, or a ``--param seed``.

    A Python workload's seed is the experiment's ``--seed`` alone (A2): the worker applies
    it and the row states it; a ``--param seed`` beside it would be a second seed the
    row cannot state.

    Args:
        workload: the workload name (``bbc-news``…); names that are not built-in
            (``command``, ``module:factory``) are not checked here.
        params: the experiment's ``params`` table.
        field: the field to name in the error (``experiments.<id>.params``).

    Raises:
        BadInput: one line, e.g. ``workload bbc-news needs --param model_dir=DIR (the
            trained model's folder, e.g. from `gpusession demo`)``; ``--param seed=…`` of a
            Python workload.
    """
    if workload != "command" and "seed" in params:
        raise BadInput("--param seed is refused: the seed is --seed (the worker seeds "
                       "random, numpy and torch with it, passes it to a factory that names a seed "
                       "parameter and records it); nothing was written", field=f"{field}.seed")
    for key, (placeholder, words) in REQUIRED_PARAMS.get(workload, {}).items():
        value = params.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise BadInput(f"workload {workload} needs --param {key}={placeholder} ({words})",
                           field=f"{field}.{key}")
