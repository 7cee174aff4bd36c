"""Hostile world, round 5: deliverables reached through a link, and folders never walked (H-53, H-54)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import cli, digest, one_line

from gpusession.core.folder import approvals
from gpusession.core.folder.session import Session


def test_h53_a_file_reached_through_a_linked_folder_is_refused_naming_the_link(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "real.png").write_bytes(b"png")
    (out / "etclink").symlink_to("/etc")
    code, _, err = cli(capsys, sessions_root, "approve", session.name, str(out / "real.png"), "--by", "Ana")
    assert code == 0, err
    before = digest(session.folder)
    code, out_text, err = cli(capsys, sessions_root, "approve", session.name, str(out / "etclink" / "hostname"),
                              "--by", "Ana")
    line = one_line(err)
    assert code == 2 and "goes through the symbolic link" in line and "etclink" in line, line
    assert {k: v for k, v in digest(session.folder).items() if k != "journal.jsonl"} == \
        {k: v for k, v in before.items() if k != "journal.jsonl"}  # approvals.toml unchanged


@pytest.mark.parametrize("where", ["root", "home", "session"])
def test_h54_a_deliverables_folder_that_is_root_a_home_or_the_session_is_refused_before_any_walk(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    home = tmp_path / "home-of-ana"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    folder = {"root": "/", "home": str(home), "session": str(session.folder.parent)}[where]
    (session.folder / "approvals.toml").write_text(f'schema = 1\ndeliverables = "{folder}"\n[files]\n')
    walked: list[str] = []
    real_walk = os.walk

    def counting_walk(top: object, *a: object, **kw: object) -> object:
        walked.append(str(top))
        return real_walk(top, *a, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(approvals.os, "walk", counting_walk)
    for command in (["show", session.name], ["cost", session.name], ["deliverables", session.name],
                    ["report", session.name]):
        code, out, err = cli(capsys, sessions_root, *command)
        said = out + err
        assert "Traceback" not in said and "approvals.toml" in said and "deliverables" in said, (command, said)
        assert "nothing was walked" in said, (command, said)
        if command[0] in ("cost", "deliverables"):
            assert code == 2 and "nothing was walked" in one_line(err), (command, err)
    assert folder not in walked and os.path.realpath(folder) not in walked  # the folder was never walked


def test_h54_approve_beside_a_home_never_makes_the_home_the_deliverables_folder(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home-of-ana"
    home.mkdir()
    (home / "result.png").write_bytes(b"png")
    monkeypatch.setenv("HOME", str(home))
    code, _, err = cli(capsys, sessions_root, "approve", session.name, str(home / "result.png"), "--by", "Ana")
    assert code == 2 and "is a home folder" in one_line(err)
    assert not (session.folder / "approvals.toml").exists()


def test_h54_the_walk_of_a_deliverables_folder_is_bounded(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    (out / "many").mkdir(parents=True)
    for i in range(12):
        (out / "many" / f"{i}.png").write_bytes(bytes([i]))
    assert cli(capsys, sessions_root, "approve", session.name, str(out / "many" / "0.png"), "--by", "Ana",
               "--deliverables", str(out))[0] == 0
    monkeypatch.setattr(approvals, "WALK_MAX_FILES", 10)
    code, _, err = cli(capsys, sessions_root, "deliverables", session.name)
    assert code == 2 and "holds more than 10 files" in one_line(err)
