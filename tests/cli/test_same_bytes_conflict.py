"""Approvals of the same bytes (S9, S10): a file byte-identical to one already approved is
said at once ("same bytes as chart-01.png: counted once"), and the same bytes approved by
one person and rejected by another are a conflict for a person to settle, said by
``deliverables``, ``cost`` and their ``--json`` as facts (the count stays one figure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.test_json_contract import _valid
from helpers import cli

from gpusession.core.folder.session import Session

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

PNG = b"\x89PNG\r\n\x1a\n"


def _charts(folder: Path) -> Path:
    """chart-01..03 distinct, chart-04 the bytes of chart-01, chart-05 the bytes of chart-02."""
    folder.mkdir()
    for i in (1, 2, 3):
        (folder / f"chart-0{i}.png").write_bytes(PNG + bytes([i]) * 8)
    (folder / "chart-04.png").write_bytes((folder / "chart-01.png").read_bytes())
    (folder / "chart-05.png").write_bytes((folder / "chart-02.png").read_bytes())
    return folder


def _approve(capsys: pytest.CaptureFixture[str], root: Path, s: Session, *paths: Path, by: str = "Ana") -> str:
    code, out, err = cli(capsys, root, "approve", s.name, *map(str, paths), "--by", by)
    assert code == 0, err
    return out


def test_s10_approving_bytes_already_approved_says_counted_once(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = _charts(tmp_path / "out")
    assert cli(capsys, sessions_root, "package", session.name, "--unit", "visual")[0] == 0
    first = _approve(capsys, sessions_root, session, out_dir / "chart-01.png", out_dir / "chart-02.png")
    assert "same bytes" not in first
    out = _approve(capsys, sessions_root, session, out_dir / "chart-04.png")
    line = next(ln for ln in out.splitlines() if ln.startswith("approved chart-04.png"))
    assert line.endswith("by Ana; same bytes as chart-01.png: counted once"), out
    assert "2 approved visuals" in out  # counted once
    code, out, _ = cli(capsys, sessions_root, "deliverables", session.name)
    assert "approved (3):" in out
    assert any(ln.startswith("  chart-04.png  approved by Ana") and
               ln.endswith("; same bytes as chart-01.png: counted once") for ln in out.splitlines()), out
    assert out.splitlines()[-1].startswith("count: 2 approved visuals (") and "1 approved file(s) repeat" in out
    code, out, _ = cli(capsys, sessions_root, "deliverables", session.name, "--json")
    doc = _valid("deliverables", out)
    assert doc["deliverables"]["count"] == 2
    assert [(r["path"], r["same_as"]) for r in doc["deliverables"]["same_bytes"]] == [("chart-04.png", "chart-01.png")]
    files = {f["path"]: f for f in doc["files"]}
    assert files["chart-04.png"]["same_bytes_as"] == "chart-01.png" and files["chart-01.png"]["same_bytes_as"] is None
    assert doc["deliverables"]["conflicts"] == []
    code, out, _ = cli(capsys, sessions_root, "cost", session.name)
    assert "  chart-04.png: same bytes as chart-01.png: counted once" in out.splitlines(), out


def test_s9_the_same_bytes_approved_and_rejected_are_a_conflict_to_settle(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = _charts(tmp_path / "out")
    assert cli(capsys, sessions_root, "package", session.name, "--unit", "visual")[0] == 0
    _approve(capsys, sessions_root, session, out_dir / "chart-02.png", out_dir / "chart-03.png")
    code, out, err = cli(capsys, sessions_root, "reject", session.name, str(out_dir / "chart-05.png"),
                         "--by", "Bo", "--why", "legend cut")
    assert code == 0, err
    said = ("conflict: the same bytes approved by Ana (chart-02.png) and rejected by Bo (chart-05.png); "
            "settle it (approve or reject them all): not counted until then")
    assert said in out.splitlines(), out
    code, out, _ = cli(capsys, sessions_root, "deliverables", session.name)
    assert said in out.splitlines() and "chart-05.png  rejected by Bo" in out, out
    assert any(ln.startswith("  chart-02.png  approved by Ana") and ln.endswith("; in conflict (below)")
               for ln in out.splitlines()), out
    code, out, _ = cli(capsys, sessions_root, "cost", session.name)
    # disputed bytes are not counted until settled: chart-03 alone (one figure)
    assert out.splitlines()[0] == "55.00 USD ÷ 1 approved visual = 55.00 USD per visual"
    assert f"  {said}" in out.splitlines(), out
    code, out, _ = cli(capsys, sessions_root, "cost", session.name, "--json")
    conflict = json.loads(out)["deliverables"]["conflicts"]
    assert conflict == [{"sha256": conflict[0]["sha256"], "approved": [{"path": "chart-02.png", "by": "Ana"}],
                         "rejected": [{"path": "chart-05.png", "by": "Bo"}]}]
    code, out, _ = cli(capsys, sessions_root, "deliverables", session.name, "--json")
    files = {f["path"]: f for f in _valid("deliverables", out)["files"]}
    assert files["chart-02.png"]["conflict"] and files["chart-05.png"]["conflict"]
    assert not files["chart-03.png"]["conflict"]
    # settled: chart-05 approved too, the conflict is gone and the bytes count once again
    out = _approve(capsys, sessions_root, session, out_dir / "chart-05.png", by="Bo")
    assert "same bytes as chart-02.png: counted once" in out and "conflict" not in out
    code, out, _ = cli(capsys, sessions_root, "deliverables", session.name, "--json")
    assert json.loads(out)["deliverables"]["conflicts"] == [] and json.loads(out)["deliverables"]["count"] == 2


def test_s9_the_reports_risks_name_the_files_a_person_rejected(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A charts session has no timed variant: its risks name the rejected files, never 'no variant rejected'."""
    out_dir = _charts(tmp_path / "out")
    assert cli(capsys, sessions_root, "package", session.name, "--unit", "visual")[0] == 0
    _approve(capsys, sessions_root, session, out_dir / "chart-01.png", out_dir / "chart-02.png")
    code, _, err = cli(capsys, sessions_root, "reject", session.name, str(out_dir / "chart-03.png"),
                       "--by", "Bo", "--why", "legend cut")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "report", session.name, "--no-charts")
    assert code == 0, err
    risks = " ".join(ln for ln in out.splitlines() if "Risks:" in ln or ln.startswith("  "))
    assert "1 file REJECTED by a person (chart-03.png)" in " ".join(risks.split()), out
    assert "no variant rejected" not in out
