"""The paths a command workload's placeholders substitute: always plain paths gpusession made (H-34).

Why it exists: a refusal list of dangerous programs can never be complete (``make
--eval={corpus}``, ``sg root {corpus}``, ``hyperfine {corpus}`` and any script that
runs ``eval`` on its arguments read code out of an argument). So a user's file name never
reaches the command at all: ``{corpus}`` becomes a link named ``corpus.jsonl`` in a
private folder gpusession made (mode 0700, ``tempfile.mkdtemp``), ``{output}`` the run's
output path when that path is plain already (``runs/<experiment>/<variant>/…`` of a session
folder whose own path is plain), else the same file reached through a link to the
experiment's runs folder in that private folder; ``{batch}`` and ``{context}`` are
integers. Every value substituted -- argument and ``GPUSESSION_*`` variable alike --
matches :data:`PLAIN` (``/`` then ``A-Z a-z 0-9 . _ / -`` only), in which no shell, make,
Python or awk finds code. The links live outside the session folder, so a retrieval
(``rsync -a``) never copies a link that would dangle at home.

What cannot be promised: a program that resolves the link (``realpath``) and then
runs ``eval`` on the *target's* name sees the user's name again.

Who calls it: the command worker (:mod:`gpusession.bench.worker`), once per worker
process (:func:`make_plain_paths`, :func:`remove_plain_paths`) and for each call
(:func:`substitution_values`). :func:`plan_plain_paths` is the pure part.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusession.core.experiment.placeholders import plain_value
from gpusession.core.files.errors import BadInput

#: A path a placeholder may substitute: absolute, and only characters no program reads
#: as code or as an option (``$``, quotes, spaces, ``;``, ``(``… never).
PLAIN = re.compile(r"/[A-Za-z0-9._/-]*")
#: The characters of :data:`PLAIN`, in words, for an error.
PLAIN_WORDS = "A-Z a-z 0-9 . _ / -"
#: The private folder's name prefix, followed by the PID of the process that made it and
#: ``-`` (``tempfile.mkdtemp`` then adds letters, digits and ``_``).
PREFIX = "gpusession-plain-"
_LEFT_BEHIND = re.compile(re.escape(PREFIX) + r"(\d+)-[A-Za-z0-9_]+")
#: One plain suffix of a corpus file name (``.jsonl``, ``.csv``, ``.gz``).
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,16}")
#: Where the private folder goes when ``tempfile.gettempdir()`` is not plain.
FALLBACK_TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - a mkdtemp folder inside, 0700


def is_plain(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is absolute and made only of :data:`PLAIN`'s characters."""
    return PLAIN.fullmatch(os.fspath(path)) is not None


def plain_suffix(name: str) -> str:
    """The file name's trailing suffixes that are plain: ``"m$(x).jsonl"`` → ``".jsonl"``.

    Kept so a program that picks the format by extension (``.csv`` vs ``.jsonl``) still
    reads the corpus as it did; a suffix holding anything else is dropped (``""``).
    """
    kept: list[str] = []
    for suffix in reversed(Path(name).suffixes):
        if not _SUFFIX.fullmatch(suffix):
            break
        kept.append(suffix)
    return "".join(reversed(kept))


@dataclass(frozen=True)
class PlainPaths:
    """What the command sees, and what it stands for (H-34).

    Attributes:
        private_dir: the folder gpusession made for the links (0700, plain path).
        run_dir: the experiment's real runs folder, ``<session>/runs/<experiment>``.
        seen_run_dir: the plain path the command is given for ``run_dir``: ``run_dir``
            itself when plain, else ``private_dir/run`` (a link to it).
        corpus: the plain path given for ``{corpus}`` (``private_dir/corpus.jsonl``, a
            link to the real corpus); ``None`` without a corpus.
        corpus_target: the real corpus (absolute), or ``None``.
    """

    private_dir: Path
    run_dir: Path
    seen_run_dir: Path
    corpus: Path | None
    corpus_target: Path | None

    @property
    def run_dir_linked(self) -> bool:
        """Whether the command reaches ``run_dir`` through a link (its path is not plain)."""
        return self.seen_run_dir != self.run_dir

    def output(self, real: Path) -> Path:
        """The plain path given for ``{output}``: the same file as ``real``, under :attr:`seen_run_dir`.

        The command writes there and the file lands at ``real``, where the runner
        validates it (V8).

        Raises:
            BadInput: ``real`` is not under :attr:`run_dir`, or its part below it is not
                plain (a variant id with other characters).
        """
        real_abs = Path(os.path.abspath(real))
        try:
            rel = real_abs.relative_to(self.run_dir)
        except ValueError:
            raise BadInput(f"is not inside {self.run_dir}; a command's output must be", path=real) from None
        seen = self.seen_run_dir / rel
        if not is_plain(seen):
            raise BadInput(f"holds characters other than {PLAIN_WORDS}; a command is only ever "
                           "given a plain path", path=real)
        return seen


