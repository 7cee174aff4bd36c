"""The quality metrics, one table: ``{name: function}`` (V6, seed 000 §1).

A metric is chosen by name before the first measurement (V5) and computed by
:mod:`gpusession.core.validation.checks` from one :class:`Tally` of the scored IDs.
What offers or checks a metric reads :data:`METRICS`, so that one added here is offered
everywhere: :class:`~gpusession.core.validation.model.Protocol` (which names are
valid), the choices of ``validate --metric`` (the table itself) and of ``experiment
define --metric`` and the TUI's define form (its names; a test holds them equal), and
the report, which stores every metric's value under its name. The human name of each
(``macro-F1``) is :func:`gpusession.core.records.summary.metric_words`, one floor
below; the same test keeps its keys equal to this table's.

Bottom of :mod:`gpusession.core.validation`: imports nothing else of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import polars as pl


@dataclass(frozen=True)
class ClassScore:
    """Scores of one declared class (V6).

    ``support`` = reference records of the class, ``predicted`` = records predicted as
    it; precision/recall/F1 are 0 when undefined.
    """

    label: str
    precision: float
    recall: float
    f1: float
    support: int
    predicted: int
    true_positives: int


@dataclass(frozen=True)
class Tally:
    """What every metric is computed from: the counts over the scored expected IDs (V6).

    Attributes:
        per_class: one :class:`ClassScore` per declared class, in declared order.
        scored: expected IDs scored (each with a reference; H-21), at least 1.
        right: those whose valid prediction equals the reference.
    """

    per_class: tuple[ClassScore, ...]
    scored: int
    right: int


def macro_f1(tally: Tally) -> float:
    """The mean F1 over the declared classes, 0 to 1 (V6: a class never predicted scores 0).

    Same as ``sklearn.metrics.f1_score(y, p, labels=classes, average="macro",
    zero_division=0)``; summed with :func:`math.fsum` so the order of classes never
    changes the last digit.
    """
    return math.fsum(s.f1 for s in tally.per_class) / len(tally.per_class)


def accuracy(tally: Tally) -> float:
    """Right predictions over every scored ID, 0 to 1 (V6; a missing prediction is wrong, H-21)."""
    return tally.right / tally.scored


#: Every quality metric by the name stored in ``session.toml``'s ``[protocol]`` and the
#: results CSV's ``quality_metric`` (V5, V6). Read-only: the one list of choices.
METRICS: Mapping[str, Callable[[Tally], float]] = MappingProxyType({"macro_f1": macro_f1, "accuracy": accuracy})
#: The metric of a protocol that names none (V6: macro-F1 by default).
DEFAULT_METRIC = "macro_f1"


def tally(scored: pl.DataFrame, classes: Sequence[str]) -> Tally | None:
    """Count ``scored`` (``label`` vs ``ref``, one row per scored expected ID) per class (V6, H-21).

    ``label`` and ``ref`` are the class names (String) or the classes' indexes in
    ``classes`` (an unsigned integer; a code past the last class is a label outside them).

    ``label`` is null where that ID has no valid prediction (missing, malformed, outside
    the declared classes): a wrong prediction, counted in its reference's support and in
    no class's predictions. Per class: precision = tp / predicted, recall = tp /
    support, F1 = 2 tp / (predicted + support), each 0 when its denominator is 0 --
    scikit-learn's definitions with such a prediction kept as a label outside
    ``classes``.

    Returns:
        The tally, or ``None`` when nothing is scored (no metric can be computed).
    """
    if scored.height == 0:
        return None
    frame = scored.lazy()
    # The three counts in one go: polars runs them side by side (a third of the time).
    pred, ref, tp = pl.collect_all([
        frame.group_by("label").agg(predicted=pl.len()).rename({"label": "class"}),
        frame.group_by("ref").agg(support=pl.len()).rename({"ref": "class"}),
        frame.filter(pl.col("label") == pl.col("ref")).group_by("label").agg(tp=pl.len()).rename({"label": "class"}),
    ])
    names = list(classes)
    coded = scored.schema["ref"].is_integer()  # class codes: the index in ``classes``
    table = pl.DataFrame({"class": range(len(names)) if coded else names},
                         schema={"class": scored.schema["ref"] if coded else pl.String})
    for part in (pred, ref, tp):
        table = table.join(part, on="class", how="left", maintain_order="left")
    table = table.fill_null(0)
    scores: list[ClassScore] = []
    for c, n_pred, n_sup, n_tp in table.select("class", "predicted", "support", "tp").iter_rows():
        name = names[c] if coded else c
        precision = n_tp / n_pred if n_pred else 0.0
        recall = n_tp / n_sup if n_sup else 0.0
        f1 = 2 * n_tp / (n_pred + n_sup) if (n_pred + n_sup) else 0.0
        scores.append(ClassScore(name, precision, recall, f1, int(n_sup), int(n_pred), int(n_tp)))
    # A valid prediction is a declared class, so the right ones are the classes' tp.
    return Tally(per_class=tuple(scores), scored=scored.height, right=sum(s.true_positives for s in scores))
