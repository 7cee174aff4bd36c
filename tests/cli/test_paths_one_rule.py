"""One rule for every relative path of an experiment: relative to the session folder.

The corpus, the command's program and file arguments, and path params mean the same
file from whatever directory ``define`` and ``run`` are typed in, and in a pulled copy.
A path found only where it was typed is stored absolute, and ``define`` says so; a
relative program found nowhere is refused at ``define``, not on every run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fake_workloads import write_corpus
from helpers import cli, one_line

from gpusession.core.folder.experiments import get_experiment
from gpusession.core.folder.session import Session

COPY = "import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])\n"


def _define(capsys: pytest.CaptureFixture[str], root: Path, name: str, *extra: str) -> tuple[int, str, str]:
    return cli(capsys, root, "experiment", name, "define", "--id", "e", "--workload", "command",
               "--values", "1", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
               "--classes", "a,b", "--threshold", "0", *extra)


def test_a_relative_program_and_file_argument_are_relative_to_the_session_folder_from_anywhere(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    (session.folder / "tools").mkdir()
    (session.folder / "tools" / "copy.py").write_text(COPY, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # neither define nor run is typed in the session folder
    code, out, err = _define(capsys, sessions_root, session.name, "--corpus", "corpus/eval.jsonl",
                             "--command", f"{sys.executable} tools/copy.py {{corpus}} {{output}}")
    assert code == 0, err
    assert "note:" not in out  # found in the session folder: kept relative
    assert get_experiment(Session.open(sessions_root, session.name), "e").params["command"][1] == "tools/copy.py"
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--headless")
    assert code == 0, out + err
    assert [(r.phase, r.corpus_accepted) for r in session.results.rows()] == [("warm", True)]


def test_a_path_found_only_where_it_was_typed_is_stored_absolute_and_said(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "work"
    (here / "data").mkdir(parents=True)
    write_corpus(here / "data" / "eval.jsonl", n=4, words=3)
    (here / "predict.sh").write_text('#!/bin/sh\ncp "$1" "$2"\n', encoding="utf-8")
    (here / "predict.sh").chmod(0o700)
    monkeypatch.chdir(here)
    code, out, err = _define(capsys, sessions_root, session.name, "--corpus", "data/eval.jsonl",
                             "--command", "./predict.sh {corpus} {output}")
    assert code == 0, err
    exp = get_experiment(Session.open(sessions_root, session.name), "e")
    assert exp.corpus == str(here / "data" / "eval.jsonl")
    assert exp.params["command"][0] == str(here / "predict.sh")
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2 and all("stored as" in n and "relative to the session folder" in n for n in notes)
    monkeypatch.chdir(tmp_path)  # run from elsewhere: the stored paths still hold
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--headless")
    assert code == 0, out + err


def test_a_relative_program_found_nowhere_is_refused_at_define(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    monkeypatch.chdir(tmp_path)
    code, out, err = _define(capsys, sessions_root, session.name, "--corpus", "corpus/eval.jsonl",
                             "--command", "./missing.sh {corpus} {output}")
    assert code == 2
    line = one_line(err)
    assert "./missing.sh" in line and "session folder" in line and "current directory" in line
    assert "e" not in (Session.open(sessions_root, session.name).data.get("experiments") or {})
    assert not os.path.exists(tmp_path / "missing.sh")


def _script(path: Path) -> None:
    path.write_text('#!/bin/sh\ncp "$1" "$2"\n', encoding="utf-8")
    path.chmod(0o700)


@pytest.mark.parametrize("where", ["session folder", "both"])
def test_a_dot_slash_program_in_the_session_folder_is_kept_relative_and_runs(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    _script(session.folder / "predict.sh")
    here = tmp_path / "typed-here"
    here.mkdir()
    if where == "both":
        _script(here / "predict.sh")  # the session folder's copy wins: one rule
    monkeypatch.chdir(here)
    code, out, err = _define(capsys, sessions_root, session.name, "--corpus", "corpus/eval.jsonl",
                             "--command", "./predict.sh {corpus} {output}")
    assert code == 0, err
    assert "note:" not in out
    assert get_experiment(Session.open(sessions_root, session.name), "e").params["command"][0] == "./predict.sh"
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e", "--headless")
    assert code == 0, out + err
    assert [(r.phase, r.corpus_accepted) for r in session.results.rows()] == [("warm", True)]
