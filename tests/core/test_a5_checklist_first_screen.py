"""The TUI's first screenful of the checklist reads neither the facts nor the stored evidence (A5).

The evidence the product writes grows with the session (``p1.fixed-before`` names every
experiment not fixed before its first run) and checking its free text for secrets loads
the seed wordlists; ``load_checklist(with_facts=False, with_evidence=False)`` drops it
before the checks. The items' state and notes read as in the full read, a secret pasted
in a note is still hidden, and the full read still checks and shows the evidence.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusession.core.files import secrets
from gpusession.core.files.secrets import HIDDEN
from gpusession.core.folder.session import Session
from gpusession.core.retrieval.checklist import load_checklist

pytestmark = pytest.mark.calendar  # reads the checklist

#: A private key a person pastes by hand (64 hex digits).
HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
LONG_EVIDENCE = "not recorded for 500 experiments: " + ", ".join(f"sweep-{i:03d}" for i in range(500))


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every free text checked for secrets from now on."""
    seen: list[str] = []
    real = secrets.kind_of_secret

    def counting(text: str, *a: Any, **kw: Any) -> Any:
        seen.append(text)
        return real(text, *a, **kw)

    monkeypatch.setattr(secrets, "kind_of_secret", counting)
    return seen


def _write(session: Session) -> None:
    session.checklist_toml.write_text(
        'schema = 1\n\n[items."p1.fixed-before"]\n'
        f'evidence = "{LONG_EVIDENCE}"\n\n'
        '[items."g1.one-sentence"]\ndone = true\nat = 2026-11-29T14:00:00Z\n'
        f'note = "key {HEX_KEY}"\n', encoding="utf-8")


def test_a5_first_screen_reads_no_evidence_and_checks_none(session: Session, checked: list[str]) -> None:
    _write(session)
    first = {i.id: i for i in load_checklist(session, with_facts=False, with_evidence=False)}
    assert first["p1.fixed-before"].evidence is None
    assert not any("sweep-" in t for t in checked)
    assert first["g1.one-sentence"].done and HIDDEN in first["g1.one-sentence"].note  # notes still checked
    assert HEX_KEY not in first["g1.one-sentence"].note
    full = {i.id: i for i in load_checklist(session, with_facts=False)}
    assert full["p1.fixed-before"].evidence == LONG_EVIDENCE
    assert any("sweep-" in t for t in checked)
    assert [(i.id, i.done, i.note) for i in first.values()] == [(i.id, i.done, i.note) for i in full.values()]