def plan_plain_paths(run_dir: str | os.PathLike[str], corpus: str | os.PathLike[str] | None,
                     private_dir: str | os.PathLike[str]) -> PlainPaths:
    """The plain paths a command is given, pure: nothing is read or written (H-34).

    Args:
        run_dir: ``<session>/runs/<experiment>`` (relative paths are taken from the
            current folder, which the command shares).
        corpus: the real corpus file, any name; ``None`` without a corpus.
        private_dir: the private folder the links go in (its path must be plain).

    Returns:
        A :class:`PlainPaths`; ``corpus`` is ``private_dir/corpus<suffix>`` with the
        corpus name's plain suffix (``.jsonl``); ``seen_run_dir`` is ``run_dir`` when its
        absolute path is plain, else ``private_dir/run``.

    Raises:
        BadInput: ``private_dir``'s path is not plain.
    """
    private = Path(os.path.abspath(private_dir))
    if not is_plain(private):
        raise BadInput(f"holds characters other than {PLAIN_WORDS}; the links a command reads "
                       "must have a plain path (set TMPDIR to such a folder)", path=private)
    real_run = Path(os.path.abspath(run_dir))
    seen_run = real_run if is_plain(real_run) else private / "run"
    target = None if corpus is None else Path(os.path.abspath(corpus))
    link = None if target is None else private / f"corpus{plain_suffix(target.name)}"
    return PlainPaths(private_dir=private, run_dir=real_run, seen_run_dir=seen_run, corpus=link,
                      corpus_target=target)


def _temp_roots() -> list[str]:
    roots = [tempfile.gettempdir(), *FALLBACK_TEMP_DIRS]
    return [r for r in dict.fromkeys(os.path.abspath(r) for r in roots) if is_plain(r) and os.path.isdir(r)]


def make_plain_paths(run_dir: str | os.PathLike[str], corpus: str | os.PathLike[str] | None, *,
                     temp_dirs: Sequence[str] | None = None) -> PlainPaths:
    """Make the private folder and its links; the paths to substitute (H-34).

    The folder is new (``tempfile.mkdtemp``: a unique name holding this PID, mode 0700,
    created atomically), so no link is ever made or followed through one planted
    beforehand. Folders left by killed workers are removed first (:func:`remove_left_behind`).
    The corpus link points at the real corpus (absolute); when the runs folder's path is
    not plain, ``run`` points at it.

    Args:
        run_dir: ``<session>/runs/<experiment>``.
        corpus: the real corpus file, or ``None``.
        temp_dirs: where the folder may go, first plain one that takes it; default
            ``tempfile.gettempdir()``, then :data:`FALLBACK_TEMP_DIRS`.

    Returns:
        The :class:`PlainPaths` made; remove them with :func:`remove_plain_paths`.

    Raises:
        BadInput: no folder with a plain path could take the private folder (one line
            saying to set ``TMPDIR``).
        OSError: the system refused a link.
    """
    roots = [os.path.abspath(r) for r in temp_dirs] if temp_dirs is not None else _temp_roots()
    private = None
    for root in roots:
        if not is_plain(root):
            continue
        remove_left_behind(root)
        try:
            private = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root)
        except OSError:
            continue
        break
    if private is None:
        raise BadInput(f"no temporary folder with a plain path ({PLAIN_WORDS}) takes the links a "
                       "command workload reads; set TMPDIR to a writable folder with such a path; "
                       "nothing was run", field="TMPDIR")
    plain = plan_plain_paths(run_dir, corpus, private)
    try:
        if plain.corpus is not None and plain.corpus_target is not None:
            os.symlink(plain.corpus_target, plain.corpus)
        if plain.run_dir_linked:
            os.symlink(plain.run_dir, plain.seen_run_dir, target_is_directory=True)
    except BaseException:
        remove_plain_paths(plain)
        raise
    return plain


