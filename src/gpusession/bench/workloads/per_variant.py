"""One Python workload per variant, when the varied parameter is one the factory or the load takes (A3, R1).

Why it exists: batch and context are applied per call (``predict`` with ``batch`` texts,
``set_context``), so one loaded workload serves every variant; a varied precision or
``--param`` (``--varied model --values a,b``) is given to the factory or to ``load()``,
so each variant needs its own instance. The warm worker builds one per variant
(:func:`gpusession.bench.phases.open_workload`), loads them all inside the one load clock,
and selects the run's before each warm-up shape and each measured run, so the measured
runs stay interleaved in one process (R5). A cold worker runs one variant: one instance.

What is delegated: ``predict``, ``set_context``, ``count_truncated``, ``count_tokens``,
``expected_memory``, ``revisions`` go to the selected instance; ``devices_used`` is the
union over instances. No torch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PerVariant:
    """The workloads of several variants, one selected at a time (A3).

    Attributes:
        workloads: variant id → its instance, built with the variant's params.
        precisions: variant id → the precision its ``load()`` is given.
        current: the selected instance (the first variant's until :meth:`select_variant`).
    """

    def __init__(self, workloads: Mapping[str, Any], precisions: Mapping[str, str]) -> None:
        """Hold ``workloads`` (at least one), each loaded at ``precisions[variant]``.

        Raises:
            ValueError: no workload.
        """
        if not workloads:
            raise ValueError("no variant to build a workload for")
        self.workloads = dict(workloads)
        self.precisions = dict(precisions)
        self.current = next(iter(self.workloads.values()))

    def select_variant(self, variant: str) -> None:
        """Make ``variant``'s instance the one the next calls reach.

        Raises:
            KeyError: a variant this worker did not build.
        """
        self.current = self.workloads[variant]

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        """Load every instance on ``device``, each at its variant's precision (``precision`` the fixed one)."""
        for variant, workload in self.workloads.items():
            workload.load(device, self.precisions.get(variant, precision), context_limit)

    def predict(self, texts: list[str]) -> list[str]:
        """The selected instance's labels for ``texts``."""
        return list(self.current.predict(texts))

    def devices_used(self) -> list[str]:
        """Every device an instance says it holds tensors on."""
        out: list[str] = []
        for workload in self.workloads.values():
            own = getattr(workload, "devices_used", None)
            out += [str(d) for d in (own() or [])] if callable(own) else []
        return sorted(set(out))

    def __getattr__(self, name: str) -> Any:
        """``set_context``, ``count_truncated``, ``revisions``…: the selected instance's."""
        if name in ("workloads", "precisions", "current"):
            raise AttributeError(name)
        return getattr(self.current, name)


__all__ = ["PerVariant"]
