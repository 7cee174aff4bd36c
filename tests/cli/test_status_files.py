"""``status`` never waits on a session file, never prints a traceback,
and refuses what ``show`` refuses with the same one line.

A FIFO in place of a session file would make a reader wait forever for a writer; each
test here runs under an alarm so that such a wait fails the test instead of hanging it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.folder.session import Session

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

#: The longest cell of the results CSV that every command accepts (16 Mi characters).
CELL_LIMIT = 16 * 1024 * 1024


class Waited(BaseException):
    """Raised by :func:`never_waits`; not an ``OSError``, so no reader takes it for a read error."""


@contextmanager
def never_waits(seconds: int = 20) -> Iterator[None]:
    """Fail (instead of hanging) when the body waits longer than ``seconds``."""

    def waited(_signum: int, _frame: object) -> None:
        raise Waited(f"waited over {seconds} s (on a FIFO?)")

    old = signal.signal(signal.SIGALRM, waited)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _replace(path: Path, kind: str) -> None:
    if path.is_dir():
        path.rmdir()
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


def _same_line_from_status_and_show(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> str:
    """The one refusal line of ``status`` and ``show`` (asserted equal, exit 2); tmux: exit 0."""
    lines = []
    with never_waits():
        for command in ("status", "show"):
            code, _, err = cli(capsys, root, command, name)
            assert code == 2, (command, err)
            lines.append(one_line(err))
        code, out, err = cli(capsys, root, "status", name, "--format", "tmux")
    assert lines[0] == lines[1], lines
    assert code == 0 and out.strip() == f"gpusession: {name}: run gpusession status" and not err
    return lines[0]


@pytest.mark.parametrize("own", ["session.toml", "checklist.toml", "order.toml"])
@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_status_and_show_refuse_a_fifo_or_folder_toml_alike(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str],
        own: str, kind: str) -> None:
    path = measured_session.folder / own
    _replace(path, kind)
    line = _same_line_from_status_and_show(capsys, sessions_root, measured_session.name)
    assert line.startswith(f"gpusession: error: {path}: ")
    assert ("is a FIFO (named pipe), not a regular file" if kind == "fifo" else "is a folder") in line
    if own != "session.toml":  # the checklist command reads them too
        with never_waits():
            code, _, err = cli(capsys, sessions_root, "checklist", measured_session.name)
        assert code == 2 and one_line(err) == line


def test_list_names_a_session_whose_file_is_a_fifo_and_lists_the_others(
        new_session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stuck = new_session("stuck")
    new_session("fine")
    _replace(stuck.folder / "checklist.toml", "fifo")
    with never_waits():
        code, out, _ = cli(capsys, sessions_root, "list")
    assert code == 0
    (stuck_line,) = [ln for ln in out.splitlines() if ln.startswith("stuck ")]
    assert "unreadable" in stuck_line and "FIFO" in stuck_line
    assert any(ln.startswith("fine ") and "unreadable" not in ln for ln in out.splitlines())


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_status_ignores_a_summary_json_that_is_no_file(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    summary = measured_session.folder / "summary.json"
    with never_waits():
        code, plain, _ = cli(capsys, sessions_root, "status", measured_session.name)
        assert code == 0
        tmux = cli(capsys, sessions_root, "status", measured_session.name, "--format", "tmux")
    # the line begins with the name, or with a warning when the fixed package nears its end
    assert tmux[0] == 0 and measured_session.name in tmux[1] and not tmux[2]
    if kind == "device":  # a link to a device that never ends
        summary.unlink(missing_ok=True)
        summary.symlink_to("/dev/zero")
    else:
        _replace(summary, kind)
    with never_waits():
        assert cli(capsys, sessions_root, "status", measured_session.name) == (0, plain, "")
        assert cli(capsys, sessions_root, "status", measured_session.name, "--format", "tmux") == tmux


def _rewrite_cell(path: Path, row_index: int, column: str, value: str) -> int:
    """Set one cell of the results CSV as a person editing it would; its line (1-based)."""
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    rows[row_index][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return row_index + 1


def test_status_refuses_a_bad_cell_as_show_does(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = measured_session.folder / "resultats-bruts.csv"
    line_no = _rewrite_cell(csv_path, 3, "elapsed_seconds", "abc")
    line = _same_line_from_status_and_show(capsys, sessions_root, measured_session.name)
    assert line.startswith(f"gpusession: error: {csv_path}:{line_no}: elapsed_seconds: expected a decimal number")
    assert line.endswith("got 'abc'")


def test_status_refuses_a_bad_row_appended_after_the_summary(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.retrieval.status import refresh_counts

    csv_path = measured_session.folder / "resultats-bruts.csv"
    refresh_counts(measured_session.folder)  # summary.json describes the CSV as it is
    lines = csv_path.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = lines[-1].replace(",warm,", ",lukewarm,", 1)
    assert bad != lines[-1]
    with csv_path.open("a", encoding="utf-8") as fh:
        fh.write(bad)
    line = _same_line_from_status_and_show(capsys, sessions_root, measured_session.name)
    assert f"{csv_path}:{len(lines) + 1}: phase: expected one of" in line


def test_status_trusts_a_summary_that_describes_the_csv(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """summary.json is written only after a checked append: the rows are not read again."""
    from gpusession.core.records import results
    from gpusession.core.retrieval.status import refresh_counts

    refresh_counts(measured_session.folder)

    def not_again(*_a: object, **_k: object) -> None:
        raise AssertionError("the whole CSV was checked again")

    monkeypatch.setattr(results, "check_rows", not_again)
    code, out, err = cli(capsys, sessions_root, "status", measured_session.name)
    assert code == 0 and " result rows · " in out, err


@pytest.mark.parametrize("tmux", [False, True])
def test_a_cell_over_the_limit_is_refused_alike_without_a_traceback(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str], tmux: bool) -> None:
    csv_path = measured_session.folder / "resultats-bruts.csv"
    line_no = _rewrite_cell(csv_path, 2, "notes", "x" * (CELL_LIMIT + 1))
    if tmux:
        with never_waits():
            code, out, err = cli(capsys, sessions_root, "status", measured_session.name, "--format", "tmux")
        assert (code, out.strip(), err) == (0, f"gpusession: {measured_session.name}: run gpusession status", "")
        return
    line = _same_line_from_status_and_show(capsys, sessions_root, measured_session.name)
    assert line.startswith(f"gpusession: error: {csv_path}:{line_no}: ")
    assert f"longer than {CELL_LIMIT:,} characters" in line and "quote" not in line


def test_a_cell_over_128_kib_is_accepted_by_status_and_show(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = measured_session.folder / "resultats-bruts.csv"
    _rewrite_cell(csv_path, 2, "notes", "y" * (200 * 1024))
    with never_waits():
        code, out, err = cli(capsys, sessions_root, "status", measured_session.name)
        assert code == 0 and "Traceback" not in err, err
        assert cli(capsys, sessions_root, "status", measured_session.name, "--format", "tmux")[0] == 0
        code, out, err = cli(capsys, sessions_root, "show", measured_session.name, "--json")
    assert code == 0, err
    assert json.loads(out)["result_rows"] > 0


def test_status_checks_the_rows_without_polars(measured_session: Session, sessions_root: Path) -> None:
    (measured_session.folder / "summary.json").unlink(missing_ok=True)  # every row is read
    code = (
        "import sys; from gpusession.cli import main; "
        f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'status', {measured_session.name!r}]); "
        "print('HEAVY', [m for m in ('polars', 'torch', 'textual') if m in sys.modules], rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY [] 0" in done.stdout, done.stdout + done.stderr


def _same_size_edit(raw: bytes, kind: str) -> bytes:
    """The CSV's bytes with one hand edit that keeps their length."""
    if kind == "bad-phase":  # a cell of the wrong kind
        return raw.replace(b",warm,", b",wxrm,", 1)
    if kind == "not-utf8":  # a byte that is no UTF-8
        at = raw.index(b",warm,") + 2
        return raw[:at] + b"\xff" + raw[at + 1:]
    if kind == "field-count":  # a separator typed as a semicolon: one field short
        at = raw.index(b",warm,")
        return raw[:at] + b";" + raw[at + 1:]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["bad-phase", "not-utf8", "field-count"])
