"""Incidents, energy and the other notes of a row as typed facts of the journal (R11, R7, R10).

The ``notes`` cell is written for people from the facts; the report reads the facts
from the journal, so rewording every note changes nothing in it. A session written
before the facts were typed shows its rows' incidents as their notes say them.
The runner is driven by a replayed worker (``tests/fake_launcher.py``): no subprocess, no torch.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fake_launcher import ReplayLauncher
from fake_workloads import write_corpus

import gpusession.bench.runner as runner_module
from gpusession.bench.runner import Runner
from gpusession.core.events import (
    IncidentRecord,
    RunFinishedRecord,
    WorkerEnvironment,
    WorkerLoaded,
    WorkerRunFinished,
)
from gpusession.core.events.reading import decode_line
from gpusession.core.events.records import RUNNER_INCIDENT_KINDS
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session
from gpusession.core.gpu import nvml
from gpusession.core.records.energy import energy_summary
from gpusession.core.records.notefacts import (
    ENERGY_UNSUPPORTED,
    Energy,
    Incident,
    Remark,
    RowFacts,
    notes_cell,
)
from gpusession.core.records.old_words import incident_group_from_old_words
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval.incidents import (
    PREDATES_LINE,
    SessionIncident,
    row_facts,
    session_incidents,
)
from gpusession.core.retrieval.report import SECTIONS, render_report
from gpusession.testing import FakeGpu, FakeNvml

T0 = __import__("datetime").datetime(2026, 12, 1, 12, 0, tzinfo=__import__("datetime").timezone.utc)
NVML = FakeNvml([FakeGpu()])
PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}
OOM = "CUDA out of memory. Tried to allocate 2.00 GiB"


def _load(spec: dict[str, Any]) -> list[Any]:
    """A worker on a GPU that loaded."""
    return [WorkerEnvironment(environment={"device": "cuda:0", "gpu_model": "RTX A5000"}),
            WorkerLoaded(elapsed_s=0.5)]


#: What the worker reports of its 1st, 2nd and 3rd run: energy read, an out-of-memory run
#: (it drew energy too), a GPU without an energy counter. The 4th run never ends: the
#: worker exits with code 1 during it.
_RUNS: list[dict[str, Any]] = [
    dict(ok=True, elapsed_s=0.2, energy_j=12.5, energy_words="energy 12.5 J", truncated=2, n_inputs=4),
    dict(ok=False, oom=True, error_type="OutOfMemoryError", message=OOM, energy_j=3.25,
         energy_words="energy 3.250 J"),
    dict(ok=True, elapsed_s=0.3, energy_words=f"{ENERGY_UNSUPPORTED} (NVML: Not Supported)", energy_unsupported=True,
         unmeasured_pass="after an out-of-memory run"),
]


def _run(spec: dict[str, Any], run: dict[str, Any], out: Path, order: int) -> list[Any]:
    if order > len(_RUNS):
        return []  # cut: the worker dies during it
    return [WorkerRunFinished(run_key=run["run_key"], phase=run["phase"], output=None, order=order,
                              **_RUNS[order - 1])]


@pytest.fixture
def ran(session: Session) -> Session:
    """``session`` after one run of ``e`` (2 variants × 2 warm runs) by the replayed worker."""
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    exp = define_experiment(session, Experiment(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(4, 8), runs_per_variant=2, cold_runs_per_variant=0,
        warmup_iterations=0, protocol=PROTOCOL, device="cpu"))
    Runner(session, exp.id, continue_on_reject=True,  # its first run has no output: D3 would stop there
           launcher=ReplayLauncher(load=_load, run=_run, code=1,
                                   stderr=["RuntimeError: the worker fell over"])).run()
    return session


def _sections(text: str) -> dict[str, str]:
    """The report's summary and each of its sections, the generation line left out."""
    parts = re.split(r"^## \d\. ", text, flags=re.M)
    out = {"summary": "\n".join(line for line in parts[0].splitlines() if not line.startswith("Generated "))}
    for part in parts[1:]:
        title, _, body = part.partition("\n")
        out[title] = body
    assert set(SECTIONS) <= set(out), out.keys()
    return out


