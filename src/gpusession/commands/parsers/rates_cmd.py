"""The parsers of ``rates`` and ``rates set``.

Each names its handler in :mod:`gpusession.commands.rates_cmd`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler
from gpusession.commands.parsers import PACKAGE_DAYS, PRICE_WORDS, shown

#: ``typing.TYPE_CHECKING`` without importing typing (type checkers read the name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from decimal import Decimal


def _days(text: str) -> int:
    """``--days``: a package length the rates file holds (3, 7 or 30), as ``cost --days`` takes it."""
    if text.strip() not in {str(d) for d in PACKAGE_DAYS}:
        raise argparse.ArgumentTypeError(
            f"expected a package of 3, 7 or 30 days (packages are whole), got {shown(text)}")
    return int(text)


def _price(text: str) -> Decimal:
    """``--price``: :func:`gpusession.core.money.rates.parse_price`, loaded when a price is given."""
    from gpusession.core.money.rates import parse_price

    try:
        return parse_price(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _per_lot(text: str) -> int:
    t = text.strip()
    if not t.isascii() or not t.isdigit() or len(t) > 9 or int(t) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of GPUs per lot ≥ 1, got {shown(text)}")
    return int(t)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rates`` and ``rates set`` to the CLI."""
    p = sub.add_parser(
        "rates",
        help="package prices in force and the file each comes from; rates set adds one",
        description="The GPU models, package lengths and prices in force, each with its source: "
        "--rates FILE or the session's rates.toml, then your own rates file "
        "($XDG_CONFIG_HOME/gpusession/rates.toml, default ~/.config/gpusession/rates.toml), then the "
        "bundled one. A price set in a higher file wins for that "
        "card and length; every other price still comes from the lower files. Prices are never guessed.",
    )
    p.add_argument("--session", metavar="NAME", help="include the session's rates.toml")
    p.add_argument("--rates", metavar="FILE", help="a rates file for this call (instead of the session's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("rates_cmd", "cmd_rates"))
    rsub = p.add_subparsers(dest="rates_action", metavar="ACTION")
    q = rsub.add_parser(
        "set", help="add or change one price in your own rates file",
        description="Add or change the price of one lot of MODEL for a package of --days in your own "
        "rates file ($XDG_CONFIG_HOME/gpusession/rates.toml, default ~/.config/gpusession/rates.toml), read by every "
        "session from any folder. The file is replaced atomically; its other prices are kept.")
    q.add_argument("gpu_model", metavar="MODEL", help='GPU model as the provider names it, e.g. "H100 SXM"')
    q.add_argument("--days", required=True, type=_days, metavar="{3,7,30}", help="package length in days")
    q.add_argument("--price", required=True, type=_price, metavar="USD",
                   help=f"USD for one lot for that package: {PRICE_WORDS}")
    q.add_argument("--gpus-per-lot", type=_per_lot, metavar="N",
                   help="GPUs in one lot (default: as already set for the card, else 1)")
    q.set_defaults(func=Handler("rates_cmd", "cmd_rates_set"))

