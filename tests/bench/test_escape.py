"""A descendant that starts its own session never outlives its run (H-25); a zombie runner
holds no run lock (H-37); torchrun's launcher carries the parent-death signal.

Real processes throughout: a command workload whose script leaves ``sleep 40`` in a
session of its own, a launcher started through :func:`gpusession.bench.lifetime.exec_argv`
whose parent is killed with SIGKILL, a zombie made by never reaping a child, and (where
``unshare`` works) a PID namespace whose PID 1 never reaps.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from fake_workloads import write_corpus

from gpusession.bench.lifetime import exec_argv
from gpusession.bench.runner import Runner
from gpusession.core.events import DescendantsEndedRecord, WorkerStartedRecord
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.journal import RUN_LOCK, lock_holder, read_records
from gpusession.core.folder.processes import (
    PARENT_ENV,
    WORKER_ENV,
    ProcessId,
    end_group,
    end_recorded,
    identify,
    worker_marker,
)
from gpusession.core.folder.session import Session

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="Linux: PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, /proc")

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}

#: The user's script: leaves ``sleep 40`` in a session of its own, notes its PID, exits 0.
ESCAPING_SCRIPT = textwrap.dedent("""
    import subprocess, sys
    p = subprocess.Popen(["sleep", "40"], start_new_session=True)
    with open(sys.argv[1], "a") as f:
        f.write(f"{p.pid}\\n")
""")


@pytest.fixture
def spawned() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


def _gone(pid: int, timeout_s: float) -> bool:
    """Whether ``pid`` is dead (gone or a zombie) within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def _command_exp(session: Session, command: list[str], **kw: object) -> Experiment:
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    base: dict[str, object] = dict(
        id="e", workload="command", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(1,), runs_per_variant=2, cold_runs_per_variant=0,
        warmup_iterations=0, scope="full-chain", protocol=PROTOCOL, device="cpu",
        params={"command": command},
    )
    base.update(kw)
    return define_experiment(session, Experiment(**base))  # type: ignore[arg-type]


def test_h25_a_descendant_in_a_session_of_its_own_ends_with_its_run(
    session: Session, spawned: list[int]
) -> None:
    s = session
    script = s.folder / "escape.py"
    script.write_text(ESCAPING_SCRIPT, encoding="utf-8")
    pid_file = s.folder / "escaped.pids"
    exp = _command_exp(s, [sys.executable, str(script), str(pid_file)])
    t0 = time.monotonic()
    out = Runner(s, exp.id, continue_on_reject=True).run()  # it writes no output: both runs anyway (D3)
    took_s = time.monotonic() - t0
    escaped = [int(x) for x in pid_file.read_text().split()]
    spawned.extend(escaped)
    assert out.rows_written >= 2 and len(escaped) == 2  # two measured runs, one escapee each
    # no sleep of the run is alive 5 s after it, nor any process carrying its marker
    assert all(_gone(pid, 5.0) for pid in escaped)
    marker = str(os.getpid())
    left = []
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.status() != psutil.STATUS_ZOMBIE \
                    and p.environ().get(PARENT_ENV) == marker and p.create_time() >= time.time() - took_s - 1:
                left.append(p.pid)
        except psutil.Error:
            continue
    assert left == []
    # the worker did not wait on the pipe the escapee held: that wait lasts the escapee's
    # 40 s sleep per run (a hang catcher, not a speed goal: A6)
    assert took_s < 30.0
    # the journal says what was ended, each escapee before the next run started
    ended = [r for r in read_records(s.journal_path) if isinstance(r, DescendantsEndedRecord)]
    assert sorted(pid for r in ended for pid in r.pids) == sorted(escaped)
    assert all(r.where == "after the command" and r.names == ["sleep"] * len(r.pids) for r in ended)
    assert len(ended) == 2  # one per call: the first escapee was gone before the second run


