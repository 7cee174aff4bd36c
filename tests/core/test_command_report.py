"""A command's report of what it ran on is bounded, checked and never echoes what it refuses (R10)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpusession.core.experiment.command_report import (
    REPORT_MAX_BYTES,
    VALUE_MAX_CHARS,
    parse_report,
    read_report,
)

GOOD = {"device": "cuda:0", "python_version": "3.11.9", "torch_version": "2.5.1+cu121"}


def test_r10_a_report_of_the_three_keys_is_taken_whole() -> None:
    report = parse_report((json.dumps(GOOD) + "\n").encode())
    assert report.values == GOOD and report.words() is None
    nightly = parse_report(b'{"device": "cuda:0,cuda:1", "torch_version": "2.6.0.dev20241112+cu124"}')
    assert nightly.values == {"device": "cuda:0,cuda:1", "torch_version": "2.6.0.dev20241112+cu124"}


@pytest.mark.parametrize("raw", [b"", b"\n  \n"])
def test_r10_an_empty_report_is_no_report(raw: bytes) -> None:
    report = parse_report(raw)
    assert report.values == {} and report.words() is None


@pytest.mark.parametrize(("raw", "said"), [
    (b"device=cuda:0", "not one JSON object"),
    (b'{"device": "cpu"}\n{"device": "cuda:0"}', "not one JSON object"),
    (b'["cpu"]', "not a JSON object"),
    (b"\xff\xfe", "not UTF-8"),
    (b'{"device": "' + b"c" * REPORT_MAX_BYTES + b'"}', f"over {REPORT_MAX_BYTES:,} bytes"),
])
def test_r10_a_report_that_does_not_read_is_refused_whole(raw: bytes, said: str) -> None:
    report = parse_report(raw)
    assert report.values == {}
    assert said in str(report.words()) and str(report.words()).startswith("the command's report")


def test_r10_a_bad_value_is_refused_alone_and_never_echoed() -> None:
    token = "glpat-DlM8273cWmSrAPCWy5vY"
    raw = json.dumps({"device": token, "python_version": "3.11.9", "torch_version": "rm -rf /; 2.5",
                      "gpu": "x", "ghp_FWDgDgGrhkCpZqX12fwq5Vrb24Dt6uTx3k7L": 1}).encode()
    report = parse_report(raw)
    assert report.values == {"python_version": "3.11.9"}
    words = str(report.words())
    assert "device refused (it looks like a GitLab token" in words, words
    assert "torch_version refused (expected a version such as 2.5.1+cu121)" in words, words
    assert "unknown keys ignored: gpu and 1 more" in words, words
    assert token not in words and "rm -rf" not in words and "ghp_" not in words


@pytest.mark.parametrize("value", [3.11, None, ["3.11"], "3" * (VALUE_MAX_CHARS + 1)])
def test_r10_a_value_that_is_not_short_text_is_not_taken(value: object) -> None:
    report = parse_report(json.dumps({"python_version": value}).encode())
    assert "python_version" not in report.values
    assert (report.words() is None) == (value is None)  # null: not reported, nothing said


def test_r10_a_report_is_read_from_a_plain_file_only(tmp_path: Path) -> None:
    assert read_report(tmp_path / "none.json").values == {}  # no file: no report, nothing said
    assert read_report(tmp_path / "none.json").words() is None
    target = tmp_path / "target.json"
    target.write_text(json.dumps(GOOD))
    assert read_report(target).values == GOOD
    link = tmp_path / "report.json"
    link.symlink_to(target)
    assert read_report(link).values == {} and "a link" in str(read_report(link).words())
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert "not a plain file" in str(read_report(fifo).words())  # never blocks on a pipe
    (tmp_path / "dir.json").mkdir()
    assert read_report(tmp_path / "dir.json").values == {}
