"""``gpusession pull`` from a local folder with the real rsync, and its one-line errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

needs_rsync = pytest.mark.skipif(shutil.which("rsync") is None,
                                 reason="rsync not installed (apt-get install rsync)")


def _server(root: Path, capsys: pytest.CaptureFixture[str], *, manifest: bool = True,
            also: bool = False) -> tuple[Path, Path]:
    deliv = root.parent / "deliverables"
    (deliv / "sub").mkdir(parents=True)
    (deliv / "a.txt").write_text("alpha\n")
    (deliv / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
    assert cli(capsys, root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    if manifest:
        extra = ("--also-in-deliverables",) if also else ()
        assert cli(capsys, root, "manifest", "s1", "--deliverables", str(deliv), *extra)[0] == 0
    return root / "s1", deliv


@needs_rsync
def test_pull_local_path_verified_and_recorded(sessions_root: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    sess, deliv = _server(sessions_root, capsys)
    home = tmp_path / "home"
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 0, out
    assert "VERIFIED: the copy home matches" in out
    assert (home / "s1-deliverables" / "sub" / "b.bin").read_bytes() == (deliv / "sub" / "b.bin").read_bytes()
    code, out, _ = cli(capsys, home, "status", "s1")
    assert code == 0 and "copy home verified" in out


@needs_rsync
def test_pull_no_manifest_never_verified(sessions_root: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    sess, deliv = _server(sessions_root, capsys, manifest=False)
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--deliverables", str(deliv),
                       "--to", str(tmp_path / "home"))
    assert code == 3
    assert "NOT VERIFIED: no manifest made on the server: on the server run `gpusession manifest s1" in out
    assert "VERIFIED:" not in out.replace("NOT VERIFIED:", "")
    assert "verified = false" in (tmp_path / "home" / "s1" / "checklist.toml").read_text()


@needs_rsync
def test_pull_lists_missing_truncated_and_extra(sessions_root: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    sess, deliv = _server(sessions_root, capsys)
    home = tmp_path / "home"
    (home / "s1-deliverables").mkdir(parents=True)
    (home / "s1-deliverables" / "old-junk.txt").write_text("left from before\n")  # extra
    (deliv / "sub" / "b.bin").write_bytes(b"short")  # truncated on the server after the manifest
    (deliv / "a.txt").unlink()  # gone on the server after the manifest
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 3
    assert "MISSING  a.txt" in out
    assert "CHANGED  sub/b.bin (size 5 ≠ 10240 bytes (truncated or grown); the server's file" in out
    assert "EXTRA    old-junk.txt" in out
    assert "1 missing, 1 changed, 1 extra" in out


@needs_rsync
def test_pull_server_file_changed_after_manifest_says_so_not_checksum(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--checksum cannot help when the server's own file changed."""
    sess, deliv = _server(sessions_root, capsys)
    (deliv / "a.txt").write_text("ALPHA\n")  # same size, changed on the server after its manifest
    home = tmp_path / "home"
    for extra in ((), ("--checksum",)):
        code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home), *extra)
        assert code == 3
        assert "CHANGED  a.txt (hash differs; the server's file is the same: it changed after " \
               "the manifest was made)" in out
        assert "--checksum" not in out
        assert ("the server's file changed after the manifest was made; make a new manifest there "
                "(gpusession manifest s1 --deliverables DIR) or restore the file") in out


