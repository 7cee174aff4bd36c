"""Hostile world, round 6: seals a forger can recompute (H-78).

A copy check's seal is public (a copy home reads it): what it says is re-derived, its
manifest there with the SHA-256 it kept. A cache's seal is keyed with the user's secret:
a seal recomputed from the public code, or a cache of another user, reads as absent.
"""

from __future__ import annotations

import binascii
import json
import os
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest
import tomli_w
from helpers import cli

from gpusession.core.files import seal as seal_module
from gpusession.core.files.seal import key_path, seal_of
from gpusession.core.files.tomlio import tomllib
from gpusession.core.folder.session import Session

pytestmark = pytest.mark.calendar


def _crc(doc: dict[str, object]) -> str:
    """The unkeyed check a forger recomputes from the public code (the one the caches once kept)."""
    canon = json.dumps({k: v for k, v in doc.items() if k != "check"}, sort_keys=True, ensure_ascii=False)
    return f"crc32:{binascii.crc32(canon.encode('utf-8')):08x}"


def _forge_verify_copy(folder: Path, **fields: object) -> None:
    """The attacker's ``[verify_copy]``: verified, a manifest nowhere, its seal recomputed (:func:`seal_of`)."""
    table = {"verified": True, "at": datetime(2026, 11, 29, 15, tzinfo=timezone.utc),
             "manifest": "/nonexistent/manifest.csv", "copy": "/nowhere", "files": 999, **fields}
    table["seal"] = seal_of(table)
    checklist = folder / "checklist.toml"
    doc = tomllib.loads(checklist.read_text()) if checklist.exists() else {"schema": 1}
    doc["verify_copy"] = table
    checklist.write_text(tomli_w.dumps(doc))


def _status(capsys: pytest.CaptureFixture[str], root: Path, name: str) -> str:
    code, out, err = cli(capsys, root, "status", name)
    assert code == 0, err
    return out


def test_h78_a_forged_copy_check_with_its_seal_recomputed_is_never_said_verified(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    _forge_verify_copy(session.folder)  # the attacker's table: no digest, a manifest that is nowhere
    out = _status(capsys, sessions_root, session.name)
    assert "copy home not verified (recorded before gpusession kept the manifest's SHA-256" in out, out
    _forge_verify_copy(session.folder, manifest_sha256="ab" * 32)  # a digest made up as well
    out = _status(capsys, sessions_root, session.name)
    assert "copy home not verified (the manifest it was checked against" in out and "is not there" in out, out
    assert "copy home verified" not in out
    code, report, _ = cli(capsys, sessions_root, "report", session.name, "--out", str(tmp_path / "r.md"))
    assert code == 0 and "copy home verified" not in (tmp_path / "r.md").read_text()
    _, checklist, _ = cli(capsys, sessions_root, "checklist", session.name)
    line = next(ln for ln in checklist.splitlines() if " g8.verify-copy " in ln)
    assert line.lstrip().startswith("[ ] open"), line
    # a real check is vouched for, and said again once its manifest changes
    deliv = tmp_path / "deliverables"
    deliv.mkdir()
    (deliv / "a.txt").write_text("alpha\n")
    assert cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(deliv))[0] == 0
    manifest = session.folder / "manifest.csv"
    assert cli(capsys, sessions_root, "verify-copy", str(manifest), str(deliv))[0] == 0
    out = _status(capsys, sessions_root, session.name)
    assert "copy home verified 2026-11-29 15:00 UTC" in out, out
    manifest.write_text(manifest.read_text() + "\n")  # the manifest edited after its check
    out = _status(capsys, sessions_root, session.name)
    assert "copy home not verified (the manifest" in out and "changed since the check" in out, out
    manifest.unlink()
    out = _status(capsys, sessions_root, session.name)
    assert "is not there" in out, out


def _visual_session(capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path) -> Path:
    assert cli(capsys, root, "new", "v", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
               "--unit", "visual")[0] == 0
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "visual-1.png").write_bytes(b"\x89PNG\r\n\x1a\n1")
    assert cli(capsys, root, "approve", "v", str(out_dir / "visual-1.png"), "--by", "Ana")[0] == 0
    code, out, _ = cli(capsys, root, "status", "v", "--format", "tmux")
    assert code == 0 and " 1 visual" in out, out
    return root / "v"


