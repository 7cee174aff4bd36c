"""Hostile world, round 5: digests and secrets in what the JSON printers show (H-60).

A SHA-256 under a digest key (``sha256``, ``*_revision``) is what a person checks a file
by: every ``--json`` shows it, as the journal's writer keeps it; a 64-hex value under any
other key is still hidden as the secret it may be.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder.session import Session

HEX = "ab" * 32  # 64 hex digits: the shape of a SHA-256 and of a raw private key


def test_h60_deliverables_json_shows_each_sha256(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    files = []
    for i in range(3):
        p = out_dir / f"v-{i}.png"
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]) * 9)
        files.append(p)
    assert cli(capsys, sessions_root, "approve", session.name, *map(str, files), "--by", "Ana")[0] == 0
    code, out, err = cli(capsys, sessions_root, "deliverables", session.name, "--json")
    assert code == 0, err
    assert "HIDDEN" not in out
    for p in files:
        assert hashlib.sha256(p.read_bytes()).hexdigest() in out


def test_h60_a_digest_key_keeps_its_digits_and_any_other_key_hides_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.commands._common import print_json

    print_json({"corpus_revision": HEX, "files": [{"sha256": HEX}], "digests": [HEX, HEX],
                "note": HEX, "deviation": [f"key {HEX}"]})
    doc = json.loads(capsys.readouterr().out)
    assert doc["corpus_revision"] == HEX and doc["files"][0]["sha256"] == HEX and doc["digests"] == [HEX, HEX]
    assert doc["note"] == "[HIDDEN: private key]" and HEX not in json.dumps(doc["deviation"])
