"""``python -m gpusession.bench.worker --spec FILE``: one process's share of a schedule.

Who calls it: :class:`gpusession.bench.runner.Runner` (argv list, no shell). This is the
only process that imports torch (M5: the UI process never creates a CUDA context).

A *cold* worker loads, runs the first run of one variant and exits; the *warm* worker
loads once, runs the announced warm-up for every variant with exactly the measured
shapes (R4, H-03; a command workload too, H-15), then the measured runs in the drawn
order (R5). A ``varied = "context"`` experiment applies each run's limit to the work
(``set_context``, R9). After an out-of-memory run the next measured run is preceded by
one unmeasured pass of its shape; the worker goes on in the same process. Under
torchrun a failed run (a rank raised, out of memory included) ends the group instead:
the runner starts a fresh one for the runs left. The phases themselves (load, warm-up,
measured runs, their outputs) are :mod:`gpusession.bench.phases`, shared by one process
and the ranks of a group.

Protocol: one JSON object per line on the original stdout, each a typed worker event of
:mod:`gpusession.core.events` (``hello``, ``applied``, ``loaded``, ``environment``, ``warmup_done``,
``ready``, ``run_started``, ``run_finished``, ``incident``, ``stopped``, ``done``);
anything the workload prints goes to stderr, which the parent keeps in the journal.
Before each run the worker says ``ready`` and waits for ``go`` or ``stop`` on stdin, so a
cancel stops exactly at a run boundary (H-12).

Every measured interval (load, warm-up, cold and warm runs, a command's whole process)
is timed by :class:`gpusession.bench.timing.SyncTimer`; every scheduled run goes through
:meth:`Channel.runs`. ``run_finished`` says what the worker did (phase, warm-up
iterations of the run's variant before it, scope, position, and ``applied``: the batch,
context, seed and precision it used), and the row is filled from that, never from the
experiment's definition (R4, A2). Before a Python workload is built, the worker seeds
``random``, numpy and torch with the experiment's seed (:mod:`gpusession.bench.seeding`)
and says so (``applied``); a command gets ``{seed}`` and ``$GPUSESSION_SEED``, and its
``run_finished`` names what its arguments received.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import signal
import subprocess
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from gpusession.bench.device import (
    Channel,
    TorchDevice,
    make_output_private,
    prepare_output,
    run_meter,
    speed_env_vars,
)
from gpusession.bench.lifetime import become_subreaper, child_preexec, die_with_parent
from gpusession.bench.phases import (
    LOAD_FAILED_EXIT,
    Inputs,
    TorchWork,
    failure_fields,
    group_loaded,
    load_failed,
    load_phase,
    measured_phase,
    open_workload,
    peak_rss_bytes,
    session_root,
    warmup_phase,
)
from gpusession.bench.program_digest import command_code_revision
from gpusession.bench.rank_group import setup_words
from gpusession.bench.ranks import rank_env as _rank_env
from gpusession.bench.row_record import program_folder
from gpusession.bench.seeding import apply_seed
from gpusession.bench.timing import SyncTimer
from gpusession.bench.usage import ProcessUsage, wait_with_usage
from gpusession.core.events import (
    WorkerApplied,
    WorkerCommandStarted,
    WorkerDescendantsEnded,
    WorkerDone,
    WorkerEnvironment,
    WorkerEvent,
    WorkerHello,
    WorkerIncident,
    WorkerLoaded,
    WorkerRunFinished,
    WorkerWarmupDone,
)
from gpusession.core.experiment.command_report import (
    REPORT_ENV,
    REPORT_NAME,
    CommandReport,
    read_report,
    remove_report,
)
from gpusession.core.experiment.params import HARNESS_PARAMS
from gpusession.core.experiment.placeholders import COMMAND_DEVICE, fill_argument, whole
from gpusession.core.experiment.placeholders import environment as placeholder_env
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import mask_text
from gpusession.core.folder.plainpaths import (
    make_plain_paths,
    remove_plain_paths,
    substitution_values,
)
from gpusession.core.folder.processes import WORKER_ENV, identify, worker_marker
from gpusession.core.records.ranks import RANKS_FILE, append_rank_rows


def run_torch_worker(spec: dict[str, Any], ch: Channel, group: Any = None) -> int:
    """Load, warm up, run the scheduled runs (:mod:`gpusession.bench.phases`); return the exit code.

    Args:
        spec: the worker spec the runner wrote.
        ch: the channel to the runner.
        group: this rank's :class:`gpusession.bench.rank_group.RankGroup` under torchrun:
            the rank works on its shard of the corpus, every run follows the protocol
            across ranks, the leader writes the gathered outputs; ``None`` for one
            process.

    Returns:
        0 done or stopped; :data:`~gpusession.bench.phases.LOAD_FAILED_EXIT` the load
        failed (said as an incident); under torchrun the rank's code after a failed run.
    """
    exp = spec["experiment"]
    try:
        dev = TorchDevice(spec.get("device") or exp.get("device"))
        seeded = apply_seed(int(exp.get("seed") or 0), dev.torch)  # before the factory and load() (A2)
        workload, given = open_workload(spec, seeded.seed)
    except Exception as exc:  # noqa: BLE001 - the user's workload module and device: any failure is a load incident (R7)
        return load_failed(ch, group, exc)
    by_variant = {v: {k: x for k, x in kw.items() if k != "seed"} for v, kw in given.items()}
    # a precision or param sweep loads several: the load states only what every variant got (A2)
    applied = WorkerApplied(seed=seeded.seed, seeded=list(seeded.generators),
                            precision=None if exp.get("varied") == "precision" else exp.get("precision", "fp32"),
                            context_limit=exp.get("context_limit"), params=common_params(by_variant))
    ch.send(applied)
    inputs = Inputs.read(spec, group)
    load_timer = dev.timer([dev.device] if dev.is_gpu else [])
    try:
        loaded = load_phase(dev, workload, exp, load_timer)
    except Exception as exc:  # noqa: BLE001 - the user's load(): any failure, OOM included, is a load incident (R7)
        return load_failed(ch, group, exc)
    if group is not None and not group_loaded(group, ch, None):
        return LOAD_FAILED_EXIT  # another rank could not load: the group ends here
    rev_fn = getattr(workload, "revisions", None)
    rev: dict[str, Any] = dict(rev_fn() or {}) if callable(rev_fn) else {}
    code_dir = Path(spec["code_dir"]) if spec.get("code_dir") else None
    env = dev.environment(workload, code_dir)
    own_uuid = env.get("gpu_uuid")
    # On a GPU: baseline read and peaks reset right before load(), so the peaks are the load's.
    load_figures = loaded.figures(dev.is_gpu)
    if group is not None:  # every rank's GPU and load
        load_figures = with_group_setup(load_figures, group)
        env, load_figures = _group_environment(group, env, load_figures, spec, ch)
    ch.send(WorkerEnvironment(environment=env))
    ch.send(WorkerLoaded(revisions=rev, rss_peak_bytes=peak_rss_bytes(), n_inputs=len(inputs.ids),
                         **load_figures))
    timer = dev.timer(loaded.used or ([dev.device] if dev.is_gpu else []))
    work = TorchWork(spec, ch, group, dev, workload, inputs, timer, meter=run_meter(dev, env, group),
                     applied={"seed": applied.seed, "precision": exp.get("precision", "fp32"),
                              "context_limit": applied.context_limit, "params": by_variant})
    warm_done, after_oom = warmup_phase(work)
    return measured_phase(work, warm_done, after_oom, own_uuid)


def common_params(by_variant: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The factory arguments every variant of this worker got alike (a load's row states those, A2)."""
    kwargs = list(by_variant.values())
    return {k: v for k, v in (kwargs[0] if kwargs else {}).items() if all(k in o and o[k] == v for o in kwargs)}


