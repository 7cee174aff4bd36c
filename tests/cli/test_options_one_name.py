"""One name per option where a shell user types it: ``--predictions`` for the file read,
``--out`` for a file written; an older name still works and says the new one once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session

CORPUS = "id,label\n1,a\n2,b\n"
PREDICTIONS = '{"id": "1", "label": "a"}\n{"id": "2", "label": "b"}\n'


def _files(tmp_path: Path) -> tuple[Path, Path]:
    corpus, preds = tmp_path / "corpus.csv", tmp_path / "run.jsonl"
    corpus.write_text(CORPUS, encoding="utf-8")
    preds.write_text(PREDICTIONS, encoding="utf-8")
    return corpus, preds


def test_validate_takes_predictions(sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, preds = _files(tmp_path)
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--predictions", str(preds),
                         "--classes", "a,b", "--threshold", "0.5")
    assert code == 0, err
    assert "note:" not in err
    helptext = cli(capsys, sessions_root, "validate", "--help")[1]
    assert "--predictions FILE" in helptext


def test_validate_output_is_the_older_name_said_once(sessions_root: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    corpus, preds = _files(tmp_path)
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--output", str(preds),
                         "--output", str(preds), "--classes", "a,b", "--threshold", "0.5", "--json")
    assert code == 0, err
    assert err.count("note: --output is now --predictions") == 1, err
    json.loads(out)  # stdout stays JSON: the note is on stderr


def test_export_out_and_its_older_name(sessions_root: Path, session: Session, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.records.results import ResultRow

    session.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1,
                                     elapsed_seconds=0.5))
    target = tmp_path / "h.json"
    code, out, err = cli(capsys, sessions_root, "export", session.name, "--format", "hyperfine-json",
                         "--out", str(target))
    assert code == 0, err and target.is_file()
    code, out, err = cli(capsys, sessions_root, "export", session.name, "--format", "hyperfine-json",
                         "--output", str(tmp_path / "old.json"))
    assert code == 0, err
    assert err.count("note: --output is now --out") == 1


def test_compare_html_needs_out(sessions_root: Path, session: Session, new_session: object,
                                capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = new_session(name="other")  # type: ignore[operator]
    code, _, err = cli(capsys, sessions_root, "compare", session.name, other.name, "--html")
    assert code == 2 and "--html --out FILE" in err
    code, _, err = cli(capsys, sessions_root, "compare", session.name, other.name, "--out", str(tmp_path / "p.html"))
    assert code == 2 and "--html --out FILE" in err
    assert not (tmp_path / "p.html").exists()
