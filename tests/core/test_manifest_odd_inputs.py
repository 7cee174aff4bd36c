"""Manifest / verify-copy with an empty folder, decomposed Unicode names on
the copy home and hand-edited manifests (S4)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from gpusession.core.copyhome.manifest import read_manifest, verify_copy, write_manifest
from gpusession.core.files.errors import BadInput

HASH_B = "0263829989b6fd954f72baaf2fc64bc2e2f01d692d4de72986ea808f6e99813f"  # b"b\n"


def test_s4_an_empty_deliverables_folder_makes_no_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "deliverables"
    folder.mkdir()
    (folder / "link").symlink_to("/nonexistent")
    with pytest.raises(BadInput, match="no regular file") as exc:
        write_manifest(folder, tmp_path / "manifest.csv")
    assert "broken symlink" in exc.value.message
    assert not (tmp_path / "manifest.csv").exists()


def test_s4_a_copy_with_decomposed_unicode_names_matches(tmp_path: Path) -> None:
    src = tmp_path / "deliverables"
    src.mkdir()
    name = unicodedata.normalize("NFC", "résumé-ü.txt")
    (src / name).write_bytes(b"b\n")
    (src / "plain.txt").write_bytes(b"b\n")
    manifest = write_manifest(src, tmp_path / "manifest.csv").path
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / unicodedata.normalize("NFD", name)).write_bytes(b"b\n")  # as macOS may store it
    (copy / "plain.txt").write_bytes(b"b\n")
    check = verify_copy(manifest, copy)
    assert check.missing == [] and check.extra == [] and check.changed == []
    assert sorted(check.matching) == sorted([name, "plain.txt"])


def test_s4_a_changed_nfd_file_is_still_reported_changed(tmp_path: Path) -> None:
    src = tmp_path / "d"
    src.mkdir()
    name = unicodedata.normalize("NFC", "é.txt")
    (src / name).write_bytes(b"b\n")
    manifest = write_manifest(src, tmp_path / "m.csv").path
    copy = tmp_path / "c"
    copy.mkdir()
    (copy / unicodedata.normalize("NFD", name)).write_bytes(b"X\n")
    check = verify_copy(manifest, copy)
    assert [c.path for c in check.changed] == [name] and check.extra == [] and check.missing == []


@pytest.mark.parametrize(
    "body, line, words",
    [
        (f'"two\nlines.txt",2,{HASH_B}\nx.txt,+1,{HASH_B}\n', 4, "size in bytes"),
        (f"a.txt,2,{HASH_B},extra\n", 2, "4 fields"),
        (f"a.txt,1e0,{HASH_B}\n", 2, "size in bytes"),
        (f'"open.txt,2,{HASH_B}\n', 2, "quoted path"),
        (f"a.txt,2,{HASH_B}\n\n", 3, "blank line"),
    ],
)
def test_s4_hand_edited_manifest_names_the_line(tmp_path: Path, body: str, line: int, words: str) -> None:
    m = tmp_path / "manifest.csv"
    m.write_text("path,size_bytes,sha256\n" + body)
    with pytest.raises(BadInput, match=words) as exc:
        read_manifest(m)
    assert exc.value.line == line and exc.value.path == m


def test_s4_manifest_with_bom_and_crlf_reads(tmp_path: Path) -> None:
    m = tmp_path / "manifest.csv"
    m.write_bytes(b"\xef\xbb\xbfpath,size_bytes,sha256\r\n" + f'"a, b.txt",2,{HASH_B.upper()}\r\n'.encode())
    [entry] = read_manifest(m)
    assert (entry.path, entry.size_bytes, entry.sha256) == ("a, b.txt", 2, HASH_B)
