"""What ``run --resume`` still has to measure, from the journal's schedule and the CSV's rows."""

from __future__ import annotations

import pytest

from gpusession.core.events import ExperimentStartedRecord
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.resume import resume_plan, scheduled_run
from gpusession.core.records.results import ResultRow, rows_frame

SHUFFLED = ["cold:batch-1:1", "cold:batch-2:1", "warm:batch-2:1", "warm:batch-1:1",
            "warm:batch-1:2", "warm:batch-2:2"]


def _measured(*rows: ResultRow) -> set[tuple[str, str, int]]:
    from gpusession.core.folder.resume import measured_slots

    return measured_slots(rows_frame(rows), "e")


def test_resume_plan_keeps_the_stored_order_and_skips_measured_runs() -> None:
    records = [ExperimentStartedRecord(experiment_id="e", runs=SHUFFLED)]
    measured = _measured(
        ResultRow(experiment_id="e", phase="cold", variant_id="batch-1", run_index=1, elapsed_seconds=1.0),
        ResultRow(experiment_id="e", phase="warm", variant_id="batch-2", run_index=1, elapsed_seconds=1.0),
        # an incident row: the run is measured again
        ResultRow(experiment_id="e", phase="cold", variant_id="batch-2", run_index=1, notes="incident: cut"),
        ResultRow(experiment_id="other", phase="warm", variant_id="batch-1", run_index=1, elapsed_seconds=1.0),
        ResultRow(experiment_id="e", phase="load", variant_id="all", run_index=1, elapsed_seconds=1.0),
    )
    plan = resume_plan(records, measured, "e")
    assert [r.run_key for r in plan.missing] == [SHUFFLED[1], *SHUFFLED[3:]]
    assert plan.attempt == 1 and plan.measured == 2
    assert [r.worker for r in plan.missing] == ["cold-batch-2-1", "warm", "warm", "warm"]
    assert plan.words().startswith("resuming attempt 1 of e at cold:batch-2:1: 4 of 6 runs missing, "
                                   "the 2 measured stand; a new worker loads and warms up again")


def test_resume_plan_continues_the_newest_plain_run_not_a_resume() -> None:
    records = [ExperimentStartedRecord(experiment_id="e", runs=["warm:batch-1:1"]),
               ExperimentStartedRecord(experiment_id="e", runs=SHUFFLED),
               ExperimentStartedRecord(experiment_id="e", runs=SHUFFLED[4:], resumes=2)]
    plan = resume_plan(records, set(), "e")
    assert plan.attempt == 2 and [r.run_key for r in plan.scheduled] == SHUFFLED


def test_resume_plan_says_nothing_to_resume_or_never_run() -> None:
    plan = resume_plan([ExperimentStartedRecord(experiment_id="e", runs=SHUFFLED[:1])],
                       {("cold", "batch-1", 1)}, "e")
    assert not plan.missing and plan.nothing_words() == "nothing to resume: the one run of e is measured"
    with pytest.raises(BadInput, match="e has never run; start it with `gpusession run s --experiment e"):
        resume_plan([ExperimentStartedRecord(experiment_id="f", runs=SHUFFLED)], set(), "e", "s")
    with pytest.raises(BadInput):
        scheduled_run("load:all:1")
