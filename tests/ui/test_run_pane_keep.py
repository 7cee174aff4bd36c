"""The Run pane names what to keep, offers the key the state needs first (read at 80×24).

The report's Keep line shows in the Run pane and beside the Cost pane's cost per
deliverable, noise words first when no variant is faster beyond noise (D5, D7); after a
cut-short run ``u`` (resume) comes before ``r`` in the status line and the footer; a run
refused past the session limit reads "not started: …" with the pane's key (D1).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ui.pilot import SIZE, MakeApp, settle

from gpusession.core.copyhome.limit import set_limit
from gpusession.core.events import ExperimentStartedRecord
from gpusession.core.records.results import ResultRow
from gpusession.testing import FIXED_NOW, FakeRunner

COMMON: dict[str, Any] = dict(experiment_id="batch-sweep", corpus_revision="c@1", quality_metric="macro_f1",
                              quality_threshold=0.9, quality_tolerance=0.0)
#: interleaved times: batch-4 has the lower median, not beyond noise (p = 0.69 with 5 runs)
TIMES = {"batch-1": [1.1, 1.3, 1.5, 1.7, 1.9], "batch-4": [1.0, 1.2, 1.4, 1.6, 1.8]}


def _measured(session: Any, times: dict[str, list[float]] = TIMES, cut_short: bool = False) -> None:
    keys = [f"warm:{v}:{i}" for i in range(1, 6) for v in ("batch-1", "batch-4", "batch-8")]
    session.journal(ExperimentStartedRecord(experiment_id="batch-sweep", runs=keys))
    for i in range(5):
        for variant, values in times.items():
            session.results.append(ResultRow(**COMMON, variant_id=variant, phase="warm", run_index=i + 1,
                                             elapsed_seconds=values[i], ids_match=True, format_valid=True,
                                             quality_value=0.95, corpus_accepted=True))
    if not cut_short:
        from gpusession.core.events import ExperimentFinishedRecord

        session.journal(ExperimentFinishedRecord(experiment_id="batch-sweep", runs_done=len(keys),
                                                 runs_scheduled=len(keys)))


def _screen(app: Any) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def _joined(lines: list[str]) -> str:
    """The screen's words with the line breaks of wrapping taken out."""
    return " ".join(" ".join(line.split()) for line in lines)


async def test_d7_run_pane_shows_keep_with_noise_words_first_at_80x24(session: Any, make_app: MakeApp) -> None:
    _measured(session)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.2)
        lines = _screen(app)
        assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
        text = _joined(lines)
        assert ("Keep: none is faster beyond noise with 5 runs (p = 0.69); batch-4 of batch-sweep has the "
                "lowest warm median, 1.40 s") in text, "\n".join(lines)


async def test_d5_run_pane_names_the_variant_faster_beyond_noise(session: Any, make_app: MakeApp) -> None:
    _measured(session, {"batch-1": [2.0, 2.1, 2.2, 2.3, 2.4], "batch-4": [1.0, 1.1, 1.2, 1.3, 1.4]})
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.2)
        text = _joined(_screen(app))
        assert "Keep: batch-4 of batch-sweep, warm median 1.20 s; 1.8× faster than batch-1, beyond noise" in text
        assert "none is faster" not in text


async def test_d7_cost_pane_says_keep_beside_the_cost_per_deliverable(session: Any, make_app: MakeApp) -> None:
    _measured(session)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await pilot.pause(0.2)
        lines = app.screen.pane("cost").lines
        at = next(i for i, line in enumerate(lines) if "per accepted deliverable" in line)
        assert lines[at + 1].startswith("Keep: none is faster beyond noise with 5 runs (p = 0.69); batch-4"), lines


async def test_after_a_cut_short_run_resume_is_offered_first(session: Any, make_app: MakeApp) -> None:
    _measured(session, cut_short=True)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.2)
        lines = _screen(app)
        text = _joined(lines)
        assert "incomplete; u: resume, r: a new attempt" in text and "r: run again" not in text, text
        footer = lines[-1].split()
        assert footer[:4] == ["u", "Resume", "r", "Run"], lines[-1]
        # a run just cancelled here reads its outcome above; it still offers resume first
        run_pane = app.screen.pane("run")
        run_pane.last_outcome = "run cancelled at a run boundary — partial result, marked incomplete"
        assert run_pane.footer_actions()[:2] == ("resume", "start"), run_pane.footer_actions()
        run_pane.last_outcome = "not started: past the session limit"  # the words alone decide nothing (A1)
        assert run_pane.footer_actions()[:2] == ("resume", "start"), run_pane.footer_actions()
        run_pane.refused_past_limit = True  # as the run's end (RunFinished) types a refusal past the limit
        assert run_pane.footer_actions()[0] == "start_anyway", run_pane.footer_actions()


async def test_d1_a_refusal_past_the_limit_reads_not_started_with_the_key(session: Any,
                                                                         make_app: MakeApp) -> None:
    set_limit(session, at=FIXED_NOW - timedelta(hours=1))
    started: list[str] = []

    def factory(s: Any, exp_id: str, on_event: Any, cancel: Any, **kw: bool) -> FakeRunner:
        started.append(exp_id)
        return FakeRunner(s, exp_id, on_event, cancel)

    app = make_app(runner_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        await pilot.press("r")
        await settle(pilot, app)
        await pilot.pause(0.2)
        lines = _screen(app)
        text = _joined(lines)
        assert "not started: past the session limit" in text and "R: run anyway" in text, text
        assert "run failed" not in text and "PastLimit" not in text and "--past-limit" not in text
        assert session.results.rows() == []  # nothing ran
        assert lines[-1].split()[:3] == ["R", "Run", "anyway"], lines[-1]


async def test_d1_a_limit_set_from_another_shell_counts_at_the_next_start(session: Any,
                                                                         make_app: MakeApp) -> None:
    from gpusession.core.folder.session import Session

    app = make_app(runner_factory=lambda s, e, on, c, **kw: FakeRunner(s, e, on, c))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        other_shell = Session.open(session.folder.parent, session.name)
        set_limit(other_shell, at=FIXED_NOW - timedelta(hours=1))
        await pilot.press("r")
        await settle(pilot, app)
        await pilot.pause(0.2)
        assert "not started: past the session limit" in _joined(_screen(app))
        assert session.results.rows() == []


async def test_d1_the_run_pane_says_the_time_left_as_headless_run_does(session: Any,
                                                                     make_app: MakeApp) -> None:
    app = make_app(runner_factory=FakeRunner.factory())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "r")
        await settle(pilot, app)
        pane = app.screen.pane("run")
        assert not pane.running and len(pane.rows) > 0
        assert "experiment done" in pane.time_left_text and "before the session limit" in pane.time_left_text
