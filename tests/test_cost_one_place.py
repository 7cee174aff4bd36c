"""One place per job: a session's cost inputs (package, rates,
distinct accepted corpora; K1, K3, K4, K7) are assembled only by
:func:`gpusession.core.money.cost.session_cost_inputs`, and its four callers go through it:
``gpusession cost --session``, the Cost pane, the runner's per-row package total
(:mod:`gpusession.bench.run_validation`) and the report.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest

from gpusession.core.money import cost
from gpusession.testing import FIXED_NOW


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the core function by a recording wrapper; returns the callers' files."""
    callers: list[str] = []
    real = cost.session_cost_inputs

    def recording(*args: Any, **kw: Any) -> cost.SessionCostInputs:
        callers.append(Path(inspect.stack()[1].filename).as_posix())
        return real(*args, **kw)

    monkeypatch.setattr(cost, "session_cost_inputs", recording)
    for module in list(sys.modules.values()):  # and where a caller imported it at its top
        if (getattr(module, "__name__", "") or "").startswith("gpusession.") \
                and getattr(module, "session_cost_inputs", None) is real:
            monkeypatch.setattr(module, "session_cost_inputs", recording)
    return callers


def _called_from(callers: list[str], suffix: str) -> bool:
    return any(c.endswith(suffix) for c in callers)


def test_k4_cli_cost_session_uses_session_cost_inputs(spy: list[str], measured_session: Any,
                                                      sessions_root: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.cli import main

    assert main(["--sessions-dir", str(sessions_root), "cost", "--session", measured_session.name]) == 0
    assert _called_from(spy, "gpusession/commands/cost_cmds.py"), spy
    assert "Accepted deliverables:" in capsys.readouterr().out


def test_k4_cost_pane_uses_session_cost_inputs(spy: list[str], measured_session: Any) -> None:
    from gpusession.ui.panes.cost import load_inputs

    inputs, problem = load_inputs(measured_session)
    assert problem is None and inputs is not None
    assert _called_from(spy, "gpusession/ui/panes/cost.py"), spy


def test_k1_run_validation_package_total_uses_session_cost_inputs(spy: list[str], measured_session: Any) -> None:
    from gpusession.bench.run_validation import package_total_minor

    assert package_total_minor(measured_session) == 5500  # RTX A5000, 7 days, 1 lot: 55.00 USD
    assert _called_from(spy, "gpusession/bench/run_validation.py"), spy


def test_k4_report_uses_session_cost_inputs(spy: list[str], measured_session: Any) -> None:
    from gpusession.core.retrieval.report import render_report

    text = render_report(measured_session, now=FIXED_NOW)
    words = " ".join(text.split())
    assert "Cost per accepted deliverable" in words and "distinct corpus accepted" in words
    assert _called_from(spy, "gpusession/core/retrieval/report.py"), spy


def test_k4_session_cost_inputs_counts_distinct_accepted_corpora(measured_session: Any) -> None:
    inputs = cost.session_cost_inputs(measured_session)
    frame = measured_session.results.read()
    revisions = set(frame.filter(frame["corpus_accepted"].fill_null(False))["corpus_revision"].to_list())
    assert inputs.accepted_revisions == frozenset(r for r in revisions if r is not None)
    assert inputs.accepted == len(inputs.accepted_revisions)
    assert inputs.validated_runs == frame["corpus_accepted"].drop_nulls().len()
    total = inputs.package_total()
    assert total is not None and total.total_usd_minor == 5500
    assert cost.session_cost_inputs(measured_session, count_accepted=False).accepted is None
