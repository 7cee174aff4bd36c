"""``{param.NAME}`` and ``$GPUSESSION_PARAM_<NAME>``: a parameter reaches a command as one plain argument (A3, H-34)."""

from __future__ import annotations

import pytest

from gpusession.core.experiment.placeholders import (
    check_command,
    environment,
    fill_argument,
    param_env,
    plain_value,
    received_params,
)
from gpusession.core.experiment.plan import (
    Experiment,
    check,
    check_params_reach,
    unreceived_params,
    variant_id,
)
from gpusession.core.files.errors import BadInput


def test_a3_the_variable_name_is_upper_cased_with_dots_and_dashes_as_underscores() -> None:
    assert param_env("model") == "GPUSESSION_PARAM_MODEL"
    assert param_env("a.b-c") == "GPUSESSION_PARAM_A_B_C"
    assert environment({"batch": 1, "param.model": "b"})["GPUSESSION_PARAM_MODEL"] == "b"


def test_a3_a_param_placeholder_is_filled_as_a_whole_argument_or_a_flag_value() -> None:
    values = {"param.model": "a", "param.steps": "20"}
    assert fill_argument("{param.model}", values) == "a"
    assert fill_argument("--steps={param.steps}", values) == "--steps=20"
    assert fill_argument("x{param.model}", values) == "x{param.model}"  # never inside a longer text
    assert received_params(["prog", "{param.model}", "--steps={param.steps}", "{corpus}"]) == {"model", "steps"}


@pytest.mark.parametrize(("argv", "words"), [
    (["sh", "-c", "echo {param.model}"], "$GPUSESSION_PARAM_MODEL"),
    (["prog", "out-{param.model}"], "pastes a placeholder"),
    (["{param.model}"], "the program itself cannot be a placeholder"),
])
def test_h34_a_param_placeholder_keeps_the_rules_of_the_others(argv: list[str], words: str) -> None:
    with pytest.raises(BadInput) as exc:
        check_command(argv, field="params.command")
    assert words in exc.value.message


@pytest.mark.parametrize(("value", "path", "plain"), [
    ("a", False, "a"), ("v1.2_x-y", False, "v1.2_x-y"), (-3, False, "-3"), ("-3", False, "-3"),
    (True, False, "true"), (0.5, False, "0.5"), ("models/a", True, "models/a"),
    ("models/a", False, None), ("-x", False, None), ("a b", True, None), ("$(id)", True, None),
    ("", True, None), ([1], True, None), ("x" * 201, True, None), ("-1e-5", False, "-1e-5"),
    ("-3--e", False, None),
])
def test_h34_a_param_value_is_plain(value: object, path: bool, plain: str | None) -> None:
    assert plain_value(value, path=path) == plain


def test_a3_variant_ids_name_the_parameter_and_its_value() -> None:
    exp = check(Experiment(id="e", workload="command", varied="model", values=("a", "b"),
                           params={"command": ["prog", "{param.model}"]}))
    assert exp.variant_ids == ["model-a", "model-b"] and variant_id("flag", True) == "flag-true"
    assert exp.setting("model-b") == {"batch": 1, "context": None, "precision": "fp32", "params": {"model": "b"}}
    assert unreceived_params(exp) == [] and check_params_reach(exp) is exp


def test_a3_a_varied_param_is_not_also_a_fixed_one() -> None:
    with pytest.raises(BadInput, match="model is varied"):
        check(Experiment(id="e", workload="command", varied="model", values=("a", "b"),
                         params={"command": ["prog", "{param.model}"], "model": "c"}))


def test_a3_a_param_read_by_variable_is_accepted_only_when_acknowledged() -> None:
    exp = check(Experiment(id="e", workload="command", varied="model", values=("a", "b"),
                           params={"command": ["prog", "{corpus}"], "code_dir": "/src"}))
    assert unreceived_params(exp) == ["model"]  # code_dir is gpusession's own, never the command's
    with pytest.raises(BadInput, match="never receives model"):
        check_params_reach(exp)
    via_env = check(Experiment(**{**exp.__dict__, "params_via_env": True}))
    assert check_params_reach(via_env) is via_env


def test_r1_precision_values_are_precision_words() -> None:
    exp = check(Experiment(id="e", workload="synthetic-mlp", varied="precision", values=("fp32", "bf16")))
    assert exp.setting("precision-bf16")["precision"] == "bf16"
    with pytest.raises(BadInput, match="expected precisions"):
        check(Experiment(id="e", workload="synthetic-mlp", varied="precision", values=("fp32", "fp8")))
