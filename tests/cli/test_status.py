"""``gpusession status``, the end-of-package warnings and ``summary.json``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import SESSION_START, cli

from gpusession.core.folder.package import Package

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

END = SESSION_START + timedelta(days=7)


@pytest.mark.parametrize(
    ("before_end", "verified", "plain", "tmux"),
    [
        (timedelta(hours=25), False, None, None),
        (timedelta(hours=23), False, "WARNING: less than 24 h left, copy home not verified (gpusession pull)",
         "<24h left, copy not verified"),
        (timedelta(hours=1), False, "WARNING: less than 2 h left, copy home not verified (gpusession pull)",
         "<2h left, copy not verified"),
        (timedelta(hours=1), True, None, None),
        (-timedelta(minutes=5), False, "WARNING: package ended, copy home not verified", "package ended"),
        (-timedelta(minutes=5), True, "WARNING: package ended ·", "package ended"),
    ],
)
def test_status_warnings_on_a_fake_clock(session, before_end: timedelta, verified: bool,
                                         plain: str | None, tmux: str | None) -> None:
    from gpusession.core.retrieval.checklist import set_done
    from gpusession.core.retrieval.status import session_status
    from gpusession.testing import FakeClock

    if verified:
        set_done(session, "g8.verify-copy", True)
    clock = FakeClock(END - before_end)
    st = session_status(session.folder, now=clock())
    line, bar = st.line(), st.tmux()
    if plain is None:
        assert "WARNING" not in line and "#[" not in bar
    else:
        assert line.startswith(plain)
        assert tmux is not None and f"#[fg=colour231,bg=colour160,bold] {tmux} #[default]" in bar
    assert "visuals-test-01" in line and "0 result rows" in line and "0 accepted corpora" in line
    if before_end > timedelta(0):
        assert ("23h 00m left" if before_end == timedelta(hours=23) else "left") in line
    else:
        assert "ended 5m ago" in line
    assert ("copy home verified" if verified else "copy home not verified") in line


def test_status_cli_line_without_name_is_most_recent(sessions_root: Path, new_session,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.files.clock import utcnow

    new_session("older", package=Package(gpu_model="RTX A5000", lots=1, days=3,
                                         start=SESSION_START - timedelta(days=60)))
    new_session("recent", package=Package(gpu_model="RTX A5000", lots=1, days=3,
                                          start=utcnow() - timedelta(days=3) + timedelta(hours=1, minutes=30)))
    for f in (sessions_root / "older").iterdir():
        os.utime(f, (1, 1))
    code, out, _ = cli(capsys, sessions_root, "status")
    assert code == 0
    assert out.startswith("WARNING: less than 2 h left, copy home not verified")
    assert re.search(r"· recent · 1h (29|30)m left · 0 result rows", out)  # read by the real clock
    code, out, _ = cli(capsys, sessions_root, "status", "older", "--format", "tmux")
    assert out.startswith("#[fg=colour231,bg=colour160,bold] package ended #[default] older ended ")
    code, out, err = cli(capsys, sessions_root, "status", "nope")
    assert code == 2 and "no session 'nope'" in err


def test_status_show_warns_too(sessions_root: Path, new_session, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.files.clock import utcnow

    new_session("s1", package=Package(gpu_model="RTX A5000", lots=1, days=3,
                                      start=utcnow() - timedelta(days=3) + timedelta(hours=20)))
    code, out, _ = cli(capsys, sessions_root, "show", "s1")
    assert code == 0
    assert "copy home not verified" in out
    assert "WARNING   less than 24 h left, copy home not verified (gpusession pull)" in out
    shown = json.loads(cli(capsys, sessions_root, "show", "s1", "--json")[1])
    assert shown["copy_home_verified"] is False
    assert shown["warning"] == "less than 24 h left, copy home not verified (gpusession pull)"


def test_status_imports_no_polars_torch_textual_and_dispatches_early(session, sessions_root: Path) -> None:
    code = (
        "import sys; from gpusession.cli import main; "
        f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'status', '--format', 'tmux']); "
        "heavy = [m for m in ('polars', 'torch', 'textual', 'psutil', 'gpusession.commands.run_cmds', "
        "'scipy', 'matplotlib') "
        "if m in sys.modules]; print('HEAVY', heavy, rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY [] 0" in done.stdout, done.stdout + done.stderr


#: Every gpusession module ``status --format tmux`` may load: the command, the choice of the
#: sessions folder and of the session, the session's
#: files it reads (package, limit, counts, the journal's run ends) and their readers (with
#: the TOML depth check), the arguments' byte check, the cached count of deliverables, and
#: ``@frozen`` (their value classes without :mod:`dataclasses`), and the seal of the copy
#: check it vouches for (standard library only, H-58), the registry of the kinds of
#: deliverable (which experiments a count cache depends on), and the state files it keeps (the
#: journal's fold, the checked TOML files: written without the TOML writer). The secret detectors are not
#: among them: a plain name and our own words need no detector.
STATUS_TMUX_MODULES = frozenset({
    "gpusession", "gpusession.cli", "gpusession.commands", "gpusession.commands.argtext",
    "gpusession.commands.status_cmd",
    "gpusession.core", "gpusession.core.events", "gpusession.core.events.scan",
    "gpusession.core.files", "gpusession.core.files.bounds", "gpusession.core.files.clock", "gpusession.core.files.errors",
    "gpusession.core.files.fieldbound",
    "gpusession.core.files.frozen", "gpusession.core.files.names", "gpusession.core.files.nesting", "gpusession.core.files.safefile",
    "gpusession.core.files.schema",
    "gpusession.core.files.seal", "gpusession.core.files.secretgate", "gpusession.core.files.sessionname",
    "gpusession.core.files.textio", "gpusession.core.files.tomlread", "gpusession.core.folder",
    "gpusession.core.folder.caches", "gpusession.core.folder.copy_home", "gpusession.core.folder.journal_state", "gpusession.core.folder.root",
    "gpusession.core.folder.package", "gpusession.core.records.csvkeys", "gpusession.core.money", "gpusession.core.money.count_cache",
    "gpusession.core.money.window",
    "gpusession.core.retrieval", "gpusession.core.retrieval.status", "gpusession.core.copyhome", "gpusession.core.copyhome.limit",
    "gpusession.core.records", "gpusession.core.records.kinds",  # the kinds of deliverable the count names
})


def test_s6_status_tmux_loads_only_the_modules_it_uses(measured_session, sessions_root: Path) -> None:
    """On a session whose ``summary.json`` describes its CSV, as the runner leaves it."""
    from gpusession.core.retrieval.status import refresh_counts

    refresh_counts(measured_session.folder)
    code = (
        "import sys; from gpusession.cli import main; "
        f"rc = main(['--sessions-dir', {str(sessions_root)!r}, 'status', '--format', 'tmux']); "
        "ours = sorted(m for m in sys.modules if m.split('.')[0] == 'gpusession'); "
        "theirs = sorted(m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names "
        "and m.split('.')[0] not in ('gpusession', '__main__', '_distutils_hack')); "
        "slow = [m for m in ('dataclasses', 'inspect', 'ast', 'dis') if m in sys.modules]; "
        "print('OURS', ' '.join(ours)); print('THEIRS', ' '.join(theirs)); print('RC', rc); "
        "print('SLOW', ' '.join(slow))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    out = dict(line.partition(" ")[::2] for line in done.stdout.splitlines() if line[:2] in ("OU", "TH", "RC", "SL"))
    assert out.get("RC") == "0", done.stdout + done.stderr
    ours = set(out["OURS"].split())
    assert ours <= STATUS_TMUX_MODULES, sorted(ours - STATUS_TMUX_MODULES)
    assert "gpusession.core.files.secrets" not in ours and "gpusession.core.files.detectors" not in ours
    assert out.get("SLOW") == "", out.get("SLOW")  # dataclasses pulls inspect: ~10 ms
    theirs = [m for m in out.get("THEIRS", "").split()
              if not (sys.version_info < (3, 11) and m.split(".")[0] == "tomli")]  # 3.10's tomllib
    assert theirs == []  # no third-party module at all (no mnemonic, no polars)


def test_s6_status_tmux_still_refuses_a_secret_looking_name_without_quoting_it(
        sessions_root: Path, new_session) -> None:
    token = "hf_" + "a1B2c3D4e5" * 4
    new_session(name="plain")
    (sessions_root / token).mkdir()  # a folder made by hand: gpusession never names one so
    code = ("import sys; from gpusession.cli import main; "
            f"sys.exit(main(['--sessions-dir', {str(sessions_root)!r}, 'status', {token!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Hugging Face token" in done.stderr, done.stderr
    assert token[3:] not in done.stdout + done.stderr


def test_status_summary_json_follows_appended_rows(measured_session) -> None:
    from gpusession.core.records.results import ResultsFile
    from gpusession.core.records.summary import accepted_unique_corpora
    from gpusession.core.retrieval.status import current_counts, refresh_counts

    s = measured_session
    frame = s.results.read()
    first = refresh_counts(s.folder)
    assert first.rows == frame.height
    assert first.accepted_unique_corpora == accepted_unique_corpora(frame)
    doc = json.loads((s.folder / "summary.json").read_text())
    assert doc["rows"] == frame.height and doc["csv_size_bytes"] == (s.folder / "resultats-bruts.csv").stat().st_size
    # a row with a note that holds a line break and a comma, appended after the summary
    row = frame.row(0, named=True) | {"notes": "two\nlines, quoted", "corpus_revision": "newrev",
                                      "corpus_accepted": True}
    ResultsFile(s.folder / "resultats-bruts.csv").append(row)
    now = current_counts(s.folder)  # reads only the appended bytes
    assert now.rows == frame.height + 1
    assert now.accepted_unique_corpora == first.accepted_unique_corpora + 1
    (s.folder / "summary.json").unlink()
    assert current_counts(s.folder) == now  # rebuilt from the whole file


def test_status_counts_follow_validate_session(run_cli, sessions_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_cli("new", "vis", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\n" + "".join(f"v{i},{'a' if i % 2 else 'b'}\n" for i in range(6)))
    out = tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps({"id": f"v{i}", "label": "a" if i % 2 else "b"}) + "\n" for i in range(6)))
    for _ in range(2):
        assert run_cli("validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions", str(out), "--classes", "a,b",
                       "--session", "vis").returncode == 0
    doc = json.loads((sessions_root / "vis" / "summary.json").read_text())
    assert doc["rows"] == 2 and len(doc["accepted_revisions"]) == 1
    line = run_cli("status", "vis").stdout
    assert "vis · " in line and " · 2 result rows · 1 accepted corpus · copy home not verified" in line


# -- `status` refuses what `show` refuses, with the same line ----------
@pytest.mark.parametrize(
    ("file", "old", "new", "words"),
    [
        ("session.toml", "lots = 1", 'lots = "one"', "package.lots: expected a whole number, got text"),
        ("session.toml", "schema = 1", "schema = 2", "schema 2 was written by a newer gpusession"),
        ("session.toml", "schema = 1", 'schema = "1"', "schema: expected an integer, got '1'"),
        ("session.toml", "days = 7", "days = 5", "days"),
        ("checklist.toml", "schema = 1", "schema = 1\n[broken", "TOML syntax error"),
        ("order.toml", "schema = 1", "schema = 1\nevents = 5", "events: expected a list of tables"),
    ],
)
def test_status_refuses_what_show_refuses_same_line(
        sessions_root: Path, capsys: pytest.CaptureFixture[str], file: str, old: str, new: str,
        words: str) -> None:
    assert cli(capsys, sessions_root, "new", "s1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    path = sessions_root / "s1" / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    code, out, err = cli(capsys, sessions_root, "show", "s1")
    assert code == 2 and words in err, err
    shown = err.strip()
    for args in (("status", "s1"), ("status",)):
        code, out, err = cli(capsys, sessions_root, *args)
        assert (code, out) == (2, "")
        assert err.strip() == shown
    code, out, err = cli(capsys, sessions_root, "status", "s1", "--format", "tmux")
    assert (code, out, err) == (0, "gpusession: s1: run gpusession status\n", "")


@pytest.mark.parametrize("name", ["resultats-bruts.csv", "journal.jsonl"])
def test_status_refuses_symlinked_csv_and_journal(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    assert cli(capsys, sessions_root, "new", "s1", "--days", "7")[0] == 0
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not a results file\n")
    link = sessions_root / "s1" / name
    link.unlink(missing_ok=True)
    link.symlink_to(elsewhere)
    code, out, err = cli(capsys, sessions_root, "status", "s1")
    assert (code, out) == (2, "")
    assert err.strip() == (f"gpusession: error: {link}: is a symbolic link; gpusession never writes "
                           "through a link (replace it with the file itself); nothing was written")


def test_status_says_unfinished_runs_until_opened(sessions_root: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, sessions_root, "new", "s1", "--days", "7")[0] == 0
    journal = sessions_root / "s1" / "journal.jsonl"
    with journal.open("a") as fh:  # a run started, then the machine lost power
        fh.write(json.dumps({"at": "2026-12-01T01:00:00+00:00", "event": "run_started", "v": 1,
                             "run_key": "exp1/warm/v1/0", "experiment_id": "exp1",
                             "variant_id": "v1", "phase": "warm", "run_index": 0}) + "\n")
    code, out, _ = cli(capsys, sessions_root, "status", "s1")
    assert code == 0
    assert " · 0 result rows · 1 unfinished run(s): `gpusession show " in out
    assert " records them; `gpusession run " in out and " --resume` measures the rest · " in out
    assert " 0r 1 unfinished " in cli(capsys, sessions_root, "status", "s1", "--format", "tmux")[1]
    assert cli(capsys, sessions_root, "show", "s1")[0] == 0  # opening records the incident row
    code, out, _ = cli(capsys, sessions_root, "status", "s1")
    assert " · 1 result row · " in out and "unfinished" not in out


# -- a package that starts later -----------------------------------------
def test_future_start_says_starts_in_everywhere(sessions_root: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from gpusession.core.files.clock import utcnow
    from gpusession.core.folder.session import Session
    from gpusession.ui.header import package_words

    start = (utcnow() + timedelta(days=5, seconds=30)).isoformat()
    assert cli(capsys, sessions_root, "new", "future", "--days", "3", "--start", start)[0] == 0
    words = "starts in 5d 00h; 3d 00h 00m once started"
    code, out, _ = cli(capsys, sessions_root, "status", "future")
    assert code == 0 and f"future · {words} · 0 result rows" in out
    assert "8d" not in out and "WARNING" not in out
    code, out, _ = cli(capsys, sessions_root, "show", "future")
    assert f"time left {words}\n" in out
    s = Session.open(sessions_root, "future")
    ctx = SimpleNamespace(session=s, tz=None, now=utcnow)
    assert package_words(ctx).endswith(f", {words}")  # type: ignore[arg-type]
    assert package_words(ctx, short=True).endswith(", starts in 5d 00h; 3d 00h once started")  # type: ignore[arg-type]


def test_list_and_package_say_starts_in_as_status_and_show_do(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``list`` (and ``package``, which prints the package) word a package that starts
    later as ``status`` and ``show`` do, never "left 8d" counted from now."""
    from gpusession.core.files.clock import utcnow

    start = (utcnow() + timedelta(days=5, seconds=30)).isoformat()
    assert cli(capsys, sessions_root, "new", "now", "--days", "7")[0] == 0
    assert cli(capsys, sessions_root, "new", "future", "--days", "3", "--start", start)[0] == 0
    words = "starts in 5d 00h; 3d 00h 00m once started"
    assert f"future · {words} · 0 result rows" in cli(capsys, sessions_root, "status", "future")[1]
    code, out, _ = cli(capsys, sessions_root, "list")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert f" 3d, {words} " in lines["future"] and "8d" not in lines["future"], out
    assert re.search(r" 7d, (6d 23h 59m|7d 00h 00m) left ", lines["now"]), out  # the words of status
    # the columns stay aligned with a longer window
    assert len({len(line) for line in out.splitlines()}) == 1, out  # ACCEPTED is right-aligned
    code, out, _ = cli(capsys, sessions_root, "package", "future", "--lots", "2")
    assert code == 0 and out.rstrip().endswith(f", {words}") and "left" not in out, out


