"""The checklist (S1): bundled items, state in checklist.toml, own items, evidence (S5)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import SESSION_START

from gpusession.core.files.errors import BadInput
from gpusession.core.files.tomlio import read_toml
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import checklist as cl

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

T0 = SESSION_START  # the shared session's package start
GIB = 1024**3


class FakeNvml:
    """A pynvml-like module: GPUs given as (uuid, name, total_bytes)."""

    def __init__(self, gpus: list[tuple[str, str, int]], *, fail: bool = False) -> None:
        self.gpus = gpus
        self.fail = fail

    def nvmlInit(self) -> None:
        if self.fail:
            raise RuntimeError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        pass

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"550.54.15"

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self.gpus[h][0]

    def nvmlDeviceGetName(self, h: int) -> str:
        return self.gpus[h][1]

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=self.gpus[h][2], used=0, free=self.gpus[h][2])

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return []


def a5000(n: int = 1) -> FakeNvml:
    return FakeNvml([(f"GPU-a5000-{i}", "NVIDIA RTX A5000", 24 * GIB) for i in range(n)])


def _row(**kw: Any) -> ResultRow:
    base: dict[str, Any] = dict(
        experiment_id="batch-sweep", variant_id="b1", phase="warm", run_index=1,
        gpu_model="NVIDIA RTX A5000", gpu_count=1, device="cuda:0", driver_version="550.54.15",
        runtime_version="CUDA 12.4", torch_version="2.5.1", elapsed_seconds=1.25,
        peak_reserved_bytes=3 * GIB, peak_allocated_bytes=2 * GIB,
    )
    base.update(kw)
    return ResultRow(**base)


# -- content ---------------------------------------------------------------------------
def test_s1_checklist_runs_from_need_to_retrieval(session: Session) -> None:
    items = cl.load_checklist(session)
    assert set(cl.STAGES) == set(range(1, 9))
    assert cl.STAGES[1] == "Define the output"
    assert cl.STAGES[8] == "Close with a copy and a decision"
    stages = [i.stage for i in items]
    assert stages == sorted(stages)
    assert set(stages) == set(range(1, 9))  # every stage has items
    ids = [i.id for i in items]
    assert len(ids) == len(set(ids))
    for needed in ("g1.one-sentence", "g2.fixed-name", "g3.no-pooling", "g5.order-match",
                   "g6.device-check", "g7.session-limit", "g8.verify-copy", "g8.decision",
                   "p1.fixed-before", "p1.revisions", "p1.splits-separate"):
        assert needed in ids
    assert all(not i.done and i.at is None and i.note == "" and not i.custom for i in items)


def test_s1_fixed_test_name_is_the_session_name(session: Session) -> None:
    item = next(i for i in cl.load_checklist(session) if i.id == "g2.fixed-name")
    assert "visuals-test-01" in item.text
    assert "{session}" not in item.text


def test_s1_done_when_note_saved_at_once_and_read_back(session: Session) -> None:
    at = datetime(2026, 11, 29, 15, 30, 12, 999, tzinfo=timezone.utc)
    item = cl.set_done(session, "g1.one-sentence", True, now=at)
    assert item.done and item.at == at.replace(microsecond=0)
    cl.set_note(session, "g1.one-sentence", "18 readable visuals, approved by Ana")
    # another process reads the file: the state is already on disk
    doc = read_toml(session.checklist_toml)
    st = doc["items"]["g1.one-sentence"]
    assert st["done"] is True and st["note"] == "18 readable visuals, approved by Ana"
    assert st["at"] == at.replace(microsecond=0)
    reopened = Session.open(session.folder.parent, session.name)
    item = next(i for i in cl.load_checklist(reopened) if i.id == "g1.one-sentence")
    assert item.done and item.note.startswith("18 readable") and item.at == at.replace(microsecond=0)
    undone = cl.set_done(reopened, "g1.one-sentence", False)
    assert not undone.done and undone.at is None
    assert undone.note.startswith("18 readable")  # unticking keeps the note


def test_s1_unknown_item_is_bad_input_and_writes_nothing(session: Session) -> None:
    before = session.checklist_toml.read_bytes()
    with pytest.raises(BadInput, match="no checklist item"):
        cl.set_done(session, "g9.nothing", True)
    with pytest.raises(BadInput):
        cl.set_note(session, "nope", "x")
    assert session.checklist_toml.read_bytes() == before


def test_s1_person_adds_own_items(session: Session) -> None:
    a = cl.add_item(session, 2, "  Ask IT   for the VPN ")
    b = cl.add_item(session, 8, "Send the copy to Ana")
    assert (a.id, a.stage, a.text, a.custom) == ("own.1", 2, "Ask IT for the VPN", True)
    assert b.id == "own.2"
    items = cl.load_checklist(session)
    stage2 = [i.id for i in items if i.stage == 2]
    assert stage2[-1] == "own.1"  # after the bundled items of its stage
    done = cl.set_done(session, "own.1", True, now=T0)
    assert done.done and done.custom and done.stage_title == cl.STAGES[2]
    with pytest.raises(BadInput):
        cl.add_item(session, 9, "x")
    with pytest.raises(BadInput):
        cl.add_item(session, 1, "   ")


def test_s1_malformed_state_names_file_and_field(session: Session) -> None:
    session.checklist_toml.write_text('schema = 1\nitems = "oops"\n', encoding="utf-8")
    with pytest.raises(BadInput) as exc:
        cl.load_checklist(session)
    assert "checklist.toml" in str(exc.value) and "items" in str(exc.value)


# -- evidence --------------------------------------------------------------------------
def test_s1_a_probes_evidence_never_ticks_and_is_stored(session: Session) -> None:
    """A probe's reading is evidence only; what ticks an item is a fact the product recorded (S11)."""
    session.results.append(_row())
    ev = cl.collect_evidence(session, nvml=a5000(1), now=T0 + timedelta(days=1))
    assert {"g6.device-check", "g6.on-gpu", "g5.order-match", "g3.memory-need",
            "g2.destination", "p1.fixed-before", "g7.session-limit"} <= set(ev)
    items = {i.id: i for i in cl.load_checklist(session)}
    assert not any(i.done for i in items.values())
    assert all(i.ticked_by is None for i in items.values())
    assert items["g6.device-check"].evidence == ev["g6.device-check"]
    assert "done = true" not in session.checklist_toml.read_text(encoding="utf-8")


