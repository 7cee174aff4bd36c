"""``status`` reads saved state and checks it in O(1) (A5): the journal's fold at an offset and
the bytes since, the checked TOML files by their ``stat`` signatures, the count of
deliverables without parsing ``approvals.toml``; a hand edit is still seen (H-47).

Work is bounded by counting (journal bytes read through
:func:`gpusession.core.folder.journal_state.read_journal_span`, parses), never by a stopwatch;
the speed at two sizes is in ``benchmarks/bench_status.py``.
"""

from __future__ import annotations

import json
import os
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.events.records import RunFinishedRecord, RunStartedRecord
from gpusession.core.events.scan import JournalFold, open_work, split_at_last_line_end
from gpusession.core.folder import journal_state
from gpusession.core.folder.caches import (
    FILES_STATE,
    JOURNAL_STATE,
    STATE_FILES,
    from_json_value,
    is_state_file,
    read_state,
    to_json_value,
    write_state,
)
from gpusession.core.folder.journal_state import JOURNAL_WINDOW_BYTES
from gpusession.core.folder.session import Session
from gpusession.core.money import count_cache
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import status
from gpusession.core.retrieval.status import (
    count_appended_row,
    csv_signature,
    refresh_counts,
)

pytestmark = pytest.mark.calendar


def _start(i: int, exp: str = "sweep") -> str:
    return json.dumps({"at": "2026-12-01T00:00:00+00:00", "event": "run_started", "v": 1,
                       "run_key": f"{exp}:warm:batch-1:{i}", "experiment_id": exp, "variant_id": "batch-1",
                       "phase": "warm", "run_index": i, "worker": "w"})


def _end(i: int, exp: str = "sweep") -> str:
    return json.dumps({"at": "2026-12-01T00:00:00+00:00", "event": "run_finished", "v": 1,
                       "run_key": f"{exp}:warm:batch-1:{i}", "experiment_id": exp, "variant_id": "batch-1",
                       "phase": "warm", "run_index": i, "incidents": [], "ok": True, "elapsed_s": 0.5})


def _journal(folder: Path, lines: int) -> Path:
    """``lines`` journal lines as the runner writes them: each run started, then ended."""
    path = folder / "journal.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(f"{_start(i)}\n{_end(i)}\n" for i in range(lines // 2)))
    return path


