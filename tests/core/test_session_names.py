"""Session names and the sessions root that would break a session.

A new session name may not start with ``.`` (a hidden folder), end with a dot or a space
(Windows drops them), be a device name Windows reserves (``CON``, ``nul.txt``, ``COM1``…,
any case) or be a gpusession command (``list``, ``Status``); each refusal is one line
saying why. A sessions root that is a file is "not a folder", exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import NewSession, cli, one_line

from gpusession.core.files.errors import BadInput
from gpusession.core.folder.session import COMMAND_NAMES, Session, validate_name

NEW = ["--gpu", "RTX A5000", "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z"]


@pytest.mark.parametrize("name, why", [
    (".hidden", "starts with '.'"),
    (".x.y", "starts with '.'"),
    ("x.", "ends with a dot or a space"),
    ("x ", "ends with a dot or a space"),
    ("CON", "reserved on Windows"),
    ("con", "reserved on Windows"),
    ("nul.txt", "reserved on Windows"),
    ("Aux.tar.gz", "reserved on Windows"),
    ("prn", "reserved on Windows"),
    ("Com1", "reserved on Windows"),
    ("COM9", "reserved on Windows"),
    ("lpt1.log", "reserved on Windows"),
    ("list", "is a gpusession command (gpusession list)"),
    ("Status", "is a gpusession command (gpusession status)"),
    ("pull", "is a gpusession command"),
    ("verify-copy", "is a gpusession command"),
])
def test_new_session_names_that_hide_break_on_windows_or_read_as_a_command_are_refused(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, name: str, why: str,
) -> None:
    with pytest.raises(BadInput) as exc:
        Session.create(sessions_root, name)
    assert why in str(exc.value) and "\n" not in str(exc.value)
    code, _, err = cli(capsys, sessions_root, "new", name, *NEW)
    assert code == 2 and why in one_line(err), err
    assert list(sessions_root.iterdir()) == []


@pytest.mark.parametrize("name", ["demo", "a.b", "console", "com10", "lpt0", "com", "nul-run",
                                  "lists", "status-2", "x.list", "run1"])
def test_names_near_those_are_accepted(sessions_root: Path, name: str) -> None:
    assert validate_name(name, new=True) == name
    Session.create(sessions_root, name)
    assert (sessions_root / name / "session.toml").is_file()


def test_rename_refuses_the_same_names(new_session: NewSession) -> None:
    s = new_session("t1")
    for name in (".t1", "t1.", "NUL", "report"):
        with pytest.raises(BadInput, match="session name"):
            s.rename(name)
    assert s.folder.is_dir()


def test_an_existing_folder_of_such_a_name_still_opens(
    sessions_root: Path, new_session: NewSession
) -> None:
    new_session("t1").folder.rename(sessions_root / "status")  # renamed by hand
    assert Session.open(sessions_root, "status").name == "status"


def test_the_command_names_are_the_parsers_commands() -> None:
    from gpusession.cli import _known_commands, build_parser

    assert _known_commands(build_parser()) == COMMAND_NAMES


@pytest.mark.parametrize("command", [["list"], ["new", "x", *NEW], ["show", "x"]])
def test_a_sessions_root_that_is_a_file_is_not_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str],
) -> None:
    root = tmp_path / "passwd"
    root.write_text("root:x:0:0\n", encoding="utf-8")
    code, out, err = cli(capsys, root, *command)
    line = one_line(err)
    assert code == 2 and "not a folder" in line and str(root) in line, out + err
    assert "no sessions" not in out + err
    assert root.read_text(encoding="utf-8") == "root:x:0:0\n"


@pytest.mark.parametrize("name", ["café", "naïve", "Straße", "ｓ"])
def test_a_name_with_a_non_ascii_letter_is_refused_asking_for_ascii_letters(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, name: str,
) -> None:
    """``é`` is a letter: the refusal must say which letters are meant (ASCII)."""
    code, _, err = cli(capsys, sessions_root, "new", name, *NEW)
    line = one_line(err)
    assert code == 2 and "use ASCII letters (A-Z, a-z), digits" in line, line
    assert not (sessions_root / name).exists()
    code, _, err = cli(capsys, sessions_root, "new", "s", *NEW)
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", "s", "define", "--id", name,
                       "--workload", "command", "--command", "true", "--values", "1")
    line = one_line(err)
    assert code == 2 and "use ASCII letters (A-Z, a-z), digits" in line, line


def test_a_validation_report_name_with_a_non_ascii_letter_asks_for_ascii_letters() -> None:
    from gpusession.commands.validate_cmd import _run_name

    with pytest.raises(BadInput) as exc:
        _run_name("café")
    assert "use ASCII letters (A-Z, a-z), digits" in str(exc.value)
    assert _run_name("by-hand") == "by-hand"
