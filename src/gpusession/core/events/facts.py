"""What the journal says about a session's runs, for the summary table (R7, S7).

Why it exists: the summary (:mod:`gpusession.core.records.summary`, a lower floor that
cannot import the record classes) shows rows of an attempt that never measured
anything apart, and says when an experiment's newest run did not run all it scheduled;
both facts come from the journal's typed records, read here once. Who calls it:
:meth:`gpusession.core.folder.session.Session.journal_facts`, which
:func:`gpusession.core.records.summary.session_summary` asks for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpusession.core.events.base import Event
from gpusession.core.events.records import (
    AttemptFailedRecord,
    ExperimentEndedRecord,
    ExperimentIncompleteRecord,
    ExperimentStartedRecord,
    IncidentRecord,
    RunFinishedRecord,
)
from gpusession.core.records.summary import UNFINISHED_KIND


@dataclass(frozen=True)
class JournalFacts:
    """The journal's facts the summary table needs (R7, D5).

    Attributes:
        failed_attempts: ``{run key → attempt number}`` of rows that belong to an
            attempt that never measured anything (:func:`failed_attempts`).
        unfinished_words: ``{experiment id → "2 of 10 runs done, the run did not finish"}``.
        unfinished_groups: per such experiment, the ``(variant, phase)`` groups its
            newest run scheduled and did not finish.
    """

    failed_attempts: dict[str, int] = field(default_factory=dict)
    unfinished_words: dict[str, str] = field(default_factory=dict)
    unfinished_groups: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)


def failed_attempts(records: Iterable[Event]) -> dict[str, int]:
    """Run keys of rows that belong to an attempt that never measured anything (R7).

    Args:
        records: typed journal records (:func:`gpusession.core.events.reading.read_records`).

    Returns:
        ``{run key → attempt number}`` from the ``attempt_failed`` records: the rows
        stay in the CSV (C1), the summary shows them apart (attempt 1 when unnumbered).
    """
    out: dict[str, int] = {}
    for r in records:
        if isinstance(r, AttemptFailedRecord):
            for key in r.run_keys:
                out[str(key)] = r.attempt if r.attempt is not None else 1
    return out


def unfinished(records: Sequence[Event]) -> dict[str, tuple[str, frozenset[tuple[str, str]]]]:
    """Experiments whose newest run did not run all it scheduled: words and groups left (S7).

    The newest ``experiment_started`` of the experiment, then either no end record after
    it and the :data:`~gpusession.core.records.summary.UNFINISHED_KIND` incident crash
    recovery recorded after it ("the run did not finish"), or an
    ``experiment_incomplete`` end with scheduled runs left ("the run was cancelled" /
    "the run stopped before the end": a hang-up, a SIGTERM).

    Args:
        records: typed journal records, oldest first.

    Returns:
        ``{experiment id → ("2 of 10 runs done, the run did not finish", groups)}``
        where ``groups`` are the ``(variant, phase)`` pairs scheduled and not finished;
        a run still going (no end, no such incident yet) and a run that ran all it
        scheduled are not in it.
    """
    newest: dict[str, int] = {}
    for i, r in enumerate(records):
        if isinstance(r, ExperimentStartedRecord) and r.experiment_id is not None:
            newest[r.experiment_id] = i
    out: dict[str, tuple[str, frozenset[tuple[str, str]]]] = {}
    for exp_id, start in newest.items():
        head = records[start]
        assert isinstance(head, ExperimentStartedRecord)
        after = records[start + 1:]
        end = next((r for r in after if isinstance(r, ExperimentEndedRecord)
                    and r.experiment_id in (None, exp_id)), None)
        if end is not None:  # ended: said when it stopped before its scheduled runs were done
            if not isinstance(end, ExperimentIncompleteRecord):
                continue
            how = "the run was cancelled" if end.cancelled else "the run stopped before the end"
        elif any(isinstance(r, IncidentRecord) and r.kind == UNFINISHED_KIND
                 and r.experiment_id == exp_id for r in after):
            how = "the run did not finish"  # recovery said so: its process was killed
        else:
            continue  # still running, or killed and not recovered yet
        finished = {(r.phase, r.variant_id, r.run_index) for r in after
                    if isinstance(r, RunFinishedRecord) and r.experiment_id == exp_id}
        scheduled = [str(k).split(":") for k in head.runs]
        missing = frozenset((k[1], k[0]) for k in scheduled if len(k) == 3 and (
            k[0], k[1], int(k[2]) if k[2].isdigit() else k[2]) not in finished)
        if end is not None and not missing:
            continue  # every scheduled run has its row
        out[exp_id] = (f"{len(finished)} of {len(scheduled)} runs done, {how}", missing)
    return out


def journal_facts(records: Sequence[Event]) -> JournalFacts:
    """:class:`JournalFacts` of ``records`` (typed, oldest first), read once."""
    left = unfinished(records)
    return JournalFacts(failed_attempts(records), {e: w for e, (w, _) in left.items()},
                        {e: g for e, (_, g) in left.items()})


__all__ = ["JournalFacts", "failed_attempts", "journal_facts", "unfinished"]
