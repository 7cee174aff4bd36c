"""An unchanged results CSV is not checked row by row again by the next process (A5, H-47, H-78).

``results-check.json`` keeps the SHA-256 of the CSV's bytes last found clean, with the
digest of the journal's run ends they were judged against. Work is counted (calls of
``check_rows``), never timed (A6). A hand edit of any byte, a run ended in the journal
since, or a forged state is checked again; a small CSV keeps no state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import digest

from gpusession.core.files.errors import BadInput
from gpusession.core.folder import caches, session_journal
from gpusession.core.folder.session import Session
from gpusession.core.records import results as results_module
from gpusession.core.records.results import ResultRow


def _row(i: int) -> ResultRow:
    return ResultRow(experiment_id="e1", variant_id="batch-1", phase="warm", run_index=i,
                     elapsed_seconds=0.5 + i, lots=1, corpus_accepted=True)


def _end(i: int) -> str:
    return ('{"v": 1, "at": "2026-11-29T14:00:00+00:00", "event": "run_finished", '
            f'"run_key": "e1:warm:batch-1:{i}", "experiment_id": "e1", "variant_id": "batch-1", '
            f'"phase": "warm", "run_index": {i}, "ok": true}}\n')


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each row-by-row check of a results CSV (its rows' count), with a state kept from 0 bytes."""
    seen: list[int] = []
    real = results_module.check_rows

    def counted(path: Path, text: str, run_ends: Any = None) -> Any:
        seen.append(text.count("\n") - 1)
        return real(path, text, run_ends)

    monkeypatch.setattr(results_module, "check_rows", counted)
    monkeypatch.setattr(caches, "RESULTS_CHECK_MIN_BYTES", 0)
    return seen


def _fresh(s: Session) -> Session:
    """The session as the next process opens it (nothing kept in memory)."""
    results_module._LAST_READ.clear()
    return Session.open(s.folder.parent, s.name, recover=False, check_files=False)


def _with_rows(s: Session, n: int) -> None:
    s.results.append_many([_row(i) for i in range(1, n + 1)])
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write("".join(_end(i) for i in range(1, n + 1)))


def test_a5_an_unchanged_csv_is_checked_once_across_processes(session: Session, checks: list[int]) -> None:
    _with_rows(session, 5)
    assert _fresh(session).results.read().height == 5
    assert checks == [5] and (session.folder / caches.RESULTS_CHECK_STATE).exists()
    again = _fresh(session).results.read()  # the next process: the same bytes, the same ends
    assert again.height == 5 and checks == [5]
    with open(session.journal_path, "a", encoding="utf-8") as fh:  # a line that ends no run
        fh.write('{"v": 1, "at": "2026-11-29T14:00:00+00:00", "event": "note", "text": "x"}\n')
    assert _fresh(session).results.read().height == 5 and checks == [5]


def test_h47_a_hand_edit_or_a_run_ended_since_is_checked_again(session: Session, checks: list[int]) -> None:
    _with_rows(session, 5)
    _fresh(session).results.read()
    text = session.results.path.read_text("utf-8")
    session.results.path.write_text(text.replace(",1.5,", ",9.5,", 1), "utf-8")  # same size, by hand
    assert _fresh(session).results.read()["elapsed_seconds"].to_list()[0] == 9.5
    assert checks == [5, 5]
    with open(session.journal_path, "a", encoding="utf-8") as fh:
        fh.write(_end(6))  # a run ended whose row is not in the CSV: judged, named missing
    s = _fresh(session)
    s.results.read()
    assert checks == [5, 5, 5] and [m.key for m in s.results.missing] == ["e1:warm:batch-1:6"]
    s = _fresh(session)
    s.results.read()  # not clean: never kept, judged again
    assert checks == [5, 5, 5, 5] and len(s.results.missing) == 1
    session.results.path.write_text(text.replace(",1.5,", ",x,", 1), "utf-8")  # a bad cell by hand
    with pytest.raises(BadInput, match="elapsed_seconds"):
        _fresh(session).results.read()


def test_h78_a_forged_state_reads_as_absent(session: Session, checks: list[int]) -> None:
    _with_rows(session, 5)
    _fresh(session).results.read()
    path = session.results.path
    path.write_text(path.read_text("utf-8").replace(",1.5,", ",x,", 1), "utf-8")
    state_path = session.folder / caches.RESULTS_CHECK_STATE
    state = json.loads(state_path.read_text("utf-8"))
    state["digest"] = caches.bytes_digest(path.read_bytes())  # the seal is not recomputed
    state_path.write_text(json.dumps(state), "utf-8")
    with pytest.raises(BadInput, match="elapsed_seconds"):
        _fresh(session).results.read()


def test_a5_a_small_csv_keeps_no_state(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    _with_rows(session, 5)
    before = digest(session.folder)
    _fresh(session).results.read()
    assert digest(session.folder) == before


def test_a5_the_run_ends_are_counted_from_the_saved_state_and_h47_a_hand_edit_whole(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_journal, "JOURNAL_REWRITE_BYTES", 1)  # a state for any journal
    counted: list[bytes] = []
    real = session_journal.run_end_counts

    def count(raw: bytes) -> dict[str, int]:
        counted.append(raw)
        return real(raw)

    monkeypatch.setattr(session_journal, "run_end_counts", count)
    _with_rows(session, 3)
    assert _fresh(session)._run_ends() == {f"e1:warm:batch-1:{i}": 1 for i in (1, 2, 3)}
    assert (session.folder / caches.RUN_ENDS_STATE).exists()
    with open(session.journal_path, "a", encoding="utf-8") as fh:
        fh.write(_end(3))
    counted.clear()
    assert _fresh(session)._run_ends()["e1:warm:batch-1:3"] == 2  # the next process ...
    assert b"".join(counted) == _end(3).encode()  # ... counts the line appended alone
    text = session.journal_path.read_text("utf-8")
    session.journal_path.write_text(text.replace(_end(1), "", 1), "utf-8")  # an end deleted by hand
    counted.clear()
    assert "e1:warm:batch-1:1" not in _fresh(session)._run_ends()
    assert b"".join(counted) == session.journal_path.read_bytes()  # counted whole
