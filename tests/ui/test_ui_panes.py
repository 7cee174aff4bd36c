"""Pilot tests of the TUI (issue 6): keys, saved state, messages posted, words on screen.

Every app is built by the factory the CLI uses (``build_app``) with a fixed clock, a fake
NVML, a fixed host reading and, where a run is involved, a fake runner (no torch).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input, OptionList, Static, TabbedContent

from gpusession.core.checklist import load_checklist
from gpusession.core.results import ResultRow
from gpusession.testing import (
    FIXED_NOW,
    FakeClock,
    FakeNvml,
    FakeRunner,
    fixed_host_memory,
    make_session,
)
from gpusession.ui.app import build_app
from gpusession.ui.panes.checklist import ChecklistPane
from gpusession.ui.panes.memory import MemoryPane
from gpusession.ui.panes.run import RunPane

SIZE = (80, 24)


def app_for(session: Any, **kw: Any) -> Any:
    kw.setdefault("clock", FakeClock(FIXED_NOW))
    kw.setdefault("nvml", FakeNvml())
    kw.setdefault("host_memory", fixed_host_memory)
    kw.setdefault("poll_s", 0)
    kw.setdefault("tz", timezone.utc)
    return build_app(session, **kw)


def text_of(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def unique(messages: Any) -> list[Any]:
    """The message hook sees a bubbling message once per node; keep each once."""
    out: list[Any] = []
    for m in messages:
        if not any(m is o for o in out):
            out.append(m)
    return out


async def settle(pilot: Any, app: Any) -> None:
    """Let workers finish; build the panes not shown yet (they are built on first show)."""
    await pilot.pause(0.05)
    await app.main.build_all_panes()
    await app.workers.wait_for_complete()
    await pilot.pause(0.05)


@pytest.fixture
def session(sessions_root: Path) -> Any:
    return make_session(sessions_root)


# -- screen, header, keys --------------------------------------------------------------
def test_s6_header_shows_name_gpu_window_and_order(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            head = text_of(app, "#session-header")
            assert "session visuals-test-01" in head
            assert "GPU: 1× NVIDIA RTX A5000" in head
            # start 11-27 09:00 + 7 days = 12-04 09:00; now 11-29 12:00 → 4d 21h left
            assert "7-day package ends 12-04 09:00 UTC, 4d 21h 00m left" in head
            assert "order: no order recorded" in head
            app.ctx.clock.advance(86400)
            app.screen.header.refresh_line()
            assert "3d 21h 00m left" in text_of(app, "#session-header")

    asyncio.run(go())


def test_s6_header_at_80_columns_keeps_window_on_one_line_and_every_order_word(session: Any) -> None:
    from gpusession.core import order

    order.set_order(session, number="ORD-1042", gpu_model="RTX A5000", lots=1, days=7, at=FIXED_NOW)
    for state in ("access-received", "deviation-noted"):
        order.record_event(session, state, source="you", note="", at=FIXED_NOW)

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            header = app.screen.query_one("#session-header", Static)
            first, order_line = text_of(app, "#session-header").split("\n")
            width = header.content_size.width
            assert len(first) <= width, f"the first line wraps at 80 columns: {first!r}"
            assert "visuals-test-01" in first and "RTX A5000" in first
            assert "7d pkg ends 12-04 09:00, 4d 21h left" in first
            assert order_line.endswith("access received — deviation noted"), order_line
            needed = header.get_content_height(header.size, app.size, width)
            assert needed <= header.size.height, "the header cuts its last line"

    asyncio.run(go())


def test_footer_keys_of_every_pane_fit_80_columns(session: Any) -> None:
    from textual.widgets._footer import FooterKey

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            for key in "123456":
                await pilot.press(key)
                await pilot.pause(0.1)
                keys = list(app.screen.query(FooterKey))
                palette = [k for k in keys if k.has_class("-command-palette")]
                limit = palette[0].region.x if palette else app.size.width
                shown = [k for k in keys if not k.has_class("-command-palette")]
                assert shown, key
                for k in shown:
                    assert k.region.width > 0 and k.region.right <= limit, (
                        f"pane {key}: footer key {k.key} {k.description!r} is cut at 80 columns")

    asyncio.run(go())


def test_h07_no_nvml_says_why_and_still_shows_host_memory(session: Any) -> None:
    async def go() -> None:
        app = app_for(session, nvml=FakeNvml(fail="NVML Shared Library Not Found"))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("3")
            assert "CPU only" in text_of(app, "#session-header")
            gpu = text_of(app, "#mem-gpu")
            assert "no NVIDIA driver found" in gpu and "Host memory is still shown" in gpu
            assert "Host RAM   used 20.00 GiB of 64.00 GiB" in text_of(app, "#mem-host")
            assert "container limit 48.00 GiB" in text_of(app, "#mem-host")

    asyncio.run(go())


def test_keys_1_to_6_switch_panes_and_focus_them(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            tabs = app.screen.query_one(TabbedContent)
            for key, tab in zip("234561", ("run", "memory", "validation", "order", "cost", "checklist"), strict=True):
                await pilot.press(key)
                await pilot.pause()
                assert tabs.active == tab
                pane = app.screen.pane(tab)
                node = app.focused
                while node is not None and node is not pane:
                    node = node.parent
                assert node is pane, f"focus not inside {tab}"

    asyncio.run(go())


def test_h11_no_escape_binding_anywhere_and_quit_is_the_only_priority(session: Any) -> None:
    from gpusession.ui import modals, screens
    from gpusession.ui.app import GpuSessionApp
    from gpusession.ui.panes import checklist, cost, memory, order, run, validation

    classes = [GpuSessionApp, screens.MainScreen, modals.FormModal, checklist.ChecklistPane,
               run.RunPane, memory.MemoryPane, validation.ValidationPane, order.OrderPane, cost.CostPane]
    for cls in classes:
        for b in cls.__dict__.get("BINDINGS", []):
            assert "escape" not in b.key.split(","), f"{cls.__name__} binds escape"
            assert b.id, f"{cls.__name__} binding {b.key} has no id"
            if b.priority:
                assert b.action == "quit"

    async def go() -> None:  # and at run time, every widget of the main screen
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            nodes = [app, app.screen, *app.screen.walk_children()]
            for node in nodes:
                for key in node._bindings.key_to_bindings:
                    assert key != "escape", f"{node!r} binds escape"

    asyncio.run(go())
    assert GpuSessionApp.ESCAPE_TO_MINIMIZE is False
    assert screens.MainScreen.ESCAPE_TO_MINIMIZE is False


# -- checklist ---------------------------------------------------------------------------
def test_s1_space_toggles_done_saved_at_once_and_message_posted(session: Any) -> None:
    seen: list[Any] = []

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
            await settle(pilot, app)
            first = load_checklist(session)[0]
            assert not first.done
            await pilot.press("space")
            await pilot.pause()
            assert load_checklist(session)[0].done  # on disk already, no save step
            assert "[x] done" in str(app.screen.query_one(OptionList).get_option(first.id).prompt)
            await pilot.press("space")
            await pilot.pause()
            assert not load_checklist(session)[0].done

    asyncio.run(go())
    toggles = unique(m for m in seen if isinstance(m, ChecklistPane.ItemToggled))
    assert [(m.done) for m in toggles] == [True, False]


def test_s1_n_edits_note_in_modal_and_saves(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("down", "n")
            await pilot.pause()
            box = app.screen.query_one("#field-note", Input)
            box.value = ""
            await pilot.press(*"reviewer: Anna, by friday")
            await pilot.press("enter")
            await pilot.pause()
            second = load_checklist(session)[1]
            assert second.note == "reviewer: Anna, by friday"
            assert "note: reviewer: Anna, by friday" in str(
                app.screen.query_one(OptionList).get_option(second.id).prompt
            )

    asyncio.run(go())


# -- run ---------------------------------------------------------------------------------------
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


def test_h12_r_then_c_cancels_at_boundary_and_poller_runs(session: Any) -> None:
    """``r`` then ``c`` directly, as a person does (no pane switch between them)."""
    _with_runs(session)
    seen: list[Any] = []
    made: list[FakeRunner] = []

    def factory(s: Any, exp_id: str, on_event: Any, cancel: Any) -> FakeRunner:
        r = FakeRunner(s, exp_id, on_event, cancel, step_s=0.25)
        made.append(r)
        return r

    async def go() -> None:
        app = app_for(session, runner_factory=factory, poll_s=0.1)
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

    asyncio.run(go())
    finished = unique(m for m in seen if isinstance(m, RunPane.RunFinished))
    assert len(finished) == 1 and finished[0].cancelled and finished[0].outcome.completed is False
    assert any(isinstance(m, RunPane.RunRequested) for m in seen)
    landed = unique(m for m in seen if isinstance(m, RunPane.RowLanded))
    assert 3 <= len(landed) < 18
    assert made[0].cancel.is_set()


def test_h12_keys_answered_during_run(session: Any) -> None:
    async def go() -> None:
        app = app_for(session, runner_factory=FakeRunner.factory(step_s=0.25), poll_s=0.1)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.1)
            await pilot.press("2", "r")
            await pilot.pause(0.05)
            run_pane = app.screen.pane("run")
            assert run_pane.running
            tabs = app.screen.query_one(TabbedContent)
            worst = 0.0
            for key in "3232":  # keys while the run works (18 runs × 0.25 s ≈ 4.5 s)
                t0 = time.perf_counter()
                await pilot.press(key)
                worst = max(worst, time.perf_counter() - t0)
                assert tabs.active == {"3": "memory", "2": "run"}[key]
                assert run_pane.running, "the run ended before the keys were answered"
            # a blocked event loop would answer only after the whole run (≈ 4.5 s);
            # 1.5 s leaves room for a slow, shared 2-core machine
            assert worst < 1.5, f"a key took {worst:.2f} s during the run"
            await pilot.press("c")
            while run_pane.running:
                await pilot.pause(0.05)

    asyncio.run(go())


def test_h12_focus_stays_in_run_pane_after_run_and_view_switch(session: Any) -> None:
    """After a run ends (the view switches to the summary) and after ``s``, the focus
    is on a visible widget of the pane, so a second ``r`` starts the next run."""
    async def go() -> None:
        app = app_for(session, runner_factory=FakeRunner.factory())
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
            assert {"r", "c", "s"} <= keys, keys  # the footer keeps the pane's keys

    asyncio.run(go())


def test_r6_run_shows_rows_then_summary_with_median_and_failures_in_words(session: Any) -> None:
    async def go() -> None:
        app = app_for(session, runner_factory=FakeRunner.factory())
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
            assert all(r[5] == "none" for r in rows)
            assert rows[1][3] == "0.1030"  # median of 0.101..0.105
            assert rows[1][4] == "0.1010–0.1050"
            live = run_pane.query_one("#run-rows", DataTable)
            assert live.row_count == 18
            assert str(live.get_row_at(0)[6]) == "accepted"
            assert len(run_pane.query(".duration-spark")) == 3
            assert "run finished — complete" in str(run_pane.query_one("#run-status", Static).render())

    asyncio.run(go())


# -- memory --------------------------------------------------------------------------------------
def test_m2_m3_h04_allocator_figures_labelled_never_added_never_cache(session: Any) -> None:
    gib = 1024**3
    session.results.append(ResultRow(
        experiment_id="batch-sweep", variant_id="batch-8", phase="warm", run_index=5, device="cuda:0",
        baseline_allocated_bytes=1 * gib, baseline_reserved_bytes=2 * gib,
        peak_allocated_bytes=3 * gib, peak_reserved_bytes=5 * gib, elapsed_seconds=0.1,
    ))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("3")
            alloc = text_of(app, "#mem-alloc")
            gpu = text_of(app, "#mem-gpu")
            assert "PyTorch allocator, this process only" in alloc
            assert "peak allocated     3.00 GiB" in alloc and "peak reserved      5.00 GiB" in alloc
            assert "8.00 GiB" not in alloc  # allocated + reserved is never shown (M2)
            assert "2.00 GiB" in alloc  # baseline reserved, on its own
            assert "cache" not in (alloc + gpu).lower()  # M2
            assert "other processes" in alloc and "outside the" in alloc  # M3
            assert "device total used 3.00 GiB of 24.00 GiB" in gpu  # H-04 / NVML label

    asyncio.run(go())


def test_m4_cpu_run_allocator_not_measured(session: Any) -> None:
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                     run_index=1, device="cpu", elapsed_seconds=0.2))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            assert "not measured" in text_of(app, "#mem-alloc")
            assert "0 B" not in text_of(app, "#mem-alloc")

    asyncio.run(go())


def test_h05_gpus_identified_by_uuid_with_processes(session: Any) -> None:
    from gpusession.testing import FakeGpu

    gpus = [FakeGpu(name="NVIDIA H200", uuid="GPU-aaaa"), FakeGpu(name="NVIDIA H200", uuid="GPU-bbbb", processes=[])]

    async def go() -> None:
        app = app_for(session, nvml=FakeNvml(gpus, as_bytes=True))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            gpu = text_of(app, "#mem-gpu")
            assert "GPU 0 NVIDIA H200 (GPU-aaaa)" in gpu and "GPU 1 NVIDIA H200 (GPU-bbbb)" in gpu
            assert "pid 99999999" in gpu and "no compute process seen by NVML" in gpu
            assert "NVIDIA driver 535.104.05" in gpu  # bytes from old bindings (H-06)
            assert "GPU: 2× NVIDIA H200" in text_of(app, "#session-header")

    asyncio.run(go())


def test_memory_poller_samples_on_its_own_timer(session: Any) -> None:
    async def go() -> None:
        app = app_for(session, poll_s=0.05)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")  # the pane (and its poller) is built when first shown
            await pilot.pause(0.6)
            mem = app.screen.query_one(MemoryPane)
            assert mem.samples >= 4
            assert len(mem._host_hist) == mem.samples

    asyncio.run(go())


# -- validation --------------------------------------------------------------------------------
def test_v1_validation_pane_states_in_words_and_distinct_corpora(session: Any) -> None:
    base = dict(experiment_id="batch-sweep", phase="warm", quality_metric="macro_f1",
                quality_threshold=0.9, quality_tolerance=0.01, expected_ids=1000, observed_ids=1000)
    session.results.append(ResultRow(variant_id="batch-1", run_index=1, corpus_revision="c1", ids_match=True,
                                     format_valid=True, quality_value=0.95, corpus_accepted=True, **base))
    session.results.append(ResultRow(variant_id="batch-1", run_index=2, corpus_revision="c1", ids_match=True,
                                     format_valid=True, quality_value=0.95, corpus_accepted=True, **base))
    session.results.append(ResultRow(variant_id="batch-4", run_index=1, corpus_revision="c2", ids_match=False,
                                     format_valid=True, quality_value=0.5, corpus_accepted=False, **base))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("4")
            t = app.screen.query_one("#val-table", DataTable)
            rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
            assert tuple(rows[0][1:]) == ("match", "valid", "met", "accepted")
            assert tuple(rows[2][1:]) == ("mismatch", "valid", "not met", "rejected")
            assert "3 runs; 1 distinct accepted corpus in this session" in text_of(app, "#val-status")
            await pilot.press("down", "down")
            detail = text_of(app, "#val-detail")
            assert "REJECTED" in detail and "margin -0.3900" in detail

    asyncio.run(go())


def test_v1_validation_pane_takes_the_quality_verdict_of_the_stored_report(session: Any) -> None:
    """Same answer as the CLI: a max-degradation failure in the report is 'not met' in
    the pane even though the row's value clears threshold − tolerance."""
    session.results.append(ResultRow(
        experiment_id="e", variant_id="batch-1", phase="warm", run_index=1, corpus_revision="c1",
        ids_match=True, format_valid=True, quality_metric="macro_f1", quality_threshold=0.9,
        quality_tolerance=0.01, quality_value=0.95, corpus_accepted=False))
    folder = session.validation_dir / "e" / "batch-1"
    folder.mkdir(parents=True)
    (folder / "warm-1.toml").write_text(
        'schema = 1\nverdict = "rejected"\n[quality]\npassed = false\n'
        'reason = "macro_f1 = 0.9500 is 0.0300 below the reference 0.9800 (max degradation 0.0100)"\n')

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("4")
            t = app.screen.query_one("#val-table", DataTable)
            assert str(t.get_row_at(0)[3]) == "not met"
            detail = text_of(app, "#val-detail")
            assert "NOT MET" in detail and "max degradation" in detail

    asyncio.run(go())


