"""Which sessions folder a command uses: one rule, in order (core/folder/root.py, S12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.core.folder.root import chosen_sessions_root, remember_sessions_dir, status_root


def test_s12_the_sessions_folder_is_chosen_by_one_rule_in_order(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.delenv("GPUSESSION_HOME", raising=False)
    assert chosen_sessions_root(None) == (here / "sessions", "./sessions of the current folder")  # nothing else
    last = tmp_path / "last"
    last.mkdir()
    remember_sessions_dir(last)
    assert chosen_sessions_root(None) == (last, "the sessions folder used last")
    (here / "sessions").mkdir()
    assert chosen_sessions_root(None) == (here / "sessions", "./sessions of the current folder")
    monkeypatch.setenv("GPUSESSION_HOME", str(tmp_path / "env"))
    assert chosen_sessions_root(None) == (tmp_path / "env", "$GPUSESSION_HOME")
    assert chosen_sessions_root("cli") == (Path("cli"), "--sessions-dir")
    assert status_root("cli") == Path("cli") and status_root(None) == tmp_path / "env"
