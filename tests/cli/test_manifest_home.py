"""``manifest`` names its real path and can leave a copy beside the deliverables."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli


def _deliverables(tmp_path: Path) -> Path:
    d = tmp_path / "deliverables"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text("alpha\n")
    (d / "sub" / "b.txt").write_text("beta\n")
    return d


def test_manifest_hint_names_the_real_path_that_verify_copy_accepts(
    session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    deliv = _deliverables(tmp_path)
    code, out, _ = cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv))
    assert code == 0
    real = (session.folder / "manifest.csv").absolute()
    assert f"gpusession verify-copy {real} COPY_DIR" in out
    assert f"gpusession pull [USER@]HOST:{session.folder.absolute()} --deliverables {deliv.absolute()}" in out
    monkeypatch.chdir(tmp_path)  # the hint works from anywhere, not only the session folder
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(real), str(deliv))
    assert code == 0, out


def test_manifest_also_in_deliverables_carried_by_a_plain_copy(
    session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    deliv = _deliverables(tmp_path)
    code, out, _ = cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv),
                       "--also-in-deliverables")
    assert code == 0
    assert (deliv / "manifest.csv").read_bytes() == (session.folder / "manifest.csv").read_bytes()
    assert "manifest.csv" not in (deliv / "manifest.csv").read_text()  # never lists itself
    assert "gpusession verify-copy COPY_DIR/manifest.csv COPY_DIR" in out
    copy = tmp_path / "home" / "deliverables"
    shutil.copytree(deliv, copy)  # cp -r
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(copy / "manifest.csv"), str(copy))
    assert code == 0 and "EXTRA" not in out, out
    # with the session's manifest too, the carried copy is no extra file
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(session.folder / "manifest.csv"), str(copy))
    assert code == 0 and "EXTRA" not in out, out
    # a second manifest replaces the earlier copy and still does not list it
    (deliv / "c.txt").write_text("gamma\n")
    code, out, _ = cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv),
                       "--also-in-deliverables")
    assert code == 0
    assert "c.txt" in (deliv / "manifest.csv").read_text()
    assert (deliv / "manifest.csv").read_bytes() == (session.folder / "manifest-2.csv").read_bytes()


def test_manifest_also_in_deliverables_never_replaces_a_deliverable(
    session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deliv = _deliverables(tmp_path)
    (deliv / "manifest.csv").write_text("order,qty\n1,2\n")  # a real deliverable of that name
    code, _, err = cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv),
                       "--also-in-deliverables")
    assert code == 2
    assert "exists and is not a manifest" in err
    assert (deliv / "manifest.csv").read_text() == "order,qty\n1,2\n"
    assert not (session.folder / "manifest.csv").exists()


def test_a_hint_holding_a_path_with_spaces_or_brackets_pastes_as_one_argument(
    sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``manifest``'s pull and verify-copy hints quote each path as a shell would need it."""
    import shlex

    root = tmp_path / "my work [x]" / "sessions"
    assert cli(capsys, root, "new", "s", "--gpu", "RTX A5000", "--lots", "1", "--days", "3")[0] == 0
    deliv = _deliverables(tmp_path / "out put")
    code, out, _ = cli(capsys, root, "manifest", "s", "--deliverables", str(deliv))
    assert code == 0
    pull = next(ln for ln in out.splitlines() if "gpusession pull" in ln)
    words = shlex.split(pull.split("on your own computer: ", 1)[1])
    assert words[-2:] == ["--deliverables", str(deliv.absolute())]
    assert words[2] == f"[USER@]HOST:{(root / 's').absolute()}"
    verify = next(ln for ln in out.splitlines() if "gpusession verify-copy" in ln)
    command = verify.split(": ", 1)[1].split(" COPY_DIR", 1)[0]  # before the words in parentheses
    assert shlex.split(command)[2] == str((root / "s" / "manifest.csv").absolute())


def test_h58_a_copy_check_written_by_hand_is_the_persons_never_gpusessions(
    session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``[verify_copy]`` table made by hand for a manifest that does not exist: status
    never says the copy is verified and names the hand entry, and the checklist holds no
    fact "recorded by gpusession"; a real ``verify-copy`` is vouched for, and an edit of
    its table makes it the person's again."""
    checklist = session.folder / "checklist.toml"
    text = checklist.read_text() if checklist.exists() else "schema = 1\n"
    checklist.write_text(text + '\n[verify_copy]\nverified = true\nat = 2026-11-29T15:00:00Z\n'
                                'manifest = "/nowhere/manifest.csv"\ncopy = "/nowhere"\nfiles = 18\n')
    code, out, _ = cli(capsys, sessions_root, "status", session.name)
    assert code == 0 and "copy home not verified (checklist.toml holds a check written by hand" in out, out
    assert "copy home verified" not in out
    code, out, _ = cli(capsys, sessions_root, "checklist", session.name)
    line = next(ln for ln in out.splitlines() if " g8.verify-copy " in ln)
    assert line.lstrip().startswith("[ ] open"), line  # never "done (recorded by gpusession)"
    deliv = _deliverables(tmp_path)
    assert cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv))[0] == 0
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(session.folder / "manifest.csv"), str(deliv))
    assert code == 0, out
    code, out, _ = cli(capsys, sessions_root, "status", session.name)
    assert "copy home verified 2026-11-29 15:00 UTC" in out and "written by hand" not in out, out
    sealed = checklist.read_text()
    checklist.write_text(sealed.replace("files = 2", "files = 20"))  # an edit of what gpusession wrote
    code, out, _ = cli(capsys, sessions_root, "status", session.name)
    assert "copy home not verified (checklist.toml holds a check written by hand" in out, out
