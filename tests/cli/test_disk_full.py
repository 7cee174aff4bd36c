"""A full or read-only disk, and a journal line cut by a crash (S7).

As root, ``chmod`` does not stop writes, so the refusals are simulated by making the
write calls fail the way a full (ENOSPC) or read-only (EROFS) file system does.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import digest

from gpusession.cli import main
from gpusession.core.files import tomlio
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow


def _refuse(code: int) -> Any:
    def replace(src: Any, dst: Any) -> None:
        raise OSError(code, os.strerror(code))

    return replace


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_s7_refused_write_is_one_line_naming_the_file_and_keeps_the_old_one(
    sessions_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    Session.create(sessions_root, "t")
    folder = sessions_root / "t"
    before = digest(folder)
    monkeypatch.setattr(tomlio.os, "replace", _refuse(code))
    rc = main(["--sessions-dir", str(sessions_root), "checklist", "t", "done", "g1.approver"])
    err = capsys.readouterr().err
    assert rc == 1
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "checklist.toml" in err and os.strerror(code) in err and ".tmp" not in err
    assert digest(folder) == before
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_s7_new_cut_short_by_a_full_disk_leaves_no_half_session(
    sessions_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tomlio.write_atomic_bytes
    calls = {"n": 0}

    def second_write_fails(path: Path, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(tomlio, "write_atomic_bytes", second_write_fails)
    rc = main(["--sessions-dir", str(sessions_root), "new", "t"])
    assert rc == 1 and "No space left" in capsys.readouterr().err
    assert not (sessions_root / "t").exists()
    monkeypatch.setattr(tomlio, "write_atomic_bytes", real)
    assert main(["--sessions-dir", str(sessions_root), "new", "t"]) == 0


def test_s7_an_empty_folder_left_by_a_cut_create_is_not_a_session(
    sessions_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sessions_root / "t").mkdir()
    assert main(["--sessions-dir", str(sessions_root), "new", "t"]) == 0
    assert (sessions_root / "t" / "session.toml").exists()
    (sessions_root / "u").mkdir()
    (sessions_root / "u" / "mine.txt").write_text("keep")
    assert main(["--sessions-dir", str(sessions_root), "new", "u"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (sessions_root / "u" / "mine.txt").read_text() == "keep"


def test_s7_a_record_after_a_cut_journal_line_is_not_swallowed(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t")
    with open(s.journal_path, "ab") as fh:
        fh.write(b'{"at": "2026-11-29T10:00:00+00:00", "event": "note", "te')
    s.journal("after_the_cut", value=1)
    assert [r["event"] for r in s.read_journal()][-1] == "after_the_cut"


def test_s7_a_run_whose_start_line_was_cut_is_still_recovered(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t")
    s.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm",
                               run_index=1, elapsed_seconds=0.5))
    line = json.dumps({"at": "2026-11-29T10:00:00+00:00", "event": "run_started",
                       "run_key": "e:warm:batch-4:2", "experiment_id": "e",
                       "variant_id": "batch-4", "phase": "warm", "run_index": 2})
    with open(s.journal_path, "ab") as fh:
        fh.write(line[: line.index('"variant_id"') + 17].encode())  # cut mid-value
    reopened = Session.open(sessions_root, "t")
    rows = reopened.results.rows()
    assert len(rows) == 2 and rows[0].elapsed_seconds == 0.5
    lost = rows[1]
    assert (lost.experiment_id, lost.variant_id, lost.phase, lost.run_index) == ("e", "batch-4", "warm", 2)
    assert lost.elapsed_seconds is None and "in flight" in (lost.notes or "")
    kinds = [r.get("kind") for r in reopened.read_journal() if r.get("event") == "incident"]
    assert kinds == ["partial_journal_line", "run_lost"]
    Session.open(sessions_root, "t")  # a second reopen adds nothing
    assert len(reopened.results.rows()) == 2


def test_s7_two_opens_at_once_recover_a_lost_run_once(sessions_root: Path) -> None:
    import threading

    s = Session.create(sessions_root, "t")
    s.journal("run_started", run_key="e:warm:batch-1:1", experiment_id="e", variant_id="batch-1",
              phase="warm", run_index=1)
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            barrier.wait()
            Session.open(sessions_root, "t")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(s.results.rows()) == 1
    assert len([r for r in s.read_journal() if r.get("event") == "run_recovered"]) == 1


def test_s7_a_crashed_session_on_a_read_only_disk_still_shows(
    sessions_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Session.create(sessions_root, "t")
    s.journal("run_started", run_key="e:warm:batch-1:1", experiment_id="e", variant_id="batch-1",
              phase="warm", run_index=1)
    before = digest(s.folder)
    real_open = open

    def read_only_open(file: Any, mode: str = "r", *a: Any, **kw: Any) -> Any:
        if any(c in mode for c in "wa+"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(file))
        return real_open(file, mode, *a, **kw)

    real_os_open = os.open

    def read_only_os_open(file: Any, flags: int, *a: Any, **kw: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(file))
        return real_os_open(file, flags, *a, **kw)

    monkeypatch.setattr("builtins.open", read_only_open)
    monkeypatch.setattr(os, "open", read_only_os_open)
    rc = main(["--sessions-dir", str(sessions_root), "show", "t"])
    monkeypatch.setattr("builtins.open", real_open)
    monkeypatch.setattr(os, "open", real_os_open)
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "results   0 rows" in out
    assert digest(s.folder) == before
    Session.open(sessions_root, "t")  # writable again: recovered now
    assert len(s.results.rows()) == 1
