"""Opening a session decides "nothing to recover" in O(1) of its size (A5, S7).

``Session.needs_recovery`` reads the journal's saved fold (``journal-state.json``) and the
bytes appended since, and lists only the folders where a writer outside a run leaves a
temporary name (the top, ``validation/``, the newest experiment's ``runs/`` folder). The
work is bounded by counting (folders listed through ``os.scandir``, which ``os.walk``
uses too; journal bytes through :func:`gpusession.core.folder.journal_state.read_journal_span`),
never by a stopwatch; a hand edit of the journal is still seen (H-47).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers import NewSession

from gpusession.core.folder import journal_state
from gpusession.core.folder.caches import JOURNAL_STATE
from gpusession.core.folder.journal_state import JOURNAL_REWRITE_BYTES, JOURNAL_WINDOW_BYTES
from gpusession.core.folder.recovery import SPEC_PREFIX
from gpusession.core.folder.session import Session


def _line(event: str, exp: str, i: int) -> str:
    fields: dict[str, object] = {"at": "2026-12-01T00:00:00+00:00", "event": event, "v": 1, "experiment_id": exp}
    if event in ("run_started", "run_finished"):
        fields.update(run_key=f"{exp}:warm:batch-1:{i}", variant_id="batch-1", phase="warm", run_index=i)
    if event == "run_started":
        fields["worker"] = "w"
    return json.dumps(fields) + "\n"


def _experiment(exp: str, runs: int = 4) -> str:
    """The journal lines of one invocation that ended: started, its runs started and ended, finished."""
    body = "".join(_line("run_started", exp, i) + _line("run_finished", exp, i) for i in range(runs))
    return _line("experiment_started", exp, 0) + body + _line("experiment_finished", exp, 0)


def _month(s: Session, experiments: int) -> None:
    """``experiments`` closed invocations, each with its ``runs/`` and ``validation/`` folders of outputs."""
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write("".join(_experiment(f"e{k:04d}") for k in range(experiments)))
    for k in range(experiments):
        for sub in ("runs", "validation"):
            leaf = s.folder / sub / f"e{k:04d}" / "batch-1"
            leaf.mkdir(parents=True)
            for i in range(4):
                (leaf / f"warm-{i}.jsonl").write_text("{}\n")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Folders listed (``os.scandir``: ``os.walk`` lists through it) and journal bytes read."""
    got = {"folders": 0, "bytes": 0}
    real_scandir, real_span = os.scandir, journal_state.read_journal_span

    def scandir(path: object = ".") -> object:
        got["folders"] += 1
        return real_scandir(path)  # type: ignore[arg-type]

    def span(fd: int, start: int, length: int) -> bytes:
        data = real_span(fd, start, length)
        got["bytes"] += len(data)
        return data

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(journal_state, "read_journal_span", span)
    return got


def _look(sessions_root: Path, name: str, counted: dict[str, int]) -> tuple[bool, int, int]:
    """``needs_recovery`` of a fresh open: its answer, the folders it listed and the journal bytes it read."""
    s = Session.open(sessions_root, name, recover=False)
    folders, read = counted["folders"], counted["bytes"]
    answer = s.needs_recovery()
    return answer, counted["folders"] - folders, counted["bytes"] - read


@pytest.mark.parametrize("experiments", [60, 300])  # journals past the 64 KiB a fold is saved at
def test_a5_needs_recovery_lists_three_folders_and_reads_only_the_new_journal_bytes(
        sessions_root: Path, new_session: NewSession, counted: dict[str, int], experiments: int) -> None:
    s = new_session("month")
    _month(s, experiments)
    size = s.journal_path.stat().st_size
    first, folders, read = _look(sessions_root, "month", counted)
    assert first is False and read >= size  # the first look folds the whole journal, once
    assert folders <= 3  # the top, validation/, runs/<newest experiment>: never a walk
    assert (s.folder / JOURNAL_STATE).is_file()
    again, folders, read = _look(sessions_root, "month", counted)
    assert again is False and folders <= 3 and read == 0  # nothing appended: not one journal byte
    extra = _experiment("next", runs=1)
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write(extra)
    after, folders, read = _look(sessions_root, "month", counted)
    # the two windows that prove the prefix unchanged and the lines appended: the same at any size
    assert after is False and folders <= 3 and read == 2 * JOURNAL_WINDOW_BYTES + len(extra.encode())


