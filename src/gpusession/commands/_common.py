"""Helpers shared by the subcommand modules."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.units import format_seconds, format_seconds_range
from gpusession.core.folder.session import Session, sessions_root
from gpusession.core.money.window import local_str, short_timedelta
from gpusession.core.records.summary import SummaryRow
from gpusession.core.retrieval.status import remember_sessions_dir


def root_of(args: argparse.Namespace) -> Path:
    """The sessions root from ``--sessions-dir`` / ``GPUSESSION_HOME`` / ``./sessions``.

    Raises:
        BadInput: the root exists and is not a folder (``--sessions-dir /etc/passwd``):
            "not a folder", exit 2, rather than "no sessions in …".
    """
    root = sessions_root(getattr(args, "sessions_dir", None))
    if root.exists() and not root.is_dir():
        raise BadInput("not a folder; the sessions root (--sessions-dir or GPUSESSION_HOME) "
                       "must be the folder that holds the session folders", path=root)
    return root


def open_session(args: argparse.Namespace, name: str) -> Session:
    """Open session ``name`` under the root chosen by the arguments.

    What the open recovered after a crash (a cut CSV row moved aside, a run in flight
    recorded as an incident) is said on stderr, so no command shows fewer rows silently.

    Args:
        args: the parsed arguments (``--sessions-dir``).
        name: the session's name.

    Returns:
        The open session.
    """
    session = Session.open(root_of(args), name)
    remember_sessions_dir(session.folder.parent)  # `status` from any folder
    for sentence in session.recovered:
        print(f"gpusession: {name}: recovered after an interruption: {sentence}", file=sys.stderr)
    for warning in session.hidden.get("session.toml", ()):  # a pasted secret
        print(f"warning: {warning}", file=sys.stderr)
    return session


def _default(o: Any) -> Any:
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    if isinstance(o, timedelta):
        return o.total_seconds()
    if isinstance(o, Decimal):
        return str(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON (datetimes ISO 8601, Decimals as strings)."""
    json.dump(data, sys.stdout, default=_default, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def format_timedelta(td: timedelta | None) -> str:
    """``2d 03h 15m`` / ``3h 05m`` (or ``ended … ago``); ``not set`` for ``None`` (S6)."""
    return short_timedelta(td)


def local_time(dt: datetime | None) -> str:
    """An aware datetime shown in the user's local time zone, with its offset (S6)."""
    return local_str(dt)


def _or_dash(value: Any) -> str:
    """An empty cell (not recorded) reads "-", never the word None."""
    return "-" if value is None else str(value)


def format_summary(rows: Sequence[SummaryRow | Mapping[str, Any]]) -> str:
    """The summary table (R6): variant, phase, n, median, min–max, quality, outcome in words.

    Args:
        rows: :func:`gpusession.core.records.summary.summary_rows` (or their ``to_json`` dicts).

    Returns:
        The table; a standalone validation reads as an accepted or rejected validation,
        never as a failed run; the quality figure stands beside the times.
    """
    table = [raw if isinstance(raw, SummaryRow) else _row_of(raw) for raw in rows]
    ew = max([10] + [len(_or_dash(r.experiment_id)) for r in table])  # columns fit their words
    vw = max([7] + [len(r.variant_words()) for r in table])
    lines = [f"{'experiment':<{ew}} {'variant':<{vw}} {'phase':<5} {'n':>3} {'median':>9} "
             f"{'min–max':>15}  {'quality':<14}  outcome"]
    for r in table:  # 3 significant digits with a unit: never a measured value as 0 (H-22)
        med = format_seconds(r.median_seconds, "-")
        rng = format_seconds_range(r.min_seconds, r.max_seconds, "-")
        lines.append(
            f"{_or_dash(r.experiment_id):<{ew}} {r.variant_words():<{vw}} "
            f"{_or_dash(r.phase):<5} "
            f"{r.n:>3} {med:>9} {rng:>15}  {r.quality_words():<14}  {r.outcome_words()}"
        )
    return "\n".join(lines)


def _row_of(d: Mapping[str, Any]) -> SummaryRow:
    names = SummaryRow.__dataclass_fields__
    data = {k: d.get(k) for k in names if k in d}
    for k, default in (("runs", d.get("n", 0)), ("n", 0), ("failed", 0), ("median_seconds", None),
                       ("min_seconds", None), ("max_seconds", None), ("p95_seconds", None),
                       ("experiment_id", None), ("variant_id", None), ("phase", None)):
        data.setdefault(k, default)
    return SummaryRow(**data)  # type: ignore[arg-type]  # the keys are SummaryRow's fields
