"""``gpusession pull`` end to end with the real rsync over a real OpenSSH server.

A fixture starts ``sshd`` on 127.0.0.1 at a free port with a host key and a client key
made in a temporary folder (``StrictModes no``, ``UsePAM no``); the client's options go
through ``--ssh``. Skipped with the reason where rsync, ssh or sshd cannot be had
(``.ci/run`` installs them when missing).
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
MISSING = [n for n, p in (("rsync", shutil.which("rsync")), ("ssh", shutil.which("ssh")),
                          ("ssh-keygen", shutil.which("ssh-keygen")), ("sshd", SSHD)) if p is None]
if MISSING:
    pytest.skip(f"needs {', '.join(MISSING)} (apt-get install rsync openssh-server openssh-client)",
                allow_module_level=True)


@dataclass(frozen=True)
class Sshd:
    """A running sshd: where to reach it and the ``--ssh`` command that logs in."""

    host: str
    port: int
    ssh: str
    bad_key_ssh: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    d = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "client_key", "other_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    port = _free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nStrictModes no\nUsePAM no\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin yes\n"
        f"PidFile {d / 'sshd.pid'}\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(d / "sshd_config")],
                            stdout=subprocess.DEVNULL, stderr=open(d / "sshd.log", "wb"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None:
                pytest.skip(f"sshd did not start: {(d / 'sshd.log').read_text()[-300:]}")
            time.sleep(0.1)
    opts = (f"-o UserKnownHostsFile={d / 'known_hosts'} -o StrictHostKeyChecking=no "
            f"-o BatchMode=yes -o IdentitiesOnly=yes -p {port}")
    user = getpass.getuser()
    try:
        yield Sshd(f"{user}@127.0.0.1", port, f"ssh -i {d / 'client_key'} {opts}",
                   f"ssh -i {d / 'other_key'} {opts}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _pull(*args: str, cwd: Path, timeout: float = 120,
          env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **(env_extra or {}))
    env.pop("GPUSESSION_HOME", None)
    env.pop("RSYNC_RSH", None)
    return subprocess.run([sys.executable, "-m", "gpusession", "pull", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture
def server(tmp_path: Path) -> tuple[Path, Path]:
    """A session on the "server" (a temp folder) with deliverables and a manifest of them."""
    from gpusession.cli import main

    root = tmp_path / "server" / "sessions"
    deliv = tmp_path / "server" / "deliverables"
    (deliv / "visuals").mkdir(parents=True)
    (deliv / "visuals" / "01 cover.png").write_bytes(os.urandom(200_000))
    (deliv / "big.bin").write_bytes(os.urandom(3_000_000))
    (deliv / "notes.txt").write_text("accepted run, batch 8\n")
    assert main(["--sessions-dir", str(root), "new", "trial-1", "--gpu", "RTX A5000", "--lots", "1",
                 "--days", "3"]) == 0
    assert main(["--sessions-dir", str(root), "manifest", "trial-1", "--deliverables", str(deliv)]) == 0
    return root / "trial-1", deliv


def test_pull_over_ssh_session_and_deliverables_verified(sshd: Sshd, server: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    sess, deliv = server
    home = tmp_path / "home"
    done = _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                 "--ssh", sshd.ssh, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VERIFIED" in done.stdout and "NOT VERIFIED" not in done.stdout
    assert f"manifest: {sess / 'manifest.csv'}" in done.stdout
    assert (home / "trial-1-deliverables" / "big.bin").read_bytes() == (deliv / "big.bin").read_bytes()
    assert "100%" in done.stderr  # the progress, parsed from rsync --info=progress2
    checklist = (home / "trial-1" / "checklist.toml").read_text()
    assert "[retrieval]" in checklist and "verified = true" in checklist
    assert "deliverables_files = 3" in checklist
    assert 'evidence = "copy home verified' in checklist
    assert "done = true" not in checklist  # nothing is ticked in the file (S1); the pull is read as done (S11)
    assert not (home / ".gpusession-pull").exists()


def test_pull_interrupted_mid_file_then_resumed_and_verified(sshd: Sshd, server: tuple[Path, Path],
                                                             tmp_path: Path) -> None:
    import psutil

    sess, deliv = server
    home = tmp_path / "home"
    env = dict(os.environ)
    env.pop("GPUSESSION_HOME", None)
    cmd = [sys.executable, "-m", "gpusession", "pull", f"{sshd.host}:{sess}", "--deliverables",
           str(deliv), "--to", str(home), "--ssh", sshd.ssh, "--bwlimit", "300"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    target = home / "trial-1-deliverables" / "big.bin"
    work = home / ".gpusession-pull" / "trial-1" / "deliverables"
    deadline = time.monotonic() + 60
    killed = False
    while time.monotonic() < deadline and proc.poll() is None:
        tmp_files = [p for p in work.rglob("*") if p.is_file()] if work.exists() else []
        if any(p.stat().st_size > 100_000 for p in tmp_files):
            for child in psutil.Process(proc.pid).children(recursive=True):
                try:  # the copy's rsync (the listing of the server's folder runs beside it, and may have ended)
                    copying = child.name() == "rsync" and any(a.startswith("--partial-dir") for a in child.cmdline())
                except psutil.Error:
                    continue
                if copying:
                    child.send_signal(signal.SIGTERM)  # as a Ctrl-C or a dropped link would
                    killed = True
                    break
            break
        time.sleep(0.1)
    out, err = proc.communicate(timeout=60)
    assert killed, out + err
    assert proc.returncode != 0
    assert "VERIFIED" not in out.replace("NOT VERIFIED", "")
    assert "was interrupted; rerun the same command to resume" in err, err
    assert not target.exists()  # a partial file never sits under its final name
    kept = [p for p in work.rglob("*") if p.is_file()]
    assert kept and max(p.stat().st_size for p in kept) > 100_000  # kept for the resume
    checklist = home / "trial-1" / "checklist.toml"
    assert "verified = true" not in checklist.read_text()
    resumed = _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                    "--ssh", sshd.ssh, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert target.read_bytes() == (deliv / "big.bin").read_bytes()
    assert "verified = true" in checklist.read_text()


def test_pull_flipped_byte_in_copy_is_not_verified(sshd: Sshd, server: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    sess, deliv = server
    home = tmp_path / "home"
    args = (f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home), "--ssh", sshd.ssh)
    assert _pull(*args, cwd=tmp_path).returncode == 0
    copy = home / "trial-1-deliverables" / "notes.txt"
    st = copy.stat()
    data = bytearray(copy.read_bytes())
    data[0] ^= 0x01
    copy.write_bytes(bytes(data))
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and time: rsync skips it
    again = _pull(*args, cwd=tmp_path)
    assert again.returncode == 3, again.stdout + again.stderr
    assert "CHANGED  notes.txt (hash differs" in again.stdout
    assert "the copy differs from the server" in again.stdout
    assert "NOT VERIFIED" in again.stdout
    assert "verified = false" in (home / "trial-1" / "checklist.toml").read_text()
    healed = _pull(*args, "--checksum", cwd=tmp_path)
    assert healed.returncode == 0, healed.stdout


def test_pull_unknown_host_one_line(tmp_path: Path) -> None:
    done = _pull("nohost.invalid:/srv/sessions/trial-1", "--to", str(tmp_path / "home"),
                 "--ssh", "ssh -o BatchMode=yes -o ConnectTimeout=5", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "gpusession: error: unknown host nohost.invalid: check the name (or its entry in ~/.ssh/config)"]
    assert "VERIFIED" not in done.stdout


def test_pull_login_refused_one_line(sshd: Sshd, server: tuple[Path, Path], tmp_path: Path) -> None:
    sess, _ = server
    done = _pull(f"{sshd.host}:{sess}", "--to", str(tmp_path / "home"), "--ssh", sshd.bad_key_ssh,
                 cwd=tmp_path)
    assert done.returncode == 1
    line = done.stderr.strip().splitlines()[-1]
    assert "refused the login (permission denied)" in line, done.stderr


def test_pull_no_rsync_on_the_server_one_line(sshd: Sshd, server: tuple[Path, Path], tmp_path: Path) -> None:
    sess, _ = server
    done = _pull(f"{sshd.host}:{sess}", "--to", str(tmp_path / "home"), "--ssh", sshd.ssh,
                 "--rsync-path", "/nonexistent/rsync", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "gpusession: error: rsync is not installed on 127.0.0.1: install it there (apt-get install rsync)"
        .replace("127.0.0.1", sshd.host))


def test_pull_missing_remote_folder_one_line(sshd: Sshd, tmp_path: Path) -> None:
    done = _pull(f"{sshd.host}:/nonexistent/sessions/trial-1", "--to", str(tmp_path / "home"),
                 "--ssh", sshd.ssh, cwd=tmp_path)
    assert done.returncode == 2
    assert "not found on" in done.stderr and "/nonexistent/sessions/trial-1" in done.stderr


# -- the measured throughput, written back to the server (D2) ---------------------------
def _entries(path: Path) -> list[dict[str, object]]:
    from gpusession.core.files.tomlio import tomllib

    return list(tomllib.loads(path.read_text(encoding="utf-8"))["pull"])


def test_d2_pull_writes_retrieval_toml_on_the_server_with_a_positive_throughput(
        sshd: Sshd, server: tuple[Path, Path], tmp_path: Path) -> None:
    sess, deliv = server
    home = tmp_path / "home"
    before = {p.relative_to(sess): p.stat().st_mtime_ns for p in sess.rglob("*") if p.is_file()}
    done = _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                 "--ssh", sshd.ssh, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (entry,) = _entries(sess / "retrieval.toml")
    assert isinstance(entry["bytes"], int) and entry["bytes"] >= 3_200_000  # rsync's own count
    assert isinstance(entry["seconds"], float) and entry["seconds"] > 0
    assert entry["throughput_bytes_per_s"] == pytest.approx(entry["bytes"] / entry["seconds"], rel=1e-3)
    assert entry["probe"] is False and entry["path"] == "rsync over ssh"
    assert str(entry["at"]).endswith("+00:00")
    assert (sess / "retrieval.toml").stat().st_mode & 0o777 == 0o600
    # nothing else on the server was touched, and no temporary file was left there
    after = {p.relative_to(sess): p.stat().st_mtime_ns for p in sess.rglob("*") if p.is_file()}
    assert {k: v for k, v in after.items() if k != Path("retrieval.toml")} == before
    assert "written to the server's retrieval.toml" in done.stdout
    assert _entries(home / "trial-1" / "retrieval.toml") == [entry]  # the home copy holds it too


def test_d2_second_pull_appends_an_entry(sshd: Sshd, server: tuple[Path, Path], tmp_path: Path) -> None:
    sess, deliv = server
    home = tmp_path / "home"
    args = (f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home), "--ssh", sshd.ssh)
    assert _pull(*args, cwd=tmp_path).returncode == 0
    (first,) = _entries(sess / "retrieval.toml")
    from gpusession.cli import main

    (deliv / "more.bin").write_bytes(os.urandom(500_000))  # the next pull has something to move:
    assert main(["--sessions-dir", str(sess.parent), "manifest", "trial-1", "--deliverables", str(deliv)]) == 0
    again = _pull(*args, cwd=tmp_path)  # a pull copies what the newest manifest lists
    assert again.returncode == 0, again.stdout + again.stderr
    entries = _entries(sess / "retrieval.toml")
    assert len(entries) == 2 and entries[0] == first
    assert entries[1]["bytes"] >= 500_000 and entries[1]["throughput_bytes_per_s"] > 0


def _read_only(folder: Path) -> Callable[[], None]:
    """Make ``folder`` refuse writes (immutable as root, 0555 otherwise); return the undo."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return lambda: folder.chmod(0o755)
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root and chattr +i is not available here: no folder refuses root")
    return lambda: subprocess.run(["chattr", "-i", str(folder)], check=False)


