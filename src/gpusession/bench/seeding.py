"""The announced seed, applied in the worker before the workload is built (seed 000 §2; A2).

Who calls it: :func:`gpusession.bench.worker.run_torch_worker`, once per worker process
(and per rank), before the workload's factory and its ``load()``. Why: the row's ``seed``
cell states a seed only when something applied it; four processes of one run once had
four different ``torch.initial_seed()`` values while every row said the announced one.
Runs only inside a worker process (torch is the worker's, M5).

What is seeded: Python's ``random``; numpy's global generator when numpy imports (it
takes 32 bits: the seed modulo 2**32); torch's CPU generator and every CUDA device's
(``torch.manual_seed`` covers both; ``torch.cuda.manual_seed_all`` is called too where
CUDA is available: queued, no CUDA context is created here, so the load clock is not
touched). The seed is also put in ``$GPUSESSION_SEED`` for the workload to read, and
passed to the factory as ``seed=`` when the factory names a ``seed`` parameter
(:func:`factory_takes_seed`).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The variable that carries the applied seed to the workload (and to a command).
SEED_ENV = "GPUSESSION_SEED"


@dataclass(frozen=True)
class AppliedSeed:
    """The seed one worker process applied, read back where it can be.

    Attributes:
        seed: the seed given to every generator (the experiment's announced seed).
        generators: what was seeded, in order (``random``, ``numpy``, ``torch``,
            ``torch.cuda``): the proof beside the value.
    """

    seed: int
    generators: tuple[str, ...]


def apply_seed(seed: int, torch: Any) -> AppliedSeed:
    """Seed ``random``, numpy (when importable) and torch (CPU and every CUDA device) with ``seed``.

    Args:
        seed: a whole number within a signed 64-bit integer (the definition's bound).
        torch: the worker's torch module.

    Returns:
        The seed and the generators seeded.

    Raises:
        RuntimeError: torch does not hold the seed after ``manual_seed`` (its
            ``initial_seed()`` reads otherwise): the row would state a seed not applied.
    """
    seed = int(seed)
    random.seed(seed)
    done = ["random"]
    if importlib.util.find_spec("numpy") is not None:  # optional: nothing of it to seed without it
        import numpy

        numpy.random.seed(seed % 2**32)  # the legacy global generator takes 32 bits
        done.append("numpy")
    torch.manual_seed(seed)
    done.append("torch")
    if torch.cuda.is_available():  # queued until CUDA starts: no context is created here
        torch.cuda.manual_seed_all(seed)
        done.append("torch.cuda")
    if torch.initial_seed() != seed % 2**64:
        raise RuntimeError(f"torch holds seed {torch.initial_seed()} after manual_seed({seed})")
    os.environ[SEED_ENV] = str(seed)
    return AppliedSeed(seed, tuple(done))


def factory_takes_seed(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` names a ``seed`` parameter (``SyntheticMlp(seed=…)``); ``**kwargs`` alone does not count.

    A factory that only swallows ``**kwargs`` may hand them on to code that refuses an
    unknown ``seed``: it reads ``$GPUSESSION_SEED`` or ``torch.initial_seed()`` instead.
    """
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    p = params.get("seed")
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


__all__ = ["SEED_ENV", "AppliedSeed", "apply_seed", "factory_takes_seed"]
