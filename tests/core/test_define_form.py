"""The define form parser (``core/experiment/form.py``): one rule per kind of field (R1, R2, V5).

The CLI's ``experiment define`` and the TUI's Define form both hand it text; these are
its rules, without either front end (the two front ends are compared in
``tests/ui/test_define_one_parser.py``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import write_corpus

from gpusession.core.experiment.form import (
    DefineForm,
    experiment_from_form,
    param_text,
    param_value,
    parse_params,
    resolve_corpus,
)
from gpusession.core.experiment.plan import Experiment
from gpusession.core.files.errors import BadInput


def _form(**kw: Any) -> DefineForm:
    kw.setdefault("id", "e")
    kw.setdefault("workload", "synthetic-mlp")
    kw.setdefault("values", "1,4,8")
    return DefineForm(**kw)


@pytest.mark.parametrize("text", ["1.5", "1e3", "1_000", "٣", "five", "", "+3", "2 3"])
@pytest.mark.parametrize("name", ["runs_per_variant", "warmup_iterations", "cold_runs_per_variant",
                                  "gpus", "nodes", "seed", "order_seed", "context_limit", "batch"])
def test_r1_counts_and_seeds_are_whole_numbers_in_ascii_digits(name: str, text: str) -> None:
    if text == "" and name in ("context_limit", "batch"):
        text = "x"  # empty is "no limit" there
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(**{name: text}))
    assert exc.value.field == name
    assert "expected a whole number" in exc.value.message


def test_r1_counts_read_with_spaces_around_and_empty_optional_is_unset() -> None:
    exp = experiment_from_form(_form(runs_per_variant=" 3 ", warmup_iterations="0", seed="-7",
                                     context_limit="", batch="", device="", corpus=""))
    assert (exp.runs_per_variant, exp.warmup_iterations, exp.seed) == (3, 0, -7)
    assert exp.context_limit is None and exp.batch is None and exp.device is None and exp.corpus is None


@pytest.mark.parametrize("text", ["1,,2", "1,4,", "1.5", "1;4", "٣", ""])
def test_r1_values_are_whole_numbers_separated_by_commas(text: str) -> None:
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(values=text))
    assert exc.value.field == "values" and "whole numbers separated by commas" in exc.value.message


def test_r1_values_out_of_range_are_refused_by_the_plan_check() -> None:
    assert experiment_from_form(_form(values=" 1, 4 ,8")).values == (1, 4, 8)
    with pytest.raises(BadInput, match="from 1 to 2,147,483,647"):
        experiment_from_form(_form(values="0"))


@pytest.mark.parametrize(("name", "text"), [("run_timeout_s", "nan"), ("run_timeout_s", "inf"),
                                            ("run_timeout_s", "1e999"), ("threshold", "0,9"),
                                            ("tolerance", "abc")])
def test_v5_decimals_are_plain_finite_numbers(name: str, text: str) -> None:
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(classes="a,b", **{name: text}))
    assert exc.value.field in (name, f"protocol.{name}") and "expected a number" in exc.value.message


def test_v5_protocol_from_classes_metric_threshold_tolerance() -> None:
    exp = experiment_from_form(_form(classes="a, b", metric="accuracy", threshold=".8", tolerance="1e-2"))
    assert exp.protocol == {"classes": ["a", "b"], "metric": "accuracy", "threshold": 0.8,
                            "tolerance": 0.01, "output_format": "jsonl"}
    assert experiment_from_form(_form(metric="accuracy", threshold="0.8")).protocol == {}  # no classes
    seen: list[Any] = []
    experiment_from_form(_form(classes="a", threshold="0.9"), check_protocol=seen.append)
    # V5: a tolerance nobody gave is not stored as a chosen 0
    assert seen == [{"classes": ["a"], "metric": "macro_f1", "threshold": 0.9, "output_format": "jsonl"}]


def test_params_take_the_type_the_workload_declares() -> None:
    assert parse_params("synthetic-mlp", ("width=64", "depth= 2")) == {"width": 64, "depth": 2}
    assert parse_params("bbc-news", ("model_dir=2024", "cpu_threads=4")) == {"model_dir": "2024", "cpu_threads": 4}
    assert parse_params("pkg.mod:make", ("n_inputs=16", "train_corpus=007.jsonl")) == {
        "n_inputs": 16, "train_corpus": "007.jsonl"}
    with pytest.raises(BadInput) as exc:
        parse_params("synthetic-mlp", ("width=6.4",))
    assert exc.value.field == "params" and exc.value.message == "synthetic-mlp's width is a whole number, got '6.4'"


def test_undeclared_params_read_like_a_toml_scalar() -> None:
    got = parse_params("pkg.mod:make", ("lr=0.001", "n=3", "flag=True", "tag=v1", 'version="1.10"',
                                        "path=a b", "big=1e3", "odd=nan"))
    assert got == {"lr": 0.001, "n": 3, "flag": True, "tag": "v1", "version": "1.10",
                   "path": "a b", "big": 1000.0, "odd": "nan"}
    assert type(got["n"]) is int and type(got["flag"]) is bool


@pytest.mark.parametrize(("items", "said"), [
    (("novalue",), "expected KEY=VALUE"),
    (("=1",), "expected KEY=VALUE"),
    (("model-dir=x",), "letters, digits and '_'"),
    (("a=1", "a=2"), "a is given twice"),
    (("command=true",), "its own field"),
])
def test_params_refused_with_the_reason(items: tuple[str, ...], said: str) -> None:
    with pytest.raises(BadInput) as exc:
        parse_params("pkg.mod:make", items)
    assert said in exc.value.message and exc.value.field == "params"


@pytest.mark.parametrize("value", [64, -3, 0.001, 1e-05, True, False, "models", "1.10", "true", "42",
                                   " spaced ", "a b"])
def test_param_text_reads_back_to_the_same_value(value: Any) -> None:
    text = param_text("pkg.mod:make", "k", value)
    assert text is not None
    back = param_value("pkg.mod:make", "k", text)
    assert back == value and type(back) is type(value)
    assert param_text("pkg.mod:make", "k", [1, 2]) is None


def test_r2_a_command_workload_is_full_chain_and_its_command_split_like_a_shell() -> None:
    exp = experiment_from_form(_form(workload="command", command="python3 'my score.py' {batch}"))
    assert exp.scope == "full-chain" and exp.params == {"command": ["python3", "my score.py", "{batch}"]}
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(workload="command", command="true {batch}", scope="processing"))
    assert exc.value.field == "scope" and "full-chain" in exc.value.message
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(workload="command", command="'open"))
    assert exc.value.field == "command" and "quote like a shell" in exc.value.message
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(command="true {batch}"))
    assert exc.value.field == "command" and "for the command workload" in exc.value.message
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(workload="command"))
    assert "--command is empty" in exc.value.message


def test_r1_a_field_left_out_keeps_the_base_and_an_empty_scope_is_the_default() -> None:
    base = Experiment(id="old", workload="bbc-news", varied="context", values=(128,), batch=4, nodes=1,
                      order_seed=9, cold_runs_per_variant=3, run_timeout_s=60.0, scope="full-chain",
                      params={"model_dir": "models", "layers": [1, 2]}, protocol={"classes": ["a"]})
    exp = experiment_from_form(DefineForm(id="new"), base=base)
    assert exp == Experiment(**{**vars(base), "id": "new"})
    exp = experiment_from_form(DefineForm(id="new", scope="", params=("model_dir=m2",), classes=""), base=base)
    assert exp.scope == "processing" and exp.protocol == {}
    assert exp.params == {"layers": [1, 2], "model_dir": "m2"}  # a list no field can show is kept


@pytest.mark.parametrize("text", ["gpu", "cuda:x", "cuda1", "CPU"])
def test_r10_device_is_cpu_cuda_or_cuda_n(text: str) -> None:
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(device=text))
    assert exc.value.field == "device"
    assert experiment_from_form(_form(device="cuda:1")).device == "cuda:1"


def test_r1_resolve_corpus_relative_to_the_session_folder_or_absolute(tmp_path: Path) -> None:
    assert resolve_corpus(tmp_path, "corpus/eval.jsonl") == tmp_path / "corpus" / "eval.jsonl"
    assert resolve_corpus(tmp_path, "/data/eval.jsonl") == Path("/data/eval.jsonl")
    assert resolve_corpus(tmp_path, "~/eval.jsonl") == tmp_path / "~" / "eval.jsonl"
    with pytest.raises(BadInput):
        resolve_corpus(tmp_path, "")


def test_v5_the_corpus_must_be_a_file_in_the_session_folder(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as exc:
        experiment_from_form(_form(corpus="corpus.jsonl"), folder=tmp_path)
    assert exc.value.field == "corpus" and exc.value.path == tmp_path / "corpus.jsonl"
    assert "relative to the session folder" in exc.value.message
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(BadInput, match="is a folder"):
        experiment_from_form(_form(corpus="dir.jsonl"), folder=tmp_path)
    write_corpus(tmp_path / "corpus.jsonl")
    assert experiment_from_form(_form(corpus="corpus.jsonl"), folder=tmp_path).corpus == "corpus.jsonl"


def test_r1_run_validation_finds_the_corpus_and_splits_by_the_same_rule(sessions_root: Path) -> None:
    from gpusession.bench.run_validation import RunValidation
    from gpusession.core.files.digest import sha256_file
    from gpusession.core.folder.session import Session

    s = Session.create(sessions_root, "s")
    corpus = write_corpus(s.folder / "corpus" / "eval.jsonl")
    write_corpus(s.folder / "corpus" / "train.jsonl")
    exp = Experiment(id="e", workload="synthetic-mlp", corpus="corpus/eval.jsonl",
                     protocol={"classes": ["a", "b"]}, params={"train_corpus": "corpus/train.jsonl"})
    v = RunValidation(s, exp)
    assert v.problem is None and v.corpus_revision == sha256_file(corpus)
    assert v.train_ids == resolve_corpus(s.folder, "corpus/train.jsonl") == s.folder / "corpus" / "train.jsonl"
    assert RunValidation(s, Experiment(id="n", workload="synthetic-mlp")).corpus_revision is None


@pytest.mark.torch
def test_param_types_match_the_constructors_annotations() -> None:
    """The table declares each constructor argument with the type it is annotated with; ``seed``
    is the worker's (``--seed``, A2), never a param."""
    from gpusession.bench.workloads.bbc_news import BbcNewsWorkload
    from gpusession.bench.workloads.synthetic_mlp import SyntheticMlp
    from gpusession.core.experiment.params import PARAM_TYPES

    for name, cls in (("bbc-news", BbcNewsWorkload), ("synthetic-mlp", SyntheticMlp)):
        declared = {p.name: p.annotation for p in inspect.signature(cls.__init__).parameters.values()
                    if p.name not in ("self", "seed") and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}
        assert declared == {k: t.__name__ for k, t in PARAM_TYPES[name].items()}, name
