"""A5: ``show`` and ``report`` read the journal from its sealed digest and the lines appended since.

Counted, never timed: the journal bytes decoded typed (every line passes
:func:`gpusession.core.events.reading.decode_line`) by one ``show`` once the digest is
saved -- the lines appended since, the same at 40 and at 160 experiments -- and none read
whole. A hand edit of the journal's middle (a line changed at another length, or at the
same length) is still seen by ``show`` and ``report`` (H-47): the whole journal is decoded
once again. The speed at two sizes is in ``benchmarks/bench_report.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import TEST_NOW, NewSession, cli

from gpusession.core.events import IncidentRecord, reading
from gpusession.core.events.facts import journal_facts
from gpusession.core.folder import journal_digest as digest_mod
from gpusession.core.folder.caches import JOURNAL_DIGEST
from gpusession.core.folder.journal_digest import (
    DIGEST_MIN_SAVE_BYTES,
    journal_digest,
    row_facts_entry,
)
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session
from gpusession.core.records.notefacts import RowFacts
from gpusession.core.retrieval.report import write_report

pytestmark = pytest.mark.calendar  # show and the report say the package window

AT = "2026-12-01T00:00:00+00:00"
#: The experiment whose run is cut short (3 of its 4 runs finished).
SHORT = "sweep-017"


def _line(**fields: object) -> str:
    return json.dumps({"at": AT, "v": 1, **fields}) + "\n"


def _experiment(exp: str, runs: int = 4) -> str:
    """One experiment as the runner journals it: started, each run started and finished, ended."""
    keys = [f"warm:b1:{i}" for i in range(1, 5)]
    out = [_line(event="experiment_started", experiment_id=exp, runs=keys)]
    for i in range(1, runs + 1):
        who = dict(run_key=f"{exp}:warm:b1:{i}", experiment_id=exp, variant_id="b1", phase="warm", run_index=i)
        out.append(_line(event="run_started", worker="w", **who))
        out.append(_line(event="run_finished", ok=True, elapsed_s=0.5, incidents=[],
                         remarks=[{"kind": "record", "text": "scope=full-chain"}], **who))
    out.append(_line(event="experiment_finished", experiment_id=exp))
    return "".join(out)


def _session(new_session: NewSession, name: str, experiments: int) -> Session:
    s = new_session(name, package=Package(gpu_model="RTX A5000", lots=1, days=7, start=TEST_NOW))
    s.journal_path.write_text("".join(_experiment(f"sweep-{e:03d}", 3 if f"sweep-{e:03d}" == SHORT else 4)
                                      for e in range(experiments)), encoding="utf-8")
    assert s.journal_path.stat().st_size > DIGEST_MIN_SAVE_BYTES  # large enough for its digest to be saved
    return s


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The journal bytes decoded typed, by any reader (each line goes through ``decode_line``)."""
    got = {"bytes": 0}
    real = reading.decode_line

    def counting(text: str | bytes, line: int) -> object:
        got["bytes"] += len(text)
        return real(text, line)

    monkeypatch.setattr(reading, "decode_line", counting)
    return got


@pytest.mark.parametrize("experiments", [40, 160])
def test_a5_show_decodes_only_the_lines_appended_since_the_digest(
        new_session: NewSession, sessions_root: Path, capsys: pytest.CaptureFixture[str],
        decoded: dict[str, int], experiments: int) -> None:
    s = _session(new_session, "big", experiments)
    code, _out, err = cli(capsys, sessions_root, "show", "big")
    assert code == 0, err
    assert (s.folder / JOURNAL_DIGEST).is_file()  # the first show folded the whole journal and saved it
    appended = _experiment("late-one")
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write(appended)
    decoded["bytes"] = 0
    code, out, err = cli(capsys, sessions_root, "show", "big")
    assert code == 0, err
    # the appended lines (ends of line not counted), whatever the journal's length
    assert decoded["bytes"] == len(appended.encode()) - appended.count("\n")
    assert SHORT in out and "3 of 4 runs done" not in out  # finished: nothing to resume


