"""Processes of a run: identity, ending a worker's whole group, leftovers, interrupts.

Why it exists (H-14): a worker runs in a process group (session) of its own,
with the user's command inside it. A timeout, a cancel, an error of the parent, SIGHUP or
SIGTERM ends the **whole** group (``os.killpg``) and any descendant found with psutil. A process is named by its PID *and* its start time (``create_time_s``), so a
PID reused by an unrelated process is never signalled. Before a new run starts, the
workers and commands recorded in the journal that are still alive are ended
(:func:`end_recorded`), so two measurements never overlap: the run lock's PID alone is
not trusted.

Who calls it: :class:`gpusession.bench.process.WorkerProcess` (group kill),
:class:`gpusession.bench.runner.Runner` (leftovers at run start, interrupts), the TUI's
and ``run --headless``'s SIGHUP/SIGTERM handlers (:func:`interrupt_all`). The OS does
the work (process groups, signals; psutil to list descendants): no polling loops beyond
psutil's own wait. No textual, no torch.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psutil


#: Environment variable naming the runner's PID; every worker and the commands it starts
#: carry it, which tells our processes from others in a group whose leader is gone.
PARENT_ENV = "GPUSESSION_PARENT_PID"
#: Environment variable naming the command worker (``"<pid>:<start time>"``,
#: :func:`worker_marker`); the user's commands and whatever they start inherit it, so a
#: process that escaped a worker killed with its runner is still found by the next run.
WORKER_ENV = "GPUSESSION_WORKER"
#: The first word of an accept rule's :data:`PARENT_ENV` marker (:func:`rule_marker`, H-49, H-79).
RULE_MARKER = "accept-rule"
#: Seconds :func:`end_group` waits for the end of processes it killed (not children).
WAIT_S = 1.0
#: Two start times closer than this (seconds) name the same process (psutil rounds).
_SAME_START_S = 0.05


@dataclass(frozen=True)
class ProcessId:
    """One process, named so that a reused PID is never mistaken for it.

    Attributes:
        pid: the process id.
        create_time_s: its start time, seconds since the epoch (psutil's
            ``create_time()``); ``None`` when it could not be read (then the PID alone
            is trusted only while the process is a child of this one).
    """

    pid: int
    create_time_s: float | None


def identify(pid: int) -> ProcessId:
    """The :class:`ProcessId` of a live process (start time ``None`` if unreadable)."""
    import psutil
    try:
        return ProcessId(pid, psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return ProcessId(pid, None)


def alive(ident: ProcessId) -> psutil.Process | None:
    """The live process named by ``ident``, or ``None`` (gone, a zombie, or a reused PID).

    Args:
        ident: PID and start time as recorded (recovery never trusts a PID alone).
    """
    import psutil
    try:
        proc = psutil.Process(ident.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if ident.create_time_s is not None and abs(proc.create_time() - ident.create_time_s) > _SAME_START_S:
            return None
        return proc
    except (psutil.Error, OSError):
        return None


def _descendants(proc: psutil.Process) -> list[psutil.Process]:
    import psutil
    try:
        return list(proc.children(recursive=True))
    except (psutil.Error, OSError):
        return []


def _groups(pgids: set[int]) -> dict[int, list[psutil.Process]]:
    """The live processes of each process group in ``pgids`` (one pass over the system)."""
    import psutil
    out: dict[int, list[psutil.Process]] = {}
    if not pgids or not hasattr(os, "getpgid"):
        return out
    for proc in psutil.process_iter():
        try:
            pgid = os.getpgid(proc.pid)
        except OSError:
            continue
        if pgid in pgids:
            out.setdefault(pgid, []).append(proc)
    return out


def _members(procs: list[psutil.Process], not_before_s: float | None) -> list[psutil.Process]:
    """The processes of ``procs`` that a worker started.

    Not zombies, started no earlier than ``not_before_s``, carrying :data:`PARENT_ENV`
    (a daemon that reused the group id of a dead worker does not).
    """
    import psutil
    out = []
    for proc in procs:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if not_before_s is not None and proc.create_time() < not_before_s - _SAME_START_S:
                continue
            if PARENT_ENV not in proc.environ():
                continue
        except (psutil.Error, OSError):
            continue
        out.append(proc)
    return out


def _confirm_gone(procs: list[psutil.Process], wait_s: float) -> None:
    """Wait up to ``wait_s`` for killed processes to be dead.

    A zombie is dead (its parent, or init, reaps it when it will); psutil's own wait
    would count it alive until then.
    """
    deadline = time.monotonic() + wait_s
    pending = procs
    while pending:
        pending = [p for p in pending if _running(p)]
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(0.005)


def _running(proc: psutil.Process) -> bool:
    import psutil
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def _pid_reused(ident: ProcessId) -> bool:
    import psutil
    try:
        proc = psutil.Process(ident.pid)
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def worker_marker(ident: ProcessId) -> str:
    """The :data:`WORKER_ENV` value of a worker: ``"<pid>:<start time, seconds>"``."""
    return f"{ident.pid}:{ident.create_time_s or 0.0:.3f}"


def _parse_worker_marker(text: str) -> ProcessId | None:
    pid, _, start = text.partition(":")
    try:
        return ProcessId(int(pid), float(start))
    except ValueError:
        return None


def _escaped(workers: Mapping[int, float]) -> list[psutil.Process]:
    """Live processes whose :data:`WORKER_ENV` names one of ``workers`` (pid → start time).

    Why (H-25): the worker of a runner killed with SIGKILL dies with it, and what its
    command left in a session of its own is re-parented to init, out of every group and
    tree the journal names; the marker it inherited still names its worker.
    """
    import psutil
    out: list[psutil.Process] = []
    if not workers:
        return out
    me = os.getpid()
    for proc in psutil.process_iter():
        try:
            if proc.pid == me or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            text = proc.environ().get(WORKER_ENV)
        except (psutil.Error, OSError):
            continue
        named = _parse_worker_marker(text) if text else None
        if named is None or named.pid not in workers or named.create_time_s is None:
            continue
        if abs(named.create_time_s - workers[named.pid]) <= _SAME_START_S:
            out.append(proc)
    return out


def marked(marker: str, not_before_s: float | None) -> list[psutil.Process]:
    """Live processes whose :data:`PARENT_ENV` is ``marker``, started no earlier than ``not_before_s``.

    Why: a descendant that started a session of its own (``setsid``, a daemon) has left
    its worker's group and, once its parent exited, its tree; the marker it inherited
    still names the runner that started its worker (H-25). This process, zombies and
    processes whose environment cannot be read (another user's) are left out.

    Args:
        marker: the runner's PID as text (what the runner put in :data:`PARENT_ENV`).
        not_before_s: the worker's start time (seconds since the epoch), ``None``: any.
    """
    import psutil
    me = os.getpid()
    out = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == me or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if not_before_s is not None and proc.create_time() < not_before_s - _SAME_START_S:
                continue
            if proc.environ().get(PARENT_ENV) != marker:
                continue
        except (psutil.Error, OSError):
            continue
        out.append(proc)
    return out


def end_descendants(wait_s: float = WAIT_S) -> list[tuple[int, str]]:
    """End every live descendant of this process and reap its children (H-25).

    Why: the command worker is a child subreaper
    (:func:`gpusession.bench.lifetime.become_subreaper`); once the user's command has
    exited, whatever it left alive (a process in a session of its own included) is a
    descendant of the worker and would measure beside the next run.

    Args:
        wait_s: seconds to wait for the killed processes to end.

    Returns:
        ``(pid, program name)`` of each process ended, by PID; empty when none was alive.
    """
    import psutil
    me = psutil.Process()
    found: list[tuple[int, str]] = []
    procs = [p for p in _descendants(me) if _running(p)]
    for p in procs:
        try:
            name = p.name()
        except (psutil.Error, OSError):
            name = "?"
        try:
            p.kill()
        except (psutil.Error, OSError):
            continue
        found.append((p.pid, name))
    if procs:
        psutil.wait_procs(procs, timeout=wait_s)  # reaps the children of this process
    return sorted(found)


def end_child_tree(child: subprocess.Popen[Any], *, grace_s: float = 10.0) -> list[int]:
    """End a child of this process and every descendant it has: SIGTERM, then SIGKILL (H-63).

    Why: a program a command runs in its own foreground group (``pull``'s rsync and its
    ssh) gets no signal when only gpusession is sent SIGTERM or SIGHUP; left alone it runs
    on. SIGTERM first lets rsync keep its partial file for the next pull.

    Args:
        child: the process (its :class:`subprocess.Popen`, which keeps reaping it).
        grace_s: seconds the child has to end after SIGTERM before SIGKILL.

    Returns:
        The PIDs of the descendants that were still alive after the child ended and were
        killed (empty when none was).
    """
    import psutil
    try:
        tree = _descendants(psutil.Process(child.pid))  # listed before the child dies
    except (psutil.Error, OSError):
        tree = []
    child.terminate()
    try:
        child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    left = [p for p in tree if _running(p)]
    for p in left:
        try:
            p.kill()  # psutil checks the start time: a reused PID is never signalled
        except (psutil.Error, OSError):
            pass
    _confirm_gone(left, WAIT_S)  # descendants of the child: never children of this process
    return sorted(p.pid for p in left)


def end_group(leader: ProcessId, *, wait_s: float = WAIT_S,
              group: list[psutil.Process] | None = None, marker: str | None = None) -> list[int]:
    """End a worker's whole process group and every descendant (H-14).

    The worker was started as the leader of its own session, so its PID is the group's
    id. The group gets SIGKILL at once (a run interrupted is not measured any more, and
    nothing can ignore it); descendants that left the group (a session of their own,
    e.g. torchrun ranks) are found with psutil before the leader dies and are killed too. A leader already gone still has its
    group ended when members remain (orphans of a killed worker).

    Args:
        leader: the worker (group leader) as recorded.
        wait_s: seconds to wait for the end of processes that are not children of this
            one (children are reaped by their owner).
        group: the processes whose group id is the leader's PID, when the caller has
            already listed them (else they are listed here).
        marker: the :data:`PARENT_ENV` value the worker's descendants carry (the
            runner's PID as text): processes with it, started no earlier than the
            leader, are ended too, wherever they are (H-25: a session of their own,
            re-parented to init). ``None``: no such sweep (the runner that put it is
            not this process).

    Returns:
        The PIDs that were signalled (empty when nothing was alive).
    """
    import psutil
    procs: dict[int, psutil.Process] = {}
    lead = alive(leader)
    reused = lead is None and _pid_reused(leader)  # its group id names another process now
    if marker is not None:
        procs.update({p.pid: p for p in marked(marker, leader.create_time_s)})
    if reused and not procs:
        return []  # the group id now belongs to another process: none of ours is left in it
    if lead is not None:
        procs[lead.pid] = lead
        procs.update({p.pid: p for p in _descendants(lead)})
    if group is None and not reused:
        group = _groups({leader.pid}).get(leader.pid, [])
    group = group or []
    members = _members(group, leader.create_time_s)
    for m in members:  # the group's own members and their descendants
        procs.setdefault(m.pid, m)
        procs.update({p.pid: p for p in _descendants(m) if p.pid not in procs})
    procs.pop(os.getpid(), None)  # never this process (defensive: it is not in the group)
    if not procs:
        return []
    if hasattr(os, "killpg") and not reused:
        try:
            os.killpg(leader.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for p in procs.values():  # descendants that left the group (a session of their own)
        try:
            p.kill()
        except (psutil.Error, OSError):
            pass
    # Confirm; never wait on a child of this process here: psutil would reap it and its
    # owner (subprocess.Popen) would then read a wrong exit status.
    me = os.getpid()
    others = []
    for p in procs.values():
        try:
            if p.ppid() != me:
                others.append(p)
        except (psutil.Error, OSError):
            continue
    _confirm_gone(others, wait_s)
    return sorted(procs)


def session_tag(folder: Path) -> str:
    """``<device>-<inode>`` of the session folder: names it in a marker however it is spelled or moved."""
    st = os.stat(folder)
    return f"{st.st_dev}-{st.st_ino}"


def rule_marker(session_folder: Path, token: str) -> str:
    """The :data:`PARENT_ENV` value of an accept rule this process runs for ``session_folder`` (H-49, H-79).

    ``accept-rule:<session tag>:<runner pid>:<runner start time, s>:<token>``: the rule
    and whatever it starts inherit it, so the session's next run finds what a rule left
    once its runner was killed (:func:`end_rule_leftovers`), as a worker's escapees are
    found by :data:`WORKER_ENV`.
    """
    me = identify(os.getpid())
    try:
        tag = session_tag(session_folder)
    except OSError:  # no folder: the rule cannot start there either
        tag = "none"
    return f"{RULE_MARKER}:{tag}:{me.pid}:{me.create_time_s or 0.0:.3f}:{token}"


def _parse_rule_marker(text: str) -> tuple[str, ProcessId] | None:
    """``(session tag, runner)`` of a :func:`rule_marker`; ``None`` for any other text."""
    parts = text.split(":")
    if len(parts) != 5 or parts[0] != RULE_MARKER:
        return None
    try:
        return parts[1], ProcessId(int(parts[2]), float(parts[3]))
    except ValueError:
        return None


def end_rule_leftovers(session_folder: Path) -> list[str]:
    """End what an accept rule of ``session_folder`` left alive when its runner died; one sentence each.

    Source: H-79 (as H-25 for a worker). Why: a rule's ``setsid`` child survived a SIGKILL
    of ``run``, and the next run ran beside it saying no incident. Every live process
    whose :data:`PARENT_ENV` is a :func:`rule_marker` of this session folder and whose
    runner (PID and start time) is gone is ended with its descendants; a rule of a live
    runner, or of another session, is never touched.

    Args:
        session_folder: the session whose run starts (it holds the run lock).

    Returns:
        One sentence per process ended (empty when none was alive).
    """
    import psutil
    try:
        tag = session_tag(session_folder)
    except OSError:
        return []
    me = os.getpid()
    found: list[psutil.Process] = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == me or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            text = proc.environ().get(PARENT_ENV)
        except (psutil.Error, OSError):
            continue
        named = _parse_rule_marker(text) if text else None
        if named is not None and named[0] == tag and alive(named[1]) is None:
            found.append(proc)
    out: list[str] = []
    done: set[int] = set()
    for proc in found:
        if proc.pid in done:  # ended with the tree of one named before
            continue
        try:
            name = proc.name()
        except (psutil.Error, OSError):
            name = "a process"
        ended = _end_tree(identify(proc.pid))
        done.update(ended)
        if ended:
            pids = ", ".join(str(p) for p in ended[:5]) + (f" and {len(ended) - 5} more" if len(ended) > 5 else "")
            out.append(f"{name} (pid {proc.pid}), left by an accept rule of an earlier run, was still alive; "
                       f"it was ended before this run started ({len(ended)} process(es): pid {pids})")
    return out


#: The events :func:`end_recorded` reads (a caller may decode only their lines of the journal).
END_RECORDED_EVENTS = ("worker_started", "command_started", "worker_loaded")


def end_recorded(records: Iterable[object], session_folder: Path | None = None) -> list[str]:
    """End the workers and commands a journal records that are still alive.

    Called when a new run holds the run lock, before its first worker starts: any worker
    (``worker_started``), user command (``command_started``) or torchrun rank (the
    ``rank_pids`` of ``worker_loaded``; a rank runs in a session of its own, out
    of its launcher's group) of an earlier run that is still alive — same PID *and* same
    start time — is ended (a worker with its whole group, a command or a rank with its
    descendants), so two measurements never overlap (H-14); so is any process whose
    :data:`WORKER_ENV` names a recorded worker (one that left every group, H-25). Records without a start time
    (first release) are skipped: a bare PID may have been reused; so is a rank of
    another host (several nodes).

    Args:
        records: the journal's typed records (:func:`gpusession.core.folder.journal.read_records`).
        session_folder: the session's folder: what its accept rules left alive is ended
            too (:func:`end_rule_leftovers`, H-79); ``None``: not looked for.

    Returns:
        One sentence per process ended (empty when none was alive).
    """
    from gpusession.core.events import CommandStartedRecord, WorkerLoadedRecord, WorkerStartedRecord

    out: list[str] = []
    recorded: dict[int, WorkerStartedRecord | CommandStartedRecord] = {}
    ranks: dict[int, float] = {}
    for rec in records:
        if isinstance(rec, (WorkerStartedRecord, CommandStartedRecord)):
            if rec.pid is not None and rec.create_time_s is not None:
                recorded[rec.pid] = rec  # the last record of a PID names it
        elif isinstance(rec, WorkerLoadedRecord):
            ranks.update(_recorded_ranks(rec))
    groups = _groups({pid for pid, r in recorded.items() if isinstance(r, WorkerStartedRecord)})
    for pid, rec in recorded.items():
        ident = ProcessId(pid, rec.create_time_s)
        kind = "worker" if isinstance(rec, WorkerStartedRecord) else "command"
        if isinstance(rec, WorkerStartedRecord):
            if pid not in groups and alive(ident) is None:
                continue
            ended = end_group(ident, group=groups.get(pid, []))
        else:
            ended = _end_tree(ident)
        if ended:
            out.append(f"a {kind} of an earlier run was still alive (pid {rec.pid}); it was "
                       f"ended before this run started ({len(ended)} process(es))")
    workers = {pid: r.create_time_s for pid, r in recorded.items()
               if isinstance(r, WorkerStartedRecord) and r.create_time_s is not None}
    for proc in _escaped(workers):  # what a command left in a session of its own (H-25)
        ended = _end_tree(identify(proc.pid))
        if ended:
            out.append(f"a process an earlier run's command left in a session of its own was "
                       f"still alive (pid {proc.pid}); it was ended before this run started "
                       f"({len(ended)} process(es))")
    for pid, create_time_s in ranks.items():  # ranks the groups above did not reach
        ended = _end_tree(ProcessId(pid, create_time_s))
        if ended:
            out.append(f"a rank of an earlier run was still alive (pid {pid}); it was "
                       f"ended before this run started ({len(ended)} process(es))")
    if session_folder is not None:
        out += end_rule_leftovers(session_folder)
    return out


def _recorded_ranks(rec: object) -> dict[int, float]:
    """``pid → start time`` of the ranks of this host a ``worker_loaded`` record names."""
    pids = getattr(rec, "rank_pids", None) or []
    times = getattr(rec, "rank_create_times_s", None) or []
    hosts = getattr(rec, "rank_hosts", None) or []
    here = platform.node()
    out: dict[int, float] = {}
    for i, pid in enumerate(pids):
        ct = times[i] if i < len(times) else None
        host = hosts[i] if i < len(hosts) else None
        if isinstance(pid, int) and isinstance(ct, (int, float)) and (host is None or host == here):
            out[pid] = float(ct)
    return out


def _end_tree(ident: ProcessId) -> list[int]:
    """Kill the process ``ident`` names (PID and start time) and its descendants.

    Returns:
        The PIDs signalled; empty when it is gone or its PID was reused.
    """
    import psutil
    proc = alive(ident)
    if proc is None:
        return []
    tree = [*_descendants(proc), proc]
    for p in tree:
        try:
            p.kill()
        except (psutil.Error, OSError):
            pass
    _confirm_gone([proc], WAIT_S)
    return sorted(p.pid for p in tree)


# -- interrupts: SIGHUP/SIGTERM reach every run of this process ------------------------
_INTERRUPTIBLE: set[Callable[[str], None]] = set()
# Re-entrant: a signal handler runs in the main thread, possibly while that thread is
# inside on_interrupt's own "with" (a plain lock would deadlock there).
_INTERRUPT_LOCK = threading.RLock()


def ending_signals() -> tuple[signal.Signals, ...]:
    """The :data:`ENDING_SIGNALS` a headless run or an agent should handle now.

    SIGHUP is left out when this process inherited it ignored: ``nohup gpusession run
    …`` asks for the run to outlive the terminal, and ending it at the hang-up would undo
    what the person asked (the convention of ``nohup``-aware programs).
    """
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) == signal.SIG_IGN:
        return tuple(s for s in ENDING_SIGNALS if s != hangup)
    return ENDING_SIGNALS


@contextmanager
def signal_handlers(handlers: Mapping[int, Callable[[int, Any], None]]) -> Iterator[None]:
    """Install ``handlers`` (signal number → handler) for the block; the previous ones after.

    Only the main thread may install signal handlers: elsewhere (a test's thread) nothing
    is installed. Used by ``run --headless`` and ``agent``.
    """
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig, handler in handlers.items():
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def on_interrupt(callback: Callable[[str], None]) -> Callable[[], None]:
    """Register ``callback(signal_name)`` to run on an ending signal; returns its remover.

    Ending signals: SIGHUP, SIGTERM, and ``run --headless``'s second Ctrl-C (``"SIGINT"``).

    A :class:`~gpusession.bench.runner.Runner` registers itself while it runs, so the
    signal handlers of ``run --headless`` and of the TUI need no reference to it. A signal
    held by :func:`interrupt_or_hold` while nothing was registered is told to ``callback``
    at once (H-76): the run it was meant for ends before its first run.
    """
    with _INTERRUPT_LOCK:
        _INTERRUPTIBLE.add(callback)
        held = _HELD.pop() if _HELD else None
    if held is not None:
        callback(held)

    def remove() -> None:
        with _INTERRUPT_LOCK:
            _INTERRUPTIBLE.discard(callback)

    return remove


def interrupt_all(signal_name: str) -> int:
    """Tell every registered run that ``signal_name`` (``"SIGHUP"``…) arrived.

    Returns:
        How many runs were told (0: nothing was running).
    """
    with _INTERRUPT_LOCK:
        callbacks = list(_INTERRUPTIBLE)
    for cb in callbacks:
        try:
            cb(signal_name)
        except Exception:  # noqa: BLE001 - one run's failure must not keep the others running
            pass
    return len(callbacks)


#: A signal that arrived while no run was registered, for the next one (at most one).
_HELD: list[str] = []


def interrupt_or_hold(signal_name: str) -> int:
    """:func:`interrupt_all`, or, with no run registered yet, hold the signal for the next one (H-76).

    Why: ``run`` installs its handlers before its runner registers (and keeps them after
    it has gone); a signal in between must neither be lost nor kill the process by its
    default action. :func:`on_interrupt` tells a held signal to the next run registered;
    :func:`take_held` reads one that no run heard.

    Returns:
        How many runs were told (0: the signal is held).
    """
    told = interrupt_all(signal_name)
    if told == 0:
        with _INTERRUPT_LOCK:
            _HELD[:] = [signal_name]
    return told


def take_held() -> str | None:
    """The signal :func:`interrupt_or_hold` held that no run heard (``"SIGTERM"``…), forgotten now."""
    with _INTERRUPT_LOCK:
        return _HELD.pop() if _HELD else None


class EndedBySignal(BaseException):
    """A signal ended ``run`` while no run was in flight (H-76): raised by :func:`ending_early`'s handler.

    A :class:`BaseException`, as :class:`KeyboardInterrupt` is, so no ``except Exception``
    on the way keeps the program going.

    Attributes:
        signal_name: ``"SIGTERM"``, ``"SIGHUP"`` or ``"SIGINT"``.
        exit_code: 128 + the signal's number.
    """

    def __init__(self, signal_name: str) -> None:
        """Name the signal; the message says nothing was cut short."""
        super().__init__(f"{signal_name} ended `run` while no run was in flight: nothing was cut short, "
                         "and the rows already in the session stand")
        self.signal_name = signal_name
        self.exit_code = 128 + int(signal.Signals[signal_name])


@contextmanager
def ending_early(say: Callable[[str], None]) -> Iterator[list[int]]:
    """Until a run registers: SIGTERM, SIGHUP (unless ignored, :func:`ending_signals`) and SIGINT end ``run`` cleanly (H-76).

    Why: ``run``'s start-up (polars, reading the session, torch for a Python workload)
    takes seconds, and a signal there once ended it by the default action (exit -15, no
    word). The block's handler tells a registered run (:func:`interrupt_or_hold`) or, with
    none, holds the signal for the next run and raises :class:`EndedBySignal` once (a
    second signal while ending is ignored); the block catches it, passes its message to
    ``say`` and yields the exit code.

    Args:
        say: prints one line (the command's stderr).

    Yields:
        A list the block fills with the exit code (128 + the signal) when a signal ended
        it; empty otherwise.
    """
    code: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        # held too: code that swallows every exception (a bare ``except`` in an import)
        # cannot lose it, the runner hears it as it registers and starts nothing
        if interrupt_or_hold(name) or code:
            return
        code.append(128 + signum)
        raise EndedBySignal(name)

    with signal_handlers({signal.SIGINT: on_signal, **{sig: on_signal for sig in ending_signals()}}):
        try:
            yield code
        except EndedBySignal as exc:
            take_held()  # heard: no later run is to hear it again
            code[:] = [exc.exit_code]
            try:
                say(str(exc))
            except OSError:  # the terminal is gone (SIGHUP)
                pass


#: The signals that end a run at once (the ssh drop, a ``kill``).
ENDING_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, n) for n in ("SIGHUP", "SIGTERM") if hasattr(signal, n))


__all__ = [
    "ENDING_SIGNALS", "EndedBySignal", "ending_early", "ending_signals", "interrupt_or_hold", "take_held",
    "PARENT_ENV", "WORKER_ENV", "ProcessId", "alive", "end_child_tree",
    "end_descendants", "end_group",
    "end_recorded", "end_rule_leftovers", "RULE_MARKER", "rule_marker", "session_tag", "identify", "interrupt_all", "marked", "on_interrupt", "WAIT_S",
    "worker_marker",
]
