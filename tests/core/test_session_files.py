"""The session's files: modes set explicitly, no write through a
link, leftover temporary files removed on open, honest messages on a failed first write,
session names that cannot collide; manifest on a link loop, control characters in names."""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.files import tomlio
from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import write_private_bytes
from gpusession.core.folder.session import Session, validate_name
from gpusession.core.records.results import ResultRow


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)  # the worst umask: every file would be world-writable if left to it
    try:
        yield
    finally:
        os.umask(old)


# -- modes ---------------------------------------------------------------------------------
def test_session_folder_0700_and_every_file_0600_whatever_the_umask(
    sessions_root: Path, open_umask: None
) -> None:
    s = Session.create(sessions_root, "t")
    s.journal("note_added", text="order note and amount")
    s.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1))
    s.write_doc("order.toml", {"events": []})
    s.update(lambda d: d.__setitem__("x", 1))
    s.folder.joinpath("resultats-bruts.csv").open("ab").write(b"cut")  # a crash mid-row
    reopened = Session.open(sessions_root, "t")
    assert reopened.recovered  # the cut row was moved to a .partial file
    write_private_bytes(s.folder / "spec.json", b"{}")
    assert _mode(s.folder) == 0o700
    files = [p for p in s.folder.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"session.toml", "checklist.toml", "order.toml",
                                       "journal.jsonl", "resultats-bruts.csv", "spec.json"}
    assert any(p.name.startswith("resultats-bruts.csv.partial-") for p in files)
    assert {p.name: oct(_mode(p)) for p in files} == {p.name: oct(0o600) for p in files}


def test_an_older_session_gets_0700_and_0600_on_its_next_open_and_write(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t")
    os.chmod(s.journal_path, 0o644)
    os.chmod(s.folder, 0o755)
    s.journal("note_added", text="x")
    assert _mode(s.journal_path) == 0o600
    Session.open(sessions_root, "t")
    assert _mode(s.folder) == 0o700


# -- no write through a link -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["journal.jsonl", "resultats-bruts.csv"])
def test_an_append_never_follows_a_symlink(sessions_root: Path, tmp_path: Path, name: str) -> None:
    s = Session.create(sessions_root, "t")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("someone else's file\n")
    target = s.folder / name
    target.unlink(missing_ok=True)
    target.symlink_to(elsewhere)
    with pytest.raises(BadInput) as info:
        if name == "journal.jsonl":
            s.journal("note_added", text="x")
        else:
            s.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1))
    msg = info.value.render()
    assert name in msg and "symbolic link" in msg and "\n" not in msg
    assert elsewhere.read_text() == "someone else's file\n"


