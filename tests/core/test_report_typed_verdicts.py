"""The report's verdicts table names a rejected run's failed checks from their typed tables (A1, V1)."""

from __future__ import annotations

from gpusession.core.folder.session import Session
from gpusession.core.retrieval.report import _validation

REPORT = """schema = 1
corpus_accepted = false
verdict = "{verdict}"

[ids]
passed = false

[format]
passed = true

[quality]
passed = false
value = 0.5

[overlap]
passed = true
checked = true
"""


def test_v1_a1_a_rejected_runs_failed_checks_come_from_the_check_tables_not_the_verdict_words(
        session: Session) -> None:
    where = session.validation_dir / "e" / "batch-1"
    where.mkdir(parents=True)
    (where / "warm-1.toml").write_text(REPORT.format(verdict="corpus REJECTED: IDs, quality failed"))
    (where / "warm-2.toml").write_text(REPORT.format(verdict="reworded: nothing to find here"))
    text = " ".join(_validation(session, session.results.read()))
    assert "REJECTED (IDs, quality failed)" in text
    assert "2 runs of e" in text  # the same typed verdict, whatever the words: one line
    assert "reworded" not in text


def test_s1_a1_the_need_unwritten_is_known_from_the_stage_1_items_not_from_its_sentence(session: Session) -> None:
    """No stage-1 note: one sentence in the tail; a note written: the need as a list, the sentence gone."""
    from gpusession.core.retrieval import checklist as cl
    from gpusession.core.retrieval.report import _need_and_decision

    items = cl.load_checklist(session)
    blank = " ".join(_need_and_decision(items, {i.id: i for i in items}, session))
    assert "_No need or criteria written yet" in blank
    first = next(i for i in items if i.stage == 1)
    cl.set_note(session, first.id, "classify 1,000 texts, macro-F1 at least 0.9")
    items = cl.load_checklist(session)
    said = _need_and_decision(items, {i.id: i for i in items}, session)
    assert said[0].startswith("- **") and "macro-F1 at least 0.9" in " ".join(said)
    assert "_No need or criteria written yet" not in " ".join(said)
