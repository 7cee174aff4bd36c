"""Where each rank of a group stood when its run timed out (a hung rank is named).

Who calls it: a rank at its start (:func:`register_dump`, from
:func:`gpusession.bench.worker.run_rank_worker`) and the runner when a run of a torchrun
group passes its timeout (:func:`ask_stacks`, then :func:`hung_words`), just before it
ends the group. No torch here.

How: each rank on the runner's node registers :mod:`faulthandler` on ``SIGUSR1``, writing
its Python stack to ``<folder>/rank-<r>.txt`` (the folder a private temporary one the
runner names in :data:`STACK_DIR_ENV`). faulthandler writes from the C signal handler,
so a rank blocked in a barrier or in a kernel answers too. The innermost frame says
where the rank stood: in the package's barrier (it had finished its share and waited for
the others) or anywhere else (it was still working: that is the hung rank). Ranks on
other nodes are not asked (their process cannot be signalled from here).
"""

from __future__ import annotations

import os
import platform
import re
import signal
import threading
import time
from pathlib import Path
from typing import IO, Any

#: The environment variable naming the folder of the ranks' stack files.
STACK_DIR_ENV = "GPUSESSION_STACK_DIR"

#: A frame of faulthandler's dump: ``  File "/x/y.py", line 12 in predict``.
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+) in (?P<func>\S+)')

#: The file whose frames mean "waiting for the other ranks" (the protocol's barriers).
_BARRIER_FILE = "rank_group.py"

#: The first line of a stack file: ``main thread 0x<ident>``.
_MAIN_MARK = "main thread "

_dump_file: IO[str] | None = None  # kept open: faulthandler writes to its descriptor


def stack_path(folder: Path, rank: int) -> Path:
    """``<folder>/rank-<rank>.txt``."""
    return Path(folder) / f"rank-{rank}.txt"


def register_dump(rank: int, environ: Any = None) -> Path | None:
    """In a rank: dump this process's Python stack on ``SIGUSR1`` (POSIX only).

    Args:
        rank: this process's global rank.
        environ: the environment (default ``os.environ``); nothing is done unless it
            names an existing folder in :data:`STACK_DIR_ENV`.

    Returns:
        The stack file, or ``None`` when nothing was registered.
    """
    global _dump_file
    import faulthandler

    folder = (os.environ if environ is None else environ).get(STACK_DIR_ENV)
    if not folder or not hasattr(signal, "SIGUSR1") or not Path(folder).is_dir():
        return None
    final = stack_path(Path(folder), rank)
    tmp = final.with_suffix(".tmp")
    try:
        fh = open(tmp, "w", encoding="utf-8")  # noqa: SIM115 - kept open for the signal handler
        # every thread (the kernel may hand the signal to any); the main thread is named first
        fh.write(f"{_MAIN_MARK}0x{threading.main_thread().ident or 0:016x}\n")
        fh.flush()
        faulthandler.register(signal.SIGUSR1, file=fh, all_threads=True)
        os.replace(tmp, final)  # the file's presence says the handler is in place
    except (OSError, RuntimeError, ValueError):
        return None
    _dump_file = fh
    return final


def ask_stacks(folder: Path, pids: list[int | None], hosts: list[str | None] | None = None,
               create_times_s: list[float | None] | None = None, *, wait_s: float = 2.0) -> dict[int, str]:
    """Signal every rank of this host that registered a dump; their stacks, by rank.

    Args:
        folder: the group's stack folder (:data:`STACK_DIR_ENV`).
        pids: each rank's PID, by rank.
        hosts: each rank's host name, by rank; a rank on another host is not asked.
        create_times_s: each rank's process start time (psutil), by rank; a PID now held
            by another process is not signalled.
        wait_s: seconds to wait for the dumps.

    Returns:
        ``{rank: dump text}`` for the ranks that answered.
    """
    import psutil

    here = platform.node()
    asked: dict[int, Path] = {}
    for rank, pid in enumerate(pids):
        path = stack_path(folder, rank)
        if pid is None or not path.is_file():
            continue  # no handler in place: SIGUSR1 would end the process
        if hosts and rank < len(hosts) and hosts[rank] not in (None, here):
            continue
        try:
            proc = psutil.Process(int(pid))
            want = create_times_s[rank] if create_times_s and rank < len(create_times_s) else None
            if want is not None and abs(proc.create_time() - float(want)) > 1.0:
                continue
            proc.send_signal(signal.SIGUSR1)
        except (psutil.Error, OSError, ValueError):
            continue
        asked[rank] = path
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and not all(_has_frame(p) for p in asked.values()):
        time.sleep(0.05)
    time.sleep(0.1)  # faulthandler writes a frame a line: let the last lines land
    got: dict[int, str] = {}
    for rank, path in asked.items():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if innermost_frame(text) is not None:
            got[rank] = text
    return got


def _has_frame(path: Path) -> bool:
    try:
        return innermost_frame(path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


def innermost_frame(dump: str) -> tuple[str, int, str] | None:
    """``(file, line, function)``: where the main thread of a dump stood, outside torch.

    The dump is a stack file: its first line names the main thread
    (``main thread 0x…``), then faulthandler's blocks (``Thread 0x… (most recent call
    first):`` or ``Current thread 0x…``, then frames, innermost first). The innermost
    frame that is not torch's own code is returned (a barrier or a synchronize inside
    torch says less than its caller), else the innermost one. Without the first line,
    the first block counts.
    """
    lines = dump.splitlines()
    main = _hex(lines[0]) if lines and lines[0].startswith(_MAIN_MARK) else None
    in_main = main is None
    frames: list[tuple[str, int, str]] = []
    for line in lines:
        if line.startswith(("Thread 0x", "Current thread 0x")):
            if frames:
                break
            in_main = main is None or _hex(line) == main
            continue
        m = _FRAME_RE.match(line)
        if m and in_main:
            frames.append((m["file"], int(m["line"]), m["func"]))
    own = [f for f in frames if "/torch/" not in f[0].replace("\\", "/")]
    return (own or frames)[0] if frames else None


def _hex(line: str) -> int | None:
    """The first ``0x…`` number of ``line``."""
    m = re.search(r"0x([0-9a-fA-F]+)", line)
    return int(m[1], 16) if m else None


def hung_words(stacks: dict[int, str], world_size: int) -> str | None:
    """Which ranks were still working and where, which waited; ``None`` when none answered.

    Example: ``"rank 1 of 2 was still working, in predict (fake_workloads.py line 124);
    rank 0 had finished its share and waited at the barrier"``.
    """
    working: list[str] = []
    waiting: list[int] = []
    for rank in sorted(stacks):
        frame = innermost_frame(stacks[rank])
        if frame is None:
            continue
        file, line, func = frame
        if Path(file).name == _BARRIER_FILE:
            waiting.append(rank)
        else:
            working.append(f"rank {rank} of {world_size} was still working, in {func} "
                           f"({Path(file).name} line {line})")
    if not working and not waiting:
        return None
    parts = list(working)
    if waiting:
        who = "rank " + str(waiting[0]) if len(waiting) == 1 else "ranks " + ", ".join(map(str, waiting))
        parts.append(f"{who} had finished {'its' if len(waiting) == 1 else 'their'} share and waited at the barrier")
    unasked = world_size - len(stacks)
    if unasked > 0:
        parts.append(f"{unasked} rank(s) not asked (another node, or not started)")
    return "; ".join(parts)


__all__ = ["STACK_DIR_ENV", "ask_stacks", "hung_words", "innermost_frame", "register_dump", "stack_path"]
