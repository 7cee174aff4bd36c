"""What the product knows it records ticks its checklist item (S11; changes S1), and a person's
word can still stand over it, with a note. The table is ``docs/checklist-facts.md``."""

from __future__ import annotations

import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import SESSION_START, cli, one_line

from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session
from gpusession.core.retrieval import checklist as cl
from gpusession.core.retrieval.known_facts import FACT_OF_ITEM, ORDER_EVENT_OF_ITEM, is_persons

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

DOC = Path(__file__).resolve().parents[2] / "docs" / "checklist-facts.md"
needs_rsync = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")


def _items(session: Session) -> dict[str, cl.ChecklistItem]:
    return {i.id: i for i in cl.load_checklist(session)}


def _record_order(session: Session) -> None:
    from gpusession.core.money.order import new_payment_order, record_event, set_order

    set_order(session, number="A-1234", gpu_model="RTX A5000", lots=1, days=7)
    new_payment_order(session, asset="USDT", network="TRC20", amount="55.00", destination="T" + "x" * 33,
                      expires_at=SESSION_START + timedelta(days=400))
    record_event(session, "payment-sent", source="you", note="clicked I have paid", amount="55.00")
    record_event(session, "payment-confirmed", source="tracking")
    record_event(session, "gpu-provisioned", source="tracking")


