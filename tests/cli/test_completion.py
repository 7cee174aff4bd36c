"""``gpusession completion bash|zsh``: a script made from the parser, completing in a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli


def test_the_bash_script_completes_commands_and_options_in_a_real_bash(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed on this machine")
    script = tmp_path / "complete.sh"
    script.write_text(
        f"source <({sys.executable} -m gpusession completion bash)\n"
        "ask() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; COMP_POINT=${#COMP_LINE}\n"
        "  COMPREPLY=(); _shtab_gpusession gpusession \"${@: -1}\" \"${@: -2:1}\"; printf '%s\\n' \"${COMPREPLY[@]}\"; }\n"
        "echo '--commands'; ask gpusession com\n"
        "echo '--run'; ask gpusession run s --de\n",
        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    commands, run = out.stdout.split("--run")
    assert {"compare", "completion"} <= set(commands.split()), out.stdout
    assert {"--detach", "--device"} <= set(run.split()), out.stdout


def test_the_zsh_script_is_made_and_an_unknown_shell_is_refused(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, sessions_root, "completion", "zsh")
    assert code == 0 and out.startswith("#compdef gpusession") and "compare" in out
    code, _, err = cli(capsys, sessions_root, "completion", "fish")
    assert code == 2 and "invalid choice" in err