def test_h25_end_group_sweeps_by_marker_what_left_the_group_and_the_tree(
    tmp_path: Path, spawned: list[int]
) -> None:
    """A worker killed before it could end the escapee: the runner's marker still finds it."""
    marker = str(os.getpid())
    pid_file = tmp_path / "pid"
    worker = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys; p = subprocess.Popen(['sleep', '40'], start_new_session=True);"
         "open(sys.argv[1], 'w').write(str(p.pid))", str(pid_file)],
        start_new_session=True, env={**os.environ, PARENT_ENV: marker})
    ident = identify(worker.pid)
    worker.wait(timeout=30)  # the "worker" is gone; its escapee was re-parented to init
    escapee = int(pid_file.read_text())
    spawned.append(escapee)
    other = subprocess.Popen(["sleep", "40"], start_new_session=True,
                             env={**os.environ, PARENT_ENV: "1"})  # another runner's
    spawned.append(other.pid)
    assert end_group(ident) == []  # without the marker nothing of the group is left
    assert psutil.Process(escapee).status() != psutil.STATUS_ZOMBIE
    assert escapee in end_group(ident, marker=marker)
    assert _gone(escapee, 5.0)
    assert other.poll() is None  # another runner's process is never ours
    other.kill()
    other.wait()


def test_h25_the_next_run_ends_what_escaped_a_worker_killed_with_its_runner(
    tmp_path: Path, spawned: list[int]
) -> None:
    """The runner and its worker died (SIGKILL): the escapee's worker marker names it to the next run."""
    pid_file = tmp_path / "pid"
    src = textwrap.dedent(f"""
        import os, subprocess, sys
        from gpusession.core.folder.processes import identify, worker_marker
        os.environ["{WORKER_ENV}"] = worker_marker(identify(os.getpid()))
        p = subprocess.Popen(["sleep", "40"], start_new_session=True)
        open(sys.argv[1], "w").write(str(p.pid))
    """)
    worker = subprocess.Popen([sys.executable, "-c", src, str(pid_file)], start_new_session=True)
    ident = identify(worker.pid)
    worker.wait(timeout=30)
    escapee = int(pid_file.read_text())
    spawned.append(escapee)
    # another worker's escapee (same PID, another start time) is never ours
    other = subprocess.Popen(["sleep", "40"], start_new_session=True, env={
        **os.environ, WORKER_ENV: worker_marker(ProcessId(ident.pid, (ident.create_time_s or 0) - 60))})
    spawned.append(other.pid)
    said = end_recorded([WorkerStartedRecord(experiment_id="e", worker="warm", pid=ident.pid,
                                             create_time_s=ident.create_time_s)])
    assert any(f"pid {escapee}" in line for line in said)
    assert _gone(escapee, 5.0)
    assert other.poll() is None
    other.kill()
    other.wait()


