"""``gpusession demo --headless`` on CPU, end to end in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gpusession.bench.workloads.bbc_corpus import read_corpus, split
from gpusession.core.folder.session import Session
from gpusession.core.records.results import summarize


def test_v7_demo_split_is_disjoint_deterministic_with_exactly_1000_eval() -> None:
    corpus = read_corpus()
    assert len(corpus.texts) == 2225 and len(corpus.classes) == 5
    assert corpus.replaced_files >= 1  # a file that is not UTF-8 is decoded and counted
    a, b = split(corpus, 0), split(corpus, 0)
    assert [t.id for t in a.eval] == [t.id for t in b.eval]
    assert len(a.eval) == 1000
    ids = [{t.id for t in part} for part in (a.train, a.tune, a.eval)]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert sum(len(x) for x in ids) == 2225
    assert a.eval[0].id.split("-")[0] in corpus.classes  # IDs from class + file name
    assert [t.id for t in split(corpus, 1).eval] != [t.id for t in a.eval]


@pytest.mark.slow
def test_demo_headless_cpu_end_to_end(
    demo_session: subprocess.CompletedProcess[str], sessions_root: Path
) -> None:
    res = demo_session  # the demo run once for the test run, its session copied here
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "batch-8" in res.stdout and "median" in res.stdout and "verdict" in res.stdout and "accepted" in res.stdout and "macro-F1" in res.stdout
    # the answer ends the output: verdict, cost per accepted deliverable, the variant to keep, next steps (D5)
    tail = "\n".join(res.stdout.strip().splitlines()[-10:])
    assert "- Verdict: 1 distinct corpus accepted" in tail and "per" in tail and ("- Keep: batch-" in tail or "- Keep: none is faster beyond noise" in tail), tail
    assert "next: gpusession report demo" in tail and "gpusession open demo" in tail
    s = Session.open(sessions_root, "demo")
    pkg = s.package
    assert (pkg.gpu_model, pkg.lots, pkg.days) == ("RTX A5000", 1, 7)
    rows = s.results.rows()
    cold = [r for r in rows if r.phase == "cold"]
    warm = [r for r in rows if r.phase == "warm"]
    load = [r for r in rows if r.phase == "load"]
    assert len(cold) == 3 and len(warm) == 15
    assert len(load) == 4  # one per worker process: 3 cold + 1 warm
    assert all(r.corpus_accepted is True for r in warm)
    assert all(r.quality_value is not None and r.quality_value > 0.9 for r in warm)
    assert all(r.expected_ids == 1000 and r.observed_ids == 1000 for r in warm)
    for r in rows:  # M4: CPU → not measured, never 0
        assert r.baseline_allocated_bytes is None and r.baseline_reserved_bytes is None
        assert r.peak_allocated_bytes is None and r.peak_reserved_bytes is None
    assert all(r.elapsed_seconds is not None and r.elapsed_seconds > 0 for r in rows)
    assert {r.batch for r in warm} == {1, 4, 8} and all(r.warmup_iterations == 2 for r in warm)
    exp = s.data["experiments"]["batch-sweep"]
    assert exp["drawn_order"] == ["batch-1", "batch-4", "batch-8"] * 5  # R5: stored
    assert exp["scope"] == "processing" and exp["protocol"]["tolerance"] == 0.01
    revs = {(r.corpus_revision, r.model_revision, r.tokenizer_revision) for r in rows}
    assert len(revs) == 1 and all(v and len(v) == 64 for v in next(iter(revs)))
    assert s.data["environment"]["device"] == "cpu"
    summary = summarize(s.results.read()).to_dicts()
    w = [x for x in summary if x["phase"] == "warm"]
    assert len(w) == 3 and all(x["n"] == 5 and x["p95_seconds"] is None for x in w)  # R6
    events = [r["event"] for r in s.read_journal()]
    assert "experiment_finished" in events and events.count("run_started") == 18
    # outputs and validation archived (V8)
    out = s.runs_dir / "batch-sweep" / "batch-4" / "warm-5.jsonl"
    first = json.loads(out.read_text().splitlines()[0])
    assert set(first) == {"id", "label"}
    assert (s.validation_dir / "batch-sweep" / "batch-4" / "warm-5.toml").exists()
    assert not (s.folder / ".run.lock").exists()
    _assert_private(s.folder)  # the corpus, the model and the outputs too


def _assert_private(folder: Path) -> None:
    """Every folder under ``folder`` is 0700 and every file 0600, as the guide promises."""
    import stat

    modes = {str(p.relative_to(folder)): stat.S_IMODE(p.lstat().st_mode)
             for p in [folder, *folder.rglob("*")] if not p.is_symlink()}
    wrong = {k: oct(m) for k, m in modes.items()
             if m != (0o700 if (folder / k).is_dir() else 0o600)}
    assert wrong == {}, wrong


def test_r1_demo_reopen_keeps_data_and_device_change_forks(sessions_root: Path) -> None:
    from gpusession.bench.demo import prepare_demo

    # a stand-in model so no training runs here (the end-to-end test trains the real one)
    from gpusession.core.folder.package import Package
    from gpusession.core.records.results import ResultRow

    Session.create(sessions_root, "demo", package=Package("RTX A5000", 1, 7))
    models = sessions_root / "demo" / "models"
    models.mkdir(parents=True)
    (models / "bbc-news.pt").write_bytes(b"stand-in")
    import io

    os.chmod(models / "bbc-news.pt", 0o644)  # as a training subprocess leaves it
    s, exp_id = prepare_demo(sessions_root, None, out=io.StringIO())
    assert exp_id == "batch-sweep"
    _assert_private(s.folder)
    eval_path = s.folder / "corpus" / "eval.jsonl"
    assert sum(1 for _ in eval_path.open()) == 1000
    s.results.append(ResultRow(experiment_id="batch-sweep", phase="warm", elapsed_seconds=0.5))
    before = eval_path.read_bytes()
    s2, again = prepare_demo(sessions_root, None, out=io.StringIO())
    assert again == "batch-sweep"
    assert len(s2.results.rows()) == 1 and eval_path.read_bytes() == before
    assert s2.data["demo"]["corpus_revision"] == s.data["demo"]["corpus_revision"]
    _, forked = prepare_demo(sessions_root, "cuda", out=io.StringIO())
    assert forked == "batch-sweep-2"  # the device is a fixed setting (R1)
