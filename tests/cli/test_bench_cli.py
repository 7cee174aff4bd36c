"""``gpusession experiment NAME define|list`` (R1, R2, V5) from the shell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import write_corpus

from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow


@pytest.mark.slow
def test_r1_experiment_define_list_and_fork_after_measurement(sessions_root: Path, run_cli: Any) -> None:
    s = Session.create(sessions_root, "x")
    write_corpus(s.folder / "corpus.jsonl")
    args = ["experiment", "x", "define", "--id", "sweep", "--workload", "mypkg.wl:make",
            "--corpus", "corpus.jsonl", "--values", "1,4,8", "--classes", "a,b", "--threshold", "0.9",
            "--tolerance", "0.01", "--param", "width=64", "--scope", "full-chain"]
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    listed = run_cli("experiment", "x", "list", "--json")
    data = json.loads(listed.stdout)["experiments"]
    assert data[0]["id"] == "sweep" and data[0]["values"] == [1, 4, 8]
    assert data[0]["params"] == {"width": 64} and data[0]["scope"] == "full-chain"
    assert data[0]["protocol"]["classes"] == ["a", "b"]
    s.results.append(ResultRow(experiment_id="sweep", phase="warm", elapsed_seconds=1.0))
    res2 = run_cli(*args[:-2], "--scope", "processing")
    assert res2.returncode == 0 and "defined as sweep-2" in res2.stdout
    text = run_cli("experiment", "x", "list").stdout
    assert "sweep:" in text and "sweep-2:" in text


@pytest.mark.slow
def test_experiment_define_bad_input_is_one_line_and_changes_nothing(sessions_root: Path, run_cli: Any) -> None:
    s = Session.create(sessions_root, "x")
    before = s.session_toml.read_bytes()
    for extra, needle in (
        (["--values", "1,x"], "values"),
        (["--values", "1", "--corpus", "missing.jsonl"], "corpus"),
        (["--values", "1", "--classes", "a,a", "--threshold", "0.9"], "protocol.classes"),
        (["--values", "1", "--param", "novalue"], "KEY=VALUE"),
        (["--values", "1"], "workload bbc-news needs --param model_dir=DIR"),
    ):
        res = run_cli("experiment", "x", "define", "--id", "e", "--workload", "bbc-news", *extra)
        assert res.returncode == 2, (extra, res.stderr)
        assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert s.session_toml.read_bytes() == before


def test_s7_run_while_another_process_runs_says_so_first_and_exits_1(
    sessions_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second ``run`` on a session says at once that another process is running and
    exits 1 (a failure, not bad input), before printing anything about appending rows."""
    import subprocess
    import sys

    from gpusession.cli import main
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.folder.session import Session

    s = Session.create(sessions_root, "busy")
    define_experiment(s, Experiment(id="e", workload="synthetic-mlp", values=(1,)))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (s.folder / ".run.lock").write_text(str(other.pid))
        code = main(["--sessions-dir", str(sessions_root), "run", "busy", "--experiment", "e",
                     "--headless"])
        out, err = capsys.readouterr()
        assert code == 1
        assert f"pid {other.pid}" in err and "nothing was run" in err
        assert "appending" not in out and "running e" not in out
        assert s.results.rows() == []
    finally:
        other.kill()
        other.wait()


def test_run_help_states_the_true_exit_rule(run_cli: Any) -> None:
    p = run_cli("run", "--help")
    assert p.returncode == 0
    text = " ".join(p.stdout.split())
    assert "Exit 0 only when every scheduled run ran and no incident was recorded" in text
    assert "Exit 0 when every scheduled run ran," not in text


@pytest.mark.parametrize(("completed", "cancelled", "incidents", "words"), [
    (True, False, [], "experiment complete, no incident (exit 0)"),
    (True, False, ["x"], "experiment complete, with 1 incident (exit 1: see the incidents above)"),
    (False, False, ["x", "y"], "experiment INCOMPLETE, 2 incidents (exit 1: see the incidents above)"),
    (False, True, [], "experiment cancelled, no incident (exit 1)"),
])
def test_final_line_says_why_the_exit_code(
        completed: bool, cancelled: bool, incidents: list[str], words: str) -> None:
    from types import SimpleNamespace

    from gpusession.commands.run_cmds import outcome_words

    outcome = SimpleNamespace(completed=completed, cancelled=cancelled, incidents=incidents)
    code = 0 if completed and not incidents else 1  # the rule cmd_run returns
    assert outcome_words(outcome, code) == words
