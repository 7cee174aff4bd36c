"""Watch one worker group from its start to its exit: one typed report of what happened.

Who calls it: :class:`gpusession.bench.runner.Runner`, once per worker group. The runner
starts the worker (through its :class:`~gpusession.bench.launch.Launcher`); a
:class:`Supervisor` reads its events until its stdout closes, holds the run timeout and
the go/stop protocol at each run boundary (H-12), ends the group that times out or does
not end after a rank failed (H-14), then reaps it (exit code, the failed rank torchrun
names, stderr). Every event is also passed, as it arrives, to the runner's sink, which
journals it and appends rows at once (S7). What the group did ends up in one
:class:`GroupReport`, from which the runner writes what is left after the exit.

No torch here (M5).
"""

from __future__ import annotations

import queue
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.bench.process import EOF_EVENT
from gpusession.bench.ranks import RankFailure, rank_incident
from gpusession.bench.rows import LoadSlot
from gpusession.core.events import (
    WorkerDescendantsEnded,
    WorkerEvent,
    WorkerReady,
    WorkerRunFinished,
    WorkerRunStarted,
    WorkerStopped,
)
from gpusession.core.experiment.plan import ScheduledRun

if TYPE_CHECKING:
    from gpusession.bench.launch import WorkerHandle

#: Seconds a torchrun group may take to end by itself after a rank failed a run before
#: the runner ends it (the ranks exit right after the leader's report).
TEARDOWN_GRACE_S = 30.0


@dataclass
class GroupReport:
    """What one worker group did, filled while it runs and when it is reaped.

    Attributes:
        name: the worker's name (``cold-…``, ``warm``, ``warm-again-2``…).
        runs: the group's scheduled runs by local run key.
        load: where the group's load stands in the results.
        loaded: the worker said ``loaded``.
        load_open: the load is journaled as started and not yet as finished.
        in_flight: the run started and not finished, ``None`` between runs.
        torn: under torchrun, the run whose rank failed and the worker's report of it:
            the group ends with it and its row waits for the exit (the failed rank's
            exit code goes in it).
        forced: the group did not end within :data:`TEARDOWN_GRACE_S` after ``torn``
            and was ended.
        timed_out: no event came within the run timeout and the group was ended.
        hung: which ranks were still working at the timeout, and where.
        heard: the worker (a rank) spoke at all: the group formed.
        stopped: the worker stopped at a run boundary (a cancel, H-12).
        unrecoverable: one process ended after a run the GPU failed with a sticky error
            (its ``worker_ends``): a fresh worker runs what is left.
        finished_keys: local keys of the runs that have a row or will get one.
        rank_ids: ``rank_pids`` / ``rank_create_times_s`` / ``rank_hosts`` of the
            group (journal only).
        leader: the global rank that speaks to the runner, ``None`` when not said.
        last_incident: the worker's last incident in words (``where: Type: message``).
        last_error: the same without where it came (``Type: message``).
        code: the exit code once reaped (the failed rank's under torchrun, unless the
            group timed out), ``None`` before.
        rank_cause: the failed rank torchrun names on stderr, ``None`` for one process.
        stderr: the worker's last stderr lines.
        last_stderr: its last stderr line that says something, ``None`` when none.
    """

    name: str
    runs: dict[str, ScheduledRun]
    load: LoadSlot
    loaded: bool = False
    load_open: bool = True
    in_flight: ScheduledRun | None = None
    torn: tuple[ScheduledRun, WorkerRunFinished] | None = None
    forced: bool = False
    timed_out: bool = False
    hung: str | None = None
    heard: bool = False
    stopped: bool = False
    unrecoverable: bool = False
    finished_keys: set[str] = field(default_factory=set)
    rank_ids: dict[str, Any] = field(default_factory=dict)
    leader: int | None = None
    last_incident: str | None = None
    last_error: str | None = None
    code: int | None = None
    rank_cause: RankFailure | None = None
    stderr: list[str] = field(default_factory=list)
    last_stderr: str | None = None

    def missing(self) -> list[ScheduledRun]:
        """The group's runs that have no row, in schedule order."""
        return [r for r in self.runs.values() if r.run_key not in self.finished_keys]

    def is_torn_by(self, ev: WorkerRunFinished) -> bool:
        """Whether ``ev`` is the report of the run the group ends with (its row waits)."""
        return self.torn is not None and self.torn[1] is ev


#: The runner's side of each event: journal it, append rows, tell the UI (S7).
Sink = Callable[[WorkerEvent, GroupReport], None]


