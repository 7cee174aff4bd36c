"""The parameters each built-in workload needs, checked when an experiment is defined.

Who calls it: :func:`gpusession.core.folder.experiments.define_experiment` (the ``experiment define``
command and the TUI Define form), so that an experiment the worker could not build is
refused before it is stored, not at run time with a traceback.
No torch here: the parent process and the TUI read it; a test keeps this table in step
with the workloads' constructors (:mod:`.bbc_news`, :mod:`.synthetic_mlp`).
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


def check_params(workload: str, params: Mapping[str, Any], field: str = "params") -> None:
    """Refuse a built-in workload defined without a parameter its constructor needs.

    Args:
        workload: the workload name (``bbc-news``…); names that are not built-in
            (``command``, ``module:factory``) are not checked here.
        params: the experiment's ``params`` table.
        field: the field to name in the error (``experiments.<id>.params``).

    Raises:
        BadInput: one line, e.g. ``workload bbc-news needs --param model_dir=DIR (the
            trained model's folder, e.g. from `gpusession demo`)``.
    """
    for key, (placeholder, words) in REQUIRED_PARAMS.get(workload, {}).items():
        value = params.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise BadInput(f"workload {workload} needs --param {key}={placeholder} ({words})",
                           field=f"{field}.{key}")
