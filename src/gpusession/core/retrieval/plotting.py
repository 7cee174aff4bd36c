"""matplotlib's pyplot on the Agg backend, whatever ``MPLBACKEND`` says (H-42).

Why: the charts are files and inline SVG, never a window, so the backend is always Agg.
Images built for notebooks set ``MPLBACKEND=module://matplotlib_inline.backend_inline``;
``import matplotlib`` validates that variable and raises ``ValueError`` before
``matplotlib.use("Agg")`` can run. The variable is therefore replaced by ``agg`` for the
import only, in this process only, and put back afterwards (a child process still sees
the user's value).

matplotlib is the ``report`` extra (also in ``demo``), not a plain dependency: where it
is not installed the caller says :data:`CHARTS_HINT` in one line.

Who calls it: :mod:`gpusession.core.retrieval.report` (durations, memory) and
:mod:`gpusession.core.retrieval.compare` (cost per accepted deliverable).
"""

from __future__ import annotations

import os
from typing import Any

#: One line that says how to get charts where matplotlib cannot be imported (README too).
CHARTS_HINT = ("Charts left out: matplotlib is not installed "
               "(`pip install 'matplotlib>=3.7'`, gpusession's `report` extra).")


class ChartsUnavailable(ImportError):
    """matplotlib cannot be imported here (not installed, or broken).

    Attributes:
        note: the one line the report prints in place of its charts.
    """

    def __init__(self, note: str) -> None:
        """Keep ``note``, the line said in place of the charts."""
        super().__init__(note)
        self.note = note


def pyplot_agg() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, any ``MPLBACKEND`` set for this process ignored.

    Returns:
        The pyplot module.

    Raises:
        ChartsUnavailable: matplotlib is not installed, or its import fails for another
            reason (the message names it).
    """
    saved = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "agg"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ChartsUnavailable(CHARTS_HINT) from exc
    except ValueError as exc:  # a bad value in the user's matplotlibrc
        raise ChartsUnavailable("Charts left out: matplotlib could not be loaded "
                                f"({type(exc).__name__}: {exc}).") from exc
    finally:
        if saved is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = saved
    return plt
