"""Hostile world, round 5: outputs that are no regular file (H-52).

An experiment's output folder holds a FIFO, a link to ``/dev/zero`` and a link out of the
folder beside one real file, and no ``--deliverable-format`` is given: ``run`` never
blocks on them (it is started as a person starts it, with a timeout that only catches a
hang), each is named and none is hashed or counted; nothing outside the folder is read.
"""

from __future__ import annotations

import json
import sys

from helpers import RunCli

from gpusession.core.folder.session import Session

MAKE = """\
import os, sys, pathlib
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
(out / "real.png").write_bytes(b"\\x89PNG\\r\\n\\x1a\\n" + b"x" * 20)
if not (out / "pipe").exists():
    os.mkfifo(out / "pipe")
for name, target in (("zero", "/dev/zero"), ("etc", "/etc/hostname")):
    if not os.path.lexists(out / name):
        os.symlink(target, out / name)
"""


def test_h52_a_fifo_a_device_and_a_link_out_are_named_never_hashed(run_cli: RunCli, session: Session) -> None:
    (session.folder / "make.py").write_text(MAKE)
    (session.folder / "rule.py").write_text("print('ok')\n")
    done = run_cli("experiment", session.name, "define", "--id", "odd", "--workload", "command",
                   "--values", "1", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
                   "--command", f"{sys.executable} make.py {{output}}",
                   "--accept", f"{sys.executable} rule.py {{output}}", cwd=session.folder)
    assert done.returncode == 0, done.stderr
    done = run_cli("run", session.name, "--headless", timeout=120)  # a hang fails here
    notes = [r.notes for r in session.results.rows()]
    assert done.returncode == 0, (notes, done.stdout[-2000:] + done.stderr[-2000:])
    reports = sorted((session.folder / "validation" / "odd").rglob("*.accept.json"))
    assert reports
    doc = json.loads(reports[-1].read_text())
    assert doc["accepted"] is True and list(doc["files"]) == ["real.png"]
    assert sorted(doc["not_counted"]) == ["etc", "pipe", "zero"]
    row = [r for r in session.results.rows() if r.phase == "warm"][-1]
    assert "not counted (no regular file inside the output): " in (row.notes or "")
    done = run_cli("cost", session.name, "--json")
    assert json.loads(done.stdout)["deliverables"]["count"] == 1  # the real file alone
