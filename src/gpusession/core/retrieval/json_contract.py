"""The one JSON contract of every ``--json`` output (schemas in ``docs/json/``).

Every document carries :data:`SCHEMA_VERSION`; one fact has one key everywhere
(``name``, ``package`` with its ``end``, ``time_left_s``, ``result_rows``,
``accepted_corpora``), times as numbers of seconds, so a script reads ``list``, ``show``
and ``status`` alike. No polars, no textual: ``status`` builds it every few seconds.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from gpusession.core.files.errors import Failure

#: Raised when a key is renamed or removed, or its meaning changes; added keys keep it.
SCHEMA_VERSION = 1


def package_json(package: Any) -> dict[str, Any]:
    """``{"gpu_model", "lots", "days", "start", "end"}`` (ISO 8601 with offset, or ``None``).

    Args:
        package: a :class:`gpusession.core.folder.package.Package`.
    """
    def iso(t: datetime | None) -> str | None:
        return t.isoformat() if t is not None else None

    return {"gpu_model": package.gpu_model, "lots": package.lots, "days": package.days,
            "start": iso(package.start), "end": iso(package.end)}


def time_left_s(package: Any, now: datetime | None = None) -> float | None:
    """Seconds until the package ends (negative once ended); ``None`` when it is not set."""
    left = package.time_left(now)
    return left.total_seconds() if left is not None else None


def versioned(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with ``schema_version`` first (a key of its own wins: never written twice)."""
    return {"schema_version": SCHEMA_VERSION, **doc}



def json_text(data: Any, **kw: Any) -> str:
    """``json.dumps`` as every printer of gpusession calls it: no NaN nor infinity, ever.

    Why: ``allow_nan`` wrote ``NaN``, a token ``jq`` and every strict reader refuse; a
    figure that is not a number reaching an output is a bug, said in one line (exit 1).

    Raises:
        Failure: the document holds a NaN or an infinity.
    """
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, **kw)
    except ValueError as exc:
        raise Failure(f"a figure that is not a number (NaN or infinity) reached the JSON output ({exc}); "
                      "nothing was printed: please report it") from None

__all__ = ["SCHEMA_VERSION", "json_text", "package_json", "time_left_s", "versioned"]
