"""Several GPUs in one run through torchrun: the ``gpus`` field, shards, ranks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import alive, cli, processes_naming, rank_experiment

from gpusession.core.experiment.plan import Experiment
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.experiments import define_experiment, get_experiment
from gpusession.core.folder.session import Session


def _exp(**kw: object) -> Experiment:
    base: dict[str, object] = dict(id="ranks", workload="synthetic-mlp", values=(4,), device="cpu")
    base.update(kw)
    return Experiment(**base)  # type: ignore[arg-type]


# -- the experiment field ---------------------------------------------------------
def test_gpus_defaults_to_one_and_is_stored(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    assert define_experiment(s, _exp()).gpus == 1
    define_experiment(s, _exp(id="two", gpus=2))
    reopened = Session.open(sessions_root, "s")
    assert reopened.data["experiments"]["two"]["gpus"] == 2
    assert get_experiment(reopened, "two").gpus == 2


def test_gpus_stored_without_the_field_reads_as_one(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    s.update(lambda doc: doc.setdefault("experiments", {}).__setitem__(
        "old", {"workload": "synthetic-mlp", "values": [1]}))
    assert get_experiment(Session.open(sessions_root, "s"), "old").gpus == 1


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "2"])
def test_gpus_must_be_a_whole_number_at_least_one(sessions_root: Path, bad: object) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match="gpus"):
        define_experiment(s, _exp(gpus=bad))


def test_gpus_refused_for_a_command_and_a_numbered_device(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match="command"):
        define_experiment(s, _exp(workload="command", params={"command": ["true"]}, gpus=2))
    with pytest.raises(BadInput, match="cuda:1"):
        define_experiment(s, _exp(device="cuda:1", gpus=2))


def test_cli_define_gpus(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Session.create(sessions_root, "x")
    base = ["experiment", "x", "define", "--id", "e", "--workload", "synthetic-mlp", "--values", "4"]
    code, _out, _err = cli(capsys, sessions_root, *base, "--gpus", "2")
    assert code == 0
    assert get_experiment(Session.open(sessions_root, "x"), "e").gpus == 2
    code, out, _err = cli(capsys, sessions_root, "experiment", "x", "list")
    assert code == 0 and "2 GPUs per node" in out
    code, _out, err = cli(capsys, sessions_root, *base, "--id", "f", "--gpus", "0")
    assert code == 2
    assert "gpus" in err and "Traceback" not in err


# -- shards and the rank module (no torch) ----------------------------------------
@pytest.mark.parametrize("n,world", [(10, 2), (11, 2), (7, 3), (2, 4), (0, 2), (5, 1)])
def test_shards_are_contiguous_deterministic_and_in_corpus_order(n: int, world: int) -> None:
    from gpusession.bench.ranks import shard_bounds

    bounds = [shard_bounds(n, world, r) for r in range(world)]
    assert bounds == [shard_bounds(n, world, r) for r in range(world)]  # deterministic
    items = list(range(n))
    assert [x for a, b in bounds for x in items[a:b]] == items  # by rank = corpus order
    sizes = [b - a for a, b in bounds]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # the first ranks hold the extra item


def test_shard_sizes_exact() -> None:
    from gpusession.bench.ranks import shard_bounds

    assert [shard_bounds(11, 2, r) for r in range(2)] == [(0, 6), (6, 11)]
    assert [shard_bounds(7, 3, r) for r in range(3)] == [(0, 3), (3, 5), (5, 7)]
    with pytest.raises(ValueError):
        shard_bounds(3, 2, 2)
    with pytest.raises(ValueError):
        shard_bounds(3, 0, 0)


def test_rank_env_and_torchrun_argv() -> None:
    from gpusession.bench.ranks import RankEnv, rank_env, torchrun_argv

    assert rank_env({}) is None
    assert rank_env({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == RankEnv(1, 2, 1)
    argv = torchrun_argv("/py", 2, ["-m", "gpusession.bench.worker", "--spec", "f"])
    assert argv[:6] == ["/py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    assert argv[6:] == ["-m", "gpusession.bench.worker", "--spec", "f"]


def test_ranks_csv_appends_with_one_header(tmp_path: Path) -> None:
    import polars as pl

    from gpusession.core.records.ranks import RANK_COLUMNS, append_rank_rows

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


# -- a torchrun group of 2 gloo ranks, end to end ------------------------------
def _rank_exp(session: Session, exp_id: str, **kw: Any) -> Experiment:
    exp = rank_experiment(session, exp_id, **kw)
    assert isinstance(exp, Experiment)
    return exp


def _recorded_pids(s: Session) -> list[tuple[int, float | None]]:
    """(PID, start time) of every launcher, command and rank the journal records."""
    out: list[tuple[int, float | None]] = []
    for r in s.read_journal():
        if r.get("event") in ("worker_started", "command_started") and r.get("pid"):
            out.append((r["pid"], r.get("create_time_s")))
        elif r.get("event") == "worker_loaded" and r.get("rank_pids"):
            out.extend(zip(r["rank_pids"], r.get("rank_create_times_s") or [None] * len(r["rank_pids"]),
                           strict=True))
    return out


@pytest.mark.slow
@pytest.mark.torch
def test_two_gloo_ranks_rows_outputs_and_a_failing_rank(
    session: Session, ranks_env: None
) -> None:
    import polars as pl

    from gpusession.bench.ranks import RUN_FAILED_EXIT
    from gpusession.bench.runner import Runner

    s = session
    # rank 1 raises on batch 2 (drawn first): the run fails for every rank, the group ends
    # with it; a fresh group (loaded and warmed up again) runs batch-4
    exp = _rank_exp(s, "two", gpus=2, warmup_iterations=1,
                    params={"fail_rank": 1, "fail_rank_batch": 2})
    out = Runner(s, exp.id, continue_on_reject=True).run()  # its first run fails: D3 would stop
    rows = [r for r in s.results.rows() if r.experiment_id == "two"]
    warm = {r.variant_id: r for r in rows if r.phase == "warm"}
    assert [r.phase for r in rows] == ["load", "warm", "load", "warm"]  # one row per run
    failed, ok = warm["batch-2"], warm["batch-4"]
    assert failed.elapsed_seconds is None and failed.corpus_accepted is None  # never validated
    note = failed.notes or ""
    assert "rank 1 of 2" in note and "ValueError" in note and "refuses batch 2" in note, note
    assert f"the group ended with this run: rank 1 of 2 exited with code {RUN_FAILED_EXIT}" in note, note
    assert any("rank 1 of 2" in i and "warmup" in i for i in out.incidents)  # its warm-up failed too
    assert any("refuses batch 2" in i and f"code {RUN_FAILED_EXIT}" in i for i in out.incidents)
    assert any("a fresh group runs them" in i for i in out.incidents)
    assert failed.warmup_iterations == 0 and ok.warmup_iterations == 1  # the least over ranks
    loads = [r for r in rows if r.phase == "load"]
    assert [r.run_index for r in loads] == [1, 2] and "warm-again-2" in (loads[1].notes or "")
    assert ok.elapsed_seconds is not None and ok.corpus_accepted is True
    assert ok.gpu_count == 0  # on CPU no GPU held the tensors (R10)
    assert "2 ranks" in (ok.notes or "")
    assert out.completed, out.incidents  # every run ran (a failed run counts, R7)
    exits = [r["exit"] for r in s.read_journal() if r.get("event") == "worker_exited"]
    assert exits == [f"exited with code {RUN_FAILED_EXIT}", "exited with code 0"]
    # per-rank table: 2 ranks × (load, failed run, fresh load, run); between barriers ≥ own
    table = pl.read_csv(s.runs_dir / "two" / "ranks.csv")
    assert table.height == 8 and sorted(table["rank"].to_list()) == [0] * 4 + [1] * 4
    loads_keys = [k for k in table["run_key"].to_list() if k.startswith("load")]
    assert loads_keys == ["load:all:1"] * 2 + ["load:all:2"] * 2  # each load under its own key
    # every results row finds its own ranks (what the Memory pane shows per rank)
    from gpusession.core.records.ranks import ranks_of_row

    for r in rows:
        found = ranks_of_row(s.runs_dir, r.as_dict())
        assert [x["rank"] for x in found] == [0, 1], r
        assert {x["run_key"] for x in found} == {f"{r.phase}:{r.variant_id}:{r.run_index}"}
    own = table.filter(pl.col("run_key") == "warm:batch-4:1")["elapsed_s"].to_list()
    assert len(own) == 2 and all(ok.elapsed_seconds >= x for x in own)
    bad = table.filter((pl.col("run_key") == "warm:batch-2:1") & (pl.col("rank") == 1))
    assert bad["ok"].to_list() == [False] and "ValueError" in bad["error"][0]
    env = s.data["experiments"]["two"]["environment"]
    assert env["world_size"] == 2 and env["rank_devices"] == ["cpu", "cpu"]
    assert "rank_pids" not in env and "rank_create_times_s" not in env
    loaded = [r for r in s.read_journal() if r.get("event") == "worker_loaded"]
    assert [len(r["rank_pids"]) for r in loaded] == [2, 2]  # recovery can find every rank
    assert all(t is not None for r in loaded for t in r["rank_create_times_s"])
    recorded = _recorded_pids(s)
    assert len(recorded) == 6  # 2 launchers, 4 ranks
    assert [pid for pid, ct in recorded if alive(pid, ct)] == []  # no orphan
    assert processes_naming(s.folder) == []  # no rank outlives the run
    # the same work in one process: the gathered output is identical, in corpus order
    one = _rank_exp(s, "one", gpus=1)
    assert Runner(s, one.id).run().completed
    gathered = (s.runs_dir / "two" / "batch-4" / "warm-1.jsonl").read_text()
    assert gathered == (s.runs_dir / "one" / "batch-4" / "warm-1.jsonl").read_text()
    assert [json.loads(x)["id"] for x in gathered.splitlines()] == [f"t-{i:03d}" for i in range(9)]


def test_full_chain_with_several_gpus_refused(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match="scope"):
        define_experiment(s, _exp(scope="full-chain", gpus=2))


_TORCHRUN_FAILED = """\
rank 1: {"event": "incident", "where": "worker", "error_type": "RuntimeError", "message": "boom"}
E1201 01:16:00.488000 6747 api.py:1002] failed (exitcode: 4) local_rank: 1 (pid: 6823)
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 6822)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-01_01:16:00
  rank      : 1 (local_rank: 1)
  exitcode  : 4 (pid: 6823)
