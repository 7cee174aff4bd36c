"""`validate --session` makes the verdict count: one results row, distinct corpora (K3, K4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _files(tmp: Path, n: int, *, wrong: int = 0) -> tuple[Path, Path]:
    corpus = tmp / f"corpus-{n}.csv"
    corpus.write_text("id,label\n" + "".join(f"v{i:03d},{'a' if i % 2 else 'b'}\n" for i in range(n)))
    out = tmp / f"out-{n}-{wrong}.jsonl"
    lines = []
    for i in range(n):
        label = ("a" if i % 2 else "b") if i >= wrong else ("b" if i % 2 else "a")
        lines.append(json.dumps({"id": f"v{i:03d}", "label": label}))
    out.write_text("\n".join(lines) + "\n")
    return corpus, out


def test_k3_accepted_validate_in_a_session_counts_for_the_cost(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7").returncode == 0
    corpus, good = _files(tmp_path, 10)
    r = run_cli("validate", "--corpus", str(corpus), "--predictions", str(good), "--classes", "a,b",
                "--threshold", "0.9", "--session", "vis")
    assert r.returncode == 0, r.stderr
    assert "distinct accepted corpora in session vis: 1" in r.stdout
    show = json.loads(run_cli("show", "vis", "--json").stdout)
    assert show["result_rows"] == 1 and show["accepted_corpora"] == 1
    cost = run_cli("cost", "--session", "vis", "--json")
    assert cost.returncode == 0, cost.stderr
    data = json.loads(cost.stdout)
    assert data["accepted_count"] == data["accepted_corpora"] == show["accepted_corpora"] == 1
    assert data["cost_per_accepted_usd_minor"] == 5500


@pytest.mark.slow
def test_k4_the_same_corpus_validated_twice_counts_once(run_cli, sessions_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    corpus, good = _files(tmp_path, 10)
    for _ in range(2):
        assert run_cli("validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(good), "--classes", "a,b",
                       "--session", "vis").returncode == 0
    other_corpus, other_good = _files(tmp_path, 12)
    assert run_cli("validate", "--threshold", "0.9", "vis", "--corpus", str(other_corpus), "--predictions", str(other_good),
                   "--classes", "a,b").returncode == 0  # the session as first argument, as elsewhere
    show = json.loads(run_cli("show", "vis", "--json").stdout)
    assert show["result_rows"] == 3 and show["accepted_corpora"] == 2


@pytest.mark.slow
def test_v1_rejected_validate_keeps_its_row_and_counts_nothing(run_cli, sessions_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "vis")
    corpus, bad = _files(tmp_path, 10, wrong=5)
    r = run_cli("validate", "--corpus", str(corpus), "--predictions", str(bad), "--classes", "a,b",
                "--threshold", "0.9", "--session", "vis")
    assert r.returncode == 3
    from gpusession.core.records.results import ResultsFile

    rows = ResultsFile(sessions_root / "vis" / "resultats-bruts.csv").rows()
    assert len(rows) == 1
    row = rows[0]
    assert row.experiment_id == "validate" and row.corpus_accepted is False
    assert row.elapsed_seconds is None  # not measured, never 0 (C3)
    assert row.expected_ids == 10 and row.observed_ids == 10
    assert json.loads(run_cli("show", "vis", "--json").stdout)["accepted_corpora"] == 0


def test_run_without_experiment_points_to_experiment_define(run_cli) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "x")
    r = run_cli("run", "x", "--headless")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "gpusession experiment x define" in r.stderr


@pytest.mark.slow
def test_s6_gpu_provisioned_event_says_how_to_move_the_package_start(run_cli) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "x", "--gpu", "RTX A5000", "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z")
    r = run_cli("order", "x", "event", "gpu-provisioned", "--source", "tracking", "--at", "2026-11-29T18:00:00Z")
    assert r.returncode == 0, r.stderr
    assert "gpusession package x --start 2026-11-29T18:00:00Z" in r.stdout
    r = run_cli("order", "x", "event", "gpu-provisioned", "--source", "tracking", "--at", "2026-11-29T10:00:30Z")
    assert "--start" not in r.stdout


@pytest.mark.slow
def test_v1_standalone_validation_shown_as_accepted_or_rejected_never_failed(  # type: ignore[no-untyped-def]
        run_cli, sessions_root: Path, tmp_path: Path) -> None:
    """`show` and the report say what a `validate --session` row is."""
    run_cli("new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    corpus, good = _files(tmp_path, 10)
    _, bad = _files(tmp_path, 10, wrong=5)
    assert run_cli("validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(good), "--classes", "a,b",
                   "--session", "vis", "--name", "good").returncode == 0
    assert run_cli("validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(bad), "--classes", "a,b",
                   "--threshold", "0.9", "--session", "vis", "--name", "bad").returncode == 3
    show = run_cli("show", "vis")
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    listed = lines[lines.index("validations (`gpusession validate`, not timed):"):]
    assert not any(ln.startswith("validate ") for ln in lines)  # never an experiment "validate"
    good_line = next(ln for ln in listed if ln.startswith("good "))
    bad_line = next(ln for ln in listed if ln.startswith("bad "))
    assert good_line.rstrip().endswith("accepted") and "macro-F1 1.000" in good_line
    assert "REJECTED (quality " in bad_line and "below the floor 0.9)" in bad_line
    assert "failed" not in show.stdout and "None" not in show.stdout
    listed_json = json.loads(run_cli("show", "vis", "--json").stdout)["summary"]
    assert {(r["variant_id"], r["validation"], r["verdict"]) for r in listed_json} >= {("good", True, "accepted")}
    report = run_cli("report", "vis")
    assert report.returncode == 0, report.stderr
    text = (sessions_root / "vis" / "report.md").read_text(encoding="utf-8")
    assert "| good | macro-F1 1.000 | accepted |" in text
    results = text.split("## 1.")[1].split("## 2.")[0]
    assert "| bad | macro-F1" in results and "| REJECTED (quality " in results
    assert "validation good" in text.split("Validation verdicts")[1]  # listed as a validation
    assert "failed (kept" not in results
    assert "None" not in text


@pytest.mark.slow
def test_r10_a_validation_row_is_never_the_last_run(run_cli, sessions_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Device, memory and order-match evidence never come from a validation row."""
    from gpusession.core.folder.session import Session
    from gpusession.core.records.results import ResultRow
    from gpusession.core.retrieval.evidence import last_run

    run_cli("new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    s = Session.open(sessions_root, "vis")
    s.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                               run_index=1, device="cuda:0", gpu_model="NVIDIA RTX A5000",
                               elapsed_seconds=0.5))
    corpus, good = _files(tmp_path, 10)
    assert run_cli("validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(good), "--classes", "a,b",
                   "--session", "vis").returncode == 0
    lr = last_run(Session.open(sessions_root, "vis"))
    assert lr is not None and lr.experiment_id == "batch-sweep"
    assert lr.distinct("device") == ["cuda:0"]
    empty = tmp_path / "only"
    run_cli("--sessions-dir", str(empty), "new", "v2")
    assert run_cli("--sessions-dir", str(empty), "validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions",
                   str(good), "--classes", "a,b", "--session", "v2").returncode == 0
    assert last_run(Session.open(empty, "v2")) is None  # a validation alone: no run yet


