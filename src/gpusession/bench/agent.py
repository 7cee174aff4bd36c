"""The other nodes' side of a torchrun group over several nodes (issue 13).

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
the run it joined has ended (the journal's newest invocation is over and no spec file is
left), or on Ctrl-C, SIGTERM or SIGHUP, which end its torchrun group first.

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
from typing import Any

from gpusession.bench.lifetime import PARENT_ENV, child_preexec
from gpusession.bench.ranks import LEADER_ENV, rendezvous_id, torchrun_argv
from gpusession.core.errors import BadInput
from gpusession.core.recovery import SPEC_PREFIX

#: Seconds between two looks at the experiment's folder.
POLL_S = 0.2

#: Seconds a group's spec file may be gone while this node's torchrun still runs before
#: the group is left (the runner removed it: that group has ended on the runner's node).
SPEC_GONE_GRACE_S = 10.0

#: The torchrun environment of a caller's shell that must not reach a new agent.
_RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
              "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")


@dataclass
class AgentOutcome:
    """What an agent did.

    Attributes:
        groups: ``(worker name, exit code)`` of every group it joined, in order
            (negative: ended by that signal).
        interrupted: the signal's name when one ended the agent, else ``None``.
    """

    groups: list[tuple[str, int]] = field(default_factory=list)
    interrupted: str | None = None


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
    """Joins every worker group of one experiment from another node (issue 13).

    Args:
        session_folder: the session's folder (the same path as on the runner's node).
        experiment: the experiment (its ``id``, ``gpus``, ``nodes``, ``rendezvous``).
        python: the interpreter for torchrun (default this one).
        say: where progress sentences go (default: print, flushed).
        poll_s: seconds between two looks for a spec file.
        run_ended: whether the run this agent joined is over; default: the session
            journal's newest invocation of this experiment has ended
            (:func:`gpusession.core.journal.run_progress`); while none is recorded, not ended.

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
        self._proc: subprocess.Popen[bytes] | None = None
        self._signal: str | None = None

    def _journal_says_ended(self) -> bool:
        from gpusession.core import journal

        # This experiment's newest invocation. None: no run of it recorded yet (the agent
        # is started before the run, and a shared file system may show the journal late):
        # keep waiting, as before the first group.
        progress = journal.run_progress(journal.read_records(self.folder / journal.JOURNAL), str(self.exp.id))
        return progress is not None and progress.ended

    def argv(self, spec: Path) -> list[str]:
        """The torchrun command line of this node for the group of ``spec``."""
        worker = spec.stem.removeprefix(SPEC_PREFIX)
        module = ["-m", "gpusession.bench.worker", "--spec", str(spec)]
        return torchrun_argv(self.python, self.exp.gpus, module, nodes=self.exp.nodes,
                             rendezvous=self.exp.rendezvous,
                             run_id=rendezvous_id(self.exp.id, worker), host=False)

    def environment(self) -> dict[str, str]:
        """This node's ranks' environment: never a leader, the package importable."""
        env = {k: v for k, v in os.environ.items() if k not in _RANK_VARS}
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
            from gpusession.core.processes import end_group, identify

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
            if code is None:
                break
            out.groups.append((worker, code))
            self.say(f"group {worker} ended: " + ("exit 0" if code == 0 else
                                                  f"exit {code} (the runner's record says why)"))
        out.interrupted = self._signal
        ended = ("interrupted by " + self._signal) if self._signal else "the run has ended"
        self.say(f"agent for experiment {self.exp.id}: {ended}; joined {len(out.groups)} group(s)")
        return out

    def _join(self, spec: Path, worker: str) -> int | None:
        """Start this node's torchrun agent for one group and wait for it; ``None``: interrupted."""
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
                    return proc.wait(timeout=self.poll_s)
                except subprocess.TimeoutExpired:
                    if self.stop.is_set():
                        self.interrupt(self._signal or "stop")
                        proc.wait()
                        return None
                # The runner removes the spec file when its group has ended: a group this
                # node is still joining then never forms (it would wait its whole join
                # timeout while the runner starts the next group). Leave it.
                if spec.exists():
                    gone_since = None
                elif gone_since is None:
                    gone_since = time.monotonic()
                elif time.monotonic() - gone_since > SPEC_GONE_GRACE_S:
                    from gpusession.core.processes import end_group, identify

                    end_group(identify(proc.pid))
                    proc.wait()
                    self.say(f"group {worker} ended on the runner's node before this node joined it; left")
                    return 0  # the runner's record says how that group ended; this node did nothing
        finally:
            self._proc = None


__all__ = ["POLL_S", "SPEC_GONE_GRACE_S", "Agent", "AgentOutcome", "pending_specs"]
