"""A re-pull proves what changed since the last pull, and still sees a file changed at home (S4, A5, H-47).

The pull record (``core/copyhome/pull_record.py``) keeps each proved file's size,
mtime, inode and ctime; work is counted here (files hashed, TOML files parsed), never timed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.copyhome import manifest as manifest_mod
from gpusession.core.copyhome import pull as pull_mod
from gpusession.core.copyhome import pull_record

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed (apt-get install rsync)")


@dataclass
class _Copy:
    """A server's session ``s1`` (a manifest of its deliverables recorded) and the copy home a pull makes of it."""

    root: Path
    sess: Path
    home: Path
    capsys: pytest.CaptureFixture[str]

    def pull(self, *extra: str) -> tuple[int, str]:
        """``gpusession pull SESS --to HOME [EXTRA]``: its exit code and output."""
        code, out, _ = cli(self.capsys, self.root, "pull", str(self.sess), "--to", str(self.home), *extra)
        return code, out


@pytest.fixture
def server(sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> _Copy:
    """The session on the server with 6 deliverables and their manifest; nothing pulled yet."""
    deliv = sessions_root.parent / "deliverables"
    (deliv / "sub").mkdir(parents=True)
    for i in range(5):
        (deliv / f"chart-{i}.txt").write_text(f"chart {i}\n")
    (deliv / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
    assert cli(capsys, sessions_root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, sessions_root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    return _Copy(sessions_root, sessions_root / "s1", tmp_path / "home", capsys)


@pytest.fixture
def pulled(server: _Copy) -> _Copy:
    """:func:`server`, pulled home once (verified: the pull record holds everything)."""
    code, out = server.pull()
    assert code == 0, out
    return server


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
        server: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    count = _Count(monkeypatch)
    code, out = server.pull()
    assert code == 0, out
    assert sorted(count.hashed) == sorted([*(f"chart-{i}.txt" for i in range(5)), "b.bin"])  # the first proves all
    assert "session.toml" in count.parsed
    count.clear()
    code, out = server.pull()
    assert code == 0, out
    assert "VERIFIED: the copy home matches" in out
    assert count.hashed == []  # every deliverable's stat unchanged since it was hashed
    # the two files every pull rewrites at home are read back; nothing else
    assert sorted(count.parsed) == ["checklist.toml", "retrieval.toml"]
    assert "compared by size and time" in out


def test_h47_a_deliverable_edited_home_with_its_size_and_mtime_kept_is_hashed_again_and_caught(
        pulled: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The signature holds ctime and the inode: ``os.utime`` puts mtime back, never ctime."""
    count = _Count(monkeypatch)
    _same_size_edit(pulled.home / "s1-deliverables" / "chart-2.txt", b"chart 2", b"CHART 2")
    code, out = pulled.pull()
    assert code == 3
    assert "CHANGED  chart-2.txt (hash differs; the copy differs from the server's file)" in out
    assert count.hashed == ["chart-2.txt"]  # that file alone is read again
    count.clear()
    code, out = pulled.pull()
    assert code == 3, "a changed file is never recorded as proved"
    assert count.hashed == ["chart-2.txt"]


def test_h47_a_session_file_edited_home_with_its_size_and_mtime_kept_is_fetched_again(pulled: _Copy) -> None:
    copy = pulled.home / "s1" / "session.toml"
    _same_size_edit(copy, b"schema = 1", b"schema ! 1")  # no longer TOML, same size and time
    code, out = pulled.pull()
    assert code == 0, out
    assert "1 file(s) of the copy changed since the last pull: compared with the server by checksum" in out
    assert copy.read_bytes() == (pulled.sess / "session.toml").read_bytes()


def test_h47_a_file_in_a_sub_folder_edited_home_with_its_size_and_mtime_kept_is_fetched_again(
        pulled: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder's digest holds every file's ctime and inode: the edit moves it, and that file alone is read back."""
    notes = pulled.sess / "validation" / "v" / "notes.toml"
    notes.parent.mkdir(parents=True)
    notes.write_text("note = 'kept'\n")
    assert pulled.pull()[0] == 0  # proved, recorded in the folder validation/v/
    copy = pulled.home / "s1" / "validation" / "v" / "notes.toml"
    _same_size_edit(copy, b"note = ", b"note ! ")  # no longer TOML, same size and time
    count = _Count(monkeypatch)
    code, out = pulled.pull()
    assert code == 0, out
    assert "1 file(s) of the copy changed since the last pull: compared with the server by checksum" in out
    assert copy.read_bytes() == notes.read_bytes()
    assert sorted(count.parsed) == ["checklist.toml", "notes.toml", "retrieval.toml"]


def test_s4_the_evidence_counts_the_session_copys_files(pulled: _Copy) -> None:
    """The count comes from the walk that proves the copy, on a first pull and a re-pull alike."""
    for _ in range(2):
        code, out = pulled.pull()
        assert code == 0, out
        files = pull_mod.count_files(pulled.home / "s1")
        listed = [ln for ln in out.splitlines() if ln.startswith("session copy:")]
        assert len(listed) == 1 and files.files > 0
        # retrieval.toml (the throughput written after the evidence) may come after the count
        assert any(f"({n} files, " in listed[0] for n in (files.files, files.files - 1)), listed[0]


def test_h78_a_pull_record_edited_or_of_another_copy_reads_as_absent(
        pulled: _Copy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = pull_record.record_path(pulled.home / "s1")
    assert path.is_file() and path.stat().st_mode & 0o777 == 0o600
    assert pull_record.read_record(pulled.home / "s1").deliverables
    head, body = path.read_bytes().split(b"\n", 1)
    doc = json.loads(body)
    digest = doc["deliverables"]["chart-2.txt"][1]
    doc["deliverables"]["chart-2.txt"][1] = digest[::-1]  # a forged digest, seal kept
    path.write_bytes(head + b"\n" + json.dumps(doc).encode())
    assert pull_record.read_record(pulled.home / "s1") == pull_record.PullRecord()
    assert pull_record.read_record(tmp_path / "elsewhere" / "s1") == pull_record.PullRecord()
    count = _Count(monkeypatch)
    code, out = pulled.pull()
    assert code == 0, out
    assert len(count.hashed) == 6 and "per-file checksums" in out  # everything proved again


def test_s4_pull_checksum_proves_every_file_again(pulled: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    count = _Count(monkeypatch)
    code, out = pulled.pull("--checksum")
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


def test_a5_a_repull_reads_the_journal_only_when_its_signature_moved(
        pulled: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest lines a verified pull found are kept with the journal's lstat signature (H-47: ctime, inode)."""
    assert pulled.pull()[0] == 0  # the record now keeps the journal's manifest lines
    read: list[str] = []
    real = pull_mod.read_plain

    def read_plain(path: Path, *a: object, **k: object) -> bytes:
        read.append(Path(path).name)
        return real(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(pull_mod, "read_plain", read_plain)
    pull_mod._MANIFEST_RECORDS.clear()  # nothing left from the pulls before, in this process
    code, out = pulled.pull()
    assert code == 0, out
    assert "journal.jsonl" not in read and "VERIFIED" in out
    journal = pulled.home / "s1" / "journal.jsonl"
    _same_size_edit(journal, b'"event"', b'"Event"')  # the copy's journal edited, size and time put back
    pull_mod._MANIFEST_RECORDS.clear()
    code, out = pulled.pull()
    assert code == 0, out
    assert "journal.jsonl" in read  # its signature moved: fetched again and read


def test_a5_s10_a_repull_with_nothing_new_leaves_the_count_kept_by_the_last_pull(
        pulled: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting for ``status`` parses the copy's ``session.toml``: done again only when something moved."""
    from gpusession.commands import _common

    counted: list[Path] = []
    real = _common.keep_count
    monkeypatch.setattr(_common, "keep_count", lambda folder, *a, **k: counted.append(folder) or real(folder, *a, **k))
    assert pulled.pull()[0] == 0  # the record written by the first pull now holds: nothing moved since
    assert counted == []
    (pulled.sess / "notes.toml").write_text("note = 'new on the server'\n")
    code, out = pulled.pull()
    assert code == 0, out
    assert counted == [pulled.home / "s1"]  # rsync wrote a file: counted again
    _same_size_edit(pulled.home / "s1-deliverables" / "chart-2.txt", b"chart 2", b"CHART 2")
    assert pulled.pull()[0] == 3
    assert len(counted) == 2  # not verified: counted as before


def test_s4_a_repull_with_nothing_changed_leaves_the_pull_record_as_it_was(pulled: _Copy) -> None:
    """The comparison with the record tells that it still holds: it is not written again."""
    assert pulled.pull()[0] == 0
    path = pull_record.record_path(pulled.home / "s1")
    before = path.stat()
    code, out = pulled.pull()
    assert code == 0, out
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    (pulled.sess / "notes.toml").write_text("note = 'new on the server'\n")  # something new: recorded
    code, out = pulled.pull()
    assert code == 0, out
    assert "notes.toml" in pull_record.read_record(pulled.home / "s1").session


#: A remote shell that runs the server's rsync here, and refuses (as ssh's BatchMode would,
#: with no key) when asked never to prompt; each call's mode is logged.
_FAKE_SSH = """#!/bin/sh
for a in "$@"; do if [ "$a" = "BatchMode=yes" ]; then echo batch >> "$0.log"; exit 255; fi; done
echo asked >> "$0.log"
while [ $# -gt 0 ]; do case "$1" in -o) shift 2;; -*) shift;; *) break;; esac; done
shift
exec "$@"
"""


def test_s4_the_listing_beside_the_copy_never_prompts_and_is_made_again_alone_when_batch_mode_fails(
        tmp_path: Path) -> None:
    folder = tmp_path / "out"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("a")
    (folder / "sub" / "b.txt").write_text("b")
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(_FAKE_SSH)
    ssh.chmod(0o700)
    transfer = pull_mod.Transfer(pull_mod.Source("server", str(tmp_path / "s1")), tmp_path / "work",
                                 str(ssh), None, None, None)
    assert "BatchMode=yes" in " ".join(transfer.list_only_command(str(folder), batch=True))
    listed = transfer.start_listing(str(folder))
    assert listed(False) == ["a.txt", "sub/b.txt"]
    assert (tmp_path / "fake-ssh.log").read_text().split() == ["batch", "asked"]  # beside, then alone
    assert transfer.start_listing(str(folder))(True) is None  # the copy failed: the listing ends, not asked again
    assert (tmp_path / "fake-ssh.log").read_text().split().count("asked") == 1


class _Rsyncs:
    """Every rsync a pull starts (its words), and rsync's figures of each copy (``run_rsync``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ran: list[list[str]] = []
        self.stats: list[object] = []
        ran, real, real_run = self.ran, subprocess.Popen, pull_mod.run_rsync

        class Counted(real):  # type: ignore[misc, valid-type]
            def __init__(self, args: list[str], *a: object, **k: object) -> None:
                if args and args[0] == "rsync":
                    ran.append(list(args))
                super().__init__(args, *a, **k)  # type: ignore[arg-type]

        def run(*a: object, **k: object) -> object:
            got = real_run(*a, **k)  # type: ignore[arg-type]
            self.stats.append(got)
            return got

        monkeypatch.setattr(subprocess, "Popen", Counted)
        monkeypatch.setattr(pull_mod, "run_rsync", run)


def _server_state(folder: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every file of the server's session folder with its ``lstat`` signature (size, mtime, inode, ctime)."""
    return {p.relative_to(folder).as_posix(): (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file() for st in [p.lstat()]}


def test_s4_a5_a_repull_with_nothing_new_runs_rsync_three_times_and_never_by_checksum(
        pulled: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: the session, the listed deliverables with the server's listing; its version kept."""
    rsyncs = _Rsyncs(monkeypatch)
    for _ in range(2):  # the first re-pull and the ones after it
        rsyncs.ran.clear()
        code, out = pulled.pull()
        assert code == 0, out
        assert len(rsyncs.ran) == 3, rsyncs.ran
        assert not any(cmd[1:] == ["--version"] for cmd in rsyncs.ran)  # asked by the first pull, kept
        assert sum("--list-only" in cmd for cmd in rsyncs.ran) == 1
        assert not any("--checksum" in cmd for cmd in rsyncs.ran)


def test_d2_a_repull_with_nothing_new_copies_no_file_records_no_throughput_and_writes_nothing_to_the_server(
        pulled: _Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's checklist.toml is not brought back over the one the last pull wrote home (S4, A5)."""
    home = pulled.home / "s1"
    figures = (home / "retrieval.toml").read_text()
    assert "[[pull]]" in figures  # the first pull measured the link
    for _ in range(2):
        server = _server_state(pulled.sess)
        rsyncs = _Rsyncs(monkeypatch)
        code, out = pulled.pull()
        assert code == 0, out
        assert "VERIFIED: the copy home matches" in out
        assert rsyncs.stats and all(st.transferred_bytes == 0 for st in rsyncs.stats), rsyncs.stats  # type: ignore[attr-defined]
        assert "throughput: not measured" in out
        assert not any(cmd[-1].startswith(str(pulled.sess)) for cmd in rsyncs.ran)  # no write-back
        assert _server_state(pulled.sess) == server  # not one byte, time or inode changed there
        assert (home / "retrieval.toml").read_text() == figures
        assert "copy home verified" in (home / "checklist.toml").read_text()


def test_s4_a_change_of_the_servers_checklist_still_comes_home(pulled: _Copy) -> None:
    """The server's checklist kept by the last pull is what rsync compares with: a change there is copied."""
    checklist = pulled.sess / "checklist.toml"
    checklist.write_text(checklist.read_text() + "\n[settings]\ndestination = 'my laptop'\n")
    code, out = pulled.pull()
    assert code == 0, out
    home = (pulled.home / "s1" / "checklist.toml").read_text()
    assert "destination = 'my laptop'" in home or 'destination = "my laptop"' in home
    assert "copy home verified" in home  # the pull's record written into it again
    assert "[retrieval]" not in checklist.read_text()  # the server's file is the server's


def test_h47_the_kept_checklist_edited_or_the_copys_edited_is_not_trusted(pulled: _Copy) -> None:
    """A kept checklist that does not hold its seal is not put back; a home edit of the copy's is replaced."""
    home = pulled.home / "s1" / "checklist.toml"
    kept = pull_record.record_path(pulled.home / "s1").with_suffix(".checklist")
    assert kept.is_file()
    kept.write_bytes(kept.read_bytes().replace(b"schema", b"SCHEMA"))  # seal kept, bytes forged
    code, out = pulled.pull()
    assert code == 0, out
    assert b"SCHEMA" not in home.read_bytes() and "copy home verified" in home.read_text()
    _same_size_edit(home, b"schema", b"SCHEMA")  # the copy's own, edited with size and time put back
    code, out = pulled.pull()
    assert code == 0, out
    assert b"SCHEMA" not in home.read_bytes() and "copy home verified" in home.read_text()


def test_h26_rsync_version_is_asked_again_when_rsync_is_another_file(
        pulled: _Copy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept by the program's stat: another rsync on PATH (an old one) is asked, and refused."""
    fake = tmp_path / "bin" / "rsync"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'rsync  version 2.6.9  protocol version 29'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    code, out, err = cli(pulled.capsys, pulled.root, "pull", str(pulled.sess), "--to", str(pulled.home))
    assert code == 1 and "too old for a pull" in out + err
