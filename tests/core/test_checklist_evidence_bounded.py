"""The checklist's evidence stays bounded in a month-long session (V5, S1).

``p1.fixed-before`` names every experiment whose protocol was not fixed before its first
run (the finding) and counts the others, whatever the number of experiments; the other
probes say one line or a few, bounded by the GPUs, never by the runs or the files.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from helpers import SESSION_START

from gpusession.core.folder.session import Session
from gpusession.core.gpu.nvml import NvmlSnapshot
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import checklist as cl
from gpusession.core.retrieval.evidence import EVIDENCE_NAMED, protocol_evidence, run_probes

#: collect_evidence runs the session-limit probe, which reads the package window (A6).
pytestmark = pytest.mark.calendar

T0 = SESSION_START
NO_NVML = NvmlSnapshot(False, "NVML not installed", None, ())
PROTOCOL = {"classes": ["a", "b"], "output_format": "jsonl", "metric": "macro_f1", "threshold": 0.8,
            "tolerance": 0.01}
#: The findings planted in a session of ``n`` experiments (the ids exist from n = 3 up).
LATE, CHANGED, INCOMPLETE = "sweep-001", "sweep-002", "sweep-000"
MAX_SUMMARY_LINES = 7


def _sweep(session: Session, n: int, *, findings: bool = True) -> list[str]:
    """``n`` experiments defined at T0 and first run at T0 + 1 h; with ``findings``: one
    stored after its first run, one whose protocol was edited after it, one without a
    threshold. Returns the ids in definition order."""
    ids = [f"sweep-{k:03d}" for k in range(n)]
    exps: dict[str, dict[str, object]] = {e: {"workload": "w", "defined_at": T0, "protocol": dict(PROTOCOL)}
                                          for e in ids}
    if findings:  # defined so, before its runs
        exps[INCOMPLETE]["protocol"] = {k: v for k, v in PROTOCOL.items() if k != "threshold"}
    events = []
    for e in ids:
        events.append({"at": T0.isoformat(), "event": "experiment_defined", "experiment_id": e,
                       "settings": {"protocol": exps[e]["protocol"]}})
        events.append({"at": (T0 + timedelta(hours=1)).isoformat(), "event": "run_started",
                       "run_key": f"{e}/batch-1/cold/1", "experiment_id": e})
    if findings:  # after the runs
        exps[LATE]["defined_at"] = T0 + timedelta(hours=2)
        exps[CHANGED]["protocol"] = {**PROTOCOL, "threshold": 0.5}
    session.data["experiments"] = exps
    session.save()
    with open(session.journal_path, "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(ev) + "\n" for ev in events)
    return ids


@pytest.mark.parametrize("n", [3, 300])
def test_v5_protocol_evidence_has_a_bounded_number_of_lines(session: Session, n: int) -> None:
    _sweep(session, n)
    lines = protocol_evidence(session).splitlines()
    assert len(lines) <= MAX_SUMMARY_LINES
    text = "\n".join(lines)
    for finding in (LATE, CHANGED, INCOMPLETE):
        assert finding in text


def test_v5_an_experiment_changed_after_its_first_run_is_named_at_300(session: Session) -> None:
    _sweep(session, 300)
    text = cl.collect_evidence(session, nvml=NO_NVML, now=T0)["p1.fixed-before"]
    lines = text.splitlines()
    assert len(lines) <= MAX_SUMMARY_LINES
    changed = next(line for line in lines if "differs from the one stored before the runs" in line)
    assert changed.startswith("WARNING") and CHANGED in changed
    late = next(line for line in lines if "AFTER the first run" in line)
    assert late.startswith("WARNING") and LATE in late
    incomplete = next(line for line in lines if line.startswith("not fixed"))
    assert "threshold in sweep-000" in incomplete
    # the 297 others are counted, the last five named: the finding is never lost among them
    assert "297 of 300 experiments fixed before their first run" in text
    assert "sweep-299" in text and "sweep-200" not in text
    assert text.count("sweep-") == 3 + EVIDENCE_NAMED


def test_v5_every_experiment_not_fixed_before_its_first_run_is_named(session: Session) -> None:
    ids = _sweep(session, 300, findings=False)
    for e in ids[::30]:  # ten stored after their first run
        session.data["experiments"][e]["defined_at"] = T0 + timedelta(hours=3)
    session.save()
    lines = protocol_evidence(session).splitlines()
    late = [line for line in lines if "AFTER the first run" in line]
    assert len(late) == 1 and "in 10 experiments" in late[0]
    assert all(f"{e} (stored" in late[0] for e in ids[::30])
    assert "290 of 300 experiments" in lines[-1]


def test_v5_the_good_ones_are_counted_not_listed(session: Session) -> None:
    """The text grows with the findings, not with the experiments that need nothing."""
    _sweep(session, 30)
    small = protocol_evidence(session)
    session.journal_path.write_text("", encoding="utf-8")
    _sweep(session, 300)
    large = protocol_evidence(session)
    assert len(large.splitlines()) == len(small.splitlines())
    assert len(large) - len(small) <= 10  # "27 of 30" → "297 of 300", ids of the same width


def test_v5_no_run_yet_and_tolerance_not_chosen_are_counted(session: Session) -> None:
    ids = _sweep(session, 300, findings=False)
    session.journal_path.write_text("", encoding="utf-8")  # no run at all
    for e in ids:
        del session.data["experiments"][e]["protocol"]["tolerance"]
    session.save()
    lines = protocol_evidence(session).splitlines()
    assert lines[0].startswith("0 of 300 experiments fixed before their first run")
    assert lines[1].startswith("no measured run yet: 300 experiments (the last 5: sweep-295")
    assert lines[2].startswith("tolerance not chosen (read as 0): 300 experiments (the last 5:")
    assert len(lines) == 3


def test_s1_no_probe_grows_with_the_runs(session: Session) -> None:
    """Every probe's text at 6 and at 300 experiments of rows has the same number of lines."""
    def probe_lines() -> dict[str, int]:
        return {k: len(v.splitlines()) for k, v in run_probes(session, nvml=NO_NVML, now=T0,
                                                              record_deviation=False).items()}

    def rows(ids: list[str]) -> None:
        session.results.append_many([ResultRow(experiment_id=e, variant_id="batch-1", phase="warm",
                                               run_index=1, device="cuda:0", elapsed_seconds=0.5,
                                               peak_reserved_bytes=1024) for e in ids])

    rows(_sweep(session, 6))
    small = probe_lines()
    session.journal_path.write_text("", encoding="utf-8")
    rows(_sweep(session, 300)[6:])
    large = probe_lines()
    assert large == small