def test_device_evidence_from_fake_nvml_and_last_run(session: Session) -> None:
    session.results.append(_row())
    ev = cl.collect_evidence(session, nvml=a5000(2), now=T0)
    dev = ev["g6.device-check"]
    assert "2 GPU(s)" in dev and "GPU-a5000-0" in dev and "GPU-a5000-1" in dev
    assert "550.54.15" in dev and "CUDA 12.4" in dev and "cuda:0" in dev
    assert ev["g6.on-gpu"].startswith("on the GPU") and "allocator held" in ev["g6.on-gpu"]


def test_on_gpu_warns_when_nothing_was_allocated_on_the_gpu(session: Session) -> None:
    session.results.append(_row(peak_allocated_bytes=0))
    ev = cl.collect_evidence(session, nvml=a5000(1), now=T0)["g6.on-gpu"]
    assert ev.startswith("WARNING") and "no allocation" in ev


def test_device_evidence_without_nvml_or_runs_says_not_available(session: Session) -> None:
    ev = cl.collect_evidence(session, nvml=FakeNvml([], fail=True), now=T0)
    assert "not available" in ev["g6.device-check"]
    assert "Driver Not Loaded" in ev["g6.device-check"]
    assert ev["g6.on-gpu"] == "not available yet: no run recorded"
    assert ev["g3.memory-need"] == "not available yet: no run recorded"
    assert "not available yet" in ev["g5.order-match"]


def test_on_gpu_warns_when_last_run_was_on_cpu(session: Session) -> None:
    session.results.append(_row(device="cpu", peak_reserved_bytes=None))
    ev = cl.collect_evidence(session, nvml=a5000(1), now=T0)
    assert ev["g6.on-gpu"].startswith("WARNING") and "cpu" in ev["g6.on-gpu"]


def test_s5_order_match_ok(session: Session) -> None:
    ev = cl.collect_evidence(session, nvml=a5000(1), now=T0)
    assert ev["g5.order-match"].startswith("matches")
    assert ev["g6.deviation"] == ev["g5.order-match"]


def test_s5_deviation_without_order_is_recorded_once_against_package(session: Session) -> None:
    order = pytest.importorskip("gpusession.core.money.order")
    ev = cl.collect_evidence(session, nvml=a5000(2), now=T0)
    assert ev["g5.order-match"].startswith("DEVIATION from the package")
    assert "2 GPU(s) seen, 1 ordered" in ev["g5.order-match"]
    assert "no order number yet" in ev["g5.order-match"]
    cl.collect_evidence(session, nvml=a5000(2), now=T0)
    devs = [e for e in order.load_order(session).events if e.state == "deviation-noted"]
    assert len(devs) == 1 and "2" in devs[0].note


