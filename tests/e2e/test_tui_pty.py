"""The TUI in a real pty at 120×40 (H-23): bytes that are not UTF-8 never end it, and an
error that does end it exits 1 with one line, a journal incident and the terminal restored.

The test writes raw bytes to the pty's master side, as a terminal does (tmux's
``send-keys`` would encode them), and reads what the app draws.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from gpusession.testing import make_session

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="a pty is POSIX only")]

#: a legacy X10 mouse report at column 150 (ESC [ M, then button, column, row, each + 32)
X10_AT_COLUMN_150 = b"\x1b[M" + bytes([35, 182, 42])
LEAVE_ALT_SCREEN = b"\x1b[?1049l"


class Pty:
    """A gpusession process on a 120×40 pty; ``out`` is everything it wrote."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.slave = slave
        run_env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "COLORTERM", "GPUSESSION_HOME")}
        run_env.update(TERM="xterm-256color", **(env or {}))
        self.proc = subprocess.Popen([sys.executable, *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=run_env, start_new_session=True)
        self.out = b""

    def pump(self, timeout_s: float = 0.1) -> None:
        while True:
            ready, _, _ = select.select([self.master], [], [], timeout_s)
            if not ready:
                return
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.out += chunk
            timeout_s = 0.05

    def wait_for(self, words: bytes, since: int, timeout_s: float) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            self.pump()
            if words in self.out[since:]:
                return
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"{words!r} not drawn (exit {self.proc.poll()}); tail: {self.out[-1500:]!r}")

    def write(self, data: bytes) -> int:
        self.pump(0.01)
        mark = len(self.out)
        os.write(self.master, data)
        return mark

    def wait_exit(self, timeout_s: float) -> int:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and self.proc.poll() is None:
            self.pump()
        self.pump(0.2)
        code = self.proc.wait(timeout=5)
        return code

    def echo_on(self) -> bool:
        lflag = termios.tcgetattr(self.slave)[3]
        return bool(lflag & termios.ECHO) and bool(lflag & termios.ICANON)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self.master)
        os.close(self.slave)


def _incidents(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "journal.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("event") == "incident"]


def test_h23_x10_mouse_report_past_column_95_and_a_lone_0xff_leave_the_tui_answering_keys(tmp_path: Path) -> None:
    s = make_session(tmp_path)
    tui = Pty(["-m", "gpusession", "--sessions-dir", str(tmp_path), "open", s.name])
    try:
        tui.wait_for(b"Checklist", 0, 120)
        time.sleep(1.0)
        mark = tui.write(X10_AT_COLUMN_150)
        time.sleep(1.5)
        tui.pump()
        assert tui.proc.poll() is None, f"the TUI ended on the report: {tui.out[mark:][-1500:]!r}"
        mark = tui.write(b"\xff")  # a lone byte that is not UTF-8
        time.sleep(1.0)
        tui.pump()
        assert tui.proc.poll() is None, f"the TUI ended on a lone 0xff: {tui.out[mark:][-1500:]!r}"
        mark = tui.write(b"2")  # the Run pane: the TUI still answers keys
        tui.wait_for(b"batch-sweep", mark, 30)
        mark = tui.write(b"q")
        assert tui.wait_exit(30) == 0
        assert LEAVE_ALT_SCREEN in tui.out[mark:]
        assert b"Traceback" not in tui.out and b"UnicodeDecodeError" not in tui.out
        assert tui.echo_on()
    finally:
        tui.close()


CRASH = textwrap.dedent(
    """
    import sys
    from gpusession import cli
    {patch}
    sys.exit(cli.main(sys.argv[1:]))
    """
)
#: an error in a handler (the after-first-frame callback), and one in the input thread
PATCHES = {
    "handler": "from gpusession.ui import screens\n"
               "def boom(self):\n    raise RuntimeError('forced crash in a handler')\n"
               "screens.MainScreen.after_first_frame = boom",
    "input thread": "from textual import _xterm_parser\n"
                    "def boom(self, data):\n    raise RuntimeError('forced crash in the input thread')\n"
                    "_xterm_parser.XTermParser.feed = boom",
}


@pytest.mark.parametrize("where", sorted(PATCHES))
def test_h23_a_crash_exits_1_with_a_journal_line_and_the_terminal_restored(tmp_path: Path, where: str) -> None:
    s = make_session(tmp_path)
    code = CRASH.format(patch=PATCHES[where])
    tui = Pty(["-c", code, "--sessions-dir", str(tmp_path), "open", s.name])
    try:
        if where == "input thread":
            tui.wait_for(b"Checklist", 0, 120)
            time.sleep(1.0)
            tui.write(b"2")
        assert tui.wait_exit(120) == 1, tui.out[-2000:]
        assert LEAVE_ALT_SCREEN in tui.out
        assert tui.echo_on()
        said = tui.out.rsplit(LEAVE_ALT_SCREEN, 1)[1].decode(errors="replace")
        assert f"gpusession: error: the TUI ended on an error: RuntimeError: forced crash in the {where}" \
            .replace("the handler", "a handler") in said
        assert "Traceback" not in said
        crashed = [r for r in _incidents(s.folder) if r.get("kind") == "tui_crashed"]
        assert len(crashed) == 1
        assert "RuntimeError: forced crash" in crashed[0]["message"]
        assert "boom" in crashed[0]["trace"]
    finally:
        tui.close()
