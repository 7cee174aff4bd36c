"""``experiment NAME derive``: one change, replayed (D4).

A derived experiment equals the one it replays but for one element, and records where it
came from and which element changed; ``experiment list`` and ``show`` say the difference.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, one_line

from gpusession.core.files.tomlio import read_toml


def _session(root: Path) -> Any:
    from gpusession.testing import make_session

    return make_session(root, runs=3)


def _table(s: Any, exp_id: str) -> dict[str, Any]:
    return read_toml(s.folder / "session.toml")["experiments"][exp_id]


def test_d4_derive_stores_derived_from_and_the_changed_key(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(sessions_root)
    code, out, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-fp16",
                         "--from", "batch-sweep", "--set", "precision=fp16")
    assert code == 0, err
    new, old = _table(s, "bs-fp16"), _table(s, "batch-sweep")
    assert new["derived_from"] == "batch-sweep" and new["changed_key"] == "precision"
    assert new["precision"] == "fp16" and old["precision"] == "fp32"
    same = {k: v for k, v in new.items() if k not in ("precision", "derived_from", "changed_key")}
    assert same == {k: v for k, v in old.items() if k != "precision"}  # equal but for that element
    assert "derived_from" not in old
    # a change of precision is said to be a new experiment with its own quality check
    assert "new experiment with its own quality check" in out
    assert "precision fp16 (was fp32)" in out


def test_d4_second_set_is_refused_one_element_at_a_time(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(sessions_root)
    before = (s.folder / "session.toml").read_bytes()
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-2",
                       "--from", "batch-sweep", "--set", "precision=fp16", "--set", "runs=3")
    assert code == 2
    assert "one element at a time" in one_line(err) and "rental guide" in err
    assert (s.folder / "session.toml").read_bytes() == before  # nothing stored


@pytest.mark.parametrize("key", ["varied=context", "values=1,2", "id=other"])
def test_d4_varied_values_and_id_are_refused(key: str, sessions_root: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(sessions_root)
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-2",
                       "--from", "batch-sweep", "--set", key)
    assert code == 2
    assert "varies what the experiment varies" in one_line(err)
    assert "bs-2" not in read_toml(s.folder / "session.toml")["experiments"]


def test_d4_param_name_changes_one_workload_parameter(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(sessions_root)
    code, out, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-models2",
                         "--from", "batch-sweep", "--set", "param.model_dir=models-2")
    assert code == 0, err
    t = _table(s, "bs-models2")
    assert t["params"] == {"model_dir": "models-2"} and t["changed_key"] == "param.model_dir"
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-threads",
                       "--from", "batch-sweep", "--set", "param.cpu_threads=2")
    assert code == 0, err
    assert _table(s, "bs-threads")["params"] == {"model_dir": "models", "cpu_threads": 2}  # read as define reads it


def test_a3_a_param_the_builtin_workload_never_takes_is_refused_naming_it(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bbc-news ignores a ``seed`` param: it would be recorded as applied and never reach the model."""
    s = _session(sessions_root)
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-seed",
                       "--from", "batch-sweep", "--set", "param.seed=7")
    line = one_line(err)
    assert code == 2 and "takes no parameter seed" in line, line
    assert "bs-seed" not in (s.folder / "session.toml").read_text()


def test_d4_value_is_refused_with_the_words_of_define(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(sessions_root)
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-2",
                       "--from", "batch-sweep", "--set", "runs=five")
    assert code == 2
    _, _, define_err = cli(capsys, sessions_root, "experiment", s.name, "define", "--id", "x",
                           "--workload", "bbc-news", "--values", "1", "--runs", "five")
    assert one_line(err) == one_line(define_err)
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-2",
                       "--from", "batch-sweep", "--set", "precision=fp32")
    assert code == 2 and "changes nothing" in one_line(err)


def test_d4_list_shows_what_differs_from_the_origin(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(sessions_root)
    assert cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-fp16",
               "--from", "batch-sweep", "--set", "precision=fp16")[0] == 0
    assert cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-fp16-b2",
               "--from", "bs-fp16", "--set", "context_limit=256")[0] == 0
    code, out, _ = cli(capsys, sessions_root, "experiment", s.name, "list")
    assert code == 0
    lines = out.splitlines()
    at = lines.index(next(ln for ln in lines if ln.startswith("bs-fp16:")))
    assert lines[at + 1].strip() == "derived from batch-sweep: precision fp16 (was fp32)"
    assert "derived from bs-fp16: context-limit 256 (was unset)" in out
    assert not lines[1].strip().startswith("derived")  # batch-sweep was not derived
    js = json.loads(cli(capsys, sessions_root, "experiment", s.name, "list", "--json")[1])["experiments"]
    assert {e["id"]: e.get("derived_from") for e in js} == {
        "batch-sweep": None, "bs-fp16": "batch-sweep", "bs-fp16-b2": "bs-fp16"}


