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
    code, _, err = _export(capsys, sessions_root, "--out", str(target))
    assert code == 2 and "--force" in err and len(err.strip().splitlines()) == 1
    assert target.read_text() == "mine\n"
    code, _, err = _export(capsys, sessions_root, "--out", str(target), "--force")
    assert code == 0, err
    assert len(json.loads(target.read_text())["results"]) == 3


def test_r6_the_session_folder_is_never_written_even_with_force(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any) -> None:
    before = digest(measured.folder)
    for target in (measured.results.path, measured.folder / "export.json"):
        code, _, err = _export(capsys, sessions_root, "--out", str(target), "--force")
        assert code == 2 and "session folder" in err, err
    assert digest(measured.folder) == before


def test_r6_a_session_without_warm_runs_is_bad_input(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    make_session(sessions_root, "sweep")
    code, _, err = _export(capsys, sessions_root)
    assert code == 2 and "no measured warm run" in err


def _second_experiment(s: Any) -> None:
    """A second sweep, run after batch-sweep: two variants of warm runs."""
    for variant, times in (("ctx-128", (0.20, 0.22, 0.21)), ("ctx-512", (0.40, 0.41, 0.43))):
        for i, t in enumerate(times, 1):
            s.results.append(ResultRow(experiment_id="ctx-sweep", variant_id=variant, phase="warm",
                                       run_index=i, context=int(variant[4:]), elapsed_seconds=t))


def test_r6_one_file_per_experiment_the_last_run_by_default_and_said(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any) -> None:
    _second_experiment(measured)
    code, out, err = _export(capsys, sessions_root)
    assert code == 0, err
    assert [r["command"] for r in json.loads(out)["results"]] == ["ctx-sweep ctx-128", "ctx-sweep ctx-512"]
    assert "exported experiment ctx-sweep, the last one run" in err and "batch-sweep" in err
    code, out, err = _export(capsys, sessions_root, "--experiment", "batch-sweep")
    assert code == 0 and "the last one run" not in err
    assert {r["command"].split()[0] for r in json.loads(out)["results"]} == {"batch-sweep"}
    code, _, err = _export(capsys, sessions_root, "--experiment", "nope")
    assert code == 2 and "--experiment" in err and "ctx-sweep" in err


def test_d7_welch_ttest_reads_a_two_variant_export(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any, tmp_path: Path) -> None:
    """What hyperfine's scripts/welch_ttest.py reads: exactly two results, each with its times."""
    _second_experiment(measured)
    code, out, err = _export(capsys, sessions_root, "--experiment", "ctx-sweep")
    assert code == 0, err
    results = json.loads(out)["results"]
    assert len(results) == 2  # welch_ttest.py compares the two benchmarks of one file
    xs, ys = results[0]["times"], results[1]["times"]
    assert len(xs) == 3 and len(ys) == 3 and all(isinstance(t, float) for t in xs + ys)


def test_r6_csv_and_markdown_in_hyperfines_shapes(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any) -> None:
    code, out, err = cli(capsys, sessions_root, "export", "sweep", "--format", "csv")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "command,mean,stddev,median,user,system,min,max,parameter_batch,gpusession_verdict"
    first = lines[1].split(",")
    assert first[0] == "batch-sweep batch-1" and float(first[1]) == pytest.approx(0.12)
    assert first[4:6] == ["", ""] and first[-2:] == ["1", "accepted"]  # user, system not measured: empty, never 0
    assert lines[2].split(",")[-1].startswith('"REJECTED (') or ",REJECTED (" in lines[2], lines[2]  # D5
    assert lines[3].split(",")[2] == ""  # one run: no stddev
    code, out, err = cli(capsys, sessions_root, "export", "sweep", "--format", "markdown")
    assert code == 0, err
    table = out.splitlines()
    assert table[0] == "| Command | Mean [ms] | Min [ms] | Max [ms] | Relative | Verdict |"
    assert table[1] == "|:---|---:|---:|---:|---:|:---|"
    assert table[2] == "| `batch-sweep batch-1` | 120.0 ± 15.8 | 100.0 | 140.0 | 6.00 | accepted |"
    assert table[3].startswith("| `batch-sweep batch-4` | 40.0 ± 14.1 | 30.0 | 50.0 | 2.00 | REJECTED (")
    assert table[4] == "| `batch-sweep batch-8` | 20.0 | 20.0 | 20.0 | 1.00 | accepted |"
    assert len(table) == 5  # the 1.00 reference was accepted: nothing more to say


def test_d5_a_rejected_fastest_variant_is_said_rejected_in_every_export(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    """The fastest variant, rejected, is the 1.00 reference of the Markdown: said under the
    table and in its row; the CSV and the JSON carry the verdict too."""
    s = make_session(sessions_root, "sweep", runs=2)
    for i, t in enumerate((0.10, 0.12), 1):
        s.results.append(_row("batch-1", 1, i, t))
    for i, t in enumerate((0.02, 0.03), 1):
        s.results.append(_row("batch-8", 8, i, t, accepted=False))
    code, out, err = cli(capsys, sessions_root, "export", "sweep", "--format", "markdown")
    assert code == 0, err
    table = out.splitlines()
    assert table[3].startswith("| `batch-sweep batch-8` | 25.0 ± 7.1 | 20.0 | 30.0 | 1.00 | REJECTED ("), table
    assert table[-1].startswith("The 1.00 reference, `batch-sweep batch-8`, is the fastest, not a variant "
                                "to keep: REJECTED ("), table
    code, out, err = cli(capsys, sessions_root, "export", "sweep", "--format", "csv")
    assert code == 0 and "batch-sweep batch-8," in out and "REJECTED (" in out.splitlines()[2], out
    code, out, err = _export(capsys, sessions_root)
    verdicts = {r["command"]: (r["gpusession_accepted"], r["gpusession_verdict"][:8]) for r in json.loads(out)["results"]}
    assert verdicts == {"batch-sweep batch-1": (True, "accepted"), "batch-sweep batch-8": (False, "REJECTED")}


def test_r6_user_system_and_memory_usage_byte_come_from_each_runs_record(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured: Any) -> None:
    """hyperfine's ``user``/``system`` (mean CPU seconds) and ``memory_usage_byte`` (one peak per
    run, bytes) from the run records a command's runs end with; absent or null where a run has none."""
    from gpusession.core.events.records import RunFinishedRecord

    def ended(variant: str, run: int, user: float | None, system: float | None, rss: int | None) -> None:
        measured.journal(RunFinishedRecord(run_key=f"batch-sweep:warm:{variant}:{run}", experiment_id="batch-sweep",
                                           variant_id=variant, phase="warm", run_index=run, ok=True,
                                           cpu_user_s=user, cpu_system_s=system, max_rss_bytes=rss))

    for i in range(1, 6):  # batch-1: every run measured
        ended("batch-1", i, 0.1 * i, 0.01 * i, 30_000_000 + i)
    ended("batch-4", 1, 0.5, 0.05, None)  # batch-4: one run without a peak, one without a record
    ended("batch-8", 1, 0.2, 0.02, 40_000_000)
    ended("batch-8", 1, 0.3, 0.03, 41_000_000)  # the same run ended twice: which one is not known
    code, out, err = _export(capsys, sessions_root)
    assert code == 0, err
    one, two, three = json.loads(out)["results"]
    assert one["user"] == pytest.approx(0.3) and one["system"] == pytest.approx(0.03)
    assert one["memory_usage_byte"] == [30_000_001, 30_000_002, 30_000_003, 30_000_004, 30_000_005]
    assert list(one)[:12] == ["command", "mean", "stddev", "median", "user", "system", "min", "max",
                              "times", "memory_usage_byte", "exit_codes", "parameters"]  # hyperfine's order
    for partial in (two, three):  # not measured: null, and no memory key, never 0 (C3)
        assert partial["user"] is None and partial["system"] is None and "memory_usage_byte" not in partial
    code, out, err = cli(capsys, sessions_root, "export", "sweep", "--format", "csv")
    assert code == 0, err
    first = out.splitlines()[1].split(",")
    assert [float(v) for v in first[4:6]] == [pytest.approx(0.3), pytest.approx(0.03)]


HYPERFINE_SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "hyperfine"


def _script(name: str, *args: str, env: dict[str, str] | None = None) -> str:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(HYPERFINE_SCRIPTS / name), *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_r6_hyperfines_own_scripts_read_a_command_export(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    """A real command workload (two batches, three warm runs each) exported and read by hyperfine's
    own scripts (tests/data/hyperfine, SOURCE.md); its CPU seconds and peaks come from os.wait4."""
    import shlex
    import sys

    s = make_session(sessions_root, "sweep")
    (s.folder / "burn.py").write_text("import sys\nx = bytearray(int(sys.argv[1]) * 40_000_000)\n"
                                      "sum(range(300_000))\n")
    command = f"{shlex.quote(sys.executable)} burn.py {{batch}}"  # run in the session folder
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "define", "--id", "e", "--workload",
                       "command", "--values", "1,2", "--runs", "3", "--warmup", "0", "--cold-runs", "0",
                       "--device", "cpu", "--command", command)
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", s.name, "--headless")
    assert code == 0, out + err
    target = tmp_path / "e.json"
    code, _, err = _export(capsys, sessions_root, "--out", str(target))
    assert code == 0, err
    one, two = json.loads(target.read_text())["results"]
    for entry in (one, two):
        assert isinstance(entry["user"], float) and isinstance(entry["system"], float)
        assert entry["user"] + entry["system"] > 0
        assert len(entry["memory_usage_byte"]) == len(entry["times"]) == 3
    # each run's peak holds its bytearray: 40 MB for batch 1, 80 MB for batch 2 (with Python's own)
    assert min(one["memory_usage_byte"]) >= 40_000_000 and min(two["memory_usage_byte"]) >= 80_000_000
    assert max(one["memory_usage_byte"]) < min(two["memory_usage_byte"])
    notes = [r["notes"] for r in s.results.read().iter_rows(named=True) if r["phase"] == "warm"]
    assert len(notes) == 6 and all("process: CPU " in (n or "") for n in notes), notes
    pytest.importorskip("numpy", reason="hyperfine's advanced_statistics.py needs numpy")
    stats = _script("advanced_statistics.py", str(target))
    assert f"Command '{one['command']}'" in stats and f"Command '{two['command']}'" in stats
    assert stats.count("runs:          3") == 2 and f"median: {one['median']:8.3f} s" in stats
    pytest.importorskip("scipy", reason="hyperfine's welch_ttest.py needs scipy")
    assert f"Command 1: {one['command']}" in _script("welch_ttest.py", str(target))
    pytest.importorskip("matplotlib", reason="hyperfine's plot_parametrized.py needs matplotlib")
    png = tmp_path / "e.png"
    _script("plot_parametrized.py", str(target), "-o", str(png), env={"MPLBACKEND": "Agg"})
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
