"""Several GPUs in one run through torchrun (issue 13): the ``gpus`` field, shards, ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.bench.plan import Experiment, define_experiment, get_experiment
from gpusession.core.errors import BadInput
from gpusession.core.session import Session
from tests.helpers import cli


def _exp(**kw: object) -> Experiment:
    base: dict[str, object] = dict(id="ranks", workload="synthetic-mlp", values=(4,), device="cpu")
    base.update(kw)
    return Experiment(**base)  # type: ignore[arg-type]


# -- item 1: the experiment field ---------------------------------------------------------
def test_issue13_gpus_defaults_to_one_and_is_stored(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    assert define_experiment(s, _exp()).gpus == 1
    define_experiment(s, _exp(id="two", gpus=2))
    reopened = Session.open(sessions_root, "s")
    assert reopened.data["experiments"]["two"]["gpus"] == 2
    assert get_experiment(reopened, "two").gpus == 2


def test_issue13_gpus_stored_without_the_field_reads_as_one(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    s.update(lambda doc: doc.setdefault("experiments", {}).__setitem__(
        "old", {"workload": "synthetic-mlp", "values": [1]}))
    assert get_experiment(Session.open(sessions_root, "s"), "old").gpus == 1


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "2"])
def test_issue13_gpus_must_be_a_whole_number_at_least_one(sessions_root: Path, bad: object) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match="gpus"):
        define_experiment(s, _exp(gpus=bad))


def test_issue13_gpus_refused_for_a_command_and_a_numbered_device(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match="command"):
        define_experiment(s, _exp(workload="command", params={"command": ["true"]}, gpus=2))
    with pytest.raises(BadInput, match="cuda:1"):
        define_experiment(s, _exp(device="cuda:1", gpus=2))


def test_issue13_cli_define_gpus(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Session.create(sessions_root, "x")
    base = ["experiment", "x", "define", "--id", "e", "--workload", "synthetic-mlp", "--values", "4"]
    code, _out, _err = cli(capsys, sessions_root, *base, "--gpus", "2")
    assert code == 0
    assert get_experiment(Session.open(sessions_root, "x"), "e").gpus == 2
    code, _out, err = cli(capsys, sessions_root, *base, "--id", "f", "--gpus", "0")
    assert code == 2
    assert "gpus" in err and "Traceback" not in err