def test_s5_deviation_recorded_against_order_number(session: Session) -> None:
    order = pytest.importorskip("gpusession.core.money.order")
    load_order, set_order = order.load_order, order.set_order
    set_order(session, number="ORD-4711", gpu_model="RTX A5000", lots=1, days=7)
    ev = cl.collect_evidence(session, nvml=a5000(2), now=T0)["g6.deviation"]
    assert ev.startswith("DEVIATION from order ORD-4711") and "recorded against order ORD-4711" in ev
    cl.collect_evidence(session, nvml=a5000(2), now=T0)
    devs = [e for e in load_order(session).events if e.state == "deviation-noted"]
    assert len(devs) == 1 and devs[0].order_number == "ORD-4711"
    # a matching GPU records nothing more
    assert cl.collect_evidence(session, nvml=a5000(1), now=T0)["g5.order-match"].startswith(
        "matches order ORD-4711")
    assert len([e for e in load_order(session).events if e.state == "deviation-noted"]) == 1


def test_s5_wrong_model_is_a_deviation(session: Session) -> None:
    nv = FakeNvml([("GPU-x", "NVIDIA RTX A4000", 16 * GIB)])
    ev = cl.collect_evidence(session, nvml=nv, now=T0)
    assert "DEVIATION" in ev["g5.order-match"] and "RTX A4000" in ev["g5.order-match"]


def test_s5_b200_lot_holds_two_gpus(sessions_root: Path) -> None:
    s = Session.create(sessions_root, "b200", package=Package(gpu_model="B200", lots=1, days=3, start=T0))
    two = FakeNvml([("GPU-b0", "NVIDIA B200", 180 * GIB), ("GPU-b1", "NVIDIA B200", 180 * GIB)])
    assert cl.collect_evidence(s, nvml=two, now=T0)["g5.order-match"].startswith("matches")
    one = FakeNvml([("GPU-b0", "NVIDIA B200", 180 * GIB)])
    assert "1 GPU(s) seen, 2 ordered" in cl.collect_evidence(s, nvml=one, now=T0)["g5.order-match"]


def test_memory_need_fits_one_card(session: Session) -> None:
    session.results.append(_row(peak_reserved_bytes=6 * GIB))
    ev = cl.collect_evidence(session, nvml=a5000(1), now=T0)
    assert "fits" in ev["g3.memory-need"] and ev["g3.no-pooling"] == ev["g3.memory-need"]


def test_memory_need_warns_cards_do_not_pool(session: Session) -> None:
    session.results.append(_row(peak_reserved_bytes=30 * GIB, gpu_count=1))
    ev = cl.collect_evidence(session, nvml=a5000(2), now=T0)["g3.no-pooling"]
    assert ev.startswith("WARNING") and "do not pool" in ev


def test_free_space_against_manifest_size(session: Session, tmp_path: Path) -> None:
    ev = cl.collect_evidence(session, nvml=a5000(), now=T0)["g2.destination"]
    assert "no destination named" in ev
    (session.folder / "manifest.csv").write_text(
        "path,size_bytes,sha256\na.png,1000," + "0" * 64 + "\n", encoding="utf-8"
    )
    dest = tmp_path / "back-home"
    dest.mkdir()
    ev = cl.collect_evidence(session, nvml=a5000(), destination=dest, now=T0)["g2.destination"]
    assert "free" in ev and "1000 B" in ev and "fits" in ev


def test_d1_session_limit_evidence_uses_the_one_reserve_of_the_session_limit(session: Session) -> None:
    from gpusession.core.copyhome.limit import session_limit, set_limit

    set_limit(session, auto=True)  # the test session's own far limit off: the default reserve
    session.reload()
    ev = cl.collect_evidence(session, nvml=a5000(), now=T0 + timedelta(days=1))
    assert "6d 00h 00m left" in ev["g7.session-limit"] and "4 h kept for retrieval" in ev["g7.session-limit"]
    late = cl.collect_evidence(session, nvml=a5000(), now=T0 + timedelta(days=7, hours=-2))
    assert late["g7.session-limit"].startswith("WARNING") and "past the session limit" in late["g7.session-limit"]
    set_limit(session, reserve_s=3600)
    session.reload()
    ok = cl.collect_evidence(session, nvml=a5000(), now=T0 + timedelta(days=7, hours=-2))
    assert not ok["g7.session-limit"].startswith("WARNING")
    assert "1 h kept for retrieval" in ok["g7.session-limit"]
    # the checklist says the limit the runner enforces: the same instant
    limit = session_limit(session, T0 + timedelta(days=7, hours=-2))
    assert limit.at is not None and limit.at.isoformat() in ok["g7.session-limit"]


