"""A sealed state is checked on the bytes read, not serialised again (A5, H-78).

``write_state`` writes the canonical text it sealed with its ``"check"`` member inside;
``read_state`` takes that member out and checks the keyed seal over what is left (the
serialisation of a 780 kB ``session-toml.json`` was a third of opening a 500-experiment
session). Any other text (members reordered, the member moved, a byte changed) goes
through the full check as before: a state this user's gpusession wrote still reads, a
forged one reads as absent. Work is bounded by counting the canonical serialisations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpusession.core.folder import caches
from gpusession.core.folder.caches import JOURNAL_STATE, read_state, write_state

DOC = {"offset": 1234, "counts": {"a": 1, "b": [1, 2, {"c": "é"}]}, "note": 'quote " and \\ back'}


@pytest.fixture
def canon_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per canonical serialisation ``read_state`` asked for from now on."""
    calls: list[int] = []
    real = caches._canon

    def counting(doc: Any) -> bytes:
        calls.append(1)
        return real(doc)

    monkeypatch.setattr(caches, "_canon", counting)
    return calls


def _written(folder: Path) -> tuple[Path, bytes]:
    assert write_state(folder, JOURNAL_STATE, DOC)
    path = folder / JOURNAL_STATE
    return path, path.read_bytes()


def test_h78_a_state_as_written_is_read_without_serialising_it_again(tmp_path: Path, canon_calls: list[int]) -> None:
    _written(tmp_path)
    del canon_calls[:]
    got = read_state(tmp_path, JOURNAL_STATE)
    assert got is not None and {k: got[k] for k in DOC} == DOC
    assert canon_calls == []


def test_h78_the_same_document_reordered_reads_through_the_full_check(tmp_path: Path, canon_calls: list[int]) -> None:
    path, raw = _written(tmp_path)
    doc = json.loads(raw)
    path.write_text(json.dumps(dict(reversed(list(doc.items()))), indent=1), "utf-8")
    del canon_calls[:]
    got = read_state(tmp_path, JOURNAL_STATE)
    assert got is not None and got["counts"] == DOC["counts"]
    assert canon_calls == [1]


def test_h78_the_check_member_moved_into_a_table_reads_as_absent(tmp_path: Path) -> None:
    path, raw = _written(tmp_path)
    check = json.loads(raw)["check"]
    member = b'"check":' + json.dumps(check).encode() + b","
    moved = raw.replace(member, b"", 1).replace(b'"counts":{', b'"counts":{' + member, 1)
    json.loads(moved)  # valid JSON, the sealed bytes plus the member, elsewhere
    path.write_bytes(moved)
    assert read_state(tmp_path, JOURNAL_STATE) is None


@pytest.mark.parametrize("edit", [(b'"offset":1234', b'"offset":1235'), (b'"a":1', b'"a":2')])
def test_h78_a_changed_value_reads_as_absent(tmp_path: Path, edit: tuple[bytes, bytes]) -> None:
    path, raw = _written(tmp_path)
    assert edit[0] in raw
    path.write_bytes(raw.replace(*edit))
    assert read_state(tmp_path, JOURNAL_STATE) is None
