"""A probe Python workload: it writes down what its factory and ``load()`` received (A3).

The worker imports it as ``probe_workload:ParamProbe`` (the tests put this folder on
``PYTHONPATH``). One JSON line per event to the ``log`` param's file: ``{"event":
"built"|"loaded"|"predict", "pid", "model", "precision"}``. It predicts the first word of
each text (the corpus of ``fake_workloads.write_corpus`` is then accepted).
"""

from __future__ import annotations

import json
import os
from typing import Any


class ParamProbe:
    """Keeps its ``model`` param and its load's precision; logs each build, load and predict."""

    classes = ["a", "b"]

    def __init__(self, log: str, model: Any = None, **_: Any) -> None:
        self.log = log
        self.model = model
        self.precision: str | None = None
        self._write("built")

    def _write(self, event: str) -> None:
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"event": event, "pid": os.getpid(), "model": self.model,
                                 "precision": self.precision}) + "\n")

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        self.precision = precision
        self._write("loaded")

    def predict(self, texts: list[str]) -> list[str]:
        self._write("predict")
        return [t.split()[0] for t in texts]
