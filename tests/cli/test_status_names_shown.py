"""``gpusession status``: the session name rule of every command, and what it shows escaped.

The name is checked before any path is built from it (the words of ``check-host``), the
tmux form stays a short text with exit 0 whatever the name, and every form but
``--json`` escapes control and direction-changing characters as ``show`` does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import cli, one_line

LONG = "a" * 300
RAW = ("\x1b", "\u202e")  # ESC and RIGHT-TO-LEFT OVERRIDE: never printed as they are


def test_status_refuses_a_long_name_as_check_host_does(
        session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(capsys, sessions_root, "status", LONG)
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.endswith("session name is 300 characters long; at most 100")
    _, _, host_err = cli(capsys, sessions_root, "check-host", LONG)
    assert one_line(host_err) == line


@pytest.mark.parametrize("verbose", [(), ("--verbose",)])
def test_status_tmux_with_a_long_name_is_a_short_text_exit_0(
        session, sessions_root: Path, capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
        verbose: tuple[str, ...]) -> None:
    code, out, err = cli(capsys, sessions_root, "status", LONG, "--format", "tmux", *verbose)
    assert code == 0 and err == "" and "Traceback" not in out
    assert out.startswith("gpusession: no session") and len(out.strip()) < 24 + len(str(sessions_root)) + 3


@pytest.mark.parametrize("typed", ["{name}/", "../{name}", "./{name}", "{name}\\"])
def test_status_refuses_a_path_separator_as_check_host_does(
        session, sessions_root: Path, capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
        typed: str) -> None:
    name = typed.format(name=session.name)
    code, out, err = cli(capsys, sessions_root, "status", name)
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.endswith(f"session name {name!r} contains a path separator")
    _, _, host_err = cli(capsys, sessions_root, "check-host", name)
    assert one_line(host_err) == line


@pytest.fixture
def odd_root(session, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """A sessions folder whose path holds an ESC colour sequence and a right-to-left override."""
    root = tmp_path / "b\u202eidi\x1b[31mX"
    root.mkdir()
    shutil.copytree(session.folder, root / session.name, symlinks=True)
    return root


@pytest.mark.parametrize("form", [("--format", "tmux", "--verbose"), ("--verbose",)])
def test_status_escapes_controls_and_bidi_as_show_does(
        session, odd_root: Path, capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
        form: tuple[str, ...]) -> None:
    code, out, err = cli(capsys, odd_root, "status", session.name, *form)
    assert code == 0, err
    assert not any(c in out for c in RAW)
    assert "b\\u202eidi\\x1b[31mX" in out


def test_status_json_keeps_the_raw_folder(
        session, odd_root: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli(capsys, odd_root, "status", session.name, "--json")
    assert code == 0 and "\x1b" not in out and "\\u001b" in out  # JSON escapes the controls itself
    assert json.loads(out)["sessions_dir"] == str(odd_root.absolute())


def test_status_errors_escape_controls_and_bidi(
        session, odd_root: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    (odd_root / "lnk").symlink_to(odd_root / session.name)
    code, out, err = cli(capsys, odd_root, "status", "lnk")
    assert code == 2 and out == ""
    line = one_line(err)
    assert "symbolic link" in line and "b\\u202eidi\\x1b[31mX" in line
    assert not any(c in err for c in RAW)
    for args in (("status", "c1\x1b[2J"), ("status", "c1\x1b[2J", "--format", "tmux")):
        code, out, err = cli(capsys, odd_root, *args)
        assert "\x1b" not in out + err and "Traceback" not in err