def remove_plain_paths(plain: PlainPaths) -> None:
    """Remove the links :func:`make_plain_paths` made and their folder; never what they point at.

    Only entries that are still links are removed; the folder is left when something
    else was put in it. Errors are ignored: a temporary folder, nothing lost.
    """
    for link in (plain.corpus, plain.seen_run_dir if plain.run_dir_linked else None):
        if link is not None and os.path.islink(link):
            try:
                os.unlink(link)
            except OSError:
                pass
    try:
        os.rmdir(plain.private_dir)
    except OSError:
        pass


def remove_left_behind(temp_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove the private folders of worker processes that are gone (killed before their cleanup).

    Only folders named by :data:`PREFIX` with the PID of a process that no longer
    exists, owned by this user, holding nothing but links; the links' targets are never
    touched. A folder of a live process, or with anything else inside, stays.

    Args:
        temp_dir: the temporary folder to look in.

    Returns:
        The folders removed.
    """
    import psutil

    removed: list[Path] = []
    try:
        entries = list(os.scandir(temp_dir))
    except OSError:
        return removed
    for entry in entries:
        m = _LEFT_BEHIND.fullmatch(entry.name)
        if m is None or psutil.pid_exists(int(m.group(1))):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            inside = list(os.scandir(entry.path))
            if not all(e.is_symlink() for e in inside):
                continue
            for e in inside:
                os.unlink(e.path)
            os.rmdir(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _integer(name: str, value: Any, *, optional: bool) -> str:
    if value is None and optional:
        return ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{{{name}}} must be an integer, got {value!r}; nothing was run",
                       field=f"params.{name}")
    return str(value)


def substitution_values(plain: PlainPaths, *, batch: Any, context: Any, output: Path,
                        precision: str | None = None, seed: Any = None,
                        params: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The value of each placeholder for one call: every one plain (H-34).

    Args:
        plain: from :func:`make_plain_paths`.
        batch: the batch size (an integer).
        context: the context limit (an integer), or ``None`` (then ``""``).
        output: the run's real output path, under ``plain.run_dir``.
        precision: the variant's precision (``fp32``, ``fp16``, ``bf16``: a word
            gpusession checked), or ``None`` (then ``""``).
        seed: the experiment's seed (an integer), or ``None`` (then ``""``).
        params: the variant's workload parameters (A3), each passed as
            ``param.NAME``: a plain value only
            (:func:`gpusession.core.experiment.placeholders.plain_value`).

    Returns:
        ``{"batch": "4", "output": <plain path>, "corpus": <plain link or "">,
        "context": "512" or "", "precision": "fp16" or "", "seed": "7" or "", "param.model": "a"}``, keyed by
        :data:`gpusession.core.experiment.placeholders.NAMES` and ``param.NAME``.

    Raises:
        BadInput: ``batch``, ``context`` or ``seed`` is not an integer; ``output`` is not under the
            runs folder or not plain below it; a param that is not a plain value.
    """
    values = {"batch": _integer("batch", batch, optional=False),
              "output": str(plain.output(output)),
              "corpus": "" if plain.corpus is None else str(plain.corpus),
              "context": _integer("context", context, optional=True),
              "precision": _precision(precision),
              "seed": _integer("seed", seed, optional=True)}
    for name, value in (params or {}).items():
        text = plain_value(value, path=True)
        if text is None:
            raise BadInput(f"param {name} is not a plain value (a number, true/false, or a word or path "
                           f"of {PLAIN_WORDS} not starting with '-'); a command is only given plain values",
                           field=f"params.{name}")
        values[f"param.{name}"] = text
    return values


#: The precisions a placeholder may carry (the define form's choices): plain words only.
_PRECISIONS = ("fp32", "fp16", "bf16")


def _precision(value: str | None) -> str:
    """``fp16`` → ``"fp16"``; ``None`` → ``""``; anything else refused (H-34: plain values only)."""
    if value is None:
        return ""
    if value not in _PRECISIONS:
        raise BadInput(f"precision is one of {', '.join(_PRECISIONS)}, got {value!r}", field="precision")
    return value


__all__ = ["FALLBACK_TEMP_DIRS", "PLAIN", "PLAIN_WORDS", "PREFIX", "PlainPaths", "is_plain",
           "make_plain_paths", "plain_suffix", "plan_plain_paths", "remove_left_behind", "remove_plain_paths",
           "substitution_values"]