def test_a_symlinked_journal_gives_one_line_and_exit_2(
    sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = Session.create(sessions_root, "t")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("")
    s.journal_path.unlink()
    s.journal_path.symlink_to(elsewhere)
    code, _out, err = cli(capsys, sessions_root, "checklist", "t", "add", "3", "buy a cable")
    assert code == 2
    line = one_line(err)
    assert "journal.jsonl" in line and "symbolic link" in line
    assert elsewhere.read_text() == ""


def test_a_worker_spec_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep")
    spec = tmp_path / ".worker-warm.json"
    spec.symlink_to(elsewhere)
    with pytest.raises(BadInput, match="symbolic link"):
        write_private_bytes(spec, b"{}")
    assert elsewhere.read_text() == "keep"


def test_temporary_files_have_unpredictable_names_in_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        seen.append(src)
        real_replace(src, dst)

    monkeypatch.setattr(tomlio.os, "replace", replace)
    for _ in range(2):
        tomlio.write_toml(tmp_path / "a.toml", {"k": 1})
    assert len(set(seen)) == 2
    assert all(Path(p).parent == tmp_path and Path(p).name.startswith(".a.toml.") for p in seen)


# -- leftover temporary files, honest messages -----------------------------------------------------
def test_s7_leftover_temporary_files_are_removed_when_the_session_opens(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t")
    (s.folder / "runs" / "e").mkdir(parents=True)
    left = [s.folder / ".session.toml.k2j4h1x0.tmp", s.folder / "runs" / "e" / ".warm-1.toml.a8d0q1zz.tmp"]
    for p in left:
        p.write_text("half a TOML")
        past = time.time() - 60
        os.utime(p, (past, past))
    mine = s.folder / "my-notes.tmp"  # not one of gpusession's: kept
    mine.write_text("mine")
    before = s.session_toml.read_bytes()
    reopened = Session.open(sessions_root, "t")
    assert not any(p.exists() for p in left) and mine.exists()
    said = [r for r in reopened.recovered if "temporary file" in r]
    assert len(said) == 1 and "2 temporary file(s)" in said[0]
    assert s.session_toml.read_bytes() == before
    assert Session.open(sessions_root, "t").recovered == []  # said once


def test_s7_a_temporary_file_being_written_is_left_alone(sessions_root: Path) -> None:
    import fcntl

    s = Session.create(sessions_root, "t")
    busy = s.folder / ".order.toml.zz81kd02.tmp"
    fd = os.open(busy, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as write_atomic_bytes holds it
        past = time.time() - 60
        os.utime(busy, (past, past))
        Session.open(sessions_root, "t")
        assert busy.exists()
    finally:
        os.close(fd)


def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tomlio.os, "fsync", fsync)


def test_a_failed_first_write_does_not_claim_a_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _disk_full(monkeypatch)
    with pytest.raises(OSError) as info:
        tomlio.write_toml(tmp_path / "new.toml", {"k": 1})
    assert "intact" not in str(info.value) and "no previous file" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_s7_a_failed_rewrite_says_the_previous_file_is_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tomlio.write_toml(tmp_path / "old.toml", {"k": 1})
    _disk_full(monkeypatch)
    with pytest.raises(OSError, match="the previous file is intact"):
        tomlio.write_toml(tmp_path / "old.toml", {"k": 2})
    monkeypatch.undo()
    assert tomlio.read_toml(tmp_path / "old.toml")["k"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["old.toml"]


# -- session names -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["trail\n", "trail\r", "\ntrail", "tr\nail"])
def test_a_name_with_a_newline_is_refused(name: str) -> None:
    with pytest.raises(BadInput, match="session name"):
        validate_name(name)


def test_a_name_differing_only_by_case_is_refused(sessions_root: Path) -> None:
    Session.create(sessions_root, "trial")
    with pytest.raises(BadInput, match="differs only by case from the existing session 'trial'"):
        Session.create(sessions_root, "Trial")
    assert [p.name for p in sessions_root.iterdir()] == ["trial"]
    other = Session.create(sessions_root, "other")
    with pytest.raises(BadInput, match="differs only by case"):
        other.rename("TRIAL")
    renamed = Session.open(sessions_root, "trial").rename("Trial")  # its own case: allowed
    assert renamed.name == "Trial" and renamed.data["name"] == "Trial"


# -- manifest --------------------------------------------------------------------------------------
def test_manifest_on_a_symlink_loop_says_so_in_one_line(
    sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Session.create(sessions_root, "t")
    d = tmp_path / "deliverables"
    d.mkdir()
    (d / "report.md").write_text("ok")
    (d / "loop1").symlink_to("loop2")
    (d / "loop2").symlink_to("loop1")
    code, out, err = cli(capsys, sessions_root, "manifest", "t", "--deliverables", str(d))
    assert code == 0, err
    assert "Traceback" not in out + err
    assert "  skipped loop1: symlink loop" in out and "1 file(s)" in out
    selfloop = tmp_path / "selfloop"
    selfloop.symlink_to("selfloop")
    code, _out, err = cli(capsys, sessions_root, "manifest", "t", "--deliverables", str(selfloop))
    assert code == 2 and "not a folder" in one_line(err)


def test_verify_copy_escapes_a_newline_in_a_name(
    sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Session.create(sessions_root, "t")
    d = tmp_path / "deliverables"
    d.mkdir()
    (d / "bad\nname.txt").write_text("x")
    (d / "ok.txt").write_text("y")
    manifest = tmp_path / "m.csv"
    code, _out, err = cli(capsys, sessions_root, "manifest", "t", "--deliverables", str(d),
                          "--out", str(manifest))
    assert code == 0, err
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "ok.txt").write_text("y")
    (copy / "extra\nfile").write_text("z")
    code, out, _err = cli(capsys, sessions_root, "verify-copy", str(manifest), str(copy))
    assert code == 3
    assert "  MISSING  bad\\x0aname.txt" in out and "  EXTRA    extra\\x0afile" in out
    assert all(line.startswith(("  ", "1/2", "copy", "Open")) for line in out.splitlines())


def test_a_new_sessions_root_is_0700_and_the_remembered_folder_file_0600_whatever_the_umask(
        tmp_path: Path, open_umask: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``umask 000`` another user could rename a session and plant a fake one."""
    from gpusession.core.folder.root import remember_sessions_dir, state_file

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "new-root"
    Session.create(root, "t")
    assert _mode(root) == 0o700
    remember_sessions_dir(root)
    assert state_file().read_text(encoding="utf-8") == f"{root}\n"
    assert _mode(state_file()) == 0o600 and _mode(state_file().parent) == 0o700


def test_files_another_writer_left_under_a_session_folder_are_brought_to_0700_and_0600(
        tmp_path: Path) -> None:
    """A training subprocess or a splitter writes with its umask (0755/0644); a link is never followed."""
    from gpusession.core.files.safefile import make_tree_private

    tree = tmp_path / "s" / "models"
    (tree / "sub").mkdir(parents=True, mode=0o755)
    (tree / "sub" / "model.pt").write_bytes(b"w")
    os.chmod(tree / "sub" / "model.pt", 0o644)
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs")
    os.chmod(outside, 0o644)
    (tree / "link").symlink_to(outside)
    os.chmod(tree, 0o755)
    assert make_tree_private(tree) == 3
    assert [_mode(tree), _mode(tree / "sub"), _mode(tree / "sub" / "model.pt")] == [0o700, 0o700, 0o600]
    assert _mode(outside) == 0o644 and (tree / "link").is_symlink()
    assert make_tree_private(tree / "link") == 0 and make_tree_private(tmp_path / "none") == 0
