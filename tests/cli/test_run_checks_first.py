"""`run` checks before it measures, and says what a cut run is.

* every file the run writes is checked (links, writability) before any measurement or
  ``run_started``: exit 2 with one line, nothing written;
* a bad definition is refused before "running …" is printed;
* a run ended by a signal reads "not measured, corpus not validated", is not counted as
  done, and the journal names the interruption as the cause;
* worker spec files are removed when their group has ended, and recovery removes the
  ones a crash left.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

from gpusession.core.folder.session import RUN_LOCK, Session


def _define(capsys: pytest.CaptureFixture[str], root: Path, name: str, exp_id: str,
            command: str, *extra: str) -> None:
    code, _out, err = cli(capsys, root, "experiment", name, "define", "--id", exp_id,
                          "--workload", "command", "--values", "1", "--runs", "1",
                          "--warmup", "0", "--cold-runs", "0", "--command", command, *extra)
    assert code == 0, err


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every plain file under ``folder`` (links not followed) and its bytes."""
    out: dict[str, bytes] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(folder))] = p.read_bytes()
    return out


# -- every file the run writes is checked first ------------------------------------
@pytest.mark.parametrize("target", ["resultats-bruts.csv", "journal.jsonl", "runs", "spec"])
def test_s7_a_linked_output_is_refused_before_any_measurement(
    sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
    tmp_path: Path, target: str,
) -> None:
    folder = session.folder
    marker = tmp_path / "measured"
    _define(capsys, sessions_root, session.name, "e", f"touch {marker}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if target == "runs":
        link = folder / "runs"
        link.symlink_to(elsewhere, target_is_directory=True)
    elif target == "spec":
        (folder / "runs" / "e").mkdir(parents=True)
        link = folder / "runs" / "e" / ".worker-warm.json"
        link.symlink_to(elsewhere / "spec.json")
    else:
        (elsewhere / target).write_bytes((folder / target).read_bytes()
                                         if (folder / target).exists() else b"")
        (folder / target).unlink(missing_ok=True)
        link = folder / target
        link.symlink_to(elsewhere / target)
    before = _snapshot(folder)
    before_elsewhere = _snapshot(elsewhere)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "e",
                         "--headless")
    assert code == 2, out + err
    assert "is a symbolic link" in err and "nothing was written" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "running e" not in out  # refused before anything was said or measured
    assert not marker.exists()  # the command never ran
    assert _snapshot(folder) == before and _snapshot(elsewhere) == before_elsewhere
    assert not (folder / RUN_LOCK).exists()
    assert link.is_symlink()


def test_s7_an_unwritable_runs_folder_is_refused_before_any_measurement(
    sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = session.folder
    marker = tmp_path / "measured"
    _define(capsys, sessions_root, session.name, "e", f"touch {marker}")
    runs = folder / "runs"
    runs.mkdir(exist_ok=True)
    real_access = os.access

    def access(path: Any, mode: int, **kw: Any) -> bool:  # as for a user without rights there
        return False if Path(path) == runs else real_access(path, mode, **kw)

    monkeypatch.setattr(os, "access", access)  # the test may run as root, who writes anywhere
    before = _snapshot(folder)
    code, _out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 2 and "not writable" in err and "nothing was written" in err
    assert not marker.exists() and _snapshot(folder) == before


# -- the definition is checked before anything is printed ---------------------------
def test_bad_definition_refused_before_the_running_line(
    sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
) -> None:
    _define(capsys, sessions_root, session.name, "slp", "true")
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out

    def bad(doc: dict[str, Any]) -> None:
        doc["experiments"]["slp"]["runs_per_variant"] = 0

    Session.open(sessions_root, session.name).update(bad)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "slp",
                         "--headless")
    assert code == 2
    assert "runs_per_variant" in err
    assert out == ""  # no "running slp …", no "appending to 2 existing row(s)"


# -- a run cut by a signal was not measured, not validated, not done ----------------
def test_interrupted_run_is_not_validated_and_not_counted_done(
    sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
) -> None:
    from gpusession.bench.runner import Runner
    from gpusession.core.events import RowAppended, RunnerEvent, describe

    _define(capsys, sessions_root, session.name, "sleepy", "sleep 25", "--cold-runs", "1")
    session = Session.open(sessions_root, session.name)  # with the definition
    events: list[RunnerEvent] = []
    runner = Runner(session, "sleepy", on_event=events.append)

    def hang_up() -> None:  # once the cold run's command runs
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(r.get("event") == "command_started" for r in session.read_journal()):
                runner.interrupt("SIGHUP")
                return
            time.sleep(0.05)

    t = threading.Thread(target=hang_up)
    t.start()
    try:
        outcome = runner.run()
    finally:
        t.join()
    assert outcome.interrupted == "SIGHUP" and not outcome.completed
    cut = [e.row for e in events if isinstance(e, RowAppended) and e.row.phase == "cold"]
    assert len(cut) == 1 and cut[0].elapsed_seconds is None
    words = [describe(e) or "" for e in events if isinstance(e, RowAppended) and e.row.phase == "cold"]
    assert words[0].endswith("not measured, corpus not validated"), words
    assert all("REJECTED" not in (describe(e) or "") for e in events)
    end = [r for r in session.read_journal() if r.get("event") == "experiment_incomplete"]
    assert len(end) == 1
    assert end[0]["runs_done"] == 0 and end[0]["runs_scheduled"] == 2
    assert end[0]["message"] == "incomplete: 0 of 2 runs done (interrupted by SIGHUP)"


def test_run_pane_words_say_not_validated_for_a_cut_run() -> None:
    from gpusession.ui.panes.run import accepted_words

    cut = {"phase": "cold", "elapsed_seconds": None, "corpus_accepted": False,
           "ids_match": None, "format_valid": None, "quality_value": None}
    assert accepted_words(cut) == "not validated"
    assert accepted_words({**cut, "elapsed_seconds": 1.0, "ids_match": False}) == "rejected"
    assert accepted_words({**cut, "corpus_accepted": True, "elapsed_seconds": 1.0}) == "accepted"


# -- worker specs do not outlive their group ----------------------------------------
def test_worker_specs_removed_after_the_run_and_on_recovery(
    sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
) -> None:
    _define(capsys, sessions_root, session.name, "e", "true", "--cold-runs", "1")
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out
    exp_dir = session.folder / "runs" / "e"
    assert exp_dir.is_dir()
    assert list(exp_dir.glob(".worker-*")) == []
    # a crash left one (and a link of that name, which recovery leaves alone)
    stale = exp_dir / ".worker-warm.json"
    stale.write_text(json.dumps({"worker": "warm"}), encoding="utf-8")
    link = exp_dir / ".worker-cold.json"
    link.symlink_to(session.folder / "nowhere.json")
    Session.open(sessions_root, session.name)  # recovery on a writable open
    assert not stale.exists()
    assert link.is_symlink()