@needs_rsync
def test_pull_copy_differs_from_server_hints_checksum(sessions_root: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged copy (same size and time) is fetched again with --checksum."""
    sess, _ = _server(sessions_root, capsys)
    home = tmp_path / "home"
    assert cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))[0] == 0
    copy = home / "s1-deliverables" / "a.txt"
    st = copy.stat()
    copy.write_text("ALPHA\n")
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))  # rsync's quick check sees no change
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 3
    assert "CHANGED  a.txt (hash differs; the copy differs from the server's file)" in out
    assert "rerun with --checksum to fetch the changed files again" in out
    assert "make a new manifest there" not in out
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home), "--checksum")
    assert code == 0, out


@needs_rsync
def test_pull_uses_newest_manifest_and_says_which(sessions_root: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    sess, deliv = _server(sessions_root, capsys)
    (deliv / "c.txt").write_text("added later\n")
    assert cli(capsys, sessions_root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(tmp_path / "home"))
    assert code == 0, out
    assert f"manifest: {sess / 'manifest-2.csv'}" in out
    assert "the newest of 2 manifests" in out


@needs_rsync
def test_pull_unreadable_session_toml_not_verified(sessions_root: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    sess, _ = _server(sessions_root, capsys)
    (sess / "order.toml").write_text("schema = 1\n[broken\n")
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(tmp_path / "home"))
    assert code == 3
    assert "UNREADABLE" in out and "order.toml" in out
    assert "1 session file(s) do not read back" in out


def test_pull_without_rsync_here_one_line(sessions_root: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path / "empty-bin"))
    done = subprocess.run([sys.executable, "-m", "gpusession", "pull", str(sessions_root / "s1"),
                           "--to", str(tmp_path / "home")], capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "gpusession: error: rsync is not installed on this computer: install it (apt-get install "
        "rsync, brew install rsync) and rerun"]


def test_pull_bad_source_is_bad_input(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "pull", "host:/")
    assert code == 2 and "does not end with a session folder" in err
    code, _, err = cli(capsys, sessions_root, "pull", ":/srv/sessions/x")
    assert code == 2 and "no host before ':'" in err


@pytest.mark.parametrize(
    ("rc", "stderr", "expected", "code"),
    [
        (11, 'rsync: [receiver] write failed on "/home/me/s1-deliverables/big.bin": No space left on device (28)',
         "disk full on this computer while writing", 1),
        (23, 'rsync: [receiver] mkdir "/home/me/s1" failed: Permission denied (13)',
         'permission denied: [receiver] mkdir "/home/me/s1" failed: Permission denied (13)', 1),
        (255, "ssh: Could not resolve hostname gpu1: Name or service not known",
         "unknown host gpu1", 2),
        (12, "bash: line 1: rsync: command not found\nrsync: connection unexpectedly closed",
         "rsync is not installed on gpu1", 1),
        (255, "ssh: connect to host gpu1 port 22: Connection refused", "gpu1 refused the connection", 1),
        (20, "rsync error: received SIGINT, SIGTERM, or SIGHUP (code 20)", "was interrupted; rerun", 1),
        (24, 'file has vanished: "/srv/s1/runs/e/.worker-3.json"\nrsync warning: some files vanished '
             "before they could be transferred (code 24)",
         "files vanished on the server while gpu1:/srv/s1 was copied (/srv/s1/runs/e/.worker-3.json): a run is "
         "probably still writing there; pull again when it ends", 1),
        (12, "rsync: on remote machine: --protect-args: unknown option\nrsync error: syntax or usage error",
         "the rsync on gpu1 is too old for a pull (it refused --protect-args): install rsync 3.x there", 1),
    ],
)
def test_pull_rsync_failures_in_words(rc: int, stderr: str, expected: str, code: int) -> None:
    from gpusession.core.copyhome.pull import explain_failure

    err = explain_failure(rc, stderr, host="gpu1", dest=Path("/home/me/s1"), where="gpu1:/srv/s1")
    assert expected in str(err)
    assert "\n" not in str(err)
    assert err.exit_code == code


def test_pull_parse_progress_and_source() -> None:
    from gpusession.core.copyhome.pull import Source, parse_progress, parse_source

    p = parse_progress("     32,768  10%    1.23MB/s    0:00:02 (xfr#1, to-chk=4/6)")
    assert p is not None and (p.bytes_done, p.percent, p.rate, p.eta) == (32768, 10, "1.23MB/s", "0:00:02")
    assert parse_progress("sending incremental file list") is None
    assert parse_source("me@gpu1:/srv/sessions/trial-1") == Source("me@gpu1", "/srv/sessions/trial-1")
    local = parse_source("./a:b/sessions/trial-1")
    assert local.host is None and local.name == "trial-1"


@needs_rsync
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                    reason="mounting a tiny tmpfs (a full disk) needs root")
def test_pull_disk_full_here_one_line_never_verified(sessions_root: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    sess, deliv = _server(sessions_root, capsys, manifest=False)
    (deliv / "big.bin").write_bytes(os.urandom(3_000_000))
    assert cli(capsys, sessions_root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    small = tmp_path / "small-disk"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)],
                      capture_output=True).returncode != 0:
        pytest.skip("this container does not allow mounting a tmpfs")
    try:
        code, out, err = cli(capsys, sessions_root, "pull", str(sess), "--to", str(small / "home"))
        assert code == 1
        errors = [ln for ln in err.strip().splitlines() if "%" not in ln]  # progress lines aside
        assert errors == [
            f"gpusession: error: disk full on this computer while writing {small / 'home' / 's1-deliverables'}: "
            "free space and rerun (the pull resumes)"]
        assert "VERIFIED" not in out
        assert "verified = true" not in (small / "home" / "s1" / "checklist.toml").read_text()
    finally:
        subprocess.run(["umount", str(small)], check=False)


@needs_rsync
def test_pull_manifest_without_known_deliverables_asks_for_them(sessions_root: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    sess, deliv = _server(sessions_root, capsys)
    (sess / "journal.jsonl").write_text("")  # no record of where the deliverables were
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--to", str(tmp_path / "home"))
    assert code == 3
    assert "the deliverables folder is not known (manifest.csv came without it): pass --deliverables" in out
    code, out, _ = cli(capsys, sessions_root, "pull", str(sess), "--deliverables", str(deliv),
                       "--to", str(tmp_path / "home"))
    assert code == 0, out


def test_s4_a_partial_file_rsync_refuses_to_resume_from_is_retried_whole() -> None:
    """rsync's own 'failed verification' of a partial file (a known regression) is not a
    failed copy: the pull says the resume was refused and copies the file again."""
    from pathlib import Path

    from gpusession.core.copyhome.pull import explain_failure

    err = ("ERROR: big.bin failed verification -- update put into partial-dir (will try again).\n"
           "rsync error: some files/attrs were not transferred (see previous errors) (code 23)")
    refused = explain_failure(23, err, host="h", dest=Path("/d"), where="h:/s")
    assert refused.resume_refused and "refused to resume" in str(refused)
    other = explain_failure(23, "rsync: send_files failed to open \"x\": Permission denied (13)",
                            host="h", dest=Path("/d"), where="h:/s")
    assert not other.resume_refused


@needs_rsync
@pytest.mark.parametrize("linked", ["s1", "s1-deliverables", ".gpusession-pull"])
def test_h38_a_home_destination_that_is_a_link_is_refused_and_its_target_unchanged(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], linked: str) -> None:
    """``home/p/s1`` linked to another rental's copy: its session.toml must not be replaced."""
    from helpers import digest, one_line

    sess, _ = _server(sessions_root, capsys)
    other = tmp_path / "other-rental"
    other.mkdir()
    (other / "session.toml").write_text('name = "other"\n', encoding="utf-8")
    home = tmp_path / "home" / "p"
    home.mkdir(parents=True)
    (home / linked).symlink_to(other)
    before = digest(other)
    code, out, err = cli(capsys, sessions_root, "pull", str(sess), "--to", str(home))
    assert code == 2, out + err
    line = one_line(err)
    assert linked in line and "symbolic link" in line and str(other) in line
    assert digest(other) == before and (home / linked).is_symlink()
    assert "VERIFIED" not in out


@pytest.mark.parametrize("version", ["rsync  version 2.6.9  protocol version 29", "openrsync: protocol version 29"])
def test_h26_an_rsync_too_old_here_says_install_rsync_3_in_one_line(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """macOS's rsync 2.6.9 or openrsync: it would refuse --info=progress2 with a bare usage error."""
    from helpers import one_line

    stub = tmp_path / "bin" / "rsync"
    stub.parent.mkdir()
    stub.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; exit 0; fi\n"
                    "echo 'rsync: --info=progress2: unknown option' >&2; exit 1\n", encoding="utf-8")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    home = tmp_path / "home"
    code, out, err = cli(capsys, sessions_root, "pull", "host.example:/srv/s1", "--to", str(home))
    assert code == 1, out + err
    line = one_line(err)
    assert "too old for a pull" in line and "install rsync 3.x" in line and version.split()[0] in line
    assert not (home / "s1").exists()


#: OpenSSH 9's words, as rsync passes them on (exit 255).
SSH_KEY_CHANGED = """\
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Offending ED25519 key in /home/me/.ssh/known_hosts:3
Host key for gpu1 has changed and you have requested strict checking.
Host key verification failed.
rsync: connection unexpectedly closed (0 bytes received so far) [Receiver]
"""
SSH_FIRST_STRICT = """\
No ED25519 host key is known for gpu1 and you have requested strict checking.
Host key verification failed.
rsync: connection unexpectedly closed (0 bytes received so far) [Receiver]
"""
SSH_FIRST_NO_TTY = """\
Host key verification failed.
rsync: connection unexpectedly closed (0 bytes received so far) [Receiver]
"""


@pytest.mark.parametrize("stderr", [SSH_FIRST_STRICT, SSH_FIRST_NO_TTY])
def test_h64_a_first_contact_host_is_told_how_to_accept_its_key_never_to_remove_one(stderr: str) -> None:
    from gpusession.core.copyhome.pull import explain_failure

    err = str(explain_failure(255, stderr, host="gpu1", dest=Path("/home/me/s1"), where="gpu1:/srv/s1"))
    assert err.startswith("first contact with gpu1: ")
    assert "`ssh gpu1` once and answer yes" in err and "ssh-keyscan gpu1" in err
    assert "ssh-keygen -R" not in err and "CHANGED" not in err and "\n" not in err


def test_h64_a_changed_host_key_is_said_changed_with_the_removal_after_a_check() -> None:
    from gpusession.core.copyhome.pull import explain_failure

    err = str(explain_failure(255, SSH_KEY_CHANGED, host="gpu1", dest=Path("/home/me/s1"),
                              where="gpu1:/srv/s1"))
    assert "host key of gpu1 has CHANGED" in err and "ssh-keygen -R gpu1" in err
    assert "first contact" not in err and "\n" not in err
