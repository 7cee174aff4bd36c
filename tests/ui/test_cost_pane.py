"""The Cost pane (key 6, ``ui/panes/cost.py``): recomputed on edit, distinct accepted corpora, saved package.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input, OptionList
from ui.pilot import MakeApp, background_started, settle, text_of, workers_done

from gpusession.core.records.results import ResultRow


@pytest.mark.slow
async def test_k3_cost_recomputes_on_edit_and_needs_accepted_count(
    session: Any, make_app: MakeApp
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        out = text_of(app, "#cost-report")
        assert "55.00 USD" in out and "not shown" in out  # K3: no accepted count → package only
        lots = app.screen.query_one("#cost-lots", Input)
        lots.value = "2"
        await pilot.pause()
        assert "= 110.00 USD" in text_of(app, "#cost-report")
        app.screen.query_one("#cost-plan", Input).value = "0.25,1,1,0.5,0.5"
        await pilot.pause()
        assert "3.25" in text_of(app, "#cost-report")


@pytest.mark.slow
async def test_k4_cost_per_accepted_uses_distinct_corpora(session: Any, make_app: MakeApp) -> None:
    for i in range(5):  # five repetitions of one corpus = one deliverable
        session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                         run_index=i + 1, corpus_revision="c1", corpus_accepted=True))

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        out = text_of(app, "#cost-report")
        assert "Accepted deliverables: 1 distinct" in out
        assert "55.00 USD" in out


async def test_cost_save_as_package_writes_session_and_header(
    session: Any, make_app: MakeApp
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        app.screen.query_one("#cost-lots", Input).value = "2"
        days = app.screen.query_one("#cost-days", OptionList)
        days.highlighted = 0  # 3 days
        await pilot.pause()
        assert "3 days × 2 lot(s)" in text_of(app, "#cost-report")
        app.screen.pane("cost").save_package()
        await pilot.pause()
        pkg = type(session).open(session.folder.parent, session.name).package
        assert (pkg.lots, pkg.days) == (2, 3)
        assert "3-day package" in text_of(app, "#session-header")


async def test_k4_one_accepted_corpus_is_singular(session: Any, make_app: MakeApp) -> None:
    for i in range(3):  # three repetitions of one corpus: one deliverable
        session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                         run_index=i + 1, corpus_revision="c1", corpus_accepted=True))

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await pilot.pause()
        cost = text_of(app, "#cost-report")
        # the source in cost NAME's words (A1): one rendering of the record
        assert "1 distinct (distinct accepted corpora in session visuals-test-01)" in cost, cost
        await pilot.press("4")
        await pilot.pause()
        status = text_of(app, "#val-status")
        assert "3 runs; 1 accepted corpus (distinct accepted corpora)" in status, status
        assert "1 accepted corpora" not in (cost + status) and "accepted corpora of" not in cost


async def test_cost_pane_warns_when_an_experiment_leaves_gpus_of_the_lot_idle(
    new_session: Any, make_app: MakeApp
) -> None:
    from datetime import datetime, timezone

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.folder.package import Package

    s = new_session("b200", package=Package("B200", 1, 7, datetime(2026, 11, 29, 14, tzinfo=timezone.utc)))
    define_experiment(s, Experiment(id="one-gpu", workload="synthetic-mlp", values=(4,)))
    define_experiment(s, Experiment(id="two-gpus", workload="synthetic-mlp", values=(4,), gpus=2))
    app = make_app(session=s)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await pilot.pause()
        out = text_of(app, "#cost-report")
        assert "experiment one-gpu uses 1 of 2 GPUs of this B200 lot" in out, out
        assert "two-gpus" not in out


async def test_a5_the_idle_gpu_warnings_are_read_off_the_event_loop_never_per_keystroke(
    new_session: Any, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each experiment against the order and the rates (O(experiments) reads): in a worker
    on the pane's first show, none when a field is edited; the warning is still said."""
    import threading
    from datetime import datetime, timezone

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.folder.package import Package
    from gpusession.core.retrieval import evidence

    s = new_session("b200", package=Package("B200", 1, 7, datetime(2026, 11, 29, 14, tzinfo=timezone.utc)))
    define_experiment(s, Experiment(id="one-gpu", workload="synthetic-mlp", values=(4,)))
    on_loop: list[bool] = []
    real = evidence.idle_gpu_warnings

    def counted(*a: Any, **kw: Any) -> Any:
        on_loop.append(threading.current_thread() is threading.main_thread())
        return real(*a, **kw)

    monkeypatch.setattr(evidence, "idle_gpu_warnings", counted)
    app = make_app(session=s)
    async with app.run_test(size=(120, 40)) as pilot:
        await background_started(app)
        await workers_done(pilot, app)
        await pilot.press("6")
        await workers_done(pilot, app)
        assert on_loop == [False]
        app.screen.query_one("#cost-lots", Input).value = "2"  # recomputed as typed
        await pilot.pause()
        await workers_done(pilot, app)
        assert on_loop == [False]  # no read for a keystroke
        assert "experiment one-gpu uses 1 of 2 GPUs of this B200 lot" in text_of(app, "#cost-report")


