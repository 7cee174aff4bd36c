"""Which run produced the accepted output: each validated output's SHA-256 is in its
validation report (``output_sha256``) and in its row's notes as ``output sha256:<hex>``
(V8), and the secret check keeps the labelled digest (H-35)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from fake_workloads import with_tests_on_path, write_corpus

from gpusession.bench.run_validation import OUTPUT_SHA256_NOTE, RunValidation
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.files.tomlread import read_toml
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow

PROTOCOL = {"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_v8_the_report_and_the_row_notes_name_the_validated_output_by_its_sha256(session: Session) -> None:
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl")
    exp = Experiment(id="e", workload="synthetic-mlp", corpus="corpus/eval.jsonl", protocol=PROTOCOL)
    output = session.folder / "out.jsonl"
    output.write_bytes(corpus.read_bytes())  # every ID, the reference labels: accepted
    run = ScheduledRun(phase="warm", variant_id="batch-1", run_index=1, worker="warm")
    fields, note = RunValidation(session, exp).validate(output, run)
    assert fields["corpus_accepted"] is True
    assert note == f"output sha256:{_sha(output)}"
    report = read_toml(session.validation_dir / "e" / "batch-1" / "warm-1.toml")
    assert report["output_sha256"] == _sha(output)
    # the row keeps the digest through the results writer and reads it back unmasked
    session.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm",
                                      run_index=1, notes=note, **fields))
    assert session.results.rows()[-1].notes == note


def test_v8_a_rejected_output_says_why_and_which_output(session: Session) -> None:
    write_corpus(session.folder / "corpus" / "eval.jsonl")
    exp = Experiment(id="e", workload="synthetic-mlp", corpus="corpus/eval.jsonl", protocol=PROTOCOL)
    output = session.folder / "out.jsonl"
    output.write_text('{"id": "t-000", "label": "a"}\n')  # seven IDs missing
    run = ScheduledRun(phase="warm", variant_id="batch-1", run_index=1, worker="warm")
    fields, note = RunValidation(session, exp).validate(output, run)
    assert fields["corpus_accepted"] is False
    assert note is not None and note.startswith("corpus rejected: ")
    assert note.endswith(f"; output sha256:{_sha(output)}")


@pytest.mark.slow
@pytest.mark.torch
def test_v8_every_validated_row_of_a_run_names_its_archived_output(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.bench.runner import Runner
    from gpusession.core.folder.experiments import define_experiment

    with_tests_on_path(monkeypatch)
    corpus = write_corpus(session.folder / "corpus" / "eval.jsonl")
    define_experiment(session, Experiment(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(session.folder)),
        varied="batch", values=(2,), runs_per_variant=2, warmup_iterations=0, protocol=PROTOCOL,
        params={"log": str(session.folder / "predict.log")}, device="cpu"))
    assert Runner(session, "e").run().completed
    measured = [r for r in session.results.rows() if r.phase in ("cold", "warm")]
    assert measured and all(r.corpus_accepted for r in measured)
    for r in measured:
        found = re.findall(re.escape(OUTPUT_SHA256_NOTE) + r"([0-9a-f]{64})", r.notes or "")
        archived = session.runs_dir / "e" / str(r.variant_id) / f"{r.phase}-{r.run_index}.jsonl"
        assert found == [_sha(archived)], r.notes


def test_v8_notes_that_differ_only_by_their_output_digest_group_as_one() -> None:
    from gpusession.core.validation.report import without_output_digest

    a = f"allocator note; output sha256:{'a' * 64}"
    b = f"allocator note; output sha256:{'b' * 64}"
    assert without_output_digest(a) == without_output_digest(b) == "allocator note"
    assert without_output_digest(f"output sha256:{'c' * 64}") == ""
    assert without_output_digest("output sha256:short") == "output sha256:short"  # not a digest
    # first in the note: the separator after it goes too, never a note that starts "; "
    first = f"output sha256:{'d' * 64}; concurrent load at start: host CPU 95%"
    assert without_output_digest(first) == "concurrent load at start: host CPU 95%"
    assert without_output_digest(f"x; output sha256:{'e' * 64}; y") == "x; y"
