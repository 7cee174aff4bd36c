"""The free-text check at the write boundary searches a text once per process (A5): a
session's TOML is written whole at each change, and its thousands of unchanged values are
not searched again; a secret is refused every time (seed 003 §8)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusession.core.files.errors import BadInput


def test_a5_a_text_found_clean_is_not_searched_again_and_a_secret_is_always_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.core.files import secrets

    searched: list[str] = []
    real = secrets.find_secret

    def count(text: str, **kw: Any) -> str | None:
        searched.append(text)
        return real(text, **kw)

    monkeypatch.setattr(secrets, "find_secret", count)
    doc = {"experiments": {f"e{k}": {"workload": f"command-{k}-a5-clean"} for k in range(50)}}
    secrets.check_free_text(doc, "session.toml")
    first = len(searched)
    secrets.check_free_text(doc, "session.toml")
    assert first >= 50 and len(searched) == first  # the same values: not searched again
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    for _ in range(2):  # a secret is never remembered as clean
        with pytest.raises(BadInput):
            secrets.check_free_text({"note": key}, "session.toml")
