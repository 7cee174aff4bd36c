"""The other nodes' side of a torchrun group over several nodes.

Who calls it: ``gpusession agent NAME --experiment ID`` on each node other than the
runner's (:mod:`gpusession.commands.agent_cmd`). No torch here: torchrun and the ranks
import it.

The runner's node writes a spec file for each worker group
(``runs/<experiment>/.worker-<name>.json``) and removes it when the group has ended. An
agent on another node, reading the same session folder (a shared file system: the
corpus and the session folder at the same paths), starts its own torchrun agent for each
spec file that appears — ``--nnodes N --nproc-per-node G``, the c10d rendezvous at the
experiment's endpoint, the group's rendezvous id — and waits for it to end. Its ranks
never talk to the runner (the leader is the runner's node's local rank 0). It ends when
the run it joined is over (:func:`run_end`): the journal's newest invocation of the
experiment has an end record, or crash recovery recorded that it did not finish (a
runner killed mid-run writes no end record), or the run lock is gone with no spec file
left for :data:`RUNNER_GONE_GRACE_S`; or on Ctrl-C, SIGTERM or SIGHUP, which end its
torchrun group first.

This node's torchrun exit code says what this node's ranks did, not how the group went
(a rank here exits 0 when the runner's node vanishes): the runner's record says that.

It never opens the session for writing and never recovers it: the run lock is the
runner's, on another host.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.bench.lifetime import PARENT_ENV, child_preexec
from gpusession.bench.ranks import LEADER_ENV, rendezvous_id, torchrun_argv
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.recovery import SPEC_PREFIX
from gpusession.core.records.summary import UNFINISHED_KIND

if TYPE_CHECKING:
    from gpusession.core.events import Event

#: Seconds between two looks at the experiment's folder.
POLL_S = 0.2

#: Seconds a group's spec file may be gone while this node's torchrun still runs before
#: the group is left (the runner removed it: that group has ended on the runner's node).
SPEC_GONE_GRACE_S = 10.0

#: Seconds the run lock must stay gone, with no spec file left, before a run whose
#: journal has no end is taken for over (its runner stopped without writing one). Between
#: two groups the runner holds the lock, so that gap never ends the agent.
RUNNER_GONE_GRACE_S = 5.0

#: How the run an agent joined is over, in the words of its last line (:func:`run_end`).
RUN_END_WORDS = {
    "ended": "the run has ended",
    "did_not_finish": "the run did not finish (its runner stopped mid-run; the runner's node "
                      "recorded it when the session was reopened there)",
    "runner_gone": "the run did not finish (its runner is gone: the run lock was released "
                   "with no end recorded)",
}

#: The torchrun environment of a caller's shell that must not reach a new agent.
_RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
              "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")


@dataclass
class AgentOutcome:
    """What an agent did.

    Attributes:
        groups: ``(worker name, exit code of this node's torchrun)`` of every group it
            joined, in order (negative: ended by that signal; ``None``: left when the
            agent was interrupted). The code says what this node's ranks did, not how the
            group went: the runner's record says that.
        interrupted: the signal's name when one ended the agent, else ``None``.
        run_end: how the run was over (a key of :data:`RUN_END_WORDS`); ``None`` when
            the agent was interrupted first.
    """

    groups: list[tuple[str, int | None]] = field(default_factory=list)
    interrupted: str | None = None
    run_end: str | None = None


def run_end(records: list[Event], experiment_id: str) -> str | None:
    """How the newest invocation of ``experiment_id`` in a journal stands.

    Args:
        records: typed journal records, oldest first
            (:func:`gpusession.core.folder.journal.read_records`).
        experiment_id: the experiment the agent joins.

    Returns:
        ``None`` when no invocation of it was ever started (the agent came first),
        ``"running"`` while nothing says it is over, ``"ended"`` when an
        ``experiment_finished``/``experiment_incomplete`` record follows its newest
        ``experiment_started``, ``"did_not_finish"`` when crash recovery's
        :data:`~gpusession.core.records.summary.UNFINISHED_KIND` incident for it does.
    """
    from gpusession.core.events.records import (
        ExperimentEndedRecord,
        ExperimentStartedRecord,
        IncidentRecord,
    )

    start = next((i for i in range(len(records) - 1, -1, -1)
                  if isinstance(records[i], ExperimentStartedRecord)
                  and records[i].experiment_id == experiment_id), None)  # type: ignore[attr-defined]
    if start is None:
        return None
    for rec in records[start + 1:]:
        if isinstance(rec, ExperimentEndedRecord) and rec.experiment_id in (None, experiment_id):
            return "ended"
        if isinstance(rec, IncidentRecord) and rec.kind == UNFINISHED_KIND and rec.experiment_id == experiment_id:
            return "did_not_finish"
    return "running"


def pending_specs(exp_dir: Path, seen: set[tuple[str, int, int]]) -> list[Path]:
    """Spec files of ``exp_dir`` not joined yet, oldest first.

    Args:
        exp_dir: ``runs/<experiment>/``.
        seen: ``(name, inode, mtime_ns)`` of the spec files already joined (a group
            started again under the same name is a new file).
    """
    found: list[tuple[int, Path]] = []
    for p in exp_dir.glob(f"{SPEC_PREFIX}*.json"):
        try:
            st = p.lstat()
        except OSError:
            continue  # removed meanwhile: its group has ended
        if (p.name, st.st_ino, st.st_mtime_ns) not in seen and p.is_file() and not p.is_symlink():
            found.append((st.st_mtime_ns, p))
    return [p for _, p in sorted(found)]


class Agent:
    """Joins every worker group of one experiment from another node.

    Args:
        session_folder: the session's folder (the same path as on the runner's node).
        experiment: the experiment (its ``id``, ``gpus``, ``nodes``, ``rendezvous``).
        python: the interpreter for torchrun (default this one).
        say: where progress sentences go (default: print, flushed).
        poll_s: seconds between two looks for a spec file.
        run_ended: whether the run this agent joined is over; asked only once it has
            joined a group and no new spec file is waiting. Default: the session journal's
            newest invocation of this experiment has an end record or recovery's "did not
            finish" incident (:func:`run_end`), or it has neither but the run lock
            (``.run.lock``) has been gone, with no spec file left, for
            :data:`RUNNER_GONE_GRACE_S`; while no invocation is recorded, not over. It
            sets :attr:`ended_how` (a key of :data:`RUN_END_WORDS`).

    Raises:
        BadInput: the experiment runs on one node (no agent is needed there).
    """

    def __init__(self, session_folder: Path, experiment: Any, *, python: str = sys.executable,
                 say: Callable[[str], None] | None = None, poll_s: float = POLL_S,
                 run_ended: Callable[[], bool] | None = None) -> None:
        """Check that the experiment spans several nodes; start nothing yet."""
        if int(getattr(experiment, "nodes", 1) or 1) < 2 or not getattr(experiment, "rendezvous", None):
            raise BadInput(f"experiment {experiment.id} runs on one node (nodes = "
                           f"{getattr(experiment, 'nodes', 1)}): every rank starts on the runner's node, "
                           "no agent is needed; define it with --nodes N --rendezvous HOST:PORT")
        self.folder = Path(session_folder)
        self.exp = experiment
        self.exp_dir = self.folder / "runs" / str(experiment.id)
        self.python = python
        self.say = say or (lambda text: print(text, flush=True))
        self.poll_s = poll_s
        self.run_ended = run_ended or self._journal_says_ended
        self.stop = threading.Event()
        #: How the run was over once ``run_ended`` said so (a key of :data:`RUN_END_WORDS`).
        self.ended_how = "ended"
        self._proc: subprocess.Popen[bytes] | None = None
        self._signal: str | None = None
        self._quiet_since: float | None = None  # monotonic s: lock and spec files gone since

    def _journal_says_ended(self) -> bool:
        from gpusession.core.folder import journal

        how = run_end(journal.read_records(self.folder / journal.JOURNAL), str(self.exp.id))
        if how is None:
            # No run of it recorded yet (the agent is started before the run, and a shared
            # file system may show the journal late): keep waiting, as before the first group.
            self._quiet_since = None
            return False
        if how != "running":
            self.ended_how = how
            return True
        # No end in the journal: a runner that died with its lock released (its own clean-up
        # ran, its end record did not) leaves no lock and no spec file. Between two groups
        # the runner holds the lock; a killed runner leaves it until recovery.
        if os.path.lexists(self.folder / journal.RUN_LOCK) or (
                self.exp_dir.is_dir() and any(self.exp_dir.glob(f"{SPEC_PREFIX}*.json"))):
            self._quiet_since = None
            return False
        now = time.monotonic()
        if self._quiet_since is None:
            self._quiet_since = now
        if now - self._quiet_since < RUNNER_GONE_GRACE_S:
            return False
        self.ended_how = "runner_gone"
        return True

    def argv(self, spec: Path) -> list[str]:
        """The torchrun command line of this node for the group of ``spec``."""
        worker = spec.stem.removeprefix(SPEC_PREFIX)
        module = ["-m", "gpusession.bench.worker", "--spec", str(spec)]
        return torchrun_argv(self.python, self.exp.gpus, module, nodes=self.exp.nodes,
                             rendezvous=self.exp.rendezvous,
                             run_id=rendezvous_id(self.exp.id, worker), host=False)

    def environment(self) -> dict[str, str]:
        """This node's torchrun's and ranks' environment: never a leader, the package importable.

        Torch's C++ log is kept to errors (``TORCH_CPP_LOG_LEVEL=ERROR``) unless the caller
        set it: when the runner's node vanishes, each TCPStore warning this node's torchrun
        logs carries a C++ stack trace (some 35 lines each); the one useful line, "Failed
        to recv … Did the remote server shutdown or crash?", is in the Python error that
        follows and stays.
        """
        env = {k: v for k, v in os.environ.items() if k not in _RANK_VARS}
        env.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
        env[LEADER_ENV] = "0"
        env[PARENT_ENV] = str(os.getpid())
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return env

    def interrupt(self, signal_name: str) -> None:
        """End the group in flight and the agent (from a signal handler or another thread)."""
        self._signal = signal_name
        self.stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            from gpusession.core.folder.processes import end_group, identify

            end_group(identify(proc.pid))

    def run(self) -> AgentOutcome:
        """Join groups until the run has ended or the agent is interrupted."""
        out = AgentOutcome()
        seen: set[tuple[str, int, int]] = set()
        self.say(f"agent for experiment {self.exp.id}: {self.exp.nodes} nodes × {self.exp.gpus} "
                 f"GPU(s), rendezvous {self.exp.rendezvous}; waiting for the runner's groups "
                 f"(spec files in {self.exp_dir}); Ctrl-C to stop")
        while not self.stop.is_set():
            specs = pending_specs(self.exp_dir, seen) if self.exp_dir.is_dir() else []
            if not specs:
                if out.groups and self.run_ended():
                    break
                self.stop.wait(self.poll_s)
                continue
            spec = specs[0]
            try:
                st = spec.lstat()
            except OSError:
                continue
            seen.add((spec.name, st.st_ino, st.st_mtime_ns))
            worker = spec.stem.removeprefix(SPEC_PREFIX)
            code = self._join(spec, worker)
            out.groups.append((worker, code))
            if code is None:
                break
        if self.stop.is_set():
            out.interrupted = self._signal
            ended = self._stopped_words()
        else:
            out.run_end = self.ended_how
            ended = RUN_END_WORDS.get(self.ended_how, self.ended_how)
        self.say(f"agent for experiment {self.exp.id}: {ended}; joined {len(out.groups)} group(s)")
        return out

    def _stopped_words(self) -> str:
        return f"interrupted by {self._signal}" if self._signal else "stopped"

    def _join(self, spec: Path, worker: str) -> int | None:
        """Start this node's torchrun agent for one group, wait for it and say how it ended.

        Returns:
            Its exit code (0 too when the group was left because the runner removed its
            spec file first); ``None`` when the agent was interrupted (it ended the group).
        """
        self.say(f"joining group {worker} (rendezvous id {rendezvous_id(self.exp.id, worker)})")
        # Its own session (the terminal's signals are the agent's to handle), ended as one
        # group; it dies with the agent (parent-death signal; the agent forks from its one
        # thread), and its ranks die with it.
        proc = subprocess.Popen(self.argv(spec), env=self.environment(), stdin=subprocess.DEVNULL,
                                start_new_session=sys.platform != "win32",
                                preexec_fn=child_preexec if sys.platform == "linux" else None)  # noqa: PLW1509 - single-threaded agent
        self._proc = proc
        gone_since: float | None = None
        try:
            while True:
                try:
                    code = proc.wait(timeout=self.poll_s)
                except subprocess.TimeoutExpired:
                    code = None
                if self.stop.is_set():  # the agent was interrupted: it ended the group itself
                    if proc.poll() is None:
                        from gpusession.core.folder.processes import end_group, identify

                        end_group(identify(proc.pid))
                        proc.wait()
                    self.say(f"group {worker}: left when {self._stopped_words()}")
                    return None
                if code is not None:
                    # Not how the group went: a rank here exits 0 when the runner's node vanishes.
                    self.say(f"group {worker}: {exit_words(code)}; the runner's record says how the group ended")
                    return code
                # The runner removes the spec file when its group has ended: a group this
                # node is still joining then never forms (it would wait its whole join
                # timeout while the runner starts the next group). Leave it.
                if spec.exists():
                    gone_since = None
                elif gone_since is None:
                    gone_since = time.monotonic()
                elif time.monotonic() - gone_since > SPEC_GONE_GRACE_S:
                    from gpusession.core.folder.processes import end_group, identify

                    end_group(identify(proc.pid))
                    proc.wait()
                    self.say(f"group {worker} ended on the runner's node before this node joined it; left")
                    return 0  # the runner's record says how that group ended; this node did nothing
        finally:
            self._proc = None


def exit_words(code: int) -> str:
    """This node's torchrun exit in words (:func:`gpusession.bench.process.describe_exit`).

    Example: ``"this node's torchrun exited with code 0"``, ``"… killed by signal SIGKILL (9)"``.
    """
    from gpusession.bench.process import describe_exit

    return f"this node's torchrun {describe_exit(code)}"


__all__ = ["POLL_S", "RUNNER_GONE_GRACE_S", "RUN_END_WORDS", "SPEC_GONE_GRACE_S", "Agent", "AgentOutcome",
           "exit_words", "pending_specs", "run_end"]
