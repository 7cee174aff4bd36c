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
