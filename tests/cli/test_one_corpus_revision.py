"""One corpus revision per experiment; the session keeps what it validated against (V5, V8).

An edited corpus after an interrupted run: ``run --resume`` and ``run`` exit 2 naming both
revisions, nothing appended. A corpus outside the session folder is kept in it at the
first run (its expected IDs, its revision, the whole file under 64 MiB), and ``show``
says which.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.files.digest import sha256_file
from gpusession.core.folder.corpus_pin import is_kept_corpus, kept_corpus
from gpusession.core.folder.session import Session

#: Labels every input "a"; fails while the file named by its third argument exists.
LABEL_A = """\
import json, os, sys
corpus, output, fail = sys.argv[1], sys.argv[2], sys.argv[3]
if os.path.exists(fail):
    sys.exit(1)
with open(corpus) as src, open(output, "w") as out:
    for line in src:
        if line.strip():
            out.write(json.dumps({"id": json.loads(line)["id"], "label": "a"}) + "\\n")
"""


def _write_corpus(path: Path, n: int) -> None:
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": "x", "label": "a"}) + "\n" for i in range(n)))


def _setup(capsys: pytest.CaptureFixture[str], root: Path, s: Session, corpus: Path, fail: Path) -> None:
    script = s.folder / "label_a.py"
    script.write_text(LABEL_A)
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "c", "--workload", "command",
                       "--values", "1", "--runs", "2", "--warmup", "0", "--cold-runs", "0",
                       "--corpus", str(corpus), "--classes", "a,b", "--threshold", "0.5",
                       "--command", f"{sys.executable} {script} {{corpus}} {{output}} {fail}")
    assert code == 0, err


def test_v5_an_edited_corpus_is_refused_by_resume_and_run_naming_both_revisions(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    corpus, fail = tmp_path / "eval.jsonl", tmp_path / "fail"
    _write_corpus(corpus, 6)
    fail.write_text("")
    _setup(capsys, sessions_root, session, corpus, fail)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", "--continue-on-reject")
    assert code != 0 and code != 2, out[-2000:] + err  # every run failed: the resume has runs to measure
    before_rev = sha256_file(corpus)
    fail.unlink()
    _write_corpus(corpus, 3)  # edited: 3 IDs where the rows were measured against 6
    after_rev = sha256_file(corpus)
    rows_before = session.results.path.read_bytes()
    for resume in (["--resume"], []):
        code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless", *resume)
        assert code == 2, (resume, out[-2000:], err)
        line = err.strip().splitlines()[-1]
        assert f"({before_rev[:6]}… → {after_rev[:6]}…)" in line and "the corpus changed" in line, line
        assert "derive" in line and "--set corpus=" in line, line
        assert session.results.path.read_bytes() == rows_before  # nothing appended


def test_v5_a_corpus_outside_the_session_is_kept_in_it_and_show_says_how(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    corpus, fail = tmp_path / "eval.jsonl", tmp_path / "fail"
    _write_corpus(corpus, 4)
    _setup(capsys, sessions_root, session, corpus, fail)
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out[-2000:] + err
    kept = kept_corpus(session, "c")
    assert kept is not None and kept.revision == sha256_file(corpus) and kept.kept == "whole"
    folder = session.validation_dir / "c"
    assert (folder / "expected-ids.csv").read_text().split() == ["id", "d0", "d1", "d2", "d3"]
    assert (folder / "corpus" / "eval.jsonl").read_bytes() == corpus.read_bytes()
    code, shown, _ = cli(capsys, sessions_root, "show", session.name)
    assert code == 0 and f"corpus    c: corpus {kept.revision[:6]}… copied whole: validation/c/corpus/eval.jsonl" in shown


def test_the_kept_corpus_is_not_read_as_a_run_of_the_validation_table() -> None:
    """``corpus.toml``, ``expected-ids.csv`` and ``corpus/…`` under ``validation/<exp>/`` are kept copies."""
    assert is_kept_corpus(Path("batch-sweep/corpus.toml"))
    assert is_kept_corpus(Path("batch-sweep/expected-ids.csv"))
    assert is_kept_corpus(Path("batch-sweep/corpus/eval.toml"))
    assert not is_kept_corpus(Path("batch-sweep/batch-1/warm-1.toml"))
    assert not is_kept_corpus(Path("corpus.toml"))  # a standalone `validate --session` named corpus


@pytest.mark.slow
@pytest.mark.torch
def test_r1_a_model_replaced_since_the_last_attempt_is_refused_by_resume_and_run_naming_both(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fake_workloads import with_tests_on_path, write_corpus

    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    with_tests_on_path(monkeypatch)
    corpus = write_corpus(session.folder / "eval.jsonl", n=4)
    revision = tmp_path / "model-revision"
    revision.write_text("echo-1")
    define_experiment(session, Experiment(
        id="m", workload="fake_workloads:RevisionFile", corpus=corpus.name, values=(2,),
        runs_per_variant=1, warmup_iterations=0, cold_runs_per_variant=0, device="cpu",
        params={"revision_file": str(revision), "fail_call": 1}))  # its run fails: a resume has one to run
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "m", "--headless")
    assert code == 1, out[-2000:] + err
    assert {r["model_revision"] for r in session.results.read().to_dicts()} == {"echo-1"}
    revision.write_text("echo-2")  # the model was replaced on disk
    rows_before = session.results.path.read_bytes()
    for resume in (["--resume"], []):
        code, out, err = cli(capsys, sessions_root, "run", session.name, "--experiment", "m", "--headless", *resume)
        assert code == 2, (resume, out[-2000:], err)
        line = err.strip().splitlines()[-1]
        assert "the model changed since the last attempt of m (echo-1 → echo-2)" in line, line
        assert "derive" in line, line
        assert session.results.path.read_bytes() == rows_before  # nothing appended, not even its load
    ended = [r for r in session.read_journal() if r.get("event") == "experiment_incomplete"]
    assert ended[-1]["stopped"] == "revision-changed" and ended[-1]["runs_done"] == 0, ended[-1]
    started = [r["run_key"] for r in session.read_journal() if r.get("event") == "run_started"]
    assert len(started) == 1, started  # the first attempt's run only: no refused attempt ran one


def test_r1_only_a_revision_known_on_both_sides_is_compared() -> None:
    from gpusession.core.folder.corpus_pin import workload_revision_refusal

    before = {"model_revision": ["a" * 64], "tokenizer_revision": ["split-1"]}
    assert workload_revision_refusal("s", "e", before, {"model_revision": "a" * 64}) is None
    assert workload_revision_refusal("s", "e", {"model_revision": []}, {"model_revision": "x"}) is None
    assert workload_revision_refusal("s", "e", before, {}) is None  # not reported: not compared
    words = workload_revision_refusal("s", "e", before, {"model_revision": "a" * 64, "tokenizer_revision": "bpe-2"})
    assert words is not None and "the tokenizer changed since the last attempt of e (split-1 → bpe-2)" in words
    words = workload_revision_refusal("s", "e", before, {"model_revision": "b" * 64})
    assert words is not None and "(aaaaaa… → bbbbbb…)" in words  # a SHA-256 shown short, never hidden


def test_v5_a_corpus_over_the_copy_bound_is_kept_by_its_id_list_and_hash_and_show_says_so(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the whole-copy bound (64 MiB; lowered here) only the expected IDs and the
    revision are kept: no ``corpus/`` copy, ``kept = "ids"``, and ``show`` says which."""
    from gpusession.core.folder import corpus_pin

    corpus = tmp_path / "big.jsonl"
    _write_corpus(corpus, 5)
    monkeypatch.setattr(corpus_pin, "KEEP_WHOLE_MAX_BYTES", corpus.stat().st_size - 1)
    revision = sha256_file(corpus)
    made = corpus_pin.keep_corpus(session, "c", corpus, str(corpus), revision, "2026-12-04T10:00:00+00:00")
    assert made is not None and made.kept == "ids" and made.copy is None
    folder = session.validation_dir / "c"
    assert (folder / "expected-ids.csv").read_text().split() == ["id", "d0", "d1", "d2", "d3", "d4"]
    assert not (folder / "corpus").exists()
    kept = kept_corpus(session, "c")
    assert kept is not None and (kept.revision, kept.kept, kept.size_bytes) == (revision, "ids", corpus.stat().st_size)
    words = corpus_pin.kept_words(session, "c") or ""
    assert words.startswith(f"corpus {revision[:6]}… kept by its ID list and SHA-256: validation/c/expected-ids.csv")
    assert corpus_pin.keep_corpus(session, "c", corpus, str(corpus), revision, "later") is None  # once per revision
