"""The results row of an accept rule agrees with the cost (K4, S10, C3, A4; docs/session-folder.md).

A rule's row says its output's verdict in ``corpus_accepted`` and leaves
``accepted_unique_corpora`` empty (the seed's column counts corpora; a rule's
deliverables are counted in the session's unit by ``cost``), never ``0`` beside ``true``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli, run_rule_experiment

from gpusession.core.folder.session import Session
from gpusession.core.records.kinds import ACCEPT_RULE
from gpusession.core.records.results import ResultRow, ResultsFile
from gpusession.core.records.summary import accepted_revisions, corpora_cell

#: Reads the clock (package window and cost): run again a year ahead and a month back (A6).
pytestmark = pytest.mark.calendar


def test_k4_corpora_cell_counts_distinct_corpora_on_a_corpus_row() -> None:
    assert corpora_cell("macro_f1", {"c1", "c2"}) == 2
    assert corpora_cell(None, set()) == 0  # a corpus row of a session with nothing accepted: a measured 0


def test_s10_corpora_cell_is_empty_on_a_rule_row_whatever_the_corpora() -> None:
    assert ACCEPT_RULE.row_marker is not None
    assert corpora_cell(ACCEPT_RULE.row_marker, set()) is None
    assert corpora_cell(ACCEPT_RULE.row_marker, {"c1"}) is None  # never the corpora of another experiment


def test_a4_c3_a_rule_row_written_empty_reads_back_empty_and_an_old_zero_still_reads(tmp_path: Path) -> None:
    """The writer's empty cell reads back empty; a row written before (``0``) still reads, unchanged."""
    f = ResultsFile(tmp_path / "resultats-bruts.csv")
    rule = dict(experiment_id="render", phase="warm", corpus_accepted=True, quality_metric=ACCEPT_RULE.row_marker)
    f.append(ResultRow(variant_id="batch-1", run_index=1, accepted_unique_corpora=None, **rule))
    f.append(ResultRow(variant_id="batch-1", run_index=2, accepted_unique_corpora=0, **rule))  # an older folder's row
    text = (tmp_path / "resultats-bruts.csv").read_text()
    assert ",accept-rule,,,,true," in text  # no threshold, no tolerance, no value for a rule (C3)
    frame = f.read()
    assert frame["accepted_unique_corpora"].to_list() == [None, 0]
    assert frame["corpus_accepted"].to_list() == [True, True]
    assert accepted_revisions(frame) == set()  # neither is a corpus: the cost counts the rule's files


@pytest.mark.slow
def test_s10_k4_a_rule_experiments_rows_agree_with_the_cost(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    run_rule_experiment(capsys, sessions_root, session)
    frame = session.results.read()
    judged = frame.filter(frame["corpus_accepted"].is_not_null())
    assert judged.height >= 4
    for row in judged.iter_rows(named=True):
        assert row["corpus_accepted"] is True and row["quality_metric"] == ACCEPT_RULE.row_marker
        assert row["accepted_unique_corpora"] is None  # never 0 beside an accepted output
        assert row["quality_threshold"] is None and row["quality_tolerance"] is None
        assert row["notes"].endswith("tolerance=none (accepted by a rule, no quality threshold)")
        assert "None" not in row["notes"] and "below threshold" not in row["notes"]
    code, out, err = cli(capsys, sessions_root, "cost", session.name, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["accepted_count"] == 3  # the three distinct files the rule accepted, counted by cost
    # A4: the same rows as an older gpusession wrote them (0 beside true) still read, and count the same
    csv = session.folder / "resultats-bruts.csv"
    lines = csv.read_text().splitlines(keepends=True)
    old = [lines[0]] + [ln.replace(",7,1,5500,,", ",7,1,5500,0,", 1) for ln in lines[1:]]
    assert sum(",7,1,5500,0," in ln for ln in old) >= 4
    csv.write_text("".join(old))
    assert session.results.read()["accepted_unique_corpora"].drop_nulls().to_list().count(0) >= 4
    code, out, err = cli(capsys, sessions_root, "cost", session.name, "--json")
    assert code == 0 and json.loads(out)["accepted_count"] == 3, err
    code, out, err = cli(capsys, sessions_root, "show", session.name)
    assert code == 0, err