def with_group_setup(load: dict[str, Any], group: Any) -> dict[str, Any]:
    """A rank's load figures with its group's set-up (R3): the same work as one process's load.

    One process creates its CUDA context inside the load clock; a rank created it when
    it joined its group, before that clock: the group's ``context_s`` is added to the
    load's elapsed seconds. Joining the group (``join_s``: the rendezvous, NCCL's start)
    stays out of the load and is named in its notes (``setup_note``).
    """
    context_s = getattr(group, "context_s", None)
    out = dict(load)
    if context_s is not None and out.get("elapsed_s") is not None:
        out["elapsed_s"] = float(out["elapsed_s"]) + float(context_s)
    out["setup_note"] = setup_words(context_s, getattr(group, "join_s", None))
    return out


def _group_environment(group: Any, env: dict[str, Any], load: dict[str, Any],
                       spec: dict[str, Any], ch: Channel) -> tuple[dict[str, Any], dict[str, Any]]:
    """The leader's environment with every rank's GPU, and the load over ranks (R10).

    ``gpus_used`` is the union over ranks and ``gpu_count`` its size (0 on CPU: GPUs
    that held the workload's tensors); ``rank_devices`` / ``rank_gpu_uuids`` /
    ``rank_pids`` / ``rank_create_times_s`` / ``rank_hosts`` list each rank's device, GPU
    UUID, PID, start time and host by rank (the last three for recovery, journal only); ``gpu_model`` of a
    mixed host lists each model. The load's elapsed is the slowest rank's and its peaks
    the maximum over ranks (each baseline from the rank holding that peak); the leader
    writes every rank's load to ``ranks.csv`` under the load's run key (the spec's
    ``load_run_key``, e.g. ``load:all:1``; ``load`` when a hand-started agent's spec
    lacks it). A ``ranks.csv`` that cannot be written (a link, a full disk) is said as an
    incident naming it; the load row still says the maximum.
    """
    from gpusession.core.folder.processes import identify

    me = identify(os.getpid())
    mine = {"device": env.get("device"), "gpus_used": env.get("gpus_used") or [],
            "gpu_uuid": env.get("gpu_uuid"), "gpu_model": env.get("gpu_model"), "pid": me.pid,
            "create_time_s": me.create_time_s, "host": platform.node(), "load": load}
    every = group.all_gather(mine)
    several_hosts = len({r["host"] for r in every}) > 1  # cuda:0 on two nodes is two GPUs
    used = sorted({f"{r['host']}/{d}" if several_hosts else d for r in every for d in r["gpus_used"]})
    models = list(dict.fromkeys(r["gpu_model"] for r in every if r["gpu_model"]))
    out = dict(env)
    out.update(gpus_used=used, gpu_count=len(used), world_size=group.world_size,
               rank_devices=[r["device"] for r in every],
               rank_gpu_uuids=[r["gpu_uuid"] for r in every], rank_pids=[r["pid"] for r in every],
               rank_create_times_s=[r["create_time_s"] for r in every],
               rank_hosts=[r["host"] for r in every], leader_rank=group.leader)
    if models:
        out["gpu_model"] = ", ".join(models)
    per_rank = [{"rank": i, "world_size": group.world_size, "device": r["device"],
                 "gpu_uuid": r["gpu_uuid"], "ok": True, **r["load"]} for i, r in enumerate(every)]
    if group.is_leader:
        try:
            append_rank_rows(Path(spec["output_dir"]) / RANKS_FILE, str(spec.get("load_run_key") or "load"),
                             str(spec.get("worker")), per_rank, root=session_root(spec))
        except (OSError, BadInput) as exc:  # beside the row only: said, never skipped silently
            ch.send(WorkerIncident(where="ranks", **{**failure_fields(exc),
                                                     "message": f"ranks.csv not written: {exc}"}))
    merged = dict(load)
    merged["elapsed_s"] = max((r["elapsed_s"] for r in per_rank if r["elapsed_s"] is not None),
                              default=load.get("elapsed_s"))
    for kind in ("allocated", "reserved"):
        peaks = [r for r in per_rank if r.get(f"peak_{kind}_bytes") is not None]
        if peaks:
            top = max(peaks, key=lambda r, k=kind: r[f"peak_{k}_bytes"])  # type: ignore[misc]
            merged[f"peak_{kind}_bytes"] = top[f"peak_{kind}_bytes"]
            merged[f"baseline_{kind}_bytes"] = top[f"baseline_{kind}_bytes"]
    return out, merged


