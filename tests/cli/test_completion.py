"""``gpusession completion bash|zsh|fish``: a script made from the parser, completing in a real
bash and a real fish."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli


def _bash_ask() -> str:
    """The completion script sourced, and ``ask WORDS…``: what bash completes for them, a line each."""
    return (f"source <({sys.executable} -m gpusession completion bash)\n"
            "ask() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; COMP_POINT=${#COMP_LINE}\n"
            "  COMPREPLY=(); _shtab_gpusession gpusession \"${@: -1}\" \"${@: -2:1}\"; "
            "printf '%s\\n' \"${COMPREPLY[@]}\"; }\n")


def test_the_bash_script_completes_commands_and_options_in_a_real_bash(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed on this machine")
    script = tmp_path / "complete.sh"
    script.write_text(
        _bash_ask() +
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
    code, _, err = cli(capsys, sessions_root, "completion", "tcsh")
    assert code == 2 and "invalid choice" in err


def test_bash_completes_session_names_from_the_sessions_folder(tmp_path: Path, sessions_root: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed on this machine")
    for name in ("alpha", "beta"):
        assert cli(capsys, sessions_root, "new", name)[0] == 0
    (sessions_root / "not-a-session").mkdir()
    script = tmp_path / "complete.sh"
    script.write_text(
        _bash_ask() +
        "echo '--show'; ask gpusession show ''\n"
        f"echo '--report'; ask gpusession --sessions-dir {sessions_root} report a\n"
        "echo '--new'; ask gpusession new ''\n",
        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GPUSESSION_HOME": str(sessions_root)}
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    show, rest = out.stdout.split("--report")
    report, new = rest.split("--new")
    assert set(show.split()) == {"--show", "alpha", "beta"}, out.stdout
    assert report.split() == ["alpha"], out.stdout
    assert not {"alpha", "beta"} & set(new.split())  # a new name is never an existing one


def _fish(tmp_path: Path, sessions_root: Path, *lines: str, cwd: Path | None = None) -> list[list[str]]:
    """What a real fish completes for each command line, as lists of candidates."""
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed on this machine (.ci/run installs Debian's package)")
    script = tmp_path / "gpusession.fish"
    made = subprocess.run([sys.executable, "-m", "gpusession", "completion", "fish"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert made.returncode == 0, made.stderr
    script.write_text(made.stdout, encoding="utf-8")
    asks = "; ".join(f"echo '@@'; complete -C {line!r}" for line in lines)
    env = {**os.environ, "GPUSESSION_HOME": str(sessions_root), "HOME": str(tmp_path)}
    out = subprocess.run(["fish", "--no-config", "-c", f"source {script}; {asks}"], capture_output=True,
                         text=True, timeout=60, env=env, cwd=cwd or tmp_path)
    assert out.returncode == 0, out.stderr
    return [[ln.split("\t")[0] for ln in part.splitlines() if ln] for part in out.stdout.split("@@")[1:]]


def test_the_fish_script_completes_commands_options_and_values_in_a_real_fish(
        tmp_path: Path, sessions_root: Path) -> None:
    commands, run, shells, nested = _fish(
        tmp_path, sessions_root, "gpusession com", "gpusession run s --de", "gpusession completion ",
        "gpusession experiment s ")
    assert set(commands) == {"compare", "completion"}, commands
    assert {"--detach", "--device"} <= set(run), run
    assert set(shells) == {"bash", "zsh", "fish"}, shells
    assert {"define", "derive", "list"} <= set(nested), nested


def test_fish_completes_session_names_where_a_name_goes(tmp_path: Path, sessions_root: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("alpha", "beta"):
        assert cli(capsys, sessions_root, "new", name)[0] == 0
    (sessions_root / "not-a-session").mkdir()
    other = tmp_path / "elsewhere"
    assert cli(capsys, other, "new", "gamma")[0] == 0
    show, after, new, given = _fish(
        tmp_path, sessions_root, "gpusession show ", "gpusession show alpha ", "gpusession new ",
        f"gpusession --sessions-dir {other} report ")
    assert set(show) == {"alpha", "beta"}, show  # $GPUSESSION_HOME's sessions, no other folder
    assert not {"alpha", "beta"} & set(after)  # not again after the name
    assert not {"alpha", "beta"} & set(new)  # a new name is never an existing one
    assert given == ["gamma"], given  # --sessions-dir on the line wins


def _two_experiments(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    assert cli(capsys, sessions_root, "new", "alpha")[0] == 0
    assert cli(capsys, sessions_root, "new", "beta")[0] == 0
    for exp_id, values in (("sweep-1", "1,2"), ("e.2", "1,3")):
        code, _, err = cli(capsys, sessions_root, "experiment", "alpha", "define", "--id", exp_id,
                           "--workload", "command", "--command", "true {corpus} {output}",
                           "--varied", "batch", "--values", values)
        assert code == 0, err


def test_bash_completes_the_experiment_ids_of_the_session_on_the_line(
        tmp_path: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed on this machine")
    _two_experiments(capsys, sessions_root)
    script = tmp_path / "complete.sh"
    script.write_text(
        _bash_ask() +
        "echo '--run'; ask gpusession run alpha --experiment ''\n"
        "echo '--derive'; ask gpusession experiment alpha derive --from s\n"
        "echo '--other'; ask gpusession run beta --experiment ''\n",
        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GPUSESSION_HOME": str(sessions_root)}
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run, rest = out.stdout.split("--run")[1].split("--derive")
    derive, other = rest.split("--other")
    assert set(run.split()) == {"sweep-1", "e.2"}, out.stdout  # bare and quoted TOML keys
    assert derive.split() == ["sweep-1"], out.stdout
    assert other.split() == [], out.stdout  # beta has none: alpha's are not offered


def test_fish_completes_the_experiment_ids_of_the_session_on_the_line(
        tmp_path: Path, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _two_experiments(capsys, sessions_root)
    run, derive, other = _fish(tmp_path, sessions_root, "gpusession run alpha --experiment ",
                               "gpusession experiment alpha derive --from s",
                               "gpusession run beta --experiment ")
    assert set(run) == {"sweep-1", "e.2"}, run
    assert derive == ["sweep-1"], derive
    assert other == [], other
