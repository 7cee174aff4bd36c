"""The record that ends every row's notes: ``scope=…; code=…; tolerance=…`` (seed §2, §4; R2, C4).

Why it exists: what no column holds -- the stopwatch scope, the revision of the code
measured, what the tolerance means and its reference, a Python workload's ``--param``
items, the cells a command reported itself -- is one compact, parseable record at the
end of each row's notes, the same for every writer of rows: the runner
(:mod:`gpusession.bench.row_record`), crash recovery's incident rows
(:mod:`gpusession.core.folder.recovery`) and ``validate --session``. The keys are
:data:`gpusession.core.records.record_notes.RECORD_KEYS`; outside tools read them,
gpusession decides nothing on them. Pure: no file, no process.

The form: one item per fact, ``key=value``, items separated by ``"; "`` as every note is,
values never holding a ``;``::

    scope=processing; code=abc1234; tolerance=0.01 below threshold 0.9 (macro_f1); params=width=64

``scope`` is ``processing`` or ``full-chain`` (R2), :data:`NOT_TIMED` for a row nothing
timed (``validate --session``) and :data:`UNKNOWN` where the experiment is no longer
defined; ``code`` the ``git describe`` of the code measured, else :data:`UNKNOWN`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from gpusession.core.experiment.plan import Experiment
from gpusession.core.files.secrets import mask_text
from gpusession.core.records.record_notes import RECORD_KEYS

#: ``code=`` (and ``scope=``) when it is not known.
UNKNOWN = "unknown"
#: ``code=`` when no revision of the code measured is known.
UNKNOWN_CODE = UNKNOWN
#: ``scope=`` of a row whose output was validated but never timed (``validate --session``).
NOT_TIMED = "not timed"


def record_value(text: str) -> str:
    """A record value: one line, no ``;`` (the item separator)."""
    return " ".join(str(text).replace(";", ",").split())


def tolerance_words(protocol: Mapping[str, Any] | None) -> str:
    """``0.01 below threshold 0.9 (macro_f1)``, or ``none (…)`` where no threshold applies.

    A protocol without a tolerance says ``not chosen (read as 0) below threshold 0.9
    (macro_f1)`` (V5): nobody chose 0. A protocol without a threshold (an accept rule
    judges each output: S9) says ``none (accepted by a rule, no quality threshold)``: a
    tolerance, a threshold and a metric would be words for a check that never runs
    (H-77), and a missing value is never written as ``None``.
    """
    p = protocol or {}
    if not p:
        return "none (no validation protocol)"
    threshold = p.get("threshold")
    if threshold is None:
        return ("none (accepted by a rule, no quality threshold)" if p.get("accept")
                else "none (no quality threshold)")
    chosen = p.get("tolerance")
    said = "not chosen (read as 0)" if chosen is None else f"{chosen:g}"
    return f"{said} below threshold {threshold} ({p.get('metric') or 'macro_f1'})"


def record_of(*, scope: str, code_revision: str | None, protocol: Mapping[str, Any] | None,
              params: Mapping[str, Any] | None = None, reported: Sequence[str] = ()) -> str:
    """The record items, from their facts (see the module).

    Args:
        scope: the stopwatch scope (R2), :data:`NOT_TIMED` or :data:`UNKNOWN`.
        code_revision: ``git describe`` of the code measured, ``None``: :data:`UNKNOWN`.
        protocol: the validation protocol (``threshold``, ``tolerance``, ``metric``,
            ``reference_value``, ``max_degradation``), ``None``/empty: none.
        params: the workload's ``--param`` items as the run was given them, the varied one
            included (plain values only are written).
        reported: the cells a command reported itself (``("device", "torch_version")``).

    Returns:
        ``"scope=…; code=…; tolerance=…[; reference=…][; params=…][; reported=…]"``, any
        secret masked.
    """
    items = [f"scope={record_value(scope)}", f"code={record_value(code_revision or UNKNOWN_CODE)}",
             f"tolerance={tolerance_words(protocol)}"]
    p = protocol or {}
    if p.get("reference_value") is not None:
        drop = p.get("max_degradation")
        items.append(f"reference={p['reference_value']} (max_degradation "
                     f"{'unset' if drop is None else drop})")
    given = [f"{k}={v}" for k, v in (params or {}).items() if isinstance(v, (str, int, float, bool))]
    if given:
        items.append("params=" + record_value(" ".join(shlex.quote(g) for g in given)))
    if reported:
        items.append("reported=" + record_value(" ".join(reported)))
    return mask_text("; ".join(items))[0]


def record_words(exp: Experiment, code_revision: str | None, *, reported: Sequence[str] = (),
                 variant: str | None = None, params: Mapping[str, Any] | None = None) -> str:
    """The record items of a row of ``exp``: :func:`record_of` of its scope, protocol and params.

    Args:
        exp: the experiment; its params as the row's variant was given them
            (:meth:`Experiment.variant_params`: a varied parameter's value included, A3;
            a command's argv is never written).
        code_revision: ``git describe`` of the code measured, ``None``: ``unknown``.
        reported: the cells a command reported itself; none: no ``reported`` item.
        variant: the row's variant id; ``None`` or ``all`` (a load): the fixed params only.
        params: the keyword arguments a Python workload's factory got, as its worker said
            (A2: the runner's rows; ``{}`` when no worker said); ``None``: the
            definition's for ``variant`` (a command; a row no worker wrote: crash
            recovery, ``validate --session``).
    """
    if params is None or exp.workload == "command":  # a command's: what its definition passes (A3)
        params = exp.variant_params(variant)
    return record_of(scope=exp.scope, code_revision=code_revision, protocol=exp.protocol,
                     params=params, reported=reported)


__all__ = ["NOT_TIMED", "RECORD_KEYS", "UNKNOWN", "UNKNOWN_CODE", "record_of", "record_value", "record_words",
           "tolerance_words"]
