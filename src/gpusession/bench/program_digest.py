"""The code revision of a command's program: ``git describe``, else a digest of its files (R10, S7).

Why it exists: rows of two programs pooled under one experiment describe code that no
longer exists. R10 says the code revision is observed; a command whose program is not
in a git repository had none (``code=unknown``), so an edited script was pooled with the
old one's runs. Its revision is then a content digest of the program files the command
names, the same value in the worker (what the rows' record and
``experiments.<id>.environment.code_revision`` say) and in the runner's preflight (what a
run appending to the experiment is checked against,
:func:`gpusession.core.folder.code_pin.check_same_code`).

Who calls it: the command worker (:func:`gpusession.bench.worker.run_command_worker`)
and :meth:`gpusession.bench.runner.Runner.preflight`. No torch, no clock.

The program files are the command's words that name an existing regular file that is
code, as written or relative to the command's working folder (the session folder): the
program itself, an interpreter's script (``python3 score.py``) and any other word naming
a source file (:data:`SOURCE_SUFFIXES`) or an executable one; placeholders
(``{corpus}``), an interpreter in first place (``python3``, ``sh``) and a data or state
file the command reads or writes (``count``, ``run.log``: it changes between runs of the
same program) are not; at most :data:`MAX_FILES` of them. Each counts by its bytes up to :data:`MAX_FILE_BYTES`; a larger
one (weights named on the command line) by its size and modification time only. The
revision is ``sha256:<12 hex>``: the SHA-256 of each file's word, its SHA-256 (or
``size:mtime_ns``), in the command's order. A git tree with uncommitted changes says
``abc1234-dirty``, the same for every edit: the digest is added
(``abc1234-dirty+sha256:<12 hex>``) so that two edits are two revisions.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpusession.bench.row_record import is_interpreter

#: The most program files a command's digest reads (the first ones the command names).
MAX_FILES = 16
#: A program file up to this size counts by its bytes (16 MiB); a larger one by its size and mtime.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: A word naming a file with one of these suffixes is a program file (code a command runs or imports).
SOURCE_SUFFIXES = frozenset({".py", ".sh", ".bash", ".zsh", ".r", ".jl", ".js", ".mjs", ".cjs", ".ts", ".rb",
                             ".pl", ".lua", ".php"})
#: How a digest revision starts, and the hex digits it keeps.
DIGEST_PREFIX = "sha256:"
DIGEST_HEX = 12


def code_revision(folder: Path) -> str | None:
    """``git describe --always --dirty`` of the repository holding ``folder``, else ``None`` (R10)."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=folder, capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def program_files(argv: Sequence[Any], root: Path) -> list[tuple[str, Path]]:
    """The words of ``argv`` that name an existing regular file, with the file (see the module).

    Args:
        argv: the command as the experiment stores it (its words, placeholders unfilled).
        root: its working folder (the session folder), for relative words.

    Returns:
        ``(word, path)`` in the command's order, each file once, at most :data:`MAX_FILES`.
    """
    words = [str(a) for a in argv]
    script = 0  # the position of the program itself: the interpreter's script, else the first word
    if words and is_interpreter(words[0]):
        script = next((i for i, w in enumerate(words) if i and not w.startswith("-")), len(words))
        words[0] = ""
    out: list[tuple[str, Path]] = []
    seen: set[Path] = set()
    for i, word in enumerate(words):
        if not word or "{" in word or word.startswith("-"):
            continue
        path = Path(word) if os.path.isabs(word) else root / word
        try:
            if not path.is_file():
                continue
            is_code = (i == script or path.suffix.lower() in SOURCE_SUFFIXES or os.access(path, os.X_OK))
            real = path.resolve()
        except OSError:
            continue
        if not is_code:
            continue
        if real in seen:
            continue
        seen.add(real)
        out.append((word, real))
        if len(out) >= MAX_FILES:
            break
    return out


def files_digest(files: Sequence[tuple[str, Path]]) -> str | None:
    """``sha256:<12 hex>`` of the program files (see the module); ``None`` when there are none or one does not read."""
    if not files:
        return None
    whole = hashlib.sha256()
    for word, path in files:
        try:
            st = path.stat()
            if st.st_size > MAX_FILE_BYTES:
                part = f"size:{st.st_size}:{st.st_mtime_ns}"
            else:
                part = hashlib.sha256(path.read_bytes()).hexdigest()  # at most MAX_FILE_BYTES
        except OSError:
            return None
        whole.update(word.encode("utf-8", "surrogateescape") + b"\0" + part.encode() + b"\0")
    return DIGEST_PREFIX + whole.hexdigest()[:DIGEST_HEX]


def command_code_revision(argv: Sequence[Any], root: Path, code_dir: str | None) -> str | None:
    """The code revision of a command experiment, as observed now (R10).

    Args:
        argv: the command's words.
        root: its working folder (the session folder).
        code_dir: the folder whose ``git describe`` names the code (``--param code_dir``,
            else the folder of its program), ``None`` when none is known.

    Returns:
        ``git describe --always --dirty`` (with the digest added when dirty), else the
        digest of its program files, else ``None`` (unknown).
    """
    described = code_revision(Path(code_dir)) if code_dir else None
    if described is not None and not described.endswith("-dirty"):
        return described
    digest = files_digest(program_files(argv, root))
    if described is None:
        return digest
    return f"{described}+{digest}" if digest else described


__all__ = ["DIGEST_HEX", "DIGEST_PREFIX", "MAX_FILES", "MAX_FILE_BYTES", "SOURCE_SUFFIXES", "code_revision", "command_code_revision",
           "files_digest",
           "program_files"]
