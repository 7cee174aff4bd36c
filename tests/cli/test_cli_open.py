"""`gpusession` with no session yet offers to create one at a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusession.commands.tui import offer_new_session
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.session import Session


def _answers(monkeypatch: pytest.MonkeyPatch, *answers: str) -> None:
    it = iter(answers)
    monkeypatch.setattr("builtins.input", lambda prompt="": next(it))


def test_offer_creates_the_session_with_its_package(monkeypatch: pytest.MonkeyPatch, sessions_root: Path) -> None:
    _answers(monkeypatch, "y", "visuals-test-01", "B200", "2", "3")
    s = offer_new_session(sessions_root)
    assert s is not None and s.name == "visuals-test-01"
    pkg = Session.open(sessions_root, "visuals-test-01").package
    assert (pkg.gpu_model, pkg.lots, pkg.days) == ("B200", 2, 3) and pkg.start is not None


def test_offer_declined_creates_nothing(monkeypatch: pytest.MonkeyPatch, sessions_root: Path) -> None:
    _answers(monkeypatch, "n")
    assert offer_new_session(sessions_root) is None
    assert list(sessions_root.iterdir()) == []


@pytest.mark.parametrize("answers, field", [(("y", "a/b", "X", "1", "7"), "name"),
                                             (("y", "ok", "X", "zero", "7"), "lots"),
                                             (("y", "ok", "X", "1", "5"), "days")])
def test_offer_refuses_bad_answers_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, sessions_root: Path, answers: tuple[str, ...], field: str
) -> None:
    _answers(monkeypatch, *answers)
    with pytest.raises(BadInput) as exc:
        offer_new_session(sessions_root)
    assert exc.value.field == field
    assert list(sessions_root.iterdir()) == []
