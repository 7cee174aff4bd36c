"""Imports sit at the top of their file; laziness lives only where start-up needs it.

An import inside a function hides a dependency from the reader (and from a quick look at
the file's head). In core, only the package face and the modules that ``gpusession
status`` or the TUI's first frame load may import gpusession modules inside functions:
there, the import keeps a module that start-up does not need out of it (what they must
not load is checked by ``tests/ui/test_startup_imports.py`` and ``tests/cli/test_status*.py``).
Third-party libraries (polars, matplotlib, psutil, pynvml…) may still load inside the
function that uses them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gpusession

CORE = Path(gpusession.__file__).parent / "core"

#: The core modules whose functions may import gpusession modules, and why.
LAZY_ALLOWED = {
    "events/__init__.py": "the package face: each name loads on first use",
    "folder/session.py": "opened by status and before the TUI's first frame; the journal's "
                         "record classes and crash recovery load only when needed",
    "folder/session_journal.py": "the journal's part of the session (opened as session.py is): "
                                 "the record classes, the results table and crash recovery load only when needed",
    "folder/processes.py": "loaded before the TUI's first frame; the record classes are not",
    "retrieval/status.py": "status: the results CSV read without polars or the record classes",
    "retrieval/checklist.py": "the first frame's checklist: the evidence loads when collected",
    "copyhome/limit.py": "status's limit line: units load when a reserve is worded",
    "files/errors.py": "textio imports this module: the printable field name loads on an error",
    "files/sessionname.py": "status: the secret detectors load only for a name that could hold one",
    "files/textio.py": "status: the secret detectors and masks load only for text that needs them",
    "folder/package.py": "status: the secret masks load only on the error path",
    "money/kept_plan.py": "the Cost pane reads the plan before the TUI's first frame; the record class "
                          "loads on a write only",
    # not on a start-up path: its imports are still to move up (a file many changes touch)
    "retrieval/report.py": "not yet moved",
}


def _inner_gpusession_imports(path: Path) -> list[int]:
    lines = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpusession"):
                    lines.append(node.lineno)
                elif isinstance(node, ast.Import) and node.names[0].name.startswith("gpusession"):
                    lines.append(node.lineno)
    return lines


def test_core_imports_gpusession_inside_functions_only_where_start_up_needs_it() -> None:
    found = {str(p.relative_to(CORE)): _inner_gpusession_imports(p) for p in sorted(CORE.rglob("*.py"))}
    hidden = {name: lines for name, lines in found.items() if lines and name not in LAZY_ALLOWED}
    assert hidden == {}, ("move these imports to the top of their file (start-up does not load "
                          f"the module), or say in LAZY_ALLOWED why start-up needs them lazy: {hidden}")


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import os\n\ndef f():\n    if os:\n        from gpusession.core import x\n")
    assert _inner_gpusession_imports(sample) == [5]
