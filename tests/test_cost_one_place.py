"""One place per job (A1): a session's cost inputs (package, rates; K1, K7) are assembled
only by :func:`gpusession.core.money.cost.session_cost_inputs`, and the count every cost
divides by is chosen only by :func:`gpusession.core.money.answer.session_answer` (S10),
which the session's one record (:func:`gpusession.core.retrieval.session_facts.session_facts`)
asks: ``gpusession cost --session``, ``compare`` and the report render that record; the
Cost pane asks the answer; the runner's per-row package total
(:mod:`gpusession.bench.run_validation`) reads the inputs alone.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest

# the record and its importers are imported before any spy: one imported under a spy keeps it
import gpusession.commands.cost_cmds
import gpusession.core.retrieval.compare
import gpusession.core.retrieval.report  # noqa: F401
from gpusession.core.money import cost
from gpusession.core.retrieval import session_facts
from gpusession.testing import FIXED_NOW


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    """Replace ``module.name`` by a recording wrapper; returns the callers' files."""
    callers: list[str] = []
    real = getattr(module, name)

    def recording(*args: Any, **kw: Any) -> Any:
        callers.append(Path(inspect.stack()[1].filename).as_posix())
        return real(*args, **kw)

    monkeypatch.setattr(module, name, recording)
    for mod in list(sys.modules.values()):  # and where a caller imported it at its top
        if (getattr(mod, "__name__", "") or "").startswith("gpusession.") and getattr(mod, name, None) is real:
            monkeypatch.setattr(mod, name, recording)
    return callers


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The callers of :func:`session_cost_inputs` (package and rates)."""
    return _spy(monkeypatch, cost, "session_cost_inputs")


@pytest.fixture
def facts_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The callers of :func:`session_facts` (the one record a person is told)."""
    return _spy(monkeypatch, session_facts, "session_facts")


@pytest.fixture
def answer_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The callers of :func:`session_answer` (the one count and divisor)."""
    from gpusession.core.money import answer

    return _spy(monkeypatch, answer, "session_answer")


def _called_from(callers: list[str], suffix: str) -> bool:
    return any(c.endswith(suffix) for c in callers)


def test_a1_cli_cost_session_uses_the_session_answer(answer_spy: list[str], facts_spy: list[str],
                                                     measured_session: Any, sessions_root: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.cli import main

    assert main(["--sessions-dir", str(sessions_root), "cost", "--session", measured_session.name]) == 0
    assert _called_from(facts_spy, "gpusession/commands/cost_cmds.py"), facts_spy
    assert _called_from(answer_spy, "gpusession/core/retrieval/session_facts.py"), answer_spy
    assert "Accepted deliverables:" in capsys.readouterr().out


def test_a1_cost_pane_renders_the_session_facts(answer_spy: list[str], facts_spy: list[str],
                                               measured_session: Any) -> None:
    from gpusession.ui.panes.cost import load_facts

    answer = load_facts(measured_session).answer
    assert answer.problem is None and answer.inputs is not None and answer.accepted == 1
    assert _called_from(facts_spy, "gpusession/ui/panes/cost.py"), facts_spy
    assert _called_from(answer_spy, "gpusession/core/retrieval/session_facts.py"), answer_spy


def test_a1_compare_uses_the_session_answer(answer_spy: list[str], facts_spy: list[str],
                                            measured_session: Any) -> None:
    from gpusession.core.retrieval.compare import session_figures

    figures = session_figures(measured_session)
    assert figures.accepted == 1 and figures.cost_per_accepted_usd_minor == 5500
    assert _called_from(facts_spy, "gpusession/core/retrieval/compare.py"), facts_spy
    assert _called_from(answer_spy, "gpusession/core/retrieval/session_facts.py"), answer_spy


def test_a1_the_answer_is_made_by_one_formula_and_one_count_chooser() -> None:
    """No front end divides by a count of its own: one division, one choice of the count."""
    src = Path(cost.__file__).resolve().parents[2]
    dividers = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py")
                      if "round_half_up_cents(Decimal(" in p.read_text(encoding="utf-8"))
    assert dividers == ["core/money/cost.py"], dividers
    choosers = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py")
                      if "accepted_measured" in p.read_text(encoding="utf-8"))
    assert choosers == ["core/money/cost.py"], choosers


def test_k1_run_validation_package_total_uses_session_cost_inputs(spy: list[str], measured_session: Any) -> None:
    from gpusession.bench.run_validation import package_total_minor

    assert package_total_minor(measured_session) == 5500  # RTX A5000, 7 days, 1 lot: 55.00 USD
    assert _called_from(spy, "gpusession/bench/run_validation.py"), spy


def test_a1_report_uses_the_session_answer(answer_spy: list[str], facts_spy: list[str],
                                           measured_session: Any) -> None:
    from gpusession.core.retrieval.report import render_report

    text = render_report(measured_session, now=FIXED_NOW)
    words = " ".join(text.split())
    assert "Cost per accepted deliverable" in words and "distinct corpus accepted" in words
    assert _called_from(facts_spy, "gpusession/core/retrieval/report.py"), facts_spy
    assert _called_from(answer_spy, "gpusession/core/retrieval/session_facts.py"), answer_spy


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
