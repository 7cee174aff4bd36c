"""What the CLI and the report show of hand-measured and hand-edited values: durations and
byte counts never shown as zero (H-22)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.results import ResultRow
from gpusession.core.session import Session


def _tiny_row_session(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> Session:
    code, _, err = cli(capsys, sessions_root, "new", "base", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    assert code == 0, err
    s = Session.open(sessions_root, "base")
    s.results.append(ResultRow(
        experiment_id="e1", variant_id="tiny", phase="warm", run_index=1, device="cuda:0",
        elapsed_seconds=1.2e-7, baseline_allocated_bytes=0, baseline_reserved_bytes=0,
        peak_allocated_bytes=1, peak_reserved_bytes=1,
    ))
    s.results.append(ResultRow(experiment_id="e1", variant_id="lost", phase="warm", run_index=1))
    return s


def test_h22_show_and_report_never_show_a_tiny_measured_value_as_zero(
    capsys: pytest.CaptureFixture[str], sessions_root: Path
) -> None:
    s = _tiny_row_session(sessions_root, capsys)
    assert "0.00000012" in (s.folder / "resultats-bruts.csv").read_text()  # full precision kept
    code, out, err = cli(capsys, sessions_root, "show", "base")
    assert code == 0, err
    assert "120 ns" in out and "120–120 ns" in out
    assert "0.000000" not in out
    code, _, err = cli(capsys, sessions_root, "report", "base")
    assert code == 0, err
    report = (s.folder / "report.md").read_text(encoding="utf-8")
    assert "| 120 ns | 120–120 ns |" in report
    assert "| 1 B | 1 B |" in report
    import re

    assert not re.findall(r".{60}0\.000000.{20}", report)
