"""The count behind the cost holds what was validated in the package's period (seed 000 §5; K3).

Moving the package window after the runs changes the count, and the outputs left out are
named with their side of the window; ``status`` (its cached count) follows.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import TEST_NOW, cli

from gpusession.core.folder.session import Session

#: Reads the package window and the cost: run again a year ahead and a month back (A6).
pytestmark = pytest.mark.calendar


def _validated(tmp: Path, capsys: pytest.CaptureFixture[str], root: Path) -> None:
    corpus = tmp / "corpus.csv"
    corpus.write_text("id,label\n" + "".join(f"v{i},{'ab'[i % 2]}\n" for i in range(6)))
    out = tmp / "out.jsonl"
    out.write_text("".join(json.dumps({"id": f"v{i}", "label": "ab"[i % 2]}) + "\n" for i in range(6)))
    assert cli(capsys, root, "new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
               "--start", TEST_NOW.isoformat())[0] == 0
    code, _, err = cli(capsys, root, "validate", "vis", "--threshold", "0.9", "--corpus", str(corpus),
                       "--predictions", str(out), "--classes", "a,b")
    assert code == 0, err


def _count(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int | None, str]:
    code, out, err = cli(capsys, root, "cost", "vis", "--json")
    assert code == 0, err
    doc = json.loads(out)
    text = cli(capsys, root, "cost", "vis")[1]
    return doc["deliverables"]["count"], text


def test_k3_a_corpus_validated_before_the_package_started_is_named_and_not_counted(
        tmp_path: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _validated(tmp_path, capsys, sessions_root)
    n, text = _count(capsys, sessions_root)
    assert n == 1 and "not counted" not in text
    later = (TEST_NOW + timedelta(days=1)).isoformat()
    assert cli(capsys, sessions_root, "package", "vis", "--start", later)[0] == 0
    n, text = _count(capsys, sessions_root)
    assert n == 0, text
    assert "not counted: 1 accepted corpus validated before the package started" in text
    # status's count follows the window (its cache is keyed on it), never the old 1
    code, out, _ = cli(capsys, sessions_root, "status", "vis", "--json")
    assert code == 0 and json.loads(out)["deliverables"]["count"] == 0, out


def test_k3_a_corpus_validated_after_the_package_ended_is_named_and_not_counted(
        tmp_path: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _validated(tmp_path, capsys, sessions_root)
    earlier = (TEST_NOW - timedelta(days=10)).isoformat()
    assert cli(capsys, sessions_root, "package", "vis", "--start", earlier)[0] == 0
    n, text = _count(capsys, sessions_root)
    assert n == 0
    assert "1 accepted corpus validated after the package ended" in text
    # back inside the window: counted again
    assert cli(capsys, sessions_root, "package", "vis", "--start", TEST_NOW.isoformat())[0] == 0
    assert _count(capsys, sessions_root)[0] == 1


def test_k3_a_window_that_holds_the_session_reads_no_run_record(
        tmp_path: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ordinary case costs a stat and the journal's last line, never a scan (A5)."""
    from gpusession.core.money import period

    _validated(tmp_path, capsys, sessions_root)
    scans: list[str] = []
    monkeypatch.setattr(period, "_run_times", lambda s: scans.append(s.name) or {})
    p = period.session_period(Session.open(sessions_root, "vis"))
    assert p.start is not None and not p.scanned and scans == []
