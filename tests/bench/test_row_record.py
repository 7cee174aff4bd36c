"""A row states only what gpusession applied or passed, and ends with the record notes (R1, R2, C1, C4)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_workloads import write_corpus
from helpers import cli

from gpusession.bench.row_record import RECORD_KEYS, program_folder, record_words
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.session import Session
from gpusession.core.records.record_notes import record_items, without_record
from gpusession.core.records.results import ResultsFile

#: Copies the corpus's IDs with label "a", and writes its own argv beside the output.
ECHO = """\
import json, sys
corpus, output = sys.argv[1], sys.argv[2]
with open(output + ".argv", "w") as f:
    f.write(" ".join(sys.argv[3:]))
with open(corpus) as src, open(output, "w") as out:
    for line in src:
        if line.strip():
            out.write(json.dumps({"id": json.loads(line)["id"], "label": "a"}) + "\\n")
"""


def _run_command(capsys: pytest.CaptureFixture[str], root: Path, s: Session, script: Path,
                 extra: str, *define: str) -> list[dict[str, object]]:
    write_corpus(s.folder / "corpus.jsonl", n=4)
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "c", "--workload", "command",
                       "--values", "2", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
                       "--corpus", "corpus.jsonl", *define,
                       "--command", f"{sys.executable} {script} {{corpus}} {{output}} {extra}")
    assert code == 0, err
    code, out, err = cli(capsys, root, "run", s.name, "--headless")
    assert code in (0, 1, 3), out[-2000:] + err[-2000:]  # 1: no protocol is an incident
    return [r for r in ResultsFile(s.folder / "resultats-bruts.csv").read().to_dicts() if r["phase"] == "warm"]


def test_c1_a_command_without_precision_or_batch_leaves_them_empty_with_the_note(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    script = session.folder / "echo.py"
    script.write_text(ECHO)
    rows = _run_command(capsys, sessions_root, session, script, "")
    assert rows and all(r["precision"] is None and r["batch"] is None for r in rows), rows
    assert all(r["python_version"] is None and r["torch_version"] is None for r in rows), rows
    notes = str(rows[0]["notes"])
    assert "batch offered in $GPUSESSION_BATCH, not verifiable for a command" in notes, notes
    # a seed nobody passed is no seed=0 (A2): empty, and said to be offered only
    assert all(r["seed"] is None for r in rows), rows
    assert "seed offered in $GPUSESSION_SEED, not verifiable for a command" in notes, notes
    assert "scope=full-chain" in notes and "code=sha256:" in notes, notes  # out of git: the program's digest (R10)
    assert "tolerance=none (no validation protocol)" in notes, notes


def test_c1_a_command_taking_precision_and_batch_receives_and_records_them(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    script = session.folder / "echo.py"
    script.write_text(ECHO)
    rows = _run_command(capsys, sessions_root, session, script, "--batch={batch} {precision}",
                        "--precision", "fp16", "--classes", "a,b", "--threshold", "0.4", "--tolerance", "0.05")
    assert rows and rows[0]["precision"] == "fp16" and rows[0]["batch"] == 2, rows
    argv = next((session.folder / "runs" / "c").rglob("*.argv")).read_text()
    assert argv == "--batch=2 fp16"  # what the row says is what the command received
    notes = str(rows[0]["notes"])
    assert "batch offered in" not in notes and "tolerance=0.05 below threshold 0.4 (macro_f1)" in notes, notes
    assert rows[0]["seed"] is None and "seed offered in $GPUSESSION_SEED, not verifiable for a command" in notes


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed on this machine")
def test_a2_a_command_taking_seed_receives_it_and_its_row_states_it(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    """``{seed}`` fills the seed cell with what the command received; ``--seed`` stays accepted."""
    script = session.folder / "echo.py"
    script.write_text(ECHO)
    rows = _run_command(capsys, sessions_root, session, script, "--seed={seed}", "--seed", "7")
    argv = next((session.folder / "runs" / "c").rglob("*.argv")).read_text()
    assert argv == "--seed=7"
    assert rows and all(r["seed"] == 7 for r in rows), rows
    assert "seed offered in" not in str(rows[0]["notes"])


def test_r1_a_command_records_the_git_revision_of_the_repository_holding_its_program(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    repo = tmp_path / "prog"
    repo.mkdir()
    script = repo / "echo.py"
    script.write_text(ECHO)
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "echo.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert program_folder([sys.executable, str(script)], session.folder) == str(repo.resolve())
    rows = _run_command(capsys, sessions_root, session, script, "")
    assert f"code={head}" in str(rows[0]["notes"]), rows[0]["notes"]


def test_c4_the_record_is_one_parseable_item_per_key() -> None:
    exp = Experiment(id="e", workload="synthetic-mlp", values=(1,), params={"width": 64, "tag": "a;b"},
                     protocol={"classes": ["a", "b"], "metric": "accuracy", "threshold": 0.9, "tolerance": 0.01,
                               "reference_value": 0.95, "max_degradation": 0.02, "output_format": "jsonl"})
    words = record_words(exp, "abc1234-dirty", reported=("device", "torch_version"))
    items = dict(item.split("=", 1) for item in words.split("; "))
    assert list(items) == list(RECORD_KEYS)
    assert items["reported"] == "device torch_version"
    assert "reported=" not in record_words(exp, "abc1234")  # nothing reported: no item
    assert items["scope"] == "processing" and items["code"] == "abc1234-dirty"
    assert items["tolerance"] == "0.01 below threshold 0.9 (accuracy)"
    assert items["reference"] == "0.95 (max_degradation 0.02)"
    assert items["params"] == "width=64 'tag=a,b'"  # a ';' never splits an item
    notes = f"truncated 3 of 10 inputs; {words}; incident: x"
    assert record_items(notes) == items
    assert without_record(notes) == "truncated 3 of 10 inputs; incident: x"  # the report groups on this


#: ECHO, then one JSON line of what it ran on to $GPUSESSION_REPORT (argv[3:] joined: the torch version).
REPORTER = ECHO + """\
import os, platform
with open(os.environ["GPUSESSION_REPORT"], "w") as f:
    f.write(json.dumps({"device": "cpu", "python_version": platform.python_version(),
                        "torch_version": "".join(sys.argv[3:])}) + "\\n")
"""


def test_r10_a_command_reports_its_device_and_versions_into_its_rows(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    import json
    import platform

    script = session.folder / "report.py"
    script.write_text(REPORTER)
    rows = _run_command(capsys, sessions_root, session, script, "2.5.1+cu121", "--warmup", "1")
    assert rows, rows
    for r in rows:
        assert (r["device"], r["python_version"], r["torch_version"]) == (
            "cpu", platform.python_version(), "2.5.1+cu121"), r
        assert record_items(str(r["notes"]))["reported"] == "device python_version torch_version", r["notes"]
    finished = [json.loads(line) for line in (session.folder / "journal.jsonl").read_text().splitlines()
                if '"run_finished"' in line]
    assert finished and all(f["reported"]["torch_version"] == "2.5.1+cu121" for f in finished), finished


def test_r10_a_command_report_refused_leaves_its_cell_empty_and_says_why(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    script = session.folder / "report.py"
    script.write_text(REPORTER)
    rows = _run_command(capsys, sessions_root, session, script, "glpat- DlM8273cWmSrAPCWy5vY")  # joined by it
    assert rows and rows[0]["torch_version"] is None and rows[0]["device"] == "cpu", rows
    notes = str(rows[0]["notes"])
    assert "torch_version refused (it looks like a GitLab token" in notes, notes
    assert "DlM8273c" not in notes and record_items(notes)["reported"] == "device python_version", notes
