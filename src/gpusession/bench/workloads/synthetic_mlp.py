"""Built-in ``synthetic-mlp``: the seed's memory lesson, expected vs measured (M1-M3).

An MLP of ``depth`` square ``Linear(width, width)`` layers; each predict call pushes a
``(len(texts), width)`` random input through it. Expected bytes are computed beside the
measurement so the memory pane can show "expected vs measured": parameters
``depth·(width² + width)·bytes_per_element``; activations of one forward pass without
autograd: the random input (kept by ``predict`` throughout) plus a layer's input and
output, i.e. ``(1 + min(depth, 2))`` live ``(batch, width)`` tensors at the peak,
reported together with the whole-chain upper bound ``(depth + 1)·batch·width·bytes``
(input and every layer's output kept). fp16 and bf16 are 2 bytes per element, fp32 4.
The allocator also rounds blocks up (512-byte granules) and cuBLAS may take a workspace
through it on the first matmul, so measured ≥ expected. Imports torch.
"""

from __future__ import annotations

from typing import Any

import torch

BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


def expected_memory(width: int, depth: int, batch: int, precision: str = "fp32") -> dict[str, int]:
    """Expected memory of the MLP in bytes, to show beside the measured peaks (M1-M3).

    Args:
        width: features per layer (layers are ``Linear(width, width)``).
        depth: number of layers.
        batch: rows of the input (texts × ``rows_per_input``).
        precision: ``"fp32"`` (4 bytes per element), ``"fp16"`` or ``"bf16"`` (2).

    Returns:
        ``parameter_bytes``; ``activation_bytes``, the peak of live activations (the
        input plus at most two layer outputs); ``activation_upper_bytes``, the input and
        every layer's output kept.

    Raises:
        KeyError: an unknown precision.
    """
    b = BYTES[precision]
    row = batch * width * b
    return {
        "parameter_bytes": depth * (width * width + width) * b,
        "activation_bytes": (1 + min(depth, 2)) * row,
        "activation_upper_bytes": (depth + 1) * row,
    }


class SyntheticMlp:
    """The ``synthetic-mlp`` workload: random inputs through ``depth`` square layers.

    Args:
        width: features per layer.
        depth: number of layers.
        seed: the weights' seed (``torch.manual_seed`` at load): the experiment's ``--seed``,
            which the worker applied and passes here (A2); never a ``--param``.
        rows_per_input: rows of the random input per text; the forward batch is
            ``len(texts)·rows_per_input``.
    """

    classes = ["x"]

    def __init__(self, width: int = 1024, depth: int = 4, seed: int = 0, rows_per_input: int = 1,
                 **_: Any) -> None:
        """Keep the shape; the model is built by :meth:`load`. Other params are ignored."""
        self.rows = int(rows_per_input)
        self.width = int(width)
        self.depth = int(depth)
        self.seed = int(seed)
        self.model: torch.nn.Module | None = None
        self.device = "cpu"
        self.precision = "fp32"

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        """Build the seeded MLP on ``device`` in ``precision`` (the context limit is unused).

        Raises:
            KeyError: an unknown precision.
        """
        torch.manual_seed(self.seed)
        dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
        layers = [torch.nn.Linear(self.width, self.width) for _ in range(self.depth)]
        self.model = torch.nn.Sequential(*layers).to(device=device, dtype=dtype).eval()
        self.device = device
        self.precision = precision

    def devices_used(self) -> list[str]:
        """The one device the model was loaded on (R10)."""
        return [self.device]

    def expected_memory(self, batch: int) -> dict[str, int]:
        """:func:`expected_memory` for ``batch`` texts at this shape and precision, in bytes."""
        return expected_memory(self.width, self.depth, batch * self.rows, self.precision)

    def count_truncated(self, texts: list[str]) -> int:
        """Always 0: random inputs have no tokens to cut (R9)."""
        return 0

    def predict(self, texts: list[str]) -> list[str]:
        """One forward pass of a random ``(len(texts)·rows, width)`` input; label ``"x"`` each."""
        assert self.model is not None, "load() first"
        p = next(self.model.parameters())
        x = torch.randn(len(texts) * self.rows, self.width, device=p.device, dtype=p.dtype)
        with torch.inference_mode():
            self.model(x)
        return ["x"] * len(texts)