def _reword_every_note(session: Session) -> None:
    """Every notes cell replaced by other words (a person's edit, or a new wording)."""
    path = session.results.path
    frame = pl.read_csv(path, infer_schema=False)
    frame = frame.with_columns(pl.when(pl.col("notes").is_not_null())
                               .then(pl.format("reworded note {}", pl.int_range(pl.len())))
                               .otherwise(None).alias("notes"))
    frame.write_csv(path)


def test_r11_rewording_every_note_leaves_the_incidents_unchanged(ran: Session) -> None:
    before = render_report(ran, now=T0, nvml=NVML)
    notes = [n for n in ran.results.read()["notes"].to_list() if n]
    assert any("incident: " in n for n in notes) and any("energy 12.5 J" in n for n in notes)
    _reword_every_note(ran)
    assert not any("incident" in str(n) for n in ran.results.read()["notes"].to_list())
    after = render_report(ran, now=T0, nvml=NVML)
    assert _sections(after) == _sections(before)
    flat = " ".join(after.split())
    assert "Incidents recorded in the journal and the rows (each said once):" in flat
    assert f"out of memory: OutOfMemoryError: {OOM}" in flat  # said from the facts
    assert flat.count("Tried to allocate 2.00 GiB") == 1
    assert "exited with code 1" in flat
    assert "reworded note" not in flat
    assert PREDATES_LINE.format(n=0)[:20] not in flat


def test_r11_energy_is_read_from_the_facts_never_the_notes(ran: Session) -> None:
    frame = ran.results.read()
    facts = row_facts(frame, ran.journal_read().records)
    summary = energy_summary(frame, facts)
    assert summary is not None
    _reword_every_note(ran)
    frame = ran.results.read()
    again = energy_summary(frame, row_facts(frame, ran.journal_read().records))
    assert again == summary
    assert again is not None and again.gpu_runs == 4 and again.read_runs == 2
    assert again.reason is not None and ENERGY_UNSUPPORTED in again.reason  # the typed flag


def test_r11_each_row_written_by_the_runner_has_its_facts_in_the_journal(ran: Session) -> None:
    frame = ran.results.read()
    facts = row_facts(frame, ran.journal_read().records)
    assert all(f is not None for f in facts), list(zip(frame["notes"].to_list(), facts, strict=True))
    by_notes = {n: f for n, f in zip(frame["notes"].to_list(), facts, strict=True)}
    for notes, f in by_notes.items():
        assert f is not None and notes_cell(f) == notes  # the cell is written from the facts
    kinds = [i.kind for f in facts if f is not None for i in f.incidents]
    assert kinds.count("run_failed") == 1 and kinds.count("died_run") == 1


def test_r11_a_session_older_than_typed_incidents_shows_the_notes_as_written(session: Session) -> None:
    said = f"out of memory: OutOfMemoryError: {OOM}"
    session.results.append_many([
        ResultRow(experiment_id="e", variant_id="batch-64", phase="warm", run_index=i,
                  notes=f"incident: {said}; elapsed not measured; concurrent load at start: host CPU 9%")
        for i in (1, 2)])
    session.journal(IncidentRecord(experiment_id="e", message=f"worker warm: {said}"))
    flat = " ".join(render_report(session, now=T0, nvml=NVML).split())
    assert PREDATES_LINE.format(n=2) in flat
    for i in (1, 2):  # one per row, as the notes say it
        assert (f"e / batch-64 / warm #{i}: incident: {said}; elapsed not measured; "
                "concurrent load at start: host CPU 9%") in flat
    assert "concurrent load at start: host CPU 9%" in flat.split("Incidents recorded")[0]


def test_r11_the_facts_round_trip_through_the_journal_line() -> None:
    facts = RowFacts(incidents=(Incident("run_failed", "out of memory: E: x"),),
                     energy=Energy(None, f"{ENERGY_UNSUPPORTED} (NVML: Not Supported)", unsupported=True),
                     remarks=(Remark("truncated", "truncated 2 of 4 inputs"),))
    rec = RunFinishedRecord(run_key="e:warm:b:1", ok=False, **facts.record_fields())
    back = decode_line(json.dumps(rec.to_json()), 1)
    assert isinstance(back, RunFinishedRecord)
    assert RowFacts.from_record(back) == facts
    assert notes_cell(facts) == (f"incident: out of memory: E: x; elapsed not measured; "
                                 f"{ENERGY_UNSUPPORTED} (NVML: Not Supported); truncated 2 of 4 inputs")
    old = decode_line(json.dumps({"event": "run_finished", "run_key": "e:warm:b:1", "ok": True}), 1)
    assert RowFacts.from_record(old) is None  # written before typed facts


