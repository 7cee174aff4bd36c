"""The one typed reader of ``journal.jsonl`` (S7): typed records with line numbers,
unreadable lines as notes, free-form records of older sessions still read, every write
typed, and no event-string comparison outside ``core/events``."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusession.core.events import (
    ChecklistDoneRecord,
    DemoModelTrainedRecord,
    ExperimentDefinedRecord,
    GenericRecord,
    ManifestWrittenRecord,
    RunFinishedRecord,
    RunStartedRecord,
    SessionCreatedRecord,
    ValidationRecord,
    event_types,
    read_journal,
    reading,
)
from gpusession.core.events.records import (
    ExperimentFinishedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    IncidentRecord,
    LoadFinishedRecord,
    LoadStartedRecord,
    RunRecoveredRecord,
)
from gpusession.core.folder.session import Session
from gpusession.core.records.summary import UNFINISHED_KIND, session_summary
from gpusession.core.retrieval.status import unfinished_runs

SRC = Path(__file__).resolve().parents[2] / "src" / "gpusession"
AT = "2026-12-01T10:00:00+00:00"


def _line(**fields: object) -> str:
    return json.dumps({"at": AT, "v": 1, **fields})


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _started(key: str = "e:warm:b:1", **over: object) -> str:
    exp, phase, variant, index = key.split(":")
    fields: dict[str, object] = {"event": "run_started", "run_key": key, "experiment_id": exp,
                                 "variant_id": variant, "phase": phase, "run_index": int(index)}
    fields.update(over)
    return _line(**fields)


def test_s7_reader_gives_typed_records_with_their_line_numbers(tmp_path: Path) -> None:
    path = _write(tmp_path / "journal.jsonl",
                  _started(),
                  "",  # a blank line: skipped, no note
                  _line(event="run_finished", run_key="e:warm:b:1", experiment_id="e", ok=True, elapsed_s=0.25))
    read = read_journal(path)
    started, finished = read.records
    assert isinstance(started, RunStartedRecord) and started.run_index == 1 and started.at == AT
    assert isinstance(finished, RunFinishedRecord) and finished.ok is True and finished.elapsed_s == 0.25
    assert read.lines == [1, 3] and read.notes == []


def test_s7_the_same_bytes_are_decoded_once_and_any_change_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "journal.jsonl", _started("e:warm:b:1"), "not json")
    first = read_journal(path)
    first.records.clear()  # the lists are the caller's own
    again = read_journal(path)
    assert [r.run_key for r in again.records] == ["e:warm:b:1"] and again.lines == [1]
    assert len(again.notes) == 1
    same_size = _started("e:warm:b:2") + "\n" + "not json" + "\n"  # rewritten, same length
    assert len(same_size) == path.stat().st_size
    path.write_text(same_size, encoding="utf-8")
    assert [r.run_key for r in read_journal(path).records] == ["e:warm:b:2"]
    with path.open("a", encoding="utf-8") as f:
        f.write(_started("e:warm:b:3") + "\n")
    assert [r.run_key for r in read_journal(path).records] == ["e:warm:b:2", "e:warm:b:3"]


@pytest.mark.parametrize(("bad", "why"), [
    (_started(run_key={"x": 1}), "field run_key: expected a string, got an object"),
    (_started(run_index="nine"), "field run_index: expected an integer, got a string"),
    (_started(run_index=10**19), "field run_index: expected an integer, got an integer out of range"),
    (_started(experiment_id=["e"]), "field experiment_id: expected a string, got a list"),
    (_started(run_index=True), "field run_index: expected an integer, got a boolean"),
    ('{"event": "gpu_sang", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
    ('{"event": "gpu_sang", "deep": ' + "[" * 100 + "]" * 100 + "}", "nested too deep (past 64 levels)"),
    ('{"event": "run_started", "run_index": ' + "9" * 5000 + "}", "an integer too long to read"),
    ("not json at all", "not JSON"),
    ('["a", "list"]', "expected a JSON object, got a list"),
    ('{"no_event": 1}', "field event: expected a string, got null"),
])
def test_s7_unreadable_line_is_one_note_never_a_crash(tmp_path: Path, bad: str, why: str) -> None:
    path = _write(tmp_path / "journal.jsonl", _started("e:warm:b:1"), bad, _started("e:warm:b:2"))
    read = read_journal(path)
    assert [r.run_key for r in read.records if isinstance(r, RunStartedRecord)] == ["e:warm:b:1", "e:warm:b:2"]
    assert read.lines == [1, 3]
    assert len(read.notes) == 1 and read.notes[0].startswith("unreadable journal line 2: ")
    assert why in read.notes[0]


def test_s7_a_last_line_cut_by_a_crash_is_said_as_cut(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(_started() + "\n" + _started("e:warm:b:2")[:30], encoding="utf-8")
    read = read_journal(path)
    assert len(read.records) == 1
    assert read.notes == ["unreadable journal line 2: cut short, no end of line (crash or full disk): not JSON"]


def test_s7_unreadable_lines_do_not_stop_open_status_summary_or_report(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "damaged")
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write(_started(run_key={"x": 1}) + "\n")
        fh.write(_started(run_index="nine") + "\n")
        fh.write('{"event": "run_started", "run_index": ' + "9" * 5000 + "}\n")
        fh.write('{"event": "incident", "x": ' + "[" * 50_000 + "]" * 50_000 + "}\n")
    assert unfinished_runs(s.folder) == 0  # no run in flight can be read from those lines
    again = Session.open(sessions_root, "damaged")  # recovery reads the same lines typed
    assert again.journal_read().notes[0].startswith("unreadable journal line 2: run_started record")
    assert len(again.journal_read().notes) == 4
    assert session_summary(again) == []
    assert not again.needs_recovery()  # each line said once: the next open has nothing to do
    from gpusession.core.retrieval.report import _journal_incidents

    said = "\n".join(_journal_incidents(again))
    assert "unreadable journal line 5: nested too deep" in said


def test_s7_free_form_records_of_older_sessions_read_back(tmp_path: Path) -> None:
    path = _write(tmp_path / "journal.jsonl",
                  # written by the first release as free-form records, with no "v"
                  json.dumps({"at": AT, "event": "checklist_done", "item": "g1.need"}),
                  json.dumps({"at": AT, "event": "validation", "report": "validation/r.md", "output": "o.jsonl",
                              "output_copy": "validation/r.output.jsonl", "corpus": "c.jsonl", "expected_ids": 3,
                              "observed_ids": 3, "ids_match": True, "format_valid": True, "quality_metric": "macro_f1",
                              "quality_threshold": 0.9, "quality_tolerance": 0.01, "quality_value": 0.95,
                              "corpus_accepted": True}),
                  json.dumps({"at": AT, "event": "gpu_sang", "pitch": 440, "notes": ["a", "b"]}))
    done, validated, unknown = read_journal(path).records
    assert isinstance(done, ChecklistDoneRecord) and done.item == "g1.need" and done.v == 0
    assert isinstance(validated, ValidationRecord) and validated.corpus_accepted is True
    assert validated.quality_value == 0.95 and validated.report == "validation/r.md"
    assert isinstance(unknown, GenericRecord) and unknown.name == "gpu_sang"
    # what `gpusession demo` writes free-form reads back typed
    demo = _write(tmp_path / "demo.jsonl", json.dumps({
        "at": AT, "event": "demo_model_trained", "v": 1, "classes": ["business", "tech"], "seed": 0,
        "epochs": 3, "context_limit_trained": 256, "model_revision": "ab", "tokenizer_revision": "cd",
        "tune_macro_f1": 0.97, "train_seconds": 12.5, "train_size": 1000}))
    (trained,) = read_journal(demo).records
    assert isinstance(trained, DemoModelTrainedRecord) and trained.tune_macro_f1 == 0.97
    assert unknown.get("pitch") == 440 and unknown.get("notes") == ["a", "b"]


def test_s7_session_writes_are_typed_records_on_the_same_disk_names(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "typed")
    assert isinstance(s.journal_records()[0], SessionCreatedRecord)
    raw = json.loads(s.journal_path.read_text(encoding="utf-8").splitlines()[0])
    assert raw["event"] == "session_created" and isinstance(raw["package"], dict)
    s.journal(ManifestWrittenRecord(path="/x/manifest.csv", deliverables="/x", files=2, total_bytes=10,
                                    skipped=0, copy_in_deliverables=None))
    raw = json.loads(s.journal_path.read_text(encoding="utf-8").splitlines()[-1])
    assert {k for k in raw if k not in ("at", "v")} == {
        "event", "path", "deliverables", "files", "total_bytes", "skipped", "copy_in_deliverables"}
    assert raw["event"] == "manifest_written"
    assert isinstance(ExperimentDefinedRecord(experiment_id="e").to_json()["settings"], dict)


def test_s7_typed_names_of_the_cheap_look_are_the_record_classes_names() -> None:
    assert reading.RUN_OPENS == (RunStartedRecord.EVENT, LoadStartedRecord.EVENT)
    assert reading.RUN_CLOSES == (RunFinishedRecord.EVENT, LoadFinishedRecord.EVENT, RunRecoveredRecord.EVENT)
    assert reading.INVOCATION_START == ExperimentStartedRecord.EVENT
    assert reading.INVOCATION_ENDS == (ExperimentFinishedRecord.EVENT, ExperimentIncompleteRecord.EVENT)
    assert reading.INCIDENT == IncidentRecord.EVENT


def test_s7_cheap_look_agrees_with_the_typed_reader_on_runs_in_flight(tmp_path: Path) -> None:
    path = _write(tmp_path / "journal.jsonl",
                  _line(event="experiment_started", experiment_id="e", runs=["warm:b:1", "warm:b:2"]),
                  _started("e:warm:b:1"),
                  _line(event="run_finished", run_key="e:warm:b:1", experiment_id="e", ok=True),
                  _started("e:warm:b:2"),
                  _started("e:warm:b:3", run_index="three"))  # unreadable: counts for nothing
    work = reading.open_work(path.read_bytes(), UNFINISHED_KIND)
    assert work.run_keys == {"e:warm:b:2"} and work.experiments == {"e"}
    typed_open = {r.run_key for r in read_journal(path).records if isinstance(r, RunStartedRecord)} - {
        r.run_key for r in read_journal(path).records if isinstance(r, RunFinishedRecord)}
    assert typed_open == work.run_keys
    cut = path.read_bytes() + _started("e:warm:b:4").encode()[:-20]  # cut by a crash
    assert reading.open_work(cut).run_keys == {"e:warm:b:2", "e:warm:b:4"}


def _event_comparisons(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines of comparisons that read a record's ``"event"`` or compare with a journal event name."""
    def strings(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [s for e in node.elts for s in strings(e)]
        return []

    def reads_event(node: ast.AST) -> bool:
        for n in ast.walk(node):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                    and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value == "event"):
                return True
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "event":
                return True
            if isinstance(n, ast.Attribute) and n.attr == "EVENT":
                return True
        return False

    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Compare)
            and any(reads_event(s) or set(strings(s)) & names for s in (n.left, *n.comparators))]