def test_a5_digest_gives_the_whole_journals_facts(new_session: NewSession) -> None:
    s = _session(new_session, "big", 40)
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write(_line(event="experiment_started", experiment_id="sweep-001", runs=["warm:b1:5"], resumes=1))
        who = dict(run_key="sweep-001:warm:b1:5", experiment_id="sweep-001", variant_id="b1", phase="warm",
                   run_index=5)
        fh.write(_line(event="run_finished", ok=False, energy_j=12.5, remarks=[{"kind": "record", "text": "x"}],
                       incidents=[{"kind": "run_failed", "what": "out of memory"}], **who))
        fh.write(_line(event="incident", kind="unfinished", experiment_id="sweep-002", what="killed"))
        fh.write('{"cut": ')  # a last line cut by a crash: decoded each time, never saved
    got = journal_digest(s.folder)
    assert got is not None
    read = reading.read_journal(s.journal_path)
    queues: dict[object, list[RowFacts]] = {}
    for rec in read.records:
        entry = row_facts_entry(rec)
        if entry is not None:
            queues.setdefault(entry[0], []).append(RowFacts.from_record(rec))  # type: ignore[arg-type]
    for digest in (got, journal_digest(s.folder)):  # folded now, then from the saved state
        assert digest is not None
        assert digest.journal_facts() == journal_facts(read.records)
        assert digest.row_facts_queues() == queues
        assert digest.incidents_read().unreadable == read.unreadable
        assert digest.incidents_read().records == [r for r in read.records if isinstance(r, IncidentRecord)]
        digest_mod._LAST.clear()


def _edit_middle(path: Path, old: str, new: str) -> None:
    raw = path.read_text(encoding="utf-8")
    at = raw.index(old)
    path.write_text(raw[:at] + new + raw[at + len(old):], encoding="utf-8")


def test_h47_a5_hand_edit_of_the_journals_middle_is_seen_by_show(
        new_session: NewSession, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(new_session, "big", 40)
    code, out, err = cli(capsys, sessions_root, "show", "big")
    assert code == 0 and "3 of 4 runs done" not in out, err
    # SHORT's end edited by hand into a cancelled run (a longer line: the prefix shifts)
    end = _line(event="experiment_finished", experiment_id=SHORT)
    _edit_middle(s.journal_path, end, _line(event="experiment_incomplete", experiment_id=SHORT, cancelled=True))
    code, out, err = cli(capsys, sessions_root, "show", "big")
    assert code == 0, err
    assert "3 of 4 runs done, the run was cancelled" in out


def test_h47_a5_same_length_edit_of_the_journals_middle_is_seen_by_report(
        new_session: NewSession, tmp_path: Path) -> None:
    s = _session(new_session, "big", 40)
    write_report(s, out=tmp_path / "r1.md", now=TEST_NOW)
    assert "unreadable journal line" not in (tmp_path / "r1.md").read_text(encoding="utf-8")
    lines = s.journal_path.read_text(encoding="utf-8").splitlines(keepends=True)
    middle = len(lines) // 2
    _edit_middle(s.journal_path, lines[middle], "x" * (len(lines[middle]) - 1) + "\n")  # same size
    write_report(Session.open(s.folder.parent, s.name), out=tmp_path / "r2.md", now=TEST_NOW)
    assert f"unreadable journal line {middle + 1}: not JSON" in (tmp_path / "r2.md").read_text(encoding="utf-8")


def test_a5_forged_digest_reads_as_absent(new_session: NewSession) -> None:
    s = _session(new_session, "big", 40)
    assert journal_digest(s.folder) is not None
    doc = json.loads((s.folder / JOURNAL_DIGEST).read_text(encoding="utf-8"))
    doc["digest"]["facts"]["stopped"] = {"sweep-001": "forged"}
    (s.folder / JOURNAL_DIGEST).write_text(json.dumps(doc), encoding="utf-8")  # its seal no longer holds
    digest_mod._LAST.clear()
    got = journal_digest(s.folder)
    assert got is not None and got.journal_facts().stopped == {}


def test_a5_small_journal_leaves_the_folder_as_found(new_session: NewSession) -> None:
    s = new_session("small", package=Package(gpu_model="RTX A5000", lots=1, days=7, start=TEST_NOW))
    s.journal_path.write_text(_experiment("sweep-000"), encoding="utf-8")
    got = journal_digest(s.folder)
    assert got is not None and "sweep-000" in got.journal_facts().attempts
    assert not (s.folder / JOURNAL_DIGEST).exists()


def test_a5_digest_refused_by_the_disk_is_no_error(new_session: NewSession, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _session(new_session, "big", 40)
    monkeypatch.setattr(digest_mod, "write_state", lambda *a, **k: False)
    got = journal_digest(s.folder)
    assert got is not None and SHORT in got.journal_facts().attempts
    assert not (s.folder / JOURNAL_DIGEST).exists()
