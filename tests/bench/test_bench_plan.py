"""bench.plan: experiments stored before they run, forks on change, schedules (R1-R5, V5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.core.experiment.plan import (
    Experiment,
    draw_warm_order,
    schedule,
    workers_of,
)
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.experiments import define_experiment, get_experiment, load_experiments
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.01}


def _exp(**kw: object) -> Experiment:
    base: dict[str, object] = dict(id="batch-sweep", workload="bbc-news", corpus="corpus/eval.jsonl",
                                   values=(1, 4, 8), protocol=PROTOCOL, params={"model_dir": "models"})
    base.update(kw)
    return Experiment(**base)  # type: ignore[arg-type]


def test_r1_experiment_stored_in_session_toml_before_it_runs(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    exp = define_experiment(s, _exp())
    reopened = Session.open(sessions_root, "s")
    stored = get_experiment(reopened, "batch-sweep")
    assert stored == exp
    assert reopened.data["experiments"]["batch-sweep"]["values"] == [1, 4, 8]
    assert reopened.data["experiments"]["batch-sweep"]["precision"] == "fp32"
    assert [e.id for e in load_experiments(reopened)] == ["batch-sweep"]


def test_r1_changing_a_fixed_setting_after_a_measurement_forks_the_id(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    define_experiment(s, _exp())
    # no measurement yet: redefinition replaces
    assert define_experiment(s, _exp(context_limit=256)).id == "batch-sweep"
    s.results.append(ResultRow(experiment_id="batch-sweep", phase="warm", elapsed_seconds=1.0))
    forked = define_experiment(s, _exp(context_limit=128))
    assert forked.id == "batch-sweep-2"
    assert s.data["experiments"]["batch-sweep"]["context_limit"] == 256  # untouched
    # same settings again → same experiment, no third id
    assert define_experiment(s, _exp(context_limit=256)).id == "batch-sweep"
    assert define_experiment(s, _exp(context_limit=128)).id == "batch-sweep-2"
    assert any(r["event"] == "experiment_forked" for r in s.read_journal())


def test_r1_precision_is_its_own_experiment(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match="precision"):
        define_experiment(s, _exp(varied="precision", values=(1, 2)))
    define_experiment(s, _exp())
    s.results.append(ResultRow(experiment_id="batch-sweep", phase="warm", elapsed_seconds=1.0))
    assert define_experiment(s, _exp(precision="bf16")).id == "batch-sweep-2"


def test_v5_changing_the_protocol_after_a_measurement_forks(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    define_experiment(s, _exp())
    s.results.append(ResultRow(experiment_id="batch-sweep", phase="warm", elapsed_seconds=1.0))
    changed = dict(PROTOCOL, threshold=0.8)
    assert define_experiment(s, _exp(protocol=changed)).id == "batch-sweep-2"


def test_r2_scope_must_be_declared_processing_or_full_chain(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match="scope"):
        define_experiment(s, _exp(scope="wall"))
    assert define_experiment(s, _exp(scope="full-chain")).scope == "full-chain"


def test_r2_a_command_workload_is_recorded_full_chain(sessions_root: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Its process is timed from start to exit: the record never says "processing"."""
    from helpers import cli

    s = Session.create(sessions_root, "s")
    cmd = Experiment(id="c", workload="command", values=(1,), params={"command": ["true", "{batch}"]})
    assert define_experiment(s, cmd).scope == "full-chain"  # a form's default is not what runs
    code, _out, _err = cli(capsys, sessions_root, "experiment", "s", "define", "--id", "c2",
                           "--workload", "command", "--values", "1", "--command", "true {batch}")
    assert code == 0 and get_experiment(Session.open(sessions_root, "s"), "c2").scope == "full-chain"
    code, _out, err = cli(capsys, sessions_root, "experiment", "s", "define", "--id", "c3",
                          "--workload", "command", "--values", "1", "--command", "true {batch}",
                          "--scope", "processing")
    assert code == 2 and "timed as a whole process" in err and "full-chain" in err
    code, out, _err = cli(capsys, sessions_root, "experiment", "s", "list")
    assert "scope full-chain" in out and "c3" not in out


def test_r3_schedule_separates_cold_workers_from_the_warm_worker() -> None:
    runs = schedule(_exp())
    cold = [r for r in runs if r.phase == "cold"]
    warm = [r for r in runs if r.phase == "warm"]
    assert [r.variant_id for r in cold] == ["batch-1", "batch-4", "batch-8"]
    assert len({r.worker for r in cold}) == 3  # one fresh process per cold run
    assert {r.worker for r in warm} == {"warm"} and len(warm) == 15
    groups = workers_of(runs)
    assert [name for name, _ in groups] == ["cold-batch-1-1", "cold-batch-4-1", "cold-batch-8-1", "warm"]


def test_r5_interleaved_and_seeded_shuffled_orders() -> None:
    inter = draw_warm_order(_exp())
    assert inter[:6] == ["batch-1", "batch-4", "batch-8", "batch-1", "batch-4", "batch-8"]
    a = draw_warm_order(_exp(order="shuffled", order_seed=7))
    b = draw_warm_order(_exp(order="shuffled", order_seed=7))
    c = draw_warm_order(_exp(order="shuffled", order_seed=8))
    assert a == b and a != c
    assert sorted(a) == sorted(inter)  # five of each
    assert all(a.count(v) == 5 for v in ("batch-1", "batch-4", "batch-8"))


def test_r5_run_indexes_continue_after_earlier_invocations() -> None:
    runs = schedule(_exp(), {("warm", "batch-4"): 5, ("cold", "batch-1"): 1})
    assert [r.run_index for r in runs if r.variant_id == "batch-4" and r.phase == "warm"] == [6, 7, 8, 9, 10]
    assert [r.run_index for r in runs if r.phase == "cold" and r.variant_id == "batch-1"] == [2]


def test_bad_experiment_settings_are_refused_with_field() -> None:
    from gpusession.core.experiment.plan import check

    with pytest.raises(BadInput, match="experiments.x.values"):
        check(_exp(id="x", values=(1, 1)))
    with pytest.raises(BadInput, match="order"):
        check(_exp(order="random"))
    with pytest.raises(BadInput, match="device"):
        check(_exp(device="tpu"))
    with pytest.raises(BadInput, match="params"):
        check(_exp(workload="command"))


def test_r1_run_on_another_device_is_a_new_experiment_once_measured(sessions_root: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``run --device``: never pools runs on two devices into one median."""
    from gpusession.commands.run_cmds import _experiment_for_device

    s = Session.create(sessions_root, "s")
    define_experiment(s, _exp(device="cpu"))
    assert _experiment_for_device(s, "batch-sweep", None) == "batch-sweep"
    assert _experiment_for_device(s, "batch-sweep", "cpu") == "batch-sweep"
    # nothing measured yet: the definition says the device that runs
    assert _experiment_for_device(s, "batch-sweep", "cuda") == "batch-sweep"
    assert get_experiment(s, "batch-sweep").device == "cuda"
    s.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                               run_index=1, device="cuda:0", elapsed_seconds=0.1))
    assert _experiment_for_device(s, "batch-sweep", "cpu") == "batch-sweep-2"
    assert "runs on cpu go to experiment batch-sweep-2" in capsys.readouterr().out
    assert get_experiment(s, "batch-sweep").device == "cuda" and get_experiment(s, "batch-sweep-2").device == "cpu"
    assert _experiment_for_device(s, "batch-sweep", "cpu") == "batch-sweep-2"  # the same one again
