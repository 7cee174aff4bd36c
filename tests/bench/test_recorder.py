"""The recorder alone: typed worker events in, journal records and result rows out (S7, R7).

No runner, no process, no clock of its own: the events a worker group sends are fed to
:meth:`Recorder.on_worker_event` by hand, the group's report to
:meth:`Recorder.group_exited`, and what the session holds afterwards is read back.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from fake_launcher import copy_corpus, session_of
from fake_workloads import write_corpus

from gpusession.bench.launch import worker_spec
from gpusession.bench.recorder import Recorder
from gpusession.bench.rows import LoadSlot
from gpusession.bench.stops import RunStops
from gpusession.bench.supervise import GroupReport
from gpusession.core.events import (
    LoadFinishedRecord,
    LoadStartedRecord,
    RowAppended,
    RunFinishedRecord,
    RunStartedRecord,
    WorkerEnvironment,
    WorkerExitedRecord,
    WorkerLoaded,
    WorkerRunStarted,
)
from gpusession.core.experiment.plan import Experiment, schedule
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session
from gpusession.core.records.outcome import RunOutcome

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}


def _recorder(session: Session, emitted: list[Any]) -> tuple[Recorder, Experiment]:
    corpus = write_corpus(session.folder / "corpus.jsonl", n=6)
    exp = define_experiment(session, Experiment(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(2,), runs_per_variant=2, cold_runs_per_variant=0,
        warmup_iterations=0, protocol=PROTOCOL, device="cpu"))
    rec = Recorder(session, exp, outcome=RunOutcome(), emit=emitted.append, now=lambda: NOW)
    frame = session.results.read()
    rec.open(frame, RunStops(session, exp, frame=frame, records=[], journal=rec.journal,
                             clock=lambda: NOW))
    rec.start(2, corpus)
    return rec, exp


def test_s7_the_recorder_writes_each_row_and_record_as_its_event_arrives(session: Session) -> None:
    emitted: list[Any] = []
    rec, exp = _recorder(session, emitted)
    runs = schedule(exp)
    warm = [r for r in runs if r.phase == "warm"]
    slot = LoadSlot.of(exp.id, LoadSlot.variant_of(warm), 1)
    rep = GroupReport(name="warm", runs={r.run_key: r for r in warm}, load=slot)
    spec = worker_spec(session, exp, "warm", warm, None)
    assert session_of(spec) == session.folder
    rec.load_started("warm", slot)
    rec.on_worker_event(WorkerEnvironment(environment={"device": "cpu"}), rep)
    rec.on_worker_event(WorkerLoaded(elapsed_s=0.5, revisions={}), rep)
    assert [r.phase for r in session.results.rows()] == ["load"]  # at once, not at the end
    for order, run in enumerate(spec["runs"], 1):
        rec.on_worker_event(WorkerRunStarted(run_key=run["run_key"]), rep)
        out = session.runs_dir / exp.id / run["variant_id"] / f"warm-{run['run_index']}.jsonl"
        (finished,) = copy_corpus(spec, run, out, order)
        rec.on_worker_event(finished, rep)
        rep.finished_keys.add(run["run_key"])
        assert len(session.results.rows()) == 1 + order
    rep.code = 0
    assert rec.group_exited(rep) is False  # it did not die
    rows = session.results.rows()
    assert [(r.phase, r.run_index) for r in rows] == [("load", 1), ("warm", 1), ("warm", 2)]
    assert all(r.corpus_accepted for r in rows if r.phase == "warm")  # validated (V1-V8)
    kinds = [type(r) for r in session.journal_records()]
    for kind in (LoadStartedRecord, LoadFinishedRecord, RunStartedRecord, RunFinishedRecord,
                 WorkerExitedRecord):
        assert kind in kinds, kind
    assert session.data["environment"]["observed_at"] == NOW  # the runner's clock, never its own
    assert sum(isinstance(e, RowAppended) for e in emitted) == 3
    assert rec.outcome.rows_written == 3 and rec.done == 2 and not rec.worker_died


def test_r7_a_group_that_dies_mid_run_leaves_the_run_its_incident_row(session: Session) -> None:
    rec, exp = _recorder(session, [])
    warm = [r for r in schedule(exp) if r.phase == "warm"]
    slot = LoadSlot.of(exp.id, LoadSlot.variant_of(warm), 1)
    rep = GroupReport(name="warm", runs={r.run_key: r for r in warm}, load=slot)
    rec.load_started("warm", slot)
    rec.on_worker_event(WorkerLoaded(elapsed_s=0.5, revisions={}), rep)
    rec.on_worker_event(WorkerRunStarted(run_key=warm[0].run_key), rep)
    rep.in_flight = warm[0]
    rep.code = -9
    assert rec.group_exited(rep) is True
    cut = [r for r in session.results.rows() if r.phase == "warm"]
    assert len(cut) == 1 and cut[0].elapsed_seconds is None and cut[0].corpus_accepted is None
    assert "killed by signal SIGKILL (9)" in (cut[0].notes or "")
    assert rec.worker_died and any("SIGKILL" in m for m in rec.outcome.incidents)


def test_h65_a_timing_past_a_year_is_never_written_and_the_csv_still_reads(session: Session) -> None:
    import dataclasses

    from gpusession.core.events import IncidentRecord

    emitted: list[Any] = []
    rec, exp = _recorder(session, emitted)
    warm = [r for r in schedule(exp) if r.phase == "warm"]
    slot = LoadSlot.of(exp.id, LoadSlot.variant_of(warm), 1)
    rep = GroupReport(name="warm", runs={r.run_key: r for r in warm}, load=slot)
    spec = worker_spec(session, exp, "warm", warm, None)
    rec.load_started("warm", slot)
    rec.on_worker_event(WorkerEnvironment(environment={"device": "cpu"}), rep)
    rec.on_worker_event(WorkerLoaded(elapsed_s=0.5, revisions={}), rep)
    for order, run in enumerate(spec["runs"], 1):
        rec.on_worker_event(WorkerRunStarted(run_key=run["run_key"]), rep)
        out = session.runs_dir / exp.id / run["variant_id"] / f"warm-{run['run_index']}.jsonl"
        (finished,) = copy_corpus(spec, run, out, order)
        if order == 1:  # a timing that reports 1e20 s
            finished = dataclasses.replace(finished, elapsed_s=1e20)
        rec.on_worker_event(finished, rep)
    rows = session.results.rows()  # every reader still reads the whole CSV
    first, second = [r for r in rows if r.phase == "warm"]
    assert first.elapsed_seconds is None and first.corpus_accepted is None  # failed, not a verdict
    assert "elapsed_seconds 1e+20: expected a duration under a year" in (first.notes or "")
    assert "the run counts as failed" in (first.notes or "")
    assert second.elapsed_seconds is not None and second.corpus_accepted
    assert any("elapsed_seconds 1e+20" in r.message for r in session.journal_records()
               if isinstance(r, IncidentRecord))
    assert any(r.kind == "past_bound" and r.run_key == "e:warm:batch-2:1" for r in session.journal_records()
               if isinstance(r, IncidentRecord))  # typed: the report pairs it with its row by run
    ends = [r for r in session.journal_records() if isinstance(r, RunFinishedRecord)]
    assert [r.elapsed_s is None for r in ends] == [True, False]  # the journal says what the row says


def test_h65_the_results_writer_refuses_a_row_its_reader_would_refuse(session: Session) -> None:
    import pytest

    from gpusession.core.files.errors import BadInput
    from gpusession.core.records.results import ResultRow

    ok = ResultRow(experiment_id="e", variant_id="b", phase="warm", run_index=1, elapsed_seconds=1.5)
    session.results.append(ok)
    before = session.results.path.read_bytes()
    for bad in (ok.replace(run_index=2, elapsed_seconds=1e20), ok.replace(run_index=2, quality_value=3.0)):
        with pytest.raises(BadInput, match="the row was not written"):
            session.results.append(bad)
    assert session.results.path.read_bytes() == before
    assert [r.run_index for r in session.results.rows()] == [1]


def _one_run(session: Session, *, load_note: str, load_quiet: bool) -> str | None:
    """The notes of the one warm run a recorder writes, the concurrent load set as the runner sets it."""
    rec, exp = _recorder(session, [])
    rec.load_note, rec.load_quiet = load_note, load_quiet
    warm = [r for r in schedule(exp) if r.phase == "warm"][:1]
    slot = LoadSlot.of(exp.id, LoadSlot.variant_of(warm), 1)
    rep = GroupReport(name="warm", runs={r.run_key: r for r in warm}, load=slot)
    spec = worker_spec(session, exp, "warm", warm, None)
    rec.load_started("warm", slot)
    rec.on_worker_event(WorkerLoaded(elapsed_s=0.5, revisions={}), rep)
    run = spec["runs"][0]
    rec.on_worker_event(WorkerRunStarted(run_key=run["run_key"]), rep)
    (finished,) = copy_corpus(spec, run, session.runs_dir / exp.id / run["variant_id"] / "warm-1.jsonl", 1)
    rec.on_worker_event(finished, rep)
    return next(r.notes for r in session.results.rows() if r.phase == "warm")


def test_r10_the_concurrent_load_remark_follows_the_typed_quiet_field_not_its_words(
        new_session: Any) -> None:
    said_none = _one_run(new_session(name="said-none"), load_note="host CPU 3%; other GPU processes: none",
                         load_quiet=False)
    assert "concurrent load at start: host CPU 3%; other GPU processes: none" in (said_none or "")
    said_busy = _one_run(new_session(name="said-busy"), load_note="host CPU 3%; other GPU processes: pid 9 on GPU 0",
                         load_quiet=True)
    assert "concurrent load at start" not in (said_busy or "")


def test_r7_the_recorder_types_a_death_by_the_run_it_cut_and_its_kind(session: Session) -> None:
    from gpusession.core.events import IncidentRecord

    rec, exp = _recorder(session, [])
    warm = [r for r in schedule(exp) if r.phase == "warm"]
    slot = LoadSlot.of(exp.id, LoadSlot.variant_of(warm), 1)
    rep = GroupReport(name="warm", runs={r.run_key: r for r in warm}, load=slot)
    rec.load_started("warm", slot)
    rec.on_worker_event(WorkerLoaded(elapsed_s=0.5, revisions={}), rep)
    rec.on_worker_event(WorkerRunStarted(run_key=warm[0].run_key), rep)
    rep.in_flight = warm[0]
    rep.code = -9
    rec.group_exited(rep)
    (died,) = [r for r in session.journal_records() if isinstance(r, IncidentRecord)]
    assert (died.kind, died.run_key, died.worker) == ("worker_died", rec.key(warm[0]).format(), "warm")
    row = next(r for r in session.results.rows() if r.phase == "warm")
    assert died.what is not None and f"incident: {died.what}" in (row.notes or "")  # the row's own words
