"""One corpus revision per experiment, and the corpus kept where the session can audit it (V5, V8).

Who calls it: :meth:`gpusession.bench.runner.Runner.preflight` (:func:`check_one_revision`,
before anything runs, for ``run`` and ``run --resume`` alike), the runner at the start of
an attempt (:func:`keep_corpus`) and ``show`` (:func:`kept_words`).

Why: rows measured against two corpora pooled into one summary compare two works (seed
§1: "archive the set used"). An attempt whose corpus revision (the SHA-256 of the corpus
file, hence its expected-ID set) differs from the revision of the experiment's earlier
rows, or from the one kept at its first run, is refused naming both revisions and the
command that compares them: a new experiment (``derive --set corpus=…``).

What is kept, under ``validation/<experiment>/``, when the corpus lies outside the
session folder (a pulled session can then be audited without the original):

* ``corpus.toml``: ``revision`` (SHA-256 hex), ``path`` (as the experiment names it),
  ``bytes``, ``kept`` (``"whole"`` or ``"ids"``), ``copy`` (the copy's path in the session
  folder, when whole) and ``at``;
* ``expected-ids.csv``: the expected IDs (one ``id`` column, in corpus order);
* ``corpus/<name>``: the corpus itself, when under :data:`KEEP_WHOLE_MAX_BYTES`.

A corpus inside the session folder travels with it: only ``corpus.toml`` is written.

The model and tokenizer a Python workload reports (``revisions()``: ``model_revision``,
``tokenizer_revision``) are held fixed the same way (R1): they are known only once a
worker has loaded the workload, so the runner checks them there
(:func:`workload_revision_refusal`), before that worker's first run and before its load
is appended; an attempt whose revision differs from the experiment's earlier rows (or
from an earlier worker of the same attempt) is refused naming both, its load not
appended and no run started. A revision not reported on either side is not compared.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from gpusession.core.files.csvtext import csv_bytes
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_toml, read_toml_text
from gpusession.core.files.safefile import make_private_dir
from gpusession.core.files.textio import printable
from gpusession.core.files.tomlio import write_atomic_bytes, write_toml
from gpusession.core.files.tomlread import tomllib
from gpusession.core.files.units import format_bytes
from gpusession.core.folder.session import Session
from gpusession.core.validation import load_expected

#: A corpus outside the session folder up to this size is copied whole (64 MiB).
KEEP_WHOLE_MAX_BYTES = 64 * 1024 * 1024
#: The files kept in ``validation/<experiment>/``.
CORPUS_TOML = "corpus.toml"
EXPECTED_IDS = "expected-ids.csv"
COPY_DIR = "corpus"
#: A corpus revision as the runner writes it: the SHA-256 of the file, 64 hex digits.
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
#: Hex digits of a revision shown in words.
SHORT = 6


def is_kept_corpus(relative: Path) -> bool:
    """Whether a path under ``validation/`` is the kept corpus of an experiment, not a run's report.

    ``relative`` is relative to ``validation/``: ``<experiment>/corpus.toml``,
    ``<experiment>/expected-ids.csv`` and all of ``<experiment>/corpus/`` are kept copies
    (see the module); a reader of the validation reports skips them.
    """
    parts = relative.parts
    return (len(parts) == 2 and parts[1] in (CORPUS_TOML, EXPECTED_IDS)
            or len(parts) > 2 and parts[1] == COPY_DIR)

def short(revision: str) -> str:
    """``035c9e…`` (the first :data:`SHORT` hex digits)."""
    return revision[:SHORT] + "…"


def earlier_revisions(session: Session, experiment_id: str) -> list[str]:
    """The distinct corpus revisions of the experiment's rows, in the order first seen."""
    frame = session.results.read()
    if frame.height == 0:
        return []
    col = (frame.filter(pl.col("experiment_id") == experiment_id)
           .get_column("corpus_revision").drop_nulls().to_list())
    return list(dict.fromkeys(str(r) for r in col if r))


#: An attempt refused at a worker's load, its model or tokenizer not the experiment's
#: (:func:`workload_revision_refusal`): the ``stopped`` of its ``experiment_incomplete``
#: record and of the run's outcome; ``run`` exits 2.
REVISION_CHANGED = "revision-changed"
#: The revisions a workload reports that one experiment holds fixed (R1): the row's
#: column, and the thing it names in words.
WORKLOAD_REVISIONS = (("model_revision", "model"), ("tokenizer_revision", "tokenizer"))


def shown_revision(revision: str) -> str:
    """``035c9e…`` for a long revision, a short one (``echo-1``) whole; never a control character."""
    text = printable(str(revision), keep="", digest=True)  # a SHA-256 is a revision, not a key
    return text if len(text) <= 2 * SHORT else short(text)