class _SilentRank(Channel):
    """A rank that does not talk to the runner, before its group has formed.

    Its incidents go to stderr as ``rank N: {json}`` (what the runner reads back with
    torchrun's failure summary); other events are dropped.
    """

    def __init__(self, out: IO[str], inp: IO[str], rank: int) -> None:
        """Keep stderr and the rank."""
        super().__init__(out, inp)
        self.rank = rank

    def send(self, event: WorkerEvent) -> None:
        """An incident on stderr, else nothing."""
        if isinstance(event, WorkerIncident):
            self.out.write(f"rank {self.rank}: " + json.dumps(event.to_json(), default=str) + "\n")
            self.out.flush()


class RankChannel(Channel):
    """The channel of a rank under torchrun.

    The leader (rank 0 on one node) talks to the runner as a plain worker does; it reads ``go``/``stop`` and
    passes the decision to every rank. Other ranks stay silent on stdout (an incident
    of theirs goes to stderr, which the runner keeps) and follow the leader's decision.
    """

    def __init__(self, out: IO[str], inp: IO[str], group: Any) -> None:
        """Keep both ends and the group."""
        super().__init__(out, inp)
        self.group = group

    def send(self, event: WorkerEvent) -> None:
        """The leader: the event as a JSON line. Other ranks: an incident on stderr, else nothing."""
        if self.group.is_leader:
            super().send(event)
        elif isinstance(event, WorkerIncident):
            print(f"rank {self.group.rank}: " + json.dumps(event.to_json(), default=str),
                  file=sys.stderr, flush=True)

    def wait_go(self) -> bool:
        """The leader reads the parent's line; every rank gets its decision."""
        go = super().wait_go() if self.group.is_leader else None
        return bool(self.group.broadcast_from_first(go))


