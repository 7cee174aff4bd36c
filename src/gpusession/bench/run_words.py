"""What a run says in words: how a group died or ended, what to do next, a resumed row's note.

Who calls it: :class:`gpusession.bench.recorder.Recorder` (incidents and notes it writes)
and :class:`gpusession.bench.runner.Runner` (a group waiting for other nodes, the torch
check before anything runs). Pure: no journal, no process, no clock; each sentence is
built from the experiment and the group's :class:`~gpusession.bench.supervise.GroupReport`,
so one wording lives in one place and a test can read it without a run. No torch here (M5).
"""

from __future__ import annotations

from gpusession.bench.process import describe_exit, outside_kill_advice
from gpusession.bench.ranks import RankFailure, error_gist, join_timeout_s, lost_peer
from gpusession.bench.supervise import TEARDOWN_GRACE_S, GroupReport
from gpusession.core.events import WorkerIncident, WorkerRunFinished
from gpusession.core.experiment.plan import Experiment

#: What to do when a Python workload meets a Python without torch: the user's own build,
#: matched to the machine (a CUDA build on a ROCm host, or a CPU one on a GPU, is wrong).
TORCH_MISSING_ADVICE = (
    "Install the torch build that matches this machine's CUDA or ROCm (pick it at "
    "https://pytorch.org/get-started/locally/; on a CPU-only machine `pip install torch`).")


def torch_missing(message: str | None) -> bool:
    """Whether a load failure's words say torch itself is not installed."""
    return bool(message) and "No module named 'torch'" in str(message)


def resume_notes(attempt: int, *, warmed: bool = True) -> dict[str, str]:
    """What each row of a resumed attempt says, by phase (``load``, ``cold``, ``warm``).

    A resume starts new workers: the warm runs come after a new load and warm-up
    (``warmed``: the experiment has warm-up iterations), never after the ended attempt's;
    each cold run is in a fresh process, as always.
    """
    head = f"resumed after attempt {attempt} ended early"
    return {
        "load": f"{head}: a new worker for the runs it left",
        "cold": f"{head}; in a fresh process, as every cold run",
        "warm": f"{head}; a new worker loaded" + (" and warmed up again" if warmed else "") + " before it",
    }


def survivor(exp: Experiment, cause: RankFailure, leader: int | None, last_error: str | None) -> bool:
    """Whether the failed rank seen here only lost a peer that failed first.

    True when its error says a peer closed or reset the connection, or -- the leader
    unknown (the group never reported its ranks) -- when the group spans several
    nodes, torchrun has no error of the rank and the runner's last incident says so.
    """
    if cause.lost_peer:
        return True
    return (leader is None and exp.nodes > 1 and cause.error is None and lost_peer(last_error))


def death_kind(rep: GroupReport, interrupted: str | None) -> str:
    """The journal's kind of a group's death (``IncidentRecord.kind``, R7), as :func:`death_detail` words it.

    ``"timed_out"`` (killed at the run's time limit), ``"interrupted"`` (ended by a signal
    to gpusession) or ``"worker_died"`` (it exited on its own: a crashed worker).
    """
    return "timed_out" if rep.timed_out else "interrupted" if interrupted else "worker_died"


def death_detail(exp: Experiment, rep: GroupReport, code: int | None, interrupted: str | None) -> str:
    """How a group died, in one sentence: ``"worker NAME exited with code 1 after …"``.

    Args:
        exp: the experiment (its run timeout, GPUs and nodes).
        rep: the group's report once reaped.
        code: the exit code (the failed rank's under torchrun).
        interrupted: the signal that ended the run, ``None`` when none did.
    """
    cause = rep.rank_cause
    how = (f"timed out after {exp.run_timeout_s:g} s and was killed"
           + (f" ({rep.hung})" if rep.hung else "") if rep.timed_out
           else f"was ended at once (interrupted by {interrupted})"
           if interrupted else describe_exit(code))
    last = error_gist(rep.last_stderr)
    after = error_gist(rep.last_incident)
    world = exp.gpus * exp.nodes
    if cause is not None and not rep.timed_out and survivor(exp, cause, rep.leader, rep.last_error):
        # the rank torchrun names here only lost its peer; never blame it
        seen = cause.error if lost_peer(cause.error) else error_gist(rep.last_error)
        where = "on another node" if exp.nodes > 1 else "that torchrun did not name"
        how = (f": the group lost a rank {where}; rank {cause.rank} of {world} (on this node) "
               f"lost its connection to it" + (f" ({seen})" if seen else "")
               + f" and {how}, and torchrun ended the group")
        after = last = None
    elif cause is not None and not rep.timed_out:
        how = f" rank {cause.rank} of {world} {how} (torchrun ended the group)"
        last = cause.error  # torchrun's own last line is its banner
    else:
        how = f" {how}"
    advice = None if rep.timed_out or interrupted else outside_kill_advice(code)
    return (f"worker {rep.name}{how}" + (f" after {after}" if after else "")
            + (f"; last stderr: {last}" if last else "") + (f"; {advice}" if advice else ""))