# -- the tmux snippet works from any folder -------------------------------
def test_status_from_any_folder_uses_the_remembered_sessions_dir(
        sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.folder.root import state_file

    assert cli(capsys, sessions_root, "new", "s1", "--days", "7")[0] == 0
    assert state_file().read_text() == f"{sessions_root}\n"
    elsewhere = tmp_path / "home-dir"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "GPUSESSION_HOME"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parents[2] / "src"),
                                                    env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-m", "gpusession", "status", "--format", "tmux"],
                          cwd=elsewhere, capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert re.match(r"s1 (6d 23h 59m|7d 00h 00m) left 0r 0acc copy not verified\n\Z", done.stdout)
    state_file().unlink()  # nothing remembered, no ./sessions: a short text, exit 0
    done = subprocess.run([sys.executable, "-m", "gpusession", "status", "--format", "tmux"],
                          cwd=elsewhere, capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "gpusession: no session\n", "")
    done = subprocess.run([sys.executable, "-m", "gpusession", "status"],
                          cwd=elsewhere, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and f"no session in {elsewhere / 'sessions'}" in done.stderr


# -- said once, rounded once -----------------------------------------------
def test_copy_not_verified_said_once(session) -> None:  # type: ignore[no-untyped-def]
    from gpusession.core.retrieval.status import session_status

    for before_end in (-timedelta(minutes=5), timedelta(hours=1), timedelta(hours=23)):
        st = session_status(session.folder, now=END - before_end)
        assert st.line().count("not verified") == 1, st.line()
        assert st.tmux().count("not verified") == 1, st.tmux()


def test_time_left_floored_one_helper_for_status_and_show(
        sessions_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.core.money.window import short_timedelta

    assert short_timedelta(timedelta(minutes=29, seconds=59, microseconds=900_000)) == "29m"
    assert short_timedelta(timedelta(days=1, seconds=59.5)) == "1d 00h 00m"
    assert short_timedelta(-timedelta(microseconds=500_000)) == "ended 0m ago"
    assert short_timedelta(-timedelta(minutes=5, seconds=59)) == "ended 5m ago"
    assert cli(capsys, sessions_root, "new", "s1", "--days", "3",
               "--start", (SESSION_START - timedelta(days=3) + timedelta(minutes=30)).isoformat())[0] == 0
    at = SESSION_START + timedelta(seconds=1)  # 29m 59s left: floored, never rounded up
    monkeypatch.setenv("GPUSESSION_NOW", at.isoformat())  # the clock the commands read (A6)
    out_status = cli(capsys, sessions_root, "status", "s1")[1]
    out_show = cli(capsys, sessions_root, "show", "s1")[1]
    assert " · 29m left · " in out_status
    assert "time left 29m\n" in out_show


def test_status_refuses_a_csv_show_refuses(sessions_root: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, sessions_root, "new", "s1", "--days", "7")[0] == 0
    (sessions_root / "s1" / "resultats-bruts.csv").write_text("hello world\n")  # no summary.json
    code, _, shown = cli(capsys, sessions_root, "show", "s1")
    assert code == 2 and "header column 1 is 'hello world'" in shown
    code, out, err = cli(capsys, sessions_root, "status", "s1")
    assert (code, out, err) == (2, "", shown)
