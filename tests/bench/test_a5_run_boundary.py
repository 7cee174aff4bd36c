"""A run boundary costs the new work, not the session (A5): ``session.toml`` is parsed
once per content, however many experiments it holds and however many boundaries a run
has; a hand edit between runs (H-47) is still read, and the run's rows say it.

Work is bounded by counting (parses of ``session.toml``, journal lines decoded), never by
a stopwatch (A6); the speed at two sizes is in ``benchmarks/bench_run_boundary.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_launcher import ReplayLauncher
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.bench.stops import RunStops
from gpusession.core.events import reading
from gpusession.core.experiment.plan import Experiment
from gpusession.core.files import tomlread
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

pytestmark = pytest.mark.calendar

#: Experiments already in the session beside the one run.
OTHERS = 40


def _many(s: Session) -> None:
    """``OTHERS`` experiments defined as copies of ``e``'s table, written in one update."""
    corpus = write_corpus(s.folder / "corpus" / "eval.jsonl", n=4)
    define_experiment(s, Experiment(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(s.folder)),
        varied="batch", values=(1, 2), runs_per_variant=2, warmup_iterations=0,
        cold_runs_per_variant=0, device="cpu",
    ))

    def copies(doc: dict[str, Any]) -> None:
        table = doc["experiments"]
        for k in range(OTHERS):
            table[f"old-{k:02d}"] = dict(table["e"])

    s.update(copies)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each parse of ``session.toml`` by its reader (behind every open, reload, update, limit)."""
    seen: list[Path] = []
    real = tomlread.loads_toml

    def counted(text: str, path: Path, **kw: Any) -> dict[str, Any]:
        if Path(path).name == "session.toml":
            seen.append(Path(path))
        return real(text, path, **kw)

    monkeypatch.setattr(tomlread, "loads_toml", counted)
    return seen


def _run(s: Session) -> None:
    from gpusession.bench.runner import Runner

    Runner(s, "e", launcher=ReplayLauncher()).run()


def test_a5_a_run_parses_an_unchanged_session_toml_at_most_once(
        session: Session, parses: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)
    _many(session)
    s = Session.open(session.folder.parent, session.name)
    parses.clear()
    boundaries: list[object] = []
    real_may_start = RunStops.may_start

    def may_start(self: RunStops, *args: Any, **kw: Any) -> bool:
        boundaries.append(args)
        return real_may_start(self, *args, **kw)

    monkeypatch.setattr(RunStops, "may_start", may_start)
    _run(s)
    assert (s.results.read()["phase"] == "warm").sum() == 2 * 2  # 2 variants × 2 warm runs
    assert len(boundaries) >= 4  # the limit is read again at each run boundary (D1) ...
    assert len(parses) <= 1  # ... from the document kept, not a parse of 41 experiments


def test_a5_a_run_writes_session_toml_once(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's start (drawn order, invocation) and the environment seen are one write."""
    with_tests_on_path(monkeypatch)
    _many(session)
    s = Session.open(session.folder.parent, session.name)
    writes: list[str] = []
    real_update = Session.update

    def update(self: Session, change: Any) -> None:
        writes.append("update")
        real_update(self, change)

    monkeypatch.setattr(Session, "update", update)
    _run(s)
    assert len(writes) == 1
    kept = Session.open(session.folder.parent, session.name).data["experiments"]["e"]
    assert len(kept["drawn_order"]) == 2 * 2  # the start ...
    assert kept["environment"]["device"] == "cpu"  # ... and what the worker observed, together
    assert "last_invocation" in kept


def test_a5_a_run_decodes_only_its_own_journal_lines(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)
    _many(session)
    # a month of other experiments' lines in the journal
    with open(session.journal_path, "a", encoding="utf-8") as fh:
        for k in range(500):
            fh.write('{"v": 1, "at": "2026-11-29T14:00:00+00:00", "event": "run_finished", '
                     f'"run_key": "old-00:warm:batch-1:{k + 1}", "experiment_id": "old-00", '
                     f'"variant_id": "batch-1", "phase": "warm", "run_index": {k + 1}, "ok": true}}\n')
    decoded: list[int] = []
    real = reading.decode_line

    def counted(text: str | bytes, line: int) -> object:
        decoded.append(line)
        return real(text, line)

    monkeypatch.setattr(reading, "decode_line", counted)
    _run(session)
    assert 0 < len(decoded) < 500  # the lines of the run's experiment and of process starts


def test_h47_a_hand_edit_of_session_toml_between_runs_is_seen(
        session: Session, parses: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    with_tests_on_path(monkeypatch)
    _many(session)
    _run(session)
    first = len(session.results.read())
    path = session.session_toml
    text = path.read_text("utf-8")
    assert "lots = 1\n" in text
    stat_before = path.stat()
    path.write_text(text.replace("lots = 1\n", "lots = 2\n"), "utf-8")  # same size, at once
    assert path.stat().st_size == stat_before.st_size
    parses.clear()
    _run(session)
    assert len(parses) == 1  # the edit is read, once
    lots = session.results.read()["lots"].to_list()
    assert lots[:first] == [1] * first and lots[first:] == [2] * first  # the second run's rows say the edit


def test_h47_an_edit_is_read_by_the_next_open_and_a_copy_is_the_callers(session: Session) -> None:
    s = Session.open(session.folder.parent, session.name)
    s.data["name"] = "changed in memory"  # the caller's copy: never what the next read returns
    again = Session.open(session.folder.parent, session.name)
    assert again.data["name"] == session.name
    text = session.session_toml.read_text("utf-8")
    session.session_toml.write_text(text.replace("days = 7\n", "days = 3\n"), "utf-8")
    assert Session.open(session.folder.parent, session.name).package.days == 3
