"""Hostile world, round 5: what the count is made of (H-56, H-57, A4).

A writer never writes what its own reader refuses, and a count reads only what the
product recorded: an accept report no row of the results holds is named, never counted.

About 5,800 decisions once passed the 1 MiB every TOML reader held ``approvals.toml`` to;
after that every command that reads approvals refused, ``approve`` included. A folder of
20,000 generated images is an ordinary job: approved in one call, then read back by
``deliverables``, ``cost`` and a second ``approve``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli, run_rule_experiment

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import MAX_TOML_BYTES, toml_bound
from gpusession.core.files.tomlio import write_toml
from gpusession.core.folder.session import Session

N = 20_000


@pytest.mark.slow  # about 30 s on 2 cores: 20,000 files hashed, approvals.toml read and written whole
def test_h56_twenty_thousand_files_are_approved_and_every_reader_reads_them(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for i in range(N + 1):
        (out / f"img-{i:05d}.png").write_bytes(i.to_bytes(3, "big"))
    paths = [str(out / f"img-{i:05d}.png") for i in range(N)]
    code, _, err = cli(capsys, sessions_root, "approve", session.name, *paths, "--by", "Ana")
    assert code == 0, err[-2000:]
    size = (session.folder / "approvals.toml").stat().st_size
    assert size > MAX_TOML_BYTES  # past the bound every other TOML file keeps
    code, out_text, err = cli(capsys, sessions_root, "cost", session.name, "--json")
    assert code == 0, err
    assert json.loads(out_text)["deliverables"]["count"] == N
    code, _, err = cli(capsys, sessions_root, "approve", session.name, str(out / f"img-{N:05d}.png"), "--by", "Ana")
    assert code == 0, err  # the file is still written and read by its own writer
    code, out_text, err = cli(capsys, sessions_root, "deliverables", session.name, "--json")
    assert code == 0 and json.loads(out_text)["deliverables"]["count"] == N + 1, err
    journal = (session.folder / "journal.jsonl").read_text().count('"deliverable_decided"')
    assert journal == N + 1  # each decision journaled, in one write per call


def test_a4_a_toml_file_past_its_readers_bound_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "order.toml"
    big = {"items": {f"k{i}": "x y " * 1000 for i in range(MAX_TOML_BYTES // 4000 + 10)}}
    with pytest.raises(BadInput) as exc:
        write_toml(path, big)
    assert "past the 1,048,576 its reader accepts" in str(exc.value) and not path.exists()
    assert toml_bound(tmp_path / "approvals.toml") > 50 * MAX_TOML_BYTES


def test_h57_a_forged_accept_report_is_named_and_never_counted(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    """A hand-made ``validation/render/batch-99/warm-1.accept.json`` saying ``accepted`` with 100
    digests: no row holds that run, so every front end keeps the real count and names the file."""
    run_rule_experiment(capsys, sessions_root, session)
    forged = session.folder / "validation" / "render" / "batch-99" / "warm-1.accept.json"
    forged.parent.mkdir(parents=True)
    forged.write_text(json.dumps({"schema": 1, "kind": "accept-rule", "accepted": True, "verdict": "accepted",
                                  "files": {f"f{i}.png": f"{i:064x}" for i in range(100)}}))
    code, out, err = cli(capsys, sessions_root, "cost", session.name)
    assert code == 0, err
    assert out.splitlines()[0] == "55.00 USD ÷ 3 accepted visuals = 18.33 USD per visual", out
    assert "not counted: validation/render/batch-99/warm-1.accept.json: no row of resultats-bruts.csv" in out
    for command in (["status", session.name, "--json"], ["show", session.name, "--json"]):
        code, out, err = cli(capsys, sessions_root, *command)
        assert json.loads(out)["deliverables"]["count"] == 3, (command, out)
    code, out, err = cli(capsys, sessions_root, "report", session.name)
    assert "3 accepted visuals" in out and "103 accepted" not in out and "÷ 103" not in out  # not the path


def test_list_json_says_null_with_the_reason_for_a_session_it_cannot_read(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session) -> None:
    broken = sessions_root / "broken"
    broken.mkdir()
    (broken / "session.toml").write_text("garbage [[[\n")
    code, out, err = cli(capsys, sessions_root, "list", "--json")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["sessions"]}
    assert (rows["broken"]["result_rows"], rows["broken"]["accepted_corpora"]) == (None, None)
    assert "session.toml:1" in rows["broken"]["error"]
    assert rows[session.name]["result_rows"] == 0 and rows[session.name]["error"] is None
