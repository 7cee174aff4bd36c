"""A child process ends with its parent: ``PR_SET_PDEATHSIG`` (H-14).

Why it exists: a worker killed with SIGKILL, or a parent killed with SIGKILL, cannot end
its children itself. Linux can: ``prctl(PR_SET_PDEATHSIG, sig)`` makes the kernel send
``sig`` to a process when its parent dies. Used in three places:

* the worker (:mod:`gpusession.bench.worker`) calls :func:`die_with_parent` first thing,
  with the runner's PID from ``GPUSESSION_PARENT_PID`` (:data:`PARENT_ENV`);
* the worker spawns the user's command with :func:`child_preexec` (signal dispositions
  reset to default, so the command can be interrupted, and the death signal set);
* a torchrun rank (several GPUs) calls :func:`die_with_parent` at its start: torchrun
  puts each rank in a session of its own, so ending the worker's group does not reach
  ranks, but the death signal does when their launcher dies.

The death signal fires when the parent **thread** that forked the child exits, not the
parent process. The runner forks its workers from the thread that runs
:meth:`gpusession.bench.runner.Runner.run`, which blocks until the last worker has
exited: in the TUI that is the Run pane's thread worker, alive for the whole run. Never
start a worker from a short-lived thread.

Linux only: on other systems every function here is a no-op returning ``False`` (process
groups and the journal's PIDs still end leftovers there). No textual, no torch.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

from gpusession.core.folder.processes import PARENT_ENV

#: ``PR_SET_PDEATHSIG`` of ``<linux/prctl.h>``.
_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None  # not Linux: no parent-death signal (a no-op, see module doc)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return fn


#: Loaded once, before any fork, so a pre-exec function only calls it.
_PRCTL = _load_prctl()


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent thread exits.

    Args:
        sig: the signal (default SIGKILL: it cannot be caught or ignored).

    Returns:
        ``True`` when set; ``False`` off Linux or when ``prctl`` failed.
    """
    if _PRCTL is None:
        return False
    return _PRCTL(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def die_with_parent(expected_parent: int | None = None, sig: int = signal.SIGKILL) -> bool:
    """Set the parent-death signal, then end now if the parent is already gone.

    The parent may die between the fork and the ``prctl``; then this process has been
    re-parented and the signal will never come. Comparing ``os.getppid()`` with the
    expected parent right after setting it closes that window.

    Args:
        expected_parent: the parent's PID; ``None`` reads :data:`PARENT_ENV` (no check
            when that is unset or not a number).
        sig: the signal to receive.

    Returns:
        ``True`` when the signal is set (``False`` off Linux). Does not return when the
        parent is already gone: the process sends itself ``sig``.
    """
    if expected_parent is None:
        text = os.environ.get(PARENT_ENV, "")
        expected_parent = int(text) if text.isdigit() else None
    done = set_parent_death_signal(sig)
    if done and expected_parent is not None and os.getppid() != expected_parent:
        os.kill(os.getpid(), sig)
    return done


def reset_signals() -> None:
    """Default dispositions for the signals a parent may ignore or catch.

    A child of a process that ignores SIGINT inherits "ignore" across ``exec``; the
    user's command must be interruptible, so SIGINT, SIGTERM, SIGHUP, SIGQUIT
    and SIGPIPE are back to their defaults.
    """
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGPIPE"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass


def child_preexec() -> None:
    """``preexec_fn`` for a child of a single-threaded process (the user's command).

    Resets signal dispositions (:func:`reset_signals`) and sets the parent-death signal
    to SIGKILL, so the command ends with the worker. Runs in the child
    between ``fork`` and ``exec``; the ``prctl`` function is loaded before the fork.
    """
    reset_signals()
    set_parent_death_signal(signal.SIGKILL)


__all__ = ["PARENT_ENV", "child_preexec", "die_with_parent", "reset_signals",
           "set_parent_death_signal"]
