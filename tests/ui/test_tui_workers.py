"""The TUI reads the session in thread workers: a slow read never holds the keys.

The Cost pane's comparison with the other sessions, the Validation pane's tables and
deliverables and the Run pane's summary are read off the event loop, with a visible
placeholder meanwhile; a newer reload replaces an older one; a decision changes its row,
not the table. A read is held back by a ``threading.Event`` the test sets (never a
sleep); waiting is counted in rounds (``workers_done``).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from textual.widgets import DataTable, Input, Static
from ui.pilot import MakeApp, background_started, rounds_until, settle, text_of, workers_done

from gpusession.ui.panes import cost as cost_mod
from gpusession.ui.panes import deliverables as deliv_mod
from gpusession.ui.panes import run_load, run_summary

#: a held read gives up after this long, so a failing test ends (it is never reached when green)
HOLD_S = 30


async def test_cost_pane_compares_in_a_worker_and_its_fields_answer_meanwhile(
        session: Any, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the other sessions are compared, the pane says so and recomputes on each
    edit; the comparison then takes the placeholder's place."""
    from gpusession.core.retrieval import compare

    release = threading.Event()

    def slow_comparison(*_a: Any, **_k: Any) -> list[str]:
        release.wait(HOLD_S)
        return ["Other sessions of this folder, in the same terms:", "  other-card  4.00 USD"]

    monkeypatch.setattr(compare, "folder_comparison_lines", slow_comparison)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await background_started(app)
        await pilot.press("6")
        await rounds_until(pilot, lambda: not app.screen.pane("cost").counting)  # its own figures read
        out = text_of(app, "#cost-report")
        assert cost_mod.COMPARING in out and "55.00 USD" in out
        app.screen.query_one("#cost-lots", Input).value = "2"  # the loop is free: recomputed at once
        await pilot.pause()
        out = text_of(app, "#cost-report")
        assert "= 110.00 USD" in out and cost_mod.COMPARING in out
        release.set()
        await workers_done(pilot, app)
        out = text_of(app, "#cost-report")
        assert "other-card  4.00 USD" in out and cost_mod.COMPARING not in out


