"""The cheap gate before the detectors (S6's tmux line): never ``False`` where they find something."""

from __future__ import annotations

import random

import pytest
from secret_payloads import ORDINARY, PAYLOADS

from gpusession.core.files.detectors import (
    bip39_wordlists,
    other_wordlists,
    seed_findings,
    token_findings,
)
from gpusession.core.files.secretgate import may_hold_secret
from gpusession.core.files.secrets import format_characters
from gpusession.core.files.sessionname import NAME_RE


def _found(text: str) -> bool:
    """The detectors themselves, without the gate (``secrets.findings`` runs it first)."""
    return bool(seed_findings(text) or token_findings(text) or format_characters(text))


@pytest.mark.parametrize("kind", sorted(PAYLOADS))
def test_s6_the_gate_opens_on_every_kind_of_secret(kind: str) -> None:
    text, _ = PAYLOADS[kind]
    assert _found(text)
    for shown in (text, f"bench 6d 23h left {text}", f"x-{text}-y", text.replace(" ", "-")):
        if _found(shown):
            assert may_hold_secret(shown), (kind, shown)


def test_s6_the_gate_stays_shut_on_the_tmux_line_and_plain_names() -> None:
    for text in ("bench 6d 23h 50m left 6r 1acc copy not verified", "visuals-test-01",
                 "a5000-7d", "gpusession: no session", "demo 2h 10m left 18r 1acc copy VERIFIED"):
        assert not may_hold_secret(text), text


def test_s6_the_gate_is_a_superset_of_the_detectors_on_random_texts() -> None:
    rng = random.Random(20261203)
    english = sorted(bip39_wordlists()["english"])
    monero = sorted(other_wordlists()["monero"])
    b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    pieces = [
        lambda: rng.choice(english), lambda: rng.choice(monero), lambda: rng.choice(english)[:4],
        lambda: "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(4, 66))),
        lambda: "".join(rng.choice(b58) for _ in range(rng.randint(10, 90))),
        lambda: rng.choice(["ghp_", "hf_", "sk-", "AKIA", "glpat-", "xoxb-", "eyJ", "nsec1", "sk_live_"]),
        lambda: str(rng.randint(0, 999)), lambda: rng.choice(["the", "run", "batch", "warm", "left"]),
        lambda: rng.choice(["password: ", "HF_TOKEN=", "pw=", "api-key: ", "https://u:", "@", "#[fg=red]"]),
    ]
    seps = [" ", "-", "_", ".", "", "\n", "1", ", "]
    opened = 0
    for _ in range(3000):
        text = "".join(rng.choice(pieces)() + rng.choice(seps) for _ in range(rng.randint(1, 26)))
        if _found(text):
            opened += 1
            assert may_hold_secret(text), text
        slug = "".join(c for c in text if NAME_RE.fullmatch(c))[:100]
        if slug and _found(slug):
            assert may_hold_secret(slug), slug
    assert opened > 300  # the loop met secrets of many kinds, not only plain text


def test_s6_ordinary_text_is_kept_whether_or_not_the_gate_opens() -> None:
    from gpusession.core.files.textio import printable

    for text in ORDINARY:
        if not _found(text):
            assert printable(text) == text
