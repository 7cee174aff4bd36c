"""docs/cli.md and the man page are made from the parser as built: a test makes them again
and fails when the checked-in files differ, naming the command that remakes them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpusession.cli import build_parser
from gpusession.commands import reference

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_docs_cli_md_is_the_parser_as_built() -> None:
    made = reference.markdown()
    kept = (ROOT / reference.MARKDOWN_PATH).read_text(encoding="utf-8")
    assert kept == made, f"docs/cli.md differs from the parser: run {reference.REGENERATE}"


def test_the_man_page_is_the_parser_as_built() -> None:
    made = reference.manpage()
    kept = (ROOT / reference.MAN_PATH).read_text(encoding="utf-8")
    assert kept == made, f"docs/man/gpusession.1 differs from the parser: run {reference.REGENERATE}"


def test_the_reference_names_every_command_and_every_option_with_its_help() -> None:
    text = reference.markdown()
    every = reference.commands(build_parser())
    assert {c.words[0] for c in every} == set(reference._subparsers(build_parser()).choices)  # type: ignore[union-attr]
    for c in every:
        assert f"# {c.title}\n" in text, c.title
        section = text.split(f"# {c.title}\n", 1)[1].split("\n#", 1)[0]
        assert "usage: " + c.title.split()[0] in section, c.title
        for action in c.parser._actions:
            if action.option_strings and action.help and reference.GLOBAL_OPTION not in action.option_strings \
                    and "-h" not in action.option_strings:
                assert f"`{action.option_strings[0]}" in section, (c.title, action.option_strings)
    assert "experiment define" in text and "--varied" in text  # a nested command and its options


def test_a_new_option_changes_the_reference_and_the_page() -> None:
    """The generator reads the parser it is given: an option added there shows in both."""
    parser = build_parser()
    run = reference._subparsers(parser).choices["run"]  # type: ignore[union-attr]
    run.add_argument("--brand-new-flag", action="store_true", help="an option no file mentions yet")
    assert "`--brand-new-flag`: an option no file mentions yet" in reference.markdown(parser)
    assert r"\-\-brand\-new\-flag" in reference.manpage(parser)


def test_check_names_the_stale_file_and_the_command(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "cli.md").write_text("old\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "gpusession.commands.reference", "--root", str(tmp_path),
                        "--check"], capture_output=True, text=True, check=False)
    assert r.returncode == 1
    assert "cli.md differs from the parser: run python -m gpusession.commands.reference" in r.stderr
    assert "gpusession.1 differs" in r.stderr
    assert not (tmp_path / "docs" / "man").exists()  # --check writes nothing
    r = subprocess.run([sys.executable, "-m", "gpusession.commands.reference", "--root", str(tmp_path)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "docs" / "cli.md").read_text(encoding="utf-8") == reference.markdown()


def test_the_reference_is_the_same_at_any_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = reference.markdown(), reference.manpage()
    monkeypatch.setenv("COLUMNS", "250")
    assert (reference.markdown(), reference.manpage()) == narrow


def test_the_man_page_is_installed_with_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data_files = project["tool"]["setuptools"]["data-files"]
    assert data_files["share/man/man1"] == [reference.MAN_PATH.as_posix()]
    test_extra = project["project"]["optional-dependencies"]["test"]
    assert any(d.startswith("argparse-manpage") for d in test_extra)
    assert not any(d.startswith("argparse-manpage") for d in project["project"]["dependencies"])


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed here")
def test_man_renders_the_page_without_warnings() -> None:
    r = subprocess.run(["man", "--warnings", "-l", str(ROOT / reference.MAN_PATH)], capture_output=True,
                       text=True, check=False, env={"MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat",
                                                     "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert re.search(r"^GPUSESSION\(1\)", r.stdout, flags=re.M), r.stdout[:200]
    assert "gpusession run" in r.stdout and "--past-limit" in r.stdout.replace("‐", "-")
    assert r.stderr.strip() == "", r.stderr
