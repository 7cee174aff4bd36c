"""A command workload's rows record "chosen by the command" unless it reports its device (R10).

gpusession does not choose the device of a command (it runs a whole process, and
``--device`` is never passed to it), so its rows and the words about them say who did,
never "device not recorded" and never a defined device as if it were applied.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.experiment.placeholders import COMMAND_DEVICE

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

DEFINE = ["--workload", "command", "--command", "true", "--values", "1", "--runs", "1",
          "--warmup", "0", "--cold-runs", "0"]


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "resultats-bruts.csv", encoding="utf-8", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["phase"] == "warm"]


def test_a_command_workload_without_device_records_chosen_by_the_command(
    capsys: pytest.CaptureFixture[str], sessions_root: Path,
) -> None:
    from gpusession.core.folder.session import Session
    from gpusession.core.retrieval.evidence import on_gpu_evidence

    code, _, err = cli(capsys, sessions_root, "new", "dev", "--gpu", "RTX A5000", "--lots", "1",
                       "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", "dev", "define", "--id", "e", *DEFINE)
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", "dev", "--experiment", "e", "--headless")
    assert code == 0, out + err
    assert "environment: device chosen by the command," in out and "device not recorded" not in out
    rows = _rows(sessions_root / "dev")
    assert rows and all(r["device"] == COMMAND_DEVICE for r in rows), rows
    words = on_gpu_evidence(Session.open(sessions_root, "dev"))
    assert "chosen by the command" in words and "not (only) on the GPU" not in words, words


def test_r10_a_command_workload_defined_with_device_never_records_it_as_applied(
    capsys: pytest.CaptureFixture[str], sessions_root: Path,
) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "dev", "--gpu", "RTX A5000", "--lots", "1",
                       "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", "dev", "define", "--id", "e", *DEFINE,
                       "--device", "cpu")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", "dev", "--experiment", "e", "--headless")
    assert code == 0, out + err
    assert "environment: device chosen by the command," in out
    rows = _rows(sessions_root / "dev")
    assert [r["device"] for r in rows] == [COMMAND_DEVICE], rows  # gpusession never passed cpu
    assert "--device cpu defined, never passed to the command" in rows[0]["notes"], rows[0]["notes"]


def test_the_memory_pane_says_the_command_chose_the_device() -> None:
    from gpusession.ui.panes.memory import allocator_lines

    lines = allocator_lines({"experiment_id": "e", "variant_id": "batch-1", "phase": "warm",
                             "run_index": 1, "device": COMMAND_DEVICE})
    assert any(line.endswith("on a device chosen by the command") for line in lines), lines
    lines = allocator_lines({"experiment_id": "e", "variant_id": "batch-1", "phase": "warm",
                             "run_index": 1, "device": None})
    assert any(line.endswith("on device not recorded") for line in lines), lines