def test_protocol_fixed_before_first_run(session: Session) -> None:
    assert "no experiment" in cl.collect_evidence(session, nvml=a5000(), now=T0)["p1.fixed-before"]
    session.data["experiments"] = {
        "batch-sweep": {
            "defined_at": T0,
            "protocol": {"classes": ["a", "b"], "output_format": "jsonl", "metric": "macro-f1",
                         "threshold": 0.8, "tolerance": 0.01},
        }
    }
    session.save()
    with open(session.journal_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"at": (T0 + timedelta(hours=1)).isoformat(), "event": "run_started",
                             "run_key": "k1", "experiment_id": "batch-sweep"}) + "\n")
    ev = cl.collect_evidence(session, nvml=a5000(), now=T0)["p1.fixed-before"]
    assert "before the first run" in ev and "not fixed" not in ev
    session.data["experiments"]["batch-sweep"]["defined_at"] = T0 + timedelta(hours=2)
    session.save()
    ev = cl.collect_evidence(session, nvml=a5000(), now=T0)["p1.fixed-before"]
    assert ev.startswith("WARNING") and "AFTER" in ev


def test_protocol_evidence_from_run_engine_journal(session: Session) -> None:
    plan = pytest.importorskip("gpusession.core.experiment.plan")
    experiments = pytest.importorskip("gpusession.core.folder.experiments")
    proto = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.8, "tolerance": 0.01,
             "output_format": "jsonl"}
    experiments.define_experiment(session, plan.Experiment(id="sweep", workload="synthetic-mlp",
                                                    values=(1, 4), protocol=proto))
    session.journal("run_started", run_key="sweep/batch-1/cold/1", experiment_id="sweep")
    ev = cl.collect_evidence(session, nvml=a5000(), now=T0)["p1.fixed-before"]
    assert ev.startswith("sweep: protocol stored") and "before the first run" in ev
    assert "not fixed" not in ev and "WARNING" not in ev
    # someone edits the threshold in session.toml after the runs: flagged (V5)
    session.data["experiments"]["sweep"]["protocol"]["threshold"] = 0.5
    session.save()
    ev = cl.collect_evidence(session, nvml=a5000(), now=T0)["p1.fixed-before"]
    assert "differs from the one stored before the runs" in ev


def test_collect_evidence_accepts_a_snapshot(session: Session) -> None:
    from gpusession.core.gpu.nvml import read_nvml

    snap = read_nvml(a5000(1))
    ev = cl.collect_evidence(session, nvml=snap, now=T0)
    assert "GPU-a5000-0" in ev["g6.device-check"]


# -- CLI -----------------------------------------------------------------------------
@pytest.mark.slow
def test_s1_cli_checklist_show_done_note_add_evidence(run_cli, sessions_root: Path,
                                                      tmp_path: Path) -> None:
    assert run_cli("new", "visuals-test-01", "--gpu", "RTX A5000", "--lots", "1",
                   "--days", "7").returncode == 0
    r = run_cli("checklist", "visuals-test-01")
    assert r.returncode == 0, r.stderr
    assert "1 Define the output" in r.stdout and "8 Close with a copy and a decision" in r.stdout
    assert "[ ] open  g2.fixed-name" in r.stdout and "visuals-test-01" in r.stdout
    assert run_cli("checklist", "visuals-test-01", "done", "g1.one-sentence").returncode == 0
    r = run_cli("checklist", "visuals-test-01", "note", "g1.one-sentence", "18 visuals,", "readable")
    assert r.returncode == 0 and "18 visuals, readable" in r.stdout
    r = run_cli("checklist", "visuals-test-01", "add", "2", "Ask IT for the VPN")
    assert r.returncode == 0 and "own.1" in r.stdout
    dest = tmp_path / "home-copy"
    dest.mkdir()
    r = run_cli("checklist", "visuals-test-01", "evidence", "--destination", str(dest))
    assert r.returncode == 0, r.stderr
    assert "g6.device-check" in r.stdout and "never ticks" in r.stdout
    data = json.loads(run_cli("checklist", "visuals-test-01", "--json").stdout)
    items = {i["id"]: i for i in data["items"]}
    assert items["g1.one-sentence"]["done"] is True and items["g1.one-sentence"]["at"]
    assert items["g1.one-sentence"]["note"] == "18 visuals, readable"
    assert items["own.1"]["custom"] is True and items["own.1"]["stage"] == 2
    assert str(dest) in items["g2.destination"]["evidence"]
    assert items["g6.device-check"]["done"] is False  # evidence never ticks
    assert data["done"] == 1