def run_rank_worker(spec: dict[str, Any], ch: Channel, env: Any) -> int:
    """One rank of a torchrun group: join the group, then the torch worker.

    The device is ``cuda:LOCAL_RANK`` (NCCL) or the CPU (gloo). A rank that cannot join
    reports a load incident and exits 3; torchrun then ends the other ranks.

    The rank ends with its launcher even when the launcher is killed: :func:`main` sets
    its parent-death signal (:func:`gpusession.bench.lifetime.die_with_parent`).
    """
    from gpusession.bench.rank_group import RankGroup
    from gpusession.bench.stacks import register_dump

    register_dump(env.rank)  # the runner asks where this rank stands if a run times out
    try:
        group = RankGroup(env, spec.get("device") or spec["experiment"].get("device"))
    except Exception as exc:  # noqa: BLE001 - no GPU for this rank, a rendezvous failure: a load incident (R7)
        ch.send(WorkerIncident(where="load", **failure_fields(exc), trace=mask_text(traceback.format_exc(limit=3))[0]))
        return 3
    try:
        return run_torch_worker({**spec, "device": group.device},
                                RankChannel(ch.out, ch.inp, group), group)
    finally:
        group.close()


def fill_placeholders(arg: str, values: dict[str, Any]) -> str:
    """Fill the placeholder of one argument of a command workload.

    Only an argument that *is* a placeholder (``{batch}``, ``{output}``, ``{corpus}``,
    ``{context}``) or a flag's value (``--out={output}``) is filled, so a value is always
    one argument and never becomes code; any other text (a Python ``-c`` snippet's
    braces) is left as written (:func:`gpusession.core.experiment.placeholders.fill_argument`).

    Args:
        arg: one argv entry, e.g. ``"--out={output}"``.
        values: a value for each of the four names.

    Returns:
        The argument, filled with ``str(value)`` when it is a whole placeholder.

    Raises:
        KeyError: ``values`` lacks the placeholder ``arg`` is.
    """
    return fill_argument(arg, values)


def _placeholder_values(spec: dict[str, Any], setting: dict[str, Any], out_path: Path) -> dict[str, Any]:
    # H-34: only plain paths gpusession made, never the user's file names (spec["plain"]).
    # A3: the variant's precision and params, each passed (a plain value only)
    return substitution_values(spec["plain"], batch=setting["batch"], context=setting.get("context"),
                               output=out_path,
                               precision=setting.get("precision", spec.get("experiment", {}).get("precision")),
                               seed=spec.get("experiment", {}).get("seed"),
                               params=_passed_params(setting.get("params", {})))