def test_s7_no_event_string_is_compared_outside_core_events() -> None:
    names = {n for n in event_types("journal") if "_" in n}  # "run_started"…, not plain words
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("core/events/"):
            continue
        lines = _event_comparisons(ast.parse(path.read_text(encoding="utf-8")), names)
        if lines:
            found[rel] = lines
    assert found == {}


def test_s7_the_event_comparison_check_finds_what_it_looks_for() -> None:
    names = {"run_started"}
    tree = ast.parse('a = r.get("event") == "x"\nb = rec["event"] in ("y",)\nc = n in ("run_started", "z")\n'
                     'd = r.name == R.EVENT\ne = tab == "validation"\n')
    assert _event_comparisons(tree, names) == [1, 2, 3, 4]


def _strategy(hint: object) -> st.SearchStrategy[object]:
    """Values that fit a record field's annotation (what a writer may put there)."""
    import types
    from typing import Any, Union, get_args, get_origin

    if hint is Any:
        return st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return st.one_of(*(_strategy(a) for a in get_args(hint)))
    if origin is list:
        return st.lists(_strategy(get_args(hint)[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=6), _strategy(get_args(hint)[1]), max_size=3)
    return {type(None): st.none(), bool: st.booleans(), int: st.integers(-(2**63), 2**63 - 1),
            float: st.floats(allow_nan=False, allow_infinity=False), str: st.text(max_size=12)}[hint]  # type: ignore[index]


_JOURNAL_TYPES = sorted(event_types("journal").values(), key=lambda c: c.EVENT)


@pytest.mark.parametrize("cls", _JOURNAL_TYPES, ids=[c.EVENT for c in _JOURNAL_TYPES])
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_s7_every_record_a_writer_may_write_reads_back_equal(tmp_path: Path, cls: type, data: st.DataObject) -> None:
    from typing import get_type_hints

    from gpusession.core.folder import journal

    hints = {k: v for k, v in get_type_hints(cls).items() if k not in ("v", "at", "EVENT", "CHANNEL")}
    record = cls(**{k: data.draw(_strategy(h), label=k) for k, h in hints.items()})
    path = tmp_path / f"{cls.EVENT}.jsonl"
    path.unlink(missing_ok=True)
    journal.append(path, record)
    read = read_journal(path)
    assert read.notes == []
    (back,) = read.records
    assert dataclasses.replace(back, at=None) == record


def test_h36_one_journal_line_with_wrong_types_is_said_once_with_its_number(
    sessions_root: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    from helpers import cli

    s = Session.create(sessions_root, "h36")
    with open(s.journal_path, "a", encoding="utf-8") as fh:
        fh.write('{"event": "run_started", "run_key": {"a": 1}}\n')
    number = s.journal_path.read_text(encoding="utf-8").count("\n")
    code, out, err = cli(capsys, sessions_root, "status", "h36")
    assert code == 0 and "Traceback" not in out + err
    code, out, err = cli(capsys, sessions_root, "show", "h36")
    assert code == 0 and "Traceback" not in out + err
    assert err.count(f"unreadable journal line {number}: run_started record, field run_key: "
                     "expected a string, got an object") == 1
    assert not Session.open(sessions_root, "h36", recover=False).needs_recovery()  # nothing left to say
    for command in (("show", "h36"), ("list",), ("checklist", "h36")):  # said once, never again
        code, out, err = cli(capsys, sessions_root, *command)
        assert code == 0 and "unreadable" not in err and "Traceback" not in out + err
    report = tmp_path / "r.md"
    code, out, err = cli(capsys, sessions_root, "report", "h36", "--out", str(report))
    assert code == 0
    assert report.read_text(encoding="utf-8").count(f"unreadable journal line {number}") == 1