@pytest.mark.slow
def test_s1_cli_checklist_bad_input_exits_2(run_cli) -> None:
    assert run_cli("new", "s1").returncode == 0
    for args in (("done", "g9.nope"), ("add", "9", "x"), ("add", "two", "x"), ("note",),
                 ("done",), ("show", "extra")):
        r = run_cli("checklist", "s1", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert run_cli("checklist", "nosuch").returncode == 2


def test_device_evidence_uses_the_run_engines_environment_table(session: Session) -> None:
    session.results.append(_row(experiment_id="sweep", driver_version=None))
    session.data["experiments"] = {"sweep": {"workload": "synthetic-mlp", "environment": {
        "gpu_uuid": "GPU-5f3a-77", "driver_version": "550.54.15", "cuda_visible_devices": "1"}}}
    session.save()
    dev = cl.collect_evidence(session, nvml=FakeNvml([], fail=True), now=T0)["g6.device-check"]
    assert "UUID GPU-5f3a-77" in dev and "driver 550.54.15" in dev
    assert "CUDA_VISIBLE_DEVICES=1" in dev


def test_order_match_after_a_cpu_run_says_nothing_to_compare(session: Session) -> None:
    session.results.append(_row(device="cpu", gpu_model=None, gpu_count=0, peak_reserved_bytes=None))
    ev = cl.collect_evidence(session, nvml=FakeNvml([], fail=True), now=T0)["g5.order-match"]
    assert "no GPU observed" in ev and "device cpu" in ev and "DEVIATION" not in ev


def test_s5_order_match_from_last_run_when_nvml_is_missing(session: Session) -> None:
    session.results.append(_row(gpu_model="NVIDIA RTX A5000", gpu_count=1))
    ev = cl.collect_evidence(session, nvml=FakeNvml([], fail=True), now=T0)["g5.order-match"]
    assert ev.startswith("matches") and "(last run)" in ev


def test_s1_a_hand_broken_item_entry_is_named_and_never_overwritten(session: Session) -> None:
    # a value of the wrong kind is a one-line error naming file and key; the
    # file stays as the person left it (it was silently replaced before)
    text = 'schema = 1\n[items]\n"g1.approver" = "oops"\n'
    session.checklist_toml.write_text(text, encoding="utf-8")
    for call in (lambda: cl.load_checklist(session),
                 lambda: cl.set_done(session, "g1.approver", True, now=T0),
                 lambda: cl.collect_evidence(session, nvml=a5000(), now=T0)):
        with pytest.raises(BadInput) as exc:
            call()
        assert exc.value.path == session.checklist_toml
        assert exc.value.field == "items.g1.approver" and "expected a table" in str(exc.value)
    assert session.checklist_toml.read_text(encoding="utf-8") == text


def test_h17_bundled_texts_are_shown_as_written_and_own_items_escaped(tmp_path: Path) -> None:
    """A bundled text is this package's, printable as it is: shown without the masks (the
    first frame loads no detector for it); a person's own item is escaped as before."""
    from gpusession.core.files.textio import printable

    s = Session.create(tmp_path, "t-1.a_b", package=Package())
    stages, templates = cl._bundled()
    for text in [t.text.replace("{session}", s.name) for t in templates] + list(stages.values()):
        assert printable(text) == text, text
    (s.folder / "checklist.toml").write_text(  # an own item edited by hand
        'schema = 1\n[items."own.1"]\ncustom = true\nstage = 2\ntext = "look at \\u001b[31mthis\\u001b[0m"\n', encoding="utf-8")
    items = cl.load_checklist(s, with_facts=False)
    assert sorted(i.text for i in items if not i.custom) == sorted(t.text.replace("{session}", s.name)
                                                                   for t in templates)
    assert "Give the test a fixed name and use it everywhere: t-1.a_b" in [i.text for i in items]
    own = next(i for i in items if i.custom)
    assert own.text == "look at \\x1b[31mthis\\x1b[0m"