def test_d2_read_only_server_folder_pull_still_verified_figure_stays_home(
        sshd: Sshd, server: tuple[Path, Path], tmp_path: Path) -> None:
    sess, deliv = server
    home = tmp_path / "home"
    undo = _read_only(sess)
    try:
        done = _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                     "--ssh", sshd.ssh, cwd=tmp_path)
    finally:
        undo()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VERIFIED" in done.stdout and "NOT VERIFIED" not in done.stdout
    assert not (sess / "retrieval.toml").exists()
    assert "the server refused the write" in done.stdout and "stayed at home" in done.stdout
    (kept,) = _entries(home / "trial-1" / "retrieval.toml")
    assert kept["throughput_bytes_per_s"] > 0
    # the next pull to a writable folder carries the entry kept at home to the server; it
    # finds nothing new, so it adds no figure of its own (its rsync moved no file: D2)
    again = _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                  "--ssh", sshd.ssh, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "the figures kept at home written to the server's retrieval.toml" in again.stdout
    assert _entries(sess / "retrieval.toml") == [kept]
    (sess / "notes.txt").write_text("new on the server\n")  # something new: measured, appended
    assert _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                 "--ssh", sshd.ssh, cwd=tmp_path).returncode == 0
    entries = _entries(sess / "retrieval.toml")
    assert len(entries) == 2 and entries[0] == kept


