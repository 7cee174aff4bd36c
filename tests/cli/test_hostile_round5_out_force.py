"""Hostile world, round 5: ``--out X --force`` replaces a regular file only (H-55).

On a rented server people run as root: ``report --out /dev/null --force`` once left a
regular file where the device was. Every writer goes through one atomic write, which
refuses a device, a FIFO, a socket or a folder; each ``--out`` also refuses a link. The
device here is a copy of ``/dev/null``'s node made in a temporary folder (root only),
never the machine's own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.files.errors import BadInput
from gpusession.core.files.tomlio import write_atomic_bytes
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow


def _targets(tmp: Path) -> dict[str, Path]:
    out = {}
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    out["fifo"] = fifo
    link = tmp / "link"
    link.symlink_to("/proc/self/fd/1")
    out["link"] = link
    if os.geteuid() == 0:  # a device node of our own (the major/minor of /dev/null)
        dev = tmp / "null"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        out["device"] = dev
    return out


def _kind(path: Path) -> int:
    return stat.S_IFMT(os.lstat(path).st_mode)


def _commands(session: Session, tmp: Path, target: Path) -> list[list[str]]:
    deliver = tmp / "deliver"
    deliver.mkdir(exist_ok=True)
    (deliver / "a.png").write_bytes(b"png")
    return [["report", session.name, "--out", str(target), "--force"],
            ["export", session.name, "--format", "csv", "--out", str(target), "--force"],
            ["manifest", session.name, "--deliverables", str(deliver), "--out", str(target), "--force"]]


def test_h55_force_never_replaces_a_device_a_fifo_or_a_link(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                     run_index=1, elapsed_seconds=0.1))
    targets = _targets(tmp_path)
    for kind, target in targets.items():
        before = _kind(target)
        for args in _commands(session, tmp_path, target):
            code, out, err = cli(capsys, sessions_root, *args)
            line = one_line(err)
            assert code == 2, (kind, args, out, err)
            assert str(target) in line and "nothing was written" in line, line
            assert ("symbolic link" in line if kind == "link" else "writes only regular files" in line), line
            assert _kind(target) == before, (kind, args)  # still the node it was
    assert "device" in targets or os.geteuid() != 0


def test_h55_the_one_atomic_write_refuses_anything_but_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    for path in (fifo, folder):
        with pytest.raises(BadInput) as exc:
            write_atomic_bytes(path, b"x")
        assert str(path) in str(exc.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and folder.is_dir()
    regular = tmp_path / "plain.txt"
    regular.write_text("old")
    write_atomic_bytes(regular, b"new")  # a regular file is replaced, as before
    assert regular.read_bytes() == b"new"
