"""`validate --session` makes the verdict count: one results row, distinct corpora (K3, K4)."""

from __future__ import annotations

import json
from pathlib import Path


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
    r = run_cli("validate", "--corpus", str(corpus), "--output", str(good), "--classes", "a,b",
                "--threshold", "0.9", "--session", "vis")
    assert r.returncode == 0, r.stderr
    assert "distinct accepted corpora in session vis: 1" in r.stdout
    show = json.loads(run_cli("show", "vis", "--json").stdout)
    assert show["runs"] == 1 and show["accepted_unique_corpora"] == 1
    cost = run_cli("cost", "--session", "vis", "--json")
    assert cost.returncode == 0, cost.stderr
    data = json.loads(cost.stdout)
    assert data["accepted_unique"] == 1 and data["cost_per_accepted_usd_minor"] == 5500


def test_k4_the_same_corpus_validated_twice_counts_once(run_cli, sessions_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    corpus, good = _files(tmp_path, 10)
    for _ in range(2):
        assert run_cli("validate", "--corpus", str(corpus), "--output", str(good), "--classes", "a,b",
                       "--session", "vis").returncode == 0
    other_corpus, other_good = _files(tmp_path, 12)
    assert run_cli("validate", "--corpus", str(other_corpus), "--output", str(other_good), "--classes",
                   "a,b", "--session", "vis").returncode == 0
    show = json.loads(run_cli("show", "vis", "--json").stdout)
    assert show["runs"] == 3 and show["accepted_unique_corpora"] == 2


def test_v1_rejected_validate_keeps_its_row_and_counts_nothing(run_cli, sessions_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "vis")
    corpus, bad = _files(tmp_path, 10, wrong=5)
    r = run_cli("validate", "--corpus", str(corpus), "--output", str(bad), "--classes", "a,b",
                "--threshold", "0.9", "--session", "vis")
    assert r.returncode == 3
    from gpusession.core.results import ResultsFile

    rows = ResultsFile(sessions_root / "vis" / "resultats-bruts.csv").rows()
    assert len(rows) == 1
    row = rows[0]
    assert row.experiment_id == "validate" and row.corpus_accepted is False
    assert row.elapsed_seconds is None  # not measured, never 0 (C3)
    assert row.expected_ids == 10 and row.observed_ids == 10
    assert json.loads(run_cli("show", "vis", "--json").stdout)["accepted_unique_corpora"] == 0


def test_run_without_experiment_points_to_experiment_define(run_cli) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "x")
    r = run_cli("run", "x", "--headless")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "gpusession experiment x define" in r.stderr


def test_s6_gpu_provisioned_event_says_how_to_move_the_package_start(run_cli) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "x", "--gpu", "RTX A5000", "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z")
    r = run_cli("order", "x", "event", "gpu-provisioned", "--source", "tracking", "--at", "2026-11-29T18:00:00Z")
    assert r.returncode == 0, r.stderr
    assert "gpusession package x --start 2026-11-29T18:00:00Z" in r.stdout
    r = run_cli("order", "x", "event", "gpu-provisioned", "--source", "tracking", "--at", "2026-11-29T10:00:30Z")
    assert "--start" not in r.stdout
