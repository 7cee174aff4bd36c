"""``new``'s printed next step uses the placeholders as the README's quick start writes them
(``./predict.sh {corpus} {output} {batch}``), never a form of its own (``--batch={batch}``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import cli

pytestmark = pytest.mark.calendar  # `new` starts the package at the clock's now

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("unit", "program"), [((), "./predict.sh {corpus} {output} {batch}"),
                                               (("--unit", "visual"), "./render.sh {output} {batch}")])
def test_new_hint_uses_the_readme_placeholders(sessions_root: Path, capsys: pytest.CaptureFixture[str],
                                               unit: tuple[str, ...], program: str) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "hint-1", "--gpu", "RTX A5000", "--lots", "1",
                         "--days", "7", *unit)
    assert code == 0, err
    assert f"--command '{program}' --varied batch" in out, out
    assert "--batch=" not in out
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for form in re.findall(r"--command '\./predict\.sh ([^']*)'", readme):  # the README's own form, where it has one
        assert form == "{corpus} {output} {batch}", form