============================================================"""


def test_torchrun_root_cause_names_the_rank_its_exit_and_error() -> None:
    from gpusession.bench.ranks import RankFailure, torchrun_root_cause

    lines = _TORCHRUN_FAILED.splitlines()
    assert torchrun_root_cause(lines) == RankFailure(rank=1, exitcode=4, error="RuntimeError: boom")
    assert torchrun_root_cause(lines[1:]) == RankFailure(rank=1, exitcode=4, error=None)
    assert torchrun_root_cause(["ValueError: x", "done"]) is None


def test_rank_notes_name_the_slowest_rank_and_the_failed_one() -> None:
    from gpusession.bench.rank_group import RankRun, rank_notes

    ok = RankRun(elapsed_s=0.5, per_rank=[
        {"rank": 0, "elapsed_s": 0.2, "peak_reserved_bytes": 10},
        {"rank": 1, "elapsed_s": 0.4, "peak_reserved_bytes": 30}])
    assert ok.max_of("peak_reserved_bytes") == (30, 1)
    assert "slowest rank 1" in rank_notes(ok) and "peak reserved on rank 1" in rank_notes(ok)
    bad = RankRun(elapsed_s=None, per_rank=ok.per_rank, failure={"rank": 1})
    assert rank_notes(bad) == "2 ranks: rank 1 failed, the run ended for every rank"


@pytest.mark.slow
@pytest.mark.torch
def test_a_dying_rank_ends_its_group_and_a_fresh_group_runs_the_rest(
    session: Session, ranks_env: None
) -> None:
    from gpusession.bench.runner import Runner

    s = session
    # rank 1 exits with code 7 on batch 2: torchrun ends the group; batch-4 needs a new one
    exp = _rank_exp(s, "dies", gpus=2, params={"die_rank": 1, "die_rank_batch": 2})
    out = Runner(s, exp.id, continue_on_reject=True).run()  # its first run fails: D3 would stop
    rows = s.results.rows()
    warm = {r.variant_id: r for r in rows if r.phase == "warm"}
    assert len(warm) == 2
    died = warm["batch-2"]
    assert died.elapsed_seconds is None and died.corpus_accepted is None  # never validated
    assert "rank 1 of 2 exited with code 7" in (died.notes or "")
    assert warm["batch-4"].elapsed_seconds is not None and warm["batch-4"].corpus_accepted
    loads = [r for r in rows if r.phase == "load"]
    assert [r.run_index for r in loads] == [1, 2]  # loaded again, recorded as such
    assert "warm-again-2" in (loads[1].notes or "")
    assert any("a fresh group runs them" in i for i in out.incidents)
    assert processes_naming(s.folder) == []


# -- GPU: two ranks on two GPUs; one rank through torchrun on any GPU machine -------------
def _gpu_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _gpu_exp(session: Session, exp_id: str, gpus: int) -> Experiment:
    return _rank_exp(session, exp_id, workload="fake_workloads:HugeAt", values=(4,), gpus=gpus,
                     device="cuda", params={"huge_batch": 999}, protocol={})


@pytest.mark.gpu
@pytest.mark.torch
def test_two_ranks_on_two_gpus_uuids_differ_and_peaks_per_rank(
    session: Session, ranks_env: None
) -> None:
    import polars as pl

    from gpusession.bench.runner import Runner

    if _gpu_count() < 2:
        pytest.skip(f"needs 2 GPUs, torch sees {_gpu_count()}")
    s = session
    Runner(s, _gpu_exp(s, "gpus2", 2).id).run()
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 1 and warm[0].elapsed_seconds is not None
    assert warm[0].gpu_count == 2 and warm[0].peak_reserved_bytes is not None
    table = pl.read_csv(s.runs_dir / "gpus2" / "ranks.csv").filter(~pl.col("run_key").str.starts_with("load"))
    assert table["device"].to_list() == ["cuda:0", "cuda:1"]
    uuids = table["gpu_uuid"].to_list()
    assert all(uuids) and uuids[0] != uuids[1]
    assert all(x is not None and x > 0 for x in table["peak_allocated_bytes"].to_list())
    assert warm[0].peak_reserved_bytes == max(table["peak_reserved_bytes"].to_list())
    assert processes_naming(s.folder) == []


@pytest.mark.gpu
@pytest.mark.torch
def test_one_gpu_torchrun_group(session: Session, ranks_env: None) -> None:
    import polars as pl

    from gpusession.bench.runner import Runner

    if _gpu_count() < 1:
        pytest.skip("no CUDA/ROCm device visible to torch")
    s = session
    out = Runner(s, _gpu_exp(s, "one-rank", 1).id, torchrun=True).run()
    assert out.completed, out.incidents
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert warm[0].gpu_count == 1 and warm[0].elapsed_seconds is not None
    assert "1 rank:" in (warm[0].notes or "")
    table = pl.read_csv(s.runs_dir / "one-rank" / "ranks.csv").filter(~pl.col("run_key").str.starts_with("load"))
    assert table["device"].to_list() == ["cuda:0"] and table["gpu_uuid"][0]
    assert processes_naming(s.folder) == []


@pytest.mark.slow
@pytest.mark.torch
def test_a_hanging_rank_is_ended_with_its_launcher_at_the_timeout(
    session: Session, ranks_env: None
) -> None:
    from gpusession.bench.runner import Runner

    s = session
    exp = _rank_exp(s, "hangs", gpus=2, values=(2,), run_timeout_s=30.0,
                    params={"hang_rank": 1, "hang_rank_batch": 2})
    out = Runner(s, exp.id).run()
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 1 and warm[0].elapsed_seconds is None
    assert "timed out after 30 s" in (warm[0].notes or "")
    # the hung rank is named, with where it stood; the other waited at the barrier
    assert "rank 1 of 2 was still working, in predict (fake_workloads.py line" in (warm[0].notes or "")
    assert "rank 0 had finished its share and waited at the barrier" in (warm[0].notes or "")
    assert not out.completed
    assert processes_naming(s.folder) == []  # the launcher and both ranks are gone


# -- the package holds more GPUs than the experiment uses -----------------------------------
def test_warning_when_an_experiment_leaves_gpus_of_the_package_idle(sessions_root: Path) -> None:
    from datetime import datetime, timezone

    from gpusession.core.folder.package import Package
    from gpusession.core.retrieval.evidence import gpus_left_idle

    start = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
    one_lot = Session.create(sessions_root, "b1", package=Package("B200", 1, 7, start))
    assert gpus_left_idle(one_lot, 1) == "uses 1 of 2 GPUs of this B200 lot"
    assert gpus_left_idle(one_lot, 2) is None
    two_lots = Session.create(sessions_root, "b2", package=Package("B200", 2, 7, start))
    assert gpus_left_idle(two_lots, 2) == "uses 2 of 4 GPUs of these 2 B200 lots"
    a5000 = Session.create(sessions_root, "a", package=Package("RTX A5000", 1, 7, start))
    assert gpus_left_idle(a5000, 1) is None
    unset = Session.create(sessions_root, "u")
    assert gpus_left_idle(unset, 1) is None
    # more than the package holds, and the CPU (no GPU used: nothing to say)
    assert gpus_left_idle(one_lot, 4) == "asks for 4 GPUs, but this B200 lot holds 2"
    assert gpus_left_idle(two_lots, 8) == "asks for 8 GPUs, but these 2 B200 lots hold 4"
    assert gpus_left_idle(one_lot, 1, "cpu") is None and gpus_left_idle(one_lot, 1, "cuda:0") is not None


def test_cli_says_how_an_experiment_uses_the_gpus_of_the_package(
    sessions_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import datetime, timezone

    from gpusession.core.folder.package import Package
    from gpusession.core.retrieval.evidence import gpu_use_words

    start = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
    Session.create(sessions_root, "b", package=Package("B200", 1, 7, start))
    define = ["experiment", "b", "define", "--workload", "synthetic-mlp", "--values", "4"]
    code, out, _ = cli(capsys, sessions_root, *define, "--id", "big", "--gpus", "4")
    assert code == 0 and "warning: experiment big asks for 4 GPUs, but this B200 lot holds 2" in out
    code, out, _ = cli(capsys, sessions_root, *define, "--id", "one")
    assert code == 0 and "warning: experiment one uses 1 of 2 GPUs of this B200 lot" in out
    assert "experiment big" not in out  # define speaks of the experiment it defined
    code, out, _ = cli(capsys, sessions_root, *define, "--id", "cpu2", "--gpus", "2", "--device", "cpu")
    assert code == 0 and "warning" not in out  # on the CPU no GPU is used
    code, out, _ = cli(capsys, sessions_root, "experiment", "b", "list")
    assert "cpu2: synthetic-mlp" in out and ", 2 ranks per node on the CPU (gloo)" in out
    assert "big: synthetic-mlp" in out and ", 4 GPUs per node" in out
    assert out.count("warning:") == 2
    two_nodes = Experiment(id="x", workload="synthetic-mlp", values=(1,), gpus=4, nodes=2, rendezvous="h:1")
    assert gpu_use_words(two_nodes) == ", 2 nodes × 4 GPUs per node (rendezvous h:1)"


# -- several nodes: two torchrun agents on 127.0.0.1, c10d rendezvous on loopback ----------
@pytest.mark.parametrize("kw,field", [
    ({"nodes": 0}, "nodes"), ({"nodes": 2}, "rendezvous"), ({"nodes": 2, "rendezvous": "host"}, "rendezvous"),
    ({"nodes": 2, "rendezvous": "h:70000"}, "rendezvous"), ({"rendezvous": "h:29400"}, "rendezvous"),
])
def test_nodes_need_a_rendezvous_endpoint(sessions_root: Path, kw: dict[str, Any], field: str) -> None:
    s = Session.create(sessions_root, "s")
    with pytest.raises(BadInput, match=field):
        define_experiment(s, _exp(**kw))
    assert define_experiment(s, _exp(nodes=2, rendezvous="127.0.0.1:29400")).nodes == 2


def test_torchrun_argv_for_several_nodes() -> None:
    from gpusession.bench.ranks import rendezvous_id, torchrun_argv

    rid = rendezvous_id("sweep", "cold-batch-4-1")
    argv = torchrun_argv("/py", 2, ["-m", "w"], nodes=2, rendezvous="10.0.0.1:29400", run_id=rid, host=False)
    assert argv == ["/py", "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
                    "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.1:29400",
                    "--rdzv-id", "sweep.cold-batch-4-1", "--rdzv-conf", "is_host=0", "-m", "w"]
    with pytest.raises(ValueError):
        torchrun_argv("/py", 2, ["-m", "w"], nodes=2)
    argv = torchrun_argv("/py", 1, ["-m", "w"], nodes=2, rendezvous="h:1", run_id="r", join_timeout_s=30)
    assert argv[argv.index("--rdzv-conf") + 1] == "is_host=1,join_timeout=30"


def test_join_timeout_is_the_run_timeout_at_most_ten_minutes() -> None:
    from gpusession.bench.ranks import join_timeout_s, rendezvous_timed_out
    from gpusession.core.events import WorkerStarted, describe

    assert join_timeout_s(3600.0) == 600 and join_timeout_s(20.0) == 20 and join_timeout_s(0.2) == 1
    assert rendezvous_timed_out(["Traceback", "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"])
    assert not rendezvous_timed_out(["RuntimeError: CUDA out of memory"])
    assert describe(WorkerStarted(worker="warm", pid=1)) is None  # one node: nothing to say
    assert describe(WorkerStarted(worker="warm", pid=1, waiting_for_nodes="group warm: waiting")) == "group warm: waiting"


@pytest.mark.slow
@pytest.mark.torch
def test_two_nodes_two_agents_on_loopback(session: Session, ranks_env: None) -> None:
    import os
    import socket
    import subprocess
    import sys
    import time

    from gpusession.bench.ranks import LEADER_ENV, rendezvous_id, torchrun_argv
    from gpusession.bench.runner import Runner

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = session
    exp = _rank_exp(s, "nodes", gpus=1, nodes=2, rendezvous=f"127.0.0.1:{port}", values=(4,))
    spec = s.runs_dir / "nodes" / ".worker-warm.json"
    # The other node's agent starts first (a lower PID: c10d makes its rank global rank 0),
    # so the leader is the runner's node's local rank 0, global rank 1.
    argv = torchrun_argv(sys.executable, 1, ["-m", "gpusession.bench.worker", "--spec", str(spec)],
                         nodes=2, rendezvous=f"127.0.0.1:{port}", run_id=rendezvous_id("nodes", "warm"),
                         host=False)
    env = dict(os.environ, **{LEADER_ENV: "0"})
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env["PYTHONPATH"]
    other = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        out = Runner(s, exp.id).run()
        other_out, other_err = other.communicate(timeout=120)
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    assert other.returncode == 0, other_err[-2000:]
    assert other_out.strip() == ""  # the other node's rank never talks to the runner
    assert out.completed, out.incidents
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 1 and warm[0].elapsed_seconds is not None and warm[0].corpus_accepted
    assert "2 ranks" in (warm[0].notes or "")
    # c10d orders the agents by address, then PID: the leader is where the runner's agent is
    launcher = [r for r in s.read_journal() if r.get("event") == "worker_started"][0]["pid"]
    env = s.data["experiments"]["nodes"]["environment"]
    assert env["leader_rank"] == (1 if other.pid < launcher else 0)
    ids = [json.loads(x)["id"] for x in (s.runs_dir / "nodes" / "batch-4" / "warm-1.jsonl").read_text().splitlines()]
    assert ids == [f"t-{i:03d}" for i in range(9)]
    assert processes_naming(s.folder) == []


def test_idle_gpu_warnings_per_experiment(sessions_root: Path) -> None:
    from datetime import datetime, timezone

    from gpusession.core.folder.package import Package
    from gpusession.core.retrieval.evidence import idle_gpu_warnings

    s = Session.create(sessions_root, "b", package=Package("B200", 2, 7, datetime(2026, 11, 29, 14, tzinfo=timezone.utc)))
    define_experiment(s, _exp(id="one", device=None))
    define_experiment(s, _exp(id="all", device="cuda", gpus=2, nodes=2, rendezvous="127.0.0.1:29400"))
    assert idle_gpu_warnings(s) == ["experiment one uses 1 of 4 GPUs of these 2 B200 lots"]
    define_experiment(s, _exp(id="on-cpu"))  # the CPU uses no GPU: nothing to warn about
    assert idle_gpu_warnings(s) == ["experiment one uses 1 of 4 GPUs of these 2 B200 lots"]


@pytest.mark.slow
@pytest.mark.torch
def test_h12_cancel_stops_every_rank_at_the_run_boundary(session: Session, ranks_env: None) -> None:
    import threading

    from gpusession.bench.runner import Runner
    from gpusession.core.events import RowAppended, RunnerEvent

    s = session
    exp = _rank_exp(s, "cancel", gpus=2, runs_per_variant=2)
    cancel = threading.Event()

    def on_event(ev: RunnerEvent) -> None:
        if isinstance(ev, RowAppended) and ev.row.phase == "warm":
            cancel.set()

    out = Runner(s, exp.id, on_event=on_event, cancel=cancel).run()
    assert out.cancelled and not out.completed
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 1 and warm[0].elapsed_seconds is not None
    exits = [r["exit"] for r in s.read_journal() if r.get("event") == "worker_exited"]
    assert exits == ["exited with code 0"]  # every rank stopped at the boundary, none killed
    assert processes_naming(s.folder) == []


@pytest.mark.slow
@pytest.mark.torch
def test_ranks_end_with_their_launcher_killed(session: Session, ranks_env: None, tmp_path: Path) -> None:
    import os
    import signal
    import threading
    import time

    from gpusession.bench.runner import Runner
    from gpusession.core.events import RunnerEvent, WorkerStarted

    s = session
    marker = tmp_path / "predicting"
    slept = tmp_path / "slept"  # written by a rank that lived through its 60 s sleep
    exp = _rank_exp(s, "orphans", gpus=2, values=(4,),
                    params={"sleep_s": 60, "marker": str(marker), "done_marker": str(slept)})
    pids: list[int] = []

    def on_event(ev: RunnerEvent) -> None:
        if isinstance(ev, WorkerStarted) and ev.pid is not None:
            pids.append(ev.pid)

    def killer() -> None:
        deadline = time.monotonic() + 90
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(pids[0], signal.SIGKILL)  # torchrun itself: no chance to end its ranks

    t = threading.Thread(target=killer)
    t.start()
    Runner(s, exp.id, on_event=on_event).run()
    t.join()
    assert not slept.exists()  # no rank slept on and the run did not wait for one: parent-death signal
    warm = [r for r in s.results.rows() if r.phase == "warm"]
    assert len(warm) == 1 and warm[0].elapsed_seconds is None and "SIGKILL" in (warm[0].notes or "")
    assert processes_naming(s.folder) == []


@pytest.mark.slow
@pytest.mark.torch
def test_a_rank_failing_its_load_leaves_one_load_row_naming_it(session: Session, ranks_env: None) -> None:
    from gpusession.bench.runner import Runner

    s = session
    exp = _rank_exp(s, "noload", gpus=2, values=(4,), params={"load_fail_rank": 1})
    out = Runner(s, exp.id).run()
    loads = [r for r in s.results.rows() if r.phase == "load"]
    assert len(loads) == 1 and loads[0].corpus_accepted is None  # no corpus validated
    note = loads[0].notes or ""
    assert "load failed" in note and "rank 1 of 2: rank 1 cannot load" in note, note
    assert not out.completed
    assert any("exited with code 3" in i for i in out.incidents)  # the group ended together
    assert processes_naming(s.folder) == []


# -- recovery: a rank of an earlier run still alive is ended before the next run ------------
def _stray(tmp_path: Path) -> Any:
    """A stray 'rank': a sleep in a session of its own (out of any launcher's group)."""
    import subprocess

    return subprocess.Popen(["sleep", "60"], start_new_session=True, cwd=tmp_path)


def _journal_ranks(s: Session, pid: int, create_time_s: float, host: str) -> None:
    """Journal a torchrun group's ranks as the runner does (worker_loaded)."""
    from gpusession.core.events import WorkerLoadedRecord

    s.journal(WorkerLoadedRecord(experiment_id="quick", worker="warm", elapsed_s=1.0,
                                 rank_pids=[999_999_999, pid], rank_create_times_s=[1.0, create_time_s],
                                 rank_hosts=[host, host]))


def _run_quick(s: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _out, err = cli(capsys, sessions_root, "experiment", s.name, "define", "--id", "quick",
                          "--workload", "command", "--values", "1", "--runs", "1", "--warmup", "0",
                          "--cold-runs", "0", "--command", "true")
    assert code == 0, err
    code, out, _err = cli(capsys, sessions_root, "run", s.name, "--headless")
    return code, out


def test_recovery_ends_a_recorded_rank_still_alive_before_the_next_run(
    sessions_root: Path, session: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import platform

    import psutil

    stray = _stray(tmp_path)
    try:
        _journal_ranks(session, stray.pid, psutil.Process(stray.pid).create_time(), platform.node())
        code, out = _run_quick(session, sessions_root, capsys)
        assert stray.wait(timeout=10) == -9  # ended (SIGKILL), not left to sleep on
        assert f"a rank of an earlier run was still alive (pid {stray.pid})" in out, out
        recs = session.read_journal()
        ended = next(i for i, r in enumerate(recs) if f"pid {stray.pid}" in str(r.get("message")))
        started = next(i for i, r in enumerate(recs) if r.get("event") == "worker_started")
        assert ended < started  # before the next run's worker started
        assert code == 1  # the leftover is an incident of this run
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait()


def test_recovery_spares_a_reused_rank_pid_and_another_hosts_rank(
    sessions_root: Path, session: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import platform

    import psutil

    from gpusession.core.folder.journal import read_records
    from gpusession.core.folder.processes import end_recorded

    stray = _stray(tmp_path)
    try:
        ct = psutil.Process(stray.pid).create_time()
        # the journal names this PID with another start time: a rank long gone, PID reused
        _journal_ranks(session, stray.pid, ct - 100, platform.node())
        # the same PID and start time on another node of the group: not a process of this host
        _journal_ranks(session, stray.pid, ct, platform.node() + "-other-node")
        assert end_recorded(read_records(session.journal_path)) == []
        code, out = _run_quick(session, sessions_root, capsys)
        assert code == 0, out
        assert stray.poll() is None and "earlier run" not in out
    finally:
        stray.kill()
        stray.wait()


# -- the GPU path's logic, with a stand-in torch (the real NCCL path needs GPUs: see the gpu tests)
def _fake_torch(monkeypatch: pytest.MonkeyPatch, *, gpus: int, device_id_ok: bool = True) -> list[tuple[Any, ...]]:
    import sys
    import types

    calls: list[tuple[Any, ...]] = []

    def init_process_group(backend: str, **kw: Any) -> None:
        if "device_id" in kw and not device_id_ok:
            raise TypeError("init_process_group() got an unexpected keyword argument 'device_id'")
        calls.append(("init", backend, kw.get("device_id")))

    def new_group(backend: str) -> str:
        calls.append(("new_group", backend))
        return f"{backend}-group"

    def all_gather_object(out: list[Any], obj: Any, group: Any = None) -> None:
        calls.append(("all_gather", group))
        out[:] = [obj] * len(out)

    dist = types.SimpleNamespace(init_process_group=init_process_group, new_group=new_group,
                                 all_gather_object=all_gather_object)
    cuda = types.SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus,
                                 set_device=lambda i: calls.append(("set_device", i)),
                                 synchronize=lambda d=None: None)
    torch = types.SimpleNamespace(cuda=cuda, device=lambda text: f"device({text})", distributed=dist)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    return calls


def test_a_gpu_rank_binds_cuda_local_rank_joins_nccl_and_talks_over_gloo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpusession.bench.rank_group import RankGroup
    from gpusession.bench.ranks import RankEnv

    calls = _fake_torch(monkeypatch, gpus=2)
    g = RankGroup(RankEnv(3, 4, 1), None)  # rank 3 of 4, the second GPU of its node
    assert g.device == "cuda:1"
    assert calls[:3] == [("set_device", 1), ("init", "nccl", "device(cuda:1)"), ("new_group", "gloo")]
    assert calls[3] == ("all_gather", "gloo-group")  # collectives travel over the gloo side group
    assert g.leader == 0 and not g.is_leader

    calls = _fake_torch(monkeypatch, gpus=2, device_id_ok=False)  # torch < 2.3: no device_id
    assert RankGroup(RankEnv(0, 2, 0), "cuda").device == "cuda:0"
    assert ("init", "nccl", None) in calls

    calls = _fake_torch(monkeypatch, gpus=2)
    g = RankGroup(RankEnv(0, 2, 0), "cpu")  # CPU asked: gloo, the default group carries all
    assert g.device == "cpu" and g.ctl is None and calls[0] == ("init", "gloo", None)


def test_a_rank_without_its_gpu_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.bench.rank_group import RankGroup
    from gpusession.bench.ranks import RankEnv

    _fake_torch(monkeypatch, gpus=2)
    with pytest.raises(RuntimeError, match="local rank 2 has no GPU: torch sees 2 on this node"):
        RankGroup(RankEnv(2, 3, 2), None)
    _fake_torch(monkeypatch, gpus=0)
    with pytest.raises(RuntimeError, match="torch sees no CUDA/ROCm device"):
        RankGroup(RankEnv(0, 2, 0), "cuda")
    assert RankGroup(RankEnv(0, 2, 0), None).device == "cpu"  # no GPU, none asked: gloo on CPU


@pytest.mark.slow
@pytest.mark.torch
def test_other_nodes_that_never_join_stop_the_experiment_once(session: Session, ranks_env: None) -> None:
    """No agent on the other node: the first group waits its join timeout, then the experiment stops."""
    import socket
    import time

    from gpusession.bench.runner import Runner
    from gpusession.core.events import describe

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = session
    exp = _rank_exp(s, "alone", gpus=1, nodes=2, rendezvous=f"127.0.0.1:{port}", values=(4, 8),
                    cold_runs_per_variant=1, run_timeout_s=8.0)
    said: list[str] = []
    t0 = time.monotonic()
    out = Runner(s, exp.id, on_event=lambda ev: said.append(describe(ev) or "")).run()
    took = time.monotonic() - t0
    assert not out.completed
    assert took < 60, took  # one group waited, not every group of the experiment
    started = [r for r in s.read_journal() if r.get("event") == "worker_started"]
    assert len(started) == 1
    waiting = [w for w in said if "waiting up to 8 s for the other 1 node(s)" in w]
    assert waiting and f"gpusession agent {s.name} --experiment alone" in waiting[0]
    stop = [i for i in out.incidents if "did not join the rendezvous" in i]
    assert stop and f"127.0.0.1:{port} within 8 s" in stop[0] and "nothing was measured" in stop[0], out.incidents
    assert [r.phase for r in s.results.rows()] == ["load"]  # the load that never happened, said once
    assert processes_naming(s.folder) == []


def test_a_gpu_index_this_torch_does_not_see_is_refused_before_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from gpusession.bench.device import TorchDevice
    from gpusession.bench.ranks import DeviceUnavailable

    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 2)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        cuda=cuda, device=lambda text: types.SimpleNamespace(type=text.split(":")[0], index=(
            int(text.split(":")[1]) if ":" in text else None))))
    assert TorchDevice("cuda:1").device == "cuda:1"
    with pytest.raises(DeviceUnavailable, match=r"device cuda:2 requested but torch sees 2 GPU\(s\): cuda:0 to cuda:1"):
        TorchDevice("cuda:2")
    cuda.is_available = lambda: False
    with pytest.raises(DeviceUnavailable, match="torch sees no CUDA/ROCm device"):
        TorchDevice("cuda")


