"""A run's start decodes only the process starts after the last check's offset (A5, H-14, H-47).

``leftover-check.json`` keeps the journal's line end up to which a finished invocation's
start found every recorded process gone or ended; the next run reads the lines after it.
Work is counted (journal lines decoded), never timed. What is left alive by a parent that
died (SIGKILL, an error) is still ended by the next run, and a journal edited before the
offset or a forged state is read whole.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from fake_launcher import ReplayLauncher
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.bench.runner import Runner
from gpusession.core.events import WorkerStartedRecord, reading
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder import leftover_check
from gpusession.core.folder.caches import LEFTOVER_CHECK_STATE
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.leftover_check import process_records
from gpusession.core.folder.processes import PARENT_ENV, identify
from gpusession.core.folder.session import Session

pytestmark = pytest.mark.calendar

#: A PID no process can hold (past the kernel's largest, 2^22): a recorded start long gone.
_NO_PID = 4_194_304 + 1


def _pad(s: Session, n: int) -> None:
    """``n`` process starts of earlier runs, all long gone, appended to the journal."""
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        for k in range(n):
            fh.write(json.dumps({"v": 1, "at": "2026-11-29T14:00:00+00:00", "event": "worker_started",
                                 "experiment_id": "old", "worker": f"w{k:05d}", "pid": _NO_PID + k,
                                 "create_time_s": 1.0}) + "\n")


def _define(s: Session) -> None:
    corpus = write_corpus(s.folder / "corpus" / "eval.jsonl", n=4)
    define_experiment(s, Experiment(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(s.folder)),
        varied="batch", values=(1,), runs_per_variant=1, warmup_iterations=0,
        cold_runs_per_variant=0, device="cpu",
    ))


def _run(s: Session) -> Any:
    return Runner(s, "e", launcher=ReplayLauncher()).run()


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The journal lines the leftover check decodes (line numbers), cleared by the test at will."""
    seen: list[int] = []
    real_decode = reading.decode_line
    real_naming = leftover_check.records_naming
    inside: list[bool] = []

    def decode(text: str | bytes, line: int) -> object:
        if inside:
            seen.append(line)
        return real_decode(text, line)

    def naming(*args: Any, **kw: Any) -> list[Any]:
        inside.append(True)
        try:
            return real_naming(*args, **kw)
        finally:
            inside.pop()

    monkeypatch.setattr(reading, "decode_line", decode)
    monkeypatch.setattr(leftover_check, "records_naming", naming)
    return seen


