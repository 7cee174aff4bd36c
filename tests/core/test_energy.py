"""core/records/energy: a session's GPU energy per run and per accepted corpus (K3, K4 as the cost).

The rows are hand-written with the notes the worker wrote before its facts were typed
(``energy 123.4 J``): the display of such old rows reads them (R11); the typed path is in
``tests/core/test_typed_incidents.py``.
"""

from __future__ import annotations

from typing import Any

from helpers import NewSession

from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session
from gpusession.core.records.energy import (
    EnergySummary,
    energy_note,
    energy_of_notes,
    energy_summary,
)
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval.incidents import row_facts
from gpusession.core.retrieval.report import render_report

COMMON: dict[str, Any] = dict(experiment_id="sweep", device="cuda:0", quality_metric="macro_f1",
                              quality_threshold=0.8, quality_tolerance=0.0)


def _summary(s: Session) -> EnergySummary | None:
    """The energy summary of ``s`` as the report makes it (these rows predate typed facts)."""
    frame = s.results.read()
    return energy_summary(frame, row_facts(frame, s.journal_read().records))


def _rows(*, unsupported: bool = False) -> list[ResultRow]:
    def notes(j: float) -> str:
        return ("energy not supported by this GPU (NVML: Not Supported)" if unsupported
                else f"preceded by nothing; {energy_note(j)}")

    rows = [ResultRow(**COMMON, variant_id="batch-1", phase="load", run_index=1, elapsed_seconds=3.0,
                      notes="load of worker warm; energy 999.0 J")]  # a load is no run: never counted
    for i, j in enumerate((100.0, 120.0, 300.0), 1):  # corpus c1, three repetitions
        rows.append(ResultRow(**COMMON, variant_id="batch-1", phase="warm", run_index=i, elapsed_seconds=1.0,
                              corpus_revision="c1", corpus_accepted=True, quality_value=0.9, notes=notes(j)))
    rows.append(ResultRow(**COMMON, variant_id="batch-8", phase="warm", run_index=1, elapsed_seconds=0.5,
                          corpus_revision="c2", corpus_accepted=True, quality_value=0.9, notes=notes(40.0)))
    rows.append(ResultRow(**COMMON, variant_id="batch-8", phase="warm", run_index=2, elapsed_seconds=None,
                          corpus_revision="c2", notes="incident: out of memory: OutOfMemoryError: x; elapsed "
                          "not measured; " + ("" if unsupported else energy_note(20.0))))
    return rows


def test_r10_energy_note_reads_back_and_says_nothing_for_unsupported() -> None:
    assert energy_of_notes(f"truncated 2 of 10 inputs; {energy_note(123.4)}; throttled") == 123.4
    assert energy_of_notes(energy_note(0.0421)) == 0.042
    assert energy_of_notes("energy not supported by this GPU (NVML: Not Supported)") is None
    assert energy_of_notes(None) is None


def test_k3_k4_energy_per_accepted_corpus_counts_every_run_and_each_corpus_once(new_session: NewSession) -> None:
    s = new_session(package=Package(gpu_model="RTX A5000", lots=1, days=7))
    s.results.append_many(_rows())
    summary = _summary(s)
    assert summary is not None
    assert summary.total_j == 580.0  # 100 + 120 + 300 + 40 + 20 (the failed run too), not the load
    assert summary.accepted == 2 and summary.per_accepted_j == 290.0  # ÷ distinct corpora, not runs
    assert {(v, j, n) for _e, v, j, n in summary.per_variant} == {("batch-1", 120.0, 3), ("batch-8", 40.0, 1)}
    text = render_report(s)
    assert "Energy per accepted corpus: 580.0 J over 5 measured runs" in text
    assert "= 290.0 J" in text and "batch-1 120.0 J (3 runs)" in text


def test_r10_energy_unsupported_is_said_never_zero(new_session: NewSession) -> None:
    s = new_session(package=Package(gpu_model="RTX A5000", lots=1, days=7))
    s.results.append_many(_rows(unsupported=True))
    summary = _summary(s)
    assert summary is not None and summary.total_j is None and summary.per_accepted_j is None
    text = render_report(s)
    assert ("Energy per accepted corpus: not shown — 5 of 5 measured GPU runs have no energy reading "
            "(energy not supported by this GPU)") in " ".join(text.split())
    assert " 0 J" not in text and "0.0 J" not in text


def test_r10_a_cpu_session_has_no_energy_section(new_session: NewSession) -> None:
    s = new_session(package=Package(gpu_model="RTX A5000", lots=1, days=7))
    s.results.append(ResultRow(**{**COMMON, "device": "cpu"}, variant_id="batch-1", phase="warm",
                               run_index=1, elapsed_seconds=1.0))
    assert _summary(s) is None
    assert "Energy per accepted corpus" not in render_report(s)


def test_r10_energy_note_too_large_for_a_float_is_no_reading() -> None:
    huge = "9" * 400  # float("9" * 400) is inf
    assert energy_of_notes(f"energy {huge} J") is None
    assert energy_of_notes(f"energy {huge}.5 J; throttled") is None
    assert energy_of_notes("energy 12.5 J") == 12.5


def test_r10_energy_summary_never_shows_inf(new_session: NewSession) -> None:
    s = new_session(package=Package(gpu_model="RTX A5000", lots=1, days=7))
    big = "9" * 308  # finite, but two of them sum to inf (and their median too)
    for i, notes in enumerate((f"energy {'9' * 400} J", f"energy {big} J", f"energy {big} J",
                               "energy 50.0 J"), 1):
        s.results.append(ResultRow(**COMMON, variant_id="batch-1", phase="warm", run_index=i,
                                   elapsed_seconds=1.0, corpus_revision="c1", corpus_accepted=True,
                                   quality_value=0.9, notes=notes))
    summary = _summary(s)
    assert summary is not None
    text = "\n".join(summary.lines())
    assert "inf" not in text
    assert summary.total_j is None and summary.per_accepted_j is None  # 3 of 4 runs unread
    assert [(v, j, n) for _e, v, j, n in summary.per_variant] == [("batch-1", 50.0, 1)]
