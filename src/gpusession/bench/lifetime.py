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
  ranks, but the death signal does when their launcher dies;
* torchrun's launcher is started through :func:`main` (:func:`exec_argv`), which sets
  the signal and then becomes the launcher, so a launcher carries it too.

The command worker is also a child subreaper (:func:`become_subreaper`, H-25): what the
user's command leaves alive in a session of its own is re-parented to the worker, which
ends it when the command exits.

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
#: ``PR_SET_CHILD_SUBREAPER`` of ``<linux/prctl.h>``.
_PR_SET_CHILD_SUBREAPER = 36


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


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (``PR_SET_CHILD_SUBREAPER``).

    Why (H-25): a process the user's command starts in a session of its own (``setsid``,
    ``start_new_session=True``, a daemon) leaves the worker's group; when the command
    exits it is re-parented to this process instead of init, so the worker finds it
    among its descendants (:func:`gpusession.core.folder.processes.end_descendants`)
    and ends it before the next run. Kept across ``exec``, not inherited by children.

    Returns:
        ``True`` when set; ``False`` off Linux or when ``prctl`` failed.
    """
    if _PRCTL is None:
        return False
    return _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def exec_argv(argv: list[str]) -> list[str]:
    """``argv`` started through :func:`main`, which sets the parent-death signal first.

    Why: a program that is not ours (torchrun's launcher) cannot call
    :func:`die_with_parent` itself, and a ``preexec_fn`` is unsafe in the threaded
    runner; the signal set before ``exec`` is kept by the program, so a launcher whose
    runner is killed with SIGKILL ends at once, and its ranks with it (their own death
    signal), instead of living until the call in flight returns.

    Args:
        argv: the program's command line, e.g. ``[python, "-m", "torch.distributed.run", …]``.

    Returns:
        ``[sys.executable, "-m", "gpusession.bench.lifetime", "--", *argv]`` on Linux;
        ``argv`` unchanged elsewhere (no parent-death signal there).
    """
    if _PRCTL is None:
        return list(argv)
    return [sys.executable, "-m", "gpusession.bench.lifetime", "--", *argv]


def main(argv: list[str] | None = None) -> int:
    """``python -m gpusession.bench.lifetime -- PROGRAM ARGS…``: die with the parent, then exec.

    The parent is the one :data:`PARENT_ENV` names (the runner).

    Returns:
        2 when no program is given (else this process becomes the program).

    Raises:
        OSError: the program cannot be executed (``os.execvp``).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m gpusession.bench.lifetime -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    die_with_parent()
    os.execvp(args[0], args)
    return 0  # pragma: no cover - execvp does not return


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


__all__ = ["PARENT_ENV", "become_subreaper", "child_preexec", "die_with_parent", "exec_argv",
           "reset_signals", "set_parent_death_signal"]


if __name__ == "__main__":  # pragma: no cover - exercised through a real process in tests
    sys.exit(main())