def _passed_params(params: dict[str, Any]) -> dict[str, Any]:
    """The params a command is given (A3): all but those gpusession itself reads (``code_dir``…)."""
    return {k: v for k, v in params.items() if k not in HARNESS_PARAMS}


#: The settings a command's row may state (A2): each filled only when received as an argument.
SETTINGS = ("batch", "context", "seed", "precision")


def received_settings(argv_t: list[str], values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """What one call of a command received, by argument and by variable only (A2).

    Args:
        argv_t: the command as defined (placeholders unfilled).
        values: this call's placeholder values (:func:`_placeholder_values`).

    Returns:
        ``(applied, offered)``: each of :data:`SETTINGS` that a whole-argument
        placeholder of ``argv_t`` carried, with the value it was filled with (a number
        for ``batch``, ``context``, ``seed``); and the settings with a value that only
        ``$GPUSESSION_<NAME>`` carried (offered, not verifiable).
    """
    taken = {found[1] for a in argv_t if (found := whole(str(a))) is not None}
    applied: dict[str, Any] = {}
    offered: list[str] = []
    for name in SETTINGS:
        value = values.get(name)
        if value in (None, ""):
            continue
        if name in taken:
            applied[name] = value if name == "precision" else int(value)
        else:
            offered.append(name)
    return applied, offered


def _command_argv(argv_t: list[str], spec: dict[str, Any], setting: dict[str, Any],
                  out_path: Path) -> list[str]:
    values = _placeholder_values(spec, setting, out_path)
    return [fill_placeholders(a, values) for a in argv_t]


@contextmanager
def _placeholder_env(spec: dict[str, Any], setting: dict[str, Any], out_path: Path) -> Iterator[None]:
    """Give every placeholder's value as ``GPUSESSION_<NAME>`` to the command, and where to report.

    Set in the environment the command inherits for the length of one call, restored
    afterwards (the spawn itself, :func:`_call`, is left as it is). ``GPUSESSION_REPORT``
    names the file the command may report its device and versions to
    (:mod:`gpusession.core.experiment.command_report`); an earlier call's report is
    removed first, before any clock starts.
    """
    env = placeholder_env(_placeholder_values(spec, setting, out_path))
    env[REPORT_ENV] = str(report_path(spec))
    remove_report(report_path(spec))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def report_path(spec: dict[str, Any]) -> Path:
    """The file ``$GPUSESSION_REPORT`` names: in the worker's private folder (0700, plain path)."""
    return Path(spec["plain"].private_dir) / REPORT_NAME


def call_report(spec: dict[str, Any]) -> CommandReport:
    """What the call just ended reported, read once it exited (outside the timed region), then removed."""
    path = report_path(spec)
    report = read_report(path)
    try:
        remove_report(path)
    except OSError:
        pass  # a folder in its place: the next call's removal says so as a failed run
    return report


#: Where :func:`_call` reports the PIDs of the user's commands (set by :func:`main`).
_pid_channel: Channel | None = None


class CallEnd(subprocess.CompletedProcess[bytes]):
    """A command's end as :class:`subprocess.CompletedProcess`, with the kernel's account of it.

    ``usage``: its CPU seconds and peak memory (:class:`gpusession.bench.usage.ProcessUsage`),
    ``None`` when not measured.
    """

    def __init__(self, args: list[str], returncode: int, stderr: bytes, usage: ProcessUsage | None) -> None:
        """As :class:`subprocess.CompletedProcess`, plus ``usage``."""
        super().__init__(args, returncode, stderr=stderr)
        self.usage = usage


def _call(argv: list[str], cwd: Path) -> CallEnd:
    """Run the user's command once, in the session folder ``cwd``, and wait for it.

    In the session folder: a relative path of the command (its program, a file
    argument) means the same file from whatever directory ``run`` was started, and in
    a pulled copy (the one rule for an experiment's paths, as for the corpus).

    It stays in the worker's process group (ended with it), starts with default signal
    dispositions (the worker ignores SIGINT; the command must stay interruptible) and
    gets SIGKILL when the worker dies (:func:`gpusession.bench.lifetime.child_preexec`).
    Its PID and start time are reported to the parent, which journals them. Its CPU
    seconds and peak memory come with the wait that ends it (``os.wait4``,
    :func:`gpusession.bench.usage.wait_with_usage`): hyperfine's ``user``, ``system`` and
    ``memory_usage_byte``.

    Raises:
        OSError: the program is missing or not executable.
    """
    import threading

    from gpusession.core.folder.processes import identify

    preexec = child_preexec if os.name == "posix" else None
    tail: deque[bytes] = deque(maxlen=STDERR_TAIL_LINES)
    # Its stderr through a pipe of our own, read by a daemon thread that owns the read
    # end (no buffered reader a close could wait on): a descendant that keeps the pipe
    # open (H-25) never keeps the run waiting; the thread ends when the last writer does.
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=write_fd,  # noqa: SIM115
                                preexec_fn=preexec, cwd=cwd)  # noqa: PLW1509 - the tee thread starts after the fork
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    tee = threading.Thread(target=_tee, args=(read_fd, tail), daemon=True)
    tee.start()
    with proc:
        if _pid_channel is not None:
            _pid_channel.send(WorkerCommandStarted(pid=proc.pid,
                                                   create_time_s=identify(proc.pid).create_time_s))
        try:
            usage = wait_with_usage(proc)  # the wait itself, with the kernel's account of the command
        except BaseException:
            proc.kill()
            raise
        finally:
            tee.join(timeout=0.3)
    return CallEnd(argv, proc.returncode, b"\n".join(tail), usage)