def _run_then_derive_fp16(root: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """The session with ``batch-sweep`` run (fake runner) and ``bs-fp16`` derived from it."""
    from gpusession.testing import FakeRunner

    s = _session(root)
    FakeRunner(s, "batch-sweep", lambda _e: None, threading.Event()).run()
    assert cli(capsys, root, "experiment", s.name, "derive", "--id", "bs-fp16",
               "--from", "batch-sweep", "--set", "precision=fp16")[0] == 0
    return s


def test_d4_show_compares_time_and_verdict_before_and_after(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.testing import FakeRunner

    s = _run_then_derive_fp16(sessions_root, capsys)
    code, out, _ = cli(capsys, sessions_root, "show", s.name)
    assert code == 0
    assert "bs-fp16 derived from batch-sweep: precision fp16 (was fp32)" in out
    assert "batch-8 warm median: 14.5 ms, accepted → not measured yet" in out
    assert "fastest accepted: batch-8 (14.5 ms) before, no accepted variant after" in out
    s.reload()
    FakeRunner(s, "bs-fp16", lambda _e: None, threading.Event()).run()
    out = cli(capsys, sessions_root, "show", s.name)[1]
    assert "batch-8 warm median: 14.5 ms, accepted → 14.5 ms, accepted" in out
    data = json.loads(cli(capsys, sessions_root, "show", s.name, "--json")[1])
    assert data["derived"][0]["changed_key"] == "precision"


def test_d4_older_session_toml_without_derived_from_still_loads(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.folder.experiments import load_experiments

    s = _session(sessions_root)
    text = (s.folder / "session.toml").read_text(encoding="utf-8")
    assert "derived_from" not in text and "changed_key" not in text  # as older versions wrote it
    (exp,) = load_experiments(s)
    assert exp.derived_from is None and exp.changed_key is None
    code, out, _ = cli(capsys, sessions_root, "experiment", s.name, "list")
    assert code == 0 and "derived" not in out


def test_d4_define_from_a_derived_experiment_is_not_a_replay() -> None:
    from gpusession.core.experiment.form import DefineForm, experiment_from_form
    from gpusession.core.experiment.plan import Experiment

    base = Experiment(id="b", workload="synthetic-mlp", derived_from="a", changed_key="runs")
    exp = experiment_from_form(DefineForm(id="c", runs_per_variant="3", precision="fp16"), base=base)
    assert exp.derived_from is None and exp.changed_key is None


def test_d4_derive_keys_are_the_define_options() -> None:
    from gpusession.core.experiment.derive import DERIVE_KEYS, derive_key
    from gpusession.core.experiment.form import DefineForm

    assert set(DERIVE_KEYS.values()) | {"id", "varied", "values", "params"} == set(
        DefineForm.__dataclass_fields__)
    assert derive_key("runs_per_variant") == "runs" and derive_key("Context_Limit") == "context-limit"


def test_d4_report_compares_time_and_verdict_before_and_after(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.retrieval.report import render_report
    from gpusession.testing import FakeRunner

    s = _run_then_derive_fp16(sessions_root, capsys)
    s.reload()
    FakeRunner(s, "bs-fp16", lambda _e: None, threading.Event(), accepted=False).run()
    text = " ".join(render_report(s).split())  # wrapped at 80 columns: compared as one text
    assert "bs-fp16, one change replayed (derived from batch-sweep: precision fp16 (was fp32)):" in text
    assert "batch-8 warm median: 14.5 ms, accepted → 14.5 ms, REJECTED (quality 0.500" in text
    assert "fastest accepted: batch-8 (14.5 ms) before, no accepted variant after" in text


def test_a3_the_varied_parameter_is_never_set_as_a_fixed_value(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``derive --set batch=16`` on a batch sweep once said "batch 16 (was unset)" and the new
    experiment still ran 1, 4, 8: refused, naming the values, and nothing stored."""
    s = _session(sessions_root)
    code, _, err = cli(capsys, sessions_root, "experiment", s.name, "derive", "--id", "bs-16",
                       "--from", "batch-sweep", "--set", "batch=16")
    line = one_line(err)
    assert code == 2 and "batch is varied in batch-sweep (batch 1,4,8)" in line and "new define" in line, line
    assert "bs-16" not in (s.folder / "session.toml").read_text()


def test_h68_a_corpus_is_compared_by_revision_never_by_the_paths_text(
        session: Any, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fake_workloads import write_corpus
    from helpers import rank_experiment

    from gpusession.core.files.digest import sha256_file
    from gpusession.core.records.results import ResultRow

    rank_experiment(session, "e1")  # on corpus/eval.jsonl
    corpus = session.folder / "corpus" / "eval.jsonl"

    def derive(new_id: str, path: str) -> tuple[int, str]:
        code, _, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", new_id,
                           "--from", "e1", "--set", f"corpus={path}")
        return code, err

    for spelling in ("corpus/eval.jsonl", "corpus/./eval.jsonl"):  # the same file, unedited
        code, err = derive("e2", spelling)
        assert code == 2 and "changes nothing" in one_line(err), err
    # a run pins the corpus's revision in its rows; then the corpus is edited in place
    session.results.append(ResultRow(experiment_id="e1", variant_id="batch-2", phase="warm", run_index=1,
                                     corpus_revision=sha256_file(corpus)))
    write_corpus(corpus, n=10, words=3)
    code, err = derive("e2", "corpus/eval.jsonl")  # the same path, another corpus: a change
    assert code == 0, err
    assert _table(session, "e2")["changed_key"] == "corpus"
