"""Hostile world, round 6: a deliverables folder refused before a decision is recorded, the
kernel's folders never walked, and a decided path there but never read said as such
(H-80, H-81, H-82)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.folder import approvals
from gpusession.core.folder.session import Session


def _deep(folder: Path, levels: int) -> None:
    d = folder
    for i in range(levels):
        d = d / f"l{i}"
    d.mkdir(parents=True)
    (d / "leaf.txt").write_text("x")


def test_h80_approve_in_a_folder_past_the_depth_bound_records_nothing_and_names_the_bound(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    out = tmp_path / "bigdv"
    _deep(out, approvals.WALK_MAX_DEPTH + 3)
    (out / "f2.txt").write_text("two")
    code, said, err = cli(capsys, sessions_root, "approve", session.name, str(out / "f2.txt"), "--by", "Ana")
    line = one_line(err)
    assert code == 2 and f"more than {approvals.WALK_MAX_DEPTH} levels deep" in line, line
    assert "approved" not in said and "files" not in line.split("levels deep")[0].split("holds")[-1], said + line
    assert not (session.folder / "approvals.toml").exists()  # nothing recorded
    assert "deliverable" not in (session.folder / "journal.jsonl").read_text()


def test_h80_approve_in_a_folder_past_the_file_bound_records_nothing_and_names_the_bound(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for i in range(12):
        (out / f"{i}.png").write_bytes(bytes([i]))
    monkeypatch.setattr(approvals, "WALK_MAX_FILES", 10)
    code, said, err = cli(capsys, sessions_root, "approve", session.name, str(out / "0.png"), "--by", "Ana")
    line = one_line(err)
    assert code == 2 and "holds more than 10 files" in line and "levels" not in line, line
    assert "approved" not in said
    assert not (session.folder / "approvals.toml").exists()


@pytest.mark.parametrize("folder", ["/proc", "/sys/kernel", "/dev"])
def test_h81_a_kernel_folder_hand_edited_as_the_deliverables_folder_is_refused_unwalked(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session,
        monkeypatch: pytest.MonkeyPatch, folder: str) -> None:
    (session.folder / "approvals.toml").write_text(f'schema = 1\ndeliverables = "{folder}"\n[files]\n')
    walked: list[str] = []
    real_walk = os.walk

    def counting_walk(top: object, *a: object, **kw: object) -> object:
        walked.append(str(top))
        return real_walk(top, *a, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(approvals.os, "walk", counting_walk)
    for command in (["deliverables", session.name], ["cost", session.name]):
        code, _, err = cli(capsys, sessions_root, *command)
        line = one_line(err)
        assert code == 2 and "the kernel's own" in line and "nothing was walked" in line, (command, line)
    assert not any(w.startswith(folder) for w in walked), walked  # the folder was never walked


def test_h81_a_pseudo_filesystem_mounted_elsewhere_is_refused_by_its_type(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounted = tmp_path / "my proc"
    (mounted / "sub").mkdir(parents=True)
    plain = tmp_path / "out"
    plain.mkdir()
    info = tmp_path / "mountinfo"
    escaped = str(mounted).replace(" ", "\\040")
    info.write_text("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                    f"40 22 0:5 / {escaped} rw,nosuid shared:9 - proc proc rw\n"
                    f"41 22 0:6 / {tmp_path / 'cg'} rw shared:10 - cgroup2 cgroup2 rw\n")
    monkeypatch.setattr(approvals, "MOUNTINFO", info)
    session_dir = tmp_path / "sessions" / "s"
    why = approvals.unfit_folder(mounted / "sub", session_dir)
    assert why is not None and "on a proc filesystem" in why, why
    assert "on a cgroup2 filesystem" in (approvals.unfit_folder(tmp_path / "cg", session_dir) or "")
    assert approvals.unfit_folder(plain, session_dir) is None  # ext4: a folder of files
    monkeypatch.setattr(approvals, "MOUNTINFO", tmp_path / "absent")
    assert approvals.unfit_folder(mounted, session_dir) is None  # no mount table: the folders alone


def test_h82_a_decided_path_there_but_never_read_names_its_reason(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    out = tmp_path / "dv"
    out.mkdir()
    (out / "real.png").write_bytes(b"png")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.txt").write_text("o")
    os.mkfifo(out / "fifo")
    (out / "zero").symlink_to("/dev/zero")
    (out / "flink").symlink_to(out / "real.png")
    (out / "lnk").symlink_to(outside)
    (out / "sub").mkdir()
    assert cli(capsys, sessions_root, "approve", session.name, str(out / "real.png"), "--by", "Ana")[0] == 0
    path = session.folder / "approvals.toml"
    entry = ('decision = "approved"\nsha256 = "' + "ab" * 32 + '"\nsize_bytes = 1\nby = "Eve"\n'
             "at = 2026-11-29T15:00:00Z\n")
    names = {"fifo": "is not a regular file (a FIFO)",
             "zero": "is a symbolic link",
             "flink": "is a symbolic link",
             "lnk/o.txt": "is reached through the linked folder",
             "../outside/o.txt": "is outside the deliverables folder",
             "/etc/hostname": "is outside the deliverables folder",
             "sub": "is a folder, not a file",
             "gone.png": "the file is no longer there"}
    path.write_text(path.read_text() + "".join(f'\n[files."{n}"]\n{entry}' for n in names))
    code, said, err = cli(capsys, sessions_root, "deliverables", session.name)
    assert code == 0, err
    lines = said.splitlines()
    for name, reason in names.items():
        line = next(ln for ln in lines if ln.strip().startswith(f"{name}  "))
        assert reason in line and "not counted" in line, line
        if name != "gone.png":
            assert "no longer there" not in line, line
    assert "there but never read (not counted) (7):" in said, said
    assert "count: 1 approved" in said, said
