"""Fake workloads for the run-launcher tests (imported by worker subprocesses; no tests here).

The worker imports these as ``fake_workloads:<Factory>`` (the tests put this folder on
``PYTHONPATH``), so the harness is exercised end to end without the demo model.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parent


class OutOfMemoryError(RuntimeError):
    """Same name as ``torch.cuda.OutOfMemoryError``; the worker recognises OOM by it."""


class Echo:
    """Predicts the first word of each text; logs every predict batch size to a file.

    Params: ``log`` (path for ``{"phase_hint", "batch"}`` lines), ``oom_batch`` (raise
    OutOfMemoryError on this batch size), ``fail_batch`` (raise ValueError),
    ``sleep_s`` (per predict call), ``marker`` (file written when predict starts), ``done_marker`` (written when a
    predict call ends its sleep),
    ``chatty`` (print to stdout: must not break the protocol), ``fail_call`` (raise
    ValueError on this 1-based predict call of the process, e.g. part-way into a warm-up),
    ``raise_batch`` with ``raise_message`` (raise RuntimeError with those words on this
    batch size: a library's allocation failure), ``sticky_call`` (from this 1-based
    predict call on, every call of the process raises CUDA's illegal-address error, as a
    sticky error does; ``sticky_marker``: a file made then, so a later process stays
    well).
    """

    classes = ["a", "b"]

    def __init__(self, log: str | None = None, oom_batch: int | None = None,
                 fail_batch: int | None = None, sleep_s: float = 0.0, marker: str | None = None, done_marker: str | None = None,
                 chatty: bool = False, fail_call: int | None = None,
                 raise_batch: int | None = None, raise_message: str = "",
                 sticky_call: int | None = None, sticky_marker: str | None = None, **_: Any) -> None:
        self.log = Path(log) if log else None
        self.oom_batch = oom_batch
        self.fail_batch = fail_batch
        self.sleep_s = sleep_s
        self.marker = Path(marker) if marker else None
        self.done_marker = Path(done_marker) if done_marker else None
        self.chatty = chatty
        self.context_limit: int | None = None
        self.fail_call = fail_call
        self.calls = 0
        self.raise_batch = raise_batch
        self.raise_message = raise_message
        self.sticky_call = sticky_call
        self.sticky_marker = Path(sticky_marker) if sticky_marker else None
        self.sticky = False

    def revisions(self) -> dict[str, str]:
        return {"model_revision": "echo-1", "tokenizer_revision": "split-1"}

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        self.context_limit = context_limit
        if self.chatty:
            print("loading echo workload {not json}")

    def count_truncated(self, texts: list[str]) -> int:
        """The inputs with more words than the limit: the ones this echo reads only the start of (R9)."""
        if self.context_limit is None:
            return 0
        return sum(1 for t in texts if len(t.split()) > self.context_limit)

    def predict(self, texts: list[str]) -> list[str]:
        self.calls += 1
        if self.fail_call is not None and self.calls == self.fail_call:
            raise ValueError(f"failed on predict call {self.calls}")
        if self.sticky_call is not None and self.calls == self.sticky_call and not (
                self.sticky_marker is not None and self.sticky_marker.exists()):
            self.sticky = True
            if self.sticky_marker is not None:
                self.sticky_marker.write_text(str(os.getpid()))
        if self.sticky:
            raise RuntimeError("CUDA error: an illegal memory access was encountered\n"
                               "CUDA kernel errors might be asynchronously reported")
        if self.marker is not None and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write(json.dumps({"batch": len(texts)}) + "\n")
        if self.oom_batch is not None and len(texts) == self.oom_batch:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if self.fail_batch is not None and len(texts) == self.fail_batch:
            raise ValueError("bad batch")
        if self.raise_batch is not None and len(texts) == self.raise_batch:
            raise RuntimeError(self.raise_message)
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.done_marker is not None:  # the call outlived its sleep: a test counts it, no stopwatch
            self.done_marker.write_text(str(os.getpid()))
        if self.chatty:
            print("predicting", len(texts))
        return [t.split()[0] if t.split() else "a" for t in texts]


class Deaf(Echo):
    """An echo that takes the context limit and counts no cut (no ``count_truncated``, A2)."""

    count_truncated = None  # type: ignore[assignment]


class RevisionFile(Echo):
    """Echo whose ``model_revision`` is the text of the file ``revision_file`` names (a model replaced on disk)."""

    def __init__(self, revision_file: str = "", **kw: Any) -> None:
        super().__init__(**kw)
        self.revision_file = Path(revision_file)

    def revisions(self) -> dict[str, str]:
        return {"model_revision": self.revision_file.read_text().strip(), "tokenizer_revision": "split-1"}


class SlowLoad(Echo):
    """Echo whose load writes ``marker`` and then blocks for ``load_sleep_s``."""

    def __init__(self, load_sleep_s: float = 30.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.load_sleep_s = load_sleep_s

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        super().load(device, precision, context_limit)
        if self.marker is not None:
            self.marker.write_text(str(os.getpid()))
        time.sleep(self.load_sleep_s)


class RankEcho(Echo):
    """Echo that fails on one rank of a torchrun group.

    Params: ``fail_rank`` with ``fail_rank_batch`` (that rank raises ValueError on that
    batch size), ``die_rank`` with ``die_rank_batch`` (that rank exits with code 7;
    ``die_agent_rank``: the rank of the node ``gpusession agent`` started instead),
    ``hang_rank`` with ``hang_rank_batch`` (that rank sleeps ``hang_s``, default 600 s),
    ``load_fail_rank`` (that rank's load raises RuntimeError).
    """

    def __init__(self, fail_rank: int | None = None, fail_rank_batch: int | None = None,
                 die_rank: int | None = None, die_rank_batch: int | None = None,
                 hang_rank: int | None = None, hang_rank_batch: int | None = None,
                 hang_s: float = 600.0, load_fail_rank: int | None = None,
                 die_agent_rank: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.rank = int(os.environ.get("RANK", "-1"))
        self.fail = fail_rank == self.rank
        self.fail_batch_of_rank = fail_rank_batch
        self.die = die_rank == self.rank or (
            die_agent_rank and os.environ.get("GPUSESSION_LEADER_NODE") != "1")
        self.die_batch = die_rank_batch
        self.hang = hang_rank == self.rank
        self.hang_batch = hang_rank_batch
        self.hang_s = hang_s
        self.load_fail = load_fail_rank == self.rank

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        if self.load_fail:
            raise RuntimeError(f"rank {self.rank} cannot load")
        super().load(device, precision, context_limit)

    def predict(self, texts: list[str]) -> list[str]:
        if self.fail and len(texts) == self.fail_batch_of_rank:
            raise ValueError(f"rank {self.rank} refuses batch {len(texts)}")
        if self.die and len(texts) == self.die_batch:
            os._exit(7)
        if self.hang and len(texts) == self.hang_batch:
            time.sleep(self.hang_s)
        return super().predict(texts)


class HugeAt:
    """A tiny model on the device whose predict allocates ``huge_bytes`` at ``huge_batch``
    (a real out-of-memory error on any GPU), else a small matmul. Imports torch."""

    classes = ["x"]

    def __init__(self, huge_batch: int = 8, huge_bytes: int = 1 << 50, **_: Any) -> None:
        self.huge_batch = int(huge_batch)
        self.huge_bytes = int(huge_bytes)
        self.device = "cpu"
        self.w: Any = None

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        import torch

        self.device = device
        self.w = torch.randn(256, 256, device=device)

    def devices_used(self) -> list[str]:
        return [self.device]

    def predict(self, texts: list[str]) -> list[str]:
        import torch

        if len(texts) == self.huge_batch:
            torch.empty(self.huge_bytes, dtype=torch.uint8, device=self.device)
        x = torch.randn(len(texts) * 64, 256, device=self.device)
        (x @ self.w).sum().item()
        return ["x"] * len(texts)


class OomLoad(Echo):
    """Echo whose load runs out of memory (stays per variant)."""

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 40.00 GiB")


class RefusedLoad(Echo):
    """Echo whose load refuses its settings with the project's BadInput."""

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        from gpusession.core.files.errors import BadInput

        raise BadInput("model_dir does not exist", field="params.model_dir")


class OneArgLoad:
    """Breaks the contract: ``load`` takes no device/precision/context."""

    def load(self) -> None:
        pass

    def predict(self, texts: list[str]) -> list[str]:
        return ["a"] * len(texts)


class Probe(Echo):
    """Records what it received, one JSON line each, to the file ``probe`` names (A2).

    At ``load``: ``{"kind": "load", "pid", "seed" (what its factory got), "torch_seed"
    (``torch.initial_seed()``), "random_first" (the first ``random.random()``),
    "numpy_first" (the first ``numpy.random.random_sample()``), "env_seed"
    ($GPUSESSION_SEED), "device", "precision", "context", "params" (every other keyword
    argument of its factory)}``; at each ``predict``: ``{"kind": "predict", "pid",
    "batch": len(texts), "first": texts[0]}``. A row of its run is checked cell by cell
    against these. Imports torch and numpy (the worker's).
    """

    def __init__(self, probe: str, seed: int | None = None, **params: Any) -> None:
        super().__init__(**params)
        self.probe = Path(probe)
        self.seed = seed
        self.params = {"probe": probe, **params}

    def _write(self, record: dict[str, Any]) -> None:
        with open(self.probe, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"pid": os.getpid(), **record}) + "\n")

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        import random

        import numpy
        import torch

        self._write({"kind": "load", "seed": self.seed, "torch_seed": torch.initial_seed(),
                     "random_first": random.random(), "numpy_first": float(numpy.random.random_sample()),
                     "env_seed": os.environ.get("GPUSESSION_SEED"), "device": device,
                     "precision": precision, "context": context_limit, "params": self.params})
        super().load(device, precision, context_limit)

    def predict(self, texts: list[str]) -> list[str]:
        self._write({"kind": "predict", "batch": len(texts), "first": texts[0] if texts else None})
        return super().predict(texts)


def write_corpus(path: Path, n: int = 8, words: int = 5) -> Path:
    """A JSONL corpus of ``n`` texts labelled a/b; each text has ``words`` words."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for i in range(n):
            label = "a" if i % 2 == 0 else "b"
            text = " ".join([label] + ["w"] * (words - 1))
            fh.write(json.dumps({"id": f"t-{i:03d}", "text": text, "label": label}) + "\n")
    return path


def with_tests_on_path(monkeypatch: Any) -> None:
    """Let worker subprocesses import this module."""
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(TESTS_DIR) + (os.pathsep + old if old else ""))
