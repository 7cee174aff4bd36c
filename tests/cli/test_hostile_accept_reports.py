"""Hostile world, round 5 re-trial: the archived accept reports every count reads (H-70 … H-74).

The workload runs in the session folder, so it can leave anything under ``validation/``:
a FIFO named like a report (H-70), a 3 GB report (H-71); a report's ``files`` can be
added to after the rule judged (H-72). What the report and the row say of an output
never holds a secret: not a file's name (H-73), not the rule's first line (H-74).
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import polars as pl
import pytest
from helpers import RunCli, cli, run_rule_experiment

from gpusession.core.events import RunFinishedRecord
from gpusession.core.folder.session import Session
from gpusession.core.money.count import rule_accepted_runs
from gpusession.core.records.old_words import files_digest_from_old_notes
from gpusession.core.validation import accept_rule
from gpusession.core.validation.accept_rule import (
    REPORT_MAX_BYTES,
    AcceptReport,
    check_names,
    files_digest,
    read_report,
    reason_line,
)

pytestmark = pytest.mark.calendar

#: A GitHub token's shape (ghp_ and 36 characters): never a real one.
TOKEN = "ghp_" + "Ab1" * 12
#: A private key's body without its BEGIN and END lines: 26 lines of 64 base64 characters.
KEY_BODY = [base64.b64encode(bytes((i * 7 + j) % 256 for j in range(48))).decode() for i in range(26)]


def _accepted_report(session: Session) -> Path:
    """A report the run wrote for an output the rule accepted."""
    for path in sorted(session.validation_dir.rglob("*.accept.json")):
        if json.loads(path.read_text("utf-8"))["accepted"] is True:
            return path
    raise AssertionError("no accepted report")


# -- H-70: a FIFO named like a report is named, never waited on ---------------------------------
WORKLOAD_FIFO = """\
import os, sys, pathlib
os.makedirs("validation/e/batch-1", exist_ok=True)
if not os.path.exists("validation/e/batch-1/zz.accept.json"):
    os.mkfifo("validation/e/batch-1/zz.accept.json")
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
(out / "a.txt").write_text("hello\\n")
"""


@pytest.mark.slow  # five commands in subprocesses, each started as a person starts it
def test_h70_a_fifo_named_like_an_accept_report_hangs_no_command(run_cli: RunCli, session: Session) -> None:
    (session.folder / "w.py").write_text(WORKLOAD_FIFO)
    (session.folder / "r.py").write_text("print('ok')\n")
    done = run_cli("experiment", session.name, "define", "--id", "e", "--workload", "command",
                   "--values", "1", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
                   "--command", f"{sys.executable} w.py {{output}}",
                   "--accept", f"{sys.executable} r.py {{output}}")
    assert done.returncode == 0, done.stderr
    done = run_cli("run", session.name, "--headless", timeout=120)  # the timeout only catches a hang
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    fifo = session.validation_dir / "e" / "batch-1" / "zz.accept.json"
    assert fifo.is_fifo()
    for command in ("cost", "show", "report"):
        done = run_cli(command, session.name, timeout=120)
        assert done.returncode == 0, (command, done.stderr[-2000:])
        flat = " ".join(done.stdout.split())
        if command != "report":  # the count names the FIFO and counts the real output alone
            assert "validation/e/batch-1/zz.accept.json: is a FIFO (named pipe), not a regular file" in flat, flat
            assert "1 accepted deliverable" in flat, flat


def test_h70_a_report_that_is_no_plain_file_is_never_opened_to_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "warm-1.accept.json"
    os.mkfifo(fifo)  # no writer: an open for reading that waits would wait forever
    assert read_report(fifo) == (None, "is a FIFO (named pipe), not a regular file; gpusession reads only "
                                       "plain files (remove it; nothing was read)")
    real = tmp_path / "real.json"
    real.write_text('{"kind": "accept-rule"}')
    link = tmp_path / "cold-1.accept.json"
    link.symlink_to(real)
    doc, why = read_report(link)
    assert doc is None and why is not None and "symbolic link" in why
    folder = tmp_path / "warm-2.accept.json"
    folder.mkdir()
    assert "a folder, not a regular file" in str(read_report(folder)[1])


# -- H-71: a report past the bound is named, never read; the writer never writes one -------------
def test_h71_a_report_past_the_bound_is_named_and_not_read(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    run_rule_experiment(capsys, sessions_root, session)
    big = session.validation_dir / "render" / "batch-1" / "warm-9.accept.json"
    with open(big, "wb") as fh:  # sparse: no disk, no memory unless it is read
        fh.truncate(REPORT_MAX_BYTES + 1)
    code, out, err = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0, err
    flat = " ".join(out.split())
    assert out.splitlines()[0] == "55.00 USD ÷ 3 accepted visuals = 18.33 USD per visual", out
    assert (f"validation/render/batch-1/warm-9.accept.json: holds more than {REPORT_MAX_BYTES:,} bytes, "
            "the most an accept report may hold") in flat, flat
    code, out, _ = cli(capsys, sessions_root, "show", session.name, "--json")
    assert code == 0 and json.loads(out)["deliverables"]["count"] == 3


def test_h71_the_writer_never_writes_a_report_its_reader_refuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accept_rule, "REPORT_MAX_BYTES", 20_000)
    names = check_names(tmp_path, [f"expected-{i}.png" for i in range(3000)])  # 3,000 missing
    rejected = AcceptReport(str(tmp_path), names)
    data = rejected.encoded()
    assert len(data) <= 20_000 or len(json.loads(data)["names"]["missing"]) == accept_rule.REPORT_LIST_MAX
    assert json.loads(data)["cut"] == {"missing": 3000}
    accepted = AcceptReport(str(tmp_path), None, verdict="accepted",
                            files={f"visual-{i:04d}.png": f"{i:064x}" for i in range(500)})
    data = accepted.encoded()
    assert len(data) <= 20_000
    path = tmp_path / "warm-1.accept.json"
    path.write_bytes(data)
    doc, why = read_report(path)
    assert why is None and doc["files"] == {} and doc["files_past_bound"] == 500
    note = accepted.note() or ""
    assert "not counted: the list of its 500 files would pass the 20,000 bytes" in note
    assert files_digest_from_old_notes(note) == files_digest({})  # the row ties the run to no file


# -- H-72: digests added to a real report after the rule judged are named, never counted ---------
def test_h72_digests_added_to_a_real_accepted_report_are_not_counted(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    run_rule_experiment(capsys, sessions_root, session)
    path = _accepted_report(session)
    doc = json.loads(path.read_text("utf-8"))
    row = next(r for r in session.results.rows() if r.corpus_accepted and
               path.name == f"{r.phase}-{r.run_index}.accept.json" and path.parent.name == r.variant_id)
    assert files_digest_from_old_notes(row.notes) == files_digest(doc["files"])  # the run tied them
    doc["files"].update({f"zz-{i}.png": f"{i:064x}" for i in range(100)})
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0, err
    flat = " ".join(out.split())
    assert out.splitlines()[0] == "55.00 USD ÷ 3 accepted visuals = 18.33 USD per visual", out
    rel = path.relative_to(session.folder).as_posix()
    assert f"{rel}: its files are not those the rule accepted" in flat, flat
    for command in (["show", session.name, "--json"], ["status", session.name, "--json"]):
        code, out, err = cli(capsys, sessions_root, *command)
        assert code == 0 and json.loads(out)["deliverables"]["count"] == 3, (command, out)
    code, out, _ = cli(capsys, sessions_root, "report", session.name)
    assert "3 accepted visuals" in out and "103 accepted" not in out and "÷ 103" not in out  # not the path


def test_h72_the_files_digest_is_read_from_the_runs_journal_record_not_its_notes(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    run_rule_experiment(capsys, sessions_root, session)
    path = _accepted_report(session)
    doc = json.loads(path.read_text("utf-8"))
    ends = {(r.variant_id, r.phase, r.run_index): r.files_digest for r in session.journal_records()
            if isinstance(r, RunFinishedRecord) and r.files_digest is not None}
    assert files_digest(doc["files"]) in ends.values()  # typed with the run (H-72)
    # every note reworded: the tie's words gone from some, another digest written in others
    frame = pl.read_csv(session.results.path, infer_schema=False)
    frame = frame.with_columns(pl.when(pl.col("notes").is_not_null())
                               .then(pl.lit("reworded; 1 files counted, list sha256: " + "f" * 64))
                               .otherwise(None).alias("notes"))
    frame.write_csv(session.results.path)
    code, out, err = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0, err
    assert out.splitlines()[0] == "55.00 USD ÷ 3 accepted visuals = 18.33 USD per visual", out


def test_h72_an_old_row_without_a_typed_digest_is_read_by_the_old_notes_adapter() -> None:
    rows = pl.DataFrame({"experiment_id": ["e"], "variant_id": ["v"], "phase": ["warm"], "run_index": [1],
                         "quality_metric": ["accept-rule"], "corpus_accepted": [True],
                         "notes": ["accept rule: accepted (ok); 3 files counted, list sha256: " + "a" * 64]})
    assert rule_accepted_runs(rows) == {("e", "v", "warm", 1): "a" * 64}  # an old journal: the words
    typed = RunFinishedRecord(run_key="e:warm:v:1", experiment_id="e", variant_id="v", phase="warm",
                              run_index=1, ok=True, files_digest="b" * 64)
    assert rule_accepted_runs(rows, [typed]) == {("e", "v", "warm", 1): "b" * 64}  # the typed field wins


def test_h72_a_row_that_records_two_files_digests_records_none() -> None:
    one = "accept rule: accepted (ok); 3 files counted, list sha256: " + "a" * 64
    assert files_digest_from_old_notes(one) == "a" * 64
    assert files_digest_from_old_notes(one + "; incident: 3 files counted, list sha256: " + "b" * 64) is None
    assert files_digest_from_old_notes("accept rule: accepted (ok)") is None
    assert files_digest_from_old_notes(None) is None


# -- H-73: a file named like a token is written masked, its digest still counted -----------------
WORKLOAD_TOKEN = f"""\
import sys, pathlib
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
(out / "real.png").write_bytes(b"one")
(out / "{TOKEN}.png").write_bytes(b"two")
"""


def test_h73_an_output_file_named_like_a_token_is_masked_in_the_report(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    (session.folder / "w.py").write_text(WORKLOAD_TOKEN)
    (session.folder / "r.py").write_text("print('ok')\n")
    assert cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "e", "--workload", "command",
               "--values", "1", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
               "--command", f"{sys.executable} w.py {{output}}",
               "--accept", f"{sys.executable} r.py {{output}}")[0] == 0
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    path = _accepted_report(session)
    text = path.read_text("utf-8")
    assert TOKEN not in text
    files = json.loads(text)["files"]
    assert sorted(files) == ["[HIDDEN: GitHub token].png", "real.png"]
    for name in ("resultats-bruts.csv", "journal.jsonl"):
        assert TOKEN not in (session.folder / name).read_text("utf-8"), name
    assert TOKEN not in out + err
    code, out, err = cli(capsys, sessions_root, "cost", session.name, "--json")
    assert code == 0 and json.loads(out)["deliverables"]["count"] == 2, out  # the hidden one still counts


def test_h73_two_names_hidden_alike_are_both_kept(tmp_path: Path) -> None:
    report = AcceptReport(str(tmp_path), None, verdict="accepted",
                          files={f"{TOKEN}.png": "1" * 64, f"{TOKEN[:-1]}x.png": "2" * 64})
    files = report.to_json()["files"]
    assert files == {"[HIDDEN: GitHub token].png": "1" * 64, "[HIDDEN: GitHub token].png (2)": "2" * 64}


# -- H-74: a key body on the rule's stdout is masked before its first line is kept ---------------
def test_h74_a_key_body_without_its_armour_is_never_the_rules_reason(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    (session.folder / "key-body.txt").write_text("\n".join(KEY_BODY) + "\n")
    (session.folder / "w.py").write_text(WORKLOAD_TOKEN.replace(TOKEN, "second"))
    (session.folder / "r.py").write_text("import sys\nprint(open('key-body.txt').read(), end='')\nsys.exit(1)\n")
    assert cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "e", "--workload", "command",
               "--values", "1", "--runs", "1", "--warmup", "0", "--cold-runs", "0",
               "--command", f"{sys.executable} w.py {{output}}",
               "--accept", f"{sys.executable} r.py {{output}}")[0] == 0
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    said = [out + err] + [(session.folder / n).read_text("utf-8") for n in ("resultats-bruts.csv", "journal.jsonl")]
    said += [p.read_text("utf-8") for p in session.validation_dir.rglob("*.accept.json")]
    for text in said:
        assert not any(line in text for line in KEY_BODY), text[-2000:]
    doc = json.loads(next(session.validation_dir.rglob("*.accept.json")).read_text("utf-8"))
    assert doc["verdict"] == "rejected" and doc["reason"] == "[HIDDEN: private key]"


def test_h74_the_reason_is_taken_after_the_whole_head_is_masked() -> None:
    assert reason_line(("\n".join(KEY_BODY) + "\n").encode()) == "[HIDDEN: private key]"
    assert reason_line(b"two files are blank\nsecond line\n") == "two files are blank"
