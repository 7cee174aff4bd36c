"""The pull record's walk and signatures (S4, H-43, H-47): one walk says what the three it replaced said."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpusession.core.copyhome import pull_record
from gpusession.core.copyhome.copylinks import links_in
from gpusession.core.copyhome.pull import FolderCount, count_files
from gpusession.core.files.seal import keyed_seal


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


def _same_size_edit(path: Path, old: bytes, new: bytes) -> None:
    """Change ``path``'s bytes at the same size and put its times back (rsync's quick check sees nothing)."""
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


class _Decoded:
    """Counts the folders of a record decoded (:meth:`pull_record.KeptRecord.files`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.prefixes: list[str] = []
        real = pull_record.KeptRecord.files

        def files(record: pull_record.KeptRecord, prefix: str) -> dict[str, tuple[int, ...]]:
            self.prefixes.append(prefix)
            return real(record, prefix)

        monkeypatch.setattr(pull_record.KeptRecord, "files", files)


def _proved(root: Path) -> pull_record.KeptRecord:
    """The record a pull keeps of ``root`` walked now, read back as a re-pull reads it."""
    rec = pull_record.KeptRecord(pull_record.proved_folders(pull_record.stat_tree(root), (), pull_record.KeptRecord()))
    pull_record.write_record(root, rec)
    body = pull_record.open_record(root)
    assert body is not None
    return pull_record.parse_record(body)


def test_a5_a_folder_whose_digest_holds_is_passed_over_undecoded(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = _folder(tmp_path / "copy")
    record = _proved(root)
    assert set(record.folders) == {"", "runs/exp/", "runs/exp/v1/"}
    decoded = _Decoded(monkeypatch)
    assert pull_record.changed_files(pull_record.stat_tree(root), record) == []
    assert decoded.prefixes == []  # every folder told by its one string


def test_h47_an_edit_in_a_sub_folder_with_size_and_mtime_put_back_moves_its_folder_digest_and_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _folder(tmp_path / "copy")
    record = _proved(root)
    _same_size_edit(root / "runs" / "exp" / "v1" / "warm-1.jsonl", b'"a"', b'"b"')
    tree = pull_record.stat_tree(root)
    assert tree.digest("runs/exp/v1/") != record.digest("runs/exp/v1/")  # ctime moved: the folder's string too
    decoded = _Decoded(monkeypatch)
    assert pull_record.changed_files(tree, record) == ["runs/exp/v1/warm-1.jsonl"]
    assert decoded.prefixes == ["runs/exp/v1/"]  # that folder alone compared file by file


def test_s4_a_record_of_another_folder_string_compares_that_folder_file_by_file(tmp_path: Path) -> None:
    root = _folder(tmp_path / "copy")
    record = _proved(root)
    digest, text = record.folders["runs/exp/"]
    record.folders["runs/exp/"] = ("0" * 32, text)  # another string, the same files: proved again, found the same
    assert pull_record.changed_files(pull_record.stat_tree(root), record) == []
    sig = json.loads(text)["ranks.csv"]
    record.folders["runs/exp/"] = ("0" * 32, json.dumps({"ranks.csv": [sig[0] + 1, *sig[1:]]}))
    assert pull_record.changed_files(pull_record.stat_tree(root), record) == ["runs/exp/ranks.csv"]
    record.folders["runs/exp/"] = ("0" * 32, "not json")  # a folder that does not decode proves nothing
    assert pull_record.changed_files(pull_record.stat_tree(root), record) == ["runs/exp/ranks.csv"]
    record.folders["runs/exp/"] = (digest, text)
    del record.folders["runs/exp/v1/"]  # a folder the record does not hold: every file in it
    assert pull_record.changed_files(pull_record.stat_tree(root), record) == ["runs/exp/v1/warm-1.jsonl"]


def test_a5_a_record_that_still_holds_keeps_each_folders_text_as_it_was(tmp_path: Path) -> None:
    root = _folder(tmp_path / "copy")
    record = _proved(root)
    tree = pull_record.stat_tree(root)
    again = pull_record.proved_folders(tree, (), record)
    assert again == record.folders and all(again[p] is record.folders[p] for p in again)
    left_out = pull_record.proved_folders(tree, ["runs/exp/ranks.csv"], record)  # a file that did not read back
    assert "runs/exp/" not in left_out  # its one file left out: the folder is not recorded
    assert left_out[""] is record.folders[""] and left_out["runs/exp/v1/"] is record.folders["runs/exp/v1/"]


def test_s4_a_record_kept_before_the_folders_reads_as_proved_and_its_forgery_as_absent(tmp_path: Path) -> None:
    """A record of the earlier layout (one signature per path) is read, not proved again after an upgrade (H-78 kept)."""
    root = _folder(tmp_path / "copy")
    session = pull_record.stat_tree(root).files
    body = json.dumps({"session": session, "deliverables": {"a.png": [[5, 1, 2, 3], "ab" * 32]}},
                      separators=(",", ":")).encode()
    copy = os.path.abspath(root)
    head = json.dumps({"version": 1, "copy": copy, "seal": keyed_seal(os.fsencode(copy) + b"\0" + body)})
    path = pull_record.record_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head.encode() + b"\n" + body)
    assert pull_record.read_record(root) == pull_record.PullRecord(session, {"a.png": ((5, 1, 2, 3), "ab" * 32)})
    opened = pull_record.open_record(root)
    assert opened is not None
    assert pull_record.changed_files(pull_record.stat_tree(root), pull_record.parse_record(opened)) == []
    path.write_bytes(head.encode() + b"\n" + body.replace(b'"ab', b'"cd', 1))  # forged, seal kept
    assert pull_record.read_record(root) == pull_record.PullRecord()
