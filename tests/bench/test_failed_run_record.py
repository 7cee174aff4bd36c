"""What the record says of a run that failed, was cut or lost a rank.

A row states what happened, never what did not: a run whose output was never validated
leaves ``corpus_accepted`` empty; a survivor that lost its peer is never blamed; no
banner or decoration is quoted. The runner is driven by a fake worker (scripted events,
stderr and exit code): no subprocess, no torch.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fake_workloads import write_corpus

import gpusession.bench.runner as runner_module
from gpusession.bench.process import EOF_EVENT, WorkerProcess, is_decoration
from gpusession.bench.ranks import error_gist, lost_peer, torchrun_root_cause
from gpusession.bench.runner import Runner
from gpusession.core.events import (
    WorkerEnvironment,
    WorkerIncident,
    WorkerLoaded,
    WorkerReady,
    WorkerRunFinished,
    WorkerRunStarted,
)
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}

#: torchrun's banner, as it prints it before the ranks start.
BANNER = [
    "*****************************************",
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
    "your system being overloaded, please further tune the variable for optimal performance in "
    "your application as needed. ",
    "*****************************************",
]

#: gloo's words when the rank at the other end of a connection is gone (torch 2.13).
GLOO_LOST = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
             "closed by peer [127.0.0.1]:18312. This is typically caused by a remote worker crashing. "
             "Check the logs of the remote worker before reporting an error. GLHF! \U0001f3d6\ufe0f")


def _summary(*failures: tuple[bool, int, int]) -> list[str]:
    """torchrun's failure summary: ``(root cause?, rank, exit code)`` per failed rank."""
    out = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "============================================================",
           "gpusession.bench.worker FAILED",
           "------------------------------------------------------------",
           "Failures:"]
    others = [f for f in failures if not f[0]]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for i, (_, rank, code) in enumerate(others, 1):
        out += [f"[{i}]:", "  time      : 2026-12-01_16:25:56", "  host      : localhost",
                f"  rank      : {rank} (local_rank: {rank})", f"  exitcode  : {code} (pid: 2135{rank})",
                "  error_file: <N/A>", "  traceback : Signal 15 (SIGTERM) received by PID 21356"]
    out += ["------------------------------------------------------------",
            "Root Cause (first observed failure):"]
    for _, rank, code in (f for f in failures if f[0]):
        out += ["[0]:", "  time      : 2026-12-01_16:25:56", "  host      : localhost",
                f"  rank      : {rank} (local_rank: 0)", f"  exitcode  : {code} (pid: 21444) ",
                "  error_file: <N/A>",
                "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]
    return [*out, "============================================================"]


def _dead_pid() -> int:
    """A PID no process holds any more (what the journal records for the fake worker)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


Script = Callable[[dict[str, Any]], tuple[list[Any], list[str], int]]


class _Events(queue.Queue):  # type: ignore[type-arg]
    """The fake worker's events; ``on_eof`` runs when the runner reads the end."""

    on_eof: Callable[[], None] | None = None

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        item = super().get(block, timeout)
        if item is EOF_EVENT and self.on_eof is not None:
            self.on_eof()
        return item


class FakeWorker:
    """Stands in for :class:`WorkerProcess`: the events, stderr and exit code of ``script``."""

    script: Script
    on_eof: Callable[[], None] | None = None
    last_stderr = WorkerProcess.last_stderr

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        spec = json.loads(Path(argv[argv.index("--spec") + 1]).read_text(encoding="utf-8"))
        events, stderr, self.code = type(self).script(spec)
        pid = _dead_pid()
        self.proc = SimpleNamespace(pid=pid)
        self.ident = SimpleNamespace(pid=pid, create_time_s=None)
        self.events = _Events()
        self.events.on_eof = type(self).on_eof
        for ev in events:
            self.events.put(ev)
        self.events.put(EOF_EVENT)
        self.stderr: deque[str] = deque(stderr, maxlen=200)

    def send(self, text: str) -> None:
        """The runner's ``go``/``stop``: nothing listens."""

    def finish(self, timeout: float = 30.0) -> int:
        return self.code

    def end_group(self) -> list[int]:
        return []


def _started(spec: dict[str, Any], env: dict[str, Any] | None = None) -> list[Any]:
    """A worker that loaded, was told to go and started its first run."""
    return [WorkerEnvironment(environment={"device": "cpu", **(env or {})}),
            WorkerLoaded(elapsed_s=0.5), WorkerReady(run_key=spec["runs"][0]["run_key"]),
            WorkerRunStarted(run_key=spec["runs"][0]["run_key"])]


def _exp(session: Session, **kw: Any) -> Experiment:
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    base: dict[str, Any] = dict(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(4,), runs_per_variant=1, cold_runs_per_variant=0,
        warmup_iterations=0, protocol=PROTOCOL, device="cpu",
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))


