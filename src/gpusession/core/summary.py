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
        period_start, period_end: reserved for a per-period filter; rows carry no
            timestamp, so every row of the session counts (a session is one package).

    Returns:
        The count (0 when nothing is accepted). Rows without a corpus revision are
        not counted: an accepted run of an unknown corpus cannot be told apart.
    """
    if frame.height == 0:
        return 0
    import polars as pl

    accepted = frame.filter(
        pl.col("corpus_accepted").fill_null(False) & pl.col("corpus_revision").is_not_null()
    )
    return int(accepted.select(pl.col("corpus_revision").n_unique()).item()) if accepted.height else 0