def test_s11_the_docs_table_is_the_codes_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z0-9]+\.[a-z0-9-]+)` \| (.+?) \|$", text, flags=re.M)
    documented = {item for item, _ in rows}
    assert documented == set(FACT_OF_ITEM)
    events = {item: re.match(r"`([a-z-]+)`", fact) for item, fact in rows if item.startswith("g5.")}
    assert {item: m.group(1) for item, m in events.items() if m} == {
        item: event for item, (event, _source) in ORDER_EVENT_OF_ITEM.items()}
    assert set(ORDER_EVENT_OF_ITEM) <= set(FACT_OF_ITEM)
    assert set(FACT_OF_ITEM) <= set(cl.bundled_ids())  # every ticked item exists


def test_s11_a_persons_judgement_is_never_ticked(session: Session, tmp_path: Path) -> None:
    from gpusession.core.money.kept_plan import keep_plan, make_plan

    assert not any(is_persons(i) for i in FACT_OF_ITEM)
    for item_id in ("g1.one-sentence", "g1.approver", "p1.fixed-before", "g7.one-change", "g8.open-from-copy"):
        assert is_persons(item_id)
    _record_order(session)
    keep_plan(session, make_plan("0.25,1,1,0.5,0.5"))
    items = _items(session)
    ticked = {i for i, it in items.items() if it.done}
    assert ticked == {"g4.plan-days", "g4.package-covers", *ORDER_EVENT_OF_ITEM}
    assert not any(is_persons(i) for i in ticked)


def test_s11_order_events_tick_stage_5_one_event_per_item(session: Session) -> None:
    from gpusession.core.money.order import record_event, set_order

    set_order(session, number="A-1234", gpu_model="RTX A5000", lots=1, days=7)
    record_event(session, "payment-sent", source="you")
    items = _items(session)
    assert items["g5.configurator"].done and items["g5.configurator"].ticked_by == cl.PRODUCT
    assert "order event ordered" in (items["g5.configurator"].evidence or "")
    assert items["g5.active-order"].done
    assert items["g5.active-order"].state_words() == "done (recorded by gpusession)"
    # "I have paid" confirms nothing (S2): the confirmation item waits for the provider's tracking
    assert not items["g5.paid-not-confirmed"].done and not items["g5.asset-network"].done
    _record_order(session)
    items = _items(session)
    assert all(items[i].done for i in ORDER_EVENT_OF_ITEM)
    assert "recorded by the provider's tracking" in (items["g5.paid-not-confirmed"].evidence or "")
    assert not items["g5.order-match"].done  # no matching event: the person's


def test_s11_a_kept_plan_ticks_stage_4_only_when_the_package_covers_it(
        new_session: object, session: Session) -> None:
    from gpusession.core.money.kept_plan import keep_plan, make_plan

    keep_plan(session, make_plan("0.25,1,1,0.5,0.5"))
    items = _items(session)
    assert items["g4.plan-days"].done and items["g4.package-covers"].done
    assert "the 7-day package covers it" in (items["g4.package-covers"].evidence or "")
    assert items["g4.plan-days"].at is not None  # when the plan was kept
    short = new_session(name="short", package=Package(gpu_model="RTX A5000", lots=1, days=3,  # type: ignore[operator]
                                                      start=SESSION_START))
    keep_plan(short, make_plan("0.25,1,1,0.5,0.5"))
    items = _items(short)
    assert not items["g4.plan-days"].done and not items["g4.package-covers"].done


def test_s11_a_count_of_accepted_deliverables_ticks_the_cost_item(session: Session, tmp_path: Path) -> None:
    from gpusession.core.folder.approvals import decide

    assert not _items(session)["g4.cost-per-deliverable"].done
    out = tmp_path / "out"
    out.mkdir()
    (out / "visual-01.png").write_bytes(b"\x89PNG\r\n\x1a\n1")
    decide(session, [out / "visual-01.png"], decision="approved", by="Ana")
    item = _items(session)["g4.cost-per-deliverable"]
    assert item.done and "1 approved" in (item.evidence or "")


def test_s11_s1_a_person_marks_a_ticked_item_not_done_only_with_a_note(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.money.order import set_order

    set_order(session, number="A-1234", gpu_model="RTX A5000", lots=1, days=7)
    before = session.checklist_toml.read_bytes()
    code, _, err = cli(capsys, sessions_root, "checklist", session.name, "undone", "g5.configurator")
    assert code == 2
    assert "to mark it not done, say why" in one_line(err) and "--note TEXT" in err
    assert session.checklist_toml.read_bytes() == before  # nothing written
    code, out, err = cli(capsys, sessions_root, "checklist", session.name, "undone", "g5.configurator",
                         "--note", "the configurator showed 2 lots")
    assert code == 0, err
    assert out.startswith("open (marked not done by you): g5.configurator")
    item = _items(session)["g5.configurator"]
    assert not item.done and item.not_done_although_recorded and item.note == "the configurator showed 2 lots"
    code, out, _ = cli(capsys, sessions_root, "checklist", session.name)
    assert "[ ] open (marked not done by you)  g5.configurator" in out
    assert cli(capsys, sessions_root, "checklist", session.name, "done", "g5.configurator")[0] == 0
    item = _items(session)["g5.configurator"]
    assert item.done and item.ticked_by == cl.PRODUCT and not item.not_done_although_recorded


def test_s1_a_probes_evidence_still_never_ticks(session: Session) -> None:
    from gpusession.core.retrieval.evidence import run_probes

    probes = run_probes(session, nvml=None, destination=None, now=SESSION_START)
    assert probes  # the probes read something…
    items = _items(session)
    assert not any(i.done for i in items.values())  # …and tick nothing: no fact is recorded yet


def test_s11_manifest_ticks_g8_manifest_with_its_path_and_count_recorded_by_gpusession(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``gpusession manifest`` ticks "write the manifest" with its evidence; a hand-made or
    edited ``[manifest]`` table is the person's (A4, H-58), and a manifest gone ticks nothing."""
    deliv = tmp_path / "deliverables"
    deliv.mkdir()
    for i in (1, 2, 3):
        (deliv / f"visual-0{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
    assert not _items(session)["g8.manifest"].done
    checklist = session.folder / "checklist.toml"
    before = checklist.read_text() if checklist.exists() else "schema = 1\n"
    checklist.write_text(before + '\n[manifest]\npath = "/nowhere/manifest.csv"\nfiles = 18\n')
    assert not _items(session)["g8.manifest"].done  # written by hand: no fact
    code, out, err = cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv))
    assert code == 0, err
    item = _items(session)["g8.manifest"]
    path = session.folder / "manifest.csv"
    assert item.done and item.ticked_by == cl.PRODUCT
    assert item.state_words() == "done (recorded by gpusession)"
    assert item.evidence == (f"manifest {path.absolute()}: 3 file(s), 27 bytes (SHA-256), written "
                             "2026-11-29 15:00 UTC by gpusession manifest")
    code, out, _ = cli(capsys, sessions_root, "checklist", session.name)
    lines = out.splitlines()
    at = next(i for i, t in enumerate(lines) if " g8.manifest " in t)
    assert lines[at].startswith("  [x] done (recorded by gpusession)  g8.manifest")
    assert "3 file(s)" in lines[at + 1] and str(path.absolute()) in lines[at + 1]
    sealed = checklist.read_text()
    checklist.write_text(sealed.replace("files = 3", "files = 30"))  # an edit of what gpusession wrote
    assert not _items(session)["g8.manifest"].done
    checklist.write_text(sealed)
    assert _items(session)["g8.manifest"].done
    path.unlink()  # the manifest it vouched for is gone
    assert not _items(session)["g8.manifest"].done


@needs_rsync
def test_s11_after_a_verified_pull_g8_verify_copy_is_done_with_the_pull_as_evidence(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deliv = tmp_path / "deliverables"
    deliv.mkdir()
    (deliv / "visual-01.png").write_bytes(b"\x89PNG\r\n\x1a\nA")
    assert cli(capsys, sessions_root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, sessions_root, "manifest", "s1", "--deliverables", str(deliv))[0] == 0
    home = tmp_path / "home"
    code, out, _ = cli(capsys, sessions_root, "pull", str(sessions_root / "s1"), "--to", str(home))
    assert code == 0, out
    code, out, _ = cli(capsys, home, "checklist", "s1")
    line = next(i for i, t in enumerate(out.splitlines()) if "g8.verify-copy" in t)
    lines = out.splitlines()
    assert lines[line].startswith("  [x] done (recorded by gpusession)  g8.verify-copy")
    assert "copy home verified" in lines[line + 1] and "by gpusession pull" in lines[line + 1]
    import json

    doc = json.loads(cli(capsys, home, "checklist", "s1", "--json")[1])
    item = next(i for i in doc["items"] if i["id"] == "g8.verify-copy")
    assert item["done"] is True and item["ticked_by"] == "gpusession"


def test_s11_verify_copy_of_the_sessions_manifest_ticks_it_and_a_later_difference_opens_it(
        session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deliv = tmp_path / "deliverables"
    deliv.mkdir()
    (deliv / "visual-01.png").write_bytes(b"\x89PNG\r\n\x1a\nA")
    assert cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv))[0] == 0
    copy = tmp_path / "copy"
    shutil.copytree(deliv, copy)
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(session.folder / "manifest.csv"), str(copy))
    assert code == 0 and f"recorded in the checklist of session {session.name}" in out
    item = _items(session)["g8.verify-copy"]
    assert item.done and "by gpusession verify-copy" in (item.evidence or "")
    code, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert "copy home verified" in out
    (copy / "visual-01.png").write_bytes(b"changed")
    assert cli(capsys, sessions_root, "verify-copy", str(session.folder / "manifest.csv"), str(copy))[0] == 3
    assert not _items(session)["g8.verify-copy"].done  # the newest check decides
    # a manifest outside any session records nothing
    (tmp_path / "m").mkdir()
    shutil.copy(session.folder / "manifest.csv", tmp_path / "m" / "manifest.csv")
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(tmp_path / "m" / "manifest.csv"), str(deliv))
    assert code == 0 and "recorded in the checklist" not in out


@needs_rsync
def test_s11_a_verified_small_copy_ticks_the_round_trip(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, sessions_root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    (sessions_root / "s1" / "notes.txt").write_bytes(b"x" * 50_000)
    code, out, err = cli(capsys, sessions_root, "pull", str(sessions_root / "s1"), "--probe",
                         "--to", str(tmp_path / "home"))
    assert code == 0, out + err
    s = Session.open(sessions_root, "s1")
    item = _items(s)["g2.round-trip"]
    assert item.done and "pull --probe" in (item.evidence or "")


def test_s11_the_tables_tracking_is_the_orders() -> None:
    from gpusession.core.money.order import TRACKING
    from gpusession.core.retrieval import known_facts

    assert known_facts.TRACKING == TRACKING
