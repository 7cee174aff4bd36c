"""style.md §1: the core and the CLI import neither textual nor torch."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "gpusession.core.session",
        "gpusession.core.results",
        "gpusession.cli",
    ],
)
def test_core_and_cli_import_neither_textual_nor_torch(module: str) -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"importlib.import_module({module!r})\n"
        "import gpusession.core as c\n"
        "for m in pkgutil.iter_modules(c.__path__):\n"
        "    importlib.import_module('gpusession.core.' + m.name)\n"
        "import gpusession.cli as cli\n"
        "cli.build_parser()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{module} pulled in: {out.stdout.strip()}"
