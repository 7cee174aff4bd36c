"""Arguments that are not UTF-8, secrets in an option's key, a package limit in the past (H-40, H-46).

In-process through ``gpusession.cli.main`` (Python hands a byte that is not UTF-8 over
as a lone surrogate, ``surrogateescape``), and once through a real process with the
raw bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli, digest, one_line

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"


@pytest.fixture
def base(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> Path:
    code, _, err = cli(capsys, sessions_root, "new", "base", "--gpu", "RTX A5000", "--lots", "1",
                       "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "define", "--id", "e1",
                       "--values", "1,2", "--workload", "synthetic-mlp")
    assert code == 0, err
    return sessions_root / "base"


def _bad(text: str) -> str:
    """``text`` as Python's ``argv`` holds it when its bytes are not UTF-8."""
    return os.fsdecode(text.encode("latin-1"))


# -- H-40: an argument that is not UTF-8 ----------------------------------------------------
@pytest.mark.parametrize("args, named, escaped", [
    (["checklist", "base", "note", "g1.approver", _bad("\xff bad")], "argument", "\\xff bad"),
    (["experiment", "base", "define", "--id", "e9", "--values", "1", "--workload", "synthetic-mlp",
      "--param", _bad("u=\xff")], "--param", "u=\\xff"),
    (["experiment", "base", "derive", "--id", "e9", "--from", "e1", "--set", _bad("param.u=\xff")],
     "--set", "param.u=\\xff"),
    (["experiment", "base", "derive", "--id", "e9", "--from", "e1", _bad("--set=param.u=\xff")],
     "--set", "\\xff"),
    (["checklist", "base", "note", "g1.approver", "lone \ud800 surrogate"], "argument", "\\ud800"),
    (["show", _bad("b\xe9se")], "argument", "b\\xe9se"),
], ids=["positional", "param", "set", "option=value", "lone-surrogate", "name"])
def test_h40_an_argument_that_is_not_utf8_is_refused_at_the_parser(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
    args: list[str], named: str, escaped: str,
) -> None:
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, *args)
    assert code == 2 and not out
    line = one_line(err)
    assert "not valid UTF-8" in line and named in line and escaped in line
    assert "\udcff" not in line and "\ud800" not in line
    assert digest(base) == before


def test_h40_raw_bytes_on_a_real_command_line(sessions_root: Path, base: Path) -> None:
    before = digest(base)
    cmd = [sys.executable.encode(), b"-m", b"gpusession", b"--sessions-dir", os.fsencode(sessions_root),
           b"checklist", b"base", b"note", b"g1.approver", b"\xff bad"]
    proc = subprocess.run(cmd, capture_output=True, timeout=120)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2, err
    line = one_line(err)
    assert "not valid UTF-8" in line and "\\xff bad" in line and "UnicodeEncodeError" not in err
    assert digest(base) == before


@pytest.mark.parametrize("var", ["GPUSESSION_HOME", "GPUSESSION_CONTEXT"])
def test_h40_a_gpusession_variable_that_is_not_utf8_is_refused(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
    monkeypatch: pytest.MonkeyPatch, var: str,
) -> None:
    monkeypatch.setitem(os.environ, var, _bad("/tmp/\xff"))
    code, _, err = cli(capsys, sessions_root, "list")
    assert code == 2
    line = one_line(err)
    assert var in line and "not valid UTF-8" in line and "\\xff" in line


def test_h40_a_secret_in_a_bad_argument_is_masked(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
) -> None:
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.approver",
                       _bad(TOKEN + "\xff"))
    assert code == 2 and TOKEN not in err and "HIDDEN" in one_line(err)


# -- H-46: a refusal names the field, never the value, keys included -------------------------
@pytest.mark.parametrize("args", [
    ["experiment", "base", "define", "--id", "e9", "--values", "1", "--workload", "synthetic-mlp",
     "--param", f"{TOKEN}=1"],
    ["experiment", "base", "define", "--id", "e9", "--values", "1", "--workload", "command",
     "--command", "echo {batch}", "--param", f"{TOKEN}=1"],
    ["experiment", "base", "derive", "--id", "e9", "--from", "e1", "--set", f"param.{TOKEN}=1"],
], ids=["define", "define-command", "derive"])
def test_h46_a_secret_in_a_param_key_is_never_echoed(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, args: list[str],
) -> None:
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, *args)
    assert code == 2
    line = one_line(err)
    assert TOKEN not in out + err and "ghp_abc" not in line
    assert "param name" in line and "GitHub token" in line
    assert digest(base) == before