def test_d2_probe_caps_the_bytes_and_records_a_small_copy(sshd: Sshd, server: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    from gpusession.core.copyhome.probe import PROBE_CAP_BYTES

    sess, deliv = server
    for n in range(3):  # 90 MiB of deliverables, more than a probe moves
        (deliv / f"part-{n}.bin").write_bytes(os.urandom(30 * 1024 * 1024))
    home = tmp_path / "home"
    done = _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                 "--ssh", sshd.ssh, "--probe", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (entry,) = _entries(sess / "retrieval.toml")
    assert entry["probe"] is True and entry["path"] == "rsync over ssh"
    assert 30 * 1024 * 1024 < int(entry["bytes"]) <= PROBE_CAP_BYTES  # capped, and not nothing
    assert float(entry["throughput_bytes_per_s"]) > 0
    assert "from a small copy" in done.stdout and "of the deliverables" in done.stdout
    assert not (home / "trial-1").exists()  # a probe is never taken for the copy home
    assert not (home / ".gpusession-pull" / "trial-1" / "probe").exists()
    # the pull after it appends to the same file
    after = _pull(f"{sshd.host}:{sess}", "--deliverables", str(deliv), "--to", str(home),
                  "--ssh", sshd.ssh, cwd=tmp_path, timeout=300)
    assert after.returncode == 0, after.stdout + after.stderr  # the parts, not in the manifest, stay there
    assert "3 files not approved were left on the server: part-0.bin, part-1.bin, part-2.bin" in after.stdout
    entries = _entries(sess / "retrieval.toml")
    assert [e["probe"] for e in entries] == [True, False]


def test_d2_probe_without_deliverables_copies_the_session_folder(sshd: Sshd, tmp_path: Path) -> None:
    from gpusession.cli import main

    root = tmp_path / "server" / "sessions"
    assert main(["--sessions-dir", str(root), "new", "trial-2", "--gpu", "RTX A5000", "--lots", "1",
                 "--days", "3"]) == 0
    done = _pull(f"{sshd.host}:{root / 'trial-2'}", "--to", str(tmp_path / "home"), "--ssh", sshd.ssh,
                 "--probe", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "of the session folder" in done.stdout
    (entry,) = _entries(root / "trial-2" / "retrieval.toml")
    assert entry["probe"] is True and int(entry["bytes"]) > 0


def test_h26_a_remote_path_with_spaces_and_brackets_pulls_with_an_rsync_that_splits_arguments(
        sshd: Sshd, tmp_path: Path) -> None:
    """rsync before 3.2.4 (here: RSYNC_OLD_ARGS=1) splits "my work [x]" unless --protect-args."""
    from gpusession.cli import main

    root = tmp_path / "srv" / "my work [x]" / "sessions"
    deliv = tmp_path / "srv" / "my work [x]" / "out put"
    deliv.mkdir(parents=True)
    (deliv / "a b.txt").write_text("accepted\n")
    assert main(["--sessions-dir", str(root), "new", "s", "--gpu", "RTX A5000", "--lots", "1", "--days", "3"]) == 0
    assert main(["--sessions-dir", str(root), "manifest", "s", "--deliverables", str(deliv)]) == 0
    home = tmp_path / "home"
    done = _pull(f"{sshd.host}:{root / 's'}", "--to", str(home), "--ssh", sshd.ssh, cwd=tmp_path,
                 env_extra={"RSYNC_OLD_ARGS": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VERIFIED" in done.stdout and "NOT VERIFIED" not in done.stdout
    assert (home / "s-deliverables" / "a b.txt").read_text() == "accepted\n"


def test_s9_visuals_16_approved_2_rejected_pull_over_ssh_verified_and_the_two_named_left(
        sshd: Sshd, tmp_path: Path) -> None:
    """The rental guide's hand-over: 18 charts, 16 approved, 2 rejected, the manifest, the pull
    over a real sshd (with and without --deliverables): VERIFIED, exit 0, the two left there."""
    from gpusession.cli import main

    root = tmp_path / "server" / "sessions"
    out = tmp_path / "server" / "visuals-out"
    out.mkdir(parents=True)
    charts = [out / f"chart-{i:02d}.png" for i in range(1, 19)]
    for i, chart in enumerate(charts):
        chart.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(20_000 + i))
    base = ["--sessions-dir", str(root)]
    assert main([*base, "new", "visuals", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
                 "--unit", "visual", "--expected-count", "18"]) == 0
    assert main([*base, "approve", "visuals", *map(str, charts[:16]), "--by", "Ana Reviewer"]) == 0
    assert main([*base, "reject", "visuals", *map(str, charts[16:]), "--by", "Ana Reviewer",
                 "--why", "legend cut"]) == 0
    assert main([*base, "manifest", "visuals"]) == 0
    sess = root / "visuals"
    for given in ((), ("--deliverables", str(out))):
        home = tmp_path / f"home{len(given)}"
        done = _pull(f"{sshd.host}:{sess}", *given, "--to", str(home), "--ssh", sshd.ssh, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "16/16 listed file(s) match (size and SHA-256)" in done.stdout
        assert "2 files not approved were left on the server: chart-17.png, chart-18.png" in done.stdout
        assert "VERIFIED: the copy home matches" in done.stdout and "NOT VERIFIED" not in done.stdout
        copied = sorted(p.name for p in (home / "visuals-deliverables").iterdir())
        assert copied == [c.name for c in charts[:16]]
        assert (home / "visuals-deliverables" / "chart-16.png").read_bytes() == charts[15].read_bytes()
        assert "left_on_server = 2" in (home / "visuals" / "checklist.toml").read_text()
    assert charts[16].exists() and charts[17].exists()  # left where they were
