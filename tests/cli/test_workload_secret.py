"""H-35: a secret in a workload's exception and stderr never reaches the CSV notes, the
journal, the report or the terminal; the failure itself is still said."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_workloads import with_tests_on_path, write_corpus
from helpers import cli
from secret_workloads import HEX_KEY, PEM_BODY, SEED

from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}


@pytest.mark.slow
@pytest.mark.torch
def test_h35_a_key_in_a_workloads_exception_is_masked_everywhere(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=8, words=5)
    define_experiment(session, Experiment(
        id="leak", workload="secret_workloads:KeyInException",
        corpus=str(corpus.relative_to(session.folder)), varied="batch", values=(4,),
        runs_per_variant=1, warmup_iterations=0, cold_runs_per_variant=0, protocol=PROTOCOL,
        device="cpu"))
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "leak",
                         "--headless")
    code_r, out_r, err_r = cli(capsys, sessions_root, "report", session.name)
    report = next(session.folder.glob("report*.md")).read_text(encoding="utf-8")
    csv_text = session.results.path.read_text(encoding="utf-8")
    journal_text = session.journal_path.read_text(encoding="utf-8")
    never = [HEX_KEY, HEX_KEY[:16], *PEM_BODY, " ".join(SEED[3:9]), "\n".join(SEED[3:9])]
    for where, text in (("terminal", out + err + out_r + err_r), ("csv", csv_text),
                        ("journal", journal_text), ("report", report)):
        assert not [p[:12] for p in never if p in text], where
    assert "ValueError: key [HIDDEN: private key]" in csv_text  # the failure is still said
    assert "[HIDDEN: private key]" in out + err
    assert "[HIDDEN: " in journal_text
    assert code in (0, 1, 3), err
    assert code_r == 0, err_r
    stderr = [r for r in session.read_journal() if r.get("event") == "worker_stderr"]
    # the key block and the seed after it are one hidden span: nothing of either is left
    assert stderr and any("[HIDDEN: private key]" in ln for r in stderr for ln in r["lines"])
