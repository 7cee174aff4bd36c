"""``status``'s forms: its fast word reader agrees with the full parser, ``--json`` gives
the tmux line's fields, ``--verbose`` names the session's folder, and the tmux path
starts without argparse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

from gpusession.commands.status_cmd import parse_fast

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

READ_FAST = [
    [],
    ["demo"],
    ["--format", "tmux"],
    ["--format=tmux", "demo"],
    ["demo", "--format", "plain", "--verbose"],
    ["-v", "--format", "tmux", "demo"],
    ["--json"],
    ["--json", "-v", "demo"],
    ["--sessions-dir", "/tmp/x y", "demo"],
    ["--sessions-dir=/tmp/z", "--format", "tmux"],
]
LEFT_TO_THE_FULL_PARSER = [
    ["--help"],
    ["-h"],
    ["--format", "html"],
    ["--format"],
    ["--format", "tmux", "--json"],
    ["a", "b"],
    ["--bogus"],
    ["--format", "tmux", "--format", "plain"],
    ["--sessions-dir"],
    ["--json", "--json"],
]


def _full(words: list[str]) -> dict[str, object]:
    from gpusession.cli import build_parser

    ns = vars(build_parser().parse_args(["status", *words]))
    return {k: ns.get(k) for k in ("name", "format", "json", "verbose", "sessions_dir")}


@pytest.mark.parametrize("words", READ_FAST, ids=" ".join)
def test_the_fast_reader_of_status_words_agrees_with_the_full_parser(words: list[str]) -> None:
    fast = parse_fast(words)
    assert fast is not None
    assert vars(fast) == _full(words)


@pytest.mark.parametrize("words", LEFT_TO_THE_FULL_PARSER, ids=" ".join)
def test_the_fast_reader_leaves_help_and_mistakes_to_the_full_parser(words: list[str]) -> None:
    assert parse_fast(words) is None


def test_a_mistake_in_status_words_is_one_line_from_the_full_parser(
        session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(capsys, sessions_root, "status", "--format", "html")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "invalid choice" in err


def test_status_json_has_the_tmux_line_fields(session, sessions_root: Path,  # type: ignore[no-untyped-def]
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, tmux, _ = cli(capsys, sessions_root, "status", session.name, "--format", "tmux")
    assert code == 0
    code, out, err = cli(capsys, sessions_root, "status", session.name, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["name"] == session.name
    assert f" {doc['result_rows']}r " in tmux and f" {doc['accepted_corpora']}acc" in tmux
    assert doc["time_left"] in tmux
    assert doc["copy_home_verified"] is False and "copy not verified" in tmux
    assert doc["unfinished_runs"] == 0 and doc["past_session_limit"] is False
    assert doc["folder"] == str((sessions_root / session.name).absolute())
    assert doc["sessions_dir"] == str(sessions_root.absolute())
    assert {"package", "time_left_s", "session_limit", "stop_by", "warning", "warning_level"} <= doc.keys()


def test_status_tmux_verbose_names_the_sessions_folder(session, sessions_root: Path,  # type: ignore[no-untyped-def]
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    _, short, _ = cli(capsys, sessions_root, "status", "--format", "tmux")
    code, out, _ = cli(capsys, sessions_root, "status", "--format", "tmux", "--verbose")
    assert code == 0 and out.strip() == f"{short.strip()} [{sessions_root / session.name}]"
    code, out, _ = cli(capsys, sessions_root, "status", "nosuch", "--format", "tmux", "-v")
    assert code == 0 and out.strip() == f"gpusession: no session [{sessions_root}]"


def test_status_help_says_how_to_pin_the_sessions_folder_in_tmux_conf(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, sessions_root, "status", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "status-right '#(gpusession status --format tmux --sessions-dir ~/sessions)'" in flat
    assert "--verbose" in flat


def test_status_tmux_starts_without_argparse(session, sessions_root: Path) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import sys; from gpusession.cli import main; "
        f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'status', '--format', 'tmux']); "
        "print('LOADED', [m for m in ('argparse', 'gpusession.commands.parser') if m in sys.modules], rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "LOADED [] 0" in done.stdout, done.stdout + done.stderr
