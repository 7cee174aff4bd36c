"""A run is recorded exactly once, whatever write a crash interrupts (S7).

One real short run (in-process :class:`Runner`, its worker replayed in this process by
:mod:`fake_launcher`: every write of the session is the runner's) is made once to count
the session's write points (every ``os.fsync`` of a file
or folder of the session, in this process). Then, for each write point in turn, the same
run is made again and stopped at that point -- as a kill (after the write, before its
fsync), as a kill that tore the write, and as a full disk -- and the session is reopened
(crash recovery). After each: the CSV parses, every run key is in it at most once, no row
whose append had returned is lost, and every run the journal says started is in the CSV
exactly once (as a measurement or as an incident).
"""

from __future__ import annotations

import errno
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from fake_launcher import ReplayLauncher
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import RUN_LOCK, Session
from gpusession.core.records.results import ResultsFile

Key = tuple[str | None, str | None, str | None, int | None]


class Killed(BaseException):
    """Stands for SIGKILL at a write point: nothing after it runs (no ``except Exception``)."""


def _new(root: Path, name: str) -> Session:
    s = Session.create(root, name)
    corpus = write_corpus(s.folder / "corpus" / "eval.jsonl", n=4)
    define_experiment(s, Experiment(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(s.folder)),
        varied="batch", values=(2,), runs_per_variant=1, warmup_iterations=0,
        cold_runs_per_variant=0, device="cpu",
    ))
    return s


def _path_of(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _end_children() -> None:
    """End the worker a stopped runner left behind (it is ours; signals are another test's)."""
    me = psutil.Process()
    kids = me.children(recursive=True)
    for k in kids:
        try:
            k.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(kids, timeout=10)


def _run(monkeypatch: pytest.MonkeyPatch, s: Session, fault: Callable[[int, int], None] | None,
         appended: list[Key]) -> list[str]:
    """Run experiment ``e`` of ``s``; ``fault(i, fd)`` is called at the i-th session fsync.

    Returns:
        The path of each session fsync, in order.
    """
    from gpusession.bench.runner import Runner

    real_fsync = os.fsync
    real_append = ResultsFile.append
    points: list[str] = []
    folder = str(s.folder.resolve())

    def fsync(fd: int) -> None:
        path = _path_of(fd)
        if path == folder or path.startswith(folder + os.sep):
            points.append(path)
            if fault is not None:
                fault(len(points), fd)
        real_fsync(fd)

    def append(self: ResultsFile, row: Any) -> None:
        real_append(self, row)
        appended.append((row.experiment_id, row.phase, row.variant_id, row.run_index))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(ResultsFile, "append", append)
    try:
        Runner(s, "e", launcher=ReplayLauncher()).run()
    finally:
        monkeypatch.setattr(os, "fsync", real_fsync)
        monkeypatch.setattr(ResultsFile, "append", real_append)
        _end_children()
    return points


def _started_keys(s: Session) -> set[Key]:
    return {(r.get("experiment_id"), r.get("phase"), r.get("variant_id"), r.get("run_index"))
            for r in s.read_journal() if r.get("event") in ("run_started", "load_started")}


def _check(s: Session, appended: list[Key]) -> tuple[int, int]:
    """Reopen ``s`` and check exactly-once; returns (finished rows lost, runs recorded twice)."""
    reopened = Session.open(s.folder.parent, s.name)
    rows = reopened.results.rows()  # the CSV parses
    keys = Counter((r.experiment_id, r.phase, r.variant_id, r.run_index) for r in rows)
    twice = sum(1 for n in keys.values() if n > 1)
    lost = sum(1 for k in appended if k not in keys)
    # every run the journal says started is recorded: measured or as an incident
    assert _started_keys(reopened) <= set(keys)
    assert not (reopened.folder / RUN_LOCK).exists()
    assert not list(reopened.folder.rglob("*.tmp"))
    Session.open(s.folder.parent, s.name)  # a second open adds nothing
    assert len(reopened.results.rows()) == len(rows)
    return lost, twice


def _tear(fd: int) -> None:
    """Cut the last bytes of what was just written to ``fd`` (a write the kill tore)."""
    try:
        size = os.fstat(fd).st_size
        if size and not os.path.isdir(_path_of(fd)):
            os.ftruncate(fd, max(0, size - 5))
    except OSError:
        pass


def _kill(fd: int) -> None:
    raise Killed


def _torn(fd: int) -> None:
    _tear(fd)
    raise Killed


def _full(fd: int) -> None:
    _tear(fd)
    raise OSError(errno.ENOSPC, "No space left on device")


#: How a write point is interrupted: a kill after the write, a kill that tore it, a full disk.
MODES: dict[str, Callable[[int], None]] = {"kill": _kill, "torn": _torn, "full": _full}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names written files through /proc (Linux)")
def test_s7_a_run_is_recorded_exactly_once_at_every_write_point(
    sessions_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with_tests_on_path(monkeypatch)
    clean = _new(sessions_root, "count")
    appended: list[Key] = []
    points = _run(monkeypatch, clean, None, appended)
    n = len(points)
    assert n >= 10 and len(appended) == 2  # a load row and one warm row
    assert _check(clean, appended) == (0, 0)
    lost_total = twice_total = faults = 0
    for mode, act in MODES.items():
        for i in range(1, n + 1):
            s = _new(sessions_root, f"{mode}-{i}")
            done: list[Key] = []
            fired: list[str] = []

            def fault(k: int, fd: int, i: int = i, act: Callable[[int], None] = act,
                      fired: list[str] = fired) -> None:
                if k == i:
                    fired.append(_path_of(fd))
                    act(fd)

            try:  # a full disk at a folder's fsync is not an error (the rename is done)
                _run(monkeypatch, s, fault, done)
            except (Killed, OSError):
                pass
            assert fired, f"write point {i} was not reached ({mode})"
            lost, twice = _check(s, done)
            assert (lost, twice) == (0, 0), f"{mode} at write point {i} ({fired[0]})"
            lost_total += lost
            twice_total += twice
            faults += 1
    with capsys.disabled():
        print(f"\nwrite points: {n}, faults injected: {faults}, finished rows lost: "
              f"{lost_total}, runs recorded twice: {twice_total}")
