"""Manifest of approved deliverables and the check of a retrieved copy (S4; G§8)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from gpusession.core.copyhome.manifest import (
    read_manifest,
    representative_files,
    sha256_file,
    verify_copy,
    write_manifest,
)
from gpusession.core.files.errors import BadInput

ODD = "visuel été 01 — ñ.png"  # spaces and non-ASCII characters


@pytest.fixture
def deliverables(tmp_path: Path) -> Path:
    d = tmp_path / "deliverables"
    (d / "visuals").mkdir(parents=True)
    (d / "notes").mkdir()
    (d / "visuals" / "01.png").write_bytes(b"\x89PNG" + bytes(range(256)) * 40)
    (d / "visuals" / ODD).write_bytes(b"odd name" * 10)
    (d / "visuals" / "a,b.txt").write_text("comma in the name", encoding="utf-8")
    (d / "notes" / "resume.md").write_text("# resume\nbatch 8 is the method\n", encoding="utf-8")
    (d / "README.txt").write_text("deliverables of visuals-test-01", encoding="utf-8")
    return d


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def test_s4_manifest_lists_size_and_sha256(deliverables: Path, tmp_path: Path) -> None:
    out = tmp_path / "manifest.csv"
    res = write_manifest(deliverables, out)
    entries = read_manifest(out)
    assert [e.path for e in entries] == sorted(
        ["README.txt", "notes/resume.md", "visuals/01.png", "visuals/a,b.txt", f"visuals/{ODD}"]
    )
    for e in entries:
        data = (deliverables / e.path).read_bytes()
        assert e.size_bytes == len(data)
        assert e.sha256 == hashlib.sha256(data).hexdigest()
    assert res.total_bytes == sum(e.size_bytes for e in entries)
    assert out.read_text(encoding="utf-8").splitlines()[0] == "path,size_bytes,sha256"


def test_s4_identical_copy_matches(deliverables: Path, tmp_path: Path) -> None:
    out = tmp_path / "manifest.csv"
    write_manifest(deliverables, out)
    check = verify_copy(out, _copy(deliverables, tmp_path / "copy"))
    assert check.ok
    assert len(check.matching) == 5
    assert not (check.missing or check.extra or check.changed)
    assert "visuals/01.png" in check.representative  # the largest
    assert "README.txt" in check.representative  # the first / top level
    assert "notes/resume.md" in check.representative  # one per top-level folder


def test_s4_changed_byte_is_found_by_hash_not_listing(deliverables: Path, tmp_path: Path) -> None:
    out = tmp_path / "manifest.csv"
    write_manifest(deliverables, out)
    copy = _copy(deliverables, tmp_path / "copy")
    target = copy / "visuals" / "01.png"
    data = bytearray(target.read_bytes())
    data[100] ^= 0x01  # same size, one bit differs
    target.write_bytes(bytes(data))
    check = verify_copy(out, copy)
    assert not check.ok
    assert [c.path for c in check.changed] == ["visuals/01.png"]
    c = check.changed[0]
    assert c.expected_size_bytes == c.actual_size_bytes
    assert c.actual_sha256 == sha256_file(target) != c.expected_sha256
    assert "visuals/01.png" not in check.representative


def test_s4_missing_extra_and_renamed(deliverables: Path, tmp_path: Path) -> None:
    out = tmp_path / "manifest.csv"
    write_manifest(deliverables, out)
    copy = _copy(deliverables, tmp_path / "copy")
    (copy / "README.txt").unlink()
    (copy / "Thumbs.db").write_bytes(b"junk")
    os.rename(copy / "notes" / "resume.md", copy / "notes" / "resume (1).md")
    check = verify_copy(out, copy)
    assert not check.ok
    assert check.missing == ["README.txt", "notes/resume.md"]
    assert sorted(check.extra) == ["Thumbs.db", "notes/resume (1).md"]
    assert check.renamed == [("notes/resume.md", "notes/resume (1).md")]


def test_s4_spaces_and_non_ascii_names_round_trip(deliverables: Path, tmp_path: Path) -> None:
    out = tmp_path / "manifest.csv"
    write_manifest(deliverables, out)
    assert f"visuals/{ODD}" in [e.path for e in read_manifest(out)]
    copy = _copy(deliverables, tmp_path / "copy")
    (copy / "visuals" / ODD).write_bytes(b"other")
    check = verify_copy(out, copy)
    assert [c.path for c in check.changed] == [f"visuals/{ODD}"]
    assert check.changed[0].actual_sha256 is None  # size differs: not even hashed


def test_s4_symlink_out_of_folder_is_skipped_not_followed(deliverables: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("not a deliverable", encoding="utf-8")
    (deliverables / "link-out.txt").symlink_to(secret)
    (deliverables / "linked-folder").symlink_to(tmp_path)
    (deliverables / "inside-link.md").symlink_to(deliverables / "notes" / "resume.md")
    res = write_manifest(deliverables, tmp_path / "manifest.csv")
    paths = [e.path for e in res.entries]
    assert "link-out.txt" not in paths and not any(p.startswith("linked-folder") for p in paths)
    assert "inside-link.md" in paths  # points inside: its content is listed
    skipped = {s.path: s.reason for s in res.skipped}
    assert "outside" in skipped["link-out.txt"]
    assert "folder" in skipped["linked-folder"]
    # in the copy, a symlink out is not followed either: the file counts as missing
    copy = tmp_path / "copy"
    shutil.copytree(deliverables, copy, symlinks=False, ignore=shutil.ignore_patterns("link*"))
    (copy / "README.txt").unlink()
    (copy / "README.txt").symlink_to(secret)
    check = verify_copy(tmp_path / "manifest.csv", copy)
    assert "README.txt" in check.missing
    assert any(s.path == "README.txt" for s in check.skipped)


def test_s4_manifest_with_escaping_path_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "m.csv"
    escaping = ["../etc/passwd", "/etc/passwd", "a/../../x"]
    if os.name == "nt":
        escaping += ["C:/Windows/x", "..\\x", "\\x"]
    for path in escaping:
        bad.write_text(f"path,size_bytes,sha256\n{path},1,{'0' * 64}\n", encoding="utf-8")
        with pytest.raises(BadInput, match="escapes|absolute"):
            read_manifest(bad)
    bad.write_text("path,size\nx,1\n", encoding="utf-8")
    with pytest.raises(BadInput, match="header"):
        read_manifest(bad)
    bad.write_text(f"path,size_bytes,sha256\nx,1,{'z' * 64}\n", encoding="utf-8")
    with pytest.raises(BadInput, match="hex"):
        read_manifest(bad)


def test_s4_never_overwrites_a_manifest(deliverables: Path, tmp_path: Path) -> None:
    out = tmp_path / "manifest.csv"
    write_manifest(deliverables, out)
    before = out.read_bytes()
    (deliverables / "new.txt").write_text("new", encoding="utf-8")
    with pytest.raises(BadInput, match="exists"):
        write_manifest(deliverables, out)
    assert out.read_bytes() == before
    second = write_manifest(deliverables, out, number_if_exists=True)
    assert second.path.name == "manifest-2.csv" and out.read_bytes() == before
    forced = write_manifest(deliverables, out, force=True)
    assert forced.path == out and "new.txt" in out.read_text(encoding="utf-8")


def test_manifest_inside_the_folder_leaves_itself_out(deliverables: Path) -> None:
    res = write_manifest(deliverables, deliverables / "manifest.csv")
    assert "manifest.csv" not in [e.path for e in res.entries]
    assert verify_copy(deliverables / "manifest.csv", deliverables).ok


def test_representative_files_are_few() -> None:
    from gpusession.core.copyhome.manifest import ManifestEntry

    entries = [ManifestEntry(f"d{i % 9}/f{i}.png", i, "0" * 64) for i in range(200)]
    picks = representative_files(entries)
    assert 1 < len(picks) <= 6 and "d1/f199.png" in picks


# -- CLI -----------------------------------------------------------------------------
@pytest.mark.slow
def test_s4_cli_manifest_and_verify_copy(run_cli, sessions_root: Path, deliverables: Path,
                                         tmp_path: Path) -> None:
    assert run_cli("new", "visuals-test-01", "--gpu", "RTX A5000", "--lots", "1",
                   "--days", "7").returncode == 0
    r = run_cli("manifest", "visuals-test-01", "--deliverables", str(deliverables))
    assert r.returncode == 0, r.stderr
    man = sessions_root / "visuals-test-01" / "manifest.csv"
    assert man.exists() and "5 file(s)" in r.stdout
    r2 = run_cli("manifest", "visuals-test-01", "--deliverables", str(deliverables))
    assert r2.returncode == 0 and (sessions_root / "visuals-test-01" / "manifest-2.csv").exists()
    copy = _copy(deliverables, tmp_path / "copy")
    ok = run_cli("verify-copy", str(man), str(copy))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "copy matches" in ok.stdout and "open these" in ok.stdout.lower()
    (copy / "README.txt").unlink()
    bad = run_cli("verify-copy", str(man), str(copy), "--json")
    assert bad.returncode == 3
    data = json.loads(bad.stdout)
    assert data["matches"] is False and data["missing"] == ["README.txt"]
    missing_dir = run_cli("verify-copy", str(man), str(tmp_path / "nowhere"))
    assert missing_dir.returncode == 2 and "Traceback" not in missing_dir.stderr
    tech = run_cli("manifest", "visuals-test-01", "--deliverables", str(sessions_root))
    assert tech.returncode == 2 and "technical files" in tech.stderr
    out_exists = run_cli("manifest", "visuals-test-01", "--deliverables", str(deliverables),
                         "--out", str(man))
    assert out_exists.returncode == 2 and "--force" in out_exists.stderr


# -- property: any file name survives the manifest round trip --------------------------
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_NAME = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
    min_size=1, max_size=40,
).filter(lambda n: n not in (".", "..") and len(n.encode("utf-8")) < 200)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(_NAME, min_size=1, max_size=5, unique=True), data=st.binary(max_size=64))
@example(names=["a\\b", "C:x", " lead ", 'q"uote,', "new\nline", "NA", "null"], data=b"")
def test_s4_any_file_name_round_trips(tmp_path: Path, names: list[str], data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        root = Path(tmp) / "d"
        root.mkdir()
        for n in names:
            (root / n).write_bytes(data + n.encode("utf-8"))
        out = Path(tmp) / "manifest.csv"
        write_manifest(root, out)
        assert sorted(e.path for e in read_manifest(out)) == sorted(names)
        check = verify_copy(out, root)
        assert check.ok and sorted(check.matching) == sorted(names)
