"""Every shell block of the README and the guide runs as written, or says why it cannot.

Each fenced shell block (```sh, or one whose lines start with ``$ ``) is preceded by a
marker: ``<!-- doc-test: run -->`` (run here, on CPU, no network: in a temp folder with
GPUSESSION_HOME, HOME and the XDG folders there, ``gpusession`` and ``python3`` this
tree's), ``<!-- doc-test: run (needs torch) -->`` (skipped with the reason where torch is
not installed), or ``<!-- doc-test: skip (WHY) -->`` (a GPU server, ssh, the real clock, a
placeholder file). A block without a marker fails: a new example decides.

``run given DIR`` copies DIR's files (the person's own program and corpus) into the temp
folder first; ``run without WORD, WORD (why)`` leaves out the lines naming one of the
words (a GPU, ssh), so that the other lines of the block still run as written.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import gpusession

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/guide.md", "docs/testing.md")
MARKER = re.compile(r"^<!-- doc-test: (run|skip)(?: given (\S+))?(?: without ([^()]+?))?(?: \((.+)\))? -->$")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)
#: Every block that runs runs on the clock the other tests read (A6).
pytestmark = [pytest.mark.calendar]


@dataclass(frozen=True)
class Block:
    """One fenced shell block: where it is, its marker, the commands it holds."""

    page: str
    line: int
    verdict: str | None  # "run", "skip" or None (no marker)
    why: str | None
    script: str
    given: str | None = None  # a folder of the repository copied into the work folder first
    without: tuple[str, ...] = ()  # lines naming one of these words are left out

    def lines(self) -> list[str]:
        """The block's commands, a line continued by ``\\`` joined to the next."""
        found: list[str] = []
        pending: list[str] = []
        for line in self.script.splitlines():
            pending.append(line)
            if not line.endswith("\\"):
                found.append("\n".join(pending))
                pending = []
        return found + (["\n".join(pending)] if pending else [])

    def runnable(self) -> str:
        """The script without the commands naming a word of ``without``, each command's exit
        status checked after it (``bash -e`` lets the first command of ``a && b`` fail)."""
        kept = [c for c in self.lines() if not any(word in c for word in self.without)]
        check = 'rc=$?; if [ "$rc" -ne 0 ]; then echo "doc-test: the command above exited $rc" >&2; exit "$rc"; fi'
        return "\n".join(f"{c}\n{check}" for c in kept)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        lang, body = m.group(1), m.group(2)
        prompts = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
        if lang not in ("sh", "bash", "shell", "console") and not prompts:
            continue  # a config file or a sample of output
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.match(before)
        script = "\n".join(prompts) if prompts else body
        if marker is None:
            found.append(Block(page, line, None, None, script))
            continue
        verdict, given, without, why = marker.groups()
        words = tuple(w.strip() for w in without.split(",")) if without else ()
        found.append(Block(page, line, verdict, why, script, given, words))
    return found


BLOCKS = [b for page in PAGES for b in _blocks(page)]


def test_every_shell_block_is_marked_run_or_skip_with_why() -> None:
    unmarked = [b.id for b in BLOCKS if b.verdict is None]
    assert unmarked == [], f"mark these blocks <!-- doc-test: run --> or <!-- doc-test: skip (why) -->: {unmarked}"
    assert all(b.why for b in BLOCKS if b.verdict == "skip"), [b.id for b in BLOCKS if not b.why]
    assert all(b.why for b in BLOCKS if b.without), [b.id for b in BLOCKS if b.without and not b.why]
    assert all((ROOT / b.given).is_dir() for b in BLOCKS if b.given)
    # the quick start, the own-model, the visuals and the cost examples
    assert sum(b.verdict == "run" for b in BLOCKS) >= 4


def test_a_left_out_word_names_a_line_of_its_block() -> None:
    """``without`` leaves out only what it names: each word is in a line of the block, and
    most of the block still runs."""
    for b in BLOCKS:
        commands = b.lines()
        for word in b.without:
            assert any(word in c for c in commands), (b.id, word)
        kept = [c for c in commands if not any(word in c for word in b.without)]
        assert len(kept) > len(commands) // 2, b.id


def test_a_command_that_fails_first_in_an_and_list_fails_the_block() -> None:
    block = Block("x.md", 1, "run", None, "false && true\ntrue")
    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.runnable()], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 1 and "exited 1" in r.stderr


def test_no_example_uses_an_older_option_name() -> None:
    """``validate --output`` and ``export --output`` still work but say their new name: the
    docs teach the new one (``--predictions``, ``--out``)."""
    for b in BLOCKS:
        for command in re.findall(r"gpusession (?:validate|export)\b[^\n]*(?:\\\n[^\n]*)*", b.script):
            assert "--output " not in command, (b.id, command)


def _shims(folder: Path) -> Path:
    """``gpusession``, ``python`` and ``python3`` on PATH as this tree's, whatever is installed."""
    folder.mkdir()
    for name, run in (("gpusession", f'"{sys.executable}" -m gpusession'),
                      ("python", f'"{sys.executable}"'), ("python3", f'"{sys.executable}"')):
        shim = folder / name
        shim.write_text(f'#!/bin/sh\nexec {run} "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if b.verdict == "run"], ids=lambda b: b.id)
def test_the_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    if "torch" in (block.why or "") and importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    if block.given:
        shutil.copytree(ROOT / block.given, work, dirs_exist_ok=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSESSION_") or k == "GPUSESSION_NOW"}
    src = str(Path(gpusession.__file__).resolve().parents[1])
    env.update(
        PATH=f"{_shims(tmp_path / 'bin')}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p),
        GPUSESSION_HOME=str(work / "sessions"), GPUSESSION_PID_NAMESPACE="host", HOME=str(home),
        XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.runnable()], cwd=work, env=env,
                       capture_output=True, text=True, check=False, timeout=600)
    assert r.returncode == 0, f"{block.id} exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
