"""One program per experiment: a run appending to rows of another code revision is refused (R10, S7).

Why it exists: rows of an edited program pooled with the old one's runs make a median
that describes code that no longer exists. The code revision a worker observes (R10:
``git describe`` of the program's repository, else a digest of the program files a
command names, :mod:`gpusession.bench.program_digest`) is kept in
``experiments.<id>.environment.code_revision`` of ``session.toml`` and in each row's
record (``code=``). Before any run the runner observes it again; when the experiment
already has measured rows and the kept revision differs, the run is refused as an
edited corpus is (:mod:`gpusession.core.folder.corpus_pin`, V5): one line naming the
experiment, both revisions and the way out, a new experiment id. There is no consent
flag: one experiment's summary pools its runs, so two programs are two experiments.

A revision unknown on either side (``None``: no git, no program file; a session written
before the digest existed) is not compared. Failed rows (nothing measured) pool nothing:
an experiment whose every run failed can be fixed and run again.

Who calls it: :meth:`gpusession.bench.runner.Runner.preflight` (``run``, ``run
--resume`` and the Run pane alike), before the lock and the first worker.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.folder.session import Session
from gpusession.core.folder.session_toml import session_toml_view


def kept_code_revision(session: Session, experiment_id: str) -> str | None:
    """The code revision the experiment's last worker observed (``experiments.<id>.environment.code_revision``).

    Returns:
        The revision as kept, ``None`` when none is (unknown, or never run).

    Raises:
        BadInput: ``session.toml`` does not read (as every reader of it).
    """
    table: Any = session_toml_view(session.session_toml).get("experiments", {}).get(experiment_id)
    env = table.get("environment") if isinstance(table, dict) else None
    code = env.get("code_revision") if isinstance(env, dict) else None
    return code if isinstance(code, str) and code else None


def measured_row_count(session: Session, experiment_id: str) -> int:
    """Rows of the experiment that measured a run (elapsed filled, loads apart): what a new run would pool with."""
    frame = session.results.read()
    if frame.height == 0:
        return 0
    return frame.filter((pl.col("experiment_id") == experiment_id) & (pl.col("phase") != "load")
                        & pl.col("elapsed_seconds").is_not_null()).height


def check_same_code(session: Session, experiment_id: str, revision: str | None) -> None:
    """Refuse a run that would pool rows of another code revision with the experiment's (R10, S7).

    Args:
        session: the open session.
        experiment_id: the experiment about to run (or resume).
        revision: the code revision observed now (``None``: unknown, nothing checked).

    Raises:
        BadInput: ``the code of slow changed since its 8 measured row(s) (sha256:4be0… →
            sha256:91c2…): …`` naming the way to a new experiment id (field
            ``code_revision``); nothing was run or appended.
    """
    if revision is None:
        return
    before = kept_code_revision(session, experiment_id)
    if before is None or before == revision:
        return
    rows = measured_row_count(session, experiment_id)
    if rows == 0:
        return
    raise BadInput(
        f"the code of {experiment_id} changed since its {rows} measured row(s) "
        f"({printable(before, keep='', digest=True)} → {printable(revision, keep='', digest=True)}): "
        "its summary would pool two programs; measure the new one as a new experiment "
        f"(`gpusession experiment {session.name} define --id NEW …` with the same command), "
        "or put the old program back; nothing was run", field="code_revision")


__all__ = ["check_same_code", "kept_code_revision", "measured_row_count"]
