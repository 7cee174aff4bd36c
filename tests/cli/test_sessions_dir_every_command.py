"""Every command finds the sessions folder by the rule ``status`` uses.

``--sessions-dir``, else ``$GPUSESSION_HOME``, else ``./sessions`` when it exists, else
the folder used last; ``--sessions-dir`` is taken after the subcommand too; a name not
found says which folder was read and where that folder came from.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import one_line

from gpusession.cli import main
from gpusession.core.folder.root import remember_sessions_dir
from gpusession.core.folder.session import Session


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_s12_show_from_another_folder_finds_the_remembered_sessions_folder(
        session: Session, sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GPUSESSION_HOME", raising=False)
    remember_sessions_dir(sessions_root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no ./sessions here
    code, out, err = _main(capsys, "status", session.name)
    assert code == 0, err
    code, out, err = _main(capsys, "show", session.name)
    assert code == 0, err
    assert session.name in out


def test_s12_a_name_not_found_says_the_folder_and_where_it_came_from(
        session: Session, sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GPUSESSION_HOME", raising=False)
    monkeypatch.chdir(tmp_path)  # ./sessions is the fixture's folder
    code, _, err = _main(capsys, "show", "nosuch")
    assert code == 2
    line = one_line(err)
    assert str(sessions_root) in line and "./sessions of the current folder" in line
    assert "--sessions-dir" in line
    monkeypatch.setenv("GPUSESSION_HOME", str(sessions_root))
    code, _, err = _main(capsys, "show", "nosuch")
    assert code == 2 and "$GPUSESSION_HOME" in one_line(err)


def test_s12_a_name_not_found_in_the_remembered_folder_names_it_once(
        session: Session, sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GPUSESSION_HOME", raising=False)
    remember_sessions_dir(sessions_root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no ./sessions here: the remembered folder is read
    code, _, err = _main(capsys, "show", "nosuch")
    assert code == 2
    line = one_line(err)
    assert f"in {sessions_root} (the sessions folder used last; name another" in line, line
    assert "from the sessions folder" not in line
    assert line.count("sessions folder") == 1, line


def test_s12_sessions_dir_after_the_subcommand(
        session: Session, sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GPUSESSION_HOME", raising=False)
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")  # no ./sessions, nothing remembered
    code, out, err = _main(capsys, "show", "--sessions-dir", str(sessions_root), session.name)
    assert code == 0, err
    code, out, err = _main(capsys, "list", f"--sessions-dir={sessions_root}", "--json")
    assert code == 0, err and session.name in out
    code, out, err = _main(capsys, "experiment", session.name, "list", "--sessions-dir", str(sessions_root))
    assert code == 0, err
    # after the command, it wins over the one before it
    code, out, err = _main(capsys, "--sessions-dir", str(tmp_path / "none"), "show",
                           "--sessions-dir", str(sessions_root), session.name)
    assert code == 0, err


def test_s12_open_a_name_not_found_says_the_folder_too(
        session: Session, sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GPUSESSION_HOME", raising=False)
    code, _, err = _main(capsys, "--sessions-dir", str(sessions_root), "open", "nosuch")
    assert code == 2
    line = one_line(err)
    assert str(sessions_root) in line and "from --sessions-dir" in line


def test_s12_a_sessions_folder_that_does_not_exist_is_said_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import cli

    missing = tmp_path / "nowhere"
    code, _, err = cli(capsys, missing, "show", "trial-1")
    assert code == 2
    assert f"the sessions folder {missing} does not exist" in " ".join(err.split()), err
    assert f"in {missing} (" not in err  # never said as a folder that was searched


@pytest.mark.parametrize("command", ["show", "status", "cost"])
def test_h67_a_name_only_in_the_folder_used_last_is_said_there(
        command: str, session: Session, sessions_root: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GPUSESSION_HOME", raising=False)
    remember_sessions_dir(sessions_root)
    project = tmp_path / "project"
    (project / "sessions").mkdir(parents=True)  # a folder with its own ./sessions
    monkeypatch.chdir(project)
    code, _, err = _main(capsys, command, session.name)
    assert code == 2
    line = one_line(err)
    assert f"no session {session.name!r} in " in line and str(project / "sessions") in line
    assert line.endswith(f"there is one in {sessions_root} (the sessions folder used last): "
                         f"use --sessions-dir {sessions_root}")
    code, _, err = _main(capsys, command, "nosuch")  # in no folder: no such hint
    assert code == 2 and "there is one" not in err
