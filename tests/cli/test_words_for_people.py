"""Words for people (issue 10, item 11): what the CLI prints and the TUI shows names no
internal rule id (``K1``, ``M3``, ``R9``, ``H-12`` …); it says the rule in words.

Docstrings and test names keep the ids (rules.md); this scans only what a person reads:
the output of ``show``, ``cost``, ``order``, ``checklist``, ``report`` and every
``--help`` on a session with runs, validation and an order, and the rendered text of
each of the six panes (keys 1–6) on the same session.
"""

from __future__ import annotations

import asyncio
import re
import threading
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, OptionList, Static

from gpusession.cli import main
from gpusession.testing import (
    FIXED_NOW,
    FakeClock,
    FakeNvml,
    FakeRunner,
    fixed_host_memory,
    make_session,
)
from gpusession.ui.app import build_app

#: The ids of rules.md (V1–V8, R1–R10, M1–M5, C1–C5, K1–K7, S1–S7) and H-01…H-22. GPU
#: names (A5000, H100, V100) do not match: a letter then one or two digits, alone.
RULE_ID = re.compile(r"(?<![\w-])(?:[VRMCKS]\d{1,2}|H-\d{2})(?![\w-])")


def ids_in(text: str) -> list[str]:
    return sorted({m.group(0) for m in RULE_ID.finditer(text)})


def test_rule_id_pattern_finds_ids_and_not_gpu_names() -> None:
    assert ids_in("full package price (K1); see H-12 and R10") == ["H-12", "K1", "R10"]
    assert ids_in("1× RTX A5000, NVIDIA H100, V100, ORD-1042, c2, GPU-aaaa") == []


@pytest.fixture
def busy_session(sessions_root: Path) -> Any:
    """Runs (validated, some accepted), an order with a payment order and an event."""
    from gpusession.core import order

    s = make_session(sessions_root, runs=3)
    FakeRunner(s, "batch-sweep", lambda _e: None, threading.Event()).run()
    order.set_order(s, number="ORD-1042", gpu_model="RTX A5000", lots=1, days=7, at=FIXED_NOW)
    order.new_payment_order(s, asset="USDT", network="TRC20", amount="55.00",
                            destination="TXyz1234", expires_at=FIXED_NOW + timedelta(minutes=45),
                            now=FIXED_NOW)
    order.record_event(s, "payment-sent", source="you", note="clicked I have paid",
                       at=FIXED_NOW + timedelta(minutes=5))
    return s


def _cli(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> str:
    try:
        main(["--sessions-dir", str(root), *args])
    except SystemExit:  # --help exits 0
        pass
    out = capsys.readouterr()
    return out.out + out.err


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


def _pane_text(pane: Any) -> str:
    parts: list[str] = []
    for w in [pane, *pane.query("*")]:
        if isinstance(w, Static):
            parts.append(str(w.render()))
        elif isinstance(w, OptionList):
            parts += [str(o.prompt) for o in w.options]
        elif isinstance(w, DataTable):
            parts += [str(c.label) for c in w.columns.values()]
            parts += [str(cell) for key in w.rows for cell in w.get_row(key)]
    return "\n".join(parts)


def test_tui_panes_show_no_rule_id(busy_session: Any) -> None:
    found = asyncio.run(_tui_ids(busy_session))
    found.pop("order", None)  # checked below
    assert not found, f"rule ids on screen (say the rule in words): {found}"


def test_tui_order_pane_shows_no_rule_id(busy_session: Any) -> None:
    assert asyncio.run(_tui_ids(busy_session)).get("order") is None


async def _tui_ids(busy_session: Any) -> dict[str, list[str]]:
    app = build_app(busy_session, clock=FakeClock(FIXED_NOW), nvml=FakeNvml(),
                    host_memory=fixed_host_memory, runner_factory=FakeRunner.factory(),
                    poll_s=0, tz=timezone.utc)
    found: dict[str, list[str]] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        for key, tab in enumerate(("checklist", "run", "memory", "validation", "order", "cost"), 1):
            await pilot.press(str(key))
            await pilot.pause(0.1)
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            text = _pane_text(app.screen.pane(tab)) + "\n" + str(
                app.screen.query_one("#session-header", Static).render())
            if ids_in(text):
                found[tab] = ids_in(text)
    return found
