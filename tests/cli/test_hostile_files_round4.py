"""Hand-editable files that are too deep or too big, and numbers past their meaning (H-39, H-41, H-47, H-48).

Each test drives the CLI in-process and checks the promise: one line naming the file
(and the field or the bound), exit 2, no traceback, the folder unchanged; ``list`` keeps
listing the other sessions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli, digest, one_line

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import MAX_DEPTH, loads_json, loads_toml


def _new(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> Path:
    code, _, err = cli(capsys, root, "new", name, "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
                       "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    return root / name


@pytest.fixture
def two(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> tuple[Path, Path]:
    return _new(capsys, sessions_root, "base"), _new(capsys, sessions_root, "other")


# -- H-39: nested past the parser -----------------------------------------------------------
@pytest.mark.parametrize("name", ["checklist.toml", "order.toml", "session.toml"])
@pytest.mark.parametrize("command", [["show", "base"], ["status", "base"], ["order", "base", "show"],
                                     ["report", "base"], ["compare", "base", "other"], ["list"]])
def test_h39_a_file_nested_past_the_parser_is_one_line(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, two: tuple[Path, Path],
    name: str, command: list[str],
) -> None:
    base, _ = two
    p = base / name
    p.write_text(p.read_text() + "\nxdeep = " + "[" * 500 + "]" * 500 + "\n")
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, *command)
    assert "Traceback" not in err and "RecursionError" not in out + err
    if command == ["list"]:  # the other session is still listed, the bad one named
        assert code == 0, err
        assert "other" in out and "nested too deep (past 64 levels)" in out and name in out
    else:
        assert code == 2, (out, err)
        line = one_line(err)
        assert name in line and "nested too deep (past 64 levels)" in line
    assert digest(base) == before


def test_h39_host_check_nested_too_deep_is_named_in_show(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, two: tuple[Path, Path],
) -> None:
    base, _ = two
    (base / "host-check.toml").write_text("schema = 1\nx = " + "[" * 1000 + "]" * 1000 + "\n")
    code, out, err = cli(capsys, sessions_root, "show", "base")
    assert code == 0 and "Traceback" not in err
    assert "host-check.toml" in out and "nested too deep" in out


@pytest.mark.parametrize("text", [
    "x = " + "[" * 70 + "]" * 70,  # brackets
    "x = " + "{a = " * 70 + "1" + "}" * 70,  # inline tables
    "x." + ".".join(["a"] * 200) + " = 1",  # dotted keys: no bracket at all
], ids=["brackets", "inline-tables", "dotted-keys"])
def test_h39_every_toml_form_of_deep_nesting_is_refused(text: str) -> None:
    with pytest.raises(BadInput, match=r"nested too deep \(past 64 levels\)"):
        loads_toml(text, "f.toml")


def test_h39_brackets_inside_strings_and_comments_do_not_count() -> None:
    deep = "[" * (MAX_DEPTH + 10)
    text = (f's = "{deep}"\nl = \'{deep}\'\nm = """\n{deep}\n"""\nn = \'\'\'{deep}\'\'\'\n'
            f'e = "a\\"{deep}"\n# {deep}\nv = [[1]]\n')
    doc = loads_toml(text, "f.toml")
    assert doc["s"] == deep and doc["v"] == [[1]]
    assert loads_json(json.dumps({"k": deep, "e": '"' + deep}), "f.json")["k"] == deep


def test_h39_json_deep_never_raises_recursion_error() -> None:
    with pytest.raises(BadInput, match=r"f\.json:1: nested too deep"):
        loads_json("[" * 5000 + "]" * 5000, "f.json")


def test_h39_summary_json_and_journal_deep_are_read_around(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, two: tuple[Path, Path],
) -> None:
    base, _ = two
    (base / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    with (base / "journal.jsonl").open("a") as fh:
        fh.write('{"event": "note", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    for command in (["show", "base"], ["status", "base"], ["list"]):
        code, _, err = cli(capsys, sessions_root, *command)
        assert code == 0 and "Traceback" not in err, (command, err)


# -- H-48: huge strings, huge files ---------------------------------------------------------
def test_h48_a_huge_host_check_is_refused_by_its_size_unread_naming_its_bound(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, two: tuple[Path, Path],
) -> None:
    base, _ = two
    (base / "host-check.toml").write_text(
        'schema = 1\n[hosts."h b"]\nhostname = "h"\nchecked_at = 2026-11-29T10:00:00Z\n'
        'deviation = "' + "A" * 4_000_000 + '"\n')
    code, out, err = cli(capsys, sessions_root, "show", "base")
    assert code == 0 and "Traceback" not in err
    assert "host-check.toml" in out and "1 MiB" in out


@pytest.mark.parametrize("name, key", [("checklist.toml", '[items.g1]\nnote'),
                                       ("order.toml", '[order]\nnumber'),
                                       ("session.toml", '[package]\nextra_words')])
def test_h48_a_field_past_the_notes_bound_is_refused_naming_the_field(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, two: tuple[Path, Path], name: str, key: str,
) -> None:
    base, _ = two
    p = base / name
    text = p.read_text()
    table, field = key.split("\n")
    body = f'{field} = "' + "A" * 5000 + '"'
    text = text.replace(table + "\n", table + "\n" + body + "\n", 1) if table in text else (
        text + "\n" + table + "\n" + body + "\n")
    p.write_text(text)
    code, _, err = cli(capsys, sessions_root, "show", "base")
    assert code == 2
    line = one_line(err)
    assert name in line and field in line and "4,096 bytes" in line and "AAAA" not in line


def test_h48_a_toml_file_past_one_mib_is_refused_before_parsing(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, two: tuple[Path, Path],
) -> None:
    base, _ = two
    p = base / "checklist.toml"
    p.write_text(p.read_text() + "\n" + "# padding\n" * 120_000)  # 1.2 MB of comments: valid TOML
    code, _, err = cli(capsys, sessions_root, "show", "base")
    assert code == 2
    line = one_line(err)
    assert "checklist.toml" in line and "1 MiB" in line


# -- H-41: numbers past what they can mean ---------------------------------------------------
def _edit_cell(csv_path: Path, row: int, column: str, value: str) -> int:
    """Set one cell of the results CSV; the physical line of that row (1-based)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(csv_path.read_text(), newline="")))
    rows[row][rows[0].index(column)] = value
    with csv_path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    return row + 1