#: The last lines of a failed command's stderr kept in its row's notes.
STDERR_TAIL_LINES = 5


def _tee(read_fd: int, tail: deque[bytes]) -> None:
    """Copy the command's stderr to the worker's, keeping its last lines in ``tail``; closes ``read_fd`` at the end."""
    try:
        out = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        out = None
    from gpusession.core.files.secrets import KeyBlockFilter

    keys = KeyBlockFilter()  # a private key, armoured or not, hidden line by line before the tail is cut (H-59, H-75)
    rest = b""
    try:
        while chunk := os.read(read_fd, 65536):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()[-1000:]
            kept = [k for ln in lines for k in keys.bytes_lines(ln)]
            if out is not None and kept:  # the worker's stderr is journaled: it never sees the key
                try:
                    os.write(out, b"\n".join(kept) + b"\n")
                except OSError:
                    out = None
            tail.extend(ln[:1000] for ln in kept)
        last = [*(keys.bytes_lines(rest) if rest else []), *keys.bytes_end()]  # a line held back too
        if last:
            if out is not None:
                try:
                    os.write(out, b"\n".join(last) + (b"" if rest else b"\n"))
                except OSError:
                    pass
            tail.extend(last)
    except OSError:
        pass
    finally:
        os.close(read_fd)


def stderr_words(raw: bytes | None) -> str:
    """The last stderr lines of a failed command, as a note may hold them: masked, escaped, bounded.

    Returns:
        ``"; its stderr ended: line | line"`` (each line through
        :func:`gpusession.core.files.textio.printable`: secrets masked, control characters
        escaped; at most 1,000 characters), or ``""`` when it wrote nothing.
    """
    from gpusession.core.files.textio import printable

    lines = [ln for ln in (raw or b"").decode("utf-8", "replace").split("\n") if ln.strip()]
    if not lines:
        return ""
    text = printable(" | ".join(lines), keep="")
    return "; its stderr ended: " + (text if len(text) <= 1000 else "…" + text[-999:])


def _end_escapees(ch: Channel) -> None:
    """End what the user's command left alive once it exited, and say so (H-25).

    Called after each call, outside the stopwatch: the worker is a child subreaper, so a
    process the command started in a session of its own is now the worker's child.
    """
    from gpusession.core.folder.processes import end_descendants

    ended = end_descendants()
    if ended:
        ch.send(WorkerDescendantsEnded(pids=[pid for pid, _ in ended],
                                       names=[name for _, name in ended]))


