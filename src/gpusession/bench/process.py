"""Worker subprocesses as the runner sees them: typed events in, stderr kept, exit described.

Who calls it: :class:`gpusession.bench.runner.Runner`. No torch here.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections import deque
from typing import Any

from gpusession.bench.lifetime import PARENT_ENV, exec_argv
from gpusession.bench.ranks import is_decoration
from gpusession.core.events import event_from_json
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_json
from gpusession.core.folder.processes import ProcessId, end_group, identify

#: Put on a worker's event queue when its stdout closes.
EOF_EVENT = object()
#: Seconds the stderr reader may take to drain once the worker's group is ended: every
#: writer is gone then, so a longer wait only waits on a process that could not be ended.
PIPE_DRAIN_S = 1.0
#: ``argv[1:3]`` of torchrun's launcher, started through :func:`exec_argv` (it cannot set
#: its parent-death signal itself).
_LAUNCHER = ["-m", "torch.distributed.run"]


def describe_exit(code: int | None) -> str:
    """``"killed by signal SIGKILL (9)"`` / ``"exited with code 3"``."""
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by signal {name} ({-code})"
    return f"exited with code {code}"


def outside_kill_advice(code: int | None) -> str | None:
    """What to do about a worker killed by SIGKILL that gpusession did not send, or ``None``.

    Why: the runner sends SIGKILL only on a timeout or an interruption, which are said
    in their own words; any other SIGKILL came from outside the worker, and the kernel's
    out-of-memory killer is the usual sender. Rows measured before it stand (S7).
    """
    if code != -signal.SIGKILL:
        return None
    return ("the kill came from outside gpusession: the kernel's out-of-memory killer is the usual "
            "sender (`dmesg | grep -i -e oom -e killed` or `journalctl -k` says); run again: "
            "the rows measured so far stand")


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class WorkerProcess:
    """One worker subprocess, read by two threads (H-12: the parent never blocks on it).

    The worker starts as the leader of a session (and process group) of its own: the
    terminal's Ctrl-C and hang-up do not reach it, and :meth:`end_group` ends it with
    everything it started, the user's command included (H-14). It learns its
    parent's PID from ``GPUSESSION_PARENT_PID`` and sets its parent-death signal itself
    (:func:`gpusession.bench.lifetime.die_with_parent`), so no ``preexec_fn`` runs in this
    possibly threaded parent. Create it from the thread that waits for it (the
    death signal follows the forking *thread*).

    Its stdout lines become typed worker events (:mod:`gpusession.core.events`) in
    ``events``, ending with ``EOF_EVENT``; a stdout line that is not a JSON object is kept
    with stderr. The last 200 stderr lines are kept in ``stderr`` for the journal.

    Args:
        argv: the worker's command line (no shell), e.g. ``[python, "-m",
            "gpusession.bench.worker", "--spec", FILE]``.
        env: its whole environment.

    Raises:
        OSError: the program cannot be started (from :class:`subprocess.Popen`).
    """

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        """Start the process and its two reader threads."""
        self.marker = str(os.getpid())
        env = {**env, PARENT_ENV: self.marker}
        if argv[1:3] == _LAUNCHER:  # the launcher ends with the runner too, its ranks with it
            argv = exec_argv(argv)
        #: What :meth:`end_group` ended after the worker had exited: ``(pid, name)``.
        self.ended: list[tuple[int, str]] = []
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            bufsize=1,
            # its own session: out of reach of the terminal's signals, ended as one group
            start_new_session=sys.platform != "win32",
        )
        #: PID and start time: the name recorded in the journal.
        self.ident: ProcessId = identify(self.proc.pid)
        self.events: queue.Queue[Any] = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=200)
        self._t_out = threading.Thread(target=self._read_out, daemon=True)
        self._t_err = threading.Thread(target=self._read_err, daemon=True)
        self._t_out.start()
        self._t_err.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                doc = loads_json(line, None)  # bounded: a nested line is not an event (H-39)
            except (ValueError, BadInput):  # not JSON, an integer too long, nested too deep
                doc = None
            if isinstance(doc, dict):
                self.events.put(event_from_json(doc, channel="worker"))
            else:
                self.stderr.append(f"[stdout] {line.rstrip()}")
        self.events.put(EOF_EVENT)

    def _read_err(self) -> None:
        from gpusession.core.files.secrets import KeyBlockFilter

        assert self.proc.stderr is not None
        keys = KeyBlockFilter()  # a private key, armoured or not, hidden line by line before the tail is cut (H-59, H-75)
        for line in self.proc.stderr:
            self.stderr.extend(keys.lines(line.rstrip("\n")))
        self.stderr.extend(keys.end())

    def send(self, text: str) -> None:
        """Write one line (``"go"`` / ``"stop"``) to the worker's stdin.

        A worker that has already exited is not an error here: its exit is read by
        :meth:`finish` and reported there, so a broken pipe is ignored.
        """
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(text + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def last_stderr(self) -> str | None:
        """The last meaningful stderr line on one line (at most 300 characters), or ``None``; secrets hidden (H-35).

        Decoration is skipped (:func:`is_decoration`: torchrun's banner, rules of
        asterisks), so an incident never quotes a line that says nothing.
        """
        from gpusession.core.files.secrets import mask_text

        # masked as one text first: a key or seed printed over several lines is hidden
        for line in reversed(mask_text("\n".join(self.stderr))[0].split("\n")):
            if not is_decoration(line):
                return _one_line(line)
        return None

    def finish(self, timeout: float = 30.0) -> int | None:
        """Close stdin, wait for the exit (killing the process after ``timeout``), join readers.

        Args:
            timeout: seconds to wait for the exit before the process is killed.

        Returns:
            The exit code; negative for a signal (``-9`` when it had to be killed).
        """
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.end_group()
            code = self.proc.wait()
        self.ended = self._end_left()  # whatever the worker left behind, in its group or not
        # every writer of the pipe is ended: never wait long on one that escaped (H-25)
        self._t_err.join(timeout=PIPE_DRAIN_S)
        return code

    def _end_left(self) -> list[tuple[int, str]]:
        """End what the exited worker left (:meth:`end_group`); ``(pid, name)`` of each."""
        import psutil

        names: dict[int, str] = {}
        for p in _marked_now(self.marker, self.ident):
            try:
                names[p.pid] = p.name()
            except (psutil.Error, OSError):
                continue
        return [(pid, names.get(pid, "?")) for pid in self.end_group()]

    def end_group(self) -> list[int]:
        """End the worker's whole process group and its descendants now.

        Safe to call from any thread, several times, and after the worker exited (then
        only leftovers of its group are ended). The worker's own exit status stays
        readable by :meth:`finish`.

        The runner's marker (:data:`PARENT_ENV`) finds what left the group and the
        worker's tree (a session of its own, re-parented to init, H-25).

        Returns:
            The PIDs signalled.
        """
        return end_group(self.ident, marker=self.marker)


def _marked_now(marker: str, ident: ProcessId) -> list[Any]:
    """The live processes carrying ``marker`` started since the worker (their names are read before they end)."""
    from gpusession.core.folder.processes import marked

    return marked(marker, ident.create_time_s)