def test_h46_a_field_path_holding_a_secret_key_is_masked_everywhere() -> None:
    from gpusession.core.files.errors import BadInput

    exc = BadInput("refused", path="session.toml", field=f"experiments.e1.params.{TOKEN}\x1b[2J")
    assert TOKEN not in str(exc) and "\x1b" not in str(exc)
    assert "params.[HIDDEN: GitHub token]" in str(exc)


def test_h46_a_secret_key_hand_written_in_a_session_file_is_not_echoed(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
) -> None:
    p = base / "checklist.toml"
    p.write_text(p.read_text() + f'\n[items.{TOKEN}]\ndone = "yes"\n')
    code, out, err = cli(capsys, sessions_root, "show", "base")
    assert code == 2 and TOKEN not in out + err
    assert "checklist.toml" in one_line(err)


# -- package --limit in the past ---------------------------------------------------------------
def test_package_limit_in_the_past_says_already_past_at_once(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
) -> None:
    code, out, err = cli(capsys, sessions_root, "package", "base", "--limit", "2020-01-01T00:00:00Z")
    assert code == 0, err
    assert "already past" in out
    code, out, err = cli(capsys, sessions_root, "package", "base", "--limit", "2099-01-01T00:00:00Z")
    assert code == 0 and "already past" not in out


@pytest.mark.parametrize("args", [
    ["report", "base", "--no-charts", "--out", "{tmp}/r-" + TOKEN + ".md"],
    ["export", "base", "--format", "csv", "--out", "{tmp}/e-" + TOKEN + ".csv"],
    ["compare", "base", "base", "--html", "--out", "{tmp}/c-" + TOKEN + ".html"],
    ["manifest", "base", "--deliverables", "{tmp}/d-" + TOKEN],
    ["validate", "--corpus", "{tmp}/c.jsonl", "--predictions", "{tmp}/p-" + TOKEN + ".jsonl"],
], ids=["report", "export", "compare", "manifest", "validate"])
def test_h46_a_secret_in_a_file_name_is_refused_and_never_echoed(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, tmp_path: Path, args: list[str],
) -> None:
    """A token in an ``--out`` / ``--deliverables`` name is refused naming the option, before
    anything is written: no file holds it in its name, no line echoes it."""
    where = tmp_path / "out"
    where.mkdir()
    (where / f"d-{TOKEN}").mkdir()
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, *(a.replace("{tmp}", str(where)) for a in args))
    assert code == 2, out + err
    line = one_line(err)
    assert TOKEN not in out + err and "ghp_abc" not in out + err
    assert "GitHub token" in line, line
    assert line.split(": ")[2] == next(a for a in args if a in ("--out", "--deliverables", "--predictions")), line
    assert digest(base) == before
    assert [p.name for p in where.iterdir()] == [f"d-{TOKEN}"]  # nothing written beside it


def test_h46_a_secret_in_the_sessions_folder_name_is_refused_never_echoed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--sessions-dir`` or ``$GPUSESSION_HOME`` naming a folder with a token: every command
    would print it (``created session … in …``) and the caches would keep it: refused."""
    folder = tmp_path / TOKEN
    folder.mkdir()
    code, out, err = cli(capsys, folder, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    assert code == 2 and "--sessions-dir" in one_line(err) and TOKEN not in out + err, out + err
    monkeypatch.setenv("GPUSESSION_HOME", str(folder))
    from gpusession.cli import main

    code = main(["show", "s1"])
    out, err = capsys.readouterr()
    assert code == 2 and "GPUSESSION_HOME" in err and TOKEN not in out + err, out + err
    assert list(folder.iterdir()) == []  # nothing made there
