"""Energy per run and per accepted deliverable, from each run's typed energy reading (R10).

Who calls it: the worker's meter reads the joules (:class:`gpusession.core.gpu.nvml.RunEnergy`),
the runner records them as a typed fact of the run's journal record
(:class:`gpusession.core.records.notefacts.Energy`) and writes ``energy … J`` in the row's
notes for people; the report passes each row's facts to :func:`energy_summary`. Why not
a column: the results CSV keeps its 38 columns. A row older than typed facts has only its
notes: its reading is taken from them by the old-folder adapter
(:func:`gpusession.core.records.old_words.energy_of_notes`), for the display of old
sessions only. The session's energy is that of every measured run, failed ones included,
divided by the distinct accepted corpora, as the cost is (K3, K4): never per repetition,
never projected.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusession.core.records.notefacts import (
    ENERGY_MAX_J,
    ENERGY_UNSUPPORTED,
    RowFacts,
    energy_figure,
    energy_note,
)
from gpusession.core.records.old_words import (
    ENERGY_NOTE,
    energy_of_notes,
    energy_unsupported_in_notes,
)
from gpusession.core.records.summary import accepted_unique_corpora

if TYPE_CHECKING:
    import polars as pl

#: The measured phases (a load is not a run of a variant).
MEASURED_PHASES = ("cold", "warm")


@dataclass(frozen=True)
class EnergySummary:
    """A session's energy on the GPU (NVML's counter, Volta and later).

    Attributes:
        per_variant: ``(experiment_id, variant_id, median_j, runs)``: the median joules
            per run over the runs that returned with a reading.
        gpu_runs: measured runs on a GPU (every phase but the load), failed ones included.
        read_runs: those of them with a reading.
        total_j: joules of every measured GPU run, ``None`` unless every one was read.
        accepted: distinct accepted corpora (K4).
        per_accepted_j: ``total_j ÷ accepted``; ``None`` when not shown (``reason``).
        reason: why there is no energy per accepted corpus, in words.
    """

    per_variant: tuple[tuple[str, str, float, int], ...]
    gpu_runs: int
    read_runs: int
    total_j: float | None
    accepted: int
    per_accepted_j: float | None
    reason: str | None

    def lines(self) -> list[str]:
        """The report's lines: per accepted corpus first, then the median per variant."""
        if self.per_accepted_j is not None and self.total_j is not None:
            head = (f"Energy per accepted corpus: {energy_figure(self.total_j)} J over {self.gpu_runs} "
                    f"measured runs (failed ones included) ÷ {self.accepted} distinct accepted = "
                    f"{energy_figure(self.per_accepted_j)} J (GPU only, NVML's counter).")
        else:
            head = f"Energy per accepted corpus: not shown — {self.reason}."
        out = [head]
        if self.per_variant:
            out.append("Median energy per run: " + "; ".join(
                f"{exp} {variant} {energy_figure(j)} J ({runs} runs)"
                for exp, variant, j, runs in self.per_variant) + ".")
        return out


def _gpu_measured(row: dict[str, Any]) -> bool:
    device = str(row.get("device") or "")
    return row.get("phase") in MEASURED_PHASES and device.startswith(("cuda", "rocm", "gpu"))


def _reading(row: dict[str, Any], facts: RowFacts | None) -> tuple[float | None, bool]:
    """A row's joules and whether its GPU has no counter: typed, or an old row's notes."""
    if facts is None:  # an old row: its notes are its only account (the old-folder adapter)
        notes = str(row.get("notes") or "")
        return energy_of_notes(notes), energy_unsupported_in_notes(notes)
    e = facts.energy
    return (e.joules, e.unsupported) if e is not None else (None, False)


def energy_summary(frame: pl.DataFrame, facts: Sequence[RowFacts | None]) -> EnergySummary | None:
    """The session's energy from its results rows; ``None`` when no run was on a GPU.

    Args:
        frame: the results rows (polars, 38 columns).
        facts: each row's typed facts, in the frame's order
            (:func:`gpusession.core.retrieval.incidents.row_facts`); ``None`` for a row
            older than typed facts, whose reading is taken from its notes.

    Returns:
        The summary: the medians per variant always, the energy per accepted corpus only
        when every measured GPU run has a reading and at least one corpus is accepted
        (a run without one would make the figure too small; nothing accepted: no figure).
    """
    measured = [(r, f) for r, f in zip(frame.iter_rows(named=True), facts, strict=True) if _gpu_measured(r)]
    if not measured:
        return None
    rows = [r for r, _ in measured]
    readings = [_reading(r, f) for r, f in measured]
    joules = [j for j, _ in readings]
    by_variant: dict[tuple[str, str], list[float]] = {}
    for r, j in zip(rows, joules, strict=True):
        if j is not None and r.get("elapsed_seconds") is not None:  # runs that returned
            by_variant.setdefault((str(r.get("experiment_id")), str(r.get("variant_id"))), []).append(j)
    per_variant = tuple((e, v, float(statistics.median(js)), len(js)) for (e, v), js in by_variant.items())
    read = [j for j in joules if j is not None]
    total = sum(read) if len(read) == len(rows) else None
    accepted = accepted_unique_corpora(frame)
    reason = None
    if total is None:
        unsupported = any(u for _, u in readings)
        reason = (f"{len(rows) - len(read)} of {len(rows)} measured GPU runs have no energy reading"
                  + (f" ({ENERGY_UNSUPPORTED})" if unsupported else ""))
    elif accepted == 0:
        reason = "nothing accepted yet"
    per = total / accepted if total is not None and accepted else None
    return EnergySummary(per_variant, len(rows), len(read), total, accepted, per, reason)


__all__ = ["ENERGY_MAX_J", "ENERGY_NOTE", "EnergySummary", "energy_figure", "energy_note", "energy_of_notes",
           "energy_summary"]