def command_warmup(spec: dict[str, Any], ch: Channel, argv_t: list[str]) -> dict[str, int]:
    """The announced warm-up of a command workload, with the measured shapes (R4, H-15).

    For each variant the command runs ``warmup_iterations`` times with that variant's
    placeholders, unmeasured, its output going to ``<variant>/warmup-<i>.jsonl`` (never
    validated). A call that exits non-zero (or cannot start) ends that variant's warm-up
    with an incident; the count actually done is what its rows carry.

    Returns:
        Iterations performed per variant id (empty for a cold worker: no warm-up).
    """
    warm = spec.get("warmup", [])
    iterations = int(spec.get("warmup_iterations", 0))
    out_dir = Path(spec["output_dir"])
    done: dict[str, int] = {}
    for w in warm:
        variant = w["variant_id"]
        done[variant] = 0
        for i in range(1, iterations + 1):
            out_path = out_dir / variant / f"warmup-{i}{spec.get('output_suffix', '.jsonl')}"
            try:
                prepare_output(out_path, session_root(spec))
                with _placeholder_env(spec, w, out_path):
                    code = _call(_command_argv(argv_t, spec, w, out_path), session_root(spec)).returncode
                _end_escapees(ch)
                call_report(spec)  # a warm-up's report is not a run's: read and dropped
            except (OSError, BadInput) as exc:  # the program is missing or not executable; a link
                ch.send(WorkerIncident(where="warmup", variant_id=variant, **failure_fields(exc)))
                break
            if code != 0:
                ch.send(WorkerIncident(where="warmup", variant_id=variant, ok=False, oom=False,
                                       error_type="CommandFailed",
                                       message=f"warm-up call {i} exited with code {code}"))
                break
            done[variant] += 1
    if warm:
        ch.send(WorkerWarmupDone(iterations=iterations, runs=sum(done.values()), per_variant=done))
    return done


def run_command_worker(spec: dict[str, Any], ch: Channel) -> int:
    """A plain command timed as a whole process (full-chain; no torch here).

    The warm worker first performs the announced warm-up (:func:`command_warmup`), as
    the torch worker does; each row carries the iterations of its variant really done.
    """
    exp = spec["experiment"]
    argv_t: list[str] = list(exp["params"]["command"])
    become_subreaper()  # what the command leaves alive comes back to this worker (H-25)
    os.environ[WORKER_ENV] = worker_marker(identify(os.getpid()))  # and names it to the next run
    spec = {**spec, "plain": make_plain_paths(spec["output_dir"], spec.get("corpus"))}  # H-34
    atexit.register(remove_plain_paths, spec["plain"])
    # the command's own interpreter is unknown: no python_version (the worker's is not its);
    # the command may report it, and its device, per run ($GPUSESSION_REPORT, call_report)
    code_dir = spec.get("code_dir") or program_folder(argv_t, session_root(spec))
    ch.send(WorkerEnvironment(environment={
        "device": COMMAND_DEVICE,  # --device is never passed to a command: it chooses its own
        # git describe, else a digest of the program files it names (R10, the runner's preflight too)
        "code_revision": command_code_revision(argv_t, session_root(spec), code_dir),
        **speed_env_vars(),
    }))
    ch.send(WorkerLoaded(elapsed_s=None, revisions={}, rss_peak_bytes=None))
    warm_done = command_warmup(spec, ch, argv_t)
    timer = SyncTimer([])  # the whole process, wall clock: nothing here to synchronize
    for run, out_path, order in ch.runs(spec):
        argv = _command_argv(argv_t, spec, run, out_path)
        took, offered = received_settings(argv_t, _placeholder_values(spec, run, out_path))
        did = {"phase": run["phase"], "scope": "full-chain", "order": order,
               "warmup_iterations": warm_done.get(run["variant_id"], 0),
               "context": run.get("context"), "applied": took, "offered": offered}
        try:  # a link in place of the output or its folder fails the run, named
            prepare_output(out_path, session_root(spec))
        except (OSError, BadInput) as exc:
            ch.send(WorkerRunFinished(run_key=run["run_key"], **failure_fields(exc), **did))
            continue
        try:
            with _placeholder_env(spec, run, out_path):
                m = timer.measure(lambda argv=argv: _call(argv, session_root(spec)))  # type: ignore[misc]
            _end_escapees(ch)  # before the next run, never beside it (H-25)
            make_output_private(out_path)
        except OSError as exc:  # the program is missing or not executable: a failed run (R7)
            ch.send(WorkerRunFinished(run_key=run["run_key"], **failure_fields(exc), **did))
            continue
        report = call_report(spec)  # after the clock stopped: what the command said it ran on
        did["reported"] = report.values or None
        did["report_note"] = report.words()
        if m.result.usage is not None:  # the kernel's account of it, read with the wait (hyperfine's figures)
            did.update(m.result.usage.fields())
        if m.result.returncode == 0:
            ch.send(WorkerRunFinished(run_key=run["run_key"], ok=True, elapsed_s=m.elapsed_s,
                                      output=str(out_path), **did))
        else:
            ch.send(WorkerRunFinished(run_key=run["run_key"], ok=False, error_type="CommandFailed",
                                      message=f"command exited with code {m.result.returncode}"
                                      + stderr_words(m.result.stderr),
                                      oom=False, **did))
    if not ch.stopped:
        ch.send(WorkerDone())
    return 0


