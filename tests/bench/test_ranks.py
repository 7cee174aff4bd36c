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


# -- item 2: shards and the rank module (no torch) ----------------------------------------
@pytest.mark.parametrize("n,world", [(10, 2), (11, 2), (7, 3), (2, 4), (0, 2), (5, 1)])
def test_issue13_shards_are_contiguous_deterministic_and_in_corpus_order(n: int, world: int) -> None:
    from gpusession.bench.ranks import shard_bounds

    bounds = [shard_bounds(n, world, r) for r in range(world)]
    assert bounds == [shard_bounds(n, world, r) for r in range(world)]  # deterministic
    items = list(range(n))
    assert [x for a, b in bounds for x in items[a:b]] == items  # by rank = corpus order
    sizes = [b - a for a, b in bounds]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # the first ranks hold the extra item


def test_issue13_shard_sizes_exact() -> None:
    from gpusession.bench.ranks import shard_bounds

    assert [shard_bounds(11, 2, r) for r in range(2)] == [(0, 6), (6, 11)]
    assert [shard_bounds(7, 3, r) for r in range(3)] == [(0, 3), (3, 5), (5, 7)]
    with pytest.raises(ValueError):
        shard_bounds(3, 2, 2)
    with pytest.raises(ValueError):
        shard_bounds(3, 0, 0)


def test_issue13_rank_env_and_torchrun_argv() -> None:
    from gpusession.bench.ranks import RankEnv, rank_env, torchrun_argv

    assert rank_env({}) is None
    assert rank_env({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == RankEnv(1, 2, 1)
    argv = torchrun_argv("/py", 2, ["-m", "gpusession.bench.worker", "--spec", "f"])
    assert argv[:6] == ["/py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    assert argv[6:] == ["-m", "gpusession.bench.worker", "--spec", "f"]


def test_issue13_ranks_csv_appends_with_one_header(tmp_path: Path) -> None:
    import polars as pl

    from gpusession.bench.ranks import RANK_COLUMNS, append_rank_rows

    path = tmp_path / "runs" / "e" / "ranks.csv"
    per_rank = [{"rank": r, "world_size": 2, "device": "cpu", "ok": True, "elapsed_s": 0.5 + r}
                for r in range(2)]
    append_rank_rows(path, "warm:batch-4:1", "warm", per_rank)
    append_rank_rows(path, "warm:batch-4:2", "warm", per_rank)
    frame = pl.read_csv(path)
    assert tuple(frame.columns) == RANK_COLUMNS
    assert frame.height == 4
    assert frame["rank"].to_list() == [0, 1, 0, 1]
    assert frame["run_key"].to_list()[2] == "warm:batch-4:2"
