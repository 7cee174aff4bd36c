"""A recorded row costs the new work, not the session (A5): after each row the recorder
moves ``summary.json`` by that row alone, reading neither the CSV nor the journal, and
the counts stay those of a whole recount; a hand edit between rows is recounted whole.

Work is bounded by counting (calls of the whole recount and of the journal's reader),
never by a stopwatch (A6); the speed at two sizes is in ``benchmarks/bench_record_row.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import status
from gpusession.core.retrieval.status import (
    count_appended_row,
    csv_signature,
    current_counts,
    refresh_counts,
)


def _row(i: int, *, accepted: bool | None = True, revision: str = "c1") -> ResultRow:
    return ResultRow(experiment_id="e", variant_id=f"batch-{1 + i % 3}", phase="warm", run_index=i,
                     elapsed_seconds=0.01 * i, corpus_revision=revision, corpus_accepted=accepted)


def _record(s: Session, row: ResultRow) -> None:
    """What the recorder does for one row (bench/recorder.py)."""
    before = csv_signature(s.folder)
    s.results.append(row)
    count_appended_row(s.folder, before, row.corpus_revision if row.corpus_accepted else None)


@pytest.fixture
def recounts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the whole CSV is recounted and the whole journal read."""
    calls = {"recount": 0, "journal": 0}
    real_current, real_ends = status._current, status.journal_run_ends

    def current(folder: Path) -> object:
        calls["recount"] += 1
        return real_current(folder)

    def ends(folder: Path) -> dict[str, int]:
        calls["journal"] += 1
        return real_ends(folder)

    monkeypatch.setattr(status, "_current", current)
    monkeypatch.setattr(status, "journal_run_ends", ends)
    return calls


def test_a5_each_recorded_row_moves_the_counts_without_a_recount(
        session: Session, recounts: dict[str, int]) -> None:
    _record(session, _row(1))  # the first row: no summary yet, one whole count
    first = dict(recounts)
    assert first["recount"] == 1
    for i in range(2, 202):
        _record(session, _row(i, accepted=i % 5 != 0, revision=f"c{i % 4}"))
    assert recounts == first  # 200 rows more: the CSV and the journal never read again
    doc = json.loads((session.folder / "summary.json").read_text())
    assert doc["rows"] == 201 and doc["csv_sha256"] == ""
    # the counts are those of a whole recount, as `show` counts
    (session.folder / "summary.json").unlink()
    whole = current_counts(session.folder)
    assert (doc["rows"], sorted(doc["accepted_revisions"])) == (whole.rows, sorted(whole.accepted_revisions))
    assert doc["csv_size_bytes"] == whole.csv_size_bytes == (session.folder / "resultats-bruts.csv").stat().st_size


def test_a5_status_trusts_the_chained_summary_and_a_hand_edit_is_recounted(
        session: Session, recounts: dict[str, int]) -> None:
    for i in range(1, 6):
        _record(session, _row(i))
    csv_path = session.folder / "resultats-bruts.csv"
    assert current_counts(session.folder).rows == 5
    lines = csv_path.read_text().splitlines(keepends=True)
    with open(csv_path, "a") as fh:  # a row copied by hand: the signature no longer matches
        fh.write(lines[-1])
    before = recounts["recount"]
    _record(session, _row(6))
    assert recounts["recount"] == before + 1  # recounted whole, once
    assert current_counts(session.folder).rows == 7  # no journal end judges the copy here: counted
    refresh_counts(session.folder)
    assert json.loads((session.folder / "summary.json").read_text())["csv_sha256"] != ""


def test_a5_a_summary_edited_by_hand_is_never_moved_on(session: Session, recounts: dict[str, int]) -> None:
    for i in range(1, 4):
        _record(session, _row(i))
    path = session.folder / "summary.json"
    doc = json.loads(path.read_text())
    doc["rows"] = 99  # the seal no longer matches (H-47)
    path.write_text(json.dumps(doc))
    before = recounts["recount"]
    _record(session, _row(4))
    assert recounts["recount"] == before + 1
    assert json.loads(path.read_text())["rows"] == 4
