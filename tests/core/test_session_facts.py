"""The session's one record of what a person is told (A1): its fields per kind of session.

A corpus experiment, a rule experiment, approvals, nothing accepted (each figure unmeasured
with its reason, never 0) and a rejected fastest variant (REJECTED, never the keep).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import TEST_NOW, cli, run_rule_experiment

from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval.session_facts import SessionFacts, Unmeasured, Verdict, session_facts

#: Reads the package window and the cost: run again a year ahead and a month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

PNG = b"\x89PNG\r\n\x1a\n"


def _approved_visuals(capsys: pytest.CaptureFixture[str], root: Path, s: Session, out: Path) -> None:
    """Unit ``visual``; three files, two approved by Ana and one rejected."""
    out.mkdir()
    for i in (1, 2, 3):
        (out / f"chart-0{i}.png").write_bytes(PNG + bytes([i]) * 8)
    assert cli(capsys, root, "package", s.name, "--unit", "visual")[0] == 0
    code, _, err = cli(capsys, root, "approve", s.name, str(out / "chart-01.png"), str(out / "chart-02.png"),
                       "--by", "Ana")
    assert code == 0, err
    code, _, err = cli(capsys, root, "reject", s.name, str(out / "chart-03.png"), "--by", "Ana", "--why", "blurred")
    assert code == 0, err


def test_s10_k3_a_corpus_experiment_counts_distinct_corpora_and_keeps_the_fastest_accepted(
        measured_session: Session) -> None:
    facts = session_facts(measured_session, now=TEST_NOW)
    assert facts.count == 1 and facts.answer.count is not None and facts.answer.count.source == "corpora"
    assert facts.package_total_usd_minor == 5500 and facts.per_deliverable_usd_minor == 5500  # K1, K3
    assert facts.accepted_corpora == 1
    assert {v.variant_id: v.verdict for v in facts.verdicts} == {
        "batch-1": Verdict.ACCEPTED, "batch-4": Verdict.ACCEPTED, "batch-8": Verdict.ACCEPTED}
    (keep,) = facts.keep
    assert keep.variant_id == "batch-8" and keep.widest is not None and keep.widest.other == "batch-1"
    assert keep.widest.p_value is not None and not keep.distinguishable  # 3 runs: not beyond noise (D7)
    assert [v.variant_id for v in facts.verdicts if v.kept] == ["batch-8"]
    assert isinstance(facts.energy_per_deliverable_j, Unmeasured)  # no GPU run: said, never 0
    assert facts.energy_per_deliverable_j.reason == "no run was measured on a GPU"
    assert isinstance(facts.time_left_s, float) and facts.time_left_s > 0


def test_s8_s10_approvals_count_approved_visuals_once_with_their_source(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _approved_visuals(capsys, sessions_root, session, tmp_path / "out")
    facts = session_facts(Session.open(sessions_root, session.name), now=TEST_NOW)
    assert facts.count == 2 and facts.answer.count is not None
    assert (facts.answer.count.source, facts.answer.count.unit.singular) == ("approved", "visual")
    assert facts.per_deliverable_usd_minor == 2750  # 55.00 USD ÷ 2, rounded once (K2)
    assert facts.cost_words() == "55.00 USD ÷ 2 approved visuals = 27.50 USD per visual"
    assert facts.verdicts == () and facts.keep == ()  # no timed run: no variant to keep
    assert any(r.kind == "rejected_files" and "chart-03.png" in r.words for r in facts.risks)
    doc = facts.to_json()
    assert (doc["count"], doc["unit"], doc["source"], doc["per_deliverable_usd_minor"]) == (
        2, "visual", "approved", 2750)


def test_k3_nothing_accepted_is_unmeasured_with_its_reason_never_zero(session: Session) -> None:
    facts = session_facts(session, now=TEST_NOW)
    assert isinstance(facts.count, Unmeasured) and facts.count.reason
    assert isinstance(facts.per_deliverable_usd_minor, Unmeasured) and facts.per_deliverable_usd_minor.reason
    assert facts.package_total_usd_minor == 5500  # the package is priced all the same (K3)
    assert isinstance(facts.energy_per_deliverable_j, Unmeasured)
    assert facts.time_left_s == pytest.approx(7 * 86400 - 3600)  # an hour into a 7-day package (S6)
    doc = facts.to_json()
    for key in ("count", "per_deliverable_usd_minor", "energy_per_deliverable_j"):
        assert doc[key] is None
    assert doc["count_unmeasured"] and doc["per_deliverable_unmeasured"] and doc["energy_unmeasured"]
    assert [r.kind for r in facts.risks] == ["incidents", "copy_home", "time_left"]


def test_s6_a_package_without_a_start_has_no_time_left_and_says_why(new_session: Any) -> None:
    from gpusession.core.folder.package import Package

    s = new_session("unset", package=Package(gpu_model="RTX A5000", lots=1, days=7))
    facts = session_facts(s, now=TEST_NOW)
    assert isinstance(facts.time_left_s, Unmeasured) and "not set" in facts.time_left_s.reason
    assert facts.to_json()["time_left_s"] is None


def test_d5_a_rejected_fastest_variant_is_rejected_never_the_keep(new_session: Any) -> None:
    s = new_session("rejected")
    common: dict[str, Any] = dict(experiment_id="e", corpus_revision="c@1", quality_metric="macro_f1",
                                  quality_threshold=0.9, quality_tolerance=0.0, ids_match=True,
                                  format_valid=True, phase="warm")
    rows = []
    for i in range(1, 6):
        rows.append(ResultRow(**common, variant_id="fast", run_index=i, elapsed_seconds=0.1 + i / 100,
                              quality_value=0.333, corpus_accepted=False))
        rows.append(ResultRow(**common, variant_id="slow", run_index=i, elapsed_seconds=0.5 + i / 100,
                              quality_value=0.95, corpus_accepted=True))
    s.results.append_many(rows)
    facts: SessionFacts = session_facts(s, now=TEST_NOW)
    fast, slow = facts.verdict_of("e", "fast"), facts.verdict_of("e", "slow")
    assert fast is not None and slow is not None
    assert fast.verdict is Verdict.REJECTED and fast.words().startswith("REJECTED (") and not fast.kept
    assert slow.verdict is Verdict.ACCEPTED and slow.kept
    (keep,) = facts.keep
    assert keep.variant_id == "slow" and "fast" not in keep.words().split(";")[0]
    assert any(r.kind == "rejected_variants" and r.words == "REJECTED: fast" for r in facts.risks)
    assert facts.count == 1  # one accepted corpus, however many rows repeat it (K4)


@pytest.mark.slow
def test_s9_s10_a_rule_experiment_counts_the_files_its_rule_accepted(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    run_rule_experiment(capsys, sessions_root, session)
    facts = session_facts(Session.open(sessions_root, session.name), now=TEST_NOW)
    assert facts.count == 3 and facts.answer.count is not None
    assert (facts.answer.count.source, facts.answer.count.unit.singular) == ("accept-rule", "visual")
    assert facts.per_deliverable_usd_minor == 1833  # 55.00 ÷ 3 = 18.33 USD (K2: once, half-up)
    assert {v.verdict for v in facts.verdicts} == {Verdict.ACCEPTED}
    assert facts.keep and facts.keep[0].variant_id is not None


def test_s10_energy_per_deliverable_divides_by_the_one_count_in_the_report_too(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """580 J of GPU runs: ÷ 2 accepted corpora, then ÷ 4 approved visuals once a person decides (S10)."""
    from core.test_energy import _rows

    from gpusession.core.retrieval.report import render_report

    assert cli(capsys, sessions_root, "package", session.name, "--unit", "visual")[0] == 0  # S8: before any count
    s = Session.open(sessions_root, session.name)
    s.results.append_many(_rows())
    facts = session_facts(s, now=TEST_NOW)
    assert (facts.energy_j, facts.count, facts.energy_per_deliverable_j) == (580.0, 2, 290.0)
    text = " ".join(render_report(s, now=TEST_NOW).split())
    assert ("Energy per accepted visual: 580.0 J over 5 measured runs (failed ones included) ÷ 2 accepted "
            "visuals = 290.0 J") in text
    out = tmp_path / "out"
    out.mkdir()
    for i in range(4):
        (out / f"v-{i}.png").write_bytes(PNG + bytes([i]) * 8)
    assert cli(capsys, sessions_root, "approve", s.name, *map(str, sorted(out.iterdir())), "--by", "Ana")[0] == 0
    s = Session.open(sessions_root, session.name)
    facts = session_facts(s, now=TEST_NOW)
    assert (facts.count, facts.energy_per_deliverable_j) == (4, 145.0)
    text = " ".join(render_report(s, now=TEST_NOW).split())
    assert ("Energy per approved visual: 580.0 J over 5 measured runs (failed ones included) ÷ 4 approved "
            "visuals = 145.0 J") in text


def test_s10_k3_s8_report_section_3_divides_by_the_count_in_the_sessions_unit(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Section 3 ("Cost") says ``55.00 USD ÷ 2 approved visuals = 27.50 USD per visual``, the
    record's words and figure, never a bare ``÷ 2``; the summary's first lines agree."""
    from gpusession.core.retrieval.report import render_report

    _approved_visuals(capsys, sessions_root, session, tmp_path / "out")
    s = Session.open(sessions_root, session.name)
    facts = session_facts(s, now=TEST_NOW)
    md = render_report(s, now=TEST_NOW)
    section3 = " ".join(md.split("## 3.", 1)[1].split("## 4.", 1)[0].split())
    assert ("Cost per accepted deliverable: 55.00 USD ÷ 2 approved visuals = 27.50 USD per visual"
            in section3), section3
    assert "÷ 2 =" not in section3
    assert facts.per_deliverable_usd_minor == 2750 and facts.answer.count is not None
    assert facts.answer.count.words() == "2 approved visuals"
    assert "55.00 USD ÷ 2 approved visuals = 27.50 USD per visual" in " ".join(md.split("## 1.", 1)[0].split())