def test_r10_an_energy_figure_out_of_range_in_the_journal_is_no_reading() -> None:
    rec = RunFinishedRecord(run_key="e:warm:b:1", ok=True, incidents=[], energy_j=1e300)
    facts = RowFacts.from_record(rec)
    assert facts is not None and facts.energy is not None and facts.energy.joules is None


def test_r10_the_unsupported_energy_words_are_nvml_s() -> None:
    assert nvml.ENERGY_UNSUPPORTED == ENERGY_UNSUPPORTED


#: Where a row's ``notes`` may be read: the display of rows older than typed facts (the
#: report's and the energy summary's), the validation pane that shows a row as written.
NOTES_READERS = {"core/retrieval/incidents.py", "core/records/energy.py", "ui/panes/validation.py"}
_NOTES_READ = re.compile(r"""\[\s*["']notes["']\s*\]|\.get\(\s*["']notes["']|col\(\s*["']notes["']\s*\)""")


def test_r11_no_module_reads_a_rows_notes_but_the_display_of_old_rows() -> None:
    root = Path(runner_module.__file__).resolve().parents[1]
    readers = {p.relative_to(root).as_posix() for p in root.rglob("*.py") if _NOTES_READ.search(p.read_text("utf-8"))}
    assert readers <= NOTES_READERS, readers - NOTES_READERS
    assert "core/retrieval/incidents.py" in readers  # the pattern finds what it looks for


def _failed_run(session: Session, index: int, what: str) -> None:
    """A warm run of ``e`` / ``batch-8`` that failed, its row and its typed facts in the journal."""
    facts = RowFacts(incidents=(Incident("run_failed", what),))
    session.results.append_many([ResultRow(experiment_id="e", variant_id="batch-8", phase="warm",
                                           run_index=index, notes=notes_cell(facts))])
    session.journal(RunFinishedRecord(run_key=f"e:warm:batch-8:{index}", experiment_id="e", variant_id="batch-8",
                                      phase="warm", run_index=index, ok=False, **facts.record_fields()))


def _incidents_of(session: Session) -> list[SessionIncident]:
    frame = session.results.read()
    read = session.journal_read()
    return list(session_incidents(frame, row_facts(frame, read.records), read).incidents)


def test_r7_a_journal_incident_joins_the_incident_of_its_run_whatever_its_sentence(session: Session) -> None:
    _failed_run(session, 1, f"out of memory: OutOfMemoryError: {OOM}")
    session.journal(IncidentRecord(experiment_id="e", kind="out_of_memory", run_key="e:warm:batch-8:1",
                                   what="reworded: the card was full", message="a sentence sharing no word"))
    found = _incidents_of(session)
    assert len(found) == 1
    assert found[0].kind == "run_failed" and found[0].runs == (("e", "batch-8", "warm", 1),)
    assert len(found[0].times) == 1 and not found[0].from_old_words


def test_r7_a_journal_incident_saying_a_runs_words_stays_apart_when_its_run_differs(session: Session) -> None:
    said = f"out of memory: OutOfMemoryError: {OOM}"
    _failed_run(session, 1, said)
    # the same words inside the sentence, but typed as another run's, another failure
    session.journal(IncidentRecord(experiment_id="e", kind="worker_died", run_key="e:warm:batch-8:2",
                                   what="worker warm exited with code 1", message=f"worker warm: run x: {said}"))
    found = _incidents_of(session)
    assert [(i.kind, i.words) for i in found] == [("run_failed", said),
                                                  ("worker_died", "worker warm exited with code 1")]
    assert found[0].times == () and len(found[1].times) == 1


def test_r7_two_runs_failed_alike_are_one_incident_with_both_runs(session: Session) -> None:
    said = f"out of memory: OutOfMemoryError: {OOM}"
    for i in (1, 2):
        _failed_run(session, i, said)
        session.journal(IncidentRecord(experiment_id="e", kind="out_of_memory", run_key=f"e:warm:batch-8:{i}",
                                       what=said, message=f"run warm:batch-8:{i}: {said}"))
    found = _incidents_of(session)
    assert len(found) == 1 and len(found[0].runs) == 2 and len(found[0].times) == 2


