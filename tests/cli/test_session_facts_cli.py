"""``show`` and ``cost``, as text and as ``--json``, render the session's one record (A1; S8, S10, K3).

The same count, unit, source and cost per deliverable as
:func:`gpusession.core.retrieval.session_facts.session_facts` says, in every form.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli.test_json_contract import _valid
from helpers import TEST_NOW, cli

from gpusession.core.folder.session import Session
from gpusession.core.money.rates import format_usd
from gpusession.core.retrieval.session_facts import Unmeasured, session_facts

#: Reads the package window and the cost: run again a year ahead and a month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

PNG = b"\x89PNG\r\n\x1a\n"


def _approve_two(capsys: pytest.CaptureFixture[str], root: Path, s: Session, out: Path) -> None:
    out.mkdir()
    for i in (1, 2):
        (out / f"chart-0{i}.png").write_bytes(PNG + bytes([i]) * 8)
    assert cli(capsys, root, "package", s.name, "--unit", "visual")[0] == 0
    code, _, err = cli(capsys, root, "approve", s.name, str(out / "chart-01.png"), str(out / "chart-02.png"),
                       "--by", "Ana")
    assert code == 0, err


def _figures(doc: dict[str, object]) -> tuple[object, ...]:
    return tuple(doc[k] for k in ("count", "unit", "source", "per_deliverable_usd_minor"))


def test_a1_s10_show_and_cost_text_and_json_carry_the_records_figures(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _approve_two(capsys, sessions_root, session, tmp_path / "out")
    facts = session_facts(Session.open(sessions_root, session.name), now=TEST_NOW)
    assert facts.count == 2 and facts.per_deliverable_usd_minor == 2750
    expected = (2, "visual", "approved", 2750)
    line = facts.cost_words()
    assert line == "55.00 USD ÷ 2 approved visuals = 27.50 USD per visual"

    code, out, err = cli(capsys, sessions_root, "show", session.name)
    assert code == 0, err
    assert f"cost      {line}" in out.splitlines()
    assert any(ln.startswith("accepted  2 approved visuals (") for ln in out.splitlines()), out
    code, out, _ = cli(capsys, sessions_root, "show", session.name, "--json")
    shown = _valid("show", out)  # the schema documents the record too
    assert _figures(shown["answer"]) == expected and shown["answer"]["cost_words"] == line
    assert (shown["deliverables"]["count"], shown["deliverables"]["source"]) == (2, "approved")

    code, out, err = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0, err
    assert out.splitlines()[0] == line  # the same figure, the same unit and count
    code, out, _ = cli(capsys, sessions_root, "cost", session.name, "--json")
    priced = _valid("cost", out)
    assert _figures(priced["answer"]) == expected
    assert priced["cost_per_accepted_usd_minor"] == 2750 and priced["accepted_count"] == 2
    assert priced["per_unit_line"] == line and priced["deliverables"]["count"] == 2


def test_k3_show_and_cost_say_the_same_reason_when_nothing_is_accepted(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    facts = session_facts(session, now=TEST_NOW)
    per = facts.per_deliverable_usd_minor
    assert isinstance(per, Unmeasured)
    code, out, _ = cli(capsys, sessions_root, "show", session.name, "--json")
    answer = _valid("show", out)["answer"]
    assert answer["count"] is None and answer["per_deliverable_usd_minor"] is None  # never 0 (C3)
    assert answer["per_deliverable_unmeasured"] == per.reason
    code, out, _ = cli(capsys, sessions_root, "cost", session.name, "--json")
    priced = _valid("cost", out)
    assert priced["answer"]["per_deliverable_unmeasured"] == per.reason
    assert priced["cost_per_accepted_usd_minor"] is None and priced["cost_per_accepted_reason"] == per.reason
    code, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert f"cost      {format_usd(5500)} for the package; " in out


def test_d5_show_says_the_records_variant_to_keep_never_a_rejected_one(
        sessions_root: Path, measured_session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    facts = session_facts(measured_session, now=TEST_NOW)
    (kept,) = facts.keep
    code, out, err = cli(capsys, sessions_root, "show", measured_session.name)
    assert code == 0, err
    assert f"keep      {kept.words()}" in out.splitlines()
    code, out, _ = cli(capsys, sessions_root, "show", measured_session.name, "--json")
    doc = _valid("show", out)["answer"]
    assert [k["variant_id"] for k in doc["keep"]] == [kept.variant_id] == ["batch-8"]
    assert [v["variant_id"] for v in doc["verdicts"] if v["kept"]] == ["batch-8"]