@pytest.fixture
def stray() -> Iterator[subprocess.Popen[bytes]]:
    """A live process in a session of its own, as a worker of a killed runner leaves it."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True, env={**os.environ, PARENT_ENV: "1"})
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _record(s: Session, proc: subprocess.Popen[bytes]) -> None:
    ident = identify(proc.pid)
    s.journal(WorkerStartedRecord(experiment_id="e", worker="warm", pid=ident.pid,
                                  create_time_s=ident.create_time_s))


def _gone(proc: subprocess.Popen[bytes]) -> bool:
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return False
    return True


@pytest.mark.parametrize("earlier", [600, 2400])
def test_a5_a_runs_start_decodes_a_bounded_number_of_lines_however_long_the_journal(
        session: Session, monkeypatch: pytest.MonkeyPatch, decoded: list[int], earlier: int) -> None:
    with_tests_on_path(monkeypatch)
    _define(session)
    _pad(session, earlier)  # a month of process starts, all gone (past 64 KiB)
    _run(session)
    assert len(decoded) >= earlier  # the first run read them all, and kept where it read to
    assert (session.folder / LEFTOVER_CHECK_STATE).exists()
    decoded.clear()
    _run(session)
    # the second run decodes only the first run's own process starts (its worker), not the month
    assert 0 < len(decoded) <= 5
    decoded.clear()
    records, _mark = process_records(session.folder)
    assert 0 < len(decoded) <= 5 and all(r.experiment_id == "e" for r in records)


def test_h14_a_killed_parents_leftover_is_still_ended_by_the_next_run(
        session: Session, monkeypatch: pytest.MonkeyPatch, stray: subprocess.Popen[bytes]) -> None:
    """A runner killed outright keeps no mark: the process it recorded is read, and ended."""
    with_tests_on_path(monkeypatch)
    _define(session)
    _pad(session, 600)
    _run(session)
    kept = (session.folder / LEFTOVER_CHECK_STATE).read_bytes()
    _record(session, stray)  # what the killed invocation journaled; SIGKILL ran no ``finally``
    out = _run(session)
    assert _gone(stray)
    assert any(f"pid {stray.pid}" in i and "ended before this run started" in i for i in out.incidents)
    assert (session.folder / LEFTOVER_CHECK_STATE).read_bytes() != kept  # moved past it only now


def test_h14_a_parent_error_keeps_only_the_mark_of_its_start(
        session: Session, monkeypatch: pytest.MonkeyPatch, stray: subprocess.Popen[bytes]) -> None:
    """An invocation that died after its worker was recorded keeps the mark its start read to, not past its worker."""
    with_tests_on_path(monkeypatch)
    _define(session)
    _pad(session, 600)

    def dies(self: Runner, exp: Any) -> None:
        _record(self.session, stray)
        raise RuntimeError("the parent's error")

    with monkeypatch.context() as m:
        m.setattr(Runner, "_run", dies)
        with pytest.raises(RuntimeError):
            _run(session)
    assert stray.poll() is None
    out = _run(session)
    assert _gone(stray)
    assert any(f"pid {stray.pid}" in i for i in out.incidents)


def test_h47_a_hand_edit_before_the_offset_reads_the_whole_journal(
        session: Session, monkeypatch: pytest.MonkeyPatch, decoded: list[int],
        stray: subprocess.Popen[bytes]) -> None:
    with_tests_on_path(monkeypatch)
    _define(session)
    _pad(session, 600)
    _run(session)
    # a line naming a live process put by hand at the top, before the offset
    ident = identify(stray.pid)
    text = session.journal_path.read_text("utf-8")
    line = json.dumps({"v": 1, "at": "2026-11-29T13:00:00+00:00", "event": "worker_started",
                       "experiment_id": "old", "worker": "w", "pid": ident.pid,
                       "create_time_s": ident.create_time_s})
    session.journal_path.write_text(line + "\n" + text, "utf-8")
    decoded.clear()
    out = _run(session)
    assert len(decoded) >= 600  # read whole
    assert _gone(stray) and any(f"pid {stray.pid}" in i for i in out.incidents)


def test_h47_an_edit_at_the_same_length_or_a_forged_state_reads_the_whole_journal(
        session: Session, monkeypatch: pytest.MonkeyPatch, decoded: list[int]) -> None:
    with_tests_on_path(monkeypatch)
    _define(session)
    _pad(session, 600)
    _run(session)
    path = session.journal_path
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"worker": "w00007"', b'"worker": "x00007"', 1))  # same length
    decoded.clear()
    process_records(session.folder)
    assert len(decoded) >= 600
    _run(session)  # the mark kept again
    state = session.folder / LEFTOVER_CHECK_STATE
    doc = json.loads(state.read_text("utf-8"))
    doc["offset"] = path.stat().st_size  # forged: everything checked
    state.write_text(json.dumps(doc), "utf-8")
    decoded.clear()
    process_records(session.folder)
    assert len(decoded) >= 600


def test_a5_a_small_journal_leaves_no_state(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)
    _define(session)
    _run(session)
    _run(session)
    assert not (session.folder / LEFTOVER_CHECK_STATE).exists()


def test_a5_process_records_reads_what_read_records_naming_reads(session: Session) -> None:
    """The mark's read gives the same records, and a missing journal none."""
    _pad(session, 50)
    from gpusession.core.folder.processes import END_RECORDED_EVENTS

    assert process_records(session.folder)[0] == reading.read_records_naming(session.journal_path,
                                                                             END_RECORDED_EVENTS)
    session.journal_path.unlink()
    assert process_records(session.folder) == ([], None)