def test_c4_a_validation_row_ends_with_the_record_saying_nothing_was_timed(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    from helpers import cli

    from gpusession.core.folder.session import Session
    from gpusession.core.records.record_notes import record_items

    assert cli(capsys, sessions_root, "new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    corpus, good = _files(tmp_path, 10)
    code, _, err = cli(capsys, sessions_root, "validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(good),
                       "--classes", "a,b", "--tolerance", "0.05", "--session", "vis")
    assert code == 0, err
    [row] = Session.open(sessions_root, "vis").results.rows()
    items = record_items(row.notes)
    assert items == {"scope": "not timed", "code": "unknown",
                     "tolerance": "0.05 below threshold 0.9 (macro_f1)"}, row.notes  # the default, said


def test_v5_validate_session_without_threshold_is_refused_and_nothing_written(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    """A row that counts toward the cost holds only a threshold a person chose (seed §1)."""
    from helpers import cli, one_line

    from gpusession.core.folder.session import Session

    assert cli(capsys, sessions_root, "new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    session = Session.open(sessions_root, "vis")
    journal = session.journal_path.read_bytes()
    corpus, good = _files(tmp_path, 10)
    code, _, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--predictions", str(good),
                       "--classes", "a,b", "--session", "vis")
    assert code == 2
    assert "--threshold" in one_line(err) and "counts toward the cost" in err
    assert not session.results.path.exists() or session.results.rows() == []
    assert session.journal_path.read_bytes() == journal
    assert not any(session.validation_dir.glob("*.toml")) if session.validation_dir.exists() else True
    # a one-off check without --session keeps its default, said in the verdict line
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--predictions", str(good),
                         "--classes", "a,b")
    assert code == 0, err
    assert "threshold 0.9 by default: --threshold not given" in out


def test_v5_a_tolerance_not_given_is_stored_as_not_chosen_never_as_0(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    from helpers import cli

    from gpusession.core.folder.session import Session
    from gpusession.core.records.record_notes import record_items

    assert cli(capsys, sessions_root, "new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    corpus, good = _files(tmp_path, 10)
    code, out, err = cli(capsys, sessions_root, "validate", "--threshold", "0.9", "--corpus", str(corpus),
                         "--predictions", str(good), "--classes", "a,b", "--session", "vis")
    assert code == 0, err
    [row] = Session.open(sessions_root, "vis").results.rows()
    assert row.quality_tolerance is None  # an empty cell, not a chosen 0
    assert record_items(row.notes)["tolerance"] == "not chosen (read as 0) below threshold 0.9 (macro_f1)"
    assert ",0.9,," in Session.open(sessions_root, "vis").results.path.read_text(encoding="utf-8")