@pytest.mark.parametrize("column, value", [
    ("elapsed_seconds", "1" + "0" * 400),
    ("elapsed_seconds", "1" + "0" * 25),
    ("elapsed_seconds", "31536000.5"),
    ("peak_allocated_bytes", str(2**63)),
    ("observed_ids", str(10**15)),
    ("run_index", "9" * 5000),
    ("quality_value", "-5.0"),
    ("quality_value", "1.5"),
], ids=["duration-400-zeros", "duration-25-zeros", "duration-past-a-year", "bytes", "count",
        "int-5000-digits",
        "quality-negative", "quality-past-1"])
@pytest.mark.parametrize("command", [["show"], ["export", "--format", "hyperfine-json"], ["report"],
                                     ["status"]])
def test_h41_a_cell_past_its_meaning_is_refused_as_file_line_field(
    capsys: pytest.CaptureFixture[str], measured_session: object, column: str, value: str,
    command: list[str],
) -> None:
    from gpusession.core.folder.session import Session

    assert isinstance(measured_session, Session)
    folder = measured_session.folder
    line = _edit_cell(folder / "resultats-bruts.csv", 3, column, value)
    before = digest(folder)
    code, out, err = cli(capsys, folder.parent, command[0], measured_session.name, *command[1:])
    assert code == 2, (out, err)
    one = one_line(err)
    assert f"resultats-bruts.csv:{line}: {column}: expected" in one
    assert value not in one and "10000000000000000905969664" not in out + err
    assert digest(folder) == before


