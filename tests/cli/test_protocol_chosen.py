"""The validation protocol is the person's: no threshold nobody chose, the floor said back (V5, V7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.bench.run_validation import RunValidation
from gpusession.core.experiment.plan import ScheduledRun
from gpusession.core.folder.experiments import get_experiment
from gpusession.core.folder.session import Session


def _fresh(s: Session) -> Session:
    """The session as written by the command (the fixture's object holds what it read)."""
    return Session.open(s.folder.parent, s.name)


def _corpus(folder: Path, ids: range = range(10)) -> None:
    (folder / "c.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": "x", "label": "a" if i % 2 else "b"}) + "\n" for i in ids))


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session, *extra: str) -> tuple[int, str, str]:
    return cli(capsys, root, "experiment", s.name, "define", "--id", "e", "--workload", "synthetic-mlp",
               "--corpus", "c.jsonl", "--values", "1", *extra)


@pytest.mark.parametrize("option", [["--classes", "a,b"], ["--metric", "accuracy"]],
                         ids=["classes", "metric"])
def test_v5_classes_or_metric_without_threshold_is_refused_naming_it(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, option: list[str]) -> None:
    _corpus(session.folder)
    before = session.session_toml.read_bytes()
    code, _, err = _define(capsys, sessions_root, session, *option)
    line = one_line(err)
    assert code == 2 and f"{option[0]} needs --threshold" in line and "your decision" in line, err
    assert session.session_toml.read_bytes() == before  # nothing stored


def test_v5_define_prints_the_floor_and_list_shows_the_reference(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _corpus(session.folder)
    code, out, err = _define(capsys, sessions_root, session, "--classes", "a,b", "--threshold", "0.9")
    assert code == 0, err
    assert "accepted at macro-F1 ≥ 0.90 (tolerance not chosen)" in out
    assert "overlap not checked: no training set given" in out
    code, out, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "r",
                         "--workload", "synthetic-mlp", "--corpus", "c.jsonl", "--values", "1",
                         "--classes", "a,b", "--threshold", "0.5", "--tolerance", "0.01",
                         "--reference-value", "1.0", "--max-degradation", "0.05")
    assert code == 0, err
    code, out, _ = cli(capsys, sessions_root, "experiment", session.name, "list")
    assert "accepted at macro-F1 ≥ 0.50 − 0.01; at most 0.05 below the reference 1.00" in out
    stored = get_experiment(_fresh(session), "r").protocol
    assert stored["reference_value"] == 1.0 and stored["max_degradation"] == 0.05


def _output(path: Path, wrong: int, ids: range = range(10)) -> Path:
    """A prediction file whose first ``wrong`` labels are swapped."""
    path.write_text("".join(json.dumps({"id": f"d{i}", "label": ("b" if i % 2 else "a") if i < wrong
                                        else ("a" if i % 2 else "b")}) + "\n" for i in ids))
    return path


def test_v5_max_degradation_of_define_is_used_by_the_runs_validation(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _corpus(session.folder)
    code, _, err = _define(capsys, sessions_root, session, "--classes", "a,b", "--threshold", "0.5",
                           "--reference-value", "1.0", "--max-degradation", "0.05")
    assert code == 0, err
    check = RunValidation(session, get_experiment(_fresh(session), "e"))
    fields, note = check.validate(_output(session.folder / "o.jsonl", wrong=2),
                                  ScheduledRun("warm", "batch-1", 1, "warm"))
    # macro-F1 0.8 is above the threshold 0.5 but 0.2 below the reference: beyond 0.05
    assert fields["corpus_accepted"] is False and "quality" in (note or ""), (fields, note)


def test_v7_train_ids_of_define_reach_the_overlap_check(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _corpus(session.folder)
    (session.folder / "train.jsonl").write_text(json.dumps({"id": "d3", "text": "x", "label": "a"}) + "\n")
    code, out, err = _define(capsys, sessions_root, session, "--classes", "a,b", "--threshold", "0.5",
                             "--train-ids", "train.jsonl")
    assert code == 0, err
    assert "overlap checked against training train.jsonl" in out
    exp = get_experiment(_fresh(session), "e")
    assert exp.params["train_corpus"] == "train.jsonl"
    fields, note = RunValidation(session, exp).validate(_output(session.folder / "o.jsonl", wrong=0),
                                                         ScheduledRun("warm", "batch-1", 1, "warm"))
    assert fields["corpus_accepted"] is False and "overlap" in (note or ""), (fields, note)


def test_v7_a_report_without_training_set_says_the_overlap_was_not_checked(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _corpus(session.folder)
    code, _, err = _define(capsys, sessions_root, session, "--classes", "a,b", "--threshold", "0.5")
    assert code == 0, err
    check = RunValidation(session, get_experiment(_fresh(session), "e"))
    fields, _ = check.validate(_output(session.folder / "o.jsonl", wrong=0), ScheduledRun("warm", "batch-1", 1, "warm"))
    assert fields["corpus_accepted"] is True
    assert "overlap not checked: no training set given" in check.last_report.verdict_line()


def test_v5_validate_without_threshold_says_its_default_in_the_verdict_line(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    _corpus(tmp_path)
    out_file = _output(tmp_path / "o.jsonl", wrong=0)
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(tmp_path / "c.jsonl"),
                         "--output", str(out_file), "--classes", "a,b")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("corpus ACCEPTED") and "threshold 0.9 by default: --threshold not given" in first
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(tmp_path / "c.jsonl"),
                         "--output", str(out_file), "--classes", "a,b", "--threshold", "0.9")
    assert code == 0 and "by default" not in out.splitlines()[0]


def test_v5_derive_changes_the_reference_or_the_training_set_as_define_names_them(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _corpus(session.folder)
    (session.folder / "train.jsonl").write_text(json.dumps({"id": "t0", "text": "x", "label": "a"}) + "\n")
    code, _, err = _define(capsys, sessions_root, session, "--classes", "a,b", "--threshold", "0.5",
                           "--reference-value", "0.9")
    assert code == 0, err
    for new, item in (("e2", "max-degradation=0.1"), ("e3", "train-ids=train.jsonl")):
        code, _, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", new,
                           "--from", "e", "--set", item)
        assert code == 0, err
    assert get_experiment(_fresh(session), "e2").protocol["max_degradation"] == 0.1
    assert get_experiment(_fresh(session), "e3").params["train_corpus"] == "train.jsonl"
