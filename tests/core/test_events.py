"""Typed run events, the journal's RunKey and the one renderer to words (R3, R4, S7)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusession
from gpusession.core.events import (
    PROTOCOL_VERSION,
    EnvironmentObserved,
    Event,
    Finished,
    GenericRecord,
    IncidentRecord,
    IncidentReported,
    Loaded,
    Progress,
    RowAppended,
    RunStartedRecord,
    WorkerRunFinished,
    WorkerStarted,
    describe,
    event_from_json,
    event_types,
)
from gpusession.core.files.errors import BadInput
from gpusession.core.folder import journal
from gpusession.core.folder.journal import RunKey
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))


def _value(default: Any) -> st.SearchStrategy[Any]:
    if isinstance(default, dict):
        return st.dictionaries(st.text(max_size=6), st.integers(0, 100), max_size=3)
    if isinstance(default, list):
        return st.lists(st.text(max_size=6), max_size=3)
    return _SCALAR


def _event(cls: type[Event]) -> st.SearchStrategy[Event]:
    kw: dict[str, st.SearchStrategy[Any]] = {}
    for f in dataclasses.fields(cls):
        if f.name == "v":
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        kw[f.name] = _value(default)
    return st.builds(cls, **kw)


_JSON_TYPES = [
    (channel, cls)
    for channel in ("worker", "journal", "runner")
    for cls in event_types(channel).values()  # type: ignore[arg-type]
    if cls not in (RowAppended, Finished)
]


@pytest.mark.parametrize(("channel", "cls"), _JSON_TYPES, ids=[c.__name__ for _, c in _JSON_TYPES])
@given(data=st.data())
def test_event_round_trips_through_json(channel: Any, cls: type[Event], data: st.DataObject) -> None:
    ev = data.draw(_event(cls))
    doc = json.loads(json.dumps(ev.to_json()))
    assert doc["event"] == cls.EVENT and doc["v"] == PROTOCOL_VERSION
    assert event_from_json(doc, channel) == ev


def test_row_event_round_trips_with_its_row() -> None:
    row = ResultRow(experiment_id="e", variant_id="batch-4", phase="warm", run_index=2, elapsed_seconds=0.5)
    ev = RowAppended(row=row, done=3, total=10)
    assert event_from_json(json.loads(json.dumps(ev.to_json())), "runner") == ev


def test_s7_unknown_and_first_release_records_are_readable(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(
        json.dumps({"at": "2026-01-01T00:00:00+00:00", "event": "gpu_sang", "pitch": 440}) + "\n"
        # a record of the first release: no "v", a field this release does not know
        + json.dumps({"at": "2026-01-01T00:00:01+00:00", "event": "run_started", "run_key": "e:warm:b:1",
                      "experiment_id": "e", "variant_id": "b", "phase": "warm", "run_index": 1,
                      "worker": "warm", "legacy": True}) + "\n"
        + json.dumps(["not", "an", "object"]) + "\n"
        + '{"at": "2026-01-01T00:00:02+00:00", "event": "run_fin',  # cut by a crash
        encoding="utf-8",
    )
    records = journal.read_records(path)
    assert len(records) == 2
    unknown, started = records
    assert isinstance(unknown, GenericRecord) and unknown.name == "gpu_sang" and unknown.get("pitch") == 440
    assert unknown.v == 0 and unknown.to_json()["pitch"] == 440
    assert isinstance(started, RunStartedRecord) and started.v == 0
    assert started.run_key == "e:warm:b:1" and started.at == "2026-01-01T00:00:01+00:00"
    # an unknown name on any channel, or a record whose fields do not fit, is never a crash
    assert isinstance(event_from_json({"event": "from_the_future", "x": 1}, "worker"), GenericRecord)
    assert isinstance(event_from_json({"no_event": 1}), GenericRecord)


def test_s7_typed_records_keep_the_journal_format(session: Session) -> None:
    s = session
    s.journal(RunStartedRecord(run_key="e:warm:b:1", experiment_id="e", variant_id="b", phase="warm",
                               run_index=1, worker="warm"))
    s.journal(IncidentRecord(message="something broke"))
    s.journal("checklist_done", item="x")
    lines = [json.loads(line) for line in s.journal_path.read_text(encoding="utf-8").splitlines()]
    started, incident, done = lines[-3:]
    assert started["event"] == "run_started" and started["v"] == PROTOCOL_VERSION and "at" in started
    assert {k: started[k] for k in ("run_key", "experiment_id", "variant_id", "phase", "run_index", "worker")} == {
        "run_key": "e:warm:b:1", "experiment_id": "e", "variant_id": "b", "phase": "warm",
        "run_index": 1, "worker": "warm"}
    assert incident == {"at": incident["at"], "event": "incident", "v": PROTOCOL_VERSION,
                        "message": "something broke"}  # fields not known are not written
    assert done["event"] == "checklist_done" and done["item"] == "x"
    with pytest.raises(TypeError):
        s.journal(IncidentRecord(message="x"), extra=1)


# -- RunKey -----------------------------------------------------------------------------
_PART = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="._-"),
                min_size=1, max_size=10)


@given(exp=st.lists(_PART, min_size=1, max_size=3).map(":".join), phase=st.sampled_from(journal.PHASES),
       variant=_PART, index=st.integers(0, 10**6))
def test_s7_run_key_format_parse_round_trip(exp: str, phase: str, variant: str, index: int) -> None:
    key = RunKey(exp, phase, variant, index)
    assert RunKey.parse(key.format()) == key
    assert str(key) == key.format() == f"{exp}:{phase}:{variant}:{index}"
    assert key.local == f"{phase}:{variant}:{index}"


@pytest.mark.parametrize("text", [
    "", "e", "e:warm:b", "e:warm:b:", "e:warm:b:x", "e:warm:b:-1", "e:hot:b:1", ":warm:b:1",
    "e:warm::1", "e:warm:b:1.5", "e:warm:b:١",
])
def test_s7_run_key_parse_refuses_malformed_text(text: str) -> None:
    with pytest.raises(BadInput, match="run"):
        RunKey.parse(text)


# -- the one renderer --------------------------------------------------------------------
def test_describe_words_for_each_runner_event() -> None:
    load = ResultRow(variant_id="all", phase="load", run_index=1, elapsed_seconds=1.23456)
    assert describe(RowAppended(row=load, total=4)) == "          load  all variants 1.23 s"
    failed_load = load.replace(elapsed_seconds=None)
    assert describe(RowAppended(row=failed_load, total=4)) == "          load  all variants failed"
    warm = ResultRow(variant_id="batch-4", phase="warm", run_index=2, elapsed_seconds=0.12345,
                     corpus_accepted=True)
    assert describe(RowAppended(row=warm, done=3, total=10)) == (
        "[  3/10] warm  batch-4    run 2   123 ms, corpus accepted")
    lost = warm.replace(elapsed_seconds=None, corpus_accepted=False)
    # a run that never finished was never validated: not "REJECTED"
    assert describe(RowAppended(row=lost, done=4, total=0)) == (
        "[  4/?] warm  batch-4    run 2   not measured, corpus not validated")
    rejected = warm.replace(ids_match=False, format_valid=True, corpus_accepted=False)
    assert describe(RowAppended(row=rejected, done=4, total=0)).endswith("123 ms, corpus REJECTED")
    assert describe(RowAppended(row=warm.replace(corpus_accepted=None), done=1, total=1)).endswith(
        "corpus not validated")
    env = {"device": "cpu", "gpu_model": None, "gpu_count": 0, "torch_version": "2.5.0",
           "driver_version": None, "nvml_reason": "no NVIDIA driver"}
    assert describe(EnvironmentObserved(environment=env)) == (
        "environment: device cpu, GPU none, GPUs used 0, torch 2.5.0, runtime none (CPU), "
        "driver not read (no NVIDIA driver)")
    assert describe(IncidentReported(message="worker warm exited with code 1")) == (
        "incident: worker warm exited with code 1")
    for quiet in (Progress(done=1, total=2), Loaded(worker="warm", elapsed_s=1.0),
                  WorkerStarted(worker="warm", pid=1), Finished(outcome=None)):
        assert describe(quiet) is None


def test_describe_is_the_renderer_of_cli_and_run_pane() -> None:
    root = Path(gpusession.__file__).resolve().parent
    for rel in ("commands/run_cmds.py", "ui/panes/run_launch.py"):
        text = (root / rel).read_text(encoding="utf-8")
        assert "describe(ev)" in text, rel
        assert 'ev["event"]' not in text and 'ev.get("event")' not in text, rel


def test_channel_sends_only_typed_events() -> None:
    from gpusession.bench.device import Channel

    out = io.StringIO()
    ch = Channel(out, io.StringIO("go\n"))
    ch.send(WorkerRunFinished(run_key="warm:b:1", ok=True, phase="warm", warmup_iterations=2, order=1,
                              elapsed_s=0.25))
    doc = json.loads(out.getvalue())
    assert doc["event"] == "run_finished" and doc["warmup_iterations"] == 2 and doc["v"] == PROTOCOL_VERSION
    assert event_from_json(doc, "worker") == WorkerRunFinished(
        run_key="warm:b:1", ok=True, phase="warm", warmup_iterations=2, order=1, elapsed_s=0.25)


def test_run_progress_of_the_newest_invocation_and_how_it_ended() -> None:
    """``run_progress``: the newest invocation (of one experiment, or of any), its count and its end."""
    from gpusession.core.events.records import (
        ExperimentIncompleteRecord,
        ExperimentStartedRecord,
        RunFinishedRecord,
    )
    from gpusession.core.folder.journal import run_progress

    records = [
        ExperimentStartedRecord(experiment_id="a", runs=["warm:b1:1", "warm:b1:2"]),
        RunFinishedRecord(experiment_id="a", run_key="a:warm:b1:1"),
        ExperimentIncompleteRecord(experiment_id="a", runs_done=1, runs_scheduled=2, cancelled=True),
        ExperimentStartedRecord(experiment_id="b", runs=["warm:b4:1", "warm:b4:2", "warm:b4:3"]),
        RunFinishedRecord(experiment_id="b", run_key="b:warm:b4:1"),
        RunFinishedRecord(experiment_id="a", run_key="a:warm:b1:9"),  # not b's
    ]
    newest = run_progress(records)
    assert newest is not None and (newest.experiment_id, newest.runs_done, newest.runs_scheduled) == ("b", 1, 3)
    assert not newest.ended and newest.state == "running_or_stopped"
    a = run_progress(records, "a")
    assert a is not None and a.ended and a.state == "cancelled" and (a.runs_done, a.runs_scheduled) == (1, 2)
    assert run_progress(records, "c") is None and run_progress([]) is None
