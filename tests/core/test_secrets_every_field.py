"""Every kind of secret through every field that stores or shows text: none kept, none echoed (H-35).

The fields: a row's ``notes`` in ``resultats-bruts.csv``, a journal incident (message and
trace) and a worker's stderr lines, ``report.md``, a checklist note, an order note, a
payment destination, and the line the terminal and the TUI's toast show for an incident.
What a program wrote is masked; what a person types is refused without being repeated.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from secret_payloads import PAYLOADS  # noqa: E402

from gpusession.core.events import IncidentRecord, IncidentReported, WorkerStderrRecord, describe  # noqa: E402
from gpusession.core.files.errors import BadInput  # noqa: E402
from gpusession.core.files.textio import printable  # noqa: E402
from gpusession.core.folder import journal  # noqa: E402
from gpusession.core.folder.session import Session  # noqa: E402
from gpusession.core.money import order  # noqa: E402
from gpusession.core.records.results import ResultRow  # noqa: E402
from gpusession.core.retrieval import checklist  # noqa: E402
from gpusession.core.retrieval.report import render_report  # noqa: E402

KINDS = sorted(PAYLOADS)
#: The fields each payload goes through (the count in the report of this change).
FIELDS = ("csv notes", "journal incident", "journal stderr lines", "report.md",
          "checklist note", "order note", "payment destination", "terminal and toast line")


def _leaks(text: str) -> list[str]:
    return [f"{kind}: {part[:12]}…" for kind in KINDS for part in PAYLOADS[kind][1] if part in text]


def _row(i: int, notes: str) -> ResultRow:
    return ResultRow(experiment_id="e", variant_id="b1", phase="warm", run_index=i + 1,
                     notes=f"incident: failed: ValueError: {notes}")


@pytest.mark.parametrize("batch", range(0, len(KINDS), 10))
def test_h35_no_payload_is_kept_in_the_csv_the_journal_or_the_report(session: Session, batch: int) -> None:
    kinds = KINDS[batch:batch + 10]  # the report says 12 different notes and 30 incidents at most
    for i, kind in enumerate(kinds):
        text = PAYLOADS[kind][0]
        session.results.append(_row(i, text))
        journal.append(session.journal_path, IncidentRecord(message=f"worker w1: {text}", trace=text))
        journal.append(session.journal_path, WorkerStderrRecord(worker="w1", lines=text.splitlines()))
    csv_text = session.results.path.read_text(encoding="utf-8")
    journal_text = session.journal_path.read_text(encoding="utf-8")
    report = render_report(session)
    for where, text in (("csv", csv_text), ("journal", journal_text), ("report", report)):
        assert _leaks(text) == [], where
    assert csv_text.count("[HIDDEN: ") >= len(kinds)
    assert "Incidents recorded in the journal" in report  # the rows' incident notes said there, once
    rows = session.results.rows()
    assert len(rows) == len(kinds) and all("incident: failed: ValueError: " in (r.notes or "")
                                           for r in rows)


@pytest.mark.parametrize("kind", KINDS)
def test_h35_a_person_typing_a_payload_is_refused_and_never_echoed(session: Session, kind: str) -> None:
    text, never = PAYLOADS[kind]
    before = {p.name: p.read_bytes() for p in session.folder.iterdir() if p.is_file()}
    now = session.package.start if session.package else None
    attempts = [
        lambda: checklist.set_note(session, checklist.load_checklist(session)[0].id, text),
        lambda: order.record_event(session, "payment-sent", source="you", note=text),
        lambda: order.new_payment_order(session, asset="USDT", network="TRC20", amount="55.00",
                                        destination=text,
                                        expires_at=(now or order.utcnow()) + timedelta(days=30),
                                        now=now),
    ]
    for attempt in attempts:
        with pytest.raises(BadInput) as exc:
            attempt()
        said = str(exc.value)
        assert "refused" in said and not any(part in said for part in never), said
    after = {p.name: p.read_bytes() for p in session.folder.iterdir() if p.is_file()}
    assert after == before


@pytest.mark.parametrize("kind", KINDS)
def test_h35_the_terminal_and_toast_line_of_an_incident_is_masked(kind: str) -> None:
    text, never = PAYLOADS[kind]
    line = printable(describe(IncidentReported(message=f"worker w1: ValueError: {text}")) or "")
    assert line.startswith("incident: worker w1: ValueError: ")
    assert not any(part in line for part in never)
    assert "[HIDDEN: " in line
