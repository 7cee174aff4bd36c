"""The session's protocol: the experiments stored in ``session.toml`` before they run (R1, V5).

Who calls it: ``gpusession experiment define``, ``run``, the demo and the Run pane. The
experiment itself (its checks, its schedule) is pure and lives in
:mod:`gpusession.core.experiment.plan`; this module reads and writes it in the folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpusession.core.events.actions import ExperimentDefinedRecord, ExperimentForkedRecord
from gpusession.core.experiment.params import check_params
from gpusession.core.experiment.plan import FIXED_KEYS, Experiment, check
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.folder.session import Session


def load_experiments(session: Session) -> list[Experiment]:
    """Every experiment defined in the session, in definition order."""
    table = session.data.get("experiments", {})
    if not isinstance(table, Mapping):
        raise BadInput("expected [experiments.<id>] tables", path=session.session_toml,
                       field="experiments")
    out = []
    for k, v in table.items():
        if not isinstance(v, Mapping):
            raise BadInput(f"expected a table, got {shown(v)}", path=session.session_toml,
                           field=f"experiments.{k}")
        try:
            out.append(Experiment.from_toml(k, v))
        except BadInput as exc:  # name the file a person would edit
            if exc.path is not None:
                raise
            raise BadInput(exc.message, path=session.session_toml, field=exc.field) from None
    return out


def get_experiment(session: Session, exp_id: str) -> Experiment:
    """The experiment ``exp_id``.

    Raises:
        BadInput: no such experiment (the message lists the defined ones).
    """
    for exp in load_experiments(session):
        if exp.id == exp_id:
            return exp
    known = ", ".join(e.id for e in load_experiments(session)) or "none"
    raise BadInput(f"no experiment {shown(exp_id)} in session {session.name} (defined: {known})")


def _fixed(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data.get(k) for k in FIXED_KEYS}


def _has_measurements(session: Session, exp_id: str) -> bool:
    """Whether ``exp_id`` has a row that measured something (V5).

    A failed load (phase ``load``, elapsed empty) measured nothing: such rows belong to a
    failed attempt, and a corrected definition keeps the id. A failed cold or
    warm run is a failed observation and counts (R7).
    """
    import polars as pl

    frame = session.results.read()
    if frame.height == 0:
        return False
    mine = frame.filter(pl.col("experiment_id") == exp_id)
    return bool(mine.filter((pl.col("phase") != "load") | pl.col("elapsed_seconds").is_not_null()).height)


def define_experiment(session: Session, exp: Experiment) -> Experiment:
    """Store ``exp`` under ``[experiments.<id>]`` before it runs (R1, V5).

    * Same id, same settings: nothing changes; the stored experiment is returned.
    * Same id, different settings, no measurement yet: the definition is replaced.
    * Same id, different settings, measurements exist: the experiment is stored under
      the next free id (``<id>-2``, ``<id>-3``, …) or under an existing id that already
      holds exactly these settings, and that experiment is returned.

    A command workload is stored with the ``full-chain`` scope: its process is timed as a
    whole (R2).

    Raises:
        BadInput: settings that do not pass :func:`check`; a new id ending with ``.``.
    """
    if exp.workload == "command" and exp.scope != "full-chain":
        # The worker times a command's whole process (start to exit): that is the full
        # chain, whatever a form's default said; the record must say what is measured (R2).
        exp = replace(exp, scope="full-chain")
    check(exp)
    check_params(exp.workload, exp.params, field=f"experiments.{exp.id}.params")  # before it is stored
    session.reload()  # a TUI or a run may hold this session since long: decide on the file
    table: dict[str, Any] = dict(session.data.get("experiments", {}))
    wanted = _fixed(exp.to_toml())
    current = table.get(exp.id)
    if current is None and exp.id.endswith("."):
        # a new id only: it names folders under runs/ and validation/, and Windows drops a
        # final dot when the session is copied there (an old session keeps its id)
        raise BadInput(f"experiment id {exp.id!r} ends with a dot, which Windows drops when the "
                       "session is copied there; end it with a letter or digit", field=f"experiments.{exp.id}")
    if current is not None and _fixed(_normalise(current)) == wanted:
        return Experiment.from_toml(exp.id, current)
    if current is not None and _has_measurements(session, exp.id):
        base = exp.id
        n = 2
        while True:
            cand = f"{base}-{n}"
            other = table.get(cand)
            if other is None:
                break
            if _fixed(_normalise(other)) == wanted:
                return Experiment.from_toml(cand, other)
            n += 1
        changed = [k for k in FIXED_KEYS if _normalise(current).get(k) != wanted.get(k)]

        session.journal(ExperimentForkedRecord(
            old=base, new=cand, changed=changed,
            message=f"{base} already has measurements; changed {', '.join(changed)} -> new id {cand}",
        ))
        exp = replace(exp, id=cand)
    settings = exp.to_toml()
    session.update(lambda doc: doc.setdefault("experiments", {}).__setitem__(exp.id, settings))

    session.journal(ExperimentDefinedRecord(experiment_id=exp.id, settings=exp.to_toml()))
    return Experiment.from_toml(exp.id, session.data["experiments"][exp.id])


def _normalise(data: Mapping[str, Any]) -> dict[str, Any]:
    """Stored TOML → the dict ``Experiment.to_toml`` would produce (defaults filled)."""
    try:
        return Experiment.from_toml("x", data).to_toml()
    except BadInput:
        return dict(data)


def store_derived(session: Session, exp: Experiment) -> Experiment:
    """Store a derived experiment (``experiment derive``, D4) under its own new id.

    The id must be new: a replay never replaces another experiment's definition, nor
    pools its rows with one. Storing the same derive again (same settings, same origin,
    same changed key) returns the stored one.

    Args:
        session: the open session.
        exp: from :func:`gpusession.core.experiment.derive.derive_experiment`
            (``derived_from`` and ``changed_key`` set).

    Returns:
        The stored experiment, as read back.

    Raises:
        BadInput: the id is taken by another experiment, no ``derived_from``, or the
            settings do not pass :func:`check` or the workload's params.
    """
    if exp.derived_from is None or exp.changed_key is None:
        raise BadInput("a derived experiment names what it was derived from and the one element "
                       "changed", field=f"experiments.{exp.id}")
    session.reload()
    current = dict(session.data.get("experiments", {})).get(exp.id)
    if current is not None:
        stored = _normalise(current)
        if stored == exp.to_toml():
            return Experiment.from_toml(exp.id, current)
        raise BadInput(f"experiment {exp.id} exists already (with other settings): choose a new "
                       "id for the replay", field="--id")
    return define_experiment(session, exp)
