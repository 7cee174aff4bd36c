"""A major defect in the first result stops the experiment at that run boundary (D3, H-32).

A command workload that drops 300 of 1,000 IDs; values 1,2,3, 5 runs each: only the load
row and the first measured run are in the CSV, the stop is said in words with the
validation report's path, ``run`` exits 3; ``--continue-on-reject`` runs them all. The
command's runs are replayed in this process (:mod:`fake_launcher`, the same 700 IDs kept):
the gate is the runner's, not the worker's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_launcher import ReplayLauncher, keeping, replay_everywhere
from fake_workloads import write_corpus
from helpers import cli

from gpusession.bench.stops import defect_words
from gpusession.core.events import ExperimentStoppedRecord, RunOverrideRecord
from gpusession.core.folder.session import Session

DROP_300 = """\
import json, sys
corpus, output = sys.argv[1], sys.argv[2]
with open(corpus) as src, open(output, "w") as out:
    for n, line in enumerate(l for l in src if l.strip()):
        if n >= 700:
            break
        rec = json.loads(line)
        out.write(json.dumps({"id": rec["id"], "label": rec["label"]}) + "\\n")
"""

STOP = "stopped after the first result: 300 IDs missing — fix and run again"


def _define(capsys: pytest.CaptureFixture[str], root: Path, s: Session) -> None:
    write_corpus(s.folder / "corpus.jsonl", n=1000)
    (s.folder / "drop.py").write_text(DROP_300)
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "drop", "--workload",
                       "command", "--values", "1,2,3", "--runs", "5", "--warmup", "0",
                       "--corpus", "corpus.jsonl", "--classes", "a,b", "--threshold", "0.5",
                       "--command", f"{sys.executable} {s.folder / 'drop.py'} {{corpus}} {{output}}")
    assert code == 0, err


def test_h32_a_broken_first_result_stops_the_batch(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _define(capsys, sessions_root, session)
    replay_everywhere(monkeypatch, ReplayLauncher(run=keeping(700)))
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 3, out[-3000:] + err[-2000:]
    frame = session.results.read()
    measured = frame.filter(frame["phase"] != "load")
    assert measured.height == 1 and measured["phase"][0] == "cold" and measured["variant_id"][0] == "batch-1"
    assert set(frame["phase"]) <= {"load", "cold"}
    end = out.strip().splitlines()[-1]
    assert STOP in end and "validation report: " in end and "exit 3" in end, end
    report = Path(end.split("validation report: ")[1].split(")")[0])
    assert report.is_file() and report.parent.parent.name == "drop"
    stops = [r for r in session.journal_records() if isinstance(r, ExperimentStoppedRecord)]
    assert [r.reason for r in stops] == ["first-result"] and stops[0].report == str(report)
    code, shown, _ = cli(capsys, sessions_root, "show", session.name)
    assert code == 0 and f"stopped   drop: {STOP}" in shown, shown
    data = json.loads(cli(capsys, sessions_root, "show", session.name, "--json")[1])
    assert STOP in data["stopped"]["drop"]


def test_h32_continue_on_reject_runs_the_whole_batch(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _define(capsys, sessions_root, session)
    replay_everywhere(monkeypatch, ReplayLauncher(run=keeping(700)))
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--continue-on-reject")
    assert code == 3, out[-3000:] + err[-2000:]  # still rejected: the verdict says why
    frame = session.results.read()
    assert frame.filter(frame["phase"] != "load").height == 3 + 15
    assert STOP not in out and "experiment complete" in out
    overrides = [r for r in session.journal_records() if isinstance(r, RunOverrideRecord)]
    assert [r.override for r in overrides] == ["continue-on-reject"]
    assert not [r for r in session.journal_records() if isinstance(r, ExperimentStoppedRecord)]


def _report(**kw: object) -> SimpleNamespace:
    base = dict(ids_match=True, format_valid=True, quality_met=True, missing_count=0, extra_count=0,
                duplicate_output_count=0, ids_reason="", bad_record_count=0, format_reason="",
                quality_value=0.95, quality_metric="macro_f1", quality_threshold=0.9,
                quality_tolerance=0.02)
    return SimpleNamespace(**{**base, **kw})


def test_d3_major_defects_in_words() -> None:
    assert defect_words(_report()) is None
    assert defect_words(_report(ids_match=False, missing_count=300)) == "300 IDs missing"
    assert defect_words(_report(ids_match=False, extra_count=2, duplicate_output_count=1_200)) == \
        "2 extra IDs, 1,200 duplicated IDs"
    assert defect_words(_report(format_valid=False, bad_record_count=12)) == "invalid format (12 bad records)"
    assert defect_words(_report(quality_met=False, quality_value=0.412)) == \
        "quality macro_f1 0.412 below 0.9 − 0.02"


def test_d3_checklist_evidence_says_armed_then_done(session: Session) -> None:
    from gpusession.core.retrieval.evidence import first_result_evidence

    assert first_result_evidence(session).startswith("armed: ")
    session.journal(ExperimentStoppedRecord(experiment_id="drop", reason="first-result",
                                            message=STOP))
    assert first_result_evidence(session) == f"done: experiment drop {STOP}"


@pytest.mark.slow
def test_d3_a_defect_in_the_only_run_stops_nothing_and_says_no_stop(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    write_corpus(session.folder / "corpus.jsonl", n=1000)
    (session.folder / "drop.py").write_text(DROP_300)
    assert cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "one", "--workload",
               "command", "--values", "1", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
               "--corpus", "corpus.jsonl", "--classes", "a,b", "--threshold", "0.5", "--command",
               f"{sys.executable} {session.folder / 'drop.py'} {{corpus}} {{output}}")[0] == 0
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 3 and "experiment complete" in out and STOP not in out  # rejected, nothing kept back
    assert not [r for r in session.journal_records() if isinstance(r, ExperimentStoppedRecord)]
