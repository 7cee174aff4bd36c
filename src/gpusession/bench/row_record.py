"""What a row says was applied and chosen: a command's received settings and the record notes (R1, R2, C4).

Who calls it: :func:`gpusession.bench.rows.every_row_facts` for every row the recorder
appends (:func:`applied`, :func:`record_words`: each a typed fact of the row, R11), and
the command worker for the folder of the program it runs (:func:`program_folder`). Pure
but for that folder lookup: no process, no clock.

**A row states only what was applied (A2).** A Python workload's cells (seed, precision,
batch, context, and the record's ``params``) are its worker's echo
(``WorkerApplied``, ``WorkerRunFinished.applied``). A command workload's row states only
what gpusession passed as an argument: ``precision`` is filled when the command takes
``{precision}``, ``batch``, ``context`` and ``seed`` when it takes ``{batch}`` /
``{context}`` / ``{seed}``, with the value its worker filled in; otherwise they stay
empty and the notes say the value was offered in the environment only (``seed offered
in $GPUSESSION_SEED, not verifiable for a command``): a seed nobody passed is never
written as ``0``. ``python_version`` and ``torch_version`` are the worker's, and a
command's own interpreter is unknown: they stay empty for a command unless the command
reported them, as it may its ``device``, through ``$GPUSESSION_REPORT``
(:mod:`gpusession.core.experiment.command_report`); then the record says which cells it
reported (``reported=device python_version``).

**The record** (seed §2, §4: what no column holds; written by
:mod:`gpusession.core.experiment.record`, shared with the rows recovery and ``validate
--session`` write) ends every row's notes, one item per
fact, ``key=value``, items separated by ``"; "`` as every note is, values never holding
a ``;``::

    scope=processing; code=abc1234; tolerance=0.01 below threshold 0.9 (macro_f1); params=width=64

``scope`` is the stopwatch scope (R2); ``code`` the ``git describe`` of the code measured
(a command's: the repository holding its program), else ``unknown``; ``tolerance`` what
the tolerance means, with its threshold and metric, or ``none (no validation protocol)``;
``reference`` the reference value and maximum degradation when set; ``params`` a Python
workload's ``--param`` items when given (shell-quoted, space-separated); ``reported`` the
cells a command reported itself (``device python_version torch_version``). Outside tools
read them by :data:`RECORD_KEYS`; gpusession itself never reads notes to decide anything.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpusession.core.experiment.command_report import REPORT_ENV
from gpusession.core.experiment.placeholders import ENV, param_env
from gpusession.core.experiment.plan import Experiment, unreceived_params
from gpusession.core.experiment.record import UNKNOWN_CODE, record_words
from gpusession.core.records.record_notes import RECORD_KEYS
from gpusession.core.records.results import ResultRow


def receives(exp: Experiment, name: str) -> bool:
    """Whether a command workload's arguments carry ``{name}`` (``{batch}``, ``--b={batch}``)."""
    argv = exp.params.get("command")
    return isinstance(argv, list) and any(f"{{{name}}}" in str(a) for a in argv)


def offered_words(name: str) -> str:
    """``batch offered in $GPUSESSION_BATCH, not verifiable for a command``."""
    return f"{name} offered in ${ENV[name]}, not verifiable for a command"


def not_passed_device_words(device: str) -> str:
    """``--device cuda:0 defined, never passed to the command (it may report its own in $GPUSESSION_REPORT)``."""
    return (f"--device {device} defined, never passed to the command (it may report its own in "
            f"${REPORT_ENV})")