def main(argv: list[str] | None = None,
         _runner: Callable[[dict[str, Any], Channel], int] | None = None) -> int:
    """Run one worker: ``python -m gpusession.bench.worker --spec FILE``.

    The protocol keeps the original stdout; anything else printed goes to stderr. SIGINT
    is ignored: a Ctrl-C is the parent's to turn into a cancel at the next run boundary
    (H-12). The worker ends with its parent (``PR_SET_PDEATHSIG``).

    Args:
        argv: the command-line arguments (default ``sys.argv[1:]``).
        _runner: replaces the torch/command worker (tests).

    Returns:
        The exit code: 0 done or stopped, 3 the load failed (reported as an incident),
        4 a bug in the harness (reported as an incident with its traceback), 5 this
        rank's measured run failed under torchrun and the group ended with it (the
        group's other ranks exit 0).

    Raises:
        SystemExit: bad arguments (argparse).
        OSError: the spec file cannot be read.
        ValueError: the spec file is not JSON (``json.JSONDecodeError``).
    """
    global _pid_channel
    # End with the runner even if it is killed with SIGKILL (H-14).
    # A torchrun rank ends with its launcher, its parent: GPUSESSION_PARENT_PID
    # names the runner, the launcher's parent, so it is not the one to compare with.
    die_with_parent(os.getppid() if _rank_env() is not None else None)
    ap = argparse.ArgumentParser(prog="python -m gpusession.bench.worker")
    ap.add_argument("--spec", required=True, type=Path)
    args = ap.parse_args(argv)
    spec = json.loads(args.spec.read_text(encoding="utf-8"))
    # Ctrl-C in the terminal is the parent's to handle (cancel at the next run boundary).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The protocol keeps the real stdout; everything else printed goes to stderr.
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    ch = Channel(proto, sys.stdin)
    renv = None if _runner is not None else _rank_env()
    if renv is not None and not renv.speaks_first:
        ch = _SilentRank(sys.stderr, sys.stdin, renv.rank)  # only the leader speaks on stdout
    _pid_channel = ch
    if renv is None or renv.speaks_first:  # other ranks of a torchrun group stay silent
        ch.send(WorkerHello(pid=os.getpid(), worker=spec.get("worker")))
    runner = _runner or (run_command_worker if spec["experiment"]["workload"] == "command" else run_torch_worker)
    if renv is not None:
        runner = lambda spec, ch: run_rank_worker(spec, ch, renv)  # noqa: E731
    try:
        return runner(spec, ch)
    except Exception as exc:  # noqa: BLE001 - a bug in the harness itself: report it as an incident, never hang the parent
        ch.send(WorkerIncident(where="worker", **failure_fields(exc), trace=mask_text(traceback.format_exc(limit=5))[0]))
        return 4


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
