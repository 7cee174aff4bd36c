"""Session folders: S7 (atomic writes, crash recovery), H-10, names, bad TOML."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import SESSION_START, NewSession

from gpusession.core.files import tomlio
from gpusession.core.files.errors import BadInput, Failure
from gpusession.core.folder.package import Package, parse_start
from gpusession.core.folder.session import (
    Session,
    list_sessions,
    most_recent,
    validate_name,
)
from gpusession.core.records.results import ResultRow

START = SESSION_START


def test_create_writes_the_layout_with_schema_1(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    for f in ("session.toml", "checklist.toml", "order.toml", "journal.jsonl"):
        assert (s.folder / f).exists(), f
        if f.endswith(".toml"):
            assert (s.folder / f).read_text().startswith("schema = 1\n")
    again = Session.open(sessions_root, "t1")
    assert again.package == Package("RTX A5000", 1, 7, START)
    assert again.package.end == START + timedelta(days=7)


def test_create_never_overwrites_an_existing_session(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    before = s.session_toml.read_bytes()
    with pytest.raises(BadInput, match="already exists"):
        new_session("t1")
    assert s.session_toml.read_bytes() == before


@pytest.mark.parametrize("name", ["../x", "a/b", "", "a" * 300, "..", ".", "a b", "x\\y", "-rf", "é"])
def test_unsafe_session_names_are_refused_with_the_reason(sessions_root: Path, name: str) -> None:
    with pytest.raises(BadInput) as exc:
        Session.create(sessions_root, name)
    assert "name" in str(exc.value)
    assert list(sessions_root.iterdir()) == []


@pytest.mark.parametrize("name", ["visuals-test-01", "demo", "a.b_c-D9"])
def test_safe_session_names_are_accepted(name: str) -> None:
    assert validate_name(name) == name


def test_h10_none_is_omitted_from_toml(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "t1", package=Package(gpu_model=None, lots=2))
    text = s.session_toml.read_text()
    assert "gpu_model" not in text and "lots = 2" in text
    s.data["environment"] = {"driver_version": None, "python_version": "3.11.7", "gpus": [None, "x"]}
    s.save()
    again = Session.open(sessions_root, "t1")
    assert again.data["environment"] == {"python_version": "3.11.7", "gpus": ["x"]}


def test_s7_interrupted_write_leaves_the_old_file_intact(
    sessions_root: Path, monkeypatch: pytest.MonkeyPatch, new_session: NewSession) -> None:
    s = new_session("t1")
    before = s.session_toml.read_bytes()
    real_write = os.write

    def half_write(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tomlio.os, "write", half_write)
    s.data["notes"] = ["x" * 4_000] * 3  # each under the 4 KiB limit of one field
    with pytest.raises(OSError):
        s.save()
    monkeypatch.undo()
    assert s.session_toml.read_bytes() == before
    assert [p.name for p in s.folder.iterdir() if p.name.endswith(".tmp")] == []
    assert Session.open(sessions_root, "t1").package.gpu_model == "RTX A5000"


def test_s7_crash_mid_row_is_recovered_on_reopen_without_loss(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", elapsed_seconds=1.0))
    with open(s.results.path, "ab") as fh:
        fh.write(b"e,v,,,,,,,,,,,,,,,warm,1")  # a crash in the middle of a row
    reopened = Session.open(sessions_root, "t1")
    assert reopened.results.read().height == 1
    partial = list(reopened.folder.glob("resultats-bruts.csv.partial-*"))
    assert len(partial) == 1 and partial[0].read_bytes() == b"e,v,,,,,,,,,,,,,,,warm,1"
    events = [r["event"] for r in reopened.read_journal()]
    assert "incident" in events


def test_s7_run_in_flight_at_a_crash_gets_its_incident_row(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.journal("run_started", run_key="e/v/warm/0", experiment_id="e", variant_id="v", phase="warm", run_index=0)
    s.journal("run_finished", run_key="e/v/warm/0")
    s.journal("run_started", run_key="e/v/warm/1", experiment_id="e", variant_id="v", phase="warm", run_index=1)
    (s.folder / ".run.lock").write_text("999999999")  # a dead PID
    reopened = Session.open(sessions_root, "t1")
    rows = reopened.results.rows()
    assert len(rows) == 1
    assert rows[0].run_index == 1 and rows[0].elapsed_seconds is None
    assert rows[0].corpus_accepted is None and "incident" in (rows[0].notes or "")
    assert not (s.folder / ".run.lock").exists()
    # a second reopen does not record it twice
    assert Session.open(sessions_root, "t1").results.read().height == 1


def test_s7_a_live_runner_is_not_mistaken_for_a_crash(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.journal("run_started", run_key="k", experiment_id="e", variant_id="v", phase="warm", run_index=0)
    (s.folder / ".run.lock").write_text(str(os.getpid()))
    assert Session.open(sessions_root, "t1").results.read().height == 0


def test_s7_a_run_lock_of_another_node_is_not_mistaken_for_a_crash(
    sessions_root: Path, new_session: NewSession
) -> None:
    """A folder shared by the nodes of a torchrun group: the runner's lock names its host."""
    from gpusession.core.folder.journal import lock_holder, lock_host, take_lock

    s = new_session("t1")
    s.journal("run_started", run_key="k", experiment_id="e", variant_id="v", phase="warm", run_index=0)
    spec = s.folder / "runs" / "e" / ".worker-warm.json"
    spec.parent.mkdir(parents=True)
    spec.write_text("{}")
    (s.folder / ".run.lock").write_text("999999999 node-b.example")  # a PID not alive *here*
    assert lock_holder(s.folder) == 999999999 and lock_host(s.folder) == "node-b.example"
    reopened = Session.open(sessions_root, "t1")
    assert reopened.results.read().height == 0  # no run recorded as lost
    assert spec.exists() and (s.folder / ".run.lock").exists()  # the other node's group still runs
    with pytest.raises(Failure) as busy:
        take_lock(s.folder, "t1")
    assert "pid 999999999 on node-b.example" in str(busy.value)
    # this host's own lock: PID and host, and a dead PID of this host is a crash
    (s.folder / ".run.lock").unlink()
    take_lock(s.folder, "t1")
    words = (s.folder / ".run.lock").read_text().split()
    assert words[0] == str(os.getpid()) and len(words) == 2 and lock_host(s.folder) is None


