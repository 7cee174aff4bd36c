"""Command workloads: a placeholder's value can never inject.

A placeholder inside shell code, ``--command "sh -c 'cat {corpus} > {output}'"`` with a
corpus named ``x$(touch P).jsonl``, would run ``touch``: the definition is refused with
advice to read ``$GPUSESSION_CORPUS``; written that way the command runs, reads the
corpus and ``P`` never exists. The command worker imports no torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import cli, digest, one_line

from gpusession.core.experiment.placeholders import ENV, check_command, environment, fill_argument
from gpusession.core.files.errors import BadInput

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

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


def test_a_placeholder_in_shell_code_is_refused_with_the_environment_variable_as_advice(
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


def test_the_environment_form_runs_and_never_injects(
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


def test_whole_argument_placeholders_carry_the_name_as_one_argument(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, inj: Path, tmp_path: Path,
) -> None:
    import sys

    script = tmp_path / "copy_corpus_to_output.py"
    script.write_text("import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2].partition('=')[2])",
                      encoding="utf-8")
    code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "e", *DEFINE,
                       "--command", f"{sys.executable} {script} {{corpus}} --out={{output}}")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", "inj", "--experiment", "e", "--headless")
    assert "experiment complete" in out, out + err
    _no_p(tmp_path, inj)


def test_a_hand_edited_unsafe_command_is_refused_at_run(
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
    ["sh", "-c", 'cat "$GPUSESSION_CORPUS" > "$GPUSESSION_OUTPUT"'],
    ["python3", "-c", "d = {'a': 1}; print(d)"],
    ["python3", "script.py", "{batch}"],  # H-15
    ["/usr/bin/python3.11", "-u", "-W", "ignore", "score.py", "{corpus}", "--out={output}"],
    ["python3", "-m", "pkg.score", "{batch}"],
    ["env", "X=1", "timeout", "-s", "KILL", "5", "nice", "-n", "5", "python3", "s.py", "{batch}"],
    ["taskset", "-c", "0-3", "numactl", "--cpunodebind=0", "prog", "{batch}"],
    ["awk", "{print}", "{corpus}"],
    ["sed", "s/a/b/", "{corpus}"],
    ["bash", "run.sh", "{corpus}"],
    ["node", "score.js", "{batch}"],
    ["python3", "train.py", "--mode", "eval", "--format", "sh", "{batch}"],
    ["sh", "-c", 'for x in a; do echo "${x}"; done'],
])
def test_safe_commands_are_accepted(argv: list[str]) -> None:
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
    (["env", "X=1", "timeout", "5", "{corpus}"], "program itself"),
])
def test_placeholders_in_a_script_or_mid_argument_are_refused(
    argv: list[str], words: str
) -> None:
    with pytest.raises(BadInput) as exc:
        check_command(argv, field="experiments.e.params.command")
    assert words in str(exc.value) and "experiments.e.params.command" in str(exc.value)


def test_h34_the_worker_fills_whole_arguments_with_plain_paths_and_the_same_in_the_environment(
    tmp_path: Path,
) -> None:
    import os

    from gpusession.bench.worker import _command_argv, _placeholder_env, fill_placeholders
    from gpusession.core.folder.plainpaths import make_plain_paths, remove_plain_paths

    values: dict[str, Any] = {"batch": 4, "output": "/o/x.jsonl", "corpus": "/p/corpus.jsonl",
                              "context": ""}
    assert fill_placeholders("{corpus}", values) == "/p/corpus.jsonl"
    assert fill_placeholders("--out={output}", values) == "--out=/o/x.jsonl"
    assert fill_placeholders("cat {corpus} > {output}", values) == "cat {corpus} > {output}"
    assert fill_argument("{unknown}", values) == "{unknown}"
    run_dir = tmp_path / "s" / "runs" / "e"
    corpus = tmp_path / "s" / CORPUS
    corpus.parent.mkdir(parents=True)
    corpus.write_text('{"id": "a"}\n', encoding="utf-8")
    temp = tmp_path / "tmp"
    temp.mkdir()
    plain = make_plain_paths(run_dir, corpus, temp_dirs=[str(temp)])
    try:
        spec = {"corpus": str(corpus), "plain": plain}
        out = run_dir / "batch-4" / "warm-1.jsonl"
        argv = _command_argv(["sh", "-c", "cat {corpus}", "{corpus}", "--out={output}", "{batch}",
                              "{context}"], spec, {"batch": 4, "context": None}, out)
        link = str(plain.corpus)
        assert argv == ["sh", "-c", "cat {corpus}", link, f"--out={out}", "4", ""]
        assert CORPUS not in " ".join(argv) and Path(link).read_bytes() == corpus.read_bytes()
        with _placeholder_env(spec, {"batch": 4}, out):
            assert {k: os.environ[k] for k in ENV.values()} == {
                ENV["batch"]: "4", ENV["output"]: str(out), ENV["corpus"]: link, ENV["context"]: "",
                ENV["precision"]: "", ENV["seed"]: ""}
        assert ENV["corpus"] not in os.environ
    finally:
        remove_plain_paths(plain)
    assert environment(values)[ENV["corpus"]] == "/p/corpus.jsonl"
    assert set(ENV.values()) == {"GPUSESSION_BATCH", "GPUSESSION_OUTPUT", "GPUSESSION_CORPUS",
                                 "GPUSESSION_CONTEXT", "GPUSESSION_PRECISION", "GPUSESSION_SEED"}


PWNED_CORPUS = "x;touch PWNED_by_name;#.jsonl"


def test_sh_c_dashdash_with_a_file_name_is_refused_and_never_runs(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, inj: Path, tmp_path: Path,
) -> None:
    """The command that injects: ``sh -c -- {corpus}`` with a corpus named like a command."""
    (inj / PWNED_CORPUS).write_text('{"id": "a", "text": "hello"}\n', encoding="utf-8")
    before = digest(inj)
    define = [a if a != CORPUS else PWNED_CORPUS for a in DEFINE]
    for command in ("sh -c -- {corpus}", "node --eval={corpus}", "env -S {corpus}",
                    "ssh host {corpus}", "sh -c 'cat \"$1\"' sh {corpus}"):
        code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "p",
                           *define, "--command", command)
        line = one_line(err)
        assert code == 2 and "experiments.p.params.command" in line, (command, err)
        assert "$GPUSESSION_CORPUS" in line and "corpus file name" in line, line
        assert "PWNED" not in line
    assert digest(inj) == before
    code, _, err = cli(capsys, sessions_root, "run", "inj", "--experiment", "p", "--headless")
    assert code != 0
    assert not list(tmp_path.rglob("PWNED_by_name")) and not list(inj.rglob("PWNED_by_name"))


@pytest.mark.parametrize("argv", [
    # shells: -c anywhere (combined, after options, before --) makes every later argument code
    ["sh", "-c", "--", "{corpus}"],
    ["sh", "-c", 'cat "$1"', "sh", "{corpus}"],
    ["bash", "-o", "pipefail", "-c", "run", "{batch}"],
    ["bash", "-e", "-x", "-lc", "run", "{batch}"],
    ["dash", "-ec", "{output}"],
    ["busybox", "sh", "-c", "{corpus}"],
    ["fish", "--command=run", "{corpus}"],
    ["/bin/zsh", "{corpus}"],  # the value would be the script
    # wrappers are skipped to the program they start
    ["env", "-i", "A=1", "B=2", "bash", "-c", "x", "{corpus}"],
    ["timeout", "-k", "3", "5", "nohup", "stdbuf", "-oL", "sh", "-c", "x", "{corpus}"],
    ["sudo", "-u", "me", "chrt", "10", "taskset", "0x3", "ksh", "-c", "x", "{batch}"],
    ["numactl", "-N", "0", "ionice", "-c", "2", "-n", "0", "time", "sh", "-ec", "{batch}"],
    ["docker", "exec", "box", "sh", "-c", "run", "{corpus}"],
    ["docker", "run", "--rm", "img", "bash", "-lc", "run", "{corpus}"],
    # interpreters: in or after a code option, and the script itself
    ["python3", "-c", "import sys; print(sys.argv)", "{corpus}"],
    ["python3.12", "-Bc", "print()", "{batch}"],
    ["python3", "{corpus}"],
    ["python3", "-m", "{corpus}"],
    ["python3", "--check-hash-based-pycs", "always", "-c", "x", "{corpus}"],  # H-34: a value, not the script
    ["node", "--eval={corpus}"],
    ["node", "--eval", "x", "{corpus}"],
    ["nodejs", "-p", "x", "{batch}"],
    ["node", "--print={context}"],
    ["perl", "-ne", "print", "{corpus}"],
    ["perl", "-E", "say 1", "{batch}"],
    ["ruby", "-e", "p 1", "{batch}"],
    ["php", "-r", "echo 1;", "{batch}"],
    ["lua5.4", "-e", "x", "{batch}"],
    ["Rscript", "-e", "x", "{batch}"],
    ["julia", "-e", "x", "{batch}"],
    ["deno", "eval", "{corpus}"],
    ["bun", "-e", "x", "{corpus}"],
    ["awk", "{corpus}"],
    ["gawk", "--source", "x", "{corpus}"],
    ["sed", "-e", "s/a/b/", "{corpus}"],
    ["pwsh", "-Command", "x", "{corpus}"],
    # programs that hand their arguments to a shell or run them
    ["ssh", "host", "{corpus}"],
    ["ssh", "-p", "22", "host", "run", "--in={corpus}"],
    ["env", "-S", "{corpus}"],
    ["env", "--split-string=prog", "{corpus}"],
    ["env", "-iS", "prog", "{corpus}"],
    ["su", "-c", "{corpus}"],
    ["su", "me", "-c", "run", "{corpus}"],
    ["eval", "{corpus}"],
    ["exec", "{corpus}"],
    ["xargs", "-0", "prog", "{corpus}"],
    ["sudo", "-s", "prog", "{batch}"],
    ["watch", "prog", "{batch}"],
])
def test_placeholders_where_a_program_may_run_them_as_code_are_refused(
    argv: list[str],
) -> None:
    with pytest.raises(BadInput) as exc:
        check_command(argv, field="experiments.e.params.command")
    text = str(exc.value)
    assert "experiments.e.params.command" in text and "$GPUSESSION_" in text, text
    assert "a file name" not in text


@pytest.mark.parametrize("name, what", [
    ("batch", "the batch size"), ("output", "the output file name"),
    ("corpus", "the corpus file name"), ("context", "the context limit"),
])
def test_the_advice_names_what_each_placeholder_holds(name: str, what: str) -> None:
    for argv in (["sh", "-c", f"run {{{name}}}"], ["prog", f"x-{{{name}}}"]):
        with pytest.raises(BadInput) as exc:
            check_command(argv, field="params.command")
        assert what in str(exc.value) and "(a file name)" not in str(exc.value)


@pytest.mark.parametrize("argv", [["prog", "{unknown}"], ["prog", "--out={Output}"],
                                  ["prog", "{batches}"]])
def test_an_unknown_placeholder_is_refused_naming_the_known_ones(argv: list[str]) -> None:
    with pytest.raises(BadInput) as exc:
        check_command(argv, field="params.command")
    text = str(exc.value)
    assert "not a placeholder" in text
    assert all(f"{{{n}}}" in text for n in ("batch", "output", "corpus", "context"))


def test_an_unknown_placeholder_and_an_empty_command_are_refused_at_define(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, inj: Path,
) -> None:
    before = digest(inj)
    code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "u", *DEFINE,
                       "--command", "prog {unknown}")
    assert code == 2 and "{unknown}" in one_line(err) and "{corpus}" in one_line(err)
    for empty in ("", "   "):
        code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "u",
                           *DEFINE, "--command", empty)
        line = one_line(err)
        assert code == 2 and "--command is empty" in line and "argv list" not in line, line
    assert digest(inj) == before


#: The script of H-34's last example: it runs its arguments through a shell, as a careless
#: wrapper does (``os.popen("cat " + path)``), then writes one label per corpus ID.
EVALS_ITS_ARGUMENTS = """\
import json, os, sys
corpus, out = sys.argv[1], sys.argv[2].partition("=")[2]
text = os.popen("cat " + corpus).read()
os.system("true " + out + " " + os.environ["GPUSESSION_CORPUS"])
with open(out, "w", encoding="utf-8") as fh:
    for line in text.splitlines():
        if line.strip():
            fh.write(json.dumps({"id": json.loads(line)["id"], "label": "a"}) + "\\n")
