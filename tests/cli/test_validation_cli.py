"""``gpusession validate`` through a subprocess: exit codes 0 / 3 / 2, JSON, session archive."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from helpers import one_line

from gpusession.core.files.textio import MAX_LINE_BYTES
from gpusession.core.files.tomlio import read_toml
from gpusession.core.folder.session import Session

Run = Callable[..., CompletedProcess[str]]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\n001,a\n002,a\n003,b\n004,b\n005,b\n")
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps({"id": f"00{i}", "label": lab}) + "\n" for i, lab in
                            zip(range(1, 6), "aabbb", strict=True)))
    h13 = tmp_path / "h13.jsonl"
    h13.write_text("".join(json.dumps({"id": f"00{i}", "label": lab}) + "\n" for i, lab in
                           zip(range(1, 6), "aabbc", strict=True)))
    return {"corpus": corpus, "good": good, "h13": h13, "tmp": tmp_path}


def test_v1_cli_accepted_exits_0_with_readable_verdict(run_cli: Run, files: dict[str, Path]) -> None:
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["good"]))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("corpus ACCEPTED")
    for word in ("IDs      PASS", "format   PASS", "quality  PASS", "overlap  SKIP"):
        assert word in p.stdout
    assert "taken from the corpus labels because --classes was not given" in p.stdout


def test_h13_cli_undeclared_class_rejects_with_exit_3(run_cli: Run, files: dict[str, Path]) -> None:
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["h13"]), "--classes", "a,b")
    assert p.returncode == 3, p.stderr
    assert p.stdout.startswith("corpus REJECTED: format failed")
    assert 'line 5: label "c" is not a declared class' in p.stdout


def test_h13_cli_json_with_declared_c_gives_macro_f1_0_6(run_cli: Run, files: dict[str, Path]) -> None:
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["h13"]),
                "--classes", "a,b,c", "--threshold", "0.6", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(p.stdout)
    assert data["quality"]["macro_f1"] == pytest.approx(0.6)
    assert data["label_set"] == ["a", "b", "c"] and data["corpus_accepted"] is True
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["h13"]),
                "--classes", "a,b,c", "--threshold", "0.7", "--tolerance", "0.05")
    assert p.returncode == 3 and "quality  FAIL" in p.stdout


@pytest.mark.slow
def test_v7_cli_train_overlap_rejects(run_cli: Run, files: dict[str, Path]) -> None:
    train = files["tmp"] / "train.txt"
    train.write_text("003\nt9\n")
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["good"]), "--train-ids", str(train))
    assert p.returncode == 3
    assert "overlap  FAIL" in p.stdout and "'003' is in both evaluation and training" in p.stdout


@pytest.mark.slow
def test_cli_unusable_input_exits_2_with_one_line(run_cli: Run, files: dict[str, Path]) -> None:
    p = run_cli("validate", "--corpus", str(files["tmp"] / "missing.csv"), "--predictions", str(files["good"]))
    assert p.returncode == 2 and "file not found" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["good"]), "--threshold", "2")
    assert p.returncode == 2 and "threshold" in p.stderr
    ids = files["tmp"] / "ids.txt"
    ids.write_text("001\n")
    p = run_cli("validate", "--corpus", str(ids), "--predictions", str(files["good"]))
    assert p.returncode == 2 and "--classes" in p.stderr


@pytest.mark.slow
def test_v8_cli_session_archives_report_without_overwriting(
    run_cli: Run, files: dict[str, Path], sessions_root: Path
) -> None:
    Session.create(sessions_root, "demo")
    args = ("validate", "--threshold", "0.9", "--corpus", str(files["corpus"]), "--predictions", str(files["good"]), "--session", "demo")
    assert run_cli(*args).returncode == 0
    p = run_cli(*args)
    assert p.returncode == 0 and "report written" in p.stdout
    folder = sessions_root / "demo" / "validation"
    assert (folder / "validate-good.toml").exists() and (folder / "validate-good-2.toml").exists()
    assert (folder / "validate-good-2.missing.csv").exists()
    assert (folder / "validate-good.output.jsonl").read_bytes() == files["good"].read_bytes()
    assert read_toml(folder / "validate-good.toml")["corpus_accepted"] is True
    events = [r for r in Session.open(sessions_root, "demo").read_journal() if r["event"] == "validation"]
    assert [e["report"] for e in events] == ["validation/validate-good.toml", "validation/validate-good-2.toml"]
    assert events[0]["corpus_accepted"] is True


def test_v6_cli_names_the_metric_for_people_json_keeps_its_id(run_cli: Run, files: dict[str, Path]) -> None:
    """The human text says "macro-F1" (the term), never the id ``macro_f1``; ``--json``
    keeps the id, which scripts read."""
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["good"]))
    assert p.returncode == 0, p.stderr
    assert "quality  PASS  macro-F1 = 1.0000 ≥ 0.9000" in p.stdout and "macro_f1" not in p.stdout
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(files["good"]), "--json")
    assert json.loads(p.stdout)["quality"]["metric"] == "macro_f1"
    from gpusession.core.records.summary import metric_words  # every metric has its human name
    from gpusession.core.validation import METRICS

    assert {m: metric_words(m) for m in METRICS} == {"macro_f1": "macro-F1", "accuracy": "accuracy"}


@pytest.mark.slow
@pytest.mark.parametrize("which", ["output", "corpus"])
def test_v4_fifo_or_device_is_refused_not_read(
        run_cli: Run, files: dict[str, Path], which: str) -> None:
    """A FIFO hung forever, /dev/zero ended in a MemoryError: both are refused at once."""
    fifo = files["tmp"] / "pipe.jsonl"
    os.mkfifo(fifo)
    args = {"corpus": str(files["corpus"]), "output": str(files["good"])}
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a character device")):
        args[which] = str(path)
        p = run_cli("validate", "--corpus", args["corpus"], "--predictions", args["output"], timeout=60)
        assert p.returncode == 2, p.stderr
        line = one_line(p.stderr)
        assert f"{path}: is {kind}" in line and "not a regular file" in line, line
        assert "Traceback" not in p.stderr


def test_v4_a_line_over_the_limit_is_refused_with_file_line_and_limit(
        run_cli: Run, files: dict[str, Path]) -> None:
    out = files["tmp"] / "long.jsonl"
    with open(out, "wb") as fh:
        fh.write(b'{"id": "001", "label": "a"}\n{"id": "002", "label": "')
        fh.write(b"x" * (MAX_LINE_BYTES + 1) + b'"}\n')
    p = run_cli("validate", "--corpus", str(files["corpus"]), "--predictions", str(out))
    assert p.returncode == 2, p.stderr
    line = one_line(p.stderr)
    assert line.startswith(f"gpusession: error: {out}:2: ") and "16 MiB" in line, line
    assert f"{MAX_LINE_BYTES:,} bytes" in line