# -- order -----------------------------------------------------------------------------------------
def test_s2_s3_payment_sent_is_not_confirmed_and_countdown_moves(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("5", "p")
            await pilot.pause()
            for name, value in (("asset", "USDT"), ("network", "TRC20"), ("amount", "55.00"),
                                ("destination", "TXyz123"), ("expires", "30")):
                app.screen.query_one(f"#field-{name}", Input).value = value
            await pilot.press("ctrl+s")
            await pilot.pause()
            text = text_of(app, "#order-text")
            assert "exactly 55.00 USDT on network TRC20" in text and "expires in 30m" in text
            assert "payment order issued — not paid" in text_of(app, "#session-header")
            app.ctx.clock.advance(600)
            app.screen.pane("order").redraw()
            assert "expires in 20m" in text_of(app, "#order-text")
            await pilot.press("e")  # default: payment-sent by you
            await pilot.pause()
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert "payment sent — not confirmed" in text_of(app, "#session-header")
            assert "NOT confirmed" in text_of(app, "#order-warnings")
            assert "paid (provider tracking)" not in text_of(app, "#session-header")

    asyncio.run(go())


# -- cost --------------------------------------------------------------------------------------------
def test_k3_cost_recomputes_on_edit_and_needs_accepted_count(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
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

    asyncio.run(go())


def test_k4_cost_per_accepted_uses_distinct_corpora(session: Any) -> None:
    for i in range(5):  # five repetitions of one corpus = one deliverable
        session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                         run_index=i + 1, corpus_revision="c1", corpus_accepted=True))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            out = text_of(app, "#cost-report")
            assert "Accepted deliverables: 1 distinct" in out
            assert "55.00 USD" in out

    asyncio.run(go())


