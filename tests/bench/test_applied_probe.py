"""Every setting cell of every row is what the workload received (A2), checked by a probe.

The probe (``fake_workloads:Probe``) writes what it received -- the seed as its factory got
it and as ``torch``, ``random`` and numpy hold it, the device, precision, context limit,
its factory's params, and each ``predict`` call's batch -- and a real sweep over batch
(the harness's real worker processes, on the CPU) is read back from
``resultats-bruts.csv`` and compared cell by cell. Without the worker's seeding each
process holds a seed of its own and the test fails.
"""

from __future__ import annotations

import json
import random
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import Probe, with_tests_on_path, write_corpus
from helpers import cli, digest, one_line

from gpusession.bench.runner import Runner
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session
from gpusession.core.records.record_notes import record_items
from gpusession.core.records.results import ResultRow, ResultsFile

#: The announced seed: no default, so a seed nobody applied cannot match it by chance.
SEED = 1234
#: Texts in the corpus: a pass over it ends when this many texts were predicted.
N_TEXTS = 8
#: The command that records what it received (tests/probe_command.py).
PROBE_COMMAND = Path(__file__).resolve().parents[1] / "probe_command.py"


def _segments(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[int]]]:
    """Per worker process, in file order: its load record and the batch of each pass it ran."""
    out: list[tuple[dict[str, Any], list[int]]] = []
    seen = 0
    for r in records:
        if r["kind"] == "load":
            out.append((r, []))
            seen = 0
            continue
        load, passes = out[-1]
        assert r["pid"] == load["pid"], "one process at a time"
        if seen == 0:
            passes.append(r["batch"])
        assert r["batch"] <= passes[-1]  # the last call of a pass may be shorter
        seen = (seen + r["batch"]) % N_TEXTS
    return out


def _groups(rows: list[ResultRow]) -> list[tuple[ResultRow, list[ResultRow]]]:
    """The rows per worker process, in file order: its load row and the rows of its runs."""
    out: list[tuple[ResultRow, list[ResultRow]]] = []
    for row in rows:
        if row.phase == "load":
            out.append((row, []))
        else:
            out[-1][1].append(row)
    return out


def _params(row: ResultRow) -> dict[str, str]:
    """The record's ``params`` item of a row, as ``{key: value}``."""
    item = record_items(row.notes).get("params", "")
    return dict(part.split("=", 1) for part in shlex.split(item))


@pytest.mark.slow
@pytest.mark.torch
def test_a2_every_cell_of_a_batch_sweep_is_what_the_probe_received(
        sessions_root: Path, session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy

    with_tests_on_path(monkeypatch)
    s = session
    probe = s.folder / "probe.jsonl"
    corpus = write_corpus(s.folder / "corpus" / "eval.jsonl", n=N_TEXTS, words=5)
    exp = define_experiment(s, Experiment(
        id="probe", workload="fake_workloads:Probe", corpus=str(corpus.relative_to(s.folder)),
        varied="batch", values=(1, 2, 4), runs_per_variant=1, warmup_iterations=0, cold_runs_per_variant=1,
        context_limit=3, precision="bf16", seed=SEED, device="cpu",
        params={"probe": str(probe), "tag": "a b"},
        protocol={"classes": ["a", "b"], "metric": "accuracy", "threshold": 0.9, "tolerance": 0.0},
    ))
    out = Runner(s, exp.id).run()
    assert out.completed, out.incidents
    rows = ResultsFile(s.folder / "resultats-bruts.csv").rows()  # what the file holds, read back
    seen = _segments([json.loads(x) for x in probe.read_text().splitlines()])
    groups = _groups(rows)
    # three cold processes and one warm one: four processes, one applied seed
    assert len(seen) == len(groups) == 4
    assert len({load["pid"] for load, _ in seen}) == 4
    assert {load["torch_seed"] for load, _ in seen} == {SEED}
    for (load, passes), (load_row, run_rows) in zip(seen, groups, strict=True):
        # the seed the probe saw, every way it can see it, is the row's
        assert load["seed"] == load["torch_seed"] == load_row.seed == SEED
        assert load["env_seed"] == str(SEED)
        assert load["random_first"] == random.Random(SEED).random()
        assert load["numpy_first"] == numpy.random.RandomState(SEED).random_sample()
        received = {k: str(v) for k, v in load["params"].items()}
        assert (load_row.precision, load_row.device, _params(load_row)) == (
            load["precision"], load["device"], received)
        assert [r.batch for r in run_rows] == passes and len(passes) >= 1
        for row in run_rows:
            assert (row.seed, row.precision, row.context, row.device) == (
                load["torch_seed"], load["precision"], load["context"], load["device"])
            assert _params(row) == received
    assert sorted(r.batch for r in rows if r.phase == "warm") == [1, 2, 4]


@pytest.mark.torch
def test_a2_synthetic_mlp_weights_use_the_applied_seed_never_a_param() -> None:
    """``synthetic-mlp --seed 7``: the factory gets 7, the seed its weights are drawn with."""
    from gpusession.bench.workloads.base import build

    workload, kwargs = build("synthetic-mlp", {"width": 8, "depth": 1}, 7)
    assert kwargs["seed"] == 7 and workload.seed == 7  # type: ignore[attr-defined]
    probe, kwargs = build("fake_workloads:Probe", {"probe": "p.jsonl"}, 5)
    assert isinstance(probe, Probe) and probe.seed == 5 and kwargs == {"probe": "p.jsonl", "seed": 5}
    echo, kwargs = build("fake_workloads:Echo", {}, 5)  # **kwargs alone: not given a seed it never named
    assert "seed" not in kwargs


def test_a2_a_param_seed_of_a_python_workload_is_refused_naming_seed(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """``--param seed=3`` beside ``--seed``: two seeds the row cannot both state; one line, nothing stored."""
    before = digest(session.folder)
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "mlp",
                       "--workload", "synthetic-mlp", "--values", "1", "--seed", "7", "--param", "seed=3")
    assert code == 2
    line = one_line(err)
    assert "takes no parameter seed" in line and "nothing was written" in line  # a built-in names what it takes
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "own",
                       "--workload", "fake_workloads:Echo", "--values", "1", "--param", "seed=3")
    assert code == 2
    line = one_line(err)
    assert "--param seed is refused: the seed is --seed" in line and "nothing was written" in line
    assert digest(session.folder) == before
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "mlp",
                       "--workload", "synthetic-mlp", "--values", "1", "--seed", "7")
    assert code == 0, err  # --seed stays accepted


