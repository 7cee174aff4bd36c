"""A re-pull proves what changed since the last pull, and still sees a file changed at home (S4, A5, H-47).

The pull record (``core/copyhome/pull_record.py``) keeps each proved file's size,
mtime, inode and ctime; work is counted here (files hashed, TOML files parsed), never timed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.copyhome import manifest as manifest_mod
from gpusession.core.copyhome import pull as pull_mod
from gpusession.core.copyhome import pull_record

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed (apt-get install rsync)")


def _server(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    deliv = root.parent / "deliverables"
    (deliv / "sub").mkdir(parents=True)
    for i in range(5):
        (deliv / f"chart-{i}.txt").write_text(f"chart {i}\n")
    (deliv / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    return root / "s1", deliv


class _Count:
    """Counts the files hashed for the manifest and the TOML files parsed back by a pull."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.hashed: list[str] = []
        self.parsed: list[str] = []
        real_hash, real_parse = manifest_mod.sha256_file, pull_mod.loads_toml

        def hash_file(path: Path, *a: object, **k: object) -> str:
            self.hashed.append(Path(path).name)
            return real_hash(path, *a, **k)  # type: ignore[arg-type]

        def parse(text: str, path: Path, **k: object) -> object:
            self.parsed.append(Path(path).name)
            return real_parse(text, path, **k)  # type: ignore[arg-type]

        monkeypatch.setattr(manifest_mod, "sha256_file", hash_file)
        monkeypatch.setattr(pull_mod, "loads_toml", parse)

    def clear(self) -> None:
        self.hashed.clear()
        self.parsed.clear()


def _same_size_edit(path: Path, old: bytes, new: bytes) -> None:
    """Change ``path``'s bytes at the same size and put its times back (rsync's quick check sees nothing)."""
    st = path.stat()
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_s4_a_repull_with_nothing_changed_hashes_no_file_and_parses_only_what_it_rewrote(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    sess, _ = _server(sessions_root, capsys)
    home = tmp_path / "home"
    count = _Count(monkeypatch)
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 0, out
    assert sorted(count.hashed) == sorted([*(f"chart-{i}.txt" for i in range(5)), "b.bin"])  # the first proves all
    assert "session.toml" in count.parsed
    count.clear()
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 0, out
    assert "VERIFIED: the copy home matches" in out
    assert count.hashed == []  # every deliverable's stat unchanged since it was hashed
    # the two files every pull rewrites at home are read back; nothing else
    assert sorted(count.parsed) == ["checklist.toml", "retrieval.toml"]
    assert "compared by size and time" in out


def test_h47_a_deliverable_edited_home_with_its_size_and_mtime_kept_is_hashed_again_and_caught(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The signature holds ctime and the inode: ``os.utime`` puts mtime back, never ctime."""
    sess, _ = _server(sessions_root, capsys)
    home = tmp_path / "home"
    assert cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))[0] == 0
    count = _Count(monkeypatch)
    _same_size_edit(home / "s1-deliverables" / "chart-2.txt", b"chart 2", b"CHART 2")
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 3
    assert "CHANGED  chart-2.txt (hash differs; the copy differs from the server's file)" in out
    assert count.hashed == ["chart-2.txt"]  # that file alone is read again
    count.clear()
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 3, "a changed file is never recorded as proved"
    assert count.hashed == ["chart-2.txt"]


def test_h47_a_session_file_edited_home_with_its_size_and_mtime_kept_is_fetched_again(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sess, _ = _server(sessions_root, capsys)
    home = tmp_path / "home"
    assert cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))[0] == 0
    copy = home / "s1" / "session.toml"
    _same_size_edit(copy, b"schema = 1", b"schema ! 1")  # no longer TOML, same size and time
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 0, out
    assert "1 file(s) of the copy changed since the last pull: compared with the server by checksum" in out
    assert copy.read_bytes() == (sess / "session.toml").read_bytes()


def test_h78_a_pull_record_edited_or_of_another_copy_reads_as_absent(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    sess, _ = _server(sessions_root, capsys)
    home = tmp_path / "home"
    assert cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))[0] == 0
    path = pull_record.record_path(home / "s1")
    assert path.is_file() and path.stat().st_mode & 0o777 == 0o600
    assert pull_record.read_record(home / "s1").deliverables
    head, body = path.read_bytes().split(b"\n", 1)
    doc = json.loads(body)
    digest = doc["deliverables"]["chart-2.txt"][1]
    doc["deliverables"]["chart-2.txt"][1] = digest[::-1]  # a forged digest, seal kept
    path.write_bytes(head + b"\n" + json.dumps(doc).encode())
    assert pull_record.read_record(home / "s1") == pull_record.PullRecord()
    assert pull_record.read_record(tmp_path / "elsewhere" / "s1") == pull_record.PullRecord()
    count = _Count(monkeypatch)
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 0, out
    assert len(count.hashed) == 6 and "per-file checksums" in out  # everything proved again


def test_s4_pull_checksum_proves_every_file_again(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    sess, _ = _server(sessions_root, capsys)
    home = tmp_path / "home"
    assert cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))[0] == 0
    count = _Count(monkeypatch)
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home), "--checksum")
    assert code == 0, out
    assert len(count.hashed) == 6 and "session.toml" in count.parsed


def test_s4_the_journal_is_decoded_only_where_a_manifest_is_recorded(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    lines = [json.dumps({"event": "run_started", "at": "2026-11-29T12:00:00+00:00", "n": i}) for i in range(50)]
    lines.insert(20, json.dumps({"event": "manifest_written", "at": "2026-11-29T12:30:00+00:00",
                                 "path": "/srv/s/manifest.csv", "deliverables": "/srv/out"}))
    lines.append(json.dumps({"event": "manifest_written", "at": "2026-11-29T13:00:00+00:00",
                             "path": "/srv/s/manifest-2.csv", "deliverables": "/srv/out"})
                 .replace("manifest-2", "\\u006danifest-2"))
    journal.write_text("\n".join(lines) + "\n")
    got = pull_mod.manifest_records(journal)
    assert [r.path for r in got] == ["/srv/s/manifest.csv", "/srv/s/manifest-2.csv"]
    assert pull_mod.manifest_records(tmp_path / "absent.jsonl") == []