class Supervisor:
    """The event loop of one worker group (H-12, H-14).

    Args:
        worker: the started worker (its group leader).
        report: the group's report, filled as events come.
        timeout_s: seconds a run may take (from each ``go``), and the load before it.
        cancel: set: the next ``ready`` is answered ``stop`` (a run boundary, H-12).
        ranked: the worker is a torchrun group: a failed rank ends it.
        stack_dir: where ranks dump their stacks when asked, ``None`` for one process.
        world_size: ranks of the group over every node.
        may_start: asked at each ``ready`` with the local run key: ``False`` answers
            ``stop`` (the session limit, a defective first result: D1, D3); ``None``
            lets every run start.
    """

    def __init__(self, worker: WorkerHandle, report: GroupReport, *, timeout_s: float,
                 cancel: threading.Event, ranked: bool, stack_dir: str | None,
                 world_size: int, may_start: Callable[[str], bool] | None = None) -> None:
        """Keep the worker; the run timeout starts now (the load is timed too)."""
        self.may_start = may_start
        self.worker = worker
        self.report = report
        self.timeout_s = timeout_s
        self.cancel = cancel
        self.ranked = ranked
        self.stack_dir = stack_dir
        self.world_size = world_size
        self.deadline = time.monotonic() + timeout_s
        self._sink: Sink | None = None

    def watch(self, sink: Sink) -> GroupReport:
        """Read events until the worker's stdout closes; each goes to ``sink`` as it arrives.

        A timeout (no event in time) ends the whole group (its ranks and commands too)
        and is noted in the report; the loop goes on until the stdout closes.
        """
        rep = self.report
        self._sink = sink
        while True:
            try:
                ev = self.worker.events.get(timeout=max(0.05, self.deadline - time.monotonic()))
            except queue.Empty:
                self._time_out()
                continue
            if ev is EOF_EVENT:
                return rep
            rep.heard = True  # a rank spoke: the group formed
            self._before(ev)
            sink(ev, rep)
            if isinstance(ev, WorkerRunFinished):
                rep.finished_keys.add(ev.run_key)
                rep.in_flight = None

    def _time_out(self) -> None:
        """No event in time: end the group; say where its ranks stood (a hang) or that it was forced."""
        rep = self.report
        if rep.torn is None:
            rep.timed_out = True
            if self.stack_dir is not None and rep.rank_ids.get("rank_pids"):
                rep.hung = self._where_ranks_stood(self.stack_dir)
        else:  # a group that does not end after a rank failed: ended here
            rep.forced = True
        self.worker.end_group()  # the worker and everything it started, torchrun's ranks too

    def _before(self, ev: WorkerEvent) -> None:
        """The protocol's part of an event, before the runner records it."""
        rep = self.report
        if isinstance(ev, WorkerReady):
            if self.cancel.is_set() or (self.may_start is not None and not self.may_start(ev.run_key)):
                self.worker.send("stop")
            else:
                self.worker.send("go")
                self.deadline = time.monotonic() + self.timeout_s
        elif isinstance(ev, WorkerRunStarted):
            rep.in_flight = rep.runs[ev.run_key]
        elif isinstance(ev, WorkerRunFinished):
            if ev.failed_rank is not None and not ev.ok and self.ranked:
                # the group ends with this run; its row once it has ended
                rep.torn = (rep.runs[ev.run_key], ev)
                self.deadline = time.monotonic() + TEARDOWN_GRACE_S
            elif ev.worker_ends and not ev.ok:  # a sticky GPU error: the worker ends here
                rep.unrecoverable = True
        elif isinstance(ev, WorkerStopped):
            rep.stopped = True

    def _late_load_incident(self, rep: GroupReport) -> None:
        """The failed rank's load incident from stderr, when the runner never heard one.

        A rank that fails before the group forms says its incident on stderr; when it
        ends first, torchrun ends the leader before the leader says its own. The sink
        gets that incident as if the leader had sent it, so one load failure reads
        the same whichever rank ended first (the missing GPU stops the experiment).
        """
        cause = rep.rank_cause
        if cause is None or rep.loaded or rep.last_incident is not None or self._sink is None:
            return
        ev = rank_incident(list(self.worker.stderr), cause.rank)
        if ev is not None and ev.where == "load":
            self._sink(ev, rep)

    def _where_ranks_stood(self, stack_dir: str) -> str | None:
        """Which ranks of this node were still working at the timeout, and where."""
        from gpusession.bench.stacks import ask_stacks, hung_words

        ids = self.report.rank_ids
        try:
            stacks = ask_stacks(Path(stack_dir), list(ids.get("rank_pids") or []),
                                ids.get("rank_hosts"), ids.get("rank_create_times_s"))
            return hung_words(stacks, self.world_size)
        except Exception:  # noqa: BLE001 - naming the hung rank is a courtesy: the timeout is handled anyway
            return None

    def reap(self, spec_path: Path) -> GroupReport:
        """Wait for the exit; remove the spec and the stack folder; note code, failed rank, stderr.

        What the worker left alive, in its group or not, is ended and passed to the sink
        of :meth:`watch` as a ``descendants_ended`` event (H-25). Under torchrun the exit
        code is the failed rank's, not the launcher's (unless the
        group timed out). The leader's last error is passed to torchrun's summary so
        that a leader that only lost its peer is not taken for the failed rank.
        """
        rep = self.report
        code = self.worker.finish()
        ended = getattr(self.worker, "ended", None) or []  # a stand-in worker ends nothing
        if ended and self._sink is not None:  # what escaped the worker: journaled (H-25)
            self._sink(WorkerDescendantsEnded(pids=[p for p, _ in ended], names=[n for _, n in ended],
                                              where="after the worker"), rep)
        spec_path.unlink(missing_ok=True)  # the group has ended: its spec serves nothing
        if self.stack_dir is not None:
            shutil.rmtree(self.stack_dir, ignore_errors=True)
        if self.ranked:
            from gpusession.bench.ranks import torchrun_root_cause

            known = {rep.leader: rep.last_error} if rep.leader is not None and rep.last_error else {}
            rep.rank_cause = torchrun_root_cause(list(self.worker.stderr), known)
            self._late_load_incident(rep)
        if rep.rank_cause is not None and not rep.timed_out:
            code = rep.rank_cause.exitcode
        rep.code = code
        rep.stderr = list(self.worker.stderr)
        rep.last_stderr = self.worker.last_stderr()
        return rep


__all__ = ["TEARDOWN_GRACE_S", "GroupReport", "Sink", "Supervisor"]
