"""The Run pane (key 2, ``ui/panes/run.py``): runs with a fake runner, cancel at a boundary,
keys answered during a run, the experiment forms, the summary and its bars.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Input, Static, TabbedContent
from ui.pilot import SIZE, MakeApp, glyphs, settle, shown_on_screen, unique

from gpusession.testing import FakeRunner
from gpusession.ui.panes.run import RunPane


def _with_runs(session: Any) -> Any:
    """The session after one earlier run (the run pane opens on its summary view)."""
    import threading

    FakeRunner(session, "batch-sweep", lambda _e: None, threading.Event()).run()
    return session


def _focus_in_visible_part_of(app: Any, pane: Any) -> bool:
    """The focused widget lies inside ``pane`` and it and its ancestors are displayed."""
    node = app.focused
    if node is None:
        return False
    inside = False
    while node is not None and node is not app.screen:
        if not node.display:
            return False
        inside = inside or node is pane
        node = node.parent
    return inside


@pytest.mark.slow
async def test_h12_r_then_c_cancels_at_boundary_and_poller_runs(
    session: Any, make_app: MakeApp
) -> None:
    """``r`` then ``c`` directly, as a person does (no pane switch between them)."""
    _with_runs(session)
    seen: list[Any] = []
    made: list[FakeRunner] = []

    def factory(s: Any, exp_id: str, on_event: Any, cancel: Any) -> FakeRunner:
        r = FakeRunner(s, exp_id, on_event, cancel, step_s=0.25)
        made.append(r)
        return r

    app = make_app(runner_factory=factory, poll_s=0.1)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await pilot.pause(0.1)
        await pilot.press("3")  # panes are built when first shown: the poller starts here
        await pilot.press("2")
        await pilot.pause(0.1)
        run_pane = app.screen.pane("run")
        mem = app.screen.pane("memory")
        assert run_pane.view == "run-summary"  # earlier runs: opens on the summary
        await pilot.press("r")
        await pilot.pause(0.05)
        assert run_pane.running
        assert _focus_in_visible_part_of(app, run_pane), f"focus lost after r: {app.focused!r}"
        samples_at_start = mem.samples
        while len(run_pane.rows) < 3:
            await pilot.pause(0.05)
        await pilot.press("c")
        rows_at_cancel = len(run_pane.rows)
        assert run_pane.cancel_event.is_set(), "c did nothing right after r"
        while run_pane.running:
            await pilot.pause(0.05)
        assert mem.samples > samples_at_start + 3, "memory poller stopped during the run"
        assert len(run_pane.rows) <= rows_at_cancel + 1  # stops at the next boundary
        status = str(run_pane.query_one("#run-status", Static).render())
        assert "cancelled at a run boundary — partial result, marked incomplete" in status

    finished = unique(m for m in seen if isinstance(m, RunPane.RunFinished))
    assert len(finished) == 1 and finished[0].cancelled and finished[0].outcome.completed is False
    assert any(isinstance(m, RunPane.RunRequested) for m in seen)
    landed = unique(m for m in seen if isinstance(m, RunPane.RowLanded))
    assert 3 <= len(landed) < 18
    assert made[0].cancel.is_set()


@pytest.mark.slow
async def test_h12_keys_answered_during_run(session: Any, make_app: MakeApp) -> None:
    app = make_app(runner_factory=FakeRunner.factory(step_s=0.6), poll_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)  # every pane built first: a key then only switches tabs
        await pilot.press("2", "r")
        await pilot.pause(0.05)
        run_pane = app.screen.pane("run")
        assert run_pane.running
        tabs = app.screen.query_one(TabbedContent)
        for key in "3232":  # keys while the run works (18 runs × 0.6 s ≈ 11 s)
            await pilot.press(key)
            assert tabs.active == {"3": "memory", "2": "run"}[key]
            # a blocked event loop would answer only after the whole run: the key is
            # answered while the run still works (a count of states, not a stopwatch: A6)
            assert run_pane.running, "the run ended before the keys were answered"
        await pilot.press("c")
        while run_pane.running:
            await pilot.pause(0.05)


@pytest.mark.slow
async def test_h12_focus_stays_in_run_pane_after_run_and_view_switch(
    session: Any, make_app: MakeApp
) -> None:
    """After a run ends (the view switches to the summary) and after ``s``, the focus
    is on a visible widget of the pane, so a second ``r`` starts the next run."""
    app = make_app(runner_factory=FakeRunner.factory())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        await settle(pilot, app)
        run_pane = app.screen.pane("run")
        assert not run_pane.running and run_pane.view == "run-summary"
        assert _focus_in_visible_part_of(app, run_pane), f"focus lost after the run: {app.focused!r}"
        for _ in range(2):
            await pilot.press("s")
            await pilot.pause()
            assert _focus_in_visible_part_of(app, run_pane), f"focus lost after s: {app.focused!r}"
        await pilot.press("r")  # the second run starts without pressing 1 then 2
        await settle(pilot, app)
        assert len(run_pane.rows) == 18 and run_pane.view == "run-summary"
        assert _focus_in_visible_part_of(app, run_pane)
        keys = {ab.binding.key for ab in app.screen.active_bindings.values() if ab.binding.show}
        assert {"r", "s"} <= keys, keys  # the footer keeps the pane's keys (c while a run goes)


@pytest.mark.slow
async def test_r6_run_shows_rows_then_summary_with_median_and_failures_in_words(
    session: Any, make_app: MakeApp
) -> None:
    app = make_app(runner_factory=FakeRunner.factory())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        await settle(pilot, app)
        run_pane = app.screen.pane("run")
        assert not run_pane.running
        assert run_pane.view == "run-summary"
        table = run_pane.query_one("#run-summary-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [(r[0], r[1], r[2]) for r in rows] == [
            ("batch-1", "cold", "1"), ("batch-1", "warm", "5"),
            ("batch-4", "cold", "1"), ("batch-4", "warm", "5"),
            ("batch-8", "cold", "1"), ("batch-8", "warm", "5"),
        ]
        assert all(r[6] == "accepted" for r in rows) and all(len(r) == 7 for r in rows)  # nothing cut (D5)
        assert all(r[5] == "macro-F1 0.950" for r in rows)  # quality beside the times
        assert rows[1][3] == "103 ms"  # median of 0.101..0.105
        assert rows[1][4] == "101–105 ms"
        live = run_pane.query_one("#run-rows", DataTable)
        assert live.row_count == 18
        assert str(live.get_row_at(0)[5]) == "accepted"
        assert len(run_pane.query(".duration-spark")) == 3
        assert "run finished — complete" in str(run_pane.query_one("#run-status", Static).render())


@pytest.mark.slow
async def test_h12_quit_during_run_first_asks_the_run_to_stop(
    session: Any, make_app: MakeApp
) -> None:
    app = make_app(runner_factory=FakeRunner.factory(step_s=0.2))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        await pilot.pause(0.1)
        run_pane = app.screen.pane("run")
        await pilot.press("q")
        await pilot.pause()
        assert app.return_value is None and run_pane.cancel_event.is_set()
        await pilot.press("q")
        await pilot.pause()
        assert app.return_value == 0  # the second press quits


async def test_r1_define_experiment_in_form_saves_it_before_any_run(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.folder.experiments import load_experiments

    app = make_app()
    async with app.run_test(size=(80, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "d")
        await pilot.pause()
        app.screen.query_one("#field-id", Input).value = "ctx-sweep"
        app.screen.query_one("#field-varied", Input).value = "context"
        app.screen.query_one("#field-values", Input).value = "128, 256"
        app.screen.query_one("#field-runs_per_variant", Input).value = "3"
        app.screen.query_one("#field-gpus", Input).value = "2"
        await pilot.press("ctrl+s")
        await pilot.pause()
        exps = {e.id: e for e in load_experiments(session)}
        assert exps["ctx-sweep"].gpus == 2
        assert exps["ctx-sweep"].varied == "context" and exps["ctx-sweep"].values == (128, 256)
        assert exps["ctx-sweep"].runs_per_variant == 3
        run_pane = app.screen.pane("run")
        assert run_pane.experiment_id == "ctx-sweep"
        assert "ctx-sweep: context = 128, 256; 3 runs" in str(run_pane.query_one("#run-status", Static).render())
        assert "2 GPUs per node" in str(run_pane.query_one("#run-status", Static).render())


async def test_define_form_lists_every_workload_and_defines_a_command_one(
    session: Any, make_app: MakeApp
) -> None:
    """The workload hint names ``command`` too, and the form can define one (its argv)."""
    from textual.widgets import Label

    from gpusession.core.folder.experiments import load_experiments
    from gpusession.ui.panes.run import WORKLOADS

    app = make_app()
    async with app.run_test(size=(80, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "d")
        await pilot.pause()
        labels = " ".join(str(w.render()) for w in app.screen.query(Label))
        for name in ("bbc-news", "synthetic-mlp", "command", "module:factory"):
            assert name in labels, labels
        assert set(WORKLOADS) == {"bbc-news", "synthetic-mlp", "command", "module:factory"}
        app.screen.query_one("#field-id", Input).value = "cmd-sweep"
        app.screen.query_one("#field-workload", Input).value = "command"
        app.screen.query_one("#field-command", Input).value = "python score.py --batch {batch}"
        kept = app.screen.query_one("#field-params", Input).value
        if kept:  # the current experiment's params: the command never receives them (A3)
            await pilot.press("ctrl+s")
            await pilot.pause()
            said = str(app.screen.query_one("#form-error", Static).render())
            assert "the command never receives" in said, said
            app.screen.query_one("#field-params", Input).value = ""
        await pilot.press("ctrl+s")
        await pilot.pause()
        exps = {e.id: e for e in load_experiments(session)}
        assert exps["cmd-sweep"].workload == "command"
        assert exps["cmd-sweep"].params["command"] == ["python", "score.py", "--batch", "{batch}"]


async def test_run_pick_experiment_in_form(session: Any, make_app: MakeApp) -> None:
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    define_experiment(session, Experiment(id="ctx-sweep", workload="bbc-news", varied="context",
                                          values=(128, 256), params={"model_dir": "models"}))

    app = make_app()
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        run_pane = app.screen.pane("run")
        assert run_pane.experiment_id == "ctx-sweep"  # the newest, as `gpusession run` picks it
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("up", "ctrl+s")
        await pilot.pause()
        assert run_pane.experiment_id == "batch-sweep"
        assert "batch = 1, 4, 8" in str(run_pane.query_one("#run-status", Static).render())
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("down", "ctrl+s")
        await pilot.pause()
        assert run_pane.experiment_id == "ctx-sweep"
        assert "context = 128, 256" in str(run_pane.query_one("#run-status", Static).render())


async def test_r1_define_experiment_refused_stays_open_with_the_reason(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.folder.experiments import load_experiments
    from gpusession.ui.modals import FormModal

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "d")
        await pilot.pause()
        app.screen.query_one("#field-id", Input).value = "ctx-sweep"
        app.screen.query_one("#field-runs_per_variant", Input).value = "five"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, FormModal)
        error = str(app.screen.query_one("#form-error", Static).render())
        assert "runs" in error and "whole number" in error and "'five'" in error, error
        assert app.focused is app.screen.query_one("#field-runs_per_variant")
        assert "ctx-sweep" not in {e.id for e in load_experiments(session)}
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert not isinstance(app.screen, FormModal)


@pytest.mark.slow
async def test_h11_define_form_title_buttons_and_keys_visible_at_80x24(
    session: Any, make_app: MakeApp
) -> None:
    from textual.widgets._footer import FooterKey

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "d")
        await pilot.pause(0.2)
        form = app.screen
        for sel in ("#form-title", "#form-save", "#form-cancel", "#field-id"):
            assert shown_on_screen(app, form.query_one(sel)), f"{sel} is off-screen at 80×24"
        keys = {(k.key, k.description) for k in form.query(FooterKey)}
        assert ("ctrl+s", "Save") in keys and ("ctrl+g", "Cancel") in keys, keys
        assert not any(k in {"r", "c", "d"} for k, _ in keys), keys  # not the pane's keys
        for _ in range(len(form.fields) - 1):  # tab down to the last field: it scrolls into view
            await pilot.press("tab")
            await pilot.pause()
            assert shown_on_screen(app, app.focused), f"{app.focused!r} not in view"
            assert shown_on_screen(app, form.query_one("#form-save"))
        assert app.focused is form.query_one(f"#field-{form.fields[-1].name}")


async def test_r6_warm_run_bars_from_zero_so_a_tiny_spread_looks_tiny(
    session: Any, make_app: MakeApp
) -> None:
    """0.101–0.103 s is a 2 % spread: drawn from 0 s it must not go from empty to full."""
    app = make_app(runner_factory=FakeRunner.factory())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        await settle(pilot, app)
        charts = list(app.screen.pane("run").query(".duration-spark"))
        assert len(charts) == 3
        first = glyphs(charts[0]).strip()  # batch-1: 0.101, 0.102, 0.103 s
        assert first and set(first) <= {"▇", "█"}, first
        last = glyphs(charts[2]).strip()  # batch-8: 0.013–0.015 s, on the same 0 s scale
        assert last and "█" not in last, last


async def test_run_idle_progress_bar_is_empty_not_pulsing(session: Any, make_app: MakeApp) -> None:
    from textual.widgets import ProgressBar

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        bar = app.screen.query_one("#run-bar", ProgressBar)
        assert bar.total is not None and bar.percentage == 0  # determinate and empty
        assert "--%" not in str(bar.query_one("PercentageStatus").render())


async def test_run_rows_view_shows_its_last_column_whole_at_80_columns(
    session: Any, make_app: MakeApp
) -> None:
    """The row view at 80×24: the corpus column (the last) is whole, even for a long
    variant name, an unvalidated run and a rejected one (measured, corpus not accepted)."""
    from textual.geometry import Region

    from gpusession.core.records.results import ResultRow

    cases = [(True, 1.5)] * 20 + [(None, 0.25), (False, 0.5)]  # enough rows for a scrollbar
    for i, (accepted, elapsed) in enumerate(cases, start=1):
        session.results.append(ResultRow(
            experiment_id="batch-sweep", variant_id="context-1024", phase="warm", run_index=i,
            device="cpu", elapsed_seconds=elapsed, corpus_accepted=accepted))  # M4: not measured
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        run_pane = app.screen.pane("run")
        run_pane.show_view("run-rows")
        await pilot.pause()
        table = run_pane.query_one("#run-rows", DataTable)
        lines = ["".join(s.text for s in table.render_lines(Region(0, y, table.size.width, 1)))
                 for y in range(table.size.height)]
        assert lines[0].rstrip().endswith("corpus"), lines
        assert any(line.rstrip().endswith("not validated") for line in lines), lines
        assert any(line.rstrip().endswith("rejected") for line in lines), lines
        assert table.virtual_size.width <= table.scrollable_content_region.width


async def test_run_pane_warns_when_gpus_of_the_lot_stay_idle(
    new_session: Any, make_app: MakeApp
) -> None:
    from datetime import datetime, timezone

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.folder.package import Package

    s = new_session("b200", package=Package("B200", 1, 7, datetime(2026, 11, 29, 14, tzinfo=timezone.utc)))
    define_experiment(s, Experiment(id="one-gpu", workload="synthetic-mlp", values=(4,)))
    app = make_app(session=s)
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        status = str(app.screen.pane("run").query_one("#run-status", Static).render())
        assert "uses 1 of 2 GPUs of this B200 lot" in status, status


async def test_run_status_counts_runs_with_plural_rules(sessions_root: Any, make_app: MakeApp) -> None:
    """One measured run per variant is "1 run", not "1 runs"."""
    from gpusession.testing import make_session

    s = make_session(sessions_root, "one-run", runs=1)
    app = make_app(session=s)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        status = str(app.screen.pane("run").query_one("#run-status", Static).render())
        assert "; 1 run, " in status and "1 runs" not in status, status


def _journalled_run(session: Any, stop_after: int | None = None) -> int:
    """A run of ``batch-sweep`` as the runner records it: its rows, and the journal's
    start and end records (cancelled at a run boundary after ``stop_after`` runs)."""
    import threading

    from gpusession.core.events import RowAppended
    from gpusession.core.events.records import (
        ExperimentFinishedRecord,
        ExperimentIncompleteRecord,
        ExperimentStartedRecord,
    )
    from gpusession.core.experiment.plan import schedule
    from gpusession.core.folder.experiments import get_experiment

    runs = schedule(get_experiment(session, "batch-sweep"))
    session.journal(ExperimentStartedRecord(experiment_id="batch-sweep", runs=[r.run_key for r in runs]))
    cancel = threading.Event()

    def on_event(ev: Any) -> None:
        if isinstance(ev, RowAppended) and ev.done == stop_after:
            cancel.set()

    out = FakeRunner(session, "batch-sweep", on_event, cancel).run()
    end = ExperimentFinishedRecord if out.completed else ExperimentIncompleteRecord
    session.journal(end(experiment_id="batch-sweep", runs_done=out.rows_written, runs_scheduled=len(runs),
                        cancelled=out.cancelled))
    return len(runs)


@pytest.mark.slow
async def test_run_pane_says_how_the_last_run_ended_never_idle_at_0_percent(
    session: Any, make_app: MakeApp
) -> None:
    """Opened after runs: the status line says the last run finished (or how it stopped)
    and the overall bar its share done, never "idle" and 0 % above its summary."""
    from textual.widgets import ProgressBar

    def line_and_bar(app: Any) -> tuple[str, bool, float | None, float]:
        pane = app.screen.pane("run")
        bar = pane.query_one("#run-bar", ProgressBar)
        status = str(pane.query_one("#run-status", Static).render()).splitlines()[-1]
        return status, pane.query_one("#run-overall").display, bar.total, bar.progress

    app = make_app()  # nothing ran yet
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        assert line_and_bar(app) == ("not run yet — r: start", True, 100, 0)

    n = _journalled_run(session)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        assert app.screen.pane("run").view == "run-summary"
        assert line_and_bar(app) == (f"last run finished — {n} of {n} runs done; r: run again", True, n, n)

    _journalled_run(session, stop_after=7)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        assert line_and_bar(app) == (
            f"last run was cancelled at a run boundary — 7 of {n} runs done, incomplete; u: resume, r: a new attempt",
            True, n, 7)


async def test_run_pane_runs_recorded_without_journal_record_hide_the_bar(
    session: Any, make_app: MakeApp
) -> None:
    """Rows with no journal record of their invocation (a lost journal): the count of
    runs recorded, and no overall bar (nothing to measure it against)."""
    _with_runs(session)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        pane = app.screen.pane("run")
        status = str(pane.query_one("#run-status", Static).render())
        assert status.endswith("\n18 runs recorded; r: run again") and "idle" not in status, status
        assert not pane.query_one("#run-overall").display


async def test_a_group_waiting_for_other_nodes_says_so_and_how_to_start_them(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.events import WorkerStarted

    words = "group warm: waiting up to 600 s for the other 1 node(s) at 10.0.0.1:29400; on each, run `gpusession agent x --experiment batch-sweep`"

    class WaitingRunner(FakeRunner):
        def run(self) -> Any:
            self.on_event(WorkerStarted(worker="warm", pid=1, waiting_for_nodes=words))
            self.on_event(WorkerStarted(worker="cold", pid=2))  # one node: nothing said
            return super().run()

    app = make_app(runner_factory=WaitingRunner.factory(), poll_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.press("r")
        run_pane = app.screen.pane("run")
        await pilot.pause(0.1)
        while run_pane.running:
            await pilot.pause(0.05)
        said = [(n.title, n.message) for n in app._notifications]
        assert ("waiting for the other nodes", words) in said
        assert sum(1 for _t, m in said if "waiting up to" in m) == 1


async def test_run_pane_opens_on_the_newest_experiment_as_the_cli_runs_it(session: Any, make_app: MakeApp) -> None:
    """``gpusession run NAME`` without --experiment runs the last defined one: the pane shows that one."""
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment, load_experiments

    define_experiment(session, Experiment(id="newest", workload="synthetic-mlp", values=(4,), device="cpu"))
    assert [e.id for e in load_experiments(session)][-1] == "newest"
    app = make_app(runner_factory=FakeRunner.factory())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        assert app.screen.pane("run").experiment_id == "newest"
