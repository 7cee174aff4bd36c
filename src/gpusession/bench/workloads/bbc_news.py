"""Built-in ``bbc-news`` workload: a word-hash ``EmbeddingBag`` + linear classifier.

Who calls it: ``gpusession demo`` trains it once (``python -m
gpusession.bench.workloads.bbc_news train ...`` in a subprocess, so the CLI never
imports torch) and the worker loads it for every run. Imports torch.

Tokenizer: lower-cased ``[a-z0-9']+`` words, cut to the context limit (R9), then word
unigrams and bigrams hashed with CRC-32 into ``BUCKETS`` buckets (stable across
processes and machines, unlike Python's ``hash``). Its description's SHA-256 is the
tokenizer revision; the saved model file's SHA-256 is the model revision.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import torch

from gpusession.bench.workloads.bbc_corpus import read_jsonl
from gpusession.core.files.digest import sha256_file
from gpusession.core.files.nesting import loads_json
from gpusession.core.files.tomlio import fsync_dir, write_atomic_bytes

BUCKETS = 2**18
DIM = 64
EPOCHS = 6
TOKENIZER_SPEC = {
    "name": "gpusession-wordhash",
    "version": 1,
    "regex": "[a-z0-9']+",
    "lowercase": True,
    "ngrams": [1, 2],
    "hash": "crc32",
    "buckets": BUCKETS,
}
_WORD = re.compile(r"[a-z0-9']+")
MODEL_FILE = "bbc-news.pt"
META_FILE = "bbc-news.json"


def tokenizer_revision() -> str:
    """SHA-256 of the tokenizer description (hex)."""
    return hashlib.sha256(json.dumps(TOKENIZER_SPEC, sort_keys=True).encode()).hexdigest()


def words(text: str, context_limit: int | None = None) -> list[str]:
    """The lower-cased words of ``text``, cut to the first ``context_limit`` (R9).

    Args:
        text: one input text.
        context_limit: words kept; ``None`` or 0 keeps all.

    Returns:
        Runs of ``[a-z0-9']``, in order.
    """
    w = _WORD.findall(text.lower())
    return w[:context_limit] if context_limit else w


def token_ids(text: str, context_limit: int | None = None) -> list[int]:
    """Hashed unigram + bigram ids of ``text`` after the context cut; ``[0]`` if empty."""
    w = words(text, context_limit)
    ids = [zlib.crc32(x.encode()) % BUCKETS for x in w]
    ids += [zlib.crc32(f"{a} {b}".encode()) % BUCKETS for a, b in zip(w, w[1:], strict=False)]
    return ids or [0]


class Classifier(torch.nn.Module):
    """EmbeddingBag(BUCKETS, DIM, mean) → Linear(DIM, classes)."""

    def __init__(self, n_classes: int, sparse: bool = False) -> None:
        """Build the two layers; ``sparse`` gives the embedding sparse gradients (training)."""
        super().__init__()
        self.emb = torch.nn.EmbeddingBag(BUCKETS, DIM, mode="mean", sparse=sparse)
        self.lin = torch.nn.Linear(DIM, n_classes)

    def forward(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """Class scores of a batch of bags.

        Args:
            flat: every token id of the batch, concatenated, shape ``(n_tokens,)``, long.
            offsets: the start of each input in ``flat``, shape ``(batch,)``, long.

        Returns:
            Scores of shape ``(batch, n_classes)``.
        """
        return self.lin(self.emb(flat, offsets))


def _batch(ids: list[list[int]], device: Any = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    lengths = [len(x) for x in ids]
    offsets = torch.tensor([0] + lengths[:-1], dtype=torch.long).cumsum(0)
    flat = torch.tensor([i for x in ids for i in x], dtype=torch.long)
    return flat.to(device), offsets.to(device)


def train(corpus_dir: Path, out_dir: Path, *, seed: int = 0, context_limit: int | None = 512) -> dict[str, Any]:
    """Train on ``train.jsonl`` with a fixed seed and save the model into ``out_dir``.

    Returns:
        Metadata written beside the model: classes, seed, epochs, model_revision,
        tokenizer_revision, tune macro-F1, training seconds.
    """
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    train_recs = read_jsonl(corpus_dir / "train.jsonl")
    classes = sorted({r["label"] for r in train_recs})
    index = {c: i for i, c in enumerate(classes)}
    x = [token_ids(r["text"], context_limit) for r in train_recs]
    y = torch.tensor([index[r["label"]] for r in train_recs])
    model = Classifier(len(classes), sparse=True)
    opt_emb = torch.optim.SparseAdam(list(model.emb.parameters()), lr=0.05)
    opt_lin = torch.optim.Adam(model.lin.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(EPOCHS):
        perm = torch.randperm(len(x), generator=gen).tolist()
        for s in range(0, len(perm), 32):
            idx = perm[s : s + 32]
            flat, off = _batch([x[i] for i in idx])
            loss = torch.nn.functional.cross_entropy(model(flat, off), y[idx])
            opt_emb.zero_grad()
            opt_lin.zero_grad()
            loss.backward()
            opt_emb.step()
            opt_lin.step()
    tune = read_jsonl(corpus_dir / "tune.jsonl")
    model.eval()
    with torch.no_grad():
        flat, off = _batch([token_ids(r["text"], context_limit) for r in tune])
        pred = model(flat, off).argmax(1).tolist()
    tune_f1 = _macro_f1([index[r["label"]] for r in tune], pred, len(classes))
    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    # A kill mid-save must not leave a truncated model that later runs would load: save
    # beside it, write the metadata, and rename the model into place last (it is the
    # marker `gpusession demo` checks; S7).
    tmp_model = out_dir / f".{MODEL_FILE}.tmp"
    torch.save(state, tmp_model)
    with open(tmp_model, "rb+") as fh:
        os.fsync(fh.fileno())
    meta = {
        "classes": classes,
        "seed": seed,
        "epochs": EPOCHS,
        "context_limit_trained": context_limit,
        "model_revision": sha256_file(tmp_model),
        "tokenizer_revision": tokenizer_revision(),
        "tune_macro_f1": tune_f1,
        "train_seconds": time.perf_counter() - t0,
        "train_size": len(train_recs),
    }
    write_atomic_bytes(out_dir / META_FILE, json.dumps(meta, indent=2).encode("utf-8"))
    os.replace(tmp_model, out_dir / MODEL_FILE)
    fsync_dir(out_dir)
    return meta


def _macro_f1(y: list[int], p: list[int], n: int) -> float:
    f1s = []
    for c in range(n):
        tp = sum(1 for a, b in zip(y, p, strict=False) if a == c and b == c)
        fp = sum(1 for a, b in zip(y, p, strict=False) if a != c and b == c)
        fn = sum(1 for a, b in zip(y, p, strict=False) if a == c and b != c)
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(f1s) / n


class BbcNewsWorkload:
    """The demo classifier as a :class:`~gpusession.bench.workloads.base.Workload`.

    Args:
        model_dir: folder holding ``bbc-news.pt`` and ``bbc-news.json`` (the session's
            ``models/`` folder).
        cpu_threads: torch intra-op threads on CPU (default 1; 0 = torch's default).
    """

    def __init__(self, model_dir: str, cpu_threads: int = 1, **_: Any) -> None:
        """Read the classes from ``bbc-news.json``; the model is loaded by :meth:`load`.

        Raises:
            OSError: the metadata file cannot be read.
            ValueError: it is not JSON (``json.JSONDecodeError``).
            BadInput: it is nested past the bound (H-39).
            KeyError: it has no ``classes``.
        """
        self.model_dir = Path(model_dir)
        self.cpu_threads = int(cpu_threads)
        self.model: Classifier | None = None
        self.device = "cpu"
        self.context_limit: int | None = None
        meta = loads_json((self.model_dir / META_FILE).read_text(), self.model_dir / META_FILE)  # bounded (H-39)
        self.classes: list[str] = list(meta["classes"])

    def revisions(self) -> dict[str, str]:
        """``model_revision`` (SHA-256 of the model file) and ``tokenizer_revision`` (R1)."""
        return {
            "model_revision": sha256_file(self.model_dir / MODEL_FILE),
            "tokenizer_revision": tokenizer_revision(),
        }

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        """Load the weights onto ``device`` in ``precision``; keep the context limit (R9).

        Raises:
            OSError: the model file cannot be read.
            KeyError: an unknown precision.
        """
        if device == "cpu" and self.cpu_threads > 0:
            # A small model: intra-op threads cost more than they give, and on a busy
            # host they make the timings erratic; recorded in the experiment's params.
            torch.set_num_threads(self.cpu_threads)
        state = torch.load(self.model_dir / MODEL_FILE, map_location="cpu", weights_only=True)
        model = Classifier(len(self.classes))
        model.load_state_dict(state)
        dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
        self.model = model.to(device=device, dtype=dtype).eval()
        self.device = device
        self.context_limit = context_limit

    def devices_used(self) -> list[str]:
        """The devices holding the model's parameters (R10); empty before :meth:`load`."""
        if self.model is None:
            return []
        return sorted({str(p.device) for p in self.model.parameters()})

    def set_context(self, context_limit: int | None) -> None:
        """Apply a run's context limit in tokens to the following predictions (R9).

        Called by the worker before each warm-up shape and each run of a ``varied =
        "context"`` experiment, outside the timed region.
        """
        self.context_limit = context_limit

    def count_tokens(self, texts: list[str]) -> int:
        """Words fed to the model after the context cut (before the bigram hashing)."""
        return sum(len(words(t, self.context_limit)) for t in texts)

    def count_truncated(self, texts: list[str]) -> int:
        """Inputs with more words than the context limit (R9); 0 without a limit."""
        if not self.context_limit:
            return 0
        return sum(1 for t in texts if len(_WORD.findall(t.lower())) > self.context_limit)

    def predict(self, texts: list[str]) -> list[str]:
        """The class label of each text, in order (argmax of the scores)."""
        assert self.model is not None, "load() first"
        flat, off = _batch([token_ids(t, self.context_limit) for t in texts], self.device)
        with torch.inference_mode():
            pred = self.model(flat, off).argmax(1).tolist()
        return [self.classes[i] for i in pred]


def main(argv: list[str] | None = None) -> int:
    """``python -m gpusession.bench.workloads.bbc_news train --corpus DIR --out DIR``."""
    ap = argparse.ArgumentParser(prog="gpusession-bbc-news")
    ap.add_argument("action", choices=["train"])
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--context-limit", type=int, default=512)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    meta = train(args.corpus, args.out, seed=args.seed, context_limit=args.context_limit)
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
