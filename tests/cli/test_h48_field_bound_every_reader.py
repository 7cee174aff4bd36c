"""A huge string in any hand-editable file of the session is refused at the shared reader (H-48).

The notes' length bound (4 KiB a field; 64 KiB under ``environment``/``evidence``) is
checked by :func:`gpusession.core.files.nesting.loads_toml`, under every TOML reader, not
by one caller: a 900 KB ``criteria`` in ``approvals.toml`` once printed 900 KB in 4.5 s
(``deliverables``), and ``retrieval.toml`` / ``corpus.toml`` / ``status`` were read
without the bound. Each command refuses the file in one line naming the file, the field
and the bound (exit 2 where the file is needed; a line in ``show`` where it is a side
file), never prints the text, and ``list`` keeps listing the other sessions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_toml
from gpusession.core.files.tomlread import read_toml

PKG = ("--gpu", "RTX A5000", "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z")
#: 900 KB: under the 1 MiB whole-file bound, far past the 4 KiB a field may hold.
HUGE = "A" * 900_000
BOUND = "at most 4,096 bytes (4 KiB) per field"


@pytest.fixture
def base(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> Path:
    for name in ("base", "other"):
        code, _, err = cli(capsys, sessions_root, "new", name, *PKG)
        assert code == 0, err
    return sessions_root / "base"


def _said(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    """The command's exit and words; the 900 KB never reach them (no stopwatch: A6)."""
    code, out, err = cli(capsys, root, *args)
    assert "AAAA" not in out + err and "Traceback" not in err
    return code, out, err


def _named(line: str, name: str, field: str) -> None:
    assert name in line and field in line and BOUND in line, line


def _approved(capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / "v-1.png").write_bytes(b"one")
    code, _, err = cli(capsys, base.parent, "approve", "base", str(out / "v-1.png"), "--by", "Ana",
                       "--criteria", "readable")
    assert code == 0, err
    approvals = base / "approvals.toml"
    approvals.write_text(approvals.read_text().replace('"readable"', f'"{HUGE}"'))
    return approvals


def test_h48_approvals_criteria_past_the_bound_is_refused_by_deliverables_and_cost(
    capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path,
) -> None:
    _approved(capsys, base, tmp_path)
    for command in ("deliverables", "cost"):
        code, _, err = _said(capsys, base.parent, command, "base")
        assert code == 2, (command, err)
        _named(one_line(err), "approvals.toml", "criteria")


def test_h48_approvals_past_the_bound_is_one_line_in_show_and_never_in_the_report(
    capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path,
) -> None:
    _approved(capsys, base, tmp_path)
    code, out, err = _said(capsys, base.parent, "show", "base")
    assert code == 0, err
    [line] = [ln for ln in out.splitlines() if "approvals.toml" in ln]
    _named(line, "approvals.toml", "criteria")
    code, _, err = cli(capsys, base.parent, "report", "base")
    assert code == 0 and "Traceback" not in err, err
    report = (base / "report.md").read_text()
    assert "AAAA" not in report and len(report) < 50_000
    code, out, err = _said(capsys, base.parent, "list")
    assert code == 0 and "other" in out and "base" in out, err


def test_h48_retrieval_toml_past_the_bound_is_named_in_show_and_the_default_applies(
    capsys: pytest.CaptureFixture[str], base: Path,
) -> None:
    (base / "retrieval.toml").write_text(
        f'schema = 1\n[[pull]]\nat = "2026-11-29T12:00:00+00:00"\nbytes = 1000\nseconds = 1.0\n'
        f'throughput_bytes_per_s = 1000.0\nprobe = false\npath = "{HUGE}"\n')
    code, out, err = _said(capsys, base.parent, "show", "base")
    assert code == 0, err
    [line] = [ln for ln in out.splitlines() if "retrieval.toml" in ln]
    _named(line, "retrieval.toml", "pull[0].path")
    assert "the 4 h default applies" in line
    for command in (["status", "base"], ["list"]):
        code, _, err = _said(capsys, base.parent, *command)
        assert code == 0, (command, err)