async def test_cost_save_button_label_whole_at_80x24(session: Any, make_app: MakeApp) -> None:
    """The "Save as package" button is painted whole at 80×24, its label not cut."""
    from textual.geometry import Region
    from ui.pilot import SIZE, shown_on_screen

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await pilot.pause()
        button = app.screen.query_one("#cost-save")
        assert shown_on_screen(app, button)
        form = app.screen.query_one("#cost-form2")
        assert button.region.right <= form.content_region.right
        label = "".join(s.text for s in button.render_lines(Region(0, 1, button.size.width, 1)))
        assert "Save as package" in label


async def test_cost_hints_are_the_panes_not_cli_options(session: Any, make_app: MakeApp) -> None:
    """No accepted count yet: the pane says how it gets one here, not ``--accepted-results``."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        out = text_of(app, "#cost-report")
        assert "not shown" in out
        assert "--accepted-results" not in out and "gpusession" not in out
        assert "key 4" in out


async def test_d6_cost_pane_lists_the_other_sessions_of_the_folder_in_compares_terms(
        session: Any, make_app: MakeApp, sessions_root: Any) -> None:
    from gpusession.testing import make_session

    def measure(s: Any, revision: str) -> None:
        for i in range(3):
            s.results.append(ResultRow(
                experiment_id="batch-sweep", variant_id="batch-4", phase="warm", run_index=i + 1,
                batch=4, corpus_revision=revision, ids_match=True, format_valid=True,
                quality_metric="macro_f1", quality_value=0.95, corpus_accepted=True,
                elapsed_seconds=0.02 + 0.001 * i))

    measure(session, "c1")
    measure(make_session(sessions_root, "other-card"), "c2")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        out = text_of(app, "#cost-report")
        assert "Other sessions of this folder, in the same terms:" in out
        assert "other-card" in out and "time per accepted deliverable" in out
        assert "corpus revision differs" in out and "Not ranked" in out
        assert "--allow-different" not in out and "gpusession" not in out  # the pane's words


async def test_the_lots_field_keeps_what_was_typed_and_refuses_it_in_words(
        session: Any, make_app: MakeApp) -> None:
    """A plan typed in the lots field is not silently cut to its digits ("5"): it is refused."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        lots = app.screen.query_one("#cost-lots", Input)
        lots.focus()
        lots.value = ""
        await pilot.press(*"0.25,1,1,0.5,0.5")
        await pilot.pause()
        assert lots.value == "0.25,1,1,0.5,0.5"
        assert "lots: expected a whole number ≥ 1, got '0.25,1,1,0.5,0.5'" in text_of(app, "#cost-report")


