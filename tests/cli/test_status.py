"""``gpusession status``, the end-of-package warnings and ``summary.json`` (issue 14)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import SESSION_START, cli

from gpusession.core.package import Package

END = SESSION_START + timedelta(days=7)


@pytest.mark.parametrize(
    ("before_end", "verified", "plain", "tmux"),
    [
        (timedelta(hours=25), False, None, None),
        (timedelta(hours=23), False, "WARNING: less than 24 h left, copy home not verified (gpusession pull)",
         "<24h left, copy not verified"),
        (timedelta(hours=1), False, "WARNING: less than 2 h left, copy home not verified (gpusession pull)",
         "<2h left, copy not verified"),
        (timedelta(hours=1), True, None, None),
        (-timedelta(minutes=5), False, "WARNING: package ended, copy home not verified", "package ended"),
        (-timedelta(minutes=5), True, "WARNING: package ended ·", "package ended"),
    ],
)
def test_status_warnings_on_a_fake_clock(session, before_end: timedelta, verified: bool,
                                         plain: str | None, tmux: str | None) -> None:
    from gpusession.core.checklist import set_done
    from gpusession.core.status import session_status
    from gpusession.testing import FakeClock

    if verified:
        set_done(session, "g8.verify-copy", True)
    clock = FakeClock(END - before_end)
    st = session_status(session.folder, now=clock())
    line, bar = st.line(), st.tmux()
    if plain is None:
        assert "WARNING" not in line and "#[" not in bar
    else:
        assert line.startswith(plain)
        assert tmux is not None and f"#[fg=colour231,bg=colour160,bold] {tmux} #[default]" in bar
    assert "visuals-test-01" in line and "0 runs" in line and "0 accepted corpora" in line
    if before_end > timedelta(0):
        assert ("23h 00m left" if before_end == timedelta(hours=23) else "left") in line
    else:
        assert "ended 5m ago" in line
    assert ("copy home verified" if verified else "copy home not verified") in line


def test_status_cli_line_without_name_is_most_recent(sessions_root: Path, new_session,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.clock import utcnow

    new_session("older", package=Package(gpu_model="RTX A5000", lots=1, days=3,
                                         start=SESSION_START - timedelta(days=60)))
    new_session("recent", package=Package(gpu_model="RTX A5000", lots=1, days=3,
                                          start=utcnow() - timedelta(days=3) + timedelta(hours=1, minutes=30)))
    for f in (sessions_root / "older").iterdir():
        os.utime(f, (1, 1))
    code, out, _ = cli(capsys, sessions_root, "status")
    assert code == 0
    assert out.startswith("WARNING: less than 2 h left, copy home not verified")
    assert re.search(r"· recent · 1h (29|30)m left · 0 runs", out)  # read by the real clock
    code, out, _ = cli(capsys, sessions_root, "status", "older", "--format", "tmux")
    assert out.startswith("#[fg=colour231,bg=colour160,bold] package ended #[default] older ended ")
    code, out, err = cli(capsys, sessions_root, "status", "nope")
    assert code == 2 and "no session 'nope'" in err


def test_status_show_warns_too(sessions_root: Path, new_session, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.clock import utcnow

    new_session("s1", package=Package(gpu_model="RTX A5000", lots=1, days=3,
                                      start=utcnow() - timedelta(days=3) + timedelta(hours=20)))
    code, out, _ = cli(capsys, sessions_root, "show", "s1")
    assert code == 0
    assert "copy home not verified" in out
    assert "WARNING   less than 24 h left, copy home not verified (gpusession pull)" in out
    shown = json.loads(cli(capsys, sessions_root, "show", "s1", "--json")[1])
    assert shown["copy_home_verified"] is False
    assert shown["warning"] == "less than 24 h left, copy home not verified (gpusession pull)"


def test_status_imports_no_polars_torch_textual_and_dispatches_early(session, sessions_root: Path) -> None:
    code = (
        "import sys; from gpusession.cli import main; "
        f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'status', '--format', 'tmux']); "
        "heavy = [m for m in ('polars', 'torch', 'textual', 'psutil', 'gpusession.commands.run_cmds') "
        "if m in sys.modules]; print('HEAVY', heavy, rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY [] 0" in done.stdout, done.stdout + done.stderr


def test_status_summary_json_follows_appended_rows(measured_session) -> None:
    from gpusession.core.results import ResultsFile
    from gpusession.core.status import current_counts, refresh_counts
    from gpusession.core.summary import accepted_unique_corpora

    s = measured_session
    frame = s.results.read()
    first = refresh_counts(s.folder)
    assert first.rows == frame.height
    assert first.accepted_unique_corpora == accepted_unique_corpora(frame)
    doc = json.loads((s.folder / "summary.json").read_text())
    assert doc["rows"] == frame.height and doc["csv_size_bytes"] == (s.folder / "resultats-bruts.csv").stat().st_size
    # a row with a note that holds a line break and a comma, appended after the summary
    row = frame.row(0, named=True) | {"notes": "two\nlines, quoted", "corpus_revision": "newrev",
                                      "corpus_accepted": True}
    ResultsFile(s.folder / "resultats-bruts.csv").append(row)
    now = current_counts(s.folder)  # reads only the appended bytes
    assert now.rows == frame.height + 1
    assert now.accepted_unique_corpora == first.accepted_unique_corpora + 1
    (s.folder / "summary.json").unlink()
    assert current_counts(s.folder) == now  # rebuilt from the whole file


def test_status_sessions_root_same_as_the_session_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from gpusession.core import session, status

    assert status.ENV_HOME == session.ENV_HOME
    monkeypatch.setenv(session.ENV_HOME, str(tmp_path / "h"))
    assert status.sessions_root_light(None) == session.sessions_root(None)
    assert status.sessions_root_light("x") == session.sessions_root("x")
    monkeypatch.delenv(session.ENV_HOME)
    assert status.sessions_root_light(None) == session.sessions_root(None)


def test_status_counts_follow_validate_session(run_cli, sessions_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\n" + "".join(f"v{i},{'a' if i % 2 else 'b'}\n" for i in range(6)))
    out = tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps({"id": f"v{i}", "label": "a" if i % 2 else "b"}) + "\n" for i in range(6)))
    for _ in range(2):
        assert run_cli("validate", "--corpus", str(corpus), "--output", str(out), "--classes", "a,b",
                       "--session", "vis").returncode == 0
    doc = json.loads((sessions_root / "vis" / "summary.json").read_text())
    assert doc["rows"] == 2 and len(doc["accepted_revisions"]) == 1
    line = run_cli("status", "vis").stdout
    assert "vis · " in line and " · 2 runs · 1 accepted corpus · copy home not verified" in line
