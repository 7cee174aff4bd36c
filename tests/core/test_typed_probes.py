"""The report's risks and environment list decided from the probes' typed fields, never their words (S1, G§6).

A probe (:mod:`gpusession.core.retrieval.evidence`) says what it found in words and
types what a reader may decide from (:class:`ProbeReading`): whether there is something
to show, the risk it found, the line that repeats the last run's record. The summary's
risks and the environment section follow those fields even when the words say otherwise.
"""

from __future__ import annotations

import pytest
from helpers import TEST_NOW

from gpusession.core.folder.session import Session
from gpusession.core.gpu.nvml import NvmlSnapshot
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval.evidence import (
    ProbeReading,
    device_probe,
    on_gpu_probe,
    order_match_evidence,
    order_match_probe,
    protocol_findings,
)
from gpusession.core.retrieval.report import _env, _protocols, _risk_lines
from gpusession.core.retrieval.session_facts import session_facts

pytestmark = pytest.mark.calendar

NO_NVML = NvmlSnapshot(False, "NVML not installed", None, ())


def _ran_on(session: Session, device: str, peak_allocated_bytes: int | None = None) -> None:
    session.results.append_many([ResultRow(experiment_id="e", variant_id="batch-4", phase="warm", run_index=1,
                                           device=device, elapsed_seconds=0.5,
                                           peak_allocated_bytes=peak_allocated_bytes)])


def _risks(session: Session, probes: list[tuple[str, ProbeReading]]) -> str:
    facts = session_facts(session, now=TEST_NOW)  # the record's risks, the probes' after the copy home
    return " ".join(" ".join(_risk_lines(facts, probes)).split())


def test_g6_a_run_on_the_cpu_is_a_typed_risk(session: Session) -> None:
    _ran_on(session, "cpu")
    probe = on_gpu_probe(session)
    assert probe.risk == "ran on cpu, not (only) on the GPU"
    assert probe.text.startswith("WARNING: the last run (experiment e) ran on cpu")  # the words, for people
    assert "ran on cpu, not (only) on the GPU" in _risks(session, [("On the GPU", probe)])


def test_g6_a_gpu_run_without_allocation_is_a_typed_risk(session: Session) -> None:
    _ran_on(session, "cuda:0", 0)
    probe = on_gpu_probe(session)
    assert probe.risk is not None and "no allocation on the GPU was recorded" in probe.risk
    _ran_on(session, "cuda:0", 1024)
    assert on_gpu_probe(session).risk is None


def test_s1_the_risks_follow_the_typed_risk_not_the_words(session: Session) -> None:
    said_warning = ProbeReading("WARNING: words that look like a risk", risk=None)
    quiet_words = ProbeReading("everything is fine, in words", risk="the typed risk")
    risks = _risks(session, [("a", said_warning), ("b", quiet_words)])
    assert "the typed risk" in risks
    assert "look like a risk" not in risks


def test_s1_the_environment_list_follows_shown_and_the_recorded_line(session: Session) -> None:
    _ran_on(session, "cuda:0", 1024)
    frame = session.results.read()
    probes = [("Hidden", ProbeReading("WARNING-free words, nothing to say", shown=False)),
              ("Shown", ProbeReading("not available yet, in words only\nsecond line\nthird line", recorded_line=2)),
              ("Risky", ProbeReading("fine words", risk="said in the summary"))]
    text = "\n".join(_env(session, frame, probes))
    assert "**Hidden:**" not in text and "**Risky:**" not in text
    assert "**Shown:** not available yet, in words only" in text
    assert "second line" in text and "third line" not in text  # the table says the last run's record


def test_s1_the_device_probe_types_nvml_unread_and_the_last_runs_line(session: Session) -> None:
    probe = device_probe(session, NO_NVML)
    assert not probe.shown and probe.recorded_line is None
    _ran_on(session, "cuda:0", 1024)
    probe = device_probe(session, NO_NVML)
    assert probe.recorded_line == 1 and probe.text.splitlines()[1].startswith("last run (experiment e)")


def test_s5_nothing_to_compare_with_the_order_is_not_shown(session: Session) -> None:
    assert not order_match_probe(session, NO_NVML, record=False).shown
    _ran_on(session, "cpu")
    probe = order_match_probe(session, NO_NVML, record=False)
    assert not probe.shown and probe.text == order_match_evidence(session, NO_NVML, record=False)


def test_v5_each_experiments_protocol_line_is_picked_by_its_id_never_by_the_words(session: Session) -> None:
    session.data["experiments"] = {
        "e": {"workload": "w", "defined_at": "2026-11-29T15:00:00+00:00", "protocol": {"metric": "macro_f1"}},
        # its words start with "e: ", as a line about experiment e would
        "e: x": {"workload": "w", "defined_at": "2026-11-29T16:00:00+00:00"},
    }
    found = protocol_findings(session)
    assert set(found) == {"e", "e: x"} and all(not late for _, late in found.values())
    text = " ".join(" ".join(_protocols(session)).split())
    assert text.count("Protocol stored 2026-11-29T15:00:00+00:00") == 1  # said for e alone
    assert text.count("Protocol stored 2026-11-29T16:00:00+00:00") == 1