async def test_the_focused_field_is_seen_without_colour(
        session: Any, make_app: MakeApp, monkeypatch: Any) -> None:
    """NO_COLOR: the focused field's frame differs in shape, not only in colour."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        lots = app.screen.query_one("#cost-lots", Input)
        plan = app.screen.query_one("#cost-plan", Input)
        lots.focus()
        await pilot.pause()
        assert lots.styles.border_top[0] != plan.styles.border_top[0], (lots.styles.border_top, plan.styles.border_top)


async def test_s10_the_cost_pane_says_the_approved_count_in_the_unit(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    from gpusession.core.folder.approvals import decide
    from gpusession.core.folder.unit import set_unit

    set_unit(session, "visual", expected_count=18)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    files = []
    for i in range(18):
        p = out_dir / f"visual-{i + 1:02d}.png"
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
        files.append(p)
    decide(session, files, decision="approved", by="Ana")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        out = text_of(app, "#cost-report")
        assert "55.00 USD ÷ 18 approved visuals = 3.06 USD per visual" in out


@pytest.mark.slow
async def test_k6_the_cost_pane_prices_the_kept_plan_as_cost_name_does(
        session: Any, make_app: MakeApp, sessions_root: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import cli

    from gpusession.core.money.kept_plan import keep_plan, make_plan

    keep_plan(session, make_plan("0.25,1,1,0.5,0.5"))
    code, out, _ = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0
    said = [line for line in out.splitlines() if line.startswith(("Plan: ", "  (the plan kept"))]
    assert len(said) == 2, out
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        assert app.screen.query_one("#cost-plan", Input).value == "0.25,1,1,0.5,0.5"
        pane = text_of(app, "#cost-report").splitlines()
        assert [line for line in pane if line in said] == said  # the CLI's words, in the same order


async def test_k6_save_as_package_keeps_the_plan_typed_as_package_plan_does(
        session: Any, make_app: MakeApp) -> None:
    from gpusession.core.money.kept_plan import session_plan

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        app.screen.query_one("#cost-plan", Input).value = "0.25,1,1,0.5,0.5"
        await pilot.pause()
        app.screen.pane("cost").save_package()
        await pilot.pause()
        reopened = type(session).open(session.folder.parent, session.name)
        kept = session_plan(reopened)
        assert kept is not None and kept.text() == "0.25,1,1,0.5,0.5"
        assert "(the plan kept with the package of session visuals-test-01)" in text_of(app, "#cost-report")


async def test_s9_the_cost_pane_says_a_conflict_to_settle_under_the_cost_line(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    from gpusession.core.folder.approvals import decide
    from gpusession.core.folder.unit import set_unit

    set_unit(session, "visual")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name in ("chart-[01].png", "chart-02.png"):  # a bracket in a name is text, never markup
        (out_dir / name).write_bytes(b"\x89PNG\r\n\x1a\nsame")
    decide(session, [out_dir / "chart-[01].png"], decision="approved", by="Ana")
    decide(session, [out_dir / "chart-02.png"], decision="rejected", by="Bo", text="legend cut")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        lines = text_of(app, "#cost-report").splitlines()
        assert lines[0] == "55.00 USD for the package; 0 approved visuals"  # disputed: not counted
        assert lines[1].startswith("  conflict: the same bytes approved by Ana (chart-[01].png) and rejected "
                                   "by Bo (chart-02.png)"), lines[:3]


def test_k3_a1_the_pane_gives_its_own_count_hint_to_the_report_never_rewrites_its_words() -> None:
    """Without a count the reason says the pane's hint, from the report's typed input, not a replace."""
    from gpusession.core.money.cost import COUNT_HINT, cost_per_accepted
    from gpusession.ui.panes import cost as pane

    assert not hasattr(pane, "pane_words")
    cli = cost_per_accepted(5500, None)
    here = cost_per_accepted(5500, None, count_hint=pane.PANE_COUNT_HINT)
    assert COUNT_HINT in (cli.reason or "") and pane.PANE_COUNT_HINT in (here.reason or "")
    assert "--accepted-results" not in (here.reason or "")
    assert cost_per_accepted(5500, 4, count_hint="x").per_accepted_usd_minor == 1375  # the figure is unchanged


async def test_k7_the_first_tab_in_the_cost_pane_enters_the_gpu_field_then_the_next_ones(
        session: Any, make_app: MakeApp) -> None:
    """The pane's hint says "tab: edit a field": the first Tab lands in the GPU field, not the tab bar."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await settle(pilot, app)
        assert app.focused is not None and app.focused.id == "cost-out"
        await pilot.press("tab")
        assert app.focused is not None and app.focused.id == "cost-gpu"
        await pilot.press("end", "X")
        assert app.screen.query_one("#cost-gpu", Input).value.endswith("X")
        await pilot.press("tab")
        assert app.focused is not None and app.focused.id == "cost-lots"