@pytest.fixture
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> type[FakeWorker]:
    class Worker(FakeWorker):
        pass

    class Launcher:  # what the runner starts a worker with (gpusession.bench.launch.Launcher)
        def start(self, argv: list[str], env: dict[str, str], spec: dict[str, Any]) -> Worker:
            return Worker(argv, env)

    monkeypatch.setattr(runner_module, "default_launcher", Launcher)
    return Worker


def _warm_row(session: Session) -> Any:
    rows = [r for r in session.results.rows() if r.phase == "warm"]
    assert len(rows) == 1
    return rows[0]


# -- 1. a run whose output was never validated holds no verdict -------------------------
def test_run_cut_by_sighup_leaves_corpus_accepted_empty(
        session: Session, fake_worker: type[FakeWorker]) -> None:
    exp = _exp(session)
    fake_worker.script = staticmethod(lambda spec: (_started(spec), BANNER, -15))  # type: ignore[assignment]
    runner = Runner(session, exp.id)
    fake_worker.on_eof = staticmethod(lambda: runner.interrupt("SIGHUP"))  # type: ignore[assignment]
    out = runner.run()
    assert out.interrupted == "SIGHUP"
    row = _warm_row(session)
    assert "interrupted by SIGHUP" in (row.notes or "")
    assert row.elapsed_seconds is None and row.ids_match is None
    assert row.corpus_accepted is None  # never validated: not "rejected"


def test_run_that_raised_leaves_corpus_accepted_empty(
        session: Session, fake_worker: type[FakeWorker]) -> None:
    exp = _exp(session)

    def script(spec: dict[str, Any]) -> tuple[list[Any], list[str], int]:
        key = spec["runs"][0]["run_key"]
        return [*_started(spec), WorkerRunFinished(run_key=key, ok=False, phase="warm",
                                                   error_type="RuntimeError", message="boom")], [], 0

    fake_worker.script = staticmethod(script)  # type: ignore[assignment]
    Runner(session, exp.id).run()
    row = _warm_row(session)
    assert "RuntimeError: boom" in (row.notes or "")
    assert row.corpus_accepted is None


# -- 2. a rank on another node died: the survivor is never blamed -----------------------
def test_rank_lost_on_another_node_never_blames_the_survivor(
        session: Session, fake_worker: type[FakeWorker]) -> None:
    exp = _exp(session, nodes=2, rendezvous="127.0.0.1:29611")

    def script(spec: dict[str, Any]) -> tuple[list[Any], list[str], int]:
        events = [*_started(spec, {"leader_rank": 0}),
                  WorkerIncident(where="worker", error_type="RuntimeError", message=GLOO_LOST)]
        return events, [*BANNER, *_summary((True, 0, 4))], 1

    fake_worker.script = staticmethod(script)  # type: ignore[assignment]
    out = Runner(session, exp.id).run()
    notes = _warm_row(session).notes or ""
    assert "lost a rank on another node" in notes
    assert "rank 0 of 2 exited" not in notes and "rank 0 of 2 (on this node) lost its connection" in notes
    assert "Connection closed by peer [127.0.0.1]:18312." in notes
    assert "GLHF" not in notes and "pair.cc" not in notes and "*****" not in notes
    assert not any("GLHF" in i for i in out.incidents)


def test_root_cause_that_lost_its_peer_names_the_rank_that_failed() -> None:
    # one node: torchrun saw rank 0 (which only lost its peer) end first; rank 1 was killed
    lines = [*BANNER, f"[rank0]: RuntimeError: {GLOO_LOST}", *_summary((False, 1, -9), (True, 0, 1))]
    cause = torchrun_root_cause(lines)
    assert cause is not None and (cause.rank, cause.exitcode, cause.lost_peer) == (1, -9, False)
    # several nodes: no other failed rank here, so the failure says the rank lost its peer
    alone = torchrun_root_cause([*BANNER, *_summary((True, 0, 4))], {0: f"RuntimeError: {GLOO_LOST}"})
    assert alone is not None and alone.lost_peer and alone.rank == 0
    assert alone.error == "RuntimeError: Connection closed by peer [127.0.0.1]:18312."
    # a rank that failed on its own stays the root cause
    own = torchrun_root_cause([*BANNER, "[rank1]: ValueError: bad shape", *_summary((True, 1, 5))])
    assert own is not None and (own.rank, own.error, own.lost_peer) == (1, "ValueError: bad shape", False)