@pytest.mark.slow
@pytest.mark.torch
def test_a_missing_gpu_stops_the_experiment_at_the_first_group(session: Session, ranks_env: None) -> None:
    """Every group would fail the same way: one load row, one incident with the advice, one group tried."""
    import torch

    from gpusession.bench.runner import Runner

    if torch.cuda.is_available():
        pytest.skip("this machine's torch sees a GPU: the missing-GPU path cannot be shown here")
    s = session
    exp = _rank_exp(s, "no-gpu", gpus=2, device="cuda", cold_runs_per_variant=1)
    out = Runner(s, exp.id).run()
    assert not out.completed
    assert len([r for r in s.read_journal() if r.get("event") == "worker_started"]) == 1
    assert [r.phase for r in s.results.rows()] == ["load"]
    said = [i for i in out.incidents if "DeviceUnavailable" in i]
    assert len(said) == 1 and "--device cpu" in said[0] and "it asks for 2" in said[0], out.incidents
    assert processes_naming(s.folder) == []


def test_elapsed_is_never_shorter_than_a_ranks_own_time_and_notes_have_no_exponent() -> None:
    """Barriers are left at different instants: the longest interval between them decides."""
    from types import SimpleNamespace

    from gpusession.bench.rank_group import RankGroup, rank_notes

    class TwoRanks(RankGroup):
        def __init__(self) -> None:  # no torch: the protocol only
            self.rank, self.world_size, self.leader, self.is_leader, self.device = 0, 2, 0, True, "cpu"

        def barrier(self) -> None:
            pass

        def all_gather(self, obj: Any) -> list[Any]:  # rank 1 left the first barrier earlier
            return [obj, {**obj, "rank": 1, "elapsed_s": 0.0120, "_between_s": 0.0125, "_failure": None}]

    ticks = iter([0, 10_000_000])  # the leader: 10 ms between the barriers
    timer = SimpleNamespace(measure=lambda work: SimpleNamespace(elapsed_s=0.0000614, result=work()))
    rr = TwoRanks().measure(timer, lambda: ["a"], clock=lambda: next(ticks))
    assert rr.elapsed_s == 0.0125
    assert all(rr.elapsed_s >= r["elapsed_s"] for r in rr.per_rank)
    notes = rank_notes(rr)
    assert "slowest rank 1 (12.0 ms own of 12.5 ms between barriers)" in notes, notes
    assert "e-0" not in notes and "_between_s" not in rr.per_rank[0]