def no_join_words(exp: Experiment, session_name: str, name: str, *, measured: bool) -> str:
    """The other nodes never joined: the sentence that stops the experiment, with what to do."""
    return (
        f"the other {exp.nodes - 1} node(s) did not join the rendezvous at {exp.rendezvous} "
        f"within {join_timeout_s(exp.run_timeout_s)} s. The experiment stopped at worker {name}; "
        f"{'nothing' if not measured else 'nothing more'} was measured. On each other node "
        f"run `gpusession agent {session_name} --experiment {exp.id}` (the same session "
        "folder and corpus paths), then run again.")


def device_advice(exp: Experiment, session_name: str) -> str:
    """What to do when the device asked for is not there."""
    more = (f", or define the experiment with fewer GPUs per node (--gpus; it asks for {exp.gpus})"
            if exp.gpus > 1 else "")
    return (f"Run on the CPU (gpusession run {session_name} --experiment {exp.id} --device cpu){more}, "
            "or check which GPUs this torch sees: python3 -c 'import torch; print(torch.cuda.device_count())'.")


def waiting_words(exp: Experiment, session_name: str, name: str) -> str | None:
    """What a group over several nodes waits for, and how to start it; else ``None``."""
    if exp.nodes <= 1:
        return None
    return (f"group {name}: waiting up to {join_timeout_s(exp.run_timeout_s)} s for the other "
            f"{exp.nodes - 1} node(s) at {exp.rendezvous}; on each, run "
            f"`gpusession agent {session_name} --experiment {exp.id}`")


def teardown_words(exp: Experiment, ev: WorkerRunFinished, cause: RankFailure | None,
                   code: int | None, forced: bool) -> str:
    """How a group ended after its rank ``ev.failed_rank`` failed a run.

    Example: ``"the group ended with this run: rank 1 of 2 exited with code 5"``.
    """
    world = exp.gpus * exp.nodes
    if forced:
        how = (f"it did not end within {TEARDOWN_GRACE_S:g} s and was ended "
               f"(launcher {describe_exit(code)})")
    elif cause is not None and cause.rank == ev.failed_rank:
        how = f"rank {cause.rank} of {world} {describe_exit(cause.exitcode)}"
    else:
        how = f"launcher {describe_exit(code)}"
    return f"the group ended with this run: {how}"


def incomplete_cause(interrupted: str | None, stop_words: str | None, *, worker_died: bool,
                     cancelled: bool) -> str:
    """Why an experiment ended incomplete, as the end of its journal message; ``""`` when nothing says.

    The signal is the cause, never its effect: an interrupted run says only that.
    Example: ``" (a worker died or timed out)"``.
    """
    if interrupted:
        return f" (interrupted by {interrupted})"
    return ((f" ({stop_words})" if stop_words else "")
            + (" (a worker died or timed out)" if worker_died else "")
            + (" (cancelled at a run boundary)" if cancelled else ""))


def load_fatal_words(exp: Experiment, session_name: str, name: str, ev: WorkerIncident,
                     said: str | None, *, first: bool, measured: bool) -> str:
    """The one sentence of a load failure that stops the experiment, with what to do.

    Args:
        exp: the experiment.
        session_name: the session's name (in the command to run next).
        name: the worker that failed to load.
        ev: its load incident.
        said: the incident's message, cut to its gist.
        first: no row was written yet by this invocation (the first worker).
        measured: the session has a measured row of this experiment.
    """
    return (
        f"the workload {exp.workload} could not load: {ev.error_type}: {said}. "
        f"The experiment stopped at {'the first worker' if first else 'worker'} "
        f"({name}); {'nothing' if not measured else 'nothing more'} was measured. "
        + (device_advice(exp, session_name) if ev.error_type == "DeviceUnavailable" else
           TORCH_MISSING_ADVICE if torch_missing(said) else
           f"Fix the workload or its definition (gpusession experiment "
           f"{session_name} define --id {exp.id} …) and run again."))


__all__ = ["TORCH_MISSING_ADVICE", "death_detail", "device_advice", "incomplete_cause", "load_fatal_words",
           "no_join_words", "resume_notes", "survivor", "teardown_words", "torch_missing",
           "waiting_words"]
