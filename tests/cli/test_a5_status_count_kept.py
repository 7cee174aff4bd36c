"""``status`` says the count ``cost`` says after commands that do not change it (A5, S10, H-47).

The count of deliverables ``status`` says is the one ``approve``, ``cost`` and a run's end
keep (``count-cache.json``); a command that writes the session without changing the count
keeps it holding, and one that finds it not holding (a copy home: the server's cache, sealed
under another user's key) counts and keeps it. ``status`` itself never counts: the recounts
are counted through the count's one walk of the deliverables (``file_states``).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session
from gpusession.core.money import count as count_module
from gpusession.core.money.count_cache import CACHE_FILE

pytestmark = pytest.mark.calendar


@pytest.fixture
def recounts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times the deliverables were counted (each count walks them once)."""
    got = {"n": 0}
    real = count_module.file_states

    def walk(*a: object, **k: object) -> object:
        got["n"] += 1
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(count_module, "file_states", walk)
    return got


def _ok(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> str:
    code, out, err = cli(capsys, root, *args)
    assert code == 0, f"{args}: exit {code}\n{out}\n{err}"
    return out


def _charts(capsys: pytest.CaptureFixture[str], s: Session, tmp_path: Path, *, unit: bool = True) -> Path:
    """Three chart files, two approved (``--unit chart`` first when ``unit``); the folder."""
    out = tmp_path / "charts-out"
    out.mkdir()
    for i in (1, 2, 3):
        (out / f"chart-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
    root = s.folder.parent
    if unit:
        _ok(capsys, root, "package", s.name, "--unit", "chart")
    _ok(capsys, root, "approve", s.name, str(out / "chart-1.png"), str(out / "chart-2.png"), "--by", "Ana Reviewer")
    return out


def _copied(out: Path) -> Path:
    """The approved charts copied home (the manifest lists them only), times kept."""
    copy = out.parent / "charts-copy"
    copy.mkdir(exist_ok=True)
    for name in ("chart-1.png", "chart-2.png"):
        shutil.copy2(out / name, copy / name)
    return copy


def _said(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> tuple[str, dict[str, object]]:
    """``status --format tmux`` and ``status --json``'s ``deliverables``."""
    tmux = _ok(capsys, root, "status", name, "--format", "tmux")
    return tmux, json.loads(_ok(capsys, root, "status", name, "--json"))["deliverables"]


def _cost(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> dict[str, object]:
    return json.loads(_ok(capsys, root, "cost", name, "--json"))["deliverables"]


def _command(name: str, s: Session, out: Path) -> list[str]:
    """The arguments of each command that writes the session (or beside it) without changing its count."""
    return {
        "manifest": ["manifest", s.name, "--force"],
        "verify-copy": ["verify-copy", str(s.folder / "manifest.csv"), str(_copied(out))],
        "report": ["report", s.name, "--no-charts", "--force"],
        "show": ["show", s.name],
        "checklist-done": ["checklist", s.name, "done", "g1.approver"],
        "checklist-note": ["checklist", s.name, "note", "g8.decision", "keep batch 8"],
        "experiment-define": ["experiment", s.name, "define", "--id", "later", "--workload", "command",
                              "--values", "1", "--command", f"{sys.executable} -c pass"],
        "rates-set": ["rates", "set", "RTX A5000", "--days", "7", "--price", "60"],
        "package-lots": ["package", s.name, "--lots", "1"],
        "deliverables": ["deliverables", s.name],
    }[name]


@pytest.mark.parametrize("command", ["manifest", "verify-copy", "report", "show", "checklist-done",
                                     "checklist-note", "experiment-define", "rates-set", "package-lots",
                                     "deliverables"])
def test_a5_s10_status_keeps_the_count_after_a_command_that_does_not_change_it(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, recounts: dict[str, int],
        command: str) -> None:
    root = session.folder.parent
    out = _charts(capsys, session, tmp_path)
    _ok(capsys, root, "manifest", session.name)  # verify-copy's manifest
    _ok(capsys, root, *_command(command, session, out))
    recounts["n"] = 0
    tmux, said = _said(capsys, root, session.name)
    assert recounts["n"] == 0  # status counts nothing
    assert " 2 charts " in tmux and "?" not in tmux, tmux
    cost = _cost(capsys, root, session.name)
    assert (said["count"], said["unit"], said["source"], said["stale"]) == (
        cost["count"], cost["unit"], cost["source"], False) == (2, "chart", "approved", False)
    assert said["words"] == cost["words"] == "2 approved charts"


def _home_copy(session: Session, out: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    """The session and its deliverables copied as rsync -a copies them, read by another user (its own key)."""
    shutil.copytree(session.folder, home / session.name, symlinks=True)  # times kept, change times new
    monkeypatch.setenv("XDG_STATE_HOME", str(home.parent / "home-state"))  # the seal key of the home machine
    return Session.open(home, session.name, recover=False)


def test_s10_a_copy_home_says_the_count_after_verify_copy_without_cost(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, recounts: dict[str, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = _charts(capsys, session, tmp_path)
    _ok(capsys, session.folder.parent, "manifest", session.name)
    home = tmp_path / "home" / "sessions"
    home.mkdir(parents=True)
    copy = _home_copy(session, out, home, monkeypatch)
    tmux, said = _said(capsys, home, copy.name)
    assert " ? charts " in tmux and said["count"] is None, tmux  # the server's cache: another key
    _ok(capsys, home, "verify-copy", str(copy.folder / "manifest.csv"), str(_copied(out)))
    recounts["n"] = 0
    tmux, said = _said(capsys, home, copy.name)
    assert recounts["n"] == 0
    assert " 2 charts " in tmux, tmux
    assert (said["count"], said["unit"], said["words"]) == (2, "chart", _cost(capsys, home, copy.name)["words"])
    recounts["n"] = 0
    _ok(capsys, home, "verify-copy", str(copy.folder / "manifest.csv"), str(_copied(out)))
    assert recounts["n"] == 0  # the count kept holds: verify-copy again counts nothing


def test_s10_a_session_with_approvals_never_counted_here_says_deliverables_not_accepted_corpora(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, recounts: dict[str, int]) -> None:
    root = session.folder.parent
    _charts(capsys, session, tmp_path, unit=False)
    (session.folder / CACHE_FILE).unlink()  # never counted here (a copy, a cache of another user)
    recounts["n"] = 0
    tmux, said = _said(capsys, root, session.name)
    assert recounts["n"] == 0
    assert "acc" not in tmux and " ? deliverables " in tmux, tmux
    assert (said["count"], said["unit"], said["unit_plural"]) == (None, "deliverable", "deliverables")
    assert "corp" not in _ok(capsys, root, "status", session.name)
    cost = _cost(capsys, root, session.name)  # counts and keeps it
    tmux, said = _said(capsys, root, session.name)
    assert " 2 deliverables " in tmux, tmux
    assert (said["count"], said["unit"], said["words"]) == (cost["count"], cost["unit"], cost["words"]) == (
        2, "deliverable", "2 approved deliverables")


def test_h47_a_count_of_the_corpora_kept_before_the_approvals_is_never_said_after_them(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path) -> None:
    """A sealed cache of the accepted corpora put back by hand beside approvals: ``? deliverables``."""
    root = session.folder.parent
    _ok(capsys, root, "cost", session.name)  # counted before any approval: the corpora
    before = (session.folder / CACHE_FILE).read_bytes()
    assert json.loads(before)["source"] == "corpora"
    _charts(capsys, session, tmp_path, unit=False)
    (session.folder / CACHE_FILE).write_bytes(before)
    tmux, said = _said(capsys, root, session.name)
    assert "acc" not in tmux and " ? deliverables " in tmux, tmux
    assert said["count"] is None and said["unit"] == "deliverable"


HandEdit = Callable[[Path, Path], None]


def _unapprove(folder: Path, out: Path) -> None:
    text = (folder / "approvals.toml").read_text("utf-8")
    (folder / "approvals.toml").write_text(text.replace('decision = "approved"', 'decision = "rejected"', 1), "utf-8")


def _rewrite_chart(folder: Path, out: Path) -> None:
    (out / "chart-1.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x09")


@pytest.mark.parametrize("edit", [_unapprove, _rewrite_chart], ids=["approvals-toml", "deliverable"])
def test_h47_a_hand_edit_after_the_kept_count_is_still_seen_by_status(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, edit: HandEdit) -> None:
    root = session.folder.parent
    out = _charts(capsys, session, tmp_path)
    _ok(capsys, root, "manifest", session.name)
    _ok(capsys, root, "verify-copy", str(session.folder / "manifest.csv"), str(_copied(out)))
    assert " 2 charts " in _said(capsys, root, session.name)[0]
    edit(session.folder, out)
    tmux, said = _said(capsys, root, session.name)
    assert " ? charts " in tmux and said["stale"] is True and said["count"] is None, tmux
    assert _cost(capsys, root, session.name)["count"] == 1
    assert " 1 chart " in _said(capsys, root, session.name)[0]


@pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed (apt-get install rsync)")
def test_s10_a_pull_into_a_copy_home_keeps_the_count_status_says(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, recounts: dict[str, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = _charts(capsys, session, tmp_path)
    root = session.folder.parent
    _ok(capsys, root, "manifest", session.name)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home-state"))  # another machine's seal key
    home = tmp_path / "home"
    _ok(capsys, root, "pull", str(session.folder), "--deliverables", str(out), "--to", str(home))
    recounts["n"] = 0
    tmux, said = _said(capsys, home, session.name)
    assert recounts["n"] == 0
    assert " 2 charts " in tmux, tmux
    assert (said["count"], said["unit"], said["words"]) == (2, "chart", _cost(capsys, home, session.name)["words"])