def earlier_workload_revisions(frame: pl.DataFrame, experiment_id: str) -> dict[str, list[str]]:
    """``{"model_revision": [...], "tokenizer_revision": [...]}``: each column's distinct values of the experiment's rows."""
    if frame.height == 0:
        return {col: [] for col, _ in WORKLOAD_REVISIONS}
    mine = frame.filter(pl.col("experiment_id") == experiment_id)
    return {col: list(dict.fromkeys(str(v) for v in mine.get_column(col).drop_nulls().to_list() if v))
            for col, _ in WORKLOAD_REVISIONS}


def workload_revision_refusal(session_name: str, experiment_id: str, before: dict[str, list[str]],
                              now: dict[str, object]) -> str | None:
    """Why an attempt whose workload reports ``now`` may not join the rows of ``before`` (R1, V5), else ``None``.

    Args:
        session_name: the session, for the command suggested.
        experiment_id: the experiment.
        before: :func:`earlier_workload_revisions` (and what earlier workers of this
            attempt reported).
        now: what the worker's ``revisions()`` reported after its load.

    Returns:
        ``"the model changed since the last attempt of e (echo-1 → echo-2): …"`` naming
        both revisions and the way to compare them (a derived experiment), or ``None``
        when every revision reported on both sides is the same.
    """
    for col, what in WORKLOAD_REVISIONS:
        value = now.get(col)
        if value is None or value == "":
            continue
        other = next((r for r in reversed(before.get(col, [])) if r != str(value)), None)
        if other is None:
            continue
        return (f"the {what} changed since the last attempt of {experiment_id} ({shown_revision(other)} → "
                f"{shown_revision(str(value))}): its rows would pool two {what}s; define a new experiment "
                f"(`gpusession experiment {session_name} derive --id NEW --from {experiment_id} --set …`, "
                f"the setting that gives the new {what}) to compare them; its load was not appended and "
                "no run started")
    return None


@dataclass
class WorkloadRevisions:
    """The model and tokenizer revisions an experiment holds, as an attempt goes on (R1).

    Attributes:
        seen: ``{"model_revision": [...], "tokenizer_revision": [...]}``: the rows'
            (:func:`earlier_workload_revisions`), then each load this attempt admitted.
    """

    seen: dict[str, list[str]]

    @classmethod
    def of(cls, frame: pl.DataFrame, experiment_id: str) -> WorkloadRevisions:
        """What the experiment's rows in ``frame`` hold."""
        return cls(earlier_workload_revisions(frame, experiment_id))

    def admit(self, session_name: str, experiment_id: str, now: dict[str, object]) -> str | None:
        """The refusal of a load that reported ``now`` (:func:`workload_revision_refusal`), else ``None``.

        A load admitted adds its revisions to :attr:`seen`: a later worker of the same
        attempt is compared with it too.
        """
        words = workload_revision_refusal(session_name, experiment_id, self.seen, now)
        if words is None:
            for col, _ in WORKLOAD_REVISIONS:
                value, values = now.get(col), self.seen.setdefault(col, [])
                if value and str(value) not in values:
                    values.append(str(value))
        return words


@dataclass(frozen=True)
class KeptCorpus:
    """What ``validation/<experiment>/corpus.toml`` says was kept (see the module)."""

    revision: str
    path: str
    size_bytes: int
    kept: str
    copy: str | None


def kept_corpus(session: Session, experiment_id: str) -> KeptCorpus | None:
    """The kept corpus record of an experiment, ``None`` when none was written.

    Raises:
        BadInput: a ``corpus.toml`` that does not read, named by file.
    """
    path = session.validation_dir / experiment_id / CORPUS_TOML
    if not path.is_file():
        return None
    try:
        doc = loads_toml(read_toml_text(path), path)  # bounded: nested too deep is refused (H-39)
        return KeptCorpus(revision=str(doc["revision"]), path=str(doc["path"]),
                          size_bytes=int(doc.get("bytes", 0)), kept=str(doc.get("kept", "")),
                          copy=str(doc["copy"]) if doc.get("copy") else None)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"kept corpus record does not read ({exc}); expected revision and path",
                       path=path) from None


def pinned_revision(session: Session, experiment_id: str) -> str | None:
    """The corpus revision the experiment holds: its rows' latest, else the one kept (D4, H-68).

    What ``derive --set corpus=…`` compares a corpus with: by revision, never by the
    path's text (the same path edited is another corpus; ``dir/./corpus.jsonl`` is not).

    Returns:
        The SHA-256 hex, ``None`` when the experiment has no row and kept no corpus (a
        row's revision that is no SHA-256, written by hand, is not one).

    Raises:
        BadInput: a ``corpus.toml`` that does not read (:func:`kept_corpus`).
    """
    before = [r for r in earlier_revisions(session, experiment_id) if _SHA256_RE.fullmatch(r)]
    if before:
        return before[-1]
    kept = kept_corpus(session, experiment_id)
    return kept.revision if kept is not None else None