# -- palette ---------------------------------------------------------------------------------------
def test_palette_lists_every_action_and_runs_them(session: Any) -> None:
    from gpusession.ui.palette import ACTIONS, GpuSessionCommands

    titles = [a[0] for a in ACTIONS]
    for needed in ("Run experiment", "Validate", "New payment order", "Record order event", "Export report"):
        assert any(t.startswith(needed) for t in titles)

    async def go() -> None:
        app = app_for(session, runner_factory=FakeRunner.factory())
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            provider = GpuSessionCommands(app.screen)
            found = [h.text async for h in provider.discover()]
            assert found == titles
            hits = [h async for h in provider.search("run exp")]
            assert hits and hits[0].text == "Run experiment"
            hits[0].command()
            await settle(pilot, app)
            assert app.screen.query_one(TabbedContent).active == "run"
            assert len(app.screen.pane("run").rows) == 18

    asyncio.run(go())


def test_v2_v3_validation_detail_shows_counts_first_offenders_and_classes(session: Any) -> None:
    import tomli_w

    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-4", phase="warm", run_index=2,
                                     ids_match=False, format_valid=True, corpus_accepted=False))
    folder = session.validation_dir / "batch-sweep" / "batch-4"
    folder.mkdir(parents=True)
    (folder / "warm-2.toml").write_text(tomli_w.dumps({
        "schema": 1, "verdict": "corpus REJECTED: IDs failed", "label_set": ["a", "b"],
        "ids": {"passed": False, "reason": "2 missing, 1 duplicated", "missing": 2, "extra": 0,
                "duplicated_in_output": 1, "duplicated_in_expected": 0,
                "first_missing": ["007", "12"], "first_extra": [], "first_duplicates": ["3"]},
        "quality": {"passed": True, "reason": "macro_f1 0.95", "per_class": [
            {"label": "a", "precision": 1.0, "recall": 0.9, "f1": 0.947, "support": 10}]},
    }))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("4")
            await pilot.pause()
            detail = text_of(app, "#val-detail")
            assert "IDs: FAILED — 2 missing, 1 duplicated" in detail
            assert "missing 2, extra 0, duplicated in output 1" in detail
            assert "first missing: 007, 12 (2 listed)" in detail  # IDs stay strings (V2)
            assert "first duplicates: 3 (1 listed)" in detail
            assert "a                    1.000   0.900  0.947       10" in detail
            assert "label set used: a, b" in detail

    asyncio.run(go())


