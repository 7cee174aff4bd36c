"""The verdict travels with every summary; a row's completeness words are its attempt's (D5).

H-29: a command workload that labels every text ``a`` on a two-class corpus, threshold
0.9: the run end, ``show`` and the report say REJECTED with the reason, ``run`` exits 3.
H-30: an experiment run to the end, then again and cancelled: the first attempt's rows
still read complete, only the second attempt is said cancelled.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_workloads import write_corpus
from helpers import cli

from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.records.summary import session_summary, summary_rows

LABEL_A = """\
import json, sys
corpus, output = sys.argv[1], sys.argv[2]
with open(corpus) as src, open(output, "w") as out:
    for line in src:
        if line.strip():
            out.write(json.dumps({"id": json.loads(line)["id"], "label": "a"}) + "\\n")
"""

REASON = "REJECTED (quality 0.333 below the floor 0.9)"  # no tolerance chosen (V5): the floor is the threshold


def test_h29_every_summary_says_rejected_with_its_reason_and_run_exits_3(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    write_corpus(session.folder / "corpus.jsonl", n=8)
    script = session.folder / "label_a.py"
    script.write_text(LABEL_A)
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "kw",
                       "--workload", "command", "--values", "1", "--runs", "2", "--warmup", "0",
                       "--cold-runs", "0", "--corpus", "corpus.jsonl", "--classes", "a,b",
                       "--threshold", "0.9",
                       "--command", f"{sys.executable} {script} {{corpus}} {{output}}")
    assert code == 0, err
    # the whole batch (the first-result stop, D3, is tested on its own)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--continue-on-reject")
    assert code == 3, out[-3000:] + err[-2000:]
    end = out.strip().splitlines()[-1]
    assert "variants: 0 accepted, 1 REJECTED" in end and "exit 3" in end, end
    assert REASON in out and "experiment complete, no incident (exit 0)" not in out
    code, shown, _ = cli(capsys, sessions_root, "show", session.name)
    assert code == 0 and REASON in shown, shown
    data = json.loads(cli(capsys, sessions_root, "show", session.name, "--json")[1])
    warm = [r for r in data["summary"] if r["phase"] == "warm"]
    assert warm and all(r["verdict"] == REASON for r in warm)
    assert cli(capsys, sessions_root, "report", session.name)[0] == 0
    results = (session.folder / "report.md").read_text(encoding="utf-8").split("## 1.")[1].split("## 2.")[0]
    assert f"| {REASON} |" in results, results


def _rows(s: Session, attempt_runs: list[str], *, cancelled_after: int | None = None) -> None:
    """One attempt of experiment ``e``: its start, each run's row and record, its end."""
    s.journal("experiment_started", experiment_id="e", runs=attempt_runs)
    done = attempt_runs if cancelled_after is None else attempt_runs[:cancelled_after]
    for key in done:
        phase, variant, index = key.split(":")
        s.results.append(ResultRow(experiment_id="e", variant_id=variant, phase=phase,
                                   run_index=int(index), elapsed_seconds=1.0, ids_match=True,
                                   format_valid=True, quality_metric="macro_f1", quality_value=0.95,
                                   quality_threshold=0.9, quality_tolerance=0.0, corpus_accepted=True))
        s.journal("run_finished", run_key=f"e:{key}", experiment_id="e", variant_id=variant,
                  phase=phase, run_index=int(index), ok=True)
    if cancelled_after is None:
        s.journal("experiment_finished", experiment_id="e", runs_done=len(done),
                  runs_scheduled=len(attempt_runs))
    else:
        s.journal("experiment_incomplete", experiment_id="e", runs_done=len(done),
                  runs_scheduled=len(attempt_runs), cancelled=True)


def test_h30_a_cancelled_second_attempt_says_so_about_itself_only(session: Session) -> None:
    first = [f"warm:v{v}:{i}" for i in range(1, 7) for v in (1, 2, 3)]  # 18 runs
    _rows(session, first)
    assert {r.outcome_words() for r in session_summary(session)} == {"all measured"}
    second = [f"warm:v{v}:{i}" for i in range(7, 13) for v in (1, 2, 3)]
    _rows(session, second, cancelled_after=2)  # v1 and v2 got one more run each
    words = {r.variant_id: r.outcome_words() for r in session_summary(session)}
    said = "attempt 2: 2 of 18 runs done, the run was cancelled"
    assert words == {"v1": said, "v2": said, "v3": "all measured"}  # v3: only attempt 1's rows
    assert not any("0 of 18" in w or "attempt 1" in w for w in words.values())
    from gpusession.commands.summary_table import format_summary

    rows = session_summary(session)
    assert {r.attempts_pooled for r in rows} == {2}  # the summary says how many attempts it pools
    assert "e: the runs of 2 attempts pooled" in format_summary(rows)


