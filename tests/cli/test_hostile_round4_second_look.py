"""What a second look at round 4 found: a nested count cache, names from disk printed by
``approve``/``deliverables``, and argparse's own refusals quoting what was typed (H-39,
H-44, H-46)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, one_line

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"


def _new(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> None:
    code, _, err = cli(capsys, root, "new", name, "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
                       "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err


def test_h39_a_count_cache_nested_past_the_parser_breaks_neither_status_nor_list(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    _new(capsys, sessions_root, "a")
    _new(capsys, sessions_root, "b")
    (sessions_root / "a" / "count-cache.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "status", "a")
    assert code == 0 and "Traceback" not in err and "a" in out
    code, out, err = cli(capsys, sessions_root, "list")
    assert code == 0 and "Traceback" not in err
    assert "a" in out and "b" in out  # one bad cache never hides the others


def test_h44_a_deliverable_named_with_a_newline_is_one_escaped_line_in_approve_and_deliverables(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    _new(capsys, sessions_root, "m")
    folder = tmp_path / "deliverables"
    folder.mkdir()
    (folder / "n\nl.png").write_bytes(b"q")
    code, out, err = cli(capsys, sessions_root, "approve", "m", str(folder / "n\nl.png"), "--by", "x")
    assert code == 0, err
    [line] = [ln for ln in out.splitlines() if ln.startswith("approved")]
    assert "n\\x0al.png" in line, out
    code, out, err = cli(capsys, sessions_root, "deliverables", "m")
    assert code == 0, err
    assert "n\\x0al.png" in out and not any(ln.startswith("l.png") for ln in out.splitlines()), out


@pytest.mark.parametrize("args", [
    ["show", "m", f"--{TOKEN}"],
    ["show", "m", "--AKIAIOSFODNN7EXAMPLE=1"],
    ["status", "m", "--format", TOKEN],
])
def test_h46_argparse_refusals_never_quote_a_secret(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, args: list[str]) -> None:
    _new(capsys, sessions_root, "m")
    code, out, err = cli(capsys, sessions_root, *args)
    assert code == 2 and one_line(err).startswith("gpusession") and ": error:" in err, err
    assert TOKEN not in err + out and "AKIAIOSFODNN7EXAMPLE" not in err + out, err
