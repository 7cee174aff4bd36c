"""A command's CPU time and peak memory, from the kernel's account of it (``wait4``).

Why: hyperfine reports ``user``/``system`` seconds and ``memory_usage_byte`` for each
command; gpusession times a command workload as a whole process (R2 ``full-chain``), so
the same figures come free with the wait that ends the run: ``os.wait4`` returns the
child's ``rusage`` (its own CPU time plus that of the descendants it waited for, and the
largest resident set among them). Nothing is read inside the timed region that the wait
itself does not already do. Units: seconds and bytes (``ru_maxrss`` is KiB on Linux,
bytes on macOS).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProcessUsage:
    """What the kernel accounted to one ended command (hyperfine's ``user``, ``system``, memory).

    Attributes:
        user_s: CPU seconds in user mode (the command and the children it waited for).
        system_s: CPU seconds in kernel mode (same scope).
        max_rss_bytes: the largest resident set of the command or of a child it waited
            for, in bytes; ``None`` when the platform does not say.
    """

    user_s: float
    system_s: float
    max_rss_bytes: int | None

    def fields(self) -> dict[str, Any]:
        """The run event's fields (``cpu_user_s``, ``cpu_system_s``, ``max_rss_bytes``)."""
        return {"cpu_user_s": self.user_s, "cpu_system_s": self.system_s, "max_rss_bytes": self.max_rss_bytes}


def maxrss_bytes(ru_maxrss: int, platform: str = sys.platform) -> int | None:
    """``ru_maxrss`` → bytes: KiB on Linux and the BSDs, bytes on macOS; ``None`` when 0 (not kept)."""
    if ru_maxrss <= 0:
        return None
    return int(ru_maxrss) if platform == "darwin" else int(ru_maxrss) * 1024


def wait_with_usage(proc: subprocess.Popen[Any]) -> ProcessUsage | None:
    """Wait for ``proc`` as ``proc.wait()`` does, and return what the kernel accounted to it.

    ``proc.returncode`` is set as :meth:`subprocess.Popen.wait` sets it (negative for a
    signal). Where ``os.wait4`` is missing (Windows), or the child was already reaped
    elsewhere, it falls back to ``proc.wait()`` and returns ``None``: not measured,
    never 0 (C3).
    """
    wait4 = getattr(os, "wait4", None)
    if wait4 is None or proc.returncode is not None:
        proc.wait()
        return None
    try:
        _pid, status, usage = wait4(proc.pid, 0)
    except ChildProcessError:
        proc.wait()
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ProcessUsage(float(usage.ru_utime), float(usage.ru_stime), maxrss_bytes(usage.ru_maxrss))
