"""What the CLI prints names no internal rule id
(``K1``, ``M3``, ``R9``, ``H-12`` …); it says the rule in words.

Docstrings and test names keep the ids (docs/rules.md); this scans only what a person reads:
the output of ``show``, ``cost``, ``order``, ``checklist``, ``report`` and every
``--help`` on a session with runs, validation and an order (``busy_session``). The six
panes of the TUI on the same session: ``tests/ui/test_rule_ids_not_shown_tui.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import cli, ids_in


def _cli(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> str:
    """stdout and stderr of one command (``--help`` exits 0)."""
    _, out, err = cli(capsys, root, *args)
    return out + err


def test_rule_id_pattern_finds_ids_and_not_gpu_names() -> None:
    assert ids_in("full package price (K1); see H-12 and R10") == ["H-12", "K1", "R10"]
    assert ids_in("1× RTX A5000, NVIDIA H100, V100, ORD-1042, c2, GPU-aaaa") == []
    # sources cited by section: a person reads words, not "G§2" or "seed 003 §1"
    assert ids_in("(free space, G§2)") == ["G§2"]
    assert ids_in("Stage 1 (seed 003 §1, seed 000 §1)") == ["seed 000", "seed 003", "§1"]
    assert ids_in("training the demo classifier (fixed seed 0)") == []


def test_rule_id_pattern_finds_the_decision_rules() -> None:
    assert ids_in("stopped at the session limit (D1); derived (D4, D9)") == ["D1", "D4", "D9"]
    assert ids_in("DGX A100, D-Bus, cuda:0, ID D-12, batch 64") == []


def test_cli_output_names_no_rule_id(busy_session: Any, sessions_root: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    name = busy_session.name
    runs = [
        ("show", name),
        ("cost", "--session", name),
        ("cost", "--gpu", "RTX A5000", "--days", "7", "--lots", "1", "--accepted-results", "18",
         "--plan", "0.25,1,1,0.5,0.5"),
        ("cost", "--gpu", "RTX A5000", "--days", "7", "--lots", "1"),
        ("checklist", name),
        ("experiment", name, "list"),
        ("report", name, "--out", str(tmp_path / "report.md")),
        ("manifest", name, "--deliverables", str(busy_session.folder)),  # refused: says why in words
    ]
    found: dict[str, list[str]] = {}
    for args in runs:
        text = _cli(capsys, sessions_root, *args)
        if args[0] == "report":
            text += (tmp_path / "report.md").read_text(encoding="utf-8")
        if ids_in(text):
            found[" ".join(args)] = ids_in(text)
    helps = [(), ("new",), ("list",), ("show",), ("package",), ("demo",), ("experiment",),
             ("experiment", name, "define"), ("run",), ("validate",), ("cost",), ("order",),
             ("checklist",), ("manifest",), ("verify-copy",), ("report",)]
    for words in helps:
        text = _cli(capsys, sessions_root, *words, "--help")
        if ids_in(text):
            found[" ".join(words) + " --help"] = ids_in(text)
    assert not found, f"rule ids in CLI output (say the rule in words): {found}"


def test_order_show_names_no_rule_id(busy_session: Any, sessions_root: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = _cli(capsys, sessions_root, "order", busy_session.name, "show")
    assert ids_in(text) == []