@pytest.mark.slow
@pytest.mark.torch
def test_rank_dead_on_another_node_is_never_blamed_on_the_survivor(
    session: Session, sessions_root: Path, ranks_env: None
) -> None:
    """Two "nodes" on loopback (the runner here, ``gpusession agent`` in a subprocess);
    the agent's rank exits mid-run: the runner's rank only sees its peer's connection close."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from gpusession.bench.runner import Runner

    s = session
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    exp = _rank_exp(s, "nodes", values=(4,), gpus=1, nodes=2, rendezvous=f"127.0.0.1:{port}",
                    run_timeout_s=90.0, params={"die_agent_rank": True, "die_rank_batch": 4})
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    agent = subprocess.Popen(
        [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), "agent", s.name,
         "--experiment", exp.id], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        out = Runner(s, exp.id).run()
    finally:
        agent.kill()
        agent.communicate(timeout=30)
    [row] = [r for r in s.results.rows() if r.phase == "warm"]
    notes = row.notes or ""
    assert row.elapsed_seconds is None and row.corpus_accepted is None, notes
    assert "lost a rank on another node" in notes, notes
    assert "exited with code 4 (torchrun ended the group)" not in notes, notes
    assert "GLHF" not in notes and "*****" not in notes and ".cc:" not in notes, notes
    assert not any("GLHF" in i or "*****" in i for i in out.incidents), out.incidents



def test_s5_a_gpu_mismatch_is_typed_by_its_counts_and_says_the_same_words(sessions_root: Path) -> None:
    """The Run pane's "fewer"/"more" hint reads ``asks_more``, never the warning's words (A1)."""
    from datetime import datetime, timezone

    from gpusession.core.folder.package import Package
    from gpusession.core.retrieval.evidence import gpu_mismatch, gpus_left_idle

    start = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
    one_lot = Session.create(sessions_root, "b1", package=Package("B200", 1, 7, start))
    more = gpu_mismatch(one_lot, 4)
    assert more is not None and more.asks_more and (more.asked, more.held) == (4, 2)
    assert more.words == gpus_left_idle(one_lot, 4)
    idle = gpu_mismatch(one_lot, 1)
    assert idle is not None and not idle.asks_more and idle.words == gpus_left_idle(one_lot, 1)
    assert gpu_mismatch(one_lot, 2) is None