def test_status_refuses_a_same_size_edit_behind_its_summary(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    """The summary describes the CSV's bytes, not only its size and time: the edit is found."""
    from gpusession.core.retrieval.status import refresh_counts

    csv_path = measured_session.folder / "resultats-bruts.csv"
    refresh_counts(measured_session.folder)
    st = csv_path.stat()
    raw = csv_path.read_bytes()
    edited = _same_size_edit(raw, kind)
    assert len(edited) == len(raw) and edited != raw
    csv_path.write_bytes(edited)
    os.utime(csv_path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the time put back as well
    line = _same_line_from_status_and_show(capsys, sessions_root, measured_session.name)
    assert line.startswith(f"gpusession: error: {csv_path}"), line


def test_status_trusts_a_copied_summary_by_its_digest(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A copy home has other inodes and times: the SHA-256 says the bytes are the same."""
    import shutil

    from gpusession.core.records import results
    from gpusession.core.retrieval.status import refresh_counts

    refresh_counts(measured_session.folder)
    home = tmp_path / "home"
    shutil.copytree(measured_session.folder, home / measured_session.name)

    def not_again(*_a: object, **_k: object) -> None:
        raise AssertionError("the whole CSV was checked again")

    monkeypatch.setattr(results, "check_rows", not_again)
    code, out, err = cli(capsys, home, "status", measured_session.name)
    assert code == 0 and " result rows · " in out, err


def test_status_on_an_unchanged_csv_hashes_none_of_it(measured_session: Session, sessions_root: Path) -> None:
    """While the CSV's stat signature is the summary's, no digest of it is taken (the
    caches' keyed seals, H-78, are the only HMAC computed)."""
    from gpusession.core.retrieval.status import refresh_counts

    refresh_counts(measured_session.folder)
    code = (
        "import sys, hashlib; calls = []; real = hashlib.sha256\n"
        "def counting(*a, **k):\n    calls.append(1)\n    return real(*a, **k)\n"
        "hashlib.sha256 = counting\n"
        "from gpusession.cli import main\n"
        f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'status', {measured_session.name!r}, "
        "'--format', 'tmux']); print('HASHED', len(calls), rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HASHED 0 0" in done.stdout, done.stdout + done.stderr


def _forge_summary(folder: Path, **values: object) -> None:
    """Rewrite summary.json's fields as a person editing it would, its signature kept (trusted)."""
    from gpusession.core.retrieval.status import refresh_counts

    refresh_counts(folder)
    path = folder / "summary.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update(values)
    path.write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("rows", [True, -5, 10**400, 2.5, "7"],
                         ids=["bool", "negative", "400-digits", "float", "string"])
def test_status_recounts_a_summary_whose_counts_are_no_count(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str], rows: object) -> None:
    code, honest, _ = cli(capsys, sessions_root, "status", measured_session.name, "--json")
    want = json.loads(honest)["result_rows"]
    _forge_summary(measured_session.folder, rows=rows)
    code, out, err = cli(capsys, sessions_root, "status", measured_session.name, "--json")
    assert code == 0 and not err
    assert json.loads(out)["result_rows"] == want and isinstance(want, int) and want > 0
    code, out, _ = cli(capsys, sessions_root, "status", measured_session.name)
    assert f" {want} result rows · " in out


def test_status_recounts_a_summary_with_more_corpora_than_rows(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, honest, _ = cli(capsys, sessions_root, "status", measured_session.name, "--json")
    _forge_summary(measured_session.folder, rows=1, accepted_revisions=["a", "b", "c"])
    _, out, _ = cli(capsys, sessions_root, "status", measured_session.name, "--json")
    assert json.loads(out)["accepted_corpora"] == json.loads(honest)["accepted_corpora"]


def test_status_never_reads_summary_json_through_a_link(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    _, honest, _ = cli(capsys, sessions_root, "status", measured_session.name, "--json")
    _forge_summary(measured_session.folder, rows=999)
    summary = measured_session.folder / "summary.json"
    forged = tmp_path / "forged.json"
    summary.rename(forged)
    summary.symlink_to(forged)
    code, out, err = cli(capsys, sessions_root, "status", measured_session.name, "--json")
    assert code == 0 and not err
    assert json.loads(out)["result_rows"] == json.loads(honest)["result_rows"] != 999


def test_status_recounts_a_summary_nested_past_the_parser(
        measured_session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, plain, _ = cli(capsys, sessions_root, "status", measured_session.name)
    (measured_session.folder / "summary.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    for form in ((), ("--format", "tmux"), ("--json",)):
        code, out, err = cli(capsys, sessions_root, "status", measured_session.name, *form)
        assert code == 0 and not err and "Traceback" not in out
    assert cli(capsys, sessions_root, "status", measured_session.name) == (0, plain, "")