def test_r7_an_old_journal_incident_is_read_by_the_old_words_adapter(session: Session) -> None:
    said = f"out of memory: OutOfMemoryError: {OOM}"
    _failed_run(session, 1, said)
    # written before incidents were typed: no kind, no run key, no what; its sentence names who
    old = decode_line(json.dumps({"event": "incident", "experiment_id": "e",
                                  "message": f"worker warm: run warm:batch-8:1: {said}"}), 1)
    assert isinstance(old, IncidentRecord) and old.kind is None and old.what is None
    session.journal(old)
    session.journal(IncidentRecord(experiment_id="e", message="worker cold-1: load: E: no model"))
    found = _incidents_of(session)
    assert [(i.words, len(i.times), i.from_old_words) for i in found] == [
        (said, 1, False), ("load: E: no model", 1, True)]
    assert incident_group_from_old_words(f"worker warm: run warm:batch-8:1: {said}", {said: None}) == said


def test_r7_the_runner_types_each_incident_it_journals(ran: Session) -> None:
    records = [r for r in ran.journal_read().records if isinstance(r, IncidentRecord)]
    assert records and all(r.kind in RUNNER_INCIDENT_KINDS for r in records), records
    typed = {(r.kind, r.run_key) for r in records}
    assert ("out_of_memory", "e:warm:batch-8:1") in typed
    assert ("worker_died", "e:warm:batch-8:2") in typed
    died = next(r for r in records if r.kind == "worker_died")
    assert died.worker == "warm" and died.what is not None and not died.what.startswith("worker warm: ")


def _functions_using(path: Path, used: Any) -> set[str]:
    """The names of the top-level functions of ``path`` whose body holds a node ``used`` accepts."""
    import ast

    tree = ast.parse(path.read_text("utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(used(n) for n in ast.walk(node))}


def test_r7_words_are_read_to_group_an_incident_or_tie_a_digest_only_in_the_old_folder_adapters() -> None:
    import ast

    root = Path(runner_module.__file__).resolve().parents[1]

    def re_call(n: ast.AST) -> bool:
        return isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "re"

    def incident_words(n: ast.AST) -> bool:
        return isinstance(n, ast.Constant) and n.value == "incident: "

    incidents = root / "core" / "retrieval" / "incidents.py"
    assert _functions_using(incidents, re_call) == set()
    assert _functions_using(incidents, incident_words) == set()
    adapter = root / "core" / "records" / "old_words.py"  # the one old-folder adapter
    assert _functions_using(adapter, re_call) == {"incident_group_from_old_words", "legacy_remarks"}
    assert _functions_using(adapter, incident_words) == {"legacy_incident_notes", "legacy_remarks"}
    tie = _functions_using(adapter, lambda n: isinstance(n, ast.Name) and n.id == "TIE_NOTE")
    assert tie == {"files_digest_from_old_notes"}
    assert "TIE_NOTE" not in (root / "core" / "validation" / "accept_rule.py").read_text("utf-8")
    report = (root / "core" / "retrieval" / "report.py").read_text("utf-8")
    assert 'startswith("WARNING' not in report and "startswith(('not available" not in report


def test_r7_a_runs_second_incident_joins_its_own_words_not_the_runs_first(session: Session) -> None:
    said = f"out of memory: OutOfMemoryError: {OOM}"
    past = "elapsed_seconds 1e+20: expected a duration under a year"
    facts = RowFacts(incidents=(Incident("run_failed", said), Incident("past_bound", past)))
    session.results.append_many([ResultRow(experiment_id="e", variant_id="batch-8", phase="warm",
                                           run_index=1, notes=notes_cell(facts))])
    session.journal(RunFinishedRecord(run_key="e:warm:batch-8:1", experiment_id="e", variant_id="batch-8",
                                      phase="warm", run_index=1, ok=False, **facts.record_fields()))
    session.journal(IncidentRecord(experiment_id="e", kind="past_bound", run_key="e:warm:batch-8:1", what=past,
                                   message="e warm batch-8 run 1: …"))
    found = {i.kind: len(i.times) for i in _incidents_of(session)}
    assert found == {"run_failed": 0, "past_bound": 1}
