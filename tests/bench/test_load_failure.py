"""A workload that cannot load stops the experiment at once; a failed attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.bench.runner import Runner
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session
from gpusession.core.records.results import COLUMNS
from gpusession.core.records.summary import session_summary

pytestmark = pytest.mark.slow

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}


def _exp(session: Session, workload: str, **kw: Any) -> Experiment:
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=8, words=5)
    base: dict[str, Any] = dict(
        id="e", workload=workload, corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(2, 4), runs_per_variant=2, warmup_iterations=1,
        protocol=PROTOCOL, params={}, device="cpu",
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)


def _events(session: Session, name: str) -> list[dict[str, Any]]:
    return [r for r in session.read_journal() if r.get("event") == name]


@pytest.mark.torch
@pytest.mark.parametrize(("workload", "needle"), [
    ("no_such_module_for_gpusession:Factory", "does not import: No module named "
     "'no_such_module_for_gpusession' (searched the directory gpusession ran in, "),
    ("fake_workloads:RefusedLoad", "model_dir does not exist"),
    ("fake_workloads:OneArgLoad", "cannot be called as load(device, precision, context_limit)"),
])
def test_unmendable_load_failure_stops_at_the_first_worker(
        sessions_root: Path, session: Session, fakes: None, workload: str, needle: str) -> None:
    s = session
    exp = _exp(s, workload)
    out = Runner(s, exp.id).run()
    rows = s.results.rows()
    assert [r.phase for r in rows] == ["load"], "one worker only, one failed load row"
    assert len(_events(s, "worker_started")) == 1
    assert not out.completed
    assert len(out.incidents) == 1, out.incidents  # one clear message
    msg = out.incidents[0]
    assert "could not load" in msg and needle in msg and "stopped at the first worker" in msg
    attempts = _events(s, "attempt_failed")
    assert len(attempts) == 1 and attempts[0]["attempt"] == 1
    assert attempts[0]["run_keys"] == [f"e:load:{rows[0].variant_id}:{rows[0].run_index}"]


@pytest.mark.torch
def test_out_of_memory_at_load_stays_per_variant(
        sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, "fake_workloads:OomLoad")
    Runner(s, exp.id).run()
    loads = [r for r in s.results.rows() if r.phase == "load"]
    assert len(loads) == 3  # cold batch-2, cold batch-4, warm: every worker tried
    assert all("out of memory" in (r.notes or "") for r in loads)
    assert len(_events(s, "attempt_failed")) == 1  # nothing measured: a failed attempt


@pytest.mark.torch
def test_corrected_definition_starts_a_clean_attempt(
        sessions_root: Path, session: Session, fakes: None) -> None:
    s = session
    exp = _exp(s, "fake_workloads:RefusedLoad")
    Runner(s, exp.id).run()
    fixed = _exp(s, "fake_workloads:Echo", params={"log": str(s.folder / "predict.log")})
    assert fixed.id == "e"  # nothing was measured: the corrected definition keeps the id
    out = Runner(s, fixed.id).run()
    assert out.completed and not out.incidents
    frame = s.results.read()
    assert frame.columns == list(COLUMNS) and len(frame.columns) == 38
    assert frame.filter(frame["phase"] == "load")["elapsed_seconds"].null_count() == 1  # old row kept
    table = session_summary(s)
    old = [r for r in table if r.attempt is not None]
    assert len(old) == 1 and old[0].attempt == 1 and old[0].phase == "load"
    assert "attempt 1: did not load" in old[0].outcome_words()
    current = [r for r in table if r.attempt is None]
    assert current and all(r.failed == 0 for r in current)
    assert table[-1] is old[0]  # the failed attempt is shown apart, after the current rows


def test_a_workload_module_not_found_names_where_it_was_searched(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The usual fix is PYTHONPATH or the directory gpusession runs in: both are named."""
    from gpusession.bench.workloads.base import resolve
    from gpusession.core.files.errors import BadInput

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", "/opt/models")
    with pytest.raises(BadInput) as info:
        resolve("mymodel_not_here:make", {})
    said = str(info.value)
    assert f"searched the directory gpusession ran in, {tmp_path}, PYTHONPATH=/opt/models" in said
    (tmp_path / "broken_inside.py").write_text("import not_a_module_at_all\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(BadInput) as inner:  # found, but its own import fails: no search words
        resolve("broken_inside:make", {})
    assert "not_a_module_at_all" in str(inner.value) and "searched" not in str(inner.value)
