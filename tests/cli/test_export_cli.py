"""``gpusession export NAME --format hyperfine-json``: warm runs in hyperfine's JSON layout,
read back as hyperfine's own scripts read it (R3, R6, D5); session data never overwritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, digest

from gpusession.core.records.results import ResultRow
from gpusession.testing import make_session

#: hyperfine's keys (src/benchmark/benchmark_result.rs) and the JSON types it writes.
NUMBER = (int, float)
KEY_TYPES: dict[str, Any] = {
    "command": str, "mean": NUMBER, "median": NUMBER, "min": NUMBER, "max": NUMBER,
    "times": list, "exit_codes": list, "parameters": dict,
}


def _row(variant: str, batch: int, run: int, elapsed: float | None, *, phase: str = "warm",
         accepted: bool | None = True) -> ResultRow:
    return ResultRow(experiment_id="batch-sweep", variant_id=variant, phase=phase, run_index=run,
                     batch=batch, corpus_revision="sha256:eval-1", ids_match=accepted,
                     format_valid=True if accepted is not None else None, quality_metric="macro_f1",
                     quality_threshold=0.9, quality_value=0.95 if accepted else 0.5,
                     corpus_accepted=accepted, elapsed_seconds=elapsed)


@pytest.fixture
def measured(sessions_root: Path) -> Any:
    """batch-1: warm 0.10, 0.12, 0.11, 0.13, 0.14 s accepted; batch-4: 0.03, 0.05 s rejected;
    batch-8: one warm run of 0.02 s and one failed; a cold run and a load row, never exported."""
    s = make_session(sessions_root, "sweep", runs=5)
    s.results.append(_row("all", 1, 1, 2.5, phase="load", accepted=None))
    s.results.append(_row("batch-1", 1, 1, 0.9, phase="cold"))
    for i, t in enumerate((0.10, 0.12, 0.11, 0.13, 0.14), 1):
        s.results.append(_row("batch-1", 1, i, t))
    for i, t in enumerate((0.03, 0.05), 1):
        s.results.append(_row("batch-4", 4, i, t, accepted=False))
    s.results.append(_row("batch-8", 8, 1, 0.02))
    s.results.append(_row("batch-8", 8, 2, None, accepted=None))
    return s


def _export(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    return cli(capsys, root, "export", "sweep", "--format", "hyperfine-json", *args)


def test_r6_the_export_has_hyperfines_layout_keys_and_types(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any) -> None:
    code, out, err = _export(capsys, sessions_root)
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc) == ["results"]
    results = doc["results"]
    assert [r["command"] for r in results] == ["batch-sweep batch-1", "batch-sweep batch-4",
                                               "batch-sweep batch-8"]
    for r in results:
        assert list(r)[:11] == ["command", "mean", "stddev", "median", "user", "system", "min",
                                "max", "times", "exit_codes", "parameters"]
        for key, kind in KEY_TYPES.items():
            assert isinstance(r[key], kind) and not isinstance(r[key], bool), (key, r[key])
        assert r["stddev"] is None or isinstance(r["stddev"], float)
        assert r["user"] is None and r["system"] is None  # not measured, never 0 (C3)
        assert all(isinstance(t, float) for t in r["times"])
        assert r["exit_codes"] == [0] * len(r["times"])
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in r["parameters"].items())
    one, two, three = results
    # seconds, warm runs only (the load and the cold run are not in the times: R3)
    assert one["times"] == [0.10, 0.12, 0.11, 0.13, 0.14]
    assert one["mean"] == pytest.approx(0.12) and one["median"] == pytest.approx(0.12)
    assert one["stddev"] == pytest.approx(0.015811388300841896)  # sqrt(0.001 / 4): n − 1
    assert (one["min"], one["max"]) == (0.10, 0.14)
    assert one["parameters"] == {"batch": "1"} and three["parameters"] == {"batch": "8"}
    assert two["stddev"] == pytest.approx(0.014142135623730951)  # sqrt(0.0002 / 1)
    assert three["times"] == [0.02] and three["stddev"] is None  # one run: null, as hyperfine
    assert three["gpusession_failed_runs"] == 1


def test_d5_the_verdict_travels_in_an_extra_key(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any) -> None:
    _, out, _ = _export(capsys, sessions_root)
    verdicts = [r["gpusession_verdict"] for r in json.loads(out)["results"]]
    assert verdicts[0] == "accepted"
    assert verdicts[1].startswith("REJECTED (")


def test_r6_hyperfines_advanced_statistics_reading_works(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any, tmp_path: Path) -> None:
    """What scripts/advanced_statistics.py and plot_parametrized.py do with the file."""
    np = pytest.importorskip("numpy")
    target = tmp_path / "sweep.json"
    code, out, err = _export(capsys, sessions_root, "--output", str(target))
    assert code == 0 and str(target) in out, err
    with open(target) as f:
        results = json.load(f)["results"]
    commands = [b["command"] for b in results]
    times = [b["times"] for b in results]
    for command, ts, b in zip(commands, times, results, strict=True):
        assert command and len(ts) >= 1
        assert np.mean(ts) == pytest.approx(b["mean"])
        assert np.median(ts) == pytest.approx(b["median"])
        assert (np.min(ts), np.max(ts)) == (b["min"], b["max"])
        if len(ts) > 1:
            assert np.std(ts, ddof=1) == pytest.approx(b["stddev"])
        p05, p95 = np.percentile(ts, 5), np.percentile(ts, 95)
        assert b["min"] <= p05 <= p95 <= b["max"]
    # plot_parametrized.py: one parameter per benchmark, the same name, a number
    names, values = zip(*(next(iter(b["parameters"].items())) for b in results), strict=True)
    assert set(names) == {"batch"} and [float(v) for v in values] == [1.0, 4.0, 8.0]


def test_r6_an_existing_file_is_never_overwritten_without_force(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any, tmp_path: Path) -> None:
    target = tmp_path / "kept.json"
    target.write_text("mine\n")
    code, _, err = _export(capsys, sessions_root, "--output", str(target))
    assert code == 2 and "--force" in err and len(err.strip().splitlines()) == 1
    assert target.read_text() == "mine\n"
    code, _, err = _export(capsys, sessions_root, "--output", str(target), "--force")
    assert code == 0, err
    assert len(json.loads(target.read_text())["results"]) == 3


def test_r6_the_session_folder_is_never_written_even_with_force(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any) -> None:
    before = digest(measured.folder)
    for target in (measured.results.path, measured.folder / "export.json"):
        code, _, err = _export(capsys, sessions_root, "--output", str(target), "--force")
        assert code == 2 and "session folder" in err, err
    assert digest(measured.folder) == before


def test_r6_a_session_without_warm_runs_is_bad_input(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    make_session(sessions_root, "sweep")
    code, _, err = _export(capsys, sessions_root)
    assert code == 2 and "no measured warm run" in err
