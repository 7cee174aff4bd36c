"""Two processes updating one session at once lose nothing (S7).

Every read-modify-write of ``checklist.toml``, ``order.toml`` and ``session.toml`` holds
the session folder's lock; a lock held past the timeout gives one line, a non-zero exit
and changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.folder import session as session_mod
from gpusession.core.folder.session import Session
from gpusession.core.money.order import load_order
from gpusession.core.retrieval.checklist import load_checklist

N = 50

_WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from gpusession.core.folder.session import Session
    root, name, kind, tag, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    s = Session.open(Path(root), name, recover=False)
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()  # both start together
    for i in range(n):
        if kind == "checklist":
            from gpusession.core.retrieval.checklist import add_item
            add_item(s, 3, f"{tag} item {i}")
        elif kind == "order":
            from gpusession.core.money.order import record_event
            record_event(s, "ordered", source="you", note=f"{tag} note {i}")
        else:
            s.update(lambda d, i=i: d.setdefault("marks", []).append(f"{tag}-{i}"))
""")


def _two_writers(root: Path, name: str, kind: str) -> None:
    env = dict(os.environ)
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(root), name, kind, tag, str(N)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
        for tag in ("A", "B")
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            _out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_two_processes_adding_checklist_items_keep_all_of_them(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t")
    _two_writers(sessions_root, "t", "checklist")
    own = [it for it in load_checklist(s) if it.custom]
    texts = {it.text for it in own}
    assert len(own) == 2 * N and len({it.id for it in own}) == 2 * N
    assert texts == {f"{t} item {i}" for t in "AB" for i in range(N)}


def test_two_processes_recording_order_notes_keep_all_of_them(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t")
    _two_writers(sessions_root, "t", "order")
    notes = [e.note for e in load_order(s).events]
    assert sorted(notes) == sorted(f"{t} note {i}" for t in "AB" for i in range(N))
    journaled = [r for r in s.read_journal() if r.get("event") == "order_event"]
    assert len(journaled) == 2 * N


def test_s7_two_processes_updating_session_toml_keep_all_changes(sessions_root: Path) -> None:
    Session.create(sessions_root, "t")
    _two_writers(sessions_root, "t", "session")
    marks = Session.open(sessions_root, "t").data["marks"]
    assert sorted(marks) == sorted(f"{t}-{i}" for t in "AB" for i in range(N))


def test_a_lock_held_past_the_timeout_gives_one_line_and_changes_nothing(
    sessions_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import digest

    s = Session.create(sessions_root, "t")
    code, _out, err = cli(capsys, sessions_root, "checklist", "t", "add", "3", "first")
    assert code == 0, err
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True); time.sleep(60)", str(s.folder)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(session_mod, "LOCK_TIMEOUT_S", 0.3)
        before = digest(s.folder)
        for args in (("checklist", "t", "add", "3", "second"),
                     ("order", "t", "event", "ordered", "--note", "x")):
            code, _out, err = cli(capsys, sessions_root, *args)
            assert code == 1, err
            line = one_line(err)
            assert "another gpusession process" in line and "nothing was changed" in line
        assert digest(s.folder) == before
    finally:
        holder.kill()
        holder.wait()
    code, _out, err = cli(capsys, sessions_root, "checklist", "t", "add", "3", "second")
    assert code == 0, err
    assert [it.text for it in load_checklist(s) if it.custom] == ["first", "second"]


def test_the_lock_is_reentrant_and_shared_by_threads(sessions_root: Path) -> None:
    import threading

    from gpusession.core.retrieval.checklist import add_item

    s = Session.create(sessions_root, "t")
    with s.locked("test"):
        add_item(s, 3, "inside a held lock")  # nested in one thread: no deadlock
    threads = [threading.Thread(target=add_item, args=(s, 4, f"thread {i}")) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len([it for it in load_checklist(s) if it.custom]) == 9
