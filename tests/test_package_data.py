"""The wheel carries every package file that is not Python (rates, checklist, word lists
and their sources, the TUI's stylesheet): pyproject.toml's package-data names each one.

The built wheel itself is checked by ``scripts/check-wheel.sh`` in CI (it builds, installs
in a fresh venv and runs); this test catches a new data file without a build.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from gpusession.core.files.tomlio import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "gpusession"


def _patterns() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(data["tool"]["setuptools"]["package-data"]["gpusession"])


def unlisted(package: Path, patterns: list[str]) -> list[str]:
    """The files under ``package`` that are not Python and that no pattern names."""
    files = [p.relative_to(package).as_posix() for p in package.rglob("*")
             if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    return sorted(f for f in files if not any(fnmatch.fnmatchcase(f, pat) for pat in patterns))


def test_every_file_that_is_not_python_is_package_data() -> None:
    assert unlisted(PACKAGE, _patterns()) == []
    for kept in ("data/rates.toml", "data/checklist.toml", "ui/app.tcss", "data/wordlists/README.md"):
        assert (PACKAGE / kept).is_file(), kept


def test_the_check_names_a_file_left_out(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rates.toml").write_text("", encoding="utf-8")
    (tmp_path / "data" / "notes.md").write_text("", encoding="utf-8")
    (tmp_path / "m.py").write_text("", encoding="utf-8")
    assert unlisted(tmp_path, ["data/*.toml"]) == ["data/notes.md"]


def test_ci_builds_and_runs_the_wheel() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\nscripts/check-wheel.sh python3\n" in ci
    script = (ROOT / "scripts" / "check-wheel.sh").read_text(encoding="utf-8")
    assert "-m build" in script and "-m venv" in script and 'cd "$work/elsewhere"' in script
