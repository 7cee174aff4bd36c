"""CLI end to end (subprocess): new / show / list / package, and bad input (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import RunCli


def test_new_then_show_json_round_trips_every_field(run_cli: RunCli, sessions_root: Path) -> None:
    r = run_cli("new", "t1", "--gpu", "RTX A5000", "--lots", "1", "--days", "7", "--start", "2026-11-29T14:00:00Z")
    assert r.returncode == 0, r.stderr
    r = run_cli("show", "t1", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["name"] == "t1"
    assert data["package"]["gpu_model"] == "RTX A5000"
    assert data["package"]["lots"] == 1
    assert data["package"]["days"] == 7
    assert data["package"]["start"] == "2026-11-29T14:00:00+00:00"
    assert data["package"]["end"] == "2026-12-06T14:00:00+00:00"
    assert data["result_rows"] == 0 and data["accepted_corpora"] == 0
    text = run_cli("show", "t1").stdout
    assert "RTX A5000" in text and "time left" in text


def test_list_shows_name_gpu_window_runs_accepted(run_cli: RunCli) -> None:
    run_cli("new", "a1", "--gpu", "B200", "--lots", "2", "--days", "3")
    r = run_cli("list")
    assert r.returncode == 0
    assert "a1" in r.stdout and "B200" in r.stdout and "3d" in r.stdout
    js = json.loads(run_cli("list", "--json").stdout)["sessions"]
    assert js[0]["name"] == "a1" and js[0]["package"]["lots"] == 2
    assert "ROWS" in r.stdout and js[0]["result_rows"] == 0  # the words of the table


def test_package_edits_keep_other_fields(run_cli: RunCli) -> None:
    run_cli("new", "t1", "--gpu", "RTX A5000", "--lots", "1", "--days", "3")
    assert run_cli("package", "t1", "--days", "7").returncode == 0
    data = json.loads(run_cli("show", "t1", "--json").stdout)
    assert data["package"]["days"] == 7 and data["package"]["gpu_model"] == "RTX A5000"


@pytest.mark.parametrize("name", ["../x", "a/b", "", "a" * 300])
def test_bad_session_names_exit_2_without_traceback(run_cli: RunCli, sessions_root: Path, name: str) -> None:
    r = run_cli("new", name)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "name" in r.stderr
    assert list(sessions_root.iterdir()) == []


@pytest.mark.parametrize(
    "args, words",
    [
        (["--days", "5"], "3, 7 or 30"),
        (["--lots", "0"], "≥ 1"),
        (["--lots", "-1"], "≥ 1"),
        (["--start", "2026-11-29T14:00:00"], "offset"),
    ],
)
def test_bad_package_values_exit_2(run_cli: RunCli, sessions_root: Path, args: list[str], words: str) -> None:
    r = run_cli("new", "t1", *args)
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr
    assert not (sessions_root / "t1").exists()


@pytest.mark.parametrize(
    "content, words",
    [
        ('schema = 1\nname = "t1"\ncreated_at = = 1\n', "session.toml:3"),
        ('schema = 99\nname = "t1"\ncreated_at = 2026-11-29T14:00:00Z\n', "newer"),
        ('schema = 1\ncreated_at = 2026-11-29T14:00:00Z\n', "name"),
    ],
)
def test_bad_session_toml_exit_2_file_unchanged(run_cli: RunCli, sessions_root: Path, content: str, words: str) -> None:
    run_cli("new", "t1")
    p = sessions_root / "t1" / "session.toml"
    p.write_text(content)
    for cmd in (["show", "t1"], ["package", "t1", "--days", "7"]):
        r = run_cli(*cmd)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert words in r.stderr and "Traceback" not in r.stderr
    assert p.read_text() == content


def test_bad_csv_header_and_non_utf8_csv_exit_2(run_cli: RunCli, sessions_root: Path) -> None:
    run_cli("new", "t1")
    csv = sessions_root / "t1" / "resultats-bruts.csv"
    csv.write_text("a,b,c\n1,2,3\n")
    r = run_cli("show", "t1")
    assert r.returncode == 2 and "resultats-bruts.csv:1" in r.stderr
    assert csv.read_text() == "a,b,c\n1,2,3\n"
    from gpusession.core.records.results import HEADER_LINE

    raw = (HEADER_LINE + "\n").encode() + "café\n".encode("latin-1")
    csv.write_bytes(raw)
    r = run_cli("show", "t1")
    assert r.returncode == 2 and "UTF-8" in r.stderr and "Traceback" not in r.stderr
    assert csv.read_bytes() == raw


def test_version_and_module_entry_point(run_cli: RunCli) -> None:
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("gpusession ")


def test_no_session_yet_says_how_to_create_one(run_cli: RunCli) -> None:
    r = run_cli()
    assert r.returncode == 1
    assert "gpusession new" in r.stderr


@pytest.mark.slow
def test_s6_cli_window_restarts_at_gpu_provisioned(run_cli, sessions_root) -> None:  # type: ignore[no-untyped-def]
    """A session created before provisioning offers to restart its window there."""
    assert run_cli("new", "early", "--gpu", "RTX A5000", "--lots", "1", "--days", "7").returncode == 0
    show = run_cli("show", "early")
    assert "(window from session creation)" in show.stdout and "record gpu-provisioned" in show.stdout
    refused = run_cli("package", "early", "--start-from", "gpu-provisioned")
    assert refused.returncode == 2 and "no gpu-provisioned event" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    from datetime import timedelta

    from gpusession.core.files.clock import utcnow

    at = (utcnow() + timedelta(hours=3)).replace(microsecond=0)
    ev = run_cli("order", "early", "event", "gpu-provisioned", "--source", "tracking",
                 "--at", at.isoformat())
    assert ev.returncode == 0, ev.stderr
    assert "gpusession package early --start-from gpu-provisioned" in ev.stdout
    assert "--start-from gpu-provisioned" in run_cli("show", "early").stdout
    moved = run_cli("package", "early", "--start-from", "gpu-provisioned")
    assert moved.returncode == 0, moved.stderr
    assert "restarted at the gpu-provisioned event" in moved.stdout
    from gpusession.core.folder.session import Session

    assert Session.open(sessions_root, "early").package.start == at
    show = run_cli("show", "early")
    assert "(window from gpu-provisioned)" in show.stdout and "--start-from" not in show.stdout
