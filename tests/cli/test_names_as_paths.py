"""Names that become paths (``validate --name``, experiment ids) never reach
outside their folder nor the session's own files (S7, V8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import cli
from helpers import digest as tree

from gpusession.core.folder.session import Session


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\n1,a\n2,b\n3,a\n")
    output = tmp_path / "out.csv"
    output.write_text("id,label\n1,a\n2,b\n3,a\n")
    return corpus, output


@pytest.mark.parametrize("name", ["../session", "../../evil", "a/b", ".hidden", ""])
def test_v8_validate_name_is_never_a_path(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, files: tuple[Path, Path], name: str
) -> None:
    Session.create(sessions_root, "t")
    before = tree(sessions_root)
    corpus, output = files
    code, _, err = cli(capsys, sessions_root, "validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions",
                       str(output), "--session", "t", "--name", name)
    assert code == 2 and "--name" in err and len(err.strip().splitlines()) == 1
    assert tree(sessions_root) == before  # session.toml untouched, nothing outside validation/


def test_v8_validate_plain_name_is_written_in_validation(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, files: tuple[Path, Path]
) -> None:
    Session.create(sessions_root, "t")
    corpus, output = files
    code, _, err = cli(capsys, sessions_root, "validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions",
                       str(output), "--session", "t", "--name", "run_1.a-b")
    assert code == 0, err
    assert (sessions_root / "t" / "validation" / "run_1.a-b.toml").is_file()


@pytest.mark.parametrize("exp_id", ["../../evil", "a/b", "a b", "", ".x", "x."])
def test_r1_experiment_id_is_never_a_path(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, exp_id: str
) -> None:
    Session.create(sessions_root, "t")
    before = tree(sessions_root)
    code, _, err = cli(capsys, sessions_root, "experiment", "t", "define", "--id", exp_id,
                       "--workload", "synthetic-mlp", "--values", "1")
    assert code == 2 and "experiment id" in err and len(err.strip().splitlines()) == 1
    assert tree(sessions_root) == before


def test_v5_define_refuses_a_missing_absolute_corpus(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path
) -> None:
    Session.create(sessions_root, "t")
    before = tree(sessions_root)
    code, _, err = cli(capsys, sessions_root, "experiment", "t", "define", "--id", "e",
                       "--workload", "synthetic-mlp", "--values", "1",
                       "--corpus", str(tmp_path / "nowhere.csv"))
    assert code == 2 and "corpus file not found" in err and "nowhere.csv" in err
    assert tree(sessions_root) == before
    real = tmp_path / "c.jsonl"
    real.write_text('{"id": "1", "text": "a b", "label": "a"}\n')
    code, _, err = cli(capsys, sessions_root, "experiment", "t", "define", "--id", "e",
                       "--workload", "synthetic-mlp", "--values", "1", "--corpus", str(real))
    assert code == 0, err


@pytest.mark.parametrize("extra, said", [
    (["--values", "99999999999999999999"], "expected whole numbers from 1 to 2,147,483,647"),
    (["--values", "1", "--nodes", "2"], "none given (--rendezvous HOST:PORT"),
    (["--values", "1", "--corpus", "FIFO"], "is a FIFO (named pipe), not a regular file; give the corpus saved on disk"),
    (["--values", "1", "--corpus", "FOLDER"], "is a folder, expected a corpus"),
], ids=["value-past-int32", "nodes-without-rendezvous", "corpus-fifo", "corpus-folder"])
def test_r1_define_says_what_is_wrong_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path, extra: list[str], said: str
) -> None:
    Session.create(sessions_root, "t")
    fifo, folder = tmp_path / "c.jsonl", tmp_path / "corpus-folder"
    os.mkfifo(fifo)  # defining must never wait for a writer
    folder.mkdir()
    extra = [str(fifo) if x == "FIFO" else str(folder) if x == "FOLDER" else x for x in extra]
    before = tree(sessions_root)
    code, _, err = cli(capsys, sessions_root, "experiment", "t", "define", "--id", "e",
                       "--workload", "synthetic-mlp", *extra)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert tree(sessions_root) == before