@pytest.fixture
def journal_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The journal bytes ``status`` reads (its one reader), and whole reads of it elsewhere."""
    got = {"bytes": 0, "whole": 0}
    real_span, real_plain = journal_state.read_journal_span, status.read_plain

    def span(fd: int, start: int, length: int) -> bytes:
        data = real_span(fd, start, length)
        got["bytes"] += len(data)
        return data

    def plain(path: Path, *a: object, **k: object) -> bytes:
        if Path(path).name == "journal.jsonl":
            got["whole"] += 1
        return real_plain(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(journal_state, "read_journal_span", span)
    monkeypatch.setattr(status, "read_plain", plain)
    return got


def _status_reads(capsys: pytest.CaptureFixture[str], s: Session, reads: dict[str, int]) -> tuple[int, str]:
    before = reads["bytes"]
    code, out, err = cli(capsys, s.folder.parent, "status", s.name, "--format", "tmux")
    assert code == 0, err
    return reads["bytes"] - before, out


@pytest.mark.parametrize("lines", [2_000, 20_000])
def test_a5_status_reads_a_bounded_number_of_journal_bytes_whatever_its_length(
        capsys: pytest.CaptureFixture[str], session: Session, journal_reads: dict[str, int], lines: int) -> None:
    path = _journal(session.folder, lines)
    size = path.stat().st_size
    first, out = _status_reads(capsys, session, journal_reads)
    assert first >= size and "unfinished" not in out  # the first call folds the whole journal, once
    again, _ = _status_reads(capsys, session, journal_reads)
    assert again == 0  # nothing appended: not one byte
    extra = f"{_start(lines, 'next')}\n{_end(lines, 'next')}\n{_start(lines + 1, 'next')}\n"
    with open(path, "a", encoding="utf-8") as fh:  # 3 lines appended: a run ended, one in flight
        fh.write(extra)
    after, out = _status_reads(capsys, session, journal_reads)
    assert " 1 unfinished " in out, out
    # the two windows that prove the prefix unchanged, and the appended lines: the same at any length
    assert after == 2 * JOURNAL_WINDOW_BYTES + len(extra.encode())
    assert journal_reads["whole"] == 0


def test_a5_one_recorded_row_reads_no_journal_byte_and_the_next_status_only_its_lines(
        capsys: pytest.CaptureFixture[str], session: Session, journal_reads: dict[str, int]) -> None:
    path = _journal(session.folder, 20_000)
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="load", run_index=0))
    refresh_counts(session.folder)  # the summary the runner keeps (it read the journal: before the count)
    _status_reads(capsys, session, journal_reads)  # folded
    journal_reads["whole"] = 0
    size = path.stat().st_size
    before_row = journal_reads["bytes"]
    # what the runner does for one run: start, row, row's bookkeeping, end
    session.journal(RunStartedRecord(run_key="e:warm:batch-1:1", experiment_id="e", variant_id="batch-1",
                                     phase="warm", run_index=1, worker="w"))
    sig = csv_signature(session.folder)
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm", run_index=1,
                                     elapsed_seconds=0.5, corpus_revision="c1", corpus_accepted=True))
    count_appended_row(session.folder, sig, "c1")
    session.journal(RunFinishedRecord(run_key="e:warm:batch-1:1", experiment_id="e", variant_id="batch-1",
                                      phase="warm", run_index=1, ok=True))
    assert journal_reads["bytes"] == before_row and journal_reads["whole"] == 0  # the row read no journal byte
    read, out = _status_reads(capsys, session, journal_reads)
    assert read == 2 * JOURNAL_WINDOW_BYTES + (path.stat().st_size - size)
    assert " 2r " in out and "unfinished" not in out, out


@pytest.mark.parametrize("edit", ["start-inserted", "end-removed", "end-renamed-same-size", "replaced-shorter"])
def test_h47_a_hand_edit_of_the_journals_middle_is_still_seen_by_status(
        capsys: pytest.CaptureFixture[str], session: Session, journal_reads: dict[str, int], edit: str) -> None:
    path = _journal(session.folder, 2_000)
    _, out = _status_reads(capsys, session, journal_reads)
    assert "unfinished" not in out and (session.folder / JOURNAL_STATE).is_file()
    lines = path.read_text().splitlines(keepends=True)
    mid = next(i for i in range(len(lines) // 2, len(lines)) if '"run_finished"' in lines[i])
    if edit == "start-inserted":  # a run started by hand, no end: the rest shifts
        lines.insert(mid - 1, _start(99_999, "by-hand") + "\n")
    elif edit == "end-removed":
        del lines[mid]
    elif edit == "end-renamed-same-size":  # not an end any more, the file's size kept
        lines[mid] = lines[mid].replace('"run_finished"', '"run_finishex"')
    if edit == "replaced-shorter":  # a new file, the run's end cut off
        tmp = path.with_name("j.new")
        tmp.write_text("".join(lines[:mid]))
        os.replace(tmp, path)
    else:
        with open(path, "r+", encoding="utf-8") as fh:  # in place: the same inode
            fh.write("".join(lines))
            fh.truncate()
    read, out = _status_reads(capsys, session, journal_reads)
    assert " 1 unfinished " in out, (edit, out)
    assert read >= path.stat().st_size  # folded whole again, once
    assert _status_reads(capsys, session, journal_reads)[0] == 0  # and the new state holds


def test_h47_a_journal_state_edited_by_hand_is_never_trusted(
        capsys: pytest.CaptureFixture[str], session: Session, journal_reads: dict[str, int]) -> None:
    _journal(session.folder, 200)
    with open(session.folder / "journal.jsonl", "a", encoding="utf-8") as fh:
        fh.write(_start(7, "open") + "\n")
    assert " 1 unfinished " in _status_reads(capsys, session, journal_reads)[1]
    state = session.folder / JOURNAL_STATE
    doc = json.loads(state.read_text())
    doc["run_keys"] = []  # the open run hidden by hand: the seal no longer matches
    state.write_text(json.dumps(doc))
    assert " 1 unfinished " in _status_reads(capsys, session, journal_reads)[1]


def test_s7_the_fold_fed_in_pieces_is_open_work_over_the_whole() -> None:
    """Any cut at line ends gives :func:`open_work`'s answer, with unreadable lines, incidents
    and a last line cut by a crash (S7: recovery and status agree)."""
    rng = random.Random(7)
    lines = [json.dumps({"event": "experiment_started", "experiment_id": "a"})]
    for i in range(300):
        lines.append(_start(i, rng.choice("ab")).replace('"sweep', '"x'))
        if rng.random() < 0.8:
            lines.append(_end(i, "a") if '"a"' in lines[-1] else _end(i, "b"))
        if rng.random() < 0.05:
            lines.append('{"event": "run_started", "run_key": ')  # unreadable
        if rng.random() < 0.03:
            lines.append(json.dumps({"event": "incident", "kind": "unreadable_journal_line", "line": len(lines) - 1}))
    lines.append(json.dumps({"event": "incident", "kind": "unfinished", "experiment_id": "a"}))
    for tail in ("", '{"event": "run_started", "run_key": "cut:warm:1:1", "experim'):
        raw = ("\n".join(lines) + "\n" + tail).encode()
        for kind in (None, "unfinished"):
            whole = open_work(raw, kind)
            complete, cut = split_at_last_line_end(raw)
            fold = JournalFold(kind)
            ends = [i + 1 for i, b in enumerate(complete) if b == ord("\n")]
            at = 0
            for stop in sorted(rng.sample(ends, 12)) + [len(complete)]:
                fold.feed(complete[at:stop])
                at = stop
            got = fold.result(cut)
            assert (got.run_keys, got.experiments, got.unsaid_lines) == (
                whole.run_keys, whole.experiments, whole.unsaid_lines), (kind, tail)
            assert whole.run_keys and (("cut:warm:1:1" in whole.run_keys) == bool(tail))


def test_a5_status_parses_session_toml_once_per_change_and_an_edit_is_checked_again(
        capsys: pytest.CaptureFixture[str], session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = status.read_toml

    def read_toml(path: Path, *a: object, **k: object) -> object:
        parsed.append(Path(path).name)
        return real(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(status, "read_toml", read_toml)
    root = session.folder.parent
    code, first, _ = cli(capsys, root, "status", session.name)
    assert code == 0 and "session.toml" in parsed and (session.folder / FILES_STATE).is_file()
    parsed.clear()
    for args in (["status", session.name], ["status", session.name, "--format", "tmux"],
                 ["status", session.name, "--json"]):
        assert cli(capsys, root, *args)[0] == 0
    assert parsed == []  # unchanged files: none parsed again
    code, again, _ = cli(capsys, root, "status", session.name)
    assert again == first
    path = session.folder / "session.toml"
    text = path.read_text()
    path.write_text(text.replace("days = 7", 'days = "seven"'))  # edited by hand: refused as show refuses it
    code, out, err = cli(capsys, root, "status", session.name)
    assert code == 2 and "session.toml" in one_line(err) and "days" in one_line(err), err
    _, show_out, show_err = cli(capsys, root, "show", session.name)
    assert one_line(err).split("error: ", 1)[-1] in show_err
    path.write_text(text.replace("days = 7", "days = 3"))
    code, out, _ = cli(capsys, root, "status", session.name)
    assert code == 0 and out != first  # the new window is said


def test_a5_status_never_parses_approvals_toml_and_a_changed_approval_is_seen(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli(capsys, sessions_root, "new", "v", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
               "--unit", "visual")[0] == 0
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for i in range(5):
        (out_dir / f"visual-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]) * 40)
    assert cli(capsys, sessions_root, "approve", "v", *(str(p) for p in sorted(out_dir.iterdir())),
               "--by", "Ana")[0] == 0
    parsed: list[str] = []
    real = count_cache.read_toml_lenient

    def lenient(path: Path, *a: object, **k: object) -> object:
        parsed.append(Path(path).name)
        return real(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(count_cache, "read_toml_lenient", lenient)
    code, out, _ = cli(capsys, sessions_root, "status", "v", "--format", "tmux")
    assert code == 0 and " 5 visuals " in out, out
    assert "approvals.toml" not in parsed
    (out_dir / "visual-3.png").write_bytes(b"changed")  # an approved file changed since
    code, out, _ = cli(capsys, sessions_root, "status", "v", "--format", "tmux")
    assert " ? visuals " in out and "approvals.toml" not in parsed, out


def test_s6_status_of_an_older_session_never_makes_it_the_most_recent(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    for name in ("older", "recent"):
        assert cli(capsys, sessions_root, "new", name, "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    for f in (sessions_root / "older").iterdir():
        os.utime(f, (1, 1))
    assert cli(capsys, sessions_root, "status", "older")[0] == 0  # writes its state files
    assert {p.name for p in (sessions_root / "older").iterdir()} >= STATE_FILES
    _, out, _ = cli(capsys, sessions_root, "status")
    assert out.startswith("recent ") or " recent " in out, out
    _, out, _ = cli(capsys, sessions_root, "list")
    assert out.splitlines()[1].startswith("recent"), out


def test_a5_list_opens_no_unchanged_session_and_still_words_a_broken_one(
        capsys: pytest.CaptureFixture[str], measured_session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    root = measured_session.folder.parent
    status.refresh_counts(measured_session.folder)  # summary.json as the runner leaves it
    assert cli(capsys, root, "new", "other", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    code, first, _ = cli(capsys, root, "list")  # keeps each session's checked files
    assert code == 0
    parsed: list[str] = []
    real = status.read_toml

    def read_toml(path: Path, *a: object, **k: object) -> object:
        parsed.append(Path(path).name)
        return real(path, *a, **k)  # type: ignore[arg-type]

    def never(*a: object, **k: object) -> object:
        raise AssertionError("list opened an unchanged session")

    with monkeypatch.context() as m:
        m.setattr(status, "read_toml", read_toml)
        m.setattr(Session, "open", never)
        code, again, _ = cli(capsys, root, "list")
    assert code == 0 and again == first and parsed == []
    row = next(ln for ln in again.splitlines() if ln.startswith(measured_session.name))
    assert row.split()[-2:] == ["12", "1"], row
    path = root / "other" / "session.toml"
    path.write_text(path.read_text().replace("days = 7", 'days = "seven"'))
    code, out, _ = cli(capsys, root, "list")
    assert code == 0 and measured_session.name in out
    bad = next(ln for ln in out.splitlines() if ln.startswith("other"))
    assert "unreadable" in bad and "session.toml" in bad and "days" in bad, bad


def test_h47_a_state_file_reads_back_only_as_written(tmp_path: Path) -> None:
    start = datetime(2026, 11, 29, 10, tzinfo=timezone.utc)
    doc = {"package": {"start": start, "days": 7}, "names": ["a", "b"]}
    folder = tmp_path
    assert write_state(folder, JOURNAL_STATE, {"session": to_json_value(doc)})
    got = read_state(folder, JOURNAL_STATE)
    assert got is not None and from_json_value(got["session"]) == doc
    assert oct((folder / JOURNAL_STATE).stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in folder.iterdir()] == [JOURNAL_STATE]  # no temporary file left
    raw = json.loads((folder / JOURNAL_STATE).read_text())
    raw["session"]["names"] = ["a"]
    (folder / JOURNAL_STATE).write_text(json.dumps(raw))
    assert read_state(folder, JOURNAL_STATE) is None  # a hand edit reads as absent
    (folder / JOURNAL_STATE).unlink()
    (folder / JOURNAL_STATE).mkdir()
    assert not write_state(folder, JOURNAL_STATE, {"x": 1})  # a folder in its place: refused, no error
    assert read_state(folder, JOURNAL_STATE) is None
    # its write's temporary name is no sign of use either; the session's own files are
    assert is_state_file(".journal-state.json.0a1b2c.tmp") and is_state_file(FILES_STATE)
    assert not is_state_file("summary.json") and not is_state_file(".session.toml.0a1b2c.tmp")
