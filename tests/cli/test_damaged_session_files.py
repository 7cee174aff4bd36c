"""Hand-edited or damaged session files and hostile arguments (S7, K1).

Each test drives the CLI in-process (``gpusession.cli.main``) and checks the promises:
one line on stderr naming the file and field, exit 2 for bad input, no traceback, and
session data never replaced.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, digest, one_line

from gpusession.cli import main


@pytest.fixture
def base(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> Path:
    code, _, err = cli(capsys, sessions_root, "new", "base", "--gpu", "RTX A5000",
                       "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    return sessions_root / "base"


# -- S7: an output never replaces session data ---------------------------------------------
@pytest.mark.parametrize("data_file", ["session.toml", "journal.jsonl", "order.toml"])
def test_s7_report_out_force_never_replaces_session_data(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, data_file: str
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "report", "base", "--out", str(base / data_file), "--force")
    assert code == 2
    assert data_file in one_line(err) and "session data" in err
    assert digest(base) == before


def test_s7_manifest_out_force_never_replaces_session_data(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, tmp_path: Path
) -> None:
    deliver = tmp_path / "deliverables"
    deliver.mkdir()
    (deliver / "a.txt").write_text("a")
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "manifest", "base", "--deliverables", str(deliver),
                       "--out", str(base / "session.toml"), "--force")
    assert code == 2 and "session data" in one_line(err)
    assert digest(base) == before


def test_report_out_a_folder_is_bad_input(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, tmp_path: Path
) -> None:
    code, _, err = cli(capsys, sessions_root, "report", "base", "--out", str(tmp_path), "--force")
    assert code == 2 and "folder" in one_line(err)


# -- hand-edited session.toml ------------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, words",
    [
        ("[package]\n", 'package = "x"\n[packageX]\n', "package"),
        ("created_at = ", 'created_at = "yesterday"\nx = ', "created_at"),
        ("start = 2026-11-29 10:00:00+00:00", 'start = "yesterday"', "package.start"),
        ("lots = 1", 'lots = "one"', "lots"),
        ("days = 7", "days = 5", "days"),
        ('gpu_model = "RTX A5000"', 'gpu_model = "RTX\\nA5000"', "gpu_model"),
        ("lots = 1", "lots = 99999999999999999", "lots"),
    ],
)
@pytest.mark.parametrize("command", [["show", "base"], ["list"], ["report", "base"]])
def test_s7_wrong_types_in_session_toml_name_file_and_field(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
    old: str, new: str, words: str, command: list[str],
) -> None:
    toml = base / "session.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new, 1))
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, *command)
    if command == ["list"]:  # the list keeps going and shows the broken session's error
        assert code == 0 and "Traceback" not in err
        assert "session.toml" in out and words in out
    else:
        assert code == 2
        line = one_line(err)
        assert "session.toml" in line and words in line
    assert digest(base) == before


def test_s7_toml_with_byte_order_mark_and_crlf_still_opens(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    for name in ("session.toml", "order.toml", "checklist.toml"):
        p = base / name
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes().replace(b"\n", b"\r\n"))
    code, out, err = cli(capsys, sessions_root, "show", "base")
    assert code == 0, err
    assert "RTX A5000" in out


# -- K1: lots and GPU model as given on the command line ---------------------------------
@pytest.mark.parametrize(
    "args, words",
    [
        (["--lots", "99999999999999999999999"], "at most"),
        (["--lots", "٣"], "whole number"),
        (["--gpu", ""], "GPU model"),
        (["--gpu", "RTX\nA5000"], "control character"),
        (["--gpu", "RTX\x1b[31mA5000"], "control character"),
    ],
)
def test_k1_new_refuses_huge_lots_and_unprintable_gpu(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, args: list[str], words: str
) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "x1", *args)
    assert code == 2 and words in one_line(err)
    assert not (sessions_root / "x1").exists()


def test_k1_cost_refuses_huge_lots(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    code, _, err = cli(capsys, sessions_root, "cost", "--gpu", "RTX A5000", "--days", "7",
                       "--lots", "99999999999999999999999999")
    assert code == 2 and "at most" in one_line(err)


# -- the command line itself -------------------------------------------------------------
@pytest.mark.parametrize("rest", [["base"], ["--help"]])
def test_mistyped_command_says_unknown_command(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, rest: list[str]
) -> None:
    code, _, err = cli(capsys, sessions_root, "shwo", *rest)
    assert code == 2 and "unknown command 'shwo'" in one_line(err)


@pytest.mark.parametrize("command", [["run", "--help"], ["show", "--help"], ["list", "--help"],
                                     ["experiment", "x", "define", "--help"]])
def test_help_explains_each_option(capsys: pytest.CaptureFixture[str], sessions_root: Path,
                                   command: list[str]) -> None:
    code, out, _ = cli(capsys, sessions_root, *command)
    assert code == 0
    # a description paragraph, and every option line (or its continuation) says something
    assert len(out.split("\n\n")) >= 3
    if "define" in command:
        for opt in ("--varied", "--scope", "--order ", "--threshold", "--seed"):
            line = next(ln for ln in out.splitlines() if ln.strip().startswith(opt))
            idx = out.splitlines().index(line)
            follow = out.splitlines()[idx + 1] if idx + 1 < len(out.splitlines()) else ""
            assert len(line.split()) > 2 or follow.startswith(" " * 10), opt


def test_sessions_dir_that_is_a_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    code, _, err = cli(capsys, f, "new", "x1")
    assert code == 2 and "sessions root" in one_line(err)


def test_s7_list_survives_a_session_whose_csv_is_a_folder(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "other")
    assert code == 0, err
    (sessions_root / "other" / "resultats-bruts.csv").mkdir()
    code, out, err = cli(capsys, sessions_root, "list")
    assert code == 0 and "Traceback" not in err
    assert "base" in out and "other" in out and "is a folder, not a regular file" in out.lower()


@pytest.mark.parametrize(
    "package",
    [
        {"lots": 10_001},
        {"lots": 0},
        {"days": 5},
        {"gpu_model": "RTX\nA5000"},
    ],
)
def test_s7_set_package_refuses_what_the_next_open_would_refuse(
    sessions_root: Path, base: Path, package: dict[str, object]
) -> None:
    from gpusession.core.files.errors import BadInput
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session

    s = Session.open(sessions_root, "base")
    before = digest(base)
    with pytest.raises(BadInput):
        s.set_package(Package(**package))  # type: ignore[arg-type]
    assert digest(base) == before
    Session.open(sessions_root, "base")  # still opens


def test_sessions_dir_without_a_value_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--sessions-dir"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--sessions-dir" in one_line(err)
