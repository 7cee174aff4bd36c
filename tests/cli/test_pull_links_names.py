"""Links and names from the server in a pull and in verify-copy (H-43, H-44)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import cli

needs_rsync = pytest.mark.skipif(shutil.which("rsync") is None,
                                 reason="rsync not installed (apt-get install rsync)")


def _server(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    deliv = root.parent / "deliverables"
    deliv.mkdir()
    (deliv / "a.txt").write_text("alpha\n")
    (deliv / "a\nb.png").write_bytes(b"png")
    (deliv / "\x1b[2Jclear.txt").write_text("x")
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    return root / "s1", deliv


# -- H-43: a link pointing outside the copy --------------------------------------------------
def test_h43_links_in_finds_every_link_without_following_it(tmp_path: Path) -> None:
    from gpusession.core.copyhome.copylinks import links_in, outside_reason

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    os.symlink("/etc", tmp_path / "etc_link")
    os.symlink("d/f", tmp_path / "inner")
    os.symlink("../../x", tmp_path / "d" / "up")
    os.symlink("gone", tmp_path / "broken\n")
    found = {c.path: c.inside for c in links_in(tmp_path)}
    assert found == {"etc_link": False, "inner": True, "d/up": False, "broken\n": False}
    words = outside_reason({"session copy": tmp_path, "deliverables copy": None}) or ""
    assert "3 link(s) pointing outside" in words and "etc_link -> /etc" in words
    assert "broken\\x0a" in words and "\n" not in words
    assert outside_reason({"session copy": tmp_path / "d" / "f"}) is None


def test_h43_verify_copy_counts_links_and_names_those_pointing_out(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
) -> None:
    _, deliv = _server(sessions_root, capsys)
    copy = tmp_path / "copy"
    shutil.copytree(deliv, copy)
    os.symlink("/etc", copy / "etc_link")
    os.symlink("a.txt", copy / "a-again")
    code, out, err = cli(capsys, sessions_root, "verify-copy", str(sessions_root / "s1" / "manifest.csv"),
                         str(copy))
    assert "2 symbolic link(s) in the copy, 1 pointing outside it" in out, (out, err)
    assert "LINK OUT etc_link -> /etc" in out
    assert code == 3 and "copy matches the manifest" not in out, out
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(sessions_root / "s1" / "manifest.csv"),
                       str(copy), "--json")
    import json

    doc = json.loads(out)
    assert doc["links"] == 2 and doc["links_outside"] == [{"path": "etc_link", "target": "/etc"}]
    assert code == 3  # as pull: never a silent verified
    os.unlink(copy / "a-again")  # the listed files all match now: the link out alone is said
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(sessions_root / "s1" / "manifest.csv"),
                       str(copy))
    assert code == 3 and "NOT VERIFIED: 1 link(s) point outside it" in out, out
    assert "copy matches the manifest" not in out
    os.unlink(copy / "etc_link")
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(sessions_root / "s1" / "manifest.csv"),
                       str(copy))
    assert code == 0 and "copy matches the manifest" in out, out  # a link inside the copy is fine


@needs_rsync
def test_h43_a_server_link_out_of_the_session_is_never_verified(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
) -> None:
    sess, _ = _server(sessions_root, capsys)
    os.symlink("/etc", sess / "etc_link")
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(tmp_path / "home"))
    assert code == 3
    assert "NOT VERIFIED" in out and "etc_link -> /etc" in out
    assert "VERIFIED:" not in out.replace("NOT VERIFIED:", "")


# -- H-44: names from the server printed escaped ---------------------------------------------
@needs_rsync
def test_h44_every_name_pull_prints_is_escaped(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
) -> None:
    sess, deliv = _server(sessions_root, capsys)
    (deliv / "new\nextra.txt").write_text("e")
    (deliv / "a\nb.png").unlink()
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(tmp_path / "home"))
    assert "\x1b" not in out
    assert "a\\x0ab.png" in out and "new\\x0aextra.txt" in out
    for line in out.splitlines():
        assert not line.startswith(("b.png", "extra.txt"))


def test_h44_the_pull_printer_escapes_as_verify_copy_does() -> None:
    from gpusession.commands.checklist_cmds import _shown
    from gpusession.commands.pull_cmd import _name

    for name in ("a\nb.png", "\x1b[2Jclear.txt", "x\u202ey"):
        assert _name(name) == _shown(name)
        assert "\n" not in _name(name) and "\x1b" not in _name(name)
    assert _name("a\nb.png") == "a\\x0ab.png" and _name("\x1b[2J") == "\\x1b[2J"


def _fake_rsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """rsync replaced by a plain copy of the source folder (the tests need no rsync)."""
    from gpusession.core.copyhome import pull

    def copy(cmd: list[str], **_: object) -> None:
        shutil.copytree(cmd[-2], cmd[-1], dirs_exist_ok=True, symlinks=True)

    monkeypatch.setattr(pull, "check_local_rsync", lambda: None)
    monkeypatch.setattr(pull, "run_rsync", copy)


HOSTILE_FOLDER = "\x1b[2Jout\nFAKE: VERIFIED"


def test_h44_a_deliverables_folder_from_the_journal_is_escaped_in_every_pull_line(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The folder pull copies is the one the server's journal names: its steps print it escaped."""
    deliv = tmp_path / "srv" / HOSTILE_FOLDER
    deliv.mkdir(parents=True)
    (deliv / "a\nb.png").write_bytes(b"png")
    assert cli(capsys, sessions_root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, sessions_root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    _fake_rsync(monkeypatch)
    for extra in ((), ("--json",)):
        code, out, err = cli(capsys, sessions_root, "pull", str(sessions_root / "s1"),
                             "--to", str(tmp_path / "home"), *extra)
        assert code == 0, out + err
        steps = err if extra else out
        assert "\x1b" not in out + err
        assert "copying deliverables " in steps and "\\x1b[2Jout\\x0aFAKE: VERIFIED" in steps
        assert not any(line.startswith("FAKE") for line in (out + err).splitlines()), out + err
    assert (tmp_path / "home" / "s1-deliverables" / "a\nb.png").read_bytes() == b"png"


def test_h44_the_pull_steps_and_failures_escape_what_the_server_named() -> None:
    """Every step line pull says, and its one-line failures, escape the server's paths."""
    from gpusession.core.copyhome.pull import TransferFailed, explain_failure, shown

    assert shown("/srv/" + HOSTILE_FOLDER) == "/srv/\\x1b[2Jout\\x0aFAKE: VERIFIED"
    err = explain_failure(23, "rsync: change_dir \"/srv/x\" failed: No such file or directory (2)",
                          host="h", dest=Path("/home"), where="h:/srv/" + HOSTILE_FOLDER)
    assert "\n" not in str(err) and "\x1b" not in str(err)
    assert "\n" not in str(TransferFailed("copying /srv/" + HOSTILE_FOLDER))


def test_h44_manifest_prints_a_hostile_deliverables_folder_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The folder's name reaches every line ``manifest`` prints escaped: its pull hint too."""
    root = tmp_path / "sessions"
    deliv = tmp_path / "\x1b[2Jout\nFAKE: VERIFIED"
    deliv.mkdir()
    (deliv / "a.txt").write_text("alpha\n")
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    code, out, err = cli(capsys, root, "manifest", "s1", "--deliverables", str(deliv))
    assert code == 0, err
    assert "\x1b" not in out and "\\x1b[2Jout" in out
    assert not any(line.startswith("FAKE") for line in out.splitlines()), out


def test_h44_a_name_whose_bytes_are_not_utf8_is_shown_by_its_bytes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A deliverable named with bytes that are not UTF-8 (0xff, a C1 CSI 0x9b) is listed by
    ``deliverables`` as ``\\xff`` / ``\\x9b``: no raw byte reaches the terminal."""
    from gpusession.core.files.textio import printable

    assert printable("a\udcffb\udc9b", keep="") == "a\\xffb\\x9b"
    assert printable("a\ud800", keep="") == "a\\ud800"
    root = tmp_path / "sessions"
    deliv = tmp_path / "out"
    deliv.mkdir()
    (deliv / "ok.png").write_bytes(b"png")
    os.close(os.open(os.path.join(os.fsencode(deliv), b"bad\xff\x9b[2J.png"), os.O_CREAT | os.O_WRONLY, 0o600))
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, root, "approve", "s1", str(deliv / "ok.png"), "--by", "Ana")[0] == 0
    code, out, err = cli(capsys, root, "deliverables", "s1")
    assert code == 0, err
    assert "bad\\xff\\x9b[2J.png" in out and "\udcff" not in out and "\x9b" not in out, out


def test_h44_manifest_and_verify_copy_name_a_non_utf8_file_by_its_bytes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Skipped names that are not UTF-8 read ``e\\xff.png`` and ``e\\xfe.png``: two names,
    never one U+FFFD for both."""
    root = tmp_path / "sessions"
    deliv = tmp_path / "out"
    deliv.mkdir()
    (deliv / "a.txt").write_text("alpha\n")
    for raw in (b"e\xff.png", b"e\xfe.png"):
        os.close(os.open(os.path.join(os.fsencode(deliv), raw), os.O_CREAT | os.O_WRONLY, 0o600))
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    code, out, err = cli(capsys, root, "manifest", "s1", "--deliverables", str(deliv))
    assert code == 0, err
    assert "skipped e\\xff.png" in out and "skipped e\\xfe.png" in out and "\ufffd" not in out, out
    code, out, _ = cli(capsys, root, "verify-copy", str(root / "s1" / "manifest.csv"), str(deliv))
    assert "e\\xff.png" in out and "\ufffd" not in out, out


def test_h44_h46_json_documents_carry_names_escaped_and_tokens_hidden(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json`` holds names to the text form's rule: a bidi override, a C1 control or a
    byte that is not UTF-8 as a JSON escape, a token hidden; the document still parses."""
    import json

    token = "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
    root = tmp_path / "sessions"
    deliv = tmp_path / "out"
    deliv.mkdir()
    (deliv / "ok.png").write_bytes(b"png")
    for raw in ("b\u202egnp.png".encode(), "c\u009bx.png".encode(), b"n\xff.png", f"{token}.png".encode()):
        os.close(os.open(os.path.join(os.fsencode(deliv), raw), os.O_CREAT | os.O_WRONLY, 0o600))
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, root, "approve", "s1", str(deliv / "ok.png"), "--by", "Ana")[0] == 0
    for args in (["deliverables", "s1", "--json"], ["manifest", "s1", "--deliverables", str(deliv), "--json"]):
        code, out, err = cli(capsys, root, *args)
        assert code == 0, err
        assert token not in out and "\u202e" not in out and "\u009b" not in out and "\udcff" not in out, out
        assert "\\u202e" in out and "[HIDDEN: GitHub token]" in out, out
        json.loads(out)
