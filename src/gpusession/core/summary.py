"""Session-level figures computed from the results rows (K3, K4).

``accepted_unique_corpora`` is a count of *distinct* corpus revisions with at least one
accepted run -- never a count of rows: five repetitions of one corpus are one
deliverable (seed 000 §5). The validation issue may refine the package-period filter.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


def accepted_unique_corpora(
    frame: pl.DataFrame,
    *,
    period_start: datetime | None = None,
    period_end: datetime | None = None,
) -> int:
    """Distinct ``corpus_revision`` values with ``corpus_accepted = true`` (K3, K4).

    Args:
        frame: results rows (38 columns).
        period_start: reserved for a per-period filter; rows carry no timestamp, so
            every row of the session counts (a session is one package).
        period_end: reserved, as ``period_start``.

    Returns:
        The count (0 when nothing is accepted). Rows without a corpus revision are
        not counted: an accepted run of an unknown corpus cannot be told apart.
    """
    return len(accepted_revisions(frame))


def accepted_revisions(frame: pl.DataFrame) -> set[str]:
    """The distinct ``corpus_revision`` values with at least one accepted run (K4).

    A runner keeps this set and adds each accepted row's revision, instead of
    re-reading the whole CSV for every row it appends.
    """
    if frame.height == 0:
        return set()
    import polars as pl

    accepted = frame.filter(
        pl.col("corpus_accepted").fill_null(False) & pl.col("corpus_revision").is_not_null()
    )
    return set(accepted["corpus_revision"].to_list())
