"""A signal during `run`'s start-up ends it cleanly, never by the default action (H-76).

The signal is sent by the process to itself at a chosen point of the start-up (a patched
function), so the moment is exact and no test waits on a stopwatch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session

#: Runs ``gpusession ARGS`` in this Python; sends SIG to itself in WHERE first:
#: ``import`` (while the run command's module loads), ``swallowed`` (the same, in code that
#: swallows every exception) or ``runner`` (inside `run`'s own
#: handlers, before the runner registers). ``ignore-hup``: SIGHUP ignored, as under nohup.
DRIVER = """
import os, signal, sys
where, sig, ignore = sys.argv[1], getattr(signal, sys.argv[2]), sys.argv[3] == "ignore-hup"
if ignore:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
from gpusession import cli
if where == "import":
    from gpusession.commands import dispatch
    real = dispatch.handler_module
    def handler_module(module):
        os.kill(os.getpid(), sig)
        return real(module)
    dispatch.handler_module = handler_module
elif where == "swallowed":  # a library's bare ``except`` takes the exception the handler raised
    from gpusession.commands import dispatch
    real = dispatch.handler_module
    def handler_module(module):
        try:
            os.kill(os.getpid(), sig)
            sum(range(1000))
        except BaseException:
            pass
        return real(module)
    dispatch.handler_module = handler_module
else:
    from gpusession.bench import runner
    real_run = runner.Runner.run
    def run(self):
        os.kill(os.getpid(), sig)
        return real_run(self)
    runner.Runner.run = run
sys.exit(cli.main(sys.argv[4:]))
"""


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session) -> None:
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "e", "--workload", "command",
                       "--values", "1", "--runs", "1", "--warmup", "0", "--command", f"{sys.executable} -c pass")
    assert code == 0, err


def _drive(root: Path, s: Session, where: str, sig: str, *args: str,
           ignore: str = "keep-hup") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUSESSION_HOME"}
    return subprocess.run([sys.executable, "-c", DRIVER, where, sig, ignore, "--sessions-dir", str(root),
                           "run", s.name, *args], capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))


def _events(s: Session) -> list[str]:
    path = s.folder / "journal.jsonl"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [json.loads(line).get("event") for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_h76_a_signal_while_run_starts_up_ends_it_cleanly_and_says_so(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, sig: str) -> None:
    _define(capsys, sessions_root, session)
    before = _events(session)
    done = _drive(sessions_root, session, "import", sig, "--headless")
    assert done.returncode == 128 + int(getattr(signal, sig)), (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert f"{sig} ended `run` while no run was in flight" in done.stderr, done.stderr
    assert _events(session) == before  # nothing started: nothing written
    assert not (session.folder / "resultats-bruts.csv").exists() or not session.results.rows()


def test_h76_a_signal_before_the_runner_registers_is_held_for_it_and_journaled(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _define(capsys, sessions_root, session)
    done = _drive(sessions_root, session, "runner", "SIGTERM", "--headless")
    assert done.returncode == 143, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert _events(session).count("run_interrupted") == 1
    assert not [r for r in session.results.rows() if r.phase == "warm"]  # no run measured


def test_h76_a_hang_up_ignored_under_nohup_stays_ignored(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _define(capsys, sessions_root, session)
    done = _drive(sessions_root, session, "import", "SIGHUP", "--headless", ignore="ignore-hup")
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert [r for r in session.results.rows() if r.phase == "warm"]


def test_h76_run_help_says_a_hang_up_ignored_by_nohup_is_ignored(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    code, out, _ = cli(capsys, sessions_root, "run", "--help")
    said = " ".join(out.split())
    assert code == 0 and "under `nohup` a hang-up is ignored on purpose" in said.lower(), said


def test_h76_a_signal_whose_exception_start_up_code_swallowed_still_ends_the_run_before_its_first_run(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    _define(capsys, sessions_root, session)
    done = _drive(sessions_root, session, "swallowed", "SIGTERM", "--headless")
    assert done.returncode == 143, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert _events(session).count("run_interrupted") == 1
    assert not [r for r in session.results.rows() if r.phase == "warm"]  # nothing measured