"""

_SHELL_NAME = "c$(touch${IFS}INJECTED).jsonl"


def _h34_commands() -> list[Any]:
    import grp
    import os
    import sys

    group = grp.getgrgid(os.getgid()).gr_name  # sg to one's own group needs no password
    return [
        pytest.param("make", "make -f /dev/null --eval={corpus}", "m$(shell touch INJECTED).jsonl",
                     id="make-eval"),
        pytest.param("sg", f"sg {group} {{corpus}}", _SHELL_NAME, id="sg"),
        pytest.param("hyperfine", "hyperfine --runs 1 {corpus}", _SHELL_NAME, id="hyperfine"),
        pytest.param("python3", f"{sys.executable} evals_its_arguments.py {{corpus}} --out={{output}}",
                     _SHELL_NAME, id="python3-script-that-evals"),
    ]


@pytest.mark.parametrize("program, command, corpus_name", _h34_commands())
def test_h34_a_program_that_reads_code_out_of_a_placeholder_finds_none(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, program: str, command: str, corpus_name: str,
) -> None:
    """H-34: the corpus name is never given to the command, only a plain link gpusession made."""
    import csv
    import hashlib
    import shutil

    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed on this machine")
    monkeypatch.chdir(tmp_path)  # where the command runs: `touch INJECTED` would land here
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the worker's private folder, watched too
    (tmp_path / "evals_its_arguments.py").write_text(EVALS_ITS_ARGUMENTS, encoding="utf-8")
    code, _, err = cli(capsys, sessions_root, "new", "inj", "--gpu", "RTX A5000", "--lots", "1",
                       "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    folder = sessions_root / "inj"
    corpus = folder / corpus_name
    corpus.write_text('{"id": "a", "text": "hello", "label": "a"}\n'
                      '{"id": "b", "text": "bye", "label": "a"}\n', encoding="utf-8")
    define = ["--workload", "command", "--corpus", corpus_name, "--values", "1", "--runs", "1",
              "--warmup", "1", "--cold-runs", "1", "--classes", "a,b", "--threshold", "0.5"]
    code, _, err = cli(capsys, sessions_root, "experiment", "inj", "define", "--id", "e", *define,
                       "--command", command)
    assert code == 0, err
    # the program writes no output: --continue-on-reject lets both runs happen after the first (D3)
    code, out, err = cli(capsys, sessions_root, "run", "inj", "--experiment", "e", "--headless",
                         "--continue-on-reject")
    assert not list(tmp_path.rglob("INJECTED")), "the corpus name ran as code"
    assert not list(temp.iterdir()), "the worker's links are removed when it ends"
    with open(folder / "resultats-bruts.csv", encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["phase"] in ("cold", "warm")]
    revision = hashlib.sha256(corpus.read_bytes()).hexdigest()
    assert len(rows) == 2 and all(r["corpus_revision"] == revision for r in rows), rows
    if program == "python3":  # the one command here that writes an output: it is validated
        assert code == 0 and "experiment complete" in out, out + err
        assert all(r["corpus_accepted"] == "true" and r["ids_match"] == "true" for r in rows), rows


def test_h34_python_c_past_an_option_value_is_refused_yet_run_anyway_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refusal is advice; the guarantee is the plain path, even for a ``-c`` script that evals."""
    import sys

    from gpusession.bench.worker import _call, _command_argv, _placeholder_env
    from gpusession.core.folder.plainpaths import make_plain_paths, remove_plain_paths

    monkeypatch.chdir(tmp_path)
    argv_t = [sys.executable, "--check-hash-based-pycs", "always", "-c",
              "import os, sys; os.system('cat ' + sys.argv[1] + ' > /dev/null')", "{corpus}"]
    with pytest.raises(BadInput) as exc:
        check_command(argv_t, field="params.command")
    assert "-c" in str(exc.value) and "$GPUSESSION_CORPUS" in str(exc.value)
    corpus = tmp_path / _SHELL_NAME
    corpus.write_text('{"id": "a"}\n', encoding="utf-8")
    temp = tmp_path / "tmp"
    temp.mkdir()
    run_dir = tmp_path / "runs" / "e"
    plain = make_plain_paths(run_dir, corpus, temp_dirs=[str(temp)])
    try:
        spec = {"corpus": str(corpus), "plain": plain}
        out = run_dir / "batch-1" / "warm-1.jsonl"
        with _placeholder_env(spec, {"batch": 1}, out):
            code = _call(_command_argv(argv_t, spec, {"batch": 1}, out), tmp_path).returncode
    finally:
        remove_plain_paths(plain)
    assert code == 0
    assert not list(tmp_path.rglob("INJECTED")), "the corpus name ran as code"


