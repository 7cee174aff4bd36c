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
