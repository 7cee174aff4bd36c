"""Command workloads: a placeholder's value can never inject (issue 12).

The exact example of the issue: ``--command "sh -c 'cat {corpus} > {output}'"`` with a
corpus named ``x$(touch P).jsonl`` ran ``touch``. Now the definition is refused with
advice to read ``$GPUSESSION_CORPUS``; written that way the command runs, reads the
corpus and ``P`` never exists. The command worker imports no torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import cli, digest, one_line

from gpusession.bench.placeholders import ENV, check_command, environment, fill_argument
from gpusession.core.errors import BadInput

CORPUS = "x$(touch P).jsonl"
DEFINE = ["--workload", "command", "--corpus", CORPUS, "--values", "1", "--runs", "1",
          "--warmup", "1", "--cold-runs", "1"]


@pytest.fixture
def inj(capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # where `touch P` would land
    code, _, err = cli(capsys, sessions_root, "new", "inj", "--gpu", "RTX A5000", "--lots", "1",
                       "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    folder = sessions_root / "inj"
    (folder / CORPUS).write_text('{"id": "a", "text": "hello"}\n', encoding="utf-8")
    return folder


def _no_p(tmp_path: Path, folder: Path) -> None:
    assert not list(tmp_path.rglob("P")), "the corpus name ran as a command"
    assert not (folder / "P").exists()


def test_issue12_the_exact_example_is_refused_with_the_environment_variable_as_advice(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, inj: Path, tmp_path: Path,
) -> None:
    before = digest(inj)
    code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "e", *DEFINE,
                       "--command", "sh -c 'cat {corpus} > {output}'")
    line = one_line(err)
    assert code == 2 and "experiments.e.params.command" in line
    assert "$GPUSESSION_CORPUS" in line and "-c" in line
    assert digest(inj) == before
    _no_p(tmp_path, inj)


def test_issue12_the_environment_form_runs_and_never_injects(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, inj: Path, tmp_path: Path,
) -> None:
    script = ('cat "$GPUSESSION_CORPUS" > "$GPUSESSION_OUTPUT"; '
              'echo "$GPUSESSION_BATCH" > "$GPUSESSION_OUTPUT.batch"')
    code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "e", *DEFINE,
                       "--command", f"sh -c '{script}'")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", "inj", "--experiment", "e", "--headless")
    assert "experiment complete" in out, out + err
    outputs = sorted((inj / "runs" / "e").rglob("*.jsonl"))
    measured = [p for p in outputs if not p.name.startswith("warmup")]
    assert len(measured) == 2  # one cold, one warm
    for p in outputs:
        assert p.read_text(encoding="utf-8") == '{"id": "a", "text": "hello"}\n'
        assert Path(f"{p}.batch").read_text(encoding="utf-8") == "1\n"
    _no_p(tmp_path, inj)


def test_issue12_whole_argument_placeholders_carry_the_name_as_one_argument(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, inj: Path, tmp_path: Path,
) -> None:
    import sys

    script = "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2].partition('=')[2])"
    code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "e", *DEFINE,
                       "--command", f'{sys.executable} -c "{script}" {{corpus}} --out={{output}}')
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", "inj", "--experiment", "e", "--headless")
    assert "experiment complete" in out, out + err
    _no_p(tmp_path, inj)


def test_issue12_a_hand_edited_unsafe_command_is_refused_at_run(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, inj: Path, tmp_path: Path,
) -> None:
    code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "e", *DEFINE,
                       "--command", "sh -c 'cat \"$GPUSESSION_CORPUS\"'")
    assert code == 0, err
    toml = inj / "session.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        'cat \\"$GPUSESSION_CORPUS\\"', "cat {corpus} > {output}"), encoding="utf-8")
    assert "cat {corpus}" in toml.read_text(encoding="utf-8")
    code, _, err = cli(capsys, sessions_root, "run", "inj", "--experiment", "e", "--headless")
    assert code == 2 and "$GPUSESSION_CORPUS" in one_line(err)
    assert not (inj / "runs").exists()
    _no_p(tmp_path, inj)


@pytest.mark.parametrize("argv", [
    ["prog", "{corpus}", "{output}", "{batch}"],
    ["prog", "--out={output}", "-b={batch}", "--context-limit={context}"],
    ["python3", "-c", "import sys; print(sys.argv)", "{corpus}"],
    ["sh", "-c", 'cat "$GPUSESSION_CORPUS" > "$GPUSESSION_OUTPUT"'],
    ["python3", "-c", "d = {'a': 1}; print(d)", "{batch}"],
])
def test_issue12_safe_commands_are_accepted(argv: list[str]) -> None:
    check_command(argv, field="params.command")


@pytest.mark.parametrize("argv, words", [
    (["sh", "-c", "cat {corpus} > {output}"], "$GPUSESSION_CORPUS, $GPUSESSION_OUTPUT"),
    (["bash", "-lc", "run --batch {batch}"], "$GPUSESSION_BATCH"),
    (["/usr/bin/env", "X=1", "zsh", "-c", "{corpus}"], "script"),
    (["timeout", "5", "dash", "-e", "-c", "ls {output}"], "script"),
    (["python3", "-c", "open('{output}', 'w')"], "$GPUSESSION_OUTPUT"),
    (["perl", "-e", "print '{batch}'"], "script"),
    (["node", "-e", "console.log('{context}')"], "$GPUSESSION_CONTEXT"),
    (["prog", "out-{batch}.jsonl"], "whole argument"),
    (["prog", "--out", "{output}.tmp"], "whole argument"),
    (["{corpus}"], "program itself"),
])
def test_issue12_placeholders_in_a_script_or_mid_argument_are_refused(
    argv: list[str], words: str
) -> None:
    with pytest.raises(BadInput) as exc:
        check_command(argv, field="experiments.e.params.command")
    assert words in str(exc.value) and "experiments.e.params.command" in str(exc.value)


def test_issue12_the_worker_fills_only_whole_arguments_and_gives_every_value_in_the_environment() -> None:
    from gpusession.bench.worker import _command_argv, fill_placeholders

    values: dict[str, Any] = {"batch": 4, "output": "/o/x.jsonl", "corpus": CORPUS, "context": ""}
    assert fill_placeholders("{corpus}", values) == CORPUS
    assert fill_placeholders("--out={output}", values) == "--out=/o/x.jsonl"
    assert fill_placeholders("cat {corpus} > {output}", values) == "cat {corpus} > {output}"
    assert fill_argument("{unknown}", values) == "{unknown}"
    argv = _command_argv(["sh", "-c", "cat {corpus}", "{corpus}"], {"corpus": CORPUS},
                         {"batch": 4}, Path("/o/x.jsonl"))
    assert argv == ["sh", "-c", "cat {corpus}", CORPUS]
    assert environment(values) == {ENV["batch"]: "4", ENV["output"]: "/o/x.jsonl",
                                   ENV["corpus"]: CORPUS, ENV["context"]: ""}
    assert set(ENV.values()) == {"GPUSESSION_BATCH", "GPUSESSION_OUTPUT", "GPUSESSION_CORPUS",
                                 "GPUSESSION_CONTEXT"}
