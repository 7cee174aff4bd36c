"""At home, the copy's count of approved deliverables is the server's (S4, S9, S10).

``pull`` copies the session into ``TO/NAME`` and the approved files into
``TO/NAME-deliverables`` and writes ``copy-home.toml`` into the copy; the copy's
``approvals.toml`` still names the server's folder, and every reader at home checks the
decisions against the pulled copy instead, never a folder of the server's path here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder import approvals as approvals_module
from gpusession.core.folder.copy_home import COPY_HOME_TOML
from gpusession.core.folder.session import Session

pytestmark = [pytest.mark.calendar,
              pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed (apt-get install rsync)")]

APPROVED = [f"chart-{i}.png" for i in (1, 2, 3, 4)]
REJECTED = "chart-5.png"


def _ok(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> str:
    code, out, err = cli(capsys, root, *args)
    assert code == 0, f"{args}: exit {code}\n{out}\n{err}"
    return out


def _json(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> dict[str, object]:
    doc = json.loads(_ok(capsys, root, *args, "--json"))
    assert isinstance(doc, dict)
    return doc


def _figures(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> dict[str, object]:
    """The count and cost per chart as ``cost``, ``show`` and ``status`` say them."""
    cost = _json(capsys, root, "cost", name)
    status = _json(capsys, root, "status", name)["deliverables"]
    assert isinstance(status, dict)
    show = _json(capsys, root, "show", name)
    return {"cost": cost, "status": status, "show": show}


def _server(capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path) -> Path:
    """Five charts on the server, 4 approved and 1 rejected, ``--unit chart``, a manifest; the folder."""
    out = tmp_path / "server-out"
    out.mkdir()
    for i, name in enumerate([*APPROVED, REJECTED], start=1):
        (out / name).write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]) * i)
    root = session.folder.parent
    _ok(capsys, root, "package", session.name, "--unit", "chart")
    _ok(capsys, root, "approve", session.name, *(str(out / n) for n in APPROVED), "--by", "Ana Reviewer")
    _ok(capsys, root, "reject", session.name, str(out / REJECTED), "--by", "Ana Reviewer", "--why", "legend cut")
    _ok(capsys, root, "manifest", session.name)
    return out


def _pull(capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session pulled into ``tmp_path/home`` (another machine's seal key); the sessions root at home."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home-state"))
    home = tmp_path / "home"
    _ok(capsys, session.folder.parent, "pull", str(session.folder), "--to", str(home))
    return home


def test_s10_copy_home_says_the_servers_approved_count_and_cost_per_chart(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _server(capsys, session, tmp_path)
    on_server = _figures(capsys, session.folder.parent, session.name)
    home = _pull(capsys, session, tmp_path, monkeypatch)
    out.rename(tmp_path / "elsewhere")  # at home the server's folder is not there
    assert sorted(p.name for p in (home / f"{session.name}-deliverables").iterdir()) == APPROVED
    at_home = _figures(capsys, home, session.name)
    cost, status = at_home["cost"], at_home["status"]
    assert isinstance(cost, dict) and isinstance(status, dict)
    deliv = cost["deliverables"]
    assert isinstance(deliv, dict)
    assert (deliv["count"], deliv["unit"], deliv["source"]) == (4, "chart", "approved")
    assert deliv["words"] == "4 approved charts"
    server_cost = on_server["cost"]
    assert isinstance(server_cost, dict)
    # the same count and cost per chart as on the server; only the copy home's own verdict differs
    assert {k: v for k, v in cost.items() if k != "answer"} == {k: v for k, v in server_cost.items() if k != "answer"}
    assert ({k: v for k, v in cost["answer"].items() if k not in ("retrieval", "risks")}
            == {k: v for k, v in server_cost["answer"].items() if k not in ("retrieval", "risks")})
    assert cost["answer"]["cost_words"] == "55.00 USD ÷ 4 approved charts = 13.75 USD per chart"
    assert (status["count"], status["words"]) == (4, "4 approved charts")
    show, server_show = at_home["show"], on_server["show"]
    assert isinstance(show, dict) and isinstance(server_show, dict)
    assert show["deliverables"] == server_show["deliverables"] == deliv
    assert show["answer"]["cost_words"] == cost["answer"]["cost_words"]
    _ok(capsys, home, "report", session.name, "--no-charts", "--force")
    report = (home / session.name / "report.md").read_text(encoding="utf-8")
    assert "4 approved charts" in report and "0 approved charts" not in report


def test_s4_a_file_changed_in_the_home_copy_is_said_changed_and_not_counted(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _server(capsys, session, tmp_path)
    home = _pull(capsys, session, tmp_path, monkeypatch)
    with open(home / f"{session.name}-deliverables" / "chart-2.png", "ab") as fh:
        fh.write(b"edited at home")
    deliv = _json(capsys, home, "cost", session.name)["deliverables"]
    assert isinstance(deliv, dict) and (deliv["count"], deliv["words"]) == (3, "3 approved charts")
    listing = _ok(capsys, home, "deliverables", session.name)
    assert "chart-2.png  changed after approval" in listing, listing
    (home / f"{session.name}-deliverables" / "chart-3.png").unlink()
    listing = _ok(capsys, home, "deliverables", session.name)
    assert "chart-3.png  approved by Ana Reviewer" in listing and "no longer there" in listing, listing
    assert _json(capsys, home, "cost", session.name)["deliverables"]["count"] == 2  # type: ignore[index]


def test_s10_the_servers_folder_is_never_walked_at_home_present_or_absent(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _server(capsys, session, tmp_path)
    home = _pull(capsys, session, tmp_path, monkeypatch)
    walked: list[Path] = []
    real = approvals_module.walk_deliverables

    def walk(folder: Path) -> dict[str, Path]:
        walked.append(Path(folder))
        return real(folder)

    monkeypatch.setattr(approvals_module, "walk_deliverables", walk)
    # the server's path exists here with other bytes under the approved names: never read
    for name in APPROVED[:2]:
        (out / name).write_bytes(b"other bytes")
    for gone in (False, True):
        if gone:  # the recorded server folder absent at home: still 4, nothing walked there
            shutil.rmtree(out)
        walked.clear()
        deliv = _json(capsys, home, "cost", session.name)["deliverables"]
        assert isinstance(deliv, dict) and deliv["count"] == 4, deliv
        assert walked and all(w == home / f"{session.name}-deliverables" for w in walked), walked
    doc = (home / session.name / COPY_HOME_TOML).read_text(encoding="utf-8")
    assert f'deliverables_copy = "{session.name}-deliverables"' in doc and str(out) in doc
    assert str(out) in (home / session.name / "approvals.toml").read_text(encoding="utf-8")  # the server's, kept


def test_s10_a_bad_copy_home_file_is_one_line_naming_it(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _server(capsys, session, tmp_path)
    home = _pull(capsys, session, tmp_path, monkeypatch)
    path = home / session.name / COPY_HOME_TOML
    path.write_text('schema = 1\ndeliverables_copy = "../../etc"\n', encoding="utf-8")
    code, out, err = cli(capsys, home, "cost", session.name)
    assert code == 2, out + err
    assert COPY_HOME_TOML in err and "deliverables_copy" in err and len(err.strip().splitlines()) == 1, err
    assert path.read_text(encoding="utf-8") == 'schema = 1\ndeliverables_copy = "../../etc"\n'


def test_s9_a_decision_at_home_is_made_on_the_copy_and_keeps_the_servers_folder(
        capsys: pytest.CaptureFixture[str], session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _server(capsys, session, tmp_path)
    home = _pull(capsys, session, tmp_path, monkeypatch)
    copy = home / f"{session.name}-deliverables"
    _ok(capsys, home, "reject", session.name, str(copy / "chart-4.png"), "--by", "Bo", "--why", "axis unlabelled")
    assert f'deliverables = "{out}"' in (home / session.name / "approvals.toml").read_text(encoding="utf-8")
    deliv = _json(capsys, home, "cost", session.name)["deliverables"]
    assert isinstance(deliv, dict) and (deliv["count"], deliv["words"]) == (3, "3 approved charts")