def check_one_revision(session: Session, experiment_id: str, revision: str | None) -> None:
    """Refuse an attempt on another corpus revision than the experiment's earlier rows (V5).

    Args:
        session: the open session.
        experiment_id: the experiment about to run (or resume).
        revision: SHA-256 of the corpus now, ``None`` without a corpus (nothing checked).

    Raises:
        BadInput: ``the corpus changed since the last attempt (035c9e… → 7f244a…): …``
            (field ``corpus``); nothing was run or appended.
    """
    if revision is None:
        return
    before = earlier_revisions(session, experiment_id)
    kept = kept_corpus(session, experiment_id)
    if kept is not None and kept.revision not in before:
        before.insert(0, kept.revision)
    other = next((r for r in reversed(before) if r != revision), None)
    if other is None:
        return
    raise BadInput(f"the corpus changed since the last attempt of {experiment_id} ({short(other)} → "
                   f"{short(revision)}): its rows would pool two corpora; define a new experiment "
                   f"(`gpusession experiment {session.name} derive --id NEW --from {experiment_id} "
                   "--set corpus=…`) to compare them; nothing was run", field="corpus")


def keep_corpus(session: Session, experiment_id: str, corpus: Path, stored: str,
                revision: str, at: str) -> KeptCorpus | None:
    """Keep what the experiment validates against, at its first run (see the module).

    Args:
        session: the open session.
        experiment_id: the experiment.
        corpus: the corpus file as resolved.
        stored: the path as the experiment names it.
        revision: its SHA-256.
        at: the time, ISO 8601.

    Returns:
        The record written, or ``None`` when one was already kept for this revision.

    Raises:
        BadInput: a linked folder on the way; OSError: the disk refused (the caller
            says it as an incident: the run itself goes on).
    """
    folder = session.validation_dir / experiment_id
    already = kept_corpus(session, experiment_id)
    if already is not None and already.revision == revision:
        return None
    make_private_dir(folder, parents=True, root=session.folder)
    size = corpus.stat().st_size
    inside = corpus.resolve().is_relative_to(session.folder.resolve())
    copy: str | None = None
    kept = "in the session folder"
    if not inside:

        ids = load_expected(corpus).unique.select("id")
        write_atomic_bytes(folder / EXPECTED_IDS, csv_bytes(ids))
        kept = "ids"
        if size <= KEEP_WHOLE_MAX_BYTES:
            make_private_dir(folder / COPY_DIR, root=session.folder)
            target = folder / COPY_DIR / corpus.name
            tmp = target.with_name(f".{target.name}.tmp")
            shutil.copyfile(corpus, tmp)
            tmp.chmod(0o600)
            tmp.replace(target)
            copy, kept = str(target.relative_to(session.folder)), "whole"
    write_toml(folder / CORPUS_TOML, {"revision": revision, "path": stored, "bytes": size,
                                      "kept": kept, "copy": copy, "at": at})
    return KeptCorpus(revision=revision, path=stored, size_bytes=size, kept=kept, copy=copy)


def keep_for_run(session: Session, experiment_id: str, corpus: Path, stored: str,
                 revision: str, at: str) -> str | None:
    """:func:`keep_corpus` for the runner: the problem in words instead of an exception.

    Returns:
        ``None`` when kept (or already kept); else why the corpus could not be kept (the
        run goes on: its rows still carry the revision).
    """
    try:
        keep_corpus(session, experiment_id, corpus, stored, revision, at)
    except (OSError, BadInput) as exc:
        return f"the corpus could not be kept in the session folder for audit: {exc}"
    return None


def kept_words(session: Session, experiment_id: str) -> str | None:
    """What ``show`` says of an experiment's corpus kept, ``None`` when nothing was recorded.

    ``corpus 035c9e… copied whole: validation/e/corpus/eval.jsonl (1.2 MiB)``, ``corpus
    035c9e… kept by its ID list and SHA-256: validation/e/expected-ids.csv (the corpus is
    2.0 GiB)``, or ``corpus 035c9e… in the session folder: corpus/eval.jsonl``.
    """
    try:
        k = kept_corpus(session, experiment_id)
    except BadInput as exc:
        return str(exc)
    if k is None:
        return None
    rel = f"validation/{experiment_id}"
    if k.kept == "whole":
        return f"corpus {short(k.revision)} copied whole: {k.copy} ({format_bytes(k.size_bytes)})"
    if k.kept == "ids":
        return (f"corpus {short(k.revision)} kept by its ID list and SHA-256: {rel}/{EXPECTED_IDS} "
                f"(the corpus, {format_bytes(k.size_bytes)}, is over {format_bytes(KEEP_WHOLE_MAX_BYTES)})")
    return f"corpus {short(k.revision)} in the session folder: {k.path}"


__all__ = ["CORPUS_TOML", "EXPECTED_IDS", "KEEP_WHOLE_MAX_BYTES", "REVISION_CHANGED", "WORKLOAD_REVISIONS", "KeptCorpus",
           "WorkloadRevisions",
           "check_one_revision", "earlier_revisions", "earlier_workload_revisions", "is_kept_corpus",
           "keep_corpus", "keep_for_run", "kept_corpus", "kept_words", "short", "shown_revision",
           "workload_revision_refusal"]
