"""The Checklist pane reads the product's facts (the results CSV's count, the journal) in
thread workers: after the first frame and at a run's end the event loop reads neither
(they grow with the session, A5; a key must answer meanwhile), and the list shown is the
same as ``load_checklist`` gives.

The reads counted are the Checklist pane's (``ui/panes/checklist.py`` in the stack).
"""

from __future__ import annotations

import re
import threading
import traceback
from typing import Any

import pytest
from textual.widgets import OptionList
from ui.pilot import MakeApp, settle, text_of, workers_done

from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultsFile
from gpusession.core.retrieval import known_facts
from gpusession.core.retrieval.checklist import load_checklist
from gpusession.testing import FakeRunner
from gpusession.ui.panes.checklist import ChecklistPane, ChecklistRead

pytestmark = pytest.mark.calendar  # reads the checklist

#: a frame of the Checklist pane's module
CHECKLIST_PANE = re.compile(r"gpusession[/\\]ui[/\\]panes[/\\]checklist\.py$")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every read of the results CSV, of the journal and of the deliverables' count the
    Checklist pane asked for from now on: ``(what, on the event loop's thread)``."""
    seen: list[tuple[str, bool]] = []

    def counted(what: str, real: Any) -> Any:
        def recording(*a: Any, **kw: Any) -> Any:
            if any(CHECKLIST_PANE.search(f.filename) for f in traceback.extract_stack()):
                seen.append((what, threading.current_thread() is threading.main_thread()))
            return real(*a, **kw)
        return recording

    monkeypatch.setattr(ResultsFile, "read", counted("csv", ResultsFile.read))
    monkeypatch.setattr(Session, "journal_records", counted("journal", Session.journal_records))
    monkeypatch.setattr(known_facts, "session_count", counted("count", known_facts.session_count))
    monkeypatch.setattr(known_facts, "cached_words", lambda *a, **kw: None)  # the count is read, not its cache
    return seen


def _ids_shown(app: Any) -> list[str]:
    olist = app.screen.pane("checklist").query_one(OptionList)
    return [o.id for o in olist.options if o.id is not None]


async def test_a5_first_frame_then_the_whole_list_reads_the_facts_off_the_event_loop(
        session: Any, make_app: MakeApp, reads: list[tuple[str, bool]]) -> None:
    FakeRunner(session, "batch-sweep", lambda _e: None, threading.Event()).run()
    del reads[:]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert _ids_shown(app) == [i.id for i in load_checklist(session)]  # the whole list, facts read
    assert any(what == "count" for what, _ in reads), reads
    assert not [r for r in reads if r[1]], reads


async def test_a5_a_runs_end_reloads_the_checklist_off_the_event_loop(
        session: Any, make_app: MakeApp, reads: list[tuple[str, bool]]) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await workers_done(pilot, app)
        run_pane = app.screen.pane("run")
        del reads[:]
        await pilot.press("r")
        await pilot.pause()
        while run_pane.running:
            await pilot.pause(0.05)
        await workers_done(pilot, app)
        checklist = app.screen.pane("checklist")
        assert [i.id for i in checklist.items] == [i.id for i in load_checklist(session)]
    assert any(what == "count" for what, _ in reads), reads  # the run's end re-read the facts
    assert not [r for r in reads if r[1]], reads


async def test_a5_a_key_change_is_not_undone_by_an_older_read(session: Any, make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        pane = app.screen.pane("checklist")
        older = pane._next_generation()  # a worker's read started before the key
        stale = pane.items
        await pilot.press("space")  # reads and shows the list on the loop (newer)
        await pilot.pause()
        first = next(i for i in pane.items)
        assert first.done
        pane.post_message(pane.Loaded(ChecklistRead(stale), older))
        await pilot.pause()
        assert next(i for i in pane.items).done  # the older read was not shown over it


async def test_a5_the_first_frame_says_counting_then_the_count_of_load_checklist(
        session: Any, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    held: list[Any] = []
    real_load = ChecklistPane.load_in_background
    monkeypatch.setattr(ChecklistPane, "load_in_background", lambda self: held.append(self))
    monkeypatch.setattr(ChecklistPane, "collect_evidence", lambda self: None)
    FakeRunner(session, "batch-sweep", lambda _e: None, threading.Event()).run()
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert held, "the whole list is read after the first frame"
        assert text_of(app, "#checklist-status").startswith("counting …")  # no count that changes a moment later
        real_load(held[0])
        await workers_done(pilot, app)
        items = load_checklist(session)
        done = sum(1 for i in items if i.done)
        assert text_of(app, "#checklist-status").startswith(f"{done} of {len(items)} done")


@pytest.fixture
def redrawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the Checklist pane's list redrew from now on: ``"all"`` per rebuilt list, else
    the id of each option whose prompt was replaced."""
    seen: list[str] = []
    real_set, real_replace = OptionList.set_options, OptionList.replace_option_prompt_at_index

    def set_options(self: OptionList, options: Any) -> Any:
        if self.id == "checklist-list":
            seen.append("all")
        return real_set(self, options)

    def replace_prompt(self: OptionList, index: int, prompt: Any) -> Any:
        if self.id == "checklist-list":
            seen.append(str(self.get_option_at_index(index).id))
        return real_replace(self, index, prompt)

    monkeypatch.setattr(OptionList, "set_options", set_options)
    monkeypatch.setattr(OptionList, "replace_option_prompt_at_index", replace_prompt)
    return seen


async def test_a5_space_is_saved_at_once_redraws_its_item_and_reads_the_facts_off_the_event_loop(
        session: Any, make_app: MakeApp, reads: list[tuple[str, bool]], redrawn: list[str]) -> None:
    FakeRunner(session, "batch-sweep", lambda _e: None, threading.Event()).run()
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        first = load_checklist(session)[0]
        others_done = sum(1 for i in load_checklist(session) if i.done)  # the run's facts tick some
        for done in (True, False):
            del reads[:], redrawn[:]
            await pilot.press("space")
            await pilot.pause()
            assert load_checklist(session)[0].done is done  # saved at once (S7)
            await workers_done(pilot, app)
            assert redrawn == [first.id]  # its option only, not the list
            assert text_of(app, "#checklist-status").startswith(f"{others_done + done} of ")
            assert any(what == "count" for what, _ in reads), reads  # the facts read again after the key
            assert not [r for r in reads if r[1]], reads  # none on the event loop


async def test_a5_n_saves_the_note_and_reads_the_facts_off_the_event_loop(
        session: Any, make_app: MakeApp, reads: list[tuple[str, bool]], redrawn: list[str]) -> None:
    from textual.widgets import Input

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        del reads[:], redrawn[:]
        await pilot.press("n")
        await pilot.pause()
        app.screen.query_one("#field-note", Input).value = "ask Anna"
        await pilot.press("enter")
        await pilot.pause()
        first = load_checklist(session)[0]
        assert first.note == "ask Anna"
        await workers_done(pilot, app)
        assert redrawn == [first.id]
        assert "note: ask Anna" in str(app.screen.query_one(OptionList).get_option(first.id).prompt)
        assert any(what == "count" for what, _ in reads), reads
        assert not [r for r in reads if r[1]], reads


async def test_a5_a_adds_the_item_and_reads_the_facts_off_the_event_loop(
        session: Any, make_app: MakeApp, reads: list[tuple[str, bool]]) -> None:
    from textual.widgets import Input

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        del reads[:]
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#field-text", Input).value = "ask for the invoice"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert [i.text for i in load_checklist(session) if i.custom] == ["ask for the invoice"]
        assert "own.1" in _ids_shown(app)  # shown at once
        await workers_done(pilot, app)
        assert _ids_shown(app) == [i.id for i in load_checklist(session)]
        assert any(what == "count" for what, _ in reads), reads
        assert not [r for r in reads if r[1]], reads


async def test_s11_a5_space_on_a_recorded_item_asks_why_and_reads_no_fact_on_the_event_loop(
        session: Any, make_app: MakeApp, reads: list[tuple[str, bool]]) -> None:
    from textual.widgets import Input

    from gpusession.core.money.order import set_order

    set_order(session, number="A-1234", gpu_model="RTX A5000", lots=1, days=7)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        olist = app.screen.query_one(OptionList)
        olist.highlighted = olist.get_option_index("g5.configurator")
        del reads[:]
        await pilot.press("space")
        await pilot.pause()
        app.screen.query_one("#field-note", Input).value = "two lots were shown"
        await pilot.press("enter")
        await pilot.pause()
        item = next(i for i in load_checklist(session) if i.id == "g5.configurator")
        assert not item.done and item.not_done_although_recorded
        assert "[ ] open (marked not done by you)" in str(olist.get_option("g5.configurator").prompt)
        await workers_done(pilot, app)
        assert "[ ] open (marked not done by you)" in str(olist.get_option("g5.configurator").prompt)
        assert not [r for r in reads if r[1]], reads
