"""``gpusession agent``: another node joins every torchrun group of a run.

Two "nodes" on loopback: the runner in this process, the agent in a subprocess, the
session folder shared (the same path). Slow: each group starts torch in 4 processes on
2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import processes_naming, rank_experiment, wait_for

from gpusession.bench import agent as agent_mod
from gpusession.bench.agent import Agent, AgentOutcome, pending_specs, run_end
from gpusession.core.events.records import (
    ExperimentFinishedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    IncidentRecord,
)
from gpusession.core.experiment.plan import Experiment
from gpusession.core.files.errors import BadInput
from gpusession.core.folder import journal
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session
from gpusession.core.records.summary import UNFINISHED_KIND


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _two_node_exp(session: Session, exp_id: str, port: int, **kw: Any) -> Experiment:
    exp = rank_experiment(session, exp_id, values=(4,), cold_runs_per_variant=1, gpus=1, nodes=2,
                          rendezvous=f"127.0.0.1:{port}", **kw)
    assert isinstance(exp, Experiment)
    return exp


def _agent(sessions_root: Path, name: str, exp_id: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), "agent", name,
         "--experiment", exp_id],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_agent_refuses_an_experiment_on_one_node(session: Session) -> None:
    exp = define_experiment(session, Experiment(id="one-node", workload="synthetic-mlp", varied="batch",
                                                values=(4,), gpus=2))
    with pytest.raises(BadInput) as err:
        Agent(session.folder, exp)
    assert "runs on one node" in str(err.value) and "--nodes" in str(err.value)


def test_agent_joins_each_spec_file_once_oldest_first(tmp_path: Path) -> None:
    a, b = tmp_path / ".worker-warm.json", tmp_path / ".worker-cold-batch-4-1.json"
    a.write_text("{}")
    b.write_text("{}")
    os.utime(a, ns=(2_000_000_000, 2_000_000_000))
    os.utime(b, ns=(1_000_000_000, 1_000_000_000))
    (tmp_path / "ranks.csv").write_text("")
    assert pending_specs(tmp_path, set()) == [b, a]
    st = b.lstat()
    assert pending_specs(tmp_path, {(b.name, st.st_ino, st.st_mtime_ns)}) == [a]
    b.unlink()
    b.write_text("{}")  # a group started again under the same name: a new file
    os.utime(b, ns=(3_000_000_000, 3_000_000_000))
    assert pending_specs(tmp_path, {(a.name, a.lstat().st_ino, a.lstat().st_mtime_ns)}) == [b]


def test_agent_ends_when_its_experiments_newest_run_has_ended(session: Session) -> None:
    exp = rank_experiment(session, "nodes", values=(4,), gpus=1, nodes=2, rendezvous="127.0.0.1:29400")
    other = rank_experiment(session, "other", values=(4,))
    path = session.folder / journal.JOURNAL
    agent = Agent(session.folder, exp)
    assert agent.run_ended() is False  # no run of it recorded yet: the agent came first, it waits
    journal.append(path, ExperimentStartedRecord(experiment_id=exp.id, runs=["warm"]))
    assert agent.run_ended() is False
    journal.append(path, ExperimentIncompleteRecord(experiment_id=exp.id, runs_done=0, runs_scheduled=1))
    assert agent.run_ended() is True
    journal.append(path, ExperimentStartedRecord(experiment_id=exp.id, runs=["warm"]))  # run again
    assert agent.run_ended() is False
    # another experiment's invocation never ends this one's agent
    journal.append(path, ExperimentStartedRecord(experiment_id=other.id, runs=["warm"]))
    journal.append(path, ExperimentFinishedRecord(experiment_id=other.id, runs_done=1, runs_scheduled=1))
    assert agent.run_ended() is False
    journal.append(path, ExperimentFinishedRecord(experiment_id=exp.id, runs_done=1, runs_scheduled=1))
    assert agent.run_ended() is True


def test_agent_run_end_reads_the_newest_start_of_its_experiment(session: Session) -> None:
    path = session.folder / journal.JOURNAL
    records = lambda: journal.read_records(path)  # noqa: E731
    assert run_end(records(), "nodes") is None  # no run of it yet
    journal.append(path, ExperimentStartedRecord(experiment_id="nodes", runs=["warm"]))
    assert run_end(records(), "nodes") == "running"
    # recovery's "did not finish" for another experiment, or an incident of another kind, says nothing of it
    journal.append(path, IncidentRecord(kind=UNFINISHED_KIND, experiment_id="other", message="m"))
    journal.append(path, IncidentRecord(kind="run_lost", experiment_id="nodes", message="m"))
    assert run_end(records(), "nodes") == "running"
    journal.append(path, IncidentRecord(kind=UNFINISHED_KIND, experiment_id="nodes", message="m"))
    assert run_end(records(), "nodes") == "did_not_finish"
    journal.append(path, ExperimentStartedRecord(experiment_id="nodes", runs=["warm"]))  # run again
    assert run_end(records(), "nodes") == "running"  # the older run's incident is not this one's
    journal.append(path, ExperimentFinishedRecord(experiment_id="nodes", runs_done=1, runs_scheduled=1))
    assert run_end(records(), "nodes") == "ended"


def test_agent_ends_once_recovery_says_the_killed_runs_did_not_finish(session: Session) -> None:
    exp = rank_experiment(session, "nodes", values=(4,), gpus=1, nodes=2, rendezvous="127.0.0.1:29400")
    path = session.folder / journal.JOURNAL
    (session.folder / journal.RUN_LOCK).write_text("4242 runner-node")  # a killed runner's lock stays
    agent = Agent(session.folder, exp)
    journal.append(path, ExperimentStartedRecord(experiment_id=exp.id, runs=["warm"]))
    assert agent.run_ended() is False  # no end record: a killed runner never writes one
    journal.append(path, IncidentRecord(kind=UNFINISHED_KIND, experiment_id=exp.id, message="m"))
    assert agent.run_ended() is True and agent.ended_how == "did_not_finish"


def test_agent_ends_when_the_run_lock_is_gone_and_no_spec_is_left(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_mod, "RUNNER_GONE_GRACE_S", 0.3)
    exp = rank_experiment(session, "nodes", values=(4,), gpus=1, nodes=2, rendezvous="127.0.0.1:29400")
    lock, spec = session.folder / journal.RUN_LOCK, session.runs_dir / exp.id / ".worker-warm.json"
    agent = Agent(session.folder, exp)
    time.sleep(0.4)
    assert agent.run_ended() is False  # no run recorded and no lock: the agent came first, it waits
    lock.write_text("4242 runner-node")
    journal.append(session.folder / journal.JOURNAL, ExperimentStartedRecord(experiment_id=exp.id, runs=["warm"]))
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text("{}")
    assert agent.run_ended() is False
    lock.unlink()  # lock gone, a spec file still there: not over
    time.sleep(0.4)
    assert agent.run_ended() is False
    spec.unlink()
    assert agent.run_ended() is False  # not yet for the grace
    lock.write_text("4242 runner-node")  # between two groups the runner holds the lock
    time.sleep(0.4)
    assert agent.run_ended() is False
    lock.unlink()
    assert agent.run_ended() is False
    time.sleep(0.4)
    assert agent.run_ended() is True and agent.ended_how == "runner_gone"


def test_agent_keeps_torchs_cpp_log_to_errors_unless_asked(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = rank_experiment(session, "nodes", values=(4,), gpus=1, nodes=2, rendezvous="127.0.0.1:29400")
    monkeypatch.delenv("TORCH_CPP_LOG_LEVEL", raising=False)
    env = Agent(session.folder, exp).environment()
    assert env["TORCH_CPP_LOG_LEVEL"] == "ERROR" and env["GPUSESSION_LEADER_NODE"] == "0"
    monkeypatch.setenv("TORCH_CPP_LOG_LEVEL", "INFO")  # the person's own choice wins
    assert Agent(session.folder, exp).environment()["TORCH_CPP_LOG_LEVEL"] == "INFO"


def _fake_torchrun(monkeypatch: pytest.MonkeyPatch, code_of: dict[str, str]) -> None:
    """This node's torchrun replaced by ``python -c CODE``, CODE by the group's worker name."""
    def argv(self: Agent, spec: Path) -> list[str]:
        return [sys.executable, "-c", code_of[spec.stem.removeprefix(".worker-")]]
    monkeypatch.setattr(Agent, "argv", argv)


def _run_in_thread(agent: Agent) -> tuple[Any, list[AgentOutcome]]:
    import threading

    result: list[AgentOutcome] = []
    thread = threading.Thread(target=lambda: result.append(agent.run()), daemon=True)
    thread.start()
    return thread, result


def test_agent_ends_after_its_runner_was_killed_and_claims_no_success(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = rank_experiment(session, "nodes", values=(4,), gpus=1, nodes=2, rendezvous="127.0.0.1:29400")
    _fake_torchrun(monkeypatch, {"cold-batch-8-2": "pass"})  # its torchrun exits 0 when the other node vanishes
    path, lock = session.folder / journal.JOURNAL, session.folder / journal.RUN_LOCK
    said: list[str] = []
    agent = Agent(session.folder, exp, say=said.append, poll_s=0.02)
    thread, result = _run_in_thread(agent)
    time.sleep(0.2)
    assert thread.is_alive()  # started before the run: it waits
    lock.write_text("4242 runner-node")
    journal.append(path, ExperimentStartedRecord(experiment_id=exp.id, runs=["cold"]))
    spec = session.runs_dir / exp.id / ".worker-cold-batch-8-2.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text("{}")
    wait_for(lambda: any("cold-batch-8-2: this node's torchrun exited with code 0" in x for x in said), timeout_s=10)
    time.sleep(0.3)
    assert thread.is_alive()  # the runner was killed: its lock and spec stay, no end record
    # `gpusession show` on the runner's node recovers: the incident, the spec and the lock removed
    journal.append(path, IncidentRecord(kind=UNFINISHED_KIND, experiment_id=exp.id, message="m"))
    spec.unlink()
    lock.unlink()
    thread.join(timeout=10)
    assert not thread.is_alive()
    out = result[0]
    assert out.groups == [("cold-batch-8-2", 0)] and out.run_end == "did_not_finish" and out.interrupted is None
    assert not any("ended: exit 0" in x for x in said)
    assert ("group cold-batch-8-2: this node's torchrun exited with code 0; the runner's record says how the group ended"
            in said)
    assert said[-1].startswith("agent for experiment nodes: the run did not finish")
    assert said[-1].endswith("joined 1 group(s)")


def test_agent_exits_1_when_the_run_it_joined_did_not_finish(
    session: Session, sessions_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpusession.cli import main

    exp = rank_experiment(session, "nodes", values=(4,), gpus=1, nodes=2, rendezvous="127.0.0.1:29400")
    _fake_torchrun(monkeypatch, {"warm": "pass"})
    path = session.folder / journal.JOURNAL
    journal.append(path, ExperimentStartedRecord(experiment_id=exp.id, runs=["warm"]))
    spec = session.runs_dir / exp.id / ".worker-warm.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text("{}")
    journal.append(path, IncidentRecord(kind=UNFINISHED_KIND, experiment_id=exp.id, message="m"))  # recovered
    assert main(["--sessions-dir", str(sessions_root), "agent", session.name, "--experiment", exp.id]) == 1
    assert "the run did not finish" in capsys.readouterr().out


def test_agent_counts_the_group_it_left_when_interrupted(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = rank_experiment(session, "nodes", values=(4,), gpus=1, nodes=2, rendezvous="127.0.0.1:29400")
    _fake_torchrun(monkeypatch, {"cold-batch-4-1": "pass", "warm": "import time; time.sleep(30)"})
    journal.append(session.folder / journal.JOURNAL, ExperimentStartedRecord(experiment_id=exp.id, runs=["warm"]))
    exp_dir = session.runs_dir / exp.id
    exp_dir.mkdir(parents=True, exist_ok=True)
    (exp_dir / ".worker-cold-batch-4-1.json").write_text("{}")
    os.utime(exp_dir / ".worker-cold-batch-4-1.json", ns=(1_000_000_000, 1_000_000_000))
    (exp_dir / ".worker-warm.json").write_text("{}")
    said: list[str] = []
    agent = Agent(session.folder, exp, say=said.append, poll_s=0.02)
    thread, result = _run_in_thread(agent)
    wait_for(lambda: "joining group warm (rendezvous id nodes.warm)" in said, timeout_s=10)
    time.sleep(0.2)
    agent.interrupt("SIGTERM")  # as the command's SIGTERM handler does
    thread.join(timeout=10)
    assert not thread.is_alive()
    out = result[0]
    assert out.groups == [("cold-batch-4-1", 0), ("warm", None)] and out.interrupted == "SIGTERM"
    assert out.run_end is None
    assert "group warm: left when interrupted by SIGTERM" in said
    assert not any("group warm: this node's torchrun" in x for x in said)
    assert said[-1] == "agent for experiment nodes: interrupted by SIGTERM; joined 2 group(s)"


@pytest.mark.slow
@pytest.mark.torch
def test_agent_on_another_node_joins_every_group_of_the_run(
    session: Session, sessions_root: Path, ranks_env: None
) -> None:
    from gpusession.bench.runner import Runner

    s = session
    exp = _two_node_exp(s, "nodes", _free_port())
    agent = _agent(sessions_root, s.name, exp.id)  # started before the run, as a user would
    try:
        time.sleep(0.5)
        out = Runner(s, exp.id).run()
        agent_out, agent_err = agent.communicate(timeout=120)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert out.completed, out.incidents
    assert agent.returncode == 0, agent_err[-2000:]
    # one group per cold run and one warm group, each joined once, in the runner's order
    assert "joining group cold-batch-4-1" in agent_out and "joining group warm " in agent_out
    assert agent_out.count("joining group") == 2 and "the run has ended; joined 2 group(s)" in agent_out
    rows = s.results.rows()
    assert [(r.phase, r.elapsed_seconds is not None, r.corpus_accepted) for r in rows if r.phase != "load"] == [
        ("cold", True, True), ("warm", True, True)]
    assert all("2 ranks" in (r.notes or "") for r in rows if r.phase != "load")
    ids = [json.loads(x)["id"] for x in (s.runs_dir / "nodes" / "batch-4" / "warm-1.jsonl").read_text().splitlines()]
    assert ids == [f"t-{i:03d}" for i in range(9)]  # both nodes' shards, gathered in corpus order
    assert processes_naming(s.folder) == []
    assert not list((s.runs_dir / "nodes").glob(".worker-*.json"))


@pytest.mark.slow
@pytest.mark.torch
def test_h14_agent_ended_by_sigterm_ends_its_torchrun_group(
    session: Session, sessions_root: Path, ranks_env: None
) -> None:
    s = session
    exp = _two_node_exp(s, "nodes", _free_port())
    # the runner's node records its invocation, then writes a group's spec file
    journal.append(s.folder / journal.JOURNAL, ExperimentStartedRecord(experiment_id=exp.id, runs=["warm"]))
    spec = s.runs_dir / exp.id / ".worker-warm.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text("{}")  # a group whose runner never comes: this node's agent waits in the rendezvous
    agent = _agent(sessions_root, s.name, exp.id)
    try:
        wait_for(lambda: [p for p in processes_naming(spec) if "torch.distributed.run" in " ".join(p.cmdline())],
                 timeout_s=60)
        # the runner removes the spec when its group ends: this node leaves the group it was joining
        spec.unlink()
        wait_for(lambda: processes_naming(spec) == [], timeout_s=30)
        assert agent.poll() is None  # and waits for the next group
        spec.write_text("{}")  # a new group (a new file) to join
        wait_for(lambda: [p for p in processes_naming(spec) if "torch.distributed.run" in " ".join(p.cmdline())],
                 timeout_s=60)
        time.sleep(0.5)
        agent.send_signal(signal.SIGTERM)
        agent_out, _err = agent.communicate(timeout=60)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert agent.returncode == 128 + signal.SIGTERM
    assert "interrupted by SIGTERM; joined 2 group(s)" in agent_out  # the group it left counts
    assert "group warm ended on the runner's node before this node joined it; left" in agent_out
    assert "group warm: left when interrupted by SIGTERM" in agent_out and "exited -" not in agent_out
    wait_for(lambda: processes_naming(spec) == [], timeout_s=10)
    assert spec.exists()  # the agent never touches the session's files
    assert s.results.read().height == 0
