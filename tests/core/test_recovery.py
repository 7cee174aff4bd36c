"""Crash recovery on reopen: what the row of a lost run says (S7, R7)."""

from __future__ import annotations

from pathlib import Path

from helpers import NewSession

from gpusession.core.folder.session import Session
from gpusession.core.retrieval.report import render_report


def test_s7_run_recovered_after_a_kill_holds_no_verdict(
        sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.journal("run_started", run_key="e:warm:v:1", experiment_id="e", variant_id="v",
              phase="warm", run_index=1)
    (s.folder / ".run.lock").write_text("999999999")  # the runner was killed (kill -9)
    reopened = Session.open(sessions_root, "t1")
    [row] = reopened.results.rows()
    assert row.elapsed_seconds is None and "recovered on reopen" in (row.notes or "")
    assert row.corpus_accepted is None  # never validated: not "rejected"
    assert "| e | v | 1 | 0 | 0 |" in render_report(reopened)  # runs, validated, accepted


def test_s7_a_run_cut_again_while_measured_again_gets_its_second_incident_row(
        sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t2")
    started = dict(run_key="e:warm:v:1", experiment_id="e", variant_id="v", phase="warm", run_index=1)
    s.journal("run_started", **started)
    (s.folder / ".run.lock").write_text("999999999")  # killed in flight
    s = Session.open(sessions_root, "t2")
    assert len(s.results.rows()) == 1  # the first cut start's incident row
    s.journal("run_started", **started)  # run --resume measures it again, and is killed too
    (s.folder / ".run.lock").write_text("999999999")
    s = Session.open(sessions_root, "t2")
    rows = s.results.rows()
    assert len(rows) == 2 and all("recovered on reopen" in (r.notes or "") for r in rows)
    s = Session.open(sessions_root, "t2")
    assert len(s.results.rows()) == 2  # said once


def test_s7_a_run_measured_again_whose_row_was_written_gets_no_incident_row(
        sessions_root: Path, new_session: NewSession) -> None:
    from gpusession.core.records.results import ResultRow

    s = new_session("t3")
    started = dict(run_key="e:warm:v:1", experiment_id="e", variant_id="v", phase="warm", run_index=1)
    s.journal("run_started", **started)
    (s.folder / ".run.lock").write_text("999999999")
    s = Session.open(sessions_root, "t3")
    s.journal("run_started", **started)
    s.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1,
                               elapsed_seconds=0.5))  # the crash came between the row and its end
    (s.folder / ".run.lock").write_text("999999999")
    s = Session.open(sessions_root, "t3")
    assert [r.elapsed_seconds for r in s.results.rows()] == [None, 0.5]


def test_c4_a_lost_runs_incident_row_ends_with_the_record_as_every_row(
        sessions_root: Path, new_session: NewSession) -> None:
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.records.record_notes import record_items

    s = new_session("t4")
    define_experiment(s, Experiment(id="e", workload="synthetic-mlp", values=(1,), params={"width": 8},
                                    protocol={"classes": ["a", "b"], "threshold": 0.8, "tolerance": 0.05,
                                              "metric": "macro_f1", "output_format": "jsonl"}))
    s.update(lambda doc: doc["experiments"]["e"].__setitem__("environment", {"code_revision": "abc1234"}))
    for key, exp in (("e:warm:batch-1:1", "e"), ("gone:warm:v:1", "gone")):
        s.journal("run_started", run_key=key, experiment_id=exp, variant_id=key.split(":")[2],
                  phase="warm", run_index=1)
    (s.folder / ".run.lock").write_text("999999999")  # killed in flight
    rows = {r.experiment_id: r for r in Session.open(sessions_root, "t4").results.rows()}
    items = record_items(rows["e"].notes)
    assert items["scope"] == "processing" and items["code"] == "abc1234", rows["e"].notes
    assert items["tolerance"] == "0.05 below threshold 0.8 (macro_f1)" and items["params"] == "width=8"
    gone = record_items(rows["gone"].notes)  # its experiment is not defined: said, not invented
    assert gone["scope"] == "unknown" and gone["code"] == "unknown", rows["gone"].notes
    assert "recovered on reopen" in (rows["gone"].notes or "")