@pytest.mark.parametrize("edit, words", [
    (("lots = 1", "lots = 1" + "0" * 400), "package.lots: expected a whole number within 64 bits"),
    (("lots = 1", "lots = 1" + "0" * 5000), "a number too long to read"),
    (("name = ", "[limit]\nreserve_s = inf\n[x]\nname = "), "limit.reserve_s: expected a duration under a year"),
    (("name = ", "[limit]\nreserve_s = 40000000\n[x]\nname = "), "under a year"),
], ids=["whole-400-digits", "whole-5000-digits", "inf-seconds", "seconds-past-a-year"])
def test_h41_a_toml_number_past_its_meaning_is_refused(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, two: tuple[Path, Path],
    edit: tuple[str, str], words: str,
) -> None:
    base, _ = two
    p = base / "session.toml"
    text = p.read_text()
    old, new = edit
    if old == "name = ":  # a table after the top-level keys: appended
        text = text + "\n" + new.split("[x]")[0]
    else:
        assert old in text
        text = text.replace(old, new, 1)
    p.write_text(text)
    code, _, err = cli(capsys, sessions_root, "show", "base")
    assert code == 2
    line = one_line(err)
    assert "session.toml" in line and words in line and "0" * 30 not in line


# -- H-47: a cache edited by hand -----------------------------------------------------------
@pytest.mark.parametrize("edit", [
    {"rows": 9999}, {"rows": 13},  # past the CSV's lines (12 rows, 13 lines with the header)
    {"accepted_revisions": [f"sha256:{i}" for i in range(14)]},  # more accepted than rows
    {"rows": 5}, {"rows": 0}, {"rows": 11},  # lowered: still a count the CSV could hold
    {"accepted_revisions": []},  # the accepted corpus emptied
    {"rows": 5, "accepted_revisions": []},
    {"accepted_revisions": ["sha256:other"]},  # as many accepted, another revision
    {"counts_check": None, "rows": 5},  # a summary written before its counts were checked
], ids=["rows-9999", "rows-one-past-the-lines", "accepted-past-rows", "rows-lowered-to-5",
        "rows-lowered-to-0", "rows-one-less", "accepted-emptied", "both-lowered", "accepted-renamed",
        "no-check-rows-lowered"])
def test_h47_status_list_and_show_agree_on_a_summary_edited_by_hand(
    capsys: pytest.CaptureFixture[str], measured_session: object, edit: dict[str, object],
) -> None:
    from gpusession.core.folder.session import Session
    from gpusession.core.retrieval.status import current_counts, refresh_counts

    assert isinstance(measured_session, Session)
    folder, name = measured_session.folder, measured_session.name
    truth = refresh_counts(folder)
    assert truth.rows == 12 and truth.accepted_unique_corpora == 1
    summary = folder / "summary.json"
    doc = json.loads(summary.read_text())
    doc.update(edit)  # csv_stat and csv_sha256 kept: the cache still "describes" the CSV
    summary.write_text(json.dumps(doc))
    assert current_counts(folder).rows == 12
    assert current_counts(folder).accepted_revisions == truth.accepted_revisions
    code, status_out, err = cli(capsys, folder.parent, "status", name)
    assert code == 0, err
    assert "12 result rows" in status_out and "9999" not in status_out
    assert " · 1 accepted corpus · " in status_out, status_out
    code, tmux_out, _ = cli(capsys, folder.parent, "status", name, "--format", "tmux")
    assert code == 0 and " 12r " in tmux_out and " 1acc " in tmux_out, tmux_out
    code, json_out, _ = cli(capsys, folder.parent, "status", name, "--json")
    got = json.loads(json_out)
    assert (got["result_rows"], got["accepted_corpora"]) == (12, 1)
    code, list_out, _ = cli(capsys, folder.parent, "list")
    assert code == 0 and f"{name}" in list_out
    row = next(ln for ln in list_out.splitlines() if ln.startswith(name))
    assert row.split()[-2:] == ["12", str(len(truth.accepted_revisions))]
    code, show_out, _ = cli(capsys, folder.parent, "show", name)
    assert code == 0 and "12 rows" in show_out


