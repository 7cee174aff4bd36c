"""Deep archived accept reports, deep command reports, deep corpus records (H-39) and
numbers past what they can mean in the retrieval files (H-41): one line naming the file,
never a traceback."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.copyhome.limit import (
    DEFAULT_RESERVE_S,
    MAX_DURATION_S,
    limit_of,
    measured_reserve,
    parse_reserve,
)
from gpusession.core.experiment.command_report import parse_report, read_report
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.session import Session
from gpusession.core.retrieval.compare import folder_comparison_lines
from gpusession.core.validation.accept_rule import format_problem

DEEP_JSON = "[" * 100_000 + "]" * 100_000
TOO_DEEP = "nested too deep (past 64 levels)"


def _new(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> Path:
    code, _, err = cli(capsys, root, "new", name, "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
                       "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    return root / name


def _accept_rule(capsys: pytest.CaptureFixture[str], root: Path, folder: Path) -> None:
    (folder / "expected.txt").write_text("v-1.png\n")
    code, _, err = cli(capsys, root, "experiment", folder.name, "define", "--id", "render", "--workload", "command",
                       "--values", "1", "--runs", "1", "--warmup", "0",
                       "--command", f"{sys.executable} render.py {{output}}",
                       "--expected-outputs", "expected.txt", "--deliverable-format", "png",
                       "--accept", f"{sys.executable} rule.py {{output}}")
    assert code == 0, err


@pytest.mark.parametrize("command", [["show", "a"], ["cost", "a"], ["deliverables", "a"], ["report", "a"],
                                     ["compare", "a", "b"]])
def test_h39_a_deep_archived_accept_report_is_one_line_naming_it(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, command: list[str]) -> None:
    a = _new(capsys, sessions_root, "a")
    _new(capsys, sessions_root, "b")
    _accept_rule(capsys, sessions_root, a)
    where = a / "validation" / "render" / "v1"
    where.mkdir(parents=True, exist_ok=True)
    (where / "warm-1.accept.json").write_text(DEEP_JSON, encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, *command)
    assert "Traceback" not in err and "RecursionError" not in out + err
    if command[0] in ("cost", "deliverables"):  # the count itself: refused in one line, exit 2
        assert code == 2, (out[-2000:], err[-2000:])
        line = one_line(err)
        assert "warm-1.accept.json" in line and TOO_DEEP in line
    else:  # show, report, compare go on without the count (``deliverables a`` says why)
        assert code == 0, (out[-2000:], err[-2000:])
    if command[0] == "show":  # and show says why in its accepted line, naming the file
        line = next(ln for ln in out.splitlines() if ln.startswith("accepted  "))
        assert "not counted:" in line and "warm-1.accept.json" in line and TOO_DEEP in line
    if command[0] == "compare":  # and the comparison says why below its table, naming the file
        flat = " ".join(out.split())
        assert "a: count unreadable" in flat and "warm-1.accept.json" in flat and TOO_DEEP in flat, flat
    if command[0] == "report":  # and the report's cost line says why, naming the file
        flat = " ".join(out.split())
        assert "the count does not read" in flat and "warm-1.accept.json" in flat and TOO_DEEP in flat, flat
    code, out, err = cli(capsys, sessions_root, "show", "b")  # the other session is untouched
    assert code == 0 and "Traceback" not in err


def test_h39_the_cost_pane_compares_a_session_with_a_deep_accept_report(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    a = _new(capsys, sessions_root, "a")
    _new(capsys, sessions_root, "b")
    _accept_rule(capsys, sessions_root, a)
    where = a / "validation" / "render" / "v1"
    where.mkdir(parents=True, exist_ok=True)
    (where / "warm-1.accept.json").write_text(DEEP_JSON, encoding="utf-8")
    lines = folder_comparison_lines(Session.open(sessions_root, "b"))  # never a RecursionError
    assert lines and lines[0].startswith("Other sessions of this folder") and lines[1].rstrip().endswith(" a")
    flat = " ".join(" ".join(lines).split())
    assert "a: count unreadable" in flat and "warm-1.accept.json" in flat and TOO_DEEP in flat


def test_h39_a_deep_command_report_is_refused_in_the_notes(tmp_path: Path) -> None:
    raw = ('{"a": ' + "[" * 2030 + "]" * 2030 + "}").encode()
    assert len(raw) < 4096
    report = parse_report(raw)
    assert report.values == {}
    assert report.words() is not None and TOO_DEEP in report.words()
    path = tmp_path / "report.json"  # as the runner reads $GPUSESSION_REPORT after the call
    path.write_bytes(raw)
    words = read_report(path).words()
    assert words is not None and TOO_DEEP in words and "not read" in words


def test_h39_a_deep_corpus_record_is_one_line_in_show(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    a = _new(capsys, sessions_root, "a")
    _accept_rule(capsys, sessions_root, a)
    (a / "validation" / "render").mkdir(parents=True, exist_ok=True)
    (a / "validation" / "render" / "corpus.toml").write_text(
        'revision = "x"\npath = "c"\nx = ' + "[" * 500 + "]" * 500 + "\n", encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "show", "a")
    assert "Traceback" not in err and "RecursionError" not in out + err
    assert code == 0, (out[-2000:], err[-2000:])
    line = next(ln for ln in out.splitlines() if ln.startswith("corpus    render:"))
    assert "corpus.toml" in line and TOO_DEEP in line


def test_h39_a_deep_json_deliverable_is_a_format_problem_not_a_traceback(tmp_path: Path) -> None:
    out = tmp_path / "v.json"
    out.write_text(DEEP_JSON, encoding="utf-8")
    assert format_problem(out, "json") == TOO_DEEP
    out.write_text('{"a": [1]}', encoding="utf-8")
    assert format_problem(out, "json") is None


# -- H-41: numbers past what they can mean in the retrieval files ------------------------------
def _pull(rate: str, moved: int = 200 * 1024 * 1024) -> str:
    return (f'[[pull]]\nat = "2026-11-29T12:00:00+00:00"\nbytes = {moved}\nseconds = 12.5\n'
            f'throughput_bytes_per_s = {rate}\nprobe = false\npath = "rsync over ssh"\n')


@pytest.mark.parametrize("rate", ["1e-300", "5e-324", "0.5"])
@pytest.mark.parametrize("command", [["status", "a"], ["show", "a"], ["report", "a"],
                                     ["package", "a", "--reserve", "2h"]])
def test_h41_a_throughput_past_its_meaning_is_refused_never_a_traceback(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, rate: str, command: list[str]) -> None:
    a = _new(capsys, sessions_root, "a")
    (a / "retrieval.toml").write_text(_pull(rate), encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, *command)
    assert "Traceback" not in err and "OverflowError" not in out + err
    assert code == 0, (out[-2000:], err[-2000:])
    if command[0] == "show":
        assert "retrieval.toml: pull 1: throughput_bytes_per_s: expected a finite throughput of at least " \
               "1 byte/s" in out


@pytest.mark.parametrize(("rate", "expected"), [
    ("-5.0", "expected a finite throughput of at least 1 byte/s, got -5.0"),
    ("nan", "expected a finite throughput of at least 1 byte/s, got nan"),
    ("-inf", "expected a finite throughput of at least 1 byte/s, got -inf"),
    ("true", "expected a number of bytes per second, got True"),
    ('"fast"', "expected a number of bytes per second, got 'fast'"),
])
def test_h41_a_throughput_that_is_no_number_of_bytes_per_second_is_named_as_file_entry_field(
        tmp_path: Path, rate: str, expected: str) -> None:
    """Never dropped silently: the entry is left out and the note names file, entry and field."""
    (tmp_path / "retrieval.toml").write_text(_pull(rate), encoding="utf-8")
    res = measured_reserve(tmp_path)
    assert not res.measured and res.reserve_s == DEFAULT_RESERVE_S
    assert res.note is not None and f"retrieval.toml: pull 1: throughput_bytes_per_s: {expected}" in res.note
    (tmp_path / "retrieval.toml").write_text(_pull("0", moved=0) + "\n" + _pull(rate) + "\n" + _pull("1e6"),
                                             encoding="utf-8")
    res = measured_reserve(tmp_path)  # a pull that measured nothing is not named; the good one counts
    assert res.measured and res.note is not None and res.note.startswith("retrieval.toml: pull 2: ")


def test_h41_the_limit_of_a_throughput_past_its_meaning_is_the_default(sessions_root: Path, tmp_path: Path) -> None:
    (tmp_path / "retrieval.toml").write_text(_pull("5e-324") + "\n" + _pull("1e6"), encoding="utf-8")
    res = measured_reserve(tmp_path)  # the good entry counts, the other is named
    assert res.measured and res.note is not None and "pull 1: throughput_bytes_per_s" in res.note
    (tmp_path / "retrieval.toml").write_text(_pull("1e-300"), encoding="utf-8")
    res = measured_reserve(tmp_path)
    assert not res.measured and res.reserve_s == DEFAULT_RESERVE_S


@pytest.mark.parametrize("command", [["status", "a"], ["show", "a"], ["report", "a"]])
def test_h41_a_recorded_folder_size_past_2_63_reads_as_unread(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, command: list[str]) -> None:
    a = _new(capsys, sessions_root, "a")
    (a / "retrieval.toml").write_text(_pull("1.0"), encoding="utf-8")
    (a / "summary.json").write_text(
        '{"folder_bytes": 99999999999999999999999999, "folder_bytes_at_unix_s": 1764500000.0}', encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, *command)
    assert "Traceback" not in err and "OverflowError" not in out + err
    assert code == 0, (out[-2000:], err[-2000:])


@pytest.mark.parametrize("size", ["9223372036854775807", "9223372036854775808", "-5"])
@pytest.mark.parametrize("command", [["status", "a"], ["show", "a"]])
def test_h41_a_manifest_size_past_its_meaning_never_overflows_the_limit(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, size: str, command: list[str]) -> None:
    a = _new(capsys, sessions_root, "a")
    (a / "retrieval.toml").write_text(_pull("1.0"), encoding="utf-8")
    (a / "manifest.csv").write_text(f"path,size_bytes,sha256\nx.png,{size},00\n", encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, *command)
    assert "Traceback" not in err and "OverflowError" not in out + err
    assert code == 0, (out[-2000:], err[-2000:])


def test_h41_a_reserve_of_a_year_or_more_is_refused_and_a_derived_one_capped(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="under a year"):
        parse_reserve("9000h")
    (tmp_path / "retrieval.toml").write_text(_pull("1.0"), encoding="utf-8")
    (tmp_path / "manifest.csv").write_text("path,size_bytes\nx,9223372036854775807\n", encoding="utf-8")
    res = measured_reserve(tmp_path)
    assert res.reserve_s <= MAX_DURATION_S and res.transfer_s is not None and res.transfer_s <= MAX_DURATION_S
    doc = {"package": {"gpu_model": "RTX A5000", "lots": 1, "days": 7, "start": "2026-11-29T10:00:00Z"},
           "limit": {"reserve_s": 1e300}}
    now = datetime(2026, 11, 30, tzinfo=timezone.utc)
    limit = limit_of(tmp_path, doc, now)  # a stored reserve past a year is not one: the measured one applies
    assert limit.at is not None and not limit.fits(now, 1e300) and not limit.fits(now, float("inf"))