@pytest.mark.parametrize("argv", [
    ["find", ".", "-exec", "{corpus}", ";"],
    ["find", ".", "-name", "x", "-execdir", "cat", "{corpus}", "+"],
    ["gdb", "-batch", "-ex", "{corpus}"],
    ["gdb", "-batch", "--eval-command={corpus}", "./prog"],
    ["vim", "-c", "{corpus}"],
    ["nvim", "--cmd", "x", "{corpus}"],
    ["vim", "+{corpus}"],
    ["timeout", "5", "find", ".", "-ok", "{corpus}", ";"],
], ids=["find-exec", "find-execdir", "gdb-ex", "gdb-eval-command", "vim-c", "nvim-cmd", "vim-plus",
        "wrapped-find"])
def test_smaller_programs_running_an_argument_as_code_through_an_option_are_refused(
    argv: list[str],
) -> None:
    with pytest.raises(BadInput) as exc:
        check_command(argv, field="experiments.e.params.command")
    assert "runs its argument as code" in str(exc.value) or "code" in str(exc.value)


@pytest.mark.parametrize("argv", [["find", "{corpus}", "-name", "x"], ["gdb", "--args", "./prog", "{corpus}"],
                                  ["vim", "{corpus}"]])
def test_the_same_programs_without_a_code_option_take_a_plain_path(argv: list[str]) -> None:
    check_command(argv, field="experiments.e.params.command")


def test_the_code_options_table_is_one_table_documented() -> None:
    from gpusession.core.experiment.placeholders import CODE_OPTIONS

    docs = (Path(__file__).parents[2] / "docs" / "rules.md").read_text()
    for prog in ("find", "gdb", "vim"):
        assert prog in CODE_OPTIONS and f"`{prog}`" in docs
