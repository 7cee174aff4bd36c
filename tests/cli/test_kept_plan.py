"""The plan kept with the package (K6; seed 003 §4): ``package NAME --plan``, priced by
``cost NAME`` (``cost --plan`` overrides it for one call), said by ``show``, ``show --json``,
the report and the Cost pane."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.test_json_contract import _valid
from helpers import cli, one_line

from gpusession.core.files.tomlio import read_toml
from gpusession.core.folder.package import Package
from gpusession.core.folder.session import Session
from gpusession.core.money.kept_plan import KeptPlan, make_plan, session_plan

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

COVERED = "plan 3.25 d: the 7-day package covers it; the 3-day one does not"


def test_k6_package_keeps_the_plan_as_decimal_strings(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "package", session.name, "--plan", "0.25,1,1,0.5,0.5",
                         "--plan-names", "prepare,render,review,fix,copy home")
    assert code == 0, err
    assert COVERED in out  # the 7-day package of the shared session covers 3.25 days
    table = read_toml(session.session_toml)["plan"]
    assert table == {"durations_days": ["0.25", "1", "1", "0.5", "0.5"],
                     "names": ["prepare", "render", "review", "fix", "copy home"]}
    session.reload()
    kept = session_plan(session)
    assert kept is not None and str(kept.total_days) == "3.25"
    assert [r.EVENT for r in session.journal_records()][-1] == "plan_set"


def test_k6_cost_prices_the_kept_plan_and_a_given_plan_only_for_that_call(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, sessions_root, "package", session.name, "--plan", "0.25,1,1,0.5,0.5")[0] == 0
    code, out, err = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0, err
    assert "Plan: 0.25 + 1 + 1 + 0.5 + 0.5 = 3.25 days → the 7-day package covers it" in out
    assert f"(the plan kept with the package of session {session.name})" in out
    before = session.session_toml.read_bytes()
    code, out, err = cli(capsys, sessions_root, "cost", session.name, "--plan", "1,1")
    assert code == 0, err
    assert "Plan: 1 + 1 = 2 days → the 3-day package covers it" in out
    assert "given with --plan for this call; the plan kept with session visuals-test-01 is 0.25,1,1,0.5,0.5" in out
    assert session.session_toml.read_bytes() == before  # overridden for that call only
    code, out, _ = cli(capsys, sessions_root, "cost", session.name, "--json")
    doc = _valid("cost", out)
    assert doc["plan"]["total_days"] == "3.25" and doc["plan"]["package_days"] == 7
    assert doc["plan"]["source"] == f"the plan kept with the package of session {session.name}"


def test_k6_show_and_show_json_say_which_package_covers_the_plan(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, sessions_root, "show", session.name, "--json")
    assert _valid("show", out)["plan"] is None
    assert cli(capsys, sessions_root, "package", session.name, "--plan", "0.25,1,1,0.5,0.5")[0] == 0
    code, out, err = cli(capsys, sessions_root, "show", session.name)
    assert code == 0, err
    plan_line = next(line for line in out.splitlines() if line.startswith("plan "))
    assert "3.25 d: the 7-day package covers it; the 3-day one does not" in plan_line
    doc = _valid("show", cli(capsys, sessions_root, "show", session.name, "--json")[1])
    assert doc["plan"] == {"durations_days": ["0.25", "1", "1", "0.5", "0.5"], "names": None,
                           "total_days": "3.25", "package_days": 7, "covered_by_package": True,
                           "words": COVERED}
    assert "plan" not in doc["session_toml"]  # one fact, one key


def test_k6_a_longer_plan_later_is_kept_and_warned_never_shrunk(
        new_session: object, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import SESSION_START

    s = new_session(name="short", package=Package(gpu_model="RTX A5000", lots=1, days=3,  # type: ignore[operator]
                                                  start=SESSION_START))
    code, out, err = cli(capsys, sessions_root, "package", s.name, "--plan", "1,1")
    assert code == 0 and err == "", err
    assert "plan 2 d: the 3-day package covers it" in out
    code, out, err = cli(capsys, sessions_root, "package", s.name, "--plan", "0.25,1,1,0.5,0.5")
    assert code == 0, err
    assert "the plan grew from 2 d to 3.25 d; kept as given, never shrunk to fit the package" in err
    assert "the 3-day package does not cover it; the 7-day one does" in err
    s.reload()
    kept = session_plan(s)
    assert kept is not None and kept.text() == "0.25,1,1,0.5,0.5"  # as given, not cut to 3 days
    code, out, _ = cli(capsys, sessions_root, "show", s.name, "--json")
    assert json.loads(out)["plan"]["covered_by_package"] is False


def test_k6_a_plan_cut_to_fit_a_shorter_package_is_warned_and_both_totals_journalled(
        new_session: object, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rental guide §4: shrinking the plan to fit the 3-day package is the mistake it warns of."""
    from helpers import SESSION_START

    s = new_session(name="cut", package=Package(gpu_model="RTX A5000", lots=1, days=3,  # type: ignore[operator]
                                                start=SESSION_START))
    assert cli(capsys, sessions_root, "package", s.name, "--plan", "0.25,1,1,0.5,0.5")[0] == 0
    code, out, err = cli(capsys, sessions_root, "package", s.name, "--plan", "0.25,1,1,0.5")
    assert code == 0, err
    assert ("the plan shrank from 3.25 d to 2.75 d, so the 3-day package now covers it "
            "(the 7-day one did)") in err
    assert "never to fit a shorter package" in err
    s.reload()
    last = [r for r in s.journal_records() if r.EVENT == "plan_set"][-1]
    assert (last.total_days, last.previous_total_days) == ("2.75", "3.25")
    # a cut that keeps the same covering package is still said, without the package words
    code, out, err = cli(capsys, sessions_root, "package", s.name, "--plan", "0.25,1,1")
    assert code == 0 and "the plan shrank from 2.75 d to 2.25 d: kept as given" in err


