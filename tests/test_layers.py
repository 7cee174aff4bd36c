"""design.md §Layers: the core and the CLI import neither textual nor torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "gpusession.core.folder.session",
        "gpusession.core.records.results",
        "gpusession.cli",
    ],
)
def test_core_and_cli_import_neither_textual_nor_torch(module: str) -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"importlib.import_module({module!r})\n"
        "import gpusession.core as c\n"
        "n = 0\n"
        "for m in pkgutil.walk_packages(c.__path__, 'gpusession.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "    n += 1\n"
        "assert n > 40, n  # every room and its modules, not the top floor only\n"
        "import gpusession.cli as cli\n"
        "cli.build_parser()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{module} pulled in: {out.stdout.strip()}"


def test_no_application_module_imports_the_test_doubles() -> None:
    """``gpusession.testing`` (fake clock, NVML, runner) is for tests and benchmarks only."""
    import ast
    from pathlib import Path

    import gpusession

    src = Path(gpusession.__file__).parent
    users = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "testing.py" and path.parent == src:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n == "gpusession.testing" or n.startswith("gpusession.testing.") for n in names):
                users.append(f"{path.relative_to(src)}:{node.lineno}")
    assert users == [], f"application modules import the test doubles: {users}"


#: The longest a function of the run engine and the core may be: one concern a reader can hold.
MAX_FUNCTION_LINES = 80


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function under ``root`` longer than ``limit`` lines."""
    import ast

    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    out.append(f"{path}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_function_of_core_or_bench_is_over_80_lines() -> None:
    src = Path(__file__).resolve().parents[1] / "src" / "gpusession"
    assert long_functions(src / "core") + long_functions(src / "bench") == []


def test_the_length_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(tmp_path) == [f"{tmp_path / 'm.py'}:1 long (82 lines)"]


#: The longest a class of the run engine may be; the runner itself holds only the
#: schedule, the stops and the worker lifetimes (what a run records is the recorder's).
MAX_CLASS_LINES = 400
MAX_RUNNER_LINES = 300


def class_lengths(root: Path) -> dict[str, int]:
    """``path:line name`` → lines, for every class under ``root``."""
    import ast

    out = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                out[f"{path}:{node.lineno} {node.name}"] = (node.end_lineno or node.lineno) - node.lineno + 1
    return out


def test_no_class_of_bench_is_over_400_lines_and_the_runner_is_at_most_300() -> None:
    bench = Path(__file__).resolve().parents[1] / "src" / "gpusession" / "bench"
    lengths = class_lengths(bench)
    assert {k: n for k, n in lengths.items() if n > MAX_CLASS_LINES} == {}
    runner = [n for k, n in lengths.items() if k.endswith(" Runner") and "/runner.py:" in k]
    assert len(runner) == 1 and runner[0] <= MAX_RUNNER_LINES, runner


def test_the_class_length_check_finds_a_long_class(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(401))
    (tmp_path / "m.py").write_text(f"class Long:\n{body}\n\n\nclass Short:\n    pass\n")
    lengths = class_lengths(tmp_path)
    assert lengths == {f"{tmp_path / 'm.py'}:1 Long": 402, f"{tmp_path / 'm.py'}:405 Short": 2}
