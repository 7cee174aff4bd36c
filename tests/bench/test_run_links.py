"""A run never writes its outputs or ``ranks.csv`` through a link.

A link planted in place of a run's output file, or of a folder under ``runs/``, fails that
run with the path named in its row; the link's target is never touched. Files and folders
a run creates get the session's private modes (0600 / 0700).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.bench.runner import Runner
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}


def _exp(session: Session, **kw: Any) -> Experiment:
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=8, words=5)
    base: dict[str, Any] = dict(
        id="rx", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(4,), runs_per_variant=2, warmup_iterations=0,
        cold_runs_per_variant=1, protocol=PROTOCOL, device="cpu",
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))


def _outside(tmp_path: Path, name: str) -> Path:
    out = tmp_path / "outside"
    out.mkdir(exist_ok=True)
    p = out / name
    p.write_text("precious\n", encoding="utf-8")
    return p


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def _row(session: Session, phase: str, index: int) -> Any:
    return next(r for r in session.results.rows() if r.phase == phase and r.run_index == index)


@pytest.mark.slow
@pytest.mark.torch
def test_linked_run_outputs_are_refused_and_their_targets_untouched(
        session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)
    exp = _exp(session)
    variant = session.runs_dir / "rx" / "batch-4"
    variant.mkdir(parents=True)
    warm_target, cold_target = _outside(tmp_path, "warm.txt"), _outside(tmp_path, "cold.txt")
    (variant / "warm-1.jsonl").symlink_to(warm_target)
    (variant / "cold-1.jsonl").symlink_to(cold_target)
    Runner(session, exp.id, continue_on_reject=True).run()  # a refused first run would stop the rest (D3)
    assert warm_target.read_text() == "precious\n" and cold_target.read_text() == "precious\n"
    for phase in ("warm", "cold"):
        row = _row(session, phase, 1)
        assert row.elapsed_seconds is None and row.corpus_accepted is None
        assert f"{phase}-1.jsonl" in (row.notes or "") and "symbolic link" in (row.notes or "")
    ok = _row(session, "warm", 2)  # the next run writes its own file, private
    assert ok.corpus_accepted is True
    assert _mode(variant / "warm-2.jsonl") == 0o600


@pytest.mark.torch
def test_linked_variant_folder_is_refused_and_new_run_folders_are_private(
        session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)
    exp = _exp(session, values=(4, 8), cold_runs_per_variant=0, runs_per_variant=1)
    (session.runs_dir / "rx").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (session.runs_dir / "rx" / "batch-4").symlink_to(elsewhere, target_is_directory=True)
    Runner(session, exp.id, continue_on_reject=True).run()  # a refused first run would stop the rest (D3)
    assert list(elsewhere.iterdir()) == []
    linked = next(r for r in session.results.rows() if r.phase == "warm" and r.variant_id == "batch-4")
    assert linked.corpus_accepted is None and "batch-4: is a symbolic link" in (linked.notes or "")
    made = session.runs_dir / "rx" / "batch-8"
    assert _mode(made) == 0o700 and _mode(made / "warm-1.jsonl") == 0o600


def test_command_workload_output_link_is_refused_before_the_command_runs(
        session: Session, tmp_path: Path) -> None:
    script = session.folder / "score.py"
    script.write_text(
        "import json,sys; src,out=sys.argv[1:3];"
        "recs=[json.loads(l) for l in open(src)];"
        "open(out,'w').write(''.join(json.dumps({'id':r['id'],'label':r['label']})+'\\n' for r in recs))",
        encoding="utf-8")
    exp = _exp(session, workload="command", cold_runs_per_variant=0, scope="full-chain",
               params={"command": [sys.executable, str(script), "{corpus}", "{output}"]})
    variant = session.runs_dir / "rx" / "batch-4"
    variant.mkdir(parents=True)
    target = _outside(tmp_path, "warm.txt")
    (variant / "warm-1.jsonl").symlink_to(target)
    Runner(session, exp.id, continue_on_reject=True).run()  # a refused first run would stop the rest (D3)
    assert target.read_text() == "precious\n"
    row = _row(session, "warm", 1)
    assert row.corpus_accepted is None and "warm-1.jsonl: is a symbolic link" in (row.notes or "")
    assert _row(session, "warm", 2).corpus_accepted is True


class _Group:
    """Two ranks of one host, this one the leader (what _group_environment asks of a group)."""

    world_size, leader, is_leader, rank = 2, 0, True, 0

    def all_gather(self, obj: Any) -> list[Any]:
        return [obj, obj]


class _Channel:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, event: Any) -> None:
        self.sent.append(event)


def test_linked_ranks_csv_of_the_load_is_an_incident_not_a_silent_skip(
        session: Session, tmp_path: Path) -> None:
    from gpusession.bench.worker import _group_environment
    from gpusession.core.events import WorkerIncident

    exp_dir = session.runs_dir / "rx"
    exp_dir.mkdir(parents=True)
    target = _outside(tmp_path, "ranks.txt")
    (exp_dir / "ranks.csv").symlink_to(target)
    ch = _Channel()
    load = {"elapsed_s": 1.0, "baseline_allocated_bytes": None, "baseline_reserved_bytes": None,
            "peak_allocated_bytes": None, "peak_reserved_bytes": None}
    env = {"device": "cpu", "gpus_used": [], "gpu_uuid": None, "gpu_model": None}
    _group_environment(_Group(), env, load, {"output_dir": str(exp_dir), "worker": "warm",
                                             "load_run_key": "load:all:1"}, ch)  # type: ignore[arg-type]
    assert target.read_text() == "precious\n"
    incidents = [e for e in ch.sent if isinstance(e, WorkerIncident)]
    assert len(incidents) == 1 and "ranks.csv: is a symbolic link" in (incidents[0].message or "")


def test_a_commands_own_outputs_are_made_0600_after_each_run_whatever_the_umask(
        session: Session, tmp_path: Path) -> None:
    """The command opens its output itself, so the umask chose its mode; the folder promises 0600."""
    script = tmp_path / "copy.py"
    script.write_text(
        "import json,os,sys; os.umask(0); src,out=sys.argv[1:3];"
        "recs=[json.loads(l) for l in open(src)];"
        "open(out,'w').write(''.join(json.dumps({'id':r['id'],'label':r['label']})+'\\n' for r in recs))",
        encoding="utf-8")
    exp = _exp(session, workload="command", cold_runs_per_variant=0, scope="full-chain",
               params={"command": [sys.executable, str(script), "{corpus}", "{output}"]})
    Runner(session, exp.id, continue_on_reject=True).run()  # a refused first run would stop the rest (D3)
    outputs = sorted((session.runs_dir / "rx" / "batch-4").glob("warm-*.jsonl"))
    assert len(outputs) == 2
    assert {p.name: oct(_mode(p)) for p in outputs} == {p.name: oct(0o600) for p in outputs}
