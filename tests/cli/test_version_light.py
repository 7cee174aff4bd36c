"""``gpusession --version`` answers before any command module is loaded (the argument byte check
aside): no polars, no textual."""

from __future__ import annotations

import subprocess
import sys


def test_version_loads_no_polars_and_no_command_module() -> None:
    code = ("import sys, runpy; sys.argv = ['gpusession', '--version']\n"
            "try:\n    runpy.run_module('gpusession', run_name='__main__')\nexcept SystemExit as e:\n    rc = e.code\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('polars', 'textual', 'torch')"
            " or (m.startswith('gpusession.commands.') and m != 'gpusession.commands.argtext'))\n"
            "print('HEAVY', heavy, rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("gpusession ") and lines[-1] == "HEAVY [] 0", done.stdout
