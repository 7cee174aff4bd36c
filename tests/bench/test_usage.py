"""A command's CPU seconds and peak memory from ``os.wait4`` (hyperfine's user, system, memory_usage_byte)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from gpusession.bench.usage import maxrss_bytes, wait_with_usage

needs_wait4 = pytest.mark.skipif(not hasattr(os, "wait4"), reason="os.wait4 is POSIX only")


@needs_wait4
def test_the_wait_keeps_the_exit_status_and_says_cpu_and_peak() -> None:
    code = "import sys; x = bytearray(64 * 1024 * 1024); sum(range(200_000)); sys.exit(3)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    with proc:
        usage = wait_with_usage(proc)
    assert proc.returncode == 3  # as Popen.wait() sets it
    assert usage is not None and usage.user_s + usage.system_s > 0
    assert usage.max_rss_bytes is not None and usage.max_rss_bytes >= 64 * 1024 * 1024
    assert usage.fields() == {"cpu_user_s": usage.user_s, "cpu_system_s": usage.system_s,
                              "max_rss_bytes": usage.max_rss_bytes}


@needs_wait4
def test_a_command_ended_by_a_signal_reads_negative_as_popen_says() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    with proc:
        proc.send_signal(signal.SIGKILL)
        wait_with_usage(proc)
    assert proc.returncode == -signal.SIGKILL


def test_a_child_already_waited_for_is_not_measured_never_zero() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    with proc:
        proc.wait()
        assert wait_with_usage(proc) is None and proc.returncode == 0


def test_ru_maxrss_is_kib_on_linux_bytes_on_macos_and_0_is_not_measured() -> None:
    assert maxrss_bytes(2048, "linux") == 2 * 1024 * 1024
    assert maxrss_bytes(2048, "darwin") == 2048
    assert maxrss_bytes(0, "linux") is None