def test_h78_a_count_cache_with_its_check_recomputed_is_counted_anew(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    folder = _visual_session(capsys, sessions_root, tmp_path)
    cache = folder / "count-cache.json"
    doc = json.loads(cache.read_text())
    assert str(doc["check"]).startswith("hmac-sha256:")
    doc.update(count=9999, short="9,999 visuals", words="9,999 approved visuals")
    doc["check"] = _crc(doc)  # the attacker's recomputed seal
    cache.write_text(json.dumps(doc))
    for args in (["status", "v"], ["status", "v", "--format", "tmux"], ["list"]):
        code, out, err = cli(capsys, sessions_root, *args)
        assert code == 0 and "9,999" not in out and "9999" not in out, (args, out, err)
    _, show, _ = cli(capsys, sessions_root, "show", "v")
    assert "1 approved visual" in show


def test_h78_state_files_forged_or_sealed_by_another_user_read_as_absent(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _visual_session(capsys, sessions_root, tmp_path)
    from gpusession.core.folder.caches import FILES_STATE, read_state

    # status-files.json saying the copy is verified, its check recomputed the public way
    files_state = json.loads((folder / FILES_STATE).read_text())
    files_state.update(copy_verified=True, copy_words="copy home verified 2026-12-06 11:08 UTC")
    files_state["check"] = _crc(files_state)
    (folder / FILES_STATE).write_text(json.dumps(files_state))
    assert read_state(folder, FILES_STATE) is None
    out = _status(capsys, sessions_root, "v")
    assert "copy home not verified" in out and "copy home verified" not in out, out
    # another user (another key): every cache of this one reads as absent, and is recounted
    honest = _status(capsys, sessions_root, "v")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "other-user-state"))
    assert read_state(folder, FILES_STATE) is None
    from gpusession.core.money.count_cache import cached_words

    assert cached_words(folder) is None
    assert "? visuals (not counted yet" in _status(capsys, sessions_root, "v")  # never the other's count
    assert cli(capsys, sessions_root, "cost", "v")[0] == 0  # counted anew
    assert _status(capsys, sessions_root, "v") == honest


def test_h78_a_summary_with_its_check_recomputed_is_recounted(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, measured_session: Session) -> None:
    from gpusession.core.retrieval.status import refresh_counts

    name = measured_session.name
    code, honest, _ = cli(capsys, sessions_root, "status", name, "--json")
    rows = json.loads(honest)["result_rows"]
    refresh_counts(measured_session.folder)
    path = measured_session.folder / "summary.json"
    summary = json.loads(path.read_text())
    assert str(summary["counts_check"]).startswith("hmac-sha256:")
    summary["rows"] = 9999
    canon = json.dumps([9999, sorted(summary["accepted_revisions"]), summary["csv_size_bytes"],
                        summary["csv_sha256"], summary.get("csv_stat")], separators=(",", ":"))
    summary["counts_check"] = f"crc32:{binascii.crc32(canon.encode('utf-8')):08x}"  # the public formula
    path.write_text(json.dumps(summary))
    code, out, err = cli(capsys, sessions_root, "status", name, "--json")
    assert code == 0 and json.loads(out)["result_rows"] == rows != 9999, out + err


def test_h78_the_key_is_kept_0600_in_a_0700_folder_and_an_unfit_key_is_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(seal_module, "_KEYS", {})
    key = seal_module.user_key()
    path = key_path()
    assert path == tmp_path / "state" / "gpusession" / "seal.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert path.read_bytes() == key and len(key) == 32
    monkeypatch.setattr(seal_module, "_KEYS", {})
    assert seal_module.user_key() == key  # read back, not made anew
    os.chmod(path, 0o644)  # readable by others: never trusted, replaced
    monkeypatch.setattr(seal_module, "_KEYS", {})
    fresh = seal_module.user_key()
    assert fresh != key and stat.S_IMODE(os.stat(path).st_mode) == 0o600