def test_error_gist_keeps_the_first_meaningful_line() -> None:
    assert error_gist(GLOO_LOST) == "Connection closed by peer [127.0.0.1]:18312."
    assert error_gist("\n".join([*BANNER, "ValueError: bad shape", "more"])) == "ValueError: bad shape"
    assert error_gist("\n".join(BANNER)) is None and error_gist(None) is None
    assert lost_peer(GLOO_LOST) and lost_peer("ConnectionResetError: Connection reset by peer")
    assert not lost_peer("ValueError: bad shape") and not lost_peer(None)


# -- 3. decoration is never the "last stderr" -------------------------------------------
def test_last_stderr_skips_torchrun_banner_and_rules() -> None:
    worker = SimpleNamespace(stderr=deque(["ValueError: bad shape", *BANNER, "   "]))
    assert WorkerProcess.last_stderr(worker) == "ValueError: bad shape"  # type: ignore[arg-type]
    assert WorkerProcess.last_stderr(SimpleNamespace(stderr=deque(BANNER))) is None  # type: ignore[arg-type]
    assert all(is_decoration(line) for line in BANNER)
    assert not is_decoration("W1201 torch/distributed/elastic: Sending process 21356 closing signal SIGTERM")


def test_sigterm_incident_never_quotes_the_banner(
        session: Session, fake_worker: type[FakeWorker]) -> None:
    exp = _exp(session)
    fake_worker.script = staticmethod(  # type: ignore[assignment]
        lambda spec: (_started(spec), ["loading the model", *BANNER], -15))
    runner = Runner(session, exp.id)
    fake_worker.on_eof = staticmethod(lambda: runner.interrupt("SIGTERM"))  # type: ignore[assignment]
    out = runner.run()
    notes = _warm_row(session).notes or ""
    assert "last stderr: loading the model" in notes and "*****" not in notes
    assert not any("*****" in i or "OMP_NUM_THREADS" in i for i in out.incidents)


# -- 3. the rank that failed first spoke only on stderr ----------------------------------
def test_r7_a_load_incident_said_only_on_stderr_stops_the_experiment_as_the_leaders_would(
        session: Session, fake_worker: type[FakeWorker]) -> None:
    """Rank 1 found no GPU and ended first; torchrun ended rank 0 before it said its own.

    The runner heard no event: rank 1's ``rank 1: {...}`` line on stderr is the only word
    of the failure, and it must stop the experiment as the leader's incident would.
    """
    exp = _exp(session, gpus=2, device="cuda", values=(4, 8), cold_runs_per_variant=1)
    starts: list[int] = []
    incident = WorkerIncident(where="load", error_type="DeviceUnavailable",
                              message="device cuda requested but torch sees no CUDA/ROCm device")

    def script(spec: dict[str, Any]) -> tuple[list[Any], list[str], int]:
        starts.append(1)
        said = "rank 1: " + json.dumps(incident.to_json())
        return [], [*BANNER, said, *_summary((True, 1, 3), (False, 0, -15))], 1

    fake_worker.script = staticmethod(script)  # type: ignore[assignment]
    out = Runner(session, exp.id).run()
    assert not out.completed
    assert len(starts) == 1  # every group would fail the same way: one tried
    assert [r.phase for r in session.results.rows()] == ["load"]
    said = [i for i in out.incidents if "DeviceUnavailable" in i]
    assert len(said) == 1 and "--device cpu" in said[0], out.incidents


def test_rank_incident_reads_the_last_incident_line_of_that_rank_only() -> None:
    from gpusession.bench.ranks import rank_incident

    first = WorkerIncident(where="load", error_type="ValueError", message="a")
    last = WorkerIncident(where="load", error_type="DeviceUnavailable", message="b")
    lines = ["rank 1: " + json.dumps(first.to_json()), "rank 1: {not json",
             "rank 2: " + json.dumps(first.to_json()), "rank 1: " + json.dumps(last.to_json()),
             'rank 1: {"event": "ready", "run_key": "k"}']
    got = rank_incident(lines, 1)
    assert got is not None and got.error_type == "DeviceUnavailable" and got.message == "b"
    assert rank_incident(lines, 0) is None
