"""Required workload params are refused at define time, not at run."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from gpusession.core.experiment.params import REQUIRED_PARAMS, check_params
from gpusession.core.experiment.plan import Experiment
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session


def test_define_refuses_bbc_news_without_model_dir(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    before = s.session_toml.read_bytes()
    with pytest.raises(BadInput) as exc:
        define_experiment(s, Experiment(id="e2", workload="bbc-news", values=(1,)))
    assert exc.value.message == ("workload bbc-news needs --param model_dir=DIR "
                                 "(the trained model's folder, e.g. from `gpusession demo`)")
    assert exc.value.field == "experiments.e2.params.model_dir"
    assert s.session_toml.read_bytes() == before  # nothing stored
    define_experiment(s, Experiment(id="e2", workload="bbc-news", values=(1,), params={"model_dir": "models"}))


def test_check_params_blank_value_and_other_workloads() -> None:
    with pytest.raises(BadInput):
        check_params("bbc-news", {"model_dir": "  "})
    check_params("synthetic-mlp", {})
    check_params("command", {"command": ["true"]})
    check_params("pkg.mod:make", {})


@pytest.mark.torch
def test_required_params_match_the_constructors() -> None:
    """The table says exactly which constructor arguments have no default."""
    from gpusession.bench.workloads.bbc_news import BbcNewsWorkload
    from gpusession.bench.workloads.synthetic_mlp import SyntheticMlp

    for name, cls in (("bbc-news", BbcNewsWorkload), ("synthetic-mlp", SyntheticMlp)):
        needed = {p.name for p in inspect.signature(cls.__init__).parameters.values()
                  if p.name != "self" and p.default is inspect.Parameter.empty
                  and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}
        assert needed == set(REQUIRED_PARAMS[name]), name