@pytest.mark.parametrize("args, field", [
    (("--plan", "0,25"), "plan"),
    (("--plan", "1,-1"), "plan"),
    (("--plan", "1e3"), "plan"),
    (("--plan", "400"), "plan"),
    (("--plan", "1,1", "--plan-names", "only-one"), "plan-names"),
    (("--plan-names", "a"), "plan-names"),
])
def test_k6_a_bad_plan_is_one_line_exit_2_and_nothing_written(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str],
        args: tuple[str, ...], field: str) -> None:
    before = session.session_toml.read_bytes()
    journal = session.journal_path.read_bytes()
    code, _, err = cli(capsys, sessions_root, "package", session.name, *args)
    assert code == 2
    assert f"{field}:" in one_line(err)
    assert session.session_toml.read_bytes() == before and session.journal_path.read_bytes() == journal


@pytest.mark.parametrize("table", [
    "durations_days = [0.25, 1]",  # numbers: a binary float is never money nor a plan (K2)
    'durations_days = ["0,25"]',
    'durations_days = ["1", "2"]\nnames = ["only one"]',
])
def test_k6_a_plan_broken_by_hand_names_the_file_and_field(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str], table: str) -> None:
    text = session.session_toml.read_text(encoding="utf-8")
    session.session_toml.write_text(text + f"\n[plan]\n{table}\n", encoding="utf-8")
    before = session.session_toml.read_bytes()
    for args in (("show", session.name), ("cost", session.name)):
        code, _, err = cli(capsys, sessions_root, *args)
        assert code == 2, args
        line = one_line(err)
        assert "session.toml" in line and "plan." in line, line
    assert session.session_toml.read_bytes() == before


def test_k6_plan_words_for_each_package() -> None:
    plan = make_plan("0.25,1,1,0.5,0.5")
    assert plan.words(Package(days=7)) == COVERED
    assert plan.words(Package(days=3)).startswith("plan 3.25 d: the 3-day package does not cover it; the 7-day one does")
    assert plan.words(Package(days=30)) == ("plan 3.25 d: the 30-day package covers it (the 7-day one is the "
                                            "smallest that does)")
    assert plan.words(Package()).startswith("plan 3.25 d: the 7-day package is the smallest")
    assert KeptPlan(make_plan("20,20").durations_days).words(Package(days=30)).startswith(
        "plan 40 d: longer than one 30-day package")
    assert make_plan("3").words(Package(days=3)) == "plan 3 d: the 3-day package covers it"


def test_k6_the_report_puts_the_plan_beside_the_package(session: Session) -> None:
    from gpusession.core.money.kept_plan import keep_plan
    from gpusession.core.retrieval.report import render_report

    keep_plan(session, make_plan("0.25,1,1,0.5,0.5"))
    text = render_report(session, charts_note="no charts")
    first = "\n".join(text.splitlines()[:14])  # the title, a blank line, then at most 10 lines
    assert "the 7-day package covers it; the 3-day one does not" in " ".join(first.split())
    assert "(the plan kept with the package of session visuals-test-01)" in text
