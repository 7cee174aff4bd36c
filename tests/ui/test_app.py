"""The app as a whole: header, keys 1-6, footer, bindings, palette, colour, words.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Static, TabbedContent
from ui.pilot import SIZE, MakeApp, settle, text_of

from gpusession.core.records.results import ResultRow
from gpusession.testing import FIXED_NOW, FakeRunner


async def test_s6_header_shows_name_gpu_window_and_order(session: Any, make_app: MakeApp) -> None:
    app = make_app()
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


async def test_s6_header_at_80_columns_keeps_window_on_one_line_and_every_order_word(
    session: Any, make_app: MakeApp
) -> None:
    from gpusession.core.money import order

    order.set_order(session, number="ORD-1042", gpu_model="RTX A5000", lots=1, days=7, at=FIXED_NOW)
    for state in ("access-received", "deviation-noted"):
        order.record_event(session, state, source="you", note="", at=FIXED_NOW)

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        header = app.screen.query_one("#session-header", Static)
        first, order_line = text_of(app, "#session-header").split("\n")
        width = header.content_size.width
        assert len(first) <= width, f"the first line wraps at 80 columns: {first!r}"
        assert "visuals-test-01" in first and "RTX A5000" in first
        assert "7d pkg ends 12-04 09:00, 4d 21h left" in first
        assert "access received — deviation noted · window from session creation" in order_line, order_line
        needed = header.get_content_height(header.size, app.size, width)
        assert needed <= header.size.height, "the header cuts its last line"


@pytest.mark.slow
async def test_footer_keys_of_every_pane_fit_80_columns(session: Any, make_app: MakeApp) -> None:
    from textual.widgets._footer import FooterKey

    app = make_app()
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


@pytest.mark.slow
async def test_keys_1_to_6_switch_panes_and_focus_them(session: Any, make_app: MakeApp) -> None:
    app = make_app()
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


async def test_h11_no_escape_binding_anywhere_and_quit_is_the_only_priority(
    session: Any, make_app: MakeApp
) -> None:
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

    # and at run time, every widget of the main screen
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        nodes = [app, app.screen, *app.screen.walk_children()]
        for node in nodes:
            for key in node._bindings.key_to_bindings:
                assert key != "escape", f"{node!r} binds escape"

    assert GpuSessionApp.ESCAPE_TO_MINIMIZE is False
    assert screens.MainScreen.ESCAPE_TO_MINIMIZE is False


@pytest.mark.slow
async def test_palette_lists_every_action_and_runs_them(session: Any, make_app: MakeApp) -> None:
    from gpusession.ui.palette import ACTIONS, GpuSessionCommands

    titles = [a[0] for a in ACTIONS]
    for needed in ("Run experiment", "Validate", "New payment order", "Record order event", "Export report"):
        assert any(t.startswith(needed) for t in titles)

    app = make_app(runner_factory=FakeRunner.factory())
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


@pytest.mark.slow
async def test_palette_export_report_runs_the_report_command(
    session: Any, make_app: MakeApp
) -> None:
    import subprocess
    import sys

    if subprocess.run([sys.executable, "-m", "gpusession", "report", "--help"],
                      capture_output=True, timeout=60).returncode != 0:
        pytest.skip("`gpusession report` is not available yet (checklist/report helper)")

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.run_palette_action("", "export_report")
        await settle(pilot, app)
        messages = [n.message for n in app._notifications]
        assert any("wrote" in m and "report" in m for m in messages), messages


async def test_h11_no_color_keeps_every_state_in_words(
    session: Any, monkeypatch: pytest.MonkeyPatch, make_app: MakeApp
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm", run_index=1,
                                     corpus_revision="c1", ids_match=True, format_valid=True, corpus_accepted=True))
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-4", phase="warm", run_index=1,
                                     corpus_revision="c1", ids_match=False, format_valid=True, corpus_accepted=False))
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-8", phase="warm", run_index=1))

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.no_color
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        svg = app.export_screenshot()
        for words in ("accepted", "rejected", "mismatch", "not&#160;validated"):
            assert words in svg, words


@pytest.mark.slow
async def test_h12_no_internal_case_ids_in_what_a_person_reads(
    session: Any, make_app: MakeApp
) -> None:
    import re

    from gpusession.ui.palette import ACTIONS

    case_id = re.compile(r"\bH-\d\d\b")
    assert not [a for a in ACTIONS if case_id.search(a[0] + a[1])]

    app = make_app(runner_factory=FakeRunner.factory(step_s=0.2))
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


@pytest.mark.slow
async def test_h11_footer_keys_whole_on_every_pane_at_60x20_and_80x24(
    busy_session: Any, make_app: MakeApp
) -> None:
    """No footer key is cut mid-word: each lies inside the terminal and left of the palette
    hint when that is shown (at 60 columns the footer is compact and the hint is dropped;
    ^p still opens the palette)."""
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    from gpusession.testing import FakeRunner

    for size in ((60, 20), (80, 24)):
        app = make_app(session=busy_session, runner_factory=FakeRunner.factory())
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app)
            for key in "123456":
                await pilot.press(key)
                await pilot.pause(0.05)
                footer = app.screen.query_one(Footer)
                every = [k for k in footer.query(FooterKey) if k.display]
                keys = [k for k in every if "-command-palette" not in k.classes]
                palette = [k for k in every if "-command-palette" in k.classes]
                assert keys, (size, key)
                right_edge = app.size.width
                if footer.show_command_palette and palette:
                    right_edge = min(right_edge, palette[0].region.x)
                for k in keys:
                    assert k.region.width and k.region.right <= right_edge, (size, key, k.description)
            if size == (60, 20):
                assert app.screen.query_one(Footer).compact


async def test_a_pane_key_typed_at_start_is_kept(session: Any, make_app: MakeApp) -> None:
    """Start-up: key 3 pressed before the first frame is painted shows and focuses
    the memory pane; the checklist's first focus does not bring its tab back."""
    from ui.pilot import background_started

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await background_started(app)
        await pilot.pause(0.2)
        assert app.screen.query_one(TabbedContent).active == "memory"
        mem = app.main.pane("memory")
        assert app.focused is not None and (app.focused is mem or mem in app.focused.ancestors)


async def test_a_toast_shows_brackets_as_written_never_as_markup(session: Any, make_app: MakeApp) -> None:
    """``pip install -e '.[demo]'`` in a hint, ``[b]`` in an error: shown as written, by every pane."""
    from textual.widgets._toast import Toast

    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:  # toasts drawn
        await settle(pilot, app)
        app.main.pane("cost").notify("charts need: pip install -e '.[demo]'", title="charts")
        app.notify("[b]bold?[/b] [link=https://x]y[/link]", title="error", markup=True)
        await settle(pilot, app)
        assert all(not n.markup for n in app._notifications)
        await pilot.pause(0.3)
        shown = " ".join(str(t.render()) for t in app.screen.query(Toast))  # as the toasts draw it
        assert "pip install -e '.[demo]'" in shown, shown
        assert "[b]bold?[/b]" in shown and "[link=https://x]" in shown, shown
