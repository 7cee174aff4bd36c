"""``pull`` copies what the manifest lists -- the approved files -- and names what it left
on the server (S4, S9); ``verify-copy`` still counts every extra file of a copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.copyhome.approved_copy import left_on_server, left_words, parse_list_only

needs_rsync = pytest.mark.skipif(shutil.which("rsync") is None,
                                 reason="rsync not installed (apt-get install rsync)")


def _decided(root: Path, capsys: pytest.CaptureFixture[str], *, approve: list[str], reject: list[str],
             names: list[str]) -> tuple[Path, Path]:
    """A session whose deliverables folder holds ``names``; the decisions made; no manifest yet."""
    deliv = root.parent / "out"
    deliv.mkdir(parents=True)
    for i, name in enumerate(names):
        (deliv / name).write_bytes(f"chart {i}\n".encode() * (i + 1))
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
               "--unit", "visual")[0] == 0
    code, out, err = cli(capsys, root, "approve", "s1", *(str(deliv / n) for n in approve), "--by", "Ana")
    assert code == 0, out + err
    if reject:
        code, out, err = cli(capsys, root, "reject", "s1", *(str(deliv / n) for n in reject), "--by", "Ana",
                             "--why", "legend cut")
        assert code == 0, out + err
    return root / "s1", deliv


@needs_rsync
def test_s9_a_file_changed_after_approval_is_left_on_the_server_and_named(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = ["a.png", "b.png", "c.png", "line\nbreak.png"]
    sess, deliv = _decided(sessions_root, capsys, approve=names, reject=[], names=names)
    with open(deliv / "b.png", "ab") as fh:  # edited after its approval: no longer approved (S9)
        fh.write(b"touched")
    code, out, _ = cli(capsys, sessions_root, "manifest", "s1")
    assert code == 0, out
    assert "approved and listed: 3 file(s)" in out and "b.png  changed after approval" in out
    assert "gpusession pull copies the listed files only and names these as left on the server" in out
    home = tmp_path / "home"
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 0, out
    assert "3/3 listed file(s) match (size and SHA-256)" in out
    assert "1 file not approved was left on the server: b.png" in out
    assert "VERIFIED: the copy home matches" in out and "NOT VERIFIED" not in out
    copied = sorted(p.name for p in (home / "s1-deliverables").iterdir())
    assert copied == sorted(["a.png", "c.png", "line\nbreak.png"])  # a newline in a name stays whole
    assert "left_on_server = 1" in (home / "s1" / "checklist.toml").read_text()
    # a plain copy of the whole folder still holds it, and verify-copy still says so
    whole = tmp_path / "whole"
    shutil.copytree(deliv, whole)
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(sess / "manifest.csv"), str(whole))
    assert code == 3 and "EXTRA    b.png" in out, out


@needs_rsync
def test_s9_files_left_in_the_copy_home_by_an_earlier_copy_are_never_verified_silently(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pull removes nothing: a rejected file copied home before stays an extra of the copy."""
    names = ["a.png", "b.png", "r.png"]
    sess, deliv = _decided(sessions_root, capsys, approve=names[:2], reject=["r.png"], names=names)
    assert cli(capsys, sessions_root, "manifest", "s1", "--also-in-deliverables")[0] == 0
    home = tmp_path / "home"
    shutil.copytree(deliv, home / "s1-deliverables")  # a whole copy made by hand earlier
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home), "--json")
    assert code == 3
    import json

    doc = json.loads(out)
    assert doc["extra"] == ["r.png"] and doc["left_on_server"] == ["r.png"] and not doc["verified"]
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 3
    assert "EXTRA    r.png" in out and "1 file not approved was left on the server: r.png" in out
    assert "the copy home held 1 file(s) the manifest does not list before this pull (a pull removes nothing)" in out
    os.unlink(home / "s1-deliverables" / "r.png")
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 0, out
    # the manifest's own copy beside the deliverables is carried, and is no deliverable
    assert (home / "s1-deliverables" / "manifest.csv").read_bytes() == (deliv / "manifest.csv").read_bytes()
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(home / "s1-deliverables" / "manifest.csv"),
                       str(home / "s1-deliverables"))
    assert code == 0, out


@needs_rsync
def test_s4_without_decisions_the_manifests_files_are_copied_and_a_later_file_is_left(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deliv = tmp_path / "deliverables"
    (deliv / "sub").mkdir(parents=True)
    (deliv / "sub" / "a.txt").write_text("alpha\n")
    assert cli(capsys, sessions_root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, sessions_root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    for i in range(7):  # written after the manifest: not in it
        (deliv / f"later-{i}.log").write_text(f"{i}\n")
    code, out, _ = cli(capsys, sessions_root, "pull", str(sessions_root / "s1"), "--deliverables", str(deliv),
                       "--to", str(tmp_path / "home"))
    assert code == 0, out
    assert ("7 files not approved were left on the server: later-0.log, later-1.log, later-2.log, "
            "later-3.log, later-4.log and 2 more") in out
    assert sorted(p.name for p in (tmp_path / "home" / "s1-deliverables").rglob("*")) == ["a.txt", "sub"]


def test_s9_the_left_line_is_bounded_and_the_server_listing_reads_back_escaped_names() -> None:
    listing = (b"drwxr-xr-x          4,096 2026/11/29 15:00:00 .\n"
               b"-rw-r--r--              1 2026/11/29 15:00:00 a b.png\n"
               b"-rw-r--r--              1 2026/11/29 15:00:00 back\\#134#012slash.txt\n"
               b"-rw-r--r--              1 2026/11/29 15:00:00 new\\#012line.txt\n"
               b"-rw-r--r--              1 2026/11/29 15:00:00 \\#303\\#251.png\n"
               b"lrwxrwxrwx              5 2026/11/29 15:00:00 link.png -> a b.png\n"
               b"drwxr-xr-x          4,096 2026/11/29 15:00:00 sub\n"
               b"-rw-r--r--         12,345 2026/11/29 15:00:00 sub/c.txt\n")
    names = parse_list_only(listing)
    assert names == sorted(["a b.png", "back\\#012slash.txt", "new\nline.txt", "é.png", "link.png", "sub/c.txt"])
    assert left_on_server([*names, "manifest.csv"], ["a b.png", "sub/c.txt"]) == sorted(
        ["back\\#012slash.txt", "new\nline.txt", "é.png", "link.png"])
    assert left_words(["x.png"]) == "1 file not approved was left on the server: x.png"
    many = [f"f{i:02d}.png" for i in range(12)]
    assert left_words(many) == ("12 files not approved were left on the server: f00.png, f01.png, f02.png, "
                                "f03.png, f04.png and 7 more")
