"""Any output accepted by a rule in a run (S9, D3), the unit said everywhere (S8), decisions from the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import cli, one_line
from helpers import define_render_rule as _define

from gpusession.core.folder.session import Session

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

def test_s9_define_refuses_an_accept_rule_with_classes(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, exit_code=0, extra=("--classes", "a,b", "--threshold", "0.9"))
    assert code == 2 and "never both" in one_line(err)
    assert "experiments" not in Session.open(sessions_root, session.name).data


def test_s9_define_refuses_a_bad_expected_list_before_storing(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    (session.folder / "expected.txt").write_text("a.png\na.png\n")
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "r", "--workload",
                       "command", "--values", "1", "--command", f"{sys.executable} x.py {{output}}",
                       "--expected-outputs", "expected.txt")
    assert code == 2 and "expected.txt:2:" in one_line(err) and "each name once" in err


@pytest.mark.slow
def test_s9_a_rule_that_exits_1_rejects_with_its_reason_and_stops_the_batch(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, exit_code=1)
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 3, out[-2000:] + err[-2000:]
    frame = session.results.read()
    measured = frame.filter(frame["phase"] != "load")
    assert measured.height == 1  # D3: the first defect stops at the run boundary
    row = measured.row(0, named=True)
    assert row["corpus_accepted"] is False and row["quality_metric"] == "accept-rule"
    assert (row["expected_ids"], row["observed_ids"], row["ids_match"], row["format_valid"]) == (3, 3, True, True)
    assert "accept rule: rejected (text cut at the edge)" in row["notes"]
    assert "rejected by the accept rule: text cut at the edge" in out
    report = next(session.validation_dir.rglob("*.accept.json"))
    assert json.loads(report.read_text())["verdict"] == "rejected"


@pytest.mark.slow
def test_s9_missing_names_are_refused_before_the_rule_runs(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, exit_code=0, count=2)
    assert code == 0, err
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 3
    frame = session.results.read()
    row = frame.filter(frame["phase"] != "load").row(0, named=True)
    assert row["ids_match"] is False and row["corpus_accepted"] is False
    assert "1 missing ('v-3.png')" in row["notes"] and "accept rule not run" in row["notes"]
    assert not (session.folder / "rule-ran").exists()


@pytest.mark.slow
def test_s8_s10_accepted_outputs_count_in_the_unit_and_cost_says_it(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "package", session.name, "--unit", "visual", "--expected-count", "3")
    assert code == 0 and "unit of visuals-test-01: visual (plural visuals), 3 visuals expected" in out, err
    code, out, _ = _define(capsys, sessions_root, session, exit_code=0)
    assert code == 0 and "note: each output is accepted by the names listed in expected.txt, the png format" in out
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    assert ", output accepted" in out and ", corpus accepted" not in out
    code, out, _ = cli(capsys, sessions_root, "cost", session.name)
    # 3 distinct files, whatever the repetitions (5 measured runs wrote the same bytes)
    assert out.splitlines()[0] == "55.00 USD ÷ 3 accepted visuals = 18.33 USD per visual"
    code, out, err = cli(capsys, sessions_root, "package", session.name, "--unit", "figure")
    assert code == 2 and "the unit is fixed once results are counted" in one_line(err)
    code, out, _ = cli(capsys, sessions_root, "cost", session.name, "--json")
    data = json.loads(out)
    assert data["deliverables"]["count"] == 3 and data["deliverables"]["unit"] == "visual"
    assert data["deliverables"]["source"] == "accept-rule"
    # compare says the same line and names the rule as the count's source (a folder: a copy of it)
    code, out, err = cli(capsys, sessions_root, "compare", session.name, str(session.folder))
    assert code == 0, out + err
    assert "3 accepted visuals" in out and "accepted distinct corpora" not in out
    assert ("55.00 USD ÷ 3 accepted visuals = 18.33 USD per visual (count: accepted by the "
            "experiment's rule, distinct files by SHA-256)") in " ".join(out.split())


@pytest.mark.slow
def test_s10_status_tmux_list_and_json_say_shows_count_right_after_a_run(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """Before any cost or approve: the run itself leaves the count every short form reads."""
    assert cli(capsys, sessions_root, "package", session.name, "--unit", "visual")[0] == 0
    assert _define(capsys, sessions_root, session, exit_code=0)[0] == 0
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    _, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert "accepted  3 accepted visuals (accepted by the experiment's rule" in out
    code, out, err = cli(capsys, sessions_root, "status", session.name)
    assert code == 0 and " · 3 accepted visuals · " in out and "corpora" not in out, err
    assert "as last counted" not in out  # the cache describes the files as they are
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--format", "tmux")
    assert " 3 visuals " in out and "acc" not in out and "?" not in out
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--json")
    d = json.loads(out)["deliverables"]
    assert (d["count"], d["source"], d["unit"], d["unit_plural"], d["stale"]) == (3, "accept-rule", "visual",
                                                                                  "visuals", False)
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "json" / "status.schema.json").read_text())
    assert "deliverables" in schema["required"]
    assert set(schema["properties"]["deliverables"]["required"]) <= set(d)
    _, out, _ = cli(capsys, sessions_root, "list")
    row = next(ln for ln in out.splitlines() if ln.startswith(session.name))
    assert row.endswith(" 3 visuals")
    _, out, _ = cli(capsys, sessions_root, "list", "--json")
    listed = next(x for x in json.loads(out)["sessions"] if x["name"] == session.name)
    assert listed["deliverables"]["count"] == 3 and listed["deliverables"]["unit"] == "visual"


def test_s10_a_unit_not_counted_yet_is_said_as_a_question_never_as_corpora(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, sessions_root, "package", session.name, "--unit", "visual")[0] == 0
    code, out, err = cli(capsys, sessions_root, "status", session.name)
    assert code == 0 and " · ? visuals (not counted yet: " in out and "corpora" not in out, err
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--format", "tmux")
    assert " ? visuals " in out and "acc" not in out
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--json")
    d = json.loads(out)["deliverables"]
    assert (d["count"], d["source"], d["unit"], d["unit_plural"], d["short"]) == (None, None, "visual", "visuals",
                                                                                  "? visuals")
    _, out, _ = cli(capsys, sessions_root, "list")
    assert next(ln for ln in out.splitlines() if ln.startswith(session.name)).endswith(" ? visuals")
    cli(capsys, sessions_root, "cost", session.name)  # counts, and keeps the count: nothing measured yet
    _, out, _ = cli(capsys, sessions_root, "status", session.name)
    assert " · no approved visual yet · " in out and "not counted yet" not in out
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--format", "tmux")
    assert " ? visuals " in out and " 0 visuals " not in out  # not measured is never 0


def test_s9_approve_and_reject_from_the_cli(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for i in (1, 2):
        (out_dir / f"v-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
    assert cli(capsys, sessions_root, "package", session.name, "--unit", "visual")[0] == 0
    code, out, err = cli(capsys, sessions_root, "approve", session.name, str(out_dir / "v-1.png"), "--by", "Ana",
                         "--criteria", "readable")
    assert code == 0 and "1 approved visual; 1 still to decide" in out, err
    code, _, err = cli(capsys, sessions_root, "reject", session.name, str(out_dir / "v-2.png"), "--by", "Ana")
    assert code == 2  # --why is required
    code, out, _ = cli(capsys, sessions_root, "reject", session.name, str(out_dir / "v-2.png"), "--by", "Ana",
                       "--why", "blurred")
    assert code == 0
    code, out, _ = cli(capsys, sessions_root, "deliverables", session.name)
    assert "v-1.png  approved by Ana" in out and "v-2.png  rejected by Ana" in out and "(blurred)" in out
    code, out, _ = cli(capsys, sessions_root, "cost", session.name)
    assert out.splitlines()[0] == "55.00 USD ÷ 1 approved visual = 55.00 USD per visual"


def _approved(capsys: pytest.CaptureFixture[str], root: Path, s: Session, folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(1, n + 1):
        p = folder / f"visual-{i:02d}.png"
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]) * 8)
        paths.append(str(p))
    assert cli(capsys, root, "package", s.name, "--unit", "visual", "--expected-count", str(n))[0] == 0
    code, _, err = cli(capsys, root, "approve", s.name, *paths, "--by", "Ana")
    assert code == 0, err


def test_s8_every_count_says_the_unit(sessions_root: Path, session: Session,
                                      capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _approved(capsys, sessions_root, session, tmp_path / "out", 18)
    _, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert "accepted  18 approved visuals (approved by a person" in out
    _, out, _ = cli(capsys, sessions_root, "show", session.name, "--json")
    d = json.loads(out)["deliverables"]
    assert (d["count"], d["unit"], d["source"]) == (18, "visual", "approved")
    _, out, _ = cli(capsys, sessions_root, "status", session.name)
    assert "18 approved visuals" in out
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--format", "tmux")
    assert "18 visuals" in out and "acc" not in out
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--json")
    assert json.loads(out)["deliverables"]["count"] == 18
    _, out, _ = cli(capsys, sessions_root, "list")
    assert "18 visuals" in out
    code, out, err = cli(capsys, sessions_root, "report", session.name)
    assert code == 0, err
    head = (session.folder / "report.md").read_text().splitlines()[:10]
    text = " ".join(head)
    assert "18 approved visuals" in text and "3.06 USD per visual" in text and "approved by a person" in text


def test_s8_status_never_hashes_and_never_says_a_count_the_files_no_longer_give(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _approved(capsys, sessions_root, session, tmp_path / "out", 2)
    with open(tmp_path / "out" / "visual-01.png", "ab") as fh:
        fh.write(b"edited")
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--format", "tmux")
    assert " ? visuals " in out and "2 visuals" not in out  # show says 1 now: never the old 2 (H-47)
    _, out, _ = cli(capsys, sessions_root, "status", session.name)
    assert "? visuals (files changed since the last count: `gpusession cost" in out and "2 approved" not in out
    _, out, _ = cli(capsys, sessions_root, "list")
    assert next(ln for ln in out.splitlines() if ln.startswith(session.name)).endswith(" ? visuals"), out
    _, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert "1 approved visual" in out
    cli(capsys, sessions_root, "cost", session.name)
    _, out, _ = cli(capsys, sessions_root, "status", session.name, "--format", "tmux")
    assert " 1 visual " in out and "?" not in out


def test_s8_compare_names_the_unit_and_refuses_to_rank_two_units(
        sessions_root: Path, new_session: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a = new_session("a-visuals")  # type: ignore[operator]
    b = new_session("b-figures")  # type: ignore[operator]
    _approved(capsys, sessions_root, a, tmp_path / "a", 18)
    b_paths = []
    (tmp_path / "b").mkdir()
    for i in (1, 2):
        p = tmp_path / "b" / f"f-{i}.png"
        p.write_bytes(bytes([i]) * 9)
        b_paths.append(str(p))
    assert cli(capsys, sessions_root, "package", b.name, "--unit", "figure")[0] == 0
    assert cli(capsys, sessions_root, "approve", b.name, *b_paths, "--by", "Bo")[0] == 0
    code, out, err = cli(capsys, sessions_root, "compare", a.name, b.name)
    assert code == 3, out + err
    assert "18 approved visuals" in out and "2 approved figures" in out
    assert "unit of the deliverables" in out


def test_s10_compare_gives_the_cost_line_of_cost_and_names_the_unit_and_the_source(
        sessions_root: Path, new_session: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a = new_session("a-visuals")  # type: ignore[operator]
    b = new_session("b-visuals")  # type: ignore[operator]
    _approved(capsys, sessions_root, a, tmp_path / "a", 18)
    _approved(capsys, sessions_root, b, tmp_path / "b", 16)
    lines = {}
    for s in (a, b):
        code, out, err = cli(capsys, sessions_root, "cost", s.name)
        assert code == 0, err
        lines[s.name] = out.splitlines()[0]
    assert lines[a.name] == "55.00 USD ÷ 18 approved visuals = 3.06 USD per visual"
    code, out, err = cli(capsys, sessions_root, "compare", a.name, b.name)
    assert code == 0, out + err
    table = out.splitlines()[:9]
    row = next(line for line in table if line.startswith("distinct accepted deliverables"))
    assert "18 approved visuals" in row and "16 approved visuals" in row
    assert not any("accepted distinct corpora" in line for line in table)
    said = " ".join(out.split())
    source = "(count: approved by a person, distinct by SHA-256 (approvals.toml))"
    for s in (a, b):  # the line `cost NAME` prints, word for word, with the count's one source
        assert f"{s.name}: {lines[s.name]} {source}" in said, said
    assert "3.44 USD per visual" in lines[b.name]
    code, out, err = cli(capsys, sessions_root, "compare", a.name, b.name, "--json")
    assert code == 0, err
    mine = {d["name"]: d for d in json.loads(out)["sessions"]}
    assert mine[a.name]["per_unit_line"] == lines[a.name]
    assert (mine[a.name]["deliverables"]["count"], mine[a.name]["deliverables"]["unit"],
            mine[a.name]["deliverables"]["source"]) == (18, "visual", "approved")


def test_s9_manifest_lists_the_approved_only_and_says_what_remains(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for i in (1, 2, 3):
        (out_dir / f"v-{i}.png").write_bytes(bytes([i]) * 10)
    assert cli(capsys, sessions_root, "approve", session.name, str(out_dir / "v-1.png"), "--by", "Ana")[0] == 0
    assert cli(capsys, sessions_root, "reject", session.name, str(out_dir / "v-2.png"), "--by", "Ana",
               "--why", "blurred")[0] == 0
    code, out, err = cli(capsys, sessions_root, "manifest", session.name)
    assert code == 0, err
    manifest = (session.folder / "manifest.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in manifest[1:]] == ["v-1.png"]
    assert "still to decide (1, not listed):" in out and "  v-3.png" in out
    assert "not handed over (1):" in out and "v-2.png  rejected by Ana" in out


def test_s8_a_bad_unit_creates_no_session(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "pics", "--unit", "visual; rm")
    assert code == 2 and "short noun" in one_line(err)
    assert not (sessions_root / "pics").exists()
    code, out, _ = cli(capsys, sessions_root, "new", "pics", "--unit", "analysis", "--unit-plural", "analyses")
    assert code == 0 and "unit of pics: analysis (plural analyses)" in out


def test_s9_derive_never_mixes_classes_into_an_accept_rule(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    assert _define(capsys, sessions_root, session, exit_code=0)[0] == 0
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", "r2", "--from",
                       "render", "--set", "classes=a,b")
    assert code == 2 and "never mix" in one_line(err)


def test_s9_experiment_list_says_the_rule_never_a_floor_nobody_chose(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _define(capsys, sessions_root, session, exit_code=0)
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "experiment", session.name, "list")
    assert code == 0, err
    assert "macro-F1" not in out and "≥" not in out, out
    assert "accepted by your rule `" in out and "rule.py {output}" in out
    assert "the names listed in expected.txt" in out and "the png format of every file" in out


def test_s8_new_with_a_unit_suggests_an_accept_rule_not_a_classification(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "vis", "--unit", "visual")
    assert code == 0, err
    hint = " ".join(out.split())
    assert "--accept" in hint and "gpusession approve vis" in hint and "--classes" not in hint
    code, out, _ = cli(capsys, sessions_root, "new", "cls")
    assert "--classes a,b --threshold 0.9" in " ".join(out.split()) and "--accept" not in out


def test_s8_files_approved_in_a_session_without_a_unit_are_deliverables_never_approved_corpora(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The quick start approves files in a classification session (no ``--unit``): the count
    is of approved deliverables in every form, never "approved accepted corpus"."""
    out_dir = tmp_path / "approved"
    out_dir.mkdir()
    (out_dir / "predictions.jsonl").write_text('{"id": "a", "label": "x"}\n')
    assert cli(capsys, sessions_root, "approve", session.name, str(out_dir / "predictions.jsonl"),
               "--by", "Ana")[0] == 0
    outs = [cli(capsys, sessions_root, *args)[1] for args in (
        ["status", session.name], ["status", session.name, "--format", "tmux"], ["show", session.name],
        ["cost", session.name], ["list"])]
    assert all("approved accepted" not in o for o in outs), outs
    assert "1 approved deliverable" in outs[0] and " 1 deliverable " in outs[1], outs[:2]
    assert "1 approved deliverable" in outs[2], outs[2]


def test_s9_a1_an_approved_file_edited_since_is_said_alike_by_cost_status_and_deliverables(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The only approved file changed after its approval: ``cost``, ``status`` and
    ``deliverables`` say ``0 approved visuals`` with the file to approve again, never "yet"."""
    _approved(capsys, sessions_root, session, tmp_path / "out", 1)
    with open(tmp_path / "out" / "visual-01.png", "ab") as fh:
        fh.write(b"edited after its approval")
    code, cost, err = cli(capsys, sessions_root, "cost", session.name)  # counts and keeps the count
    assert code == 0, err
    code, status, err = cli(capsys, sessions_root, "status", session.name)
    assert code == 0, err
    code, listed, err = cli(capsys, sessions_root, "deliverables", session.name)
    assert code == 0, err
    for said in (cost, status, listed):
        assert "0 approved visuals; visual-01.png changed after approval" in said, said
        assert "approve it again" in said and "approved visual yet" not in said, said
