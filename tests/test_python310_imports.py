"""Every module imports on the oldest Python the package declares (requires-python >= 3.10).

3.10 has no ``tomllib``: a bare top-level ``import tomllib`` in a test or a module stops a
whole suite from being collected there, so it is read through
``gpusession.core.files.tomlread`` (tomli on 3.10). CI runs the suite on 3.10 too; this
check says it here, on any Python, before that run.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: ``import tomllib`` at a line's start: outside any version guard (guarded imports are indented).
BARE = re.compile(r"^(import tomllib\b|from tomllib import)", re.MULTILINE)


def test_no_bare_tomllib_import_anywhere() -> None:
    offenders = []
    for folder in ("src", "tests", "benchmarks", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for m in BARE.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], (
        "3.10 has no tomllib; import it from gpusession.core.files.tomlread: "
        + ", ".join(offenders))


def test_the_check_sees_a_bare_import(tmp_path: Path) -> None:
    assert BARE.search("import os\nimport tomllib\n")
    assert not BARE.search("if x:\n    import tomllib\n")