def test_h30_a_failed_attempt_that_wrote_nothing_never_relabels_a_complete_one(session: Session) -> None:
    first = [f"warm:v1:{i}" for i in range(1, 19)]
    _rows(session, first)
    session.journal("experiment_started", experiment_id="e", runs=[f"warm:v1:{i}" for i in range(19, 37)])
    session.journal("experiment_incomplete", experiment_id="e", runs_done=0, runs_scheduled=18,
                    cancelled=False)
    assert [r.outcome_words() for r in session_summary(session)] == ["all measured"]


def test_d5_a_run_that_recorded_every_row_is_not_said_unfinished(session: Session) -> None:
    """A full disk at the end: all 33 rows recorded, the end record lost, recovery said so."""
    runs = [f"warm:v1:{i}" for i in range(1, 34)]
    session.journal("experiment_started", experiment_id="e", runs=runs)
    for key in runs:
        _, variant, index = key.split(":")
        session.results.append(ResultRow(experiment_id="e", variant_id=variant, phase="warm",
                                         run_index=int(index), elapsed_seconds=1.0))
        session.journal("run_finished", run_key=f"e:{key}", experiment_id="e", variant_id=variant,
                        phase="warm", run_index=int(index), ok=True)
    session.journal("incident", experiment_id="e", kind="run_did_not_finish", message="did not finish")
    assert [r.outcome_words() for r in session_summary(session)] == ["all measured"]


@pytest.mark.parametrize(("fields", "verdict"), [
    ({"ids_match": True, "format_valid": True, "quality_value": 0.95, "corpus_accepted": True},
     "accepted"),
    ({"expected_ids": 1000, "observed_ids": 700, "ids_match": False, "format_valid": True,
      "quality_value": 0.95, "corpus_accepted": False}, "REJECTED (ids: at least 300 missing)"),
    ({"ids_match": True, "format_valid": False, "quality_value": 0.95, "corpus_accepted": False},
     "REJECTED (format invalid)"),
    ({"ids_match": True, "format_valid": True, "quality_value": 0.8999, "corpus_accepted": False},
     "REJECTED (quality 0.8999 below the floor 0.9 − 0.0)"),
    ({}, "not validated"),
])
def test_d5_verdict_words_beside_the_times(tmp_path: Path, fields: dict[str, object], verdict: str) -> None:
    from gpusession.core.records.results import ResultsFile

    f = ResultsFile(tmp_path / "r.csv")
    f.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1,
                       elapsed_seconds=0.1, quality_metric="macro_f1", quality_threshold=0.9,
                       quality_tolerance=0.0, **fields))  # type: ignore[arg-type]
    [row] = summary_rows(f.read())
    assert row.verdict_words() == verdict
    assert row.outcome_words() == "all measured"  # the measurement's words stay apart


def test_d5_run_exit_precedence() -> None:
    from types import SimpleNamespace

    from gpusession.commands.run_cmds import run_exit_code

    def outcome(**kw: object) -> SimpleNamespace:
        return SimpleNamespace(**{"interrupted": None, "completed": True, "incidents": [], **kw})

    assert run_exit_code(outcome(), 0) == 0
    assert run_exit_code(outcome(completed=False), 0) == 1
    assert run_exit_code(outcome(completed=False, incidents=["x"]), 1) == 3  # rejected > incomplete
    assert run_exit_code(outcome(interrupted="SIGTERM"), 1) == 143  # a signal first


def test_r7_a_run_whose_every_run_failed_never_ends_as_complete(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """Every command exits 1: the end says "every run failed", not "complete, with 2 incidents"."""
    from gpusession.commands.run_cmds import outcome_words
    from gpusession.ui.panes.run import outcome_words as pane_words

    write_corpus(session.folder / "corpus" / "eval.jsonl", n=4, words=3)
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "bad",
                       "--workload", "command", "--values", "1,2", "--runs", "1", "--warmup", "0",
                       "--cold-runs", "0", "--corpus", "corpus/eval.jsonl", "--command", "false")
    assert code == 0, err
    code, out, _ = cli(capsys, sessions_root, "run", session.name, "--experiment", "bad", "--headless",
                       "--continue-on-reject")  # without it the failed first run stops the rest (D3)
    last = out.strip().splitlines()[-1]
    assert code == 1 and "every run failed" in last and "complete" not in last.replace("incomplete", ""), last
    done = type("Outcome", (), {"completed": True, "incidents": ["x"], "stopped_words": None,
                                "cancelled": False})()
    assert "every run failed" in outcome_words(done, 1, all_failed=True)
    assert outcome_words(done, 1).startswith("experiment complete")
    assert pane_words(done, None, False, all_failed=True).startswith("run finished — every run failed")


def test_d5_an_id_gap_with_duplicates_among_the_lines_is_said_as_a_lower_bound() -> None:
    """152 lines for 200 IDs, a duplicate and an unknown ID among them: 50 are missing, not 48."""
    from gpusession.core.records.summary import rejection_words

    words = rejection_words({"_ids_bad": 1, "_missing_min": 48, "_missing_max": 48})
    assert words == ("ids: at least 48 missing",)
