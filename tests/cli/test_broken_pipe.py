"""A reader that goes away (``gpusession list | head -1``): the command ends quietly.

Python's documentation (signal module, "Note on SIGPIPE"): flush inside the program,
point stdout at /dev/null, exit 1. Without it, the flush at interpreter exit fails and
Python prints "Exception ignored … BrokenPipeError" and exits 120. Real processes and
real pipes here: the reader's end is closed before the command writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

SRC = Path(__file__).parents[2] / "src"


def _env(*, unbuffered: bool) -> dict[str, str]:
    """The environment of a person's shell: stdout to a pipe is block-buffered unless
    PYTHONUNBUFFERED is set (then each print writes, and fails, at once)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "GPUSESSION_HOME")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def _closed_reader(root: Path, *args: str, unbuffered: bool = False) -> tuple[int, str]:
    """Run ``gpusession --sessions-dir ROOT ARGS`` with its stdout a pipe whose reader is
    already gone; (exit code, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "gpusession", "--sessions-dir", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(unbuffered=unbuffered))
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `head` has read what it wanted and exited
    try:
        err = proc.stderr.read()
        return proc.wait(timeout=60), err
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(("args", "unbuffered"), [
    (("list",), False), (("list", "--json"), False), (("show", "s1"), False),
    (("status", "s1"), False),  # the fast path, before the full parser is built
    (("checklist", "s1"), False),
    (("list",), True),  # the first print fails, inside the command
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else ("unbuffered" if v else "buffered"))
def test_broken_pipe_ends_quietly_with_exit_1(sessions_root: Path, capsys: pytest.CaptureFixture[str],
                                              args: tuple[str, ...], unbuffered: bool) -> None:
    for name in ("s1", "s2", "s3"):
        assert cli(capsys, sessions_root, "new", name, "--days", "7")[0] == 0
    code, err = _closed_reader(sessions_root, *args, unbuffered=unbuffered)
    assert (code, err) == (1, ""), err  # not 120 with "Exception ignored … BrokenPipeError"


def test_list_into_head_1_prints_its_first_line_and_nothing_on_stderr(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``gpusession list | head -1``: the reader takes one line and closes. Exit 1 when
    a line written after that was lost, 0 when everything was written before (a race
    with the reader) — never a message."""
    for i in range(40):
        assert cli(capsys, sessions_root, "new", f"s{i:02d}", "--days", "7")[0] == 0
    proc = subprocess.Popen([sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), "list"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(unbuffered=True))
    assert proc.stdout is not None and proc.stderr is not None
    try:
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert first.startswith("NAME ") and "PACKAGE" in first
    assert code in (0, 1) and err == "", (code, err)