def applied(row: ResultRow, exp: Experiment, reported: Mapping[str, str] | None = None,
            offered: Sequence[str] | None = None) -> tuple[ResultRow, list[str]]:
    """A command's row without the settings it never received, with what it reported, and the notes.

    Args:
        row: the row as built from the experiment and the worker's report.
        exp: its experiment.
        reported: what the command reported for this run through ``$GPUSESSION_REPORT``
            (``device``, ``python_version``, ``torch_version``, already checked by
            :func:`gpusession.core.experiment.command_report.parse_report`); ``None`` or
            ``{}`` when it reported nothing. Ignored for a Python workload.
        offered: the settings the run got only as ``$GPUSESSION_<NAME>``, as the command
            worker said (``WorkerRunFinished.offered``); ``None`` when no worker said (a
            run its worker died in): then each of batch, context and seed the arguments
            do not take and the row or the definition holds.

    Returns:
        ``(row, notes)``: unchanged and ``[]`` for a Python workload; for a command,
        ``precision`` / ``batch`` / ``context`` / ``seed`` emptied where no placeholder
        carries them (a seed nobody passed is never ``0``), ``python_version`` / ``torch_version`` the reported ones or empty,
        ``device`` the reported one when given (else the worker's: "chosen by the
        command"), one :func:`offered_words` note per batch, context or seed value that
        was only in the environment, and :func:`not_passed_device_words` when the experiment
        names a ``--device`` the command did not report (gpusession never passes it).
    """
    if exp.workload != "command":
        return row, []
    said = dict(reported or {})
    changes: dict[str, Any] = {"python_version": said.get("python_version"),
                               "torch_version": said.get("torch_version")}
    notes = []
    if said.get("device"):
        changes["device"] = said["device"]
    if exp.device and exp.device != said.get("device"):
        notes.append(not_passed_device_words(exp.device))
    if not receives(exp, "precision"):
        changes["precision"] = None
    for name in ("batch", "context", "seed"):
        if receives(exp, name):
            continue
        if offered is not None:
            only_env = name in offered  # as the worker said
        else:  # no echo: the row's value, and the seed the variable always carries
            only_env = getattr(row, name) is not None or name == "seed"
        if only_env:
            notes.append(offered_words(name))
        changes[name] = None
    notes.extend(by_variable_words(n) for n in unreceived_params(exp))  # A3: --param-via-env
    return row.replace(**changes), notes


def by_variable_words(name: str) -> str:
    """``model passed by variable ($GPUSESSION_PARAM_MODEL), not verifiable for a command`` (A3)."""
    return f"{name} passed by variable (${param_env(name)}), not verifiable for a command"


def recorded(row: ResultRow, exp: Experiment, environment: Mapping[str, Any]) -> ResultRow:
    """The row as appended: what a command received (:func:`applied`), the record at the end of its notes.

    Args:
        row: a row of ``exp`` (load, cold or warm).
        exp: its experiment.
        environment: what the worker reported (its ``code_revision``).
    """
    row, notes = applied(row, exp)
    record = record_words(exp, environment.get("code_revision"), variant=str(row.variant_id))
    return row.replace(notes="; ".join(n for n in (row.notes, *notes, record) if n))


#: Programs that run a script named by their first plain argument (``python3 score.py``).
_INTERPRETERS = frozenset({"python", "pypy", "node", "nodejs", "bun", "deno", "ruby", "perl", "php",
                           "lua", "luajit", "julia", "rscript", "sh", "bash", "dash", "zsh"})


def is_interpreter(program: str) -> bool:
    """``/usr/bin/python3.12`` → True: the name less its version digits is an interpreter's."""
    return re.sub(r"[0-9.]+$", "", Path(program).name.lower()) in _INTERPRETERS


def program_folder(argv: Sequence[Any], root: Path) -> str | None:
    """The folder of the program a command runs, for its code revision; ``None``: not found.

    For an interpreter (``python3 score.py``) its script: the first argument that is not
    an option, when it is a file (relative to ``root``); ``python -m pkg`` has none.
    Otherwise the program itself: a path (``./predict.sh``, relative to ``root``), else
    the program found on ``PATH``.
    """
    args = [str(a) for a in argv]
    if not args:
        return None
    if is_interpreter(args[0]):
        script = next((a for a in args[1:] if not a.startswith("-")), None)
        if script is None or "{" in script or any(a in ("-m", "-c", "-e") for a in args[1:args.index(script)]):
            return None
        candidates = [script]
    else:
        candidates = [args[0]] if "/" in args[0] else []
    for arg in candidates:
        path = Path(arg) if os.path.isabs(arg) else root / arg
        if path.is_file():
            return str(path.resolve().parent)
    if candidates:
        return None
    found = shutil.which(args[0])
    return str(Path(found).resolve().parent) if found else None


__all__ = ["RECORD_KEYS", "UNKNOWN_CODE", "applied", "by_variable_words", "is_interpreter", "not_passed_device_words", "offered_words", "program_folder", "receives",
           "record_words", "recorded"]