def test_h47_status_reads_no_csv_byte_while_its_summary_is_intact(
    capsys: pytest.CaptureFixture[str], measured_session: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counts' own check costs no read of the CSV: tmux's call every few seconds stays a stat."""
    import builtins
    import io
    import os

    from gpusession.core.folder.session import Session
    from gpusession.core.retrieval.status import refresh_counts

    assert isinstance(measured_session, Session)
    folder, name = measured_session.folder, measured_session.name
    refresh_counts(folder)
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path: object, *a: object, **k: object) -> int:
        opened.append(str(path))
        return real_os_open(path, *a, **k)  # type: ignore[arg-type]

    def any_open(path: object, *a: object, **k: object) -> object:
        opened.append(str(path))
        return real_open(path, *a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", any_open)
    monkeypatch.setattr(io, "open", any_open)
    code, out, err = cli(capsys, folder.parent, "status", name, "--format", "tmux")
    monkeypatch.undo()
    assert code == 0 and " 12r " in out, err
    assert any(p.endswith("summary.json") for p in opened), opened  # the cache was read …
    assert not any(p.endswith("resultats-bruts.csv") for p in opened), opened  # … and the CSV was not


@pytest.mark.parametrize("edit", [
    {"count": 9999, "short": "9,999 visuals", "words": "9,999 approved visuals"},  # raised
    {"count": 0, "short": "0 visuals", "words": "no approved visual yet"},  # lowered
    {"words": "2 approved visuals" + "A" * 500},  # a huge field
    {"check": None},  # written before the check
    {"short": "99 visuals"},  # the tmux words alone
    {"words": "99 accepted visuals"},  # the plain words alone
    {"unit": "corpus", "unit_plural": "corpora", "short": "2 corpora"},  # another unit
], ids=["raised", "lowered", "huge-words", "no-check", "short-only", "words-only", "unit"])
def test_h47_status_and_list_never_say_a_count_cache_edited_by_hand(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
        edit: dict[str, object]) -> None:
    """``count-cache.json`` with its key kept and its count edited, up or down: ``status``
    and ``list`` say no count ``show`` would not (``? visuals`` until counted anew)."""
    assert cli(capsys, sessions_root, "new", "v", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
               "--unit", "visual")[0] == 0
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for i in (1, 2):
        (out_dir / f"visual-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]))
    assert cli(capsys, sessions_root, "approve", "v", *(str(p) for p in sorted(out_dir.iterdir())),
               "--by", "Ana")[0] == 0
    code, out, err = cli(capsys, sessions_root, "status", "v", "--format", "tmux")
    assert code == 0 and " 2 visuals " in out, out + err
    cache = sessions_root / "v" / "count-cache.json"
    doc = json.loads(cache.read_text())
    doc.update(edit)  # the key kept: the cache still "describes" the files
    cache.write_text(json.dumps(doc))
    _, show_out, _ = cli(capsys, sessions_root, "show", "v")
    assert "2 approved visuals" in show_out
    for args in (["status", "v"], ["status", "v", "--format", "tmux"], ["list"]):
        code, out, err = cli(capsys, sessions_root, *args)
        assert code == 0, err
        assert "9,999" not in out and "0 visuals" not in out and "AAAA" not in out, (args, out)
        assert "99 " not in out and "corpora" not in out, (args, out)
        assert "2 visuals" in out or "2 approved visuals" in out or "? visuals" in out, (args, out)


def test_h47_an_edit_that_keeps_size_and_puts_the_mtime_back_is_still_seen(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    """An approved file (or ``approvals.toml``) edited to the same size with its mtime put
    back: ``status`` and ``list`` no longer say the old count (the ctime moved)."""
    import os

    assert cli(capsys, sessions_root, "new", "v", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
               "--unit", "visual")[0] == 0
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for i in (1, 2):
        (out_dir / f"visual-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]) * 40)
    assert cli(capsys, sessions_root, "approve", "v", *(str(p) for p in sorted(out_dir.iterdir())),
               "--by", "Ana")[0] == 0
    _, out, _ = cli(capsys, sessions_root, "status", "v", "--format", "tmux")
    assert " 2 visuals " in out, out
    target = out_dir / "visual-1.png"
    st = os.stat(target)
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    _, show_out, _ = cli(capsys, sessions_root, "show", "v")
    assert "1 approved visual" in show_out
    for args in (["status", "v", "--format", "tmux"], ["status", "v"], ["list"]):
        _, out, _ = cli(capsys, sessions_root, *args)
        assert "2 visuals" not in out and "2 approved" not in out and "? visuals" in out, (args, out)