def test_h48_corpus_toml_past_the_bound_is_named_in_show(
    capsys: pytest.CaptureFixture[str], base: Path,
) -> None:
    code, _, err = cli(capsys, base.parent, "experiment", "base", "define", "--id", "e1",
                       "--values", "1,2", "--workload", "synthetic-mlp")
    assert code == 0, err
    (base / "validation" / "e1").mkdir(parents=True)
    (base / "validation" / "e1" / "corpus.toml").write_text(
        f'schema = 1\nrevision = "035c9e"\npath = "corpus/eval.jsonl"\nbytes = 10\nkept = "whole"\n'
        f'copy = "{HUGE}"\n')
    code, out, err = _said(capsys, base.parent, "show", "base")
    assert code == 0, err
    [line] = [ln for ln in out.splitlines() if "corpus.toml" in ln]
    _named(line, "corpus.toml", "copy")


def test_h48_host_check_field_past_the_bound_is_named_in_show(
    capsys: pytest.CaptureFixture[str], base: Path,
) -> None:
    (base / "host-check.toml").write_text(
        f'schema = 1\n[hosts."h b"]\nhostname = "h"\nchecked_at = 2026-11-29T10:00:00Z\ndeviation = "{HUGE}"\n')
    code, out, err = _said(capsys, base.parent, "show", "base")
    assert code == 0, err
    [line] = [ln for ln in out.splitlines() if "host-check.toml" in ln]
    _named(line, "host-check.toml", "deviation")


@pytest.mark.parametrize("name", ["session.toml", "checklist.toml", "order.toml"])
def test_h48_status_refuses_a_field_past_the_bound_as_show_does(
    capsys: pytest.CaptureFixture[str], base: Path, name: str,
) -> None:
    """``status`` read these files without the field bound while ``show`` refused them."""
    p = base / name
    p.write_text(p.read_text() + f'\nxhuge = "{HUGE}"\n')
    for command in ("status", "show"):
        code, _, err = _said(capsys, base.parent, command, "base")
        assert code == 2, (command, err)
        _named(one_line(err), name, "xhuge")
    code, out, err = _said(capsys, base.parent, "list")
    assert code == 0 and "other" in out, err


def test_h48_the_bound_is_in_the_shared_reader_keys_and_observed_tables_included(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"f\.toml: a\.b\[1\]: 5,000 bytes of text; at most 4,096"):
        loads_toml('a.b = ["x", "' + "é" * 2500 + '"]\n', "f.toml")
    with pytest.raises(BadInput, match=r"f\.toml: k+: 5,000 bytes"):
        loads_toml(f'"{"k" * 5000}" = 1\n', "f.toml")
    assert loads_toml(f'[environment]\nx = "{"A" * 60_000}"\n', "f.toml")  # observed: 64 KiB
    with pytest.raises(BadInput, match=r"environment\.x: 70,000 bytes of text; at most 65,536"):
        loads_toml(f'[environment]\nx = "{"A" * 70_000}"\n', "f.toml")
    p = tmp_path / "approvals.toml"
    p.write_text(f'schema = 1\ncriteria = "{"A" * 5000}"\n')
    with pytest.raises(BadInput, match=r"approvals\.toml: criteria: 5,000 bytes"):
        read_toml(p)


def test_h48_an_archive_a_program_wrote_keeps_its_long_fields(tmp_path: Path) -> None:
    """A validation report quotes the corpus (a thousand class names on one line): read whole."""
    p = tmp_path / "measure-1.toml"
    classes = ", ".join(f"class-{i}" for i in range(1000))
    p.write_text(f'schema = 1\nsummary = ["  classes  {classes}"]\n')
    assert classes in read_toml(p, field_bound=False)["summary"][0]
    assert classes in loads_toml(p.read_text(), p, field_bound=False)["summary"][0]
    with pytest.raises(BadInput, match="summary"):
        read_toml(p)
