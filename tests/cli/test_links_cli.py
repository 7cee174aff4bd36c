"""Links through the CLI: outputs never replace a session's files,
nothing is written through a linked folder, a linked session folder is never a session.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.commands.run_cmds import run_detached
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.session import Session

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _session_files(s: Session) -> list[Path]:
    """Files of a session that `report --out … --force` must never replace."""
    made = {
        s.runs_dir / "c1" / "batch-1" / "warm-1.jsonl": '{"id": "a", "label": "x"}\n',
        s.validation_dir / "c1" / "batch-1" / "warm-1.toml": "schema = 1\n",
        s.folder / "corpus.jsonl": '{"id": "a", "text": "t"}\n',
        s.folder / "summary.json": "{}\n",
    }
    for p, text in made.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return list(made)


@pytest.mark.parametrize("command", ["report", "manifest"])
def test_out_with_force_never_replaces_a_session_file(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    deliv = tmp_path / "deliverables"
    deliv.mkdir()
    (deliv / "a.txt").write_text("a")
    extra = ["--deliverables", str(deliv)] if command == "manifest" else []
    for path in _session_files(session):
        before = _sha(path)
        code, _, err = cli(capsys, sessions_root, command, session.name, *extra, "--out", str(path), "--force")
        assert code == 2, err
        assert str(path) in one_line(err) and "never replaces" in err
        assert _sha(path) == before


def test_out_through_a_link_into_the_session_is_refused(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _session_files(session)[2]
    link = tmp_path / "report.md"
    link.symlink_to(corpus)
    before = _sha(corpus)
    code, _, err = cli(capsys, sessions_root, "report", session.name, "--out", str(link), "--force")
    assert code == 2 and str(corpus) in err and "never replaces" in err
    assert _sha(corpus) == before


def test_report_force_still_replaces_its_own_report(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = session.folder / "report.md"
    report.write_text("old report\n")
    code, _, err = cli(capsys, sessions_root, "report", session.name, "--out", str(report), "--force")
    assert code == 0, err
    assert report.read_text() != "old report\n"


def test_validate_session_refuses_a_linked_validation_folder(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\nv1,a\nv2,b\n")
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"id": "v1", "label": "a"}) + "\n" + json.dumps({"id": "v2", "label": "b"}) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    session.validation_dir.symlink_to(elsewhere, target_is_directory=True)
    code, _, err = cli(capsys, sessions_root, "validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(out),
                       "--classes", "a,b", "--session", session.name)
    assert code == 2 and f"{session.validation_dir}: is a symbolic link" in one_line(err)
    assert list(elsewhere.iterdir()) == []


def test_validate_session_archive_is_private(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\nv1,a\nv2,b\n")
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"id": "v1", "label": "a"}) + "\n" + json.dumps({"id": "v2", "label": "b"}) + "\n")
    code, _, err = cli(capsys, sessions_root, "validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(out),
                       "--classes", "a,b", "--session", session.name, "--name", "v")
    assert code == 0, err
    assert os.stat(session.validation_dir).st_mode & 0o777 == 0o700
    kept = session.validation_dir / "v.output.jsonl"
    assert kept.read_bytes() == out.read_bytes() and kept.stat().st_mode & 0o777 == 0o600


def test_detach_refuses_a_linked_logs_folder(session: Session, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (session.folder / "logs").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BadInput, match="logs: is a symbolic link"):
        run_detached(session, "nothing-started")
    assert list(elsewhere.iterdir()) == []


def test_new_and_list_with_a_linked_session_folder(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (sessions_root / "linked").symlink_to(elsewhere, target_is_directory=True)
    code, _, err = cli(capsys, sessions_root, "new", "linked")
    line = one_line(err)
    assert code == 2 and "linked" in line and str(elsewhere) in line and "symbolic link" in line
    assert list(elsewhere.iterdir()) == []
    (sessions_root / "twin").symlink_to(session.folder, target_is_directory=True)
    code, out, err = cli(capsys, sessions_root, "list")
    assert code == 0, err
    twin = next(line for line in out.splitlines() if line.startswith("twin"))
    assert "(link, not opened)" in twin and str(session.folder) in twin
    code, _, err = cli(capsys, sessions_root, "show", "twin")
    assert code == 2 and "symbolic link" in err


def test_status_never_reads_a_linked_session_folder(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (sessions_root / "twin").symlink_to(session.folder, target_is_directory=True)
    os.utime(session.folder / "session.toml")  # the link's target is the newest session
    code, _, err = cli(capsys, sessions_root, "status", "twin")
    assert code == 2 and "symbolic link" in one_line(err) and "twin" in err  # as `show` says
    code, out, err = cli(capsys, sessions_root, "status")  # the newest session is the real one
    assert code == 0 and out.startswith(session.name) and "twin" not in out, err


def test_new_over_a_plain_file_says_it_is_a_file(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sessions_root.mkdir(exist_ok=True)
    (sessions_root / "afile").write_text("kept\n")
    code, _, err = cli(capsys, sessions_root, "new", "afile")
    assert code == 2 and "is not a folder" in one_line(err) and "already exists" not in err
    assert (sessions_root / "afile").read_text() == "kept\n"


def test_report_chart_never_drawn_through_a_link(
        measured_session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link planted at ``report-durations.png`` is refused and said; its target is kept."""
    import sys
    import types
    from unittest import mock

    from gpusession.core.retrieval.report import write_report

    def subplots(*a: object, **k: object) -> tuple[object, object]:
        fig = mock.MagicMock()
        fig.savefig.side_effect = lambda p, **kw: Path(p).write_bytes(b"\x89PNG\r\n\x1a\n")
        return fig, mock.MagicMock()

    pyplot = types.ModuleType("matplotlib.pyplot")
    pyplot.subplots = subplots  # type: ignore[attr-defined]
    pyplot.close = lambda fig: None  # type: ignore[attr-defined]
    mpl = types.ModuleType("matplotlib")
    mpl.use = lambda backend: None  # type: ignore[attr-defined]
    mpl.pyplot = pyplot  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    target = tmp_path / "precious.png"
    target.write_bytes(b"precious")
    (measured_session.folder / "report-durations.png").symlink_to(target)
    res = write_report(measured_session, force=True)
    assert target.read_bytes() == b"precious"
    assert res.charts_note is not None and "report-durations.png: is a symbolic link" in res.charts_note


@pytest.mark.parametrize("own", ["resultats-bruts.csv", "journal.jsonl"])
@pytest.mark.parametrize("kind", ["link", "fifo", "folder"])
def test_status_and_show_refuse_a_linked_or_fifo_session_file_alike(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        own: str, kind: str) -> None:
    path = session.folder / own
    path.unlink(missing_ok=True)
    if kind == "link":
        outside = tmp_path / "outside.csv"
        outside.write_text("root:x:0:0\n")
        path.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(path)  # a reader would wait forever for a writer
    else:
        path.mkdir()
    lines = []
    for command in ("status", "show"):
        code, _, err = cli(capsys, sessions_root, command, session.name)
        assert code == 2, (command, err)
        lines.append(one_line(err))
    assert lines[0] == lines[1] and str(path) in lines[0]
    words = {"link": "symbolic link", "fifo": "FIFO", "folder": "is a folder, not a regular file"}
    assert words[kind] in lines[0] and "root:x" not in lines[0]
