"""``new NEXT --from PREVIOUS``: the next rental starts from the note (S11; seed 003 §8).

It carries the unit, the experiments' definitions and protocol, the plan and the
``g8.decision`` note (and the files the definitions name), never results, order or payment.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from cli.test_json_contract import _valid
from helpers import SESSION_START, cli, one_line

from gpusession.core.files.tomlio import read_toml
from gpusession.core.folder.experiments import load_experiments
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import checklist as cl

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

DECISION = "render at 300 dpi next time; Ana approves"


@pytest.fixture
def previous(session: Session, sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Session:
    """A finished rental: a unit, an accept-rule experiment with its files, a plan, a
    decision, rows, an order with its payment, approvals."""
    folder = session.folder
    (folder / "render.py").write_text("print('render')\n", encoding="utf-8")
    (folder / "check.py").write_text("print('ok')\n", encoding="utf-8")
    (folder / "expected.txt").write_text("".join(f"visual-{i:02d}.png\n" for i in range(1, 19)), encoding="utf-8")
    for args in (("package", session.name, "--unit", "visual", "--expected-count", "18",
                  "--plan", "0.25,1,1,0.5,0.5"),
                 ("experiment", session.name, "define", "--id", "render", "--workload", "command",
                  "--command", "python3 render.py {output}", "--values", "1", "--runs", "2",
                  "--expected-outputs", "expected.txt", "--deliverable-format", "png",
                  "--accept", "python3 check.py {output}"),
                 ("checklist", session.name, "note", "g8.decision", DECISION),
                 ("order", session.name, "set", "--number", "A-1234", "--gpu", "RTX A5000", "--lots", "1",
                  "--days", "7")):
        code, _, err = cli(capsys, sessions_root, *args)
        assert code == 0, (args, err)
    from gpusession.core.money.order import new_payment_order

    new_payment_order(session, asset="USDT", network="TRC20", amount="55.00", destination="T" + "x" * 33,
                      expires_at=SESSION_START + timedelta(days=400))
    session.results.append(ResultRow(experiment_id="render", variant_id="batch-1", phase="warm", run_index=1,
                                     elapsed_seconds=0.5, corpus_accepted=True, corpus_revision="r1"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "visual-01.png").write_bytes(b"\x89PNG\r\n\x1a\n1")
    from gpusession.core.folder.approvals import decide

    decide(session, [out / "visual-01.png"], decision="approved", by="Ana")
    (folder / "runs" / "render").mkdir(parents=True, exist_ok=True)
    session.reload()
    return session


def test_s11_new_from_carries_definitions_protocol_plan_and_decision_and_no_rows(
        previous: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "next", "--from", previous.name,
                         "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    assert code == 0, err
    lines = out.splitlines()
    start = lines.index(f"carried from {previous.name}:")
    listed = [line for line in lines[start + 1:] if line.startswith("  - ")]
    assert listed == [
        "  - unit: visual (plural visuals), 18 visuals expected",
        "  - experiment render: its definition and protocol (accept rule)",
        "  - plan: days per task 0.25,1,1,0.5,0.5 (3.25 d)",
        f"  - decision note (g8.decision): {DECISION}",
        "  - files the definitions name: render.py, check.py, expected.txt",
        "  - never carried: results, runs, validation reports, order, payment, approvals, copies home",
    ]
    new = Session.open(sessions_root, "next")
    assert [e.to_toml() for e in load_experiments(new)] == [e.to_toml() for e in load_experiments(previous)]
    assert new.data["deliverable"] == previous.data["deliverable"]
    assert new.data["plan"] == previous.data["plan"]
    assert next(i for i in cl.load_checklist(new) if i.id == "g8.decision").note == DECISION
    for name in ("render.py", "check.py", "expected.txt"):
        assert (new.folder / name).read_bytes() == (previous.folder / name).read_bytes()
    # no results, no order, no payment, no approvals
    assert new.results.read().height == 0
    from gpusession.core.money.order import load_order

    order = load_order(new)
    assert order.order is None and order.payment is None and not order.events
    assert read_toml(new.order_toml).keys() <= {"schema"}
    assert not (new.folder / "approvals.toml").exists() and not (new.folder / "runs").exists()
    assert "environment" not in new.data["experiments"]["render"]
    assert new.data["started_from"]["session"] == previous.name
    assert [r.EVENT for r in new.journal_records()][-1] == "session_started_from"
    code, out, _ = cli(capsys, sessions_root, "show", "next")
    assert f"from      session {previous.name}: its unit, experiment definitions, plan and decision note" in out
    code, out, _ = cli(capsys, sessions_root, "cost", "next")
    assert out.splitlines()[0] == "55.00 USD for the package; accepted visual: not measured yet"  # counted anew


def test_s11_new_from_json_validates_and_says_what_was_carried(
        previous: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "next", "--from", previous.name, "--json")
    assert code == 0, err
    doc = _valid("new", out)
    assert doc["started_from"] == previous.name and doc["carried"][-1].startswith("never carried:")
    assert _valid("new", cli(capsys, sessions_root, "new", "plain", "--json")[1])["carried"] is None


def test_s11_new_from_refuses_in_one_line_and_makes_nothing(
        previous: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "next", "--from", "next")
    assert code == 2 and "a session cannot start from itself" in one_line(err)
    code, _, err = cli(capsys, sessions_root, "new", "next", "--from", "nope")
    assert code == 2 and "no session 'nope'" in one_line(err)
    text = previous.session_toml.read_text(encoding="utf-8")
    previous.session_toml.write_text(text.replace('durations_days = [', 'durations_days = [7, '), encoding="utf-8")
    before = previous.session_toml.read_bytes()
    code, _, err = cli(capsys, sessions_root, "new", "next", "--from", previous.name)
    assert code == 2 and "plan.durations_days" in one_line(err) and "session.toml" in err
    assert not (sessions_root / "next").exists()  # nothing made
    assert previous.session_toml.read_bytes() == before  # nothing of the previous one changed


def test_s11_a_carried_plan_the_new_package_does_not_cover_is_kept_and_said(
        previous: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "next", "--from", previous.name, "--gpu", "RTX A5000",
                       "--lots", "1", "--days", "3")
    assert code == 0
    assert "warning: plan 3.25 d: the 3-day package does not cover it; the 7-day one does" in err
    assert Session.open(sessions_root, "next").data["plan"] == previous.data["plan"]


def test_s11_show_says_the_note_carried_from_the_previous_session(
        previous: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "next", "--from", previous.name,
                       "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    assert code == 0, err
    assert Session.open(sessions_root, "next").data["started_from"]["note"] == DECISION
    code, out, _ = cli(capsys, sessions_root, "show", "next")
    assert code == 0 and f"note      from {previous.name}: {DECISION}" in out.splitlines(), out
    cli(capsys, sessions_root, "checklist", "next", "note", "g8.decision", "our own decision now")
    code, out, _ = cli(capsys, sessions_root, "show", "next")
    assert f"note      from {previous.name}: {DECISION}" in out  # the note as carried, kept
    code, out, _ = cli(capsys, sessions_root, "show", previous.name)
    assert "note      from" not in out  # a session not made with --from says no such line