def test_r1_define_experiment_in_form_saves_it_before_any_run(session: Any) -> None:
    from gpusession.bench.plan import load_experiments

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(80, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("2", "d")
            await pilot.pause()
            app.screen.query_one("#field-id", Input).value = "ctx-sweep"
            app.screen.query_one("#field-varied", Input).value = "context"
            app.screen.query_one("#field-values", Input).value = "128, 256"
            app.screen.query_one("#field-runs", Input).value = "3"
            await pilot.press("ctrl+s")
            await pilot.pause()
            exps = {e.id: e for e in load_experiments(session)}
            assert exps["ctx-sweep"].varied == "context" and exps["ctx-sweep"].values == (128, 256)
            assert exps["ctx-sweep"].runs_per_variant == 3
            run_pane = app.screen.pane("run")
            assert run_pane.experiment_id == "ctx-sweep"
            assert "ctx-sweep: context = 128, 256; 3 runs" in str(run_pane.query_one("#run-status", Static).render())

    asyncio.run(go())


def test_s1_add_own_item_is_saved(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(80, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press("a")
            await pilot.pause()
            app.screen.query_one("#field-text", Input).value = "Ask Anna for the hard cases"
            await pilot.press("ctrl+s")
            await pilot.pause()
            own = [i for i in load_checklist(session) if i.custom]
            assert [i.text for i in own] == ["Ask Anna for the hard cases"]

    asyncio.run(go())


def test_h11_no_color_keeps_every_state_in_words(session: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm", run_index=1,
                                     corpus_revision="c1", ids_match=True, format_valid=True, corpus_accepted=True))
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-4", phase="warm", run_index=1,
                                     corpus_revision="c1", ids_match=False, format_valid=True, corpus_accepted=False))
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-8", phase="warm", run_index=1))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            assert app.no_color
            await settle(pilot, app)
            await pilot.press("4")
            await pilot.pause()
            svg = app.export_screenshot()
            for words in ("accepted", "rejected", "mismatch", "not&#160;validated"):
                assert words in svg, words

    asyncio.run(go())


