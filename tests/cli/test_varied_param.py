"""Any announced parameter can be the varied one, and every parameter reaches the program (R1, A3).

A command workload gets a parameter as ``{param.NAME}`` (one argument, a plain value) and
as ``$GPUSESSION_PARAM_<NAME>``; one it never takes as ``{param.NAME}`` is refused at
``define`` naming it, unless ``--param-via-env`` says the command reads the variable (the
rows then say "passed by variable, not verifiable"). The probe command
(``tests/probe_command.py``) writes down what each call received: every measured row is
checked against the call that made it (its output path names its variant and run).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from fake_workloads import write_corpus
from helpers import cli, one_line
from test_json_contract import _valid

from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session
from gpusession.core.retrieval.keep import keep_lines

#: Runs experiments and reads the package window and the session limit: run again a year
#: ahead and a month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

PROBE = Path(__file__).resolve().parents[1] / "probe_command.py"
DOCS = Path(__file__).resolve().parents[2] / "docs"


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session, *args: str,
            command: str = "{param.model}") -> tuple[int, str, str]:
    write_corpus(s.folder / "corpus.jsonl", n=6)
    line = f"{sys.executable} {PROBE} {s.folder / 'probe.log'} {{corpus}} {{output}} {command}".strip()
    return cli(capsys, root, "experiment", s.name, "define", "--id", "sweep", "--workload", "command",
               "--corpus", "corpus.jsonl", "--classes", "a,b", "--threshold", "0.5", "--runs", "3",
               "--warmup", "1", "--command", line, *args)


def _calls(s: Session) -> list[dict[str, object]]:
    return [json.loads(line) for line in (s.folder / "probe.log").read_text().splitlines()]


def _rows(s: Session) -> list[dict[str, str]]:
    with open(s.folder / "resultats-bruts.csv", encoding="utf-8", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["phase"] in ("cold", "warm")]


def _call_of(calls: list[dict[str, object]], row: dict[str, str]) -> dict[str, object]:
    """The probe's call that wrote ``row``'s output: ``…/<variant>/<phase>-<index>.jsonl``."""
    tail = f"/{row['variant_id']}/{row['phase']}-{row['run_index']}.jsonl"
    found = [c for c in calls if str(c["output"]).endswith(tail)]
    assert len(found) == 1, (tail, calls)
    return found[0]


def test_a3_a_command_param_never_received_is_refused_naming_it(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--values", "1", "--param", "model=b", command="")
    line = one_line(err)
    assert code == 2 and "never receives model" in line and "{param.model}" in line, line
    assert "$GPUSESSION_PARAM_MODEL" in line and "--param-via-env" in line, line
    assert "sweep" not in (session.folder / "session.toml").read_text()


def test_a3_a_varied_param_never_received_is_refused_naming_it(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--varied", "model", "--values", "a,b", command="")
    line = one_line(err)
    assert code == 2 and "never receives model" in line, line
    assert "sweep" not in (session.folder / "session.toml").read_text()


@pytest.mark.parametrize(("values", "why"), [("a,-x", "not starting with '-'"), ("a,b c", "A-Z a-z"),
                                             ("a,$(id)", "A-Z a-z"), ("a,a", "duplicate")])
def test_a3_a_varied_value_is_a_plain_value_and_a_safe_variant_name(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], values: str, why: str) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--varied", "model", "--values", values)
    assert code == 2 and why in one_line(err), one_line(err)


def test_a3_a_fixed_param_that_is_not_plain_is_refused(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--values", "1", "--param", "model=$(id)")
    assert code == 2 and "model=" in one_line(err) and "plain" not in "" and "one argument" in one_line(err)


def test_a3_a_varied_name_that_is_a_fixed_setting_is_refused(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--varied", "seed", "--values", "1,2")
    assert code == 2 and "expected batch, context, precision or a workload parameter" in one_line(err)


@pytest.mark.slow
def test_r1_a_varied_param_reaches_the_command_interleaved_and_keep_names_a_variant(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _define(capsys, sessions_root, session, "--varied", "model", "--values", "a,b",
                             "--param", "steps=20", command="{param.model} --steps={param.steps}")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "sweep", "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    calls, rows = _calls(session), _rows(session)
    assert {c["args"][0] for c in calls} == {"a", "b"}  # type: ignore[index]
    warm = [r["variant_id"] for r in rows if r["phase"] == "warm"]
    assert warm == ["model-a", "model-b"] * 3  # interleaved, as a batch sweep
    for row in rows:  # every measured row equals what its call received
        value = row["variant_id"].removeprefix("model-")
        call = _call_of(calls, row)
        assert call["args"] == [value, "--steps=20"], (row, call)
        assert call["env"]["GPUSESSION_PARAM_MODEL"] == value  # type: ignore[index]
        assert call["env"]["GPUSESSION_PARAM_STEPS"] == "20"  # type: ignore[index]
        assert f"params=model={value} steps=20" in row["notes"] or f"params=steps=20 model={value}" in row["notes"]
        assert row["corpus_accepted"] == "true"
    keep = keep_lines(Session.open(sessions_root, session.name))
    assert len(keep) == 1 and ("model-a of sweep" in keep[0] or "model-b of sweep" in keep[0]), keep
    assert "beyond noise" in keep[0], keep  # named beyond noise, or "none is faster beyond noise"
    code, out, err = cli(capsys, sessions_root, "export", session.name, "--format", "hyperfine-json")
    assert code == 0, err
    assert sorted(r["parameters"]["model"] for r in json.loads(out)["results"]) == ["a", "b"]


@pytest.mark.slow
def test_a3_param_via_env_is_accepted_and_each_row_says_passed_by_variable(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--varied", "model", "--values", "a,b",
                           "--runs", "1", "--warmup", "0", "--param-via-env", command="")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "sweep", "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    calls = _calls(session)
    for row in _rows(session):
        value = row["variant_id"].removeprefix("model-")
        assert _call_of(calls, row)["env"]["GPUSESSION_PARAM_MODEL"] == value  # type: ignore[index]
        assert "model passed by variable ($GPUSESSION_PARAM_MODEL), not verifiable" in row["notes"], row["notes"]


@pytest.mark.slow
def test_r1_precision_varied_is_passed_per_variant_and_each_row_holds_it(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--varied", "precision", "--values", "fp32,bf16",
                           "--runs", "2", "--warmup", "0", command="{precision}")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "sweep", "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    calls, rows = _calls(session), _rows(session)
    assert [r["variant_id"] for r in rows if r["phase"] == "warm"] == ["precision-fp32", "precision-bf16"] * 2
    for row in rows:
        call = _call_of(calls, row)
        assert call["args"] == [row["precision"]] and call["env"]["GPUSESSION_PRECISION"] == row["precision"], row
        assert row["variant_id"] == f"precision-{row['precision']}"


@pytest.mark.parametrize(("varied", "values", "command", "item"), [
    ("model", "a,b", "{param.model}", "param.model=c"),
    ("precision", "fp32,bf16", "{precision}", "precision=fp16"),
])
def test_a3_derive_never_sets_the_varied_parameter_as_a_fixed_value(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        varied: str, values: str, command: str, item: str) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--varied", varied, "--values", values, command=command)
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", "sweep-c",
                       "--from", "sweep", "--set", item)
    line = one_line(err)
    assert code == 2 and f"is varied in sweep ({varied} {values})" in line and "new define" in line, line
    assert "sweep-c" not in (session.folder / "session.toml").read_text()


def test_a3_derive_refuses_a_param_the_command_never_receives_and_one_equal_to_the_base(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--values", "1", "--param", "steps=20",
                           command="--steps={param.steps}")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", "sweep-c",
                       "--from", "sweep", "--set", "param.model=b")
    assert code == 2 and "never receives model" in one_line(err), one_line(err)
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", "sweep-c",
                       "--from", "sweep", "--set", "param.steps=20")
    assert code == 2 and "changes nothing" in one_line(err), one_line(err)
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", "sweep-c",
                       "--from", "sweep", "--set", "param.steps=30")
    assert code == 0, err
    assert "sweep-c" in (session.folder / "session.toml").read_text()


def test_a3_a_stored_experiment_whose_command_never_receives_a_param_is_refused_at_run(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """Stored before the rule (or by hand): the run is refused before anything is measured."""
    write_corpus(session.folder / "corpus.jsonl", n=2)
    define_experiment(session, Experiment(id="old", workload="command", corpus="corpus.jsonl", scope="full-chain",
                                          params={"command": ["true", "{corpus}"], "model": "b"}))
    before = (session.folder / "resultats-bruts.csv").exists()
    code, _, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "old", "--headless")
    assert code == 2 and "never receives model" in one_line(err), err
    assert (session.folder / "resultats-bruts.csv").exists() == before


def test_c6_experiment_list_json_holds_a_parameter_sweep(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, "--varied", "model", "--values", "a,2")
    assert code == 0, err
    code, out, _ = cli(capsys, sessions_root, "experiment", session.name, "list", "--json")
    assert code == 0
    doc = _valid("experiment-list", out)
    assert doc["experiments"][0]["values"] == ["a", 2] and doc["experiments"][0]["varied"] == "model"


def test_r1_the_rule_says_any_announced_parameter_everything_else_held_fixed() -> None:
    row = next(line for line in (DOCS / "rules.md").read_text().splitlines() if line.startswith("| R1 |"))
    assert "any announced parameter" in row and "everything else" in row and "held fixed" in row, row
    assert "{param.NAME}" in (DOCS / "session-folder.md").read_text()