async def test_cost_pane_drops_the_comparison_of_an_older_reload(
        session: Any, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run lands while the folder is being compared: the newer comparison is shown,
    the older one's late result never replaces it."""
    from gpusession.core.retrieval import compare

    release = threading.Event()
    calls: list[int] = []
    shown: list[list[str]] = []

    def comparison(*_a: Any, **_k: Any) -> list[str]:
        calls.append(1)
        if len(calls) == 1:
            release.wait(HOLD_S)
            return ["older comparison"]
        return ["newer comparison"]

    real = cost_mod.CostPane._others_read

    def others_read(self: Any, generation: int, others: list[str]) -> None:
        shown.append(others)
        real(self, generation, others)

    monkeypatch.setattr(compare, "folder_comparison_lines", comparison)
    monkeypatch.setattr(cost_mod.CostPane, "_others_read", others_read)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await background_started(app)
        await pilot.press("6")
        await rounds_until(pilot, lambda: len(calls) == 1)
        app.screen.pane("cost").reload()  # as after a run
        await rounds_until(pilot, lambda: ["newer comparison"] in shown)
        release.set()
        await rounds_until(pilot, lambda: len(shown) == 2)
        await workers_done(pilot, app)
        out = text_of(app, "#cost-report")
        assert "newer comparison" in out and "older comparison" not in out


def _visuals(session: Any, tmp_path: Any, n: int, approved: int) -> Any:
    from gpusession.core.folder.approvals import decide
    from gpusession.core.folder.unit import set_unit

    set_unit(session, "visual")
    out = tmp_path / "out"
    out.mkdir()
    paths = []
    for i in range(n):
        p = out / f"visual-{i:02d}.png"
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
        paths.append(p)
    decide(session, paths[:approved], decision="approved", by="Ana")
    return out


async def test_s9_a_reload_of_the_validation_pane_reads_approvals_once(
        session: Any, make_app: MakeApp, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One reload parses ``approvals.toml`` once (the folder, the decisions and the count
    from the same parse) and hashes each file once."""
    from gpusession.core.folder import approvals

    _visuals(session, tmp_path, 4, 3)
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        parsed: list[str] = []
        hashed: list[str] = []
        real_read, real_hash = approvals.read_toml, approvals.sha256_file
        monkeypatch.setattr(approvals, "read_toml", lambda p, *a, **k: parsed.append(p.name) or real_read(p, *a, **k))
        monkeypatch.setattr(approvals, "sha256_file", lambda p, *a, **k: hashed.append(p.name) or real_hash(p, *a, **k))
        app.screen.pane("validation").reload()
        await workers_done(pilot, app)
        assert parsed == ["approvals.toml"]
        assert sorted(hashed) == ["visual-00.png", "visual-01.png", "visual-02.png"]  # the decided ones
        assert app.screen.query_one("#deliv-table", DataTable).row_count == 4


async def test_s9_a_decision_changes_its_row_not_the_table(
        session: Any, make_app: MakeApp, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Approving a file in the pane updates that row in place: the table keeps its rows
    (the same row keys), the cursor stays, the count follows from the worker."""
    monkeypatch.setattr(deliv_mod, "CHUNK_ROWS", 2)  # five rows: added in three turns
    _visuals(session, tmp_path, 5, 2)
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await workers_done(pilot, app)
        t = app.screen.query_one("#deliv-table", DataTable)
        assert [str(t.get_row_at(i)[0]) for i in range(t.row_count)] == [f"visual-{i:02d}.png" for i in range(5)]
        keys = list(t.rows)
        t.focus()
        t.move_cursor(row=3)
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#field-by", Input).value = "Bo"
        await pilot.press("ctrl+s")
        await workers_done(pilot, app)
        assert list(t.rows) == keys and t.cursor_row == 3
        assert [str(c) for c in t.get_row_at(3)][:3] == ["visual-03.png", "approved", "Bo"]
        assert str(t.get_row_at(4)[1]) == "still to decide"
        assert "3 approved visuals" in text_of(app, "#deliv-status")


async def test_s9_a_refused_decision_made_in_a_worker_keeps_the_form_open(
        session: Any, make_app: MakeApp, tmp_path: Any) -> None:
    """The decision is recorded off the event loop; its refusal is said in the form, as before."""
    from gpusession.core.folder.approvals import load_approvals

    _visuals(session, tmp_path, 2, 1)
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        t = app.screen.query_one("#deliv-table", DataTable)
        t.focus()
        t.move_cursor(row=1)
        await pilot.press("j")
        await pilot.pause()
        app.screen.query_one("#field-by", Input).value = "Bo"  # no reason: refused
        await pilot.press("ctrl+s")
        await workers_done(pilot, app)
        assert "Not saved:" in str(app.screen.query_one("#form-error", Static).render())
        assert "visual-01.png" not in load_approvals(session)


async def test_run_pane_says_counting_until_its_read_comes_back(
        session: Any, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Run pane's first read runs in a worker: "counting …" meanwhile, keys answer."""
    release = threading.Event()
    real = run_load.read_summary

    def slow(*a: Any) -> Any:
        release.wait(HOLD_S)
        return real(*a)

    monkeypatch.setattr(run_load, "read_summary", slow)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await background_started(app)
        await pilot.press("2")
        await pilot.pause()
        assert text_of(app, "#run-chart-label") == run_summary.COUNTING
        await pilot.press("1")  # the loop is free
        await pilot.pause()
        assert app.screen.query_one("#panes").active == "checklist"
        release.set()
        await workers_done(pilot, app)
        assert text_of(app, "#run-chart-label") != run_summary.COUNTING
        assert not app.screen.pane("run").loaded or app.screen.pane("run").experiment_id == "batch-sweep"


async def test_v1_a_reload_after_a_run_adds_its_rows_and_keeps_the_others(
        session: Any, make_app: MakeApp) -> None:
    """After a run the Validation pane adds the new rows; the rows shown stay (same row
    keys, the cursor where it was). A changed row, or a second experiment (each run's cell
    then names its experiment), writes the table again."""
    from gpusession.core.records.results import ResultRow

    def row(i: int, experiment: str = "batch-sweep") -> ResultRow:
        return ResultRow(experiment_id=experiment, variant_id="batch-1", phase="warm", run_index=i,
                         corpus_revision="c1", corpus_accepted=True)

    for i in (1, 2):
        session.results.append(row(i))
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        val = app.screen.pane("validation")
        t = app.screen.query_one("#val-table", DataTable)
        keys = list(t.rows)
        t.move_cursor(row=1)
        session.results.append(row(3))
        val.reload()
        await workers_done(pilot, app)
        assert t.row_count == 3 and list(t.rows)[:2] == keys and t.cursor_row == 1
        session.results.append(row(1, "other-exp"))
        val.reload()
        await workers_done(pilot, app)
        assert t.row_count == 4 and not set(keys) & set(t.rows)
        assert "batch-sweep" in str(t.get_row_at(0)[0])