def test_h25_torchruns_launcher_ends_with_its_killed_parent(tmp_path: Path, spawned: list[int]) -> None:
    """A program started through ``exec_argv`` carries the parent-death signal (not ours: no call)."""
    pid_file = tmp_path / "pid"
    parent_src = textwrap.dedent(f"""
        import os, subprocess, sys, time
        from gpusession.bench.lifetime import exec_argv
        env = {{**os.environ, "{PARENT_ENV}": str(os.getpid())}}
        p = subprocess.Popen(exec_argv([sys.executable, "-c", "import time; time.sleep(60)"]), env=env)
        open(sys.argv[1], "w").write(str(p.pid))
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_src, str(pid_file)])
    spawned.append(parent.pid)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    child = int(pid_file.read_text())
    spawned.append(child)
    # the exec has happened once the program itself runs; during the exec, /proc's command
    # line reads empty for a moment (seen on a loaded machine): wait past that too
    cmdline: list[str] = []
    while time.monotonic() < deadline:
        cmdline = psutil.Process(child).cmdline()
        if cmdline and "gpusession.bench.lifetime" not in " ".join(cmdline):
            break
        time.sleep(0.02)
    assert cmdline[1:3] == ["-c", "import time; time.sleep(60)"]
    parent.kill()  # SIGKILL
    parent.wait(timeout=5)
    assert _gone(child, 5.0)


def test_h25_exec_argv_runs_the_program_through_the_trampoline() -> None:
    argv = exec_argv([sys.executable, "-c", "import sys; sys.exit(7)"])
    assert argv[:4] == [sys.executable, "-m", "gpusession.bench.lifetime", "--"]
    assert subprocess.run(argv, check=False).returncode == 7


def _zombie() -> int:
    """A real zombie: a child of this process that exited and is not reaped (yet)."""
    pid = os.posix_spawn("/bin/true", ["true"], dict(os.environ))
    deadline = time.monotonic() + 10
    while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return pid


def test_h37_a_zombie_holds_no_run_lock(session: Session) -> None:
    pid = _zombie()
    try:
        lock = session.folder / RUN_LOCK
        lock.write_text(f"{pid} {os.uname().nodename}")  # written now: its start time fits
        assert lock_holder(session.folder) is None
    finally:
        os.waitpid(pid, 0)


def test_h37_a_live_process_still_holds_the_run_lock(session: Session) -> None:
    """The check that can fail: a live holder is not taken for a zombie."""
    lock = session.folder / RUN_LOCK
    lock.write_text(f"{os.getpid()} {os.uname().nodename}")
    assert lock_holder(session.folder) == os.getpid()


#: PID 1 of a fresh PID namespace that never reaps: its "runner" takes the lock and
#: journals a run in flight, gets SIGKILL and stays a zombie; then the next run.
_PID1 = textwrap.dedent("""
    import json, os, signal, sys, time
    root, name, code = sys.argv[1], sys.argv[2], sys.argv[3]
    runner = os.posix_spawn(sys.executable, [sys.executable, "-c", code, root, name, "hold"], dict(os.environ))
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(root, name, "held")) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(runner, signal.SIGKILL)  # never reaped: PID 1 here does not wait
    time.sleep(0.3)
    state = open(f"/proc/{runner}/stat").read().split(")")[-1].split()[0]
    nxt = os.posix_spawn(sys.executable, [sys.executable, "-c", code, root, name, "next"], dict(os.environ))
    _, status = os.waitpid(nxt, 0)
    print(json.dumps({"runner_state": state, "next_status": status, "runner_pid": runner}))
""")

_ROLE = textwrap.dedent("""
    import sys, time, pathlib
    from gpusession.core.folder import journal
    from gpusession.core.folder.session import Session
    root, name, role = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    s = Session.open(root, name)
    if role == "hold":
        journal.take_lock(s.folder, s.name)
        s.journal("run_started", run_key="e:warm:batch-1:1", experiment_id="e",
                  variant_id="batch-1", phase="warm", run_index=1)
        (s.folder / "held").write_text("1")
        time.sleep(60)
    else:
        from gpusession.bench.runner import Runner
        out = Runner(s, "e").run()
        sys.exit(0 if out.completed else 3)
""")


def _unshare_works() -> str | None:
    """Why a PID namespace cannot be made here, or ``None`` when it can."""
    if shutil.which("unshare") is None:
        return "no unshare program"
    try:
        r = subprocess.run(["unshare", "--fork", "--pid", "--mount-proc", "true"],
                           capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    return None if r.returncode == 0 else f"unshare --fork --pid --mount-proc: {r.stderr.strip()}"


def test_h37_a_killed_runner_left_a_zombie_by_pid_1_does_not_block_the_next_run(
    sessions_root: Path, session: Session
) -> None:
    why = _unshare_works()
    if why is not None:
        pytest.skip(f"no PID namespace here ({why}); the zombie check is covered by a real zombie above")
    s = session
    _command_exp(s, ["true", "{batch}"], runs_per_variant=1)
    r = subprocess.run(["unshare", "--fork", "--pid", "--mount-proc", sys.executable, "-c", _PID1,
                        str(sessions_root), s.name, _ROLE],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    assert doc["runner_state"] == "Z"  # the runner stayed a zombie beside the next run
    assert doc["next_status"] == 0, r.stderr  # the next run took the lock and completed
    reopened = Session.open(sessions_root, s.name)
    rows = reopened.results.rows()
    # the run in flight when the runner died is recorded as an interruption, then the new run
    assert any(row.elapsed_seconds is None and row.notes for row in rows)
    assert any(row.elapsed_seconds is not None and row.phase == "warm" for row in rows)
    assert not (s.folder / RUN_LOCK).exists()
