"""The one way gpusession turns a polars frame into CSV bytes: the same number rules for every file.

Every CSV the product writes (``resultats-bruts.csv``, ``ranks.csv``, the manifest, the
validation lists) reads alike by hand and by any CSV reader: no scientific notation
(``0.000006353``, never ``6.353e-6``, C2), LF line ends, UTF-8. Takes the frame
only (no polars import here): the callers hold polars already.
"""

from __future__ import annotations

import io
from typing import Any


def csv_bytes(frame: Any, *, header: bool = True) -> bytes:
    """``frame`` as CSV bytes (UTF-8) with plain decimals and LF line ends.

    Args:
        frame: a ``polars.DataFrame``.
        header: write the header line (``False`` when appending to a file that has one).

    Returns:
        The bytes to write; an empty frame with ``header`` gives the header alone.
    """
    buf = io.BytesIO()
    frame.write_csv(buf, include_header=header, float_scientific=False, line_terminator="\n")
    return buf.getvalue()


__all__ = ["csv_bytes"]
