"""A worker killed by a SIGKILL gpusession did not send: the incident says what to do.

The runner sends SIGKILL only on a timeout or an interruption (said in their own words);
any other SIGKILL came from outside, most often the kernel's out-of-memory killer. The
incident names the likely sender, where to look, and that a new run keeps the rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_workloads import write_corpus
from helpers import cli

from gpusession.bench.process import outside_kill_advice
from gpusession.core.folder.session import Session

#: A command that ends its own worker (its parent) with SIGKILL, as the OOM killer would.
KILL_WORKER = "import os, signal; os.kill(os.getppid(), signal.SIGKILL)"


def test_outside_kill_advice_only_for_sigkill() -> None:
    assert outside_kill_advice(-9) is not None and "out-of-memory killer" in outside_kill_advice(-9)
    assert outside_kill_advice(-15) is None and outside_kill_advice(1) is None
    assert outside_kill_advice(None) is None


@pytest.mark.slow
def test_a_worker_killed_from_outside_says_where_to_look(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    write_corpus(session.folder / "corpus.jsonl", n=20)
    (session.folder / "kill.py").write_text(KILL_WORKER)
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "killed",
                       "--workload", "command", "--values", "1", "--runs", "1", "--warmup", "0",
                       "--cold-runs", "0", "--corpus", "corpus.jsonl", "--classes", "a,b", "--threshold", "0.9",
                       "--command", f"{sys.executable} {session.folder / 'kill.py'} {{corpus}} {{output}}")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code != 0
    said = out + err
    assert "killed by signal SIGKILL (9)" in said, said[-3000:]
    assert "out-of-memory killer" in said and "dmesg" in said and "rows measured so far stand" in said
    notes = " ".join(n for n in session.results.read()["notes"].to_list() if n)
    assert "out-of-memory killer" in notes, notes
