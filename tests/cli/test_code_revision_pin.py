"""A changed program is never pooled with the old one's runs (R10, S7).

The code revision of a command out of git is a digest of the program files it names
(``sha256:<12 hex>``), recorded as the worker observed it (the rows' ``code=``,
``experiments.<id>.environment.code_revision``). A run appending to an experiment whose
measured rows were run with another revision is refused before any run, one line naming
the experiment, both revisions and the way to a new experiment id; an unchanged program
still appends, and a program whose every run failed (nothing measured) may be fixed.
Real command workloads: a shell script in the session folder, run by ``sh``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers import cli

from gpusession.bench.program_digest import command_code_revision, files_digest, program_files
from gpusession.core.events import RunStartedRecord
from gpusession.core.folder.session import Session
from gpusession.core.folder.session_toml import read_session_toml

FAST = "sleep 0\n"
EDITED = "sleep 0.01\n"
DIGEST = re.compile(r"code=(sha256:[0-9a-f]{12})(;|$)")


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session, script: str) -> None:
    (s.folder / "slow.sh").write_text(script)
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "slow", "--workload",
                       "command", "--values", "1", "--runs", "2", "--warmup", "0", "--cold-runs", "0",
                       "--command", "sh slow.sh {output}")
    assert code == 0, err


def _kept(s: Session) -> object:
    return read_session_toml(s.session_toml)[0]["experiments"]["slow"]["environment"].get("code_revision")


def test_r10_a_program_out_of_git_is_recorded_by_its_digest(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, FAST)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    expected = files_digest([("slow.sh", session.folder / "slow.sh")])
    assert expected is not None and _kept(session) == expected
    notes = session.results.read()["notes"].to_list()
    assert len(notes) == 2 and all((m := DIGEST.search(n or "")) and m.group(1) == expected for n in notes), notes


def test_s7_an_edited_program_is_refused_before_any_run(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, FAST)
    assert cli(capsys, sessions_root, "run", session.name, "--headless")[0] == 0
    old = _kept(session)
    (session.folder / "slow.sh").write_text(EDITED)
    csv_before = session.results.path.read_bytes()
    started_before = sum(isinstance(r, RunStartedRecord) for r in session.journal_records())
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 2, out[-2000:] + err[-2000:]
    line = err.strip().splitlines()[-1]
    new = files_digest([("slow.sh", session.folder / "slow.sh")])
    assert "slow" in line and f"{old} → {new}" in line and "2 measured row(s)" in line, line
    assert f"gpusession experiment {session.name} define --id NEW" in line and "nothing was run" in line
    assert session.results.path.read_bytes() == csv_before  # nothing appended
    assert sum(isinstance(r, RunStartedRecord) for r in session.journal_records()) == started_before
    (session.folder / "slow.sh").write_text(FAST)  # the old program back: it appends again
    assert cli(capsys, sessions_root, "run", session.name, "--headless")[0] == 0
    assert session.results.read().height == 4


def test_r10_an_unchanged_program_still_appends(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, FAST)
    for _ in range(2):
        code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
        assert code == 0, out[-2000:] + err[-2000:]
    assert session.results.read().height == 4


def test_s7_a_program_whose_every_run_failed_may_be_fixed(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _define(capsys, sessions_root, session, 'echo "CUDA out of memory" >&2\nexit 1\n')
    assert cli(capsys, sessions_root, "run", session.name, "--headless")[0] == 3  # D3: the first run failed
    (session.folder / "slow.sh").write_text(FAST)  # nothing measured: nothing to pool with
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    frame = session.results.read()
    assert frame.height == 1 + 2 and frame["elapsed_seconds"].null_count() == 1


def test_r10_program_files_are_the_words_naming_files(tmp_path: Path) -> None:
    (tmp_path / "score.py").write_text("print(1)\n")
    (tmp_path / "helpers.sh").write_text("true\n")
    (tmp_path / "count").write_text("x\n")  # state the command writes: not its code
    files = program_files(["python3", "score.py", "--lib", "helpers.sh", "count", "{output}", "missing.py",
                           "score.py"], tmp_path)
    assert [w for w, _ in files] == ["score.py", "helpers.sh"]  # each once; the interpreter, state, placeholders not
    tool = tmp_path / "predict"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert [w for w, _ in program_files([str(tool), "count"], tmp_path)] == [str(tool)]
    assert program_files(["python3", "-m", "pkg", "{corpus}"], tmp_path) == []
    assert command_code_revision(["python3", "-m", "pkg"], tmp_path, None) is None  # unknown: not compared


def test_r10_a_dirty_git_tree_adds_the_digest_so_two_edits_differ(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                       check=True, capture_output=True)

    (tmp_path / "run.sh").write_text(FAST)
    git("init", "-q")
    git("add", "run.sh")
    git("commit", "-q", "-m", "one")
    argv = ["sh", "run.sh"]
    clean = command_code_revision(argv, tmp_path, str(tmp_path))
    assert clean is not None and re.fullmatch(r"[0-9a-f]{7,}", clean), clean
    (tmp_path / "run.sh").write_text(EDITED)
    first = command_code_revision(argv, tmp_path, str(tmp_path))
    (tmp_path / "run.sh").write_text("sleep 0.02\n")
    second = command_code_revision(argv, tmp_path, str(tmp_path))
    assert first and second and first.startswith(f"{clean}-dirty+sha256:") and first != second