def test_h12_quit_during_run_first_asks_the_run_to_stop(session: Any) -> None:
    async def go() -> None:
        app = app_for(session, runner_factory=FakeRunner.factory(step_s=0.2))
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

    asyncio.run(go())


def test_q_in_a_form_does_not_quit(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(80, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press("5", "e")  # the order-event form opens on its state list
            await pilot.pause()
            await pilot.press("q")
            await pilot.pause()
            assert app.return_value is None and app.screen.__class__.__name__ == "FormModal"
            await pilot.press("ctrl+g")
            await pilot.pause()
            await pilot.press("q")
            await pilot.pause()
            assert app.return_value == 0

    asyncio.run(go())


def test_run_pick_experiment_in_form(session: Any) -> None:
    from gpusession.bench.plan import Experiment, define_experiment

    define_experiment(session, Experiment(id="ctx-sweep", workload="bbc-news", varied="context",
                                          values=(128, 256)))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(80, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press("2")
            run_pane = app.screen.pane("run")
            assert run_pane.experiment_id == "batch-sweep"
            await pilot.press("e")
            await pilot.pause()
            await pilot.press("down", "ctrl+s")
            await pilot.pause()
            assert run_pane.experiment_id == "ctx-sweep"
            assert "context = 128, 256" in str(run_pane.query_one("#run-status", Static).render())

    asyncio.run(go())


def test_cost_save_as_package_writes_session_and_header(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
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

    asyncio.run(go())


def test_palette_export_report_runs_the_report_command(session: Any) -> None:
    import subprocess
    import sys

    if subprocess.run([sys.executable, "-m", "gpusession", "report", "--help"],
                      capture_output=True, timeout=60).returncode != 0:
        pytest.skip("`gpusession report` is not available yet (checklist/report helper)")

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            app.run_palette_action("", "export_report")
            await settle(pilot, app)
            messages = [n.message for n in app._notifications]
            assert any("wrote" in m and "report" in m for m in messages), messages

    asyncio.run(go())


def test_memory_poller_initialises_nvml_once(session: Any) -> None:
    nvml = FakeNvml()

    async def go() -> None:
        app = app_for(session, nvml=nvml, poll_s=0.05)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")  # the pane (and its poller) is built when first shown
            # Wait for 5 samples (at most 15 s: a loaded CI machine is slow), then check
            # NVML was initialised once for all of them.
            for _ in range(150):
                await pilot.pause(0.1)
                if app.screen.query_one(MemoryPane).samples >= 5:
                    break
            await app.workers.wait_for_complete()
            assert app.screen.query_one(MemoryPane).samples >= 5
            # one for the poller's whole life, one for the checklist's evidence probe, one
            # for the header's reading before the memory pane is shown
            assert nvml.init_calls == 3

    asyncio.run(go())


# -- forms: checked inside the form, readable at 80×24 ------------------------------------------
def _shown_on_screen(app: Any, widget: Any) -> bool:
    """The widget is painted somewhere in the terminal (not scrolled or clipped away)."""
    if not widget.display:
        return False
    region = app.screen.find_widget(widget).visible_region
    return bool(region) and region.bottom <= app.size.height and region.right <= app.size.width


def test_s3_payment_order_refused_keeps_the_form_and_everything_typed(session: Any) -> None:
    from gpusession.core.order import load_order
    from gpusession.ui.modals import FormModal

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("5", "p")
            await pilot.pause()
            typed = {"network": "TRC20", "amount": "55.00", "destination": "TXyz123", "expires": "30"}
            for name, value in typed.items():  # the asset is forgotten
                app.screen.query_one(f"#field-{name}", Input).value = value
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert isinstance(app.screen, FormModal), "the form closed on a refused save"
            error = str(app.screen.query_one("#form-error", Static).render())
            assert "Not saved" in error and "asset" in error, error
            assert _shown_on_screen(app, app.screen.query_one("#form-error"))
            assert _shown_on_screen(app, app.screen.query_one("#form-save"))
            for name, value in typed.items():
                assert app.screen.query_one(f"#field-{name}", Input).value == value
            assert app.focused is app.screen.query_one("#field-asset")  # the cursor goes to it
            assert load_order(session).payment is None  # nothing written on bad input
            await pilot.press(*"USDT")
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert not isinstance(app.screen, FormModal)
            assert "exactly 55.00 USDT on network TRC20" in text_of(app, "#order-text")

    asyncio.run(go())


def test_r1_define_experiment_refused_stays_open_with_the_reason(session: Any) -> None:
    from gpusession.bench.plan import load_experiments
    from gpusession.ui.modals import FormModal

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("2", "d")
            await pilot.pause()
            app.screen.query_one("#field-id", Input).value = "ctx-sweep"
            app.screen.query_one("#field-runs", Input).value = "five"
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert isinstance(app.screen, FormModal)
            error = str(app.screen.query_one("#form-error", Static).render())
            assert "runs" in error and "whole number" in error and "'five'" in error, error
            assert app.focused is app.screen.query_one("#field-runs")
            assert "ctx-sweep" not in {e.id for e in load_experiments(session)}
            await pilot.press("ctrl+g")
            await pilot.pause()
            assert not isinstance(app.screen, FormModal)

    asyncio.run(go())


def test_h11_form_placeholders_read_as_examples_not_values(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            for keys in (("5", "p"), ("5", "e"), ("1", "a")):
                await pilot.press(*keys)
                await pilot.pause()
                holders = [i.placeholder for i in app.screen.query(Input) if i.placeholder]
                assert holders, keys
                assert all(h.startswith("e.g. ") for h in holders), holders
                await pilot.press("ctrl+g")
                await pilot.pause()
            await pilot.press("6")  # the cost pane's own inputs too
            await pilot.pause()
            holders = [i.placeholder for i in app.screen.pane("cost").query(Input) if i.placeholder]
            assert holders and all(h.startswith("e.g. ") for h in holders), holders

    asyncio.run(go())


def test_h11_define_form_title_buttons_and_keys_visible_at_80x24(session: Any) -> None:
    from textual.widgets._footer import FooterKey

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("2", "d")
            await pilot.pause(0.2)
            form = app.screen
            for sel in ("#form-title", "#form-save", "#form-cancel", "#field-id"):
                assert _shown_on_screen(app, form.query_one(sel)), f"{sel} is off-screen at 80×24"
            keys = {(k.key, k.description) for k in form.query(FooterKey)}
            assert ("ctrl+s", "Save") in keys and ("ctrl+g", "Cancel") in keys, keys
            assert not any(k in {"r", "c", "d"} for k, _ in keys), keys  # not the pane's keys
            for _ in range(7):  # tab down to the last field: it scrolls into view with its label
                await pilot.press("tab")
                await pilot.pause()
                assert _shown_on_screen(app, app.focused), f"{app.focused!r} not in view"
                assert _shown_on_screen(app, form.query_one("#form-save"))
            assert app.focused is form.query_one("#field-scope")

    asyncio.run(go())


def test_s2_event_form_state_list_shows_every_state_at_80x24(session: Any) -> None:
    from gpusession.core.order import STATES

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("5", "e")
            await pilot.pause(0.2)
            states = app.screen.query_one("#field-state", OptionList)
            assert states.size.height >= len(STATES)
            assert _shown_on_screen(app, states)
            assert app.screen.find_widget(states).visible_region.height >= len(STATES)

    asyncio.run(go())


def test_s1_add_item_stage_list_shows_stage_titles(session: Any) -> None:
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("a")
            await pilot.pause()
            stages = app.screen.query_one("#field-stage", OptionList)
            shown = [str(stages.get_option_at_index(i).prompt) for i in range(stages.option_count)]
            assert shown[0].startswith("(*) 1 ") and len(shown[0]) > 8, shown  # "1 Define the output"
            assert all(not s[4:].isdigit() for s in shown), shown

    asyncio.run(go())


def test_h11_form_covers_the_pane_behind_it(session: Any) -> None:
    """Nothing of the pane behind shows through at the form's edges (opaque backdrop)."""
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("5", "p")
            await pilot.pause()
            assert app.screen.styles.background.a == 1.0

    asyncio.run(go())


# -- charts: small differences look small ---------------------------------------------------------
def _glyphs(widget: Any) -> str:
    from textual.geometry import Region

    return "".join(strip.text for strip in widget.render_lines(Region(0, 0, widget.size.width, 1)))


def test_r6_warm_run_bars_from_zero_so_a_tiny_spread_looks_tiny(session: Any) -> None:
    """0.101–0.103 s is a 2 % spread: drawn from 0 s it must not go from empty to full."""
    async def go() -> None:
        app = app_for(session, runner_factory=FakeRunner.factory())
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("2", "r")
            await settle(pilot, app)
            charts = list(app.screen.pane("run").query(".duration-spark"))
            assert len(charts) == 3
            first = _glyphs(charts[0]).strip()  # batch-1: 0.101, 0.102, 0.103 s
            assert first and set(first) <= {"▇", "█"}, first
            last = _glyphs(charts[2]).strip()  # batch-8: 0.013–0.015 s, on the same 0 s scale
            assert last and "█" not in last, last

    asyncio.run(go())


def test_m2_memory_history_bars_scaled_0_to_100_percent(session: Any) -> None:
    from dataclasses import replace

    from gpusession.testing import GIB

    readings = iter([20 * GIB, 22 * GIB] * 50)  # 31 % and 34 % of 64 GiB

    def host() -> Any:
        return replace(fixed_host_memory(), used_bytes=next(readings))

    async def go() -> None:
        app = app_for(session, host_memory=host, poll_s=0.05)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            mem = app.screen.query_one(MemoryPane)
            while mem.samples < 6:
                await pilot.pause(0.05)
            await pilot.pause(0.1)
            bars = _glyphs(app.screen.query_one("#mem-spark-host")).strip()
            assert bars and set(bars) <= {"▂", "▃"}, bars  # never empty → full for 3 points
            label = text_of(app, "#mem-hist-label")
            assert "bars 0–100%" in label and "host RAM used 31%–34%" in label, label
            assert "min→max" not in label

    asyncio.run(go())


def test_run_idle_progress_bar_is_empty_not_pulsing(session: Any) -> None:
    from textual.widgets import ProgressBar

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("2")
            await pilot.pause()
            bar = app.screen.query_one("#run-bar", ProgressBar)
            assert bar.total is not None and bar.percentage == 0  # determinate and empty
            assert "--%" not in str(bar.query_one("PercentageStatus").render())

    asyncio.run(go())


def test_r6_bar_glyphs_067_vs_068_s_are_one_height() -> None:
    from gpusession.ui.charts import bar_glyphs

    assert bar_glyphs([0.067, 0.068, 0.067], 6) == "█" * 6  # from a 0 s floor: one height
    assert set(bar_glyphs([0.067, 0.068], 10, high=0.2)) == {"▃"}
    assert bar_glyphs([0.0, 1.0], 2, high=1.0) == "▁█"
    assert bar_glyphs([], 4) == "    "  # nothing measured is not drawn as zero


# -- wording ------------------------------------------------------------------------------------------
def test_h12_no_internal_case_ids_in_what_a_person_reads(session: Any) -> None:
    import re

    from gpusession.ui.palette import ACTIONS

    case_id = re.compile(r"\bH-\d\d\b")
    assert not [a for a in ACTIONS if case_id.search(a[0] + a[1])]

    async def go() -> None:
        app = app_for(session, runner_factory=FakeRunner.factory(step_s=0.2))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("2")
            await pilot.pause()
            run_pane = app.screen.pane("run")
            shown: list[str] = []  # every status line, also the short-lived ones
            status_box = run_pane.query_one("#run-status", Static)
            update = status_box.update

            def spy(text: Any = "") -> None:
                shown.append(str(text))
                update(text)

            status_box.update = spy  # type: ignore[method-assign]
            await pilot.press("r")
            await pilot.pause(0.3)
            await pilot.press("c")
            assert any("Cancel requested" in t for t in shown), shown
            assert not [t for t in shown if case_id.search(t)], shown
            while run_pane.running:
                await pilot.pause(0.05)
            for key in "123456":
                await pilot.press(key)
                await pilot.pause(0.1)
                words = " ".join(str(w.render()) for w in app.screen.query(Static))
                assert not case_id.search(words), f"pane {key}: {case_id.search(words)}"

    asyncio.run(go())


def test_k4_one_accepted_corpus_is_singular(session: Any) -> None:
    for i in range(3):  # three repetitions of one corpus: one deliverable
        session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                         run_index=i + 1, corpus_revision="c1", corpus_accepted=True))

    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("6")
            await pilot.pause()
            cost = text_of(app, "#cost-report")
            assert "1 distinct (accepted corpus of this session)" in cost, cost
            await pilot.press("4")
            await pilot.pause()
            status = text_of(app, "#val-status")
            assert "3 runs; 1 distinct accepted corpus in this session" in status, status
            assert "corpora" not in (cost + status)

    asyncio.run(go())


def test_h11_choice_in_a_form_marks_the_chosen_state_in_text(session: Any) -> None:
    """In a plain terminal (no colour, no reverse video) the chosen state is still readable."""
    async def go() -> None:
        app = app_for(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("5", "e")
            await pilot.pause()
            states = app.screen.query_one("#field-state", OptionList)

            def prompts() -> list[str]:
                return [str(states.get_option_at_index(i).prompt) for i in range(states.option_count)]

            assert [p for p in prompts() if p.startswith("(*)")] == ["(*) payment-sent"]
            await pilot.press("down")
            await pilot.pause()
            assert [p for p in prompts() if p.startswith("(*)")] == ["(*) payment-confirmed"]
            assert "( ) payment-sent" in prompts()
            assert states.value == "payment-confirmed"  # type: ignore[attr-defined]

    asyncio.run(go())
