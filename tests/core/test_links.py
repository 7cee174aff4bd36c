"""In the core, nothing is written or read through a link.

``ranks.csv`` is never appended to through a link; the safe-file helper refuses a linked
folder between the session folder and the file and makes what it creates private; a
session folder that is itself a link is neither created, opened nor listed as a session.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import make_private_dir, open_private, write_private_bytes
from gpusession.core.folder.session import Session, list_sessions
from gpusession.core.records.ranks import append_rank_rows, read_rank_rows


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def _precious(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir(exist_ok=True)
    p = out / "precious.csv"
    p.write_text("precious\n", encoding="utf-8")
    return p


_RANKS = [{"rank": 0, "world_size": 1, "ok": True, "elapsed_s": 1.0}]


def test_ranks_csv_link_is_refused_and_its_target_not_appended(session: Session, tmp_path: Path) -> None:
    target = _precious(tmp_path)
    path = session.runs_dir / "rx" / "ranks.csv"
    path.parent.mkdir(parents=True)
    path.symlink_to(target)
    for root in (None, session.folder):
        with pytest.raises(BadInput, match="ranks.csv: is a symbolic link"):
            append_rank_rows(path, "warm:batch-4:1", "warm", _RANKS, root=root)
    assert target.read_text() == "precious\n"


def test_ranks_csv_under_a_linked_experiment_folder_is_refused(session: Session, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    session.runs_dir.mkdir()
    (session.runs_dir / "rx").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BadInput, match="rx: is a symbolic link"):
        append_rank_rows(session.runs_dir / "rx" / "ranks.csv", "warm:batch-4:1", "warm", _RANKS,
                         root=session.folder)
    assert list(elsewhere.iterdir()) == []


def test_ranks_csv_created_private_and_appended(session: Session) -> None:
    path = session.runs_dir / "rx" / "ranks.csv"
    append_rank_rows(path, "warm:batch-4:1", "warm", _RANKS, root=session.folder)
    append_rank_rows(path, "warm:batch-4:2", "warm", _RANKS, root=session.folder)
    assert [r["run_key"] for r in read_rank_rows(path)] == ["warm:batch-4:1", "warm:batch-4:2"]
    assert _mode(path) == 0o600
    assert _mode(session.runs_dir) == 0o700 and _mode(path.parent) == 0o700


def test_run_lock_is_private(session: Session) -> None:
    from gpusession.core.folder.journal import release_lock, take_lock

    lock = take_lock(session.folder, session.name)
    try:
        assert _mode(lock) == 0o600 and lock.read_text().split()[0] == str(os.getpid())
    finally:
        release_lock(session.folder)


@pytest.mark.parametrize("by_descriptor", [True, False], ids=["posix", "by-name"])
def test_helper_refuses_links_on_the_way_and_a_path_outside_the_root(
        session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_descriptor: bool) -> None:
    monkeypatch.setattr("gpusession.core.files.safefile._DIR_FD", by_descriptor)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (session.folder / "logs").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BadInput, match="logs: is a symbolic link"):
        write_private_bytes(session.folder / "logs" / "run.log", b"x", root=session.folder)
    with pytest.raises(BadInput, match="logs: is a symbolic link"):
        make_private_dir(session.folder / "logs" / "a", root=session.folder)
    with pytest.raises(BadInput, match="is not inside"):
        open_private(session.folder / ".." / "x", os.O_WRONLY | os.O_CREAT, root=session.folder)
    (session.folder / "afile").write_text("")
    with pytest.raises(BadInput, match="expected a folder"):
        make_private_dir(session.folder / "afile" / "b", root=session.folder)
    assert list(elsewhere.iterdir()) == []
    write_private_bytes(session.folder / "runs" / "rx" / "out.jsonl", b"x", root=session.folder)
    assert _mode(session.folder / "runs") == 0o700 and _mode(session.folder / "runs" / "rx" / "out.jsonl") == 0o600


def test_new_session_through_a_link_is_refused_and_the_target_untouched(
        sessions_root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.chmod(elsewhere, 0o755)
    sessions_root.mkdir(exist_ok=True)
    (sessions_root / "linked").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BadInput) as err:
        Session.create(sessions_root, "linked")
    assert "linked" in str(err.value) and str(elsewhere) in str(err.value) and "symbolic link" in str(err.value)
    assert list(elsewhere.iterdir()) == [] and _mode(elsewhere) == 0o755


def test_session_folder_that_is_a_link_is_not_opened_nor_listed_twice(
        new_session: object, sessions_root: Path) -> None:
    real = new_session("real")  # type: ignore[operator]
    (sessions_root / "twin").symlink_to(real.folder, target_is_directory=True)
    with pytest.raises(BadInput, match=f"twin: is a symbolic link to {real.folder}"):
        Session.open(sessions_root, "twin")
    rows = {r.name: r for r in list_sessions(sessions_root)}
    assert rows["real"].error is None
    assert rows["twin"].error is not None and rows["twin"].link_target == str(real.folder)
    assert rows["twin"].runs == 0