def _command_rows(capsys: pytest.CaptureFixture[str], root: Path, s: Session, exp_id: str,
                  args: str) -> list[tuple[ResultRow, dict[str, Any]]]:
    """Define and run a command sweep over batch 1, 2 of the probe command; each run's row and what it received."""
    write_corpus(s.folder / "corpus.jsonl", n=4)
    log = s.folder / f"{exp_id}.log"
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", exp_id, "--workload", "command",
                       "--values", "1,2", "--runs", "1", "--warmup", "0", "--cold-runs", "1",
                       "--corpus", "corpus.jsonl", "--seed", "42", "--precision", "fp16",
                       "--command", f"{sys.executable} {PROBE_COMMAND} {log} {{corpus}} {{output}} {args}")
    assert code == 0, err
    code, out, err = cli(capsys, root, "run", s.name, "--headless", "--experiment", exp_id)
    assert code in (0, 1, 3), out[-2000:] + err[-2000:]
    rows = [r for r in ResultsFile(s.folder / "resultats-bruts.csv").rows()
            if r.experiment_id == exp_id and r.phase != "load"]
    assert len(rows) == 4  # a cold and a warm run of each batch
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    by_output = {Path(c["output"]).parts[-2:]: c for c in calls}  # <variant>/<phase>-<n>.jsonl
    return [(r, by_output[(str(r.variant_id), f"{r.phase}-{r.run_index}.jsonl")]) for r in rows]


def test_a2_a_commands_cells_are_what_its_arguments_received(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """``{batch}``, ``{seed}``, ``{precision}`` in the arguments: each row holds what its call got."""
    for row, got in _command_rows(capsys, sessions_root, session, "took",
                                  "--batch={batch} --seed={seed} {precision}"):
        batch, seed, precision = got["args"]
        assert (f"--batch={row.batch}", f"--seed={row.seed}", row.precision) == (batch, seed, precision)
        assert (row.seed, row.precision) == (42, "fp16") and row.context is None
        assert "offered in" not in (row.notes or "")


def test_a2_a_command_without_seed_or_batch_arguments_states_neither(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the variables carried them: offered, not verifiable; the cells stay empty, never seed 0."""
    for row, got in _command_rows(capsys, sessions_root, session, "env", ""):
        assert got["args"] == []
        assert got["env"]["GPUSESSION_SEED"] == "42" and got["env"]["GPUSESSION_BATCH"] in ("1", "2")
        assert (row.seed, row.batch, row.precision) == (None, None, None)
        notes = row.notes or ""
        assert "seed offered in $GPUSESSION_SEED, not verifiable for a command" in notes
        assert "batch offered in $GPUSESSION_BATCH, not verifiable for a command" in notes
