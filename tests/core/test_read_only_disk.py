"""A write refused by a read-only disk says so, and names the write that failed."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpusession.core.files import safefile
from gpusession.core.files.errors import BadInput
from gpusession.core.folder import journal


def _no_write(monkeypatch: pytest.MonkeyPatch, *, read_only: bool) -> None:
    monkeypatch.setattr(safefile.os, "access", lambda *_a, **_k: False)
    real = os.statvfs

    def statvfs(path: object) -> object:
        st = real(path)  # type: ignore[arg-type]
        flag = (st.f_flag | os.ST_RDONLY) if read_only else (st.f_flag & ~os.ST_RDONLY)
        return SimpleNamespace(f_flag=flag)

    monkeypatch.setattr(safefile.os, "statvfs", statvfs)


def test_a_file_on_a_read_only_disk_is_said_to_be_on_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "resultats-bruts.csv"
    target.write_text("x\n")
    _no_write(monkeypatch, read_only=True)
    with pytest.raises(BadInput) as info:
        safefile.check_writable(target)
    assert str(info.value) == f"{target}: is on a read-only disk (its file system is mounted read-only); nothing was written"


def test_a_file_this_user_may_not_write_is_said_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "resultats-bruts.csv"
    target.write_text("x\n")
    _no_write(monkeypatch, read_only=False)
    with pytest.raises(BadInput, match="is not writable by this user; nothing was written"):
        safefile.check_writable(target)


def test_a_run_lock_that_cannot_be_written_names_the_write_that_failed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(path: Path, _data: bytes) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(journal, "write_private_bytes", refused)  # where take_lock looks it up
    with pytest.raises(OSError) as info:
        journal.take_lock(tmp_path, "s1")
    assert info.value.filename == str(tmp_path / f".run.lock.{os.getpid()}.tmp")
    assert info.value.strerror == "Read-only file system (writing the run lock); nothing was run"
    assert not (tmp_path / ".run.lock").exists()
