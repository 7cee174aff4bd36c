"""Energy per run and per accepted deliverable, from the ``energy … J`` in the rows' notes.

Who calls it: the worker's meter writes the note (:class:`gpusession.core.gpu.nvml.RunEnergy`
through :func:`energy_note`), the report reads the session's figures back
(:func:`energy_summary`). Why the notes: the results CSV keeps its 38 columns, and each
run's joules stay beside the run they belong to. The session's energy is that of every
measured run, failed ones included, divided by the distinct accepted corpora, as the
cost is (K3, K4): never per repetition, never projected.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

#: A run's joules as its notes say them: ``energy 123.4 J`` between ``"; "`` separators.
ENERGY_NOTE = re.compile(r"(?:^|; )energy (\d+(?:\.\d+)?) J(?=;|$)")
#: The largest reading kept (J): a 700 W GPU for 40 years is under 1e12 J; above is a hand edit.
ENERGY_MAX_J = 1e15
#: The measured phases (a load is not a run of a variant).
MEASURED_PHASES = ("cold", "warm")


def energy_figure(joules: float) -> str:
    """Joules as the notes write them: one decimal from 10 J, millijoules (3 decimals) below."""
    return f"{joules:.1f}" if joules >= 10 else f"{joules:.3f}"


def energy_note(joules: float) -> str:
    """``"energy 123.4 J"``: the words a run's notes carry (read back by :func:`energy_of_notes`)."""
    return f"energy {energy_figure(joules)} J"


def energy_of_notes(notes: str | None) -> float | None:
    """The joules a row's notes say, ``None`` when they say none (not measured, not supported).

    A figure too large for a float (a 400-digit note edited by hand reads as ``inf``) or
    above :data:`ENERGY_MAX_J` is no reading either: a report never shows ``inf J``, and
    sums and medians of the kept readings stay finite.
    """
    found = ENERGY_NOTE.search(notes or "")
    if found is None:
        return None
    joules = float(found.group(1))
    return joules if math.isfinite(joules) and joules <= ENERGY_MAX_J else None


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


def energy_summary(frame: Any) -> EnergySummary | None:
    """The session's energy from its results rows; ``None`` when no run was on a GPU.

    Args:
        frame: the results rows (polars, 38 columns).

    Returns:
        The summary: the medians per variant always, the energy per accepted corpus only
        when every measured GPU run has a reading and at least one corpus is accepted
        (a run without one would make the figure too small; nothing accepted: no figure).
    """
    from gpusession.core.records.summary import accepted_unique_corpora

    rows = [r for r in frame.iter_rows(named=True) if _gpu_measured(r)]
    if not rows:
        return None
    joules = [energy_of_notes(r.get("notes")) for r in rows]
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
        unsupported = any("energy not supported by this GPU" in str(r.get("notes") or "") for r in rows)
        reason = (f"{len(rows) - len(read)} of {len(rows)} measured GPU runs have no energy reading"
                  + (" (energy not supported by this GPU)" if unsupported else ""))
    elif accepted == 0:
        reason = "nothing accepted yet"
    per = total / accepted if total is not None and accepted else None
    return EnergySummary(per_variant, len(rows), len(read), total, accepted, per, reason)


__all__ = ["ENERGY_NOTE", "EnergySummary", "energy_figure", "energy_note", "energy_of_notes", "energy_summary"]
