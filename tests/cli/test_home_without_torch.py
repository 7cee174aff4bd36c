"""A Python without torch: the home side works, a Python workload is refused before it runs.

torch is not a dependency of the plain install (the home side needs none; a rented
GPU's own build is never replaced). A Python workload there stops before anything is
printed or measured, in one line that says how to install the build for the machine; a
command workload needs no torch. The refusal is shown for real on a Python without
torch (CI's 3.10 and 3.12 runs) and, here, with torch hidden from the import system.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import write_corpus
from helpers import cli, one_line

from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(params=["hidden", "absent"])
def no_torch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch hidden from ``find_spec`` here, or a Python that really has none."""
    if request.param == "absent":
        if HAS_TORCH:
            pytest.skip("torch is installed in this Python: the real no-torch case runs on CI's 3.10/3.12")
        return
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))


def _exp(session: Session, **kw: Any) -> Experiment:
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    base: dict[str, Any] = dict(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(4,), runs_per_variant=1, cold_runs_per_variant=0,
        warmup_iterations=0, device="cpu",
        protocol={"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.0, "tolerance": 0.0},
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))


def test_a_python_workload_without_torch_stops_before_anything_runs_in_one_line(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], no_torch: None) -> None:
    _exp(session)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--headless")
    assert code == 1 and out == ""
    line = one_line(err)
    assert "not started: the workload fake_workloads:Echo needs torch" in line
    assert "CUDA or ROCm" in line and "pytorch.org" in line and "--workload command" in line
    assert session.results.rows() == []


def test_a_command_workload_runs_without_torch(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], no_torch: None,
        tmp_path: Path) -> None:
    script = tmp_path / "copy.sh"
    script.write_text("#!/bin/sh\ncp \"$1\" \"$2\"\n", encoding="utf-8")
    script.chmod(0o700)
    _exp(session, workload="command", scope="full-chain", params={"command": [str(script), "{corpus}", "{output}"]})
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--headless")
    assert code == 0, out + err
    assert [(r.phase, r.corpus_accepted) for r in session.results.rows()] == [("warm", True)]


def test_a_load_that_fails_on_a_missing_torch_says_how_to_install_it() -> None:
    from gpusession.bench.runner import TORCH_MISSING_ADVICE, torch_missing

    assert torch_missing("ModuleNotFoundError: No module named 'torch'")
    assert not torch_missing("ModuleNotFoundError: No module named 'mymodel'")
    assert not torch_missing(None)
    assert "CUDA or ROCm" in TORCH_MISSING_ADVICE


def test_the_demo_without_torch_says_so_before_it_writes_anything(
        sessions_root: Path, capsys: pytest.CaptureFixture[str], no_torch: None) -> None:
    code, out, err = cli(capsys, sessions_root, "demo", "--headless")
    assert code == 1 and out == ""
    assert "the demo needs torch" in one_line(err) and "pytorch.org" in err
    assert not sessions_root.exists() or not any(sessions_root.iterdir())