def test_a5_a_run_appended_after_the_saved_fold_still_needs_recovery(
        sessions_root: Path, new_session: NewSession, counted: dict[str, int]) -> None:
    s = new_session("month")
    _month(s, 60)
    assert _look(sessions_root, "month", counted)[0] is False
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write(_line("experiment_started", "late", 0) + _line("run_started", "late", 0))
    answer, _, read = _look(sessions_root, "month", counted)
    assert answer is True and read < s.journal_path.stat().st_size
    reopened = Session.open(sessions_root, "month")  # recovered, and then nothing is left to do
    assert reopened.recovered and Session.open(sessions_root, "month", recover=False).needs_recovery() is False


def test_s7_opening_a_small_session_saves_no_fold_so_a_refused_command_writes_nothing(
        sessions_root: Path, new_session: NewSession, counted: dict[str, int]) -> None:
    s = new_session("month")
    _month(s, 5)
    assert s.journal_path.stat().st_size < JOURNAL_REWRITE_BYTES
    first, folders, read = _look(sessions_root, "month", counted)
    assert first is False and folders <= 3 and read >= s.journal_path.stat().st_size
    assert not (s.folder / JOURNAL_STATE).exists()  # read whole: under 64 KiB, bounded anyway
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write("".join(_experiment(f"more{k:03d}") for k in range(60)))
    assert s.journal_path.stat().st_size > JOURNAL_REWRITE_BYTES
    assert _look(sessions_root, "month", counted)[0] is False
    assert (s.folder / JOURNAL_STATE).is_file()  # past it, the fold is saved once


@pytest.mark.parametrize("edit", ["start-inserted", "end-removed", "end-renamed-same-size"])
def test_h47_a_hand_edit_of_the_journals_middle_is_still_seen_on_open(
        sessions_root: Path, new_session: NewSession, counted: dict[str, int], edit: str) -> None:
    s = new_session("month")
    _month(s, 40)
    assert _look(sessions_root, "month", counted)[0] is False  # the fold saved
    lines = s.journal_path.read_text().splitlines(keepends=True)
    mid = next(i for i in range(len(lines) // 2, len(lines)) if '"run_finished"' in lines[i])
    if edit == "start-inserted":
        lines.insert(mid - 1, _line("run_started", "by-hand", 9))
    elif edit == "end-removed":
        del lines[mid]
    else:  # not an end any more, the file's size kept
        lines[mid] = lines[mid].replace('"run_finished"', '"run_finishex"')
    with open(s.journal_path, "r+", encoding="utf-8") as fh:  # in place: the same inode
        fh.write("".join(lines))
        fh.truncate()
    answer, _, read = _look(sessions_root, "month", counted)
    assert answer is True and read >= s.journal_path.stat().st_size  # folded whole again


def _aged(path: Path) -> None:
    path.write_text("half")
    past = time.time() - 60
    os.utime(path, (past, past))


@pytest.mark.parametrize("where", ["top", "validation", "newest-runs-spec", "newest-runs-tmp"])
def test_s7_a_leftover_where_a_writer_outside_a_run_leaves_one_is_seen_and_removed(
        sessions_root: Path, new_session: NewSession, counted: dict[str, int], where: str) -> None:
    s = new_session("month")
    _month(s, 5)
    left = {
        "top": s.folder / ".checklist.toml.k2j4h1x0.tmp",
        "validation": s.folder / "validation" / ".check.toml.a8d0q1zz.tmp",  # validate --session
        "newest-runs-spec": s.folder / "runs" / "e0004" / f"{SPEC_PREFIX}w.json",
        "newest-runs-tmp": s.folder / "runs" / "e0004" / ".meta.json.x81k2d0q.tmp",
    }[where]
    _aged(left)
    answer, folders, _ = _look(sessions_root, "month", counted)
    assert answer is True and folders <= 3
    Session.open(sessions_root, "month")
    assert not left.exists()
    assert Session.open(sessions_root, "month", recover=False).needs_recovery() is False
