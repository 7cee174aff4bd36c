"""The pull record's walk and signatures (S4, H-43, H-47): one walk says what the three it replaced said."""

from __future__ import annotations

import os
from pathlib import Path

from gpusession.core.copyhome import pull_record
from gpusession.core.copyhome.copylinks import links_in
from gpusession.core.copyhome.pull import FolderCount, count_files


def _folder(root: Path) -> Path:
    (root / "runs" / "exp" / "v1").mkdir(parents=True)
    (root / "session.toml").write_text("schema = 1\n")
    (root / "runs" / "exp" / "v1" / "warm-1.jsonl").write_text('{"id": "a"}\n')
    (root / "runs" / "exp" / "ranks.csv").write_bytes(b"x" * 1000)
    os.symlink("/etc", root / "etc_link")  # out of the folder (H-43)
    os.symlink("session.toml", root / "runs" / "inside")  # broken from there: counts as outside
    os.symlink("../../session.toml", root / "runs" / "exp" / "ok")  # inside
    os.symlink("exp", root / "runs" / "exp_dir")  # a link to a folder: never followed
    return root


def test_s4_one_walk_counts_and_finds_links_as_count_files_and_links_in(tmp_path: Path) -> None:
    root = _folder(tmp_path / "copy")
    tree = pull_record.stat_tree(root)
    assert FolderCount(len(tree.files), tree.total_bytes) == count_files(root)
    assert tree.links == links_in(root)
    assert sorted(tree.files) == ["runs/exp/ranks.csv", "runs/exp/v1/warm-1.jsonl", "session.toml"]
    assert {c.path: c.inside for c in tree.links} == {"etc_link": False, "runs/exp/ok": True,
                                                      "runs/exp_dir": True, "runs/inside": False}
    assert pull_record.stat_tree(tmp_path / "absent").files == {}


def test_h47_a_signature_moves_with_an_edit_whose_size_and_mtime_are_put_back(tmp_path: Path) -> None:
    root = _folder(tmp_path / "copy")
    before = pull_record.stat_tree(root).files["session.toml"]
    p = root / "session.toml"
    st = p.stat()
    p.write_text("schema = 2\n")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = pull_record.stat_tree(root).files["session.toml"]
    assert after[:2] == before[:2] and after != before  # size and mtime kept; ctime moved


def test_s4_restat_brings_the_entries_rsync_wrote_up_to_date_links_included(tmp_path: Path) -> None:
    root = _folder(tmp_path / "copy")
    tree = pull_record.stat_tree(root)
    (root / "new.toml").write_text("schema = 1\n")
    os.symlink("/", root / "root_link")
    (root / "session.toml").unlink()
    pull_record.restat(root, ["new.toml", "root_link", "session.toml", "runs"], tree)
    assert "new.toml" in tree.files and "session.toml" not in tree.files
    assert [c.path for c in tree.links if not c.inside] == ["etc_link", "root_link", "runs/inside"]
    assert tree.total_bytes == sum(sig[0] for sig in tree.files.values())


def test_h78_a_record_round_trips_under_the_key_and_reads_as_absent_when_forged(tmp_path: Path) -> None:
    copy = tmp_path / "home" / "s1"
    rec = pull_record.PullRecord({"session.toml": (11, 1, 2, 3)}, {"a.png": ((5, 1, 2, 3), "ab" * 32)})
    pull_record.write_record(copy, rec)
    assert pull_record.read_record(copy) == rec
    path = pull_record.record_path(copy)
    path.write_bytes(path.read_bytes().replace(b"[11,", b"[12,"))
    assert pull_record.read_record(copy) == pull_record.PullRecord()
    path.write_bytes(b"not json")
    assert pull_record.read_record(copy) == pull_record.PullRecord()
    pull_record.forget_record(copy)
    assert not path.exists()