def test_toml_syntax_error_reports_its_line(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.session_toml.write_text('schema = 1\nname = "t1"\ncreated_at = 2026-11-29T14:00:00Z\nlots = = 3\n')
    before = s.session_toml.read_bytes()
    with pytest.raises(BadInput) as exc:
        Session.open(sessions_root, "t1")
    assert "session.toml:4" in str(exc.value) and "syntax" in str(exc.value)
    assert s.session_toml.read_bytes() == before


def test_newer_schema_is_refused_clearly(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.session_toml.write_text('schema = 99\nname = "t1"\ncreated_at = 2026-11-29T14:00:00Z\n')
    with pytest.raises(BadInput, match="newer gpusession"):
        Session.open(sessions_root, "t1")


def test_missing_required_key_is_named(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.session_toml.write_text('schema = 1\nname = "t1"\n')
    with pytest.raises(BadInput, match="created_at"):
        Session.open(sessions_root, "t1")


def test_renamed_folder_still_opens_and_rename_refuses_existing(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("a")
    new_session("b")
    with pytest.raises(BadInput, match="already exists"):
        s.rename("b")
    os.rename(sessions_root / "a", sessions_root / "c")
    assert Session.open(sessions_root, "c").name == "c"
    d = Session.open(sessions_root, "c").rename("d")
    assert d.data["name"] == "d" and (sessions_root / "d").is_dir()


def test_list_and_most_recent(sessions_root: Path, new_session: NewSession) -> None:
    new_session("old")
    os.utime(sessions_root / "old" / "session.toml", (1, 1))
    for p in (sessions_root / "old").iterdir():
        os.utime(p, (1, 1))
    new_session("recent")  # not "new": a command name is refused
    (sessions_root / "broken").mkdir()
    (sessions_root / "broken" / "session.toml").write_text("schema = 99\n")
    names = [s.name for s in list_sessions(sessions_root)]
    assert set(names) == {"old", "recent", "broken"}
    assert most_recent(sessions_root) == "recent"
    broken = next(s for s in list_sessions(sessions_root) if s.name == "broken")
    assert broken.error and "newer" in broken.error


def test_s6_start_needs_an_offset_and_is_kept_in_utc() -> None:
    assert parse_start("2026-11-29T15:00:00+01:00") == START
    assert parse_start("2026-11-29T14:00:00Z") == START
    with pytest.raises(BadInput, match="offset"):
        parse_start("2026-11-29T14:00:00")
    with pytest.raises(BadInput, match="ISO 8601"):
        parse_start("tomorrow")
    p = Package("RTX A5000", 1, 3, START)
    assert p.time_left(START + timedelta(days=1)) == timedelta(days=2)


def test_journal_is_json_lines(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.journal("hello", x=1)
    lines = s.journal_path.read_text().splitlines()
    assert json.loads(lines[-1])["event"] == "hello"


def _finished_row_without_newline(s: Session, *, notes: str, finished: bool) -> bytes:
    """Two rows; the last one's newline removed (a hand edit); its end journaled or not."""
    s.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1,
                               elapsed_seconds=1.0))
    s.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=2,
                               elapsed_seconds=1.5, notes=notes))
    for i in (1, 2) if finished else (1,):
        s.journal("run_started", run_key=f"e:warm:v:{i}", experiment_id="e", variant_id="v",
                  phase="warm", run_index=i)
        s.journal("run_finished", run_key=f"e:warm:v:{i}", experiment_id="e", variant_id="v",
                  phase="warm", run_index=i, ok=True)
    data = s.results.path.read_bytes()
    assert data.endswith(b"\n")
    s.results.path.write_bytes(data[:-1])
    return data


@pytest.mark.parametrize("notes", ["plain note", "a note, with a comma\nand a second line"])
def test_s7_complete_last_row_without_newline_is_kept(
        sessions_root: Path, new_session: NewSession, notes: str) -> None:
    s = new_session("t1")
    whole = _finished_row_without_newline(s, notes=notes, finished=True)
    for _ in range(2):  # the second open finds nothing to do
        reopened = Session.open(sessions_root, "t1")
        assert reopened.recovered == []
        assert reopened.results.path.read_bytes() == whole  # the newline added, nothing moved
        assert [r.run_index for r in reopened.results.rows()] == [1, 2]
        assert reopened.results.rows()[1].notes == notes
    assert list(reopened.folder.glob("resultats-bruts.csv.partial-*")) == []
    kinds = [r.get("kind") for r in reopened.read_journal() if r["event"] == "incident"]
    assert kinds == ["csv_newline_added"]


def test_s7_last_row_without_newline_of_an_unfinished_run_is_moved_aside(
        sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    whole = _finished_row_without_newline(s, notes="plain note", finished=False)
    cut = whole[:-4]  # cut inside its last field: "plain n"
    s.results.path.write_bytes(cut)
    reopened = Session.open(sessions_root, "t1")
    assert [r.run_index for r in reopened.results.rows()] == [1]
    partial = list(reopened.folder.glob("resultats-bruts.csv.partial-*"))
    assert len(partial) == 1 and partial[0].read_bytes().endswith(b",plain n")
    assert any("moved to" in m for m in reopened.recovered)


def test_s7_row_cut_inside_a_quoted_last_field_is_moved_aside_even_when_finished(
        sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    whole = _finished_row_without_newline(s, notes="a note, with a comma", finished=True)
    s.results.path.write_bytes(whole[:-6])  # '..."a note, with a c': the quote never closes
    reopened = Session.open(sessions_root, "t1")
    assert [r.run_index for r in reopened.results.rows()] == [1]
    partial = list(reopened.folder.glob("resultats-bruts.csv.partial-*"))
    assert len(partial) == 1 and partial[0].read_bytes().endswith(b'"a note, with a c')


def test_s7_complete_row_of_an_unfinished_run_is_moved_aside(
        sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    _finished_row_without_newline(s, notes="plain note", finished=False)
    reopened = Session.open(sessions_root, "t1")
    assert [r.run_index for r in reopened.results.rows()] == [1]
    assert len(list(reopened.folder.glob("resultats-bruts.csv.partial-*"))) == 1


def test_s7_load_in_flight_at_a_crash_leaves_corpus_accepted_empty(
        sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    s.journal("load_started", run_key="e:load:all:1", experiment_id="e", variant_id="all",
              phase="load", run_index=1)
    s.journal("run_started", run_key="e:warm:v:1", experiment_id="e", variant_id="v",
              phase="warm", run_index=1)
    (s.folder / ".run.lock").write_text("999999999")  # a dead PID
    rows = {r.phase: r for r in Session.open(sessions_root, "t1").results.rows()}
    assert rows["load"].corpus_accepted is None  # a load validates no corpus
    assert rows["warm"].corpus_accepted is None  # its output was never validated (R7)


def _killed_in_warmup(s: Session, *, lock: bool = True) -> None:
    """What `gpusession run` leaves when killed -9 during warm-up: no end record."""
    s.journal("experiment_started", experiment_id="e", drawn_order=["v"],
              runs=["warm:v:1", "warm:v:2", "warm:v:3"])
    s.journal("load_started", run_key="e:load:all:1", experiment_id="e", variant_id="all",
              phase="load", run_index=1)
    s.results.append(ResultRow(experiment_id="e", variant_id="all", phase="load", run_index=1,
                               elapsed_seconds=2.0))
    s.journal("load_finished", run_key="e:load:all:1", experiment_id="e", variant_id="all",
              phase="load", run_index=1, ok=True)
    if lock:
        (s.folder / ".run.lock").write_text("999999999")  # a dead PID: no clean-up ran


def test_s7_run_killed_in_warmup_is_recorded_once_and_not_all_measured(
        sessions_root: Path, new_session: NewSession) -> None:
    from gpusession.core.records.summary import session_summary

    s = new_session("t1")
    _killed_in_warmup(s)
    assert [r.outcome_words() for r in session_summary(s)] == ["all measured"]  # before recovery
    first = Session.open(sessions_root, "t1")
    started = next(r["at"] for r in first.read_journal() if r["event"] == "experiment_started")
    said = (f"the run of e started at {started} ended without finishing: 0 of 3 runs done "
            "(its process was killed or the machine stopped)")
    assert said in first.recovered
    for _ in range(2):  # reopened twice: said once
        again = Session.open(sessions_root, "t1")
        assert again.recovered == []
    records = [r for r in again.read_journal() if r["event"] == "incident"]
    assert [(r["kind"], r["experiment_id"], r["message"]) for r in records] == [
        ("run_did_not_finish", "e", said)]
    assert [r.outcome_words() for r in session_summary(again)] == [
        "0 of 3 runs done, the run did not finish"]


def test_d5_a_later_finished_run_reads_all_measured_and_leaves_the_killed_runs_words(
        sessions_root: Path, new_session: NewSession) -> None:
    from gpusession.core.records.summary import session_summary

    s = new_session("t1")
    _killed_in_warmup(s)
    opened = Session.open(sessions_root, "t1")
    assert any("0 of 3 runs done" in m for m in opened.recovered)
    # a later run of the same experiment that finished: its rows read "all measured"; the
    # load the killed run wrote keeps that run's own words (D5)
    opened.journal("experiment_started", experiment_id="e", drawn_order=["v"], runs=["warm:v:1"])
    opened.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1,
                                    elapsed_seconds=1.0))
    opened.journal("run_finished", run_key="e:warm:v:1", experiment_id="e", variant_id="v",
                   phase="warm", run_index=1, ok=True)
    opened.journal("experiment_finished", experiment_id="e", runs_done=1, runs_scheduled=1)
    again = Session.open(sessions_root, "t1")
    assert again.recovered == []
    assert [(r.phase, r.outcome_words()) for r in session_summary(again)] == [
        ("load", "attempt 1: 0 of 3 runs done, the run did not finish"), ("warm", "all measured")]


def test_s7_a_live_run_is_not_said_unfinished(
        sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    _killed_in_warmup(s, lock=False)
    (s.folder / ".run.lock").write_text(str(os.getpid()))  # alive: the run goes on
    assert Session.open(sessions_root, "t1").recovered == []
    assert not [r for r in s.read_journal() if r["event"] == "incident"]


def test_s7_a_run_lock_this_process_holds_is_kept_when_taken_again(new_session: NewSession) -> None:
    """`run` holds the lock before it prints; its runner takes it again: never freed in between."""
    from gpusession.core.folder.journal import lock_holder, release_lock, take_lock

    s = new_session("t2")
    lock = take_lock(s.folder, "t2")
    inode = lock.stat().st_ino
    assert take_lock(s.folder, "t2") == lock and lock.stat().st_ino == inode  # the same file, never unlinked
    assert lock_holder(s.folder) == os.getpid()
    release_lock(s.folder)
