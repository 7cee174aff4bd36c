"""The parsers of ``cost``, ``order``.

Each names its handler in :mod:`gpusession.commands.cost_cmds`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler
from gpusession.commands.parsers import LOTS_MAX, ORDER_STATES, PACKAGE_DAYS, shown


def _lots(text: str) -> int:
    digits = text.strip()
    if not digits.isascii() or not digits.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of lots ≥ 1, got {shown(text)}")
    value = int(digits)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of lots ≥ 1, got {shown(text)}")
    if value > LOTS_MAX:
        raise argparse.ArgumentTypeError(f"expected at most {LOTS_MAX:,} lots, got {shown(text)}")
    return value


def _days(text: str) -> int:
    if text.strip() not in {str(d) for d in PACKAGE_DAYS}:
        raise argparse.ArgumentTypeError(
            f"expected a package of 3, 7 or 30 days (packages are whole), got {shown(text)}")
    return int(text)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, got {shown(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, got {shown(text)}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``cost`` and ``order`` to the CLI."""
    p = sub.add_parser(
        "cost",
        help="package cost and cost per accepted deliverable",
        description="Full package price × lots, cost per distinct accepted deliverable, plan "
        "coverage and extension options. Never projects a pace onto 3, 7 or 30 days.",
    )
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="a session: take the package and accepted count from it (as --session NAME)")
    p.add_argument("--gpu", metavar="MODEL", help='GPU model, e.g. "RTX A5000"')
    p.add_argument("--days", type=_days, metavar="{3,7,30}",
                   help="package length in days (default with --plan: the smallest package covering it)")
    p.add_argument("--lots", type=_lots, metavar="N", help="lots bought (B200: 1 lot = 2 GPUs)")
    p.add_argument("--accepted-results", type=_count, metavar="N",
                   help="distinct accepted deliverables (default with a session: its one count, said with its "
                        "source: approved files, else a rule's accepted outputs, else accepted corpora)")
    p.add_argument("--plan", metavar="D,D,...", help="task durations in days, e.g. 0.25,1,1,0.5,0.5")
    p.add_argument("--rates", metavar="FILE", help="a rates file for this call, in place of the session's "
                   "rates.toml; your own rates file (gpusession rates set) and the bundled one still give "
                   "the prices it does not state")
    p.add_argument("--session", metavar="NAME", help="take the package and accepted count from a session")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("cost_cmds", "cmd_cost"))

    p = sub.add_parser("order", help="order and payment timeline of a session",
                       description="Order, payment order and status timeline in order.toml.")
    p.add_argument("name", metavar="NAME", help="session name")
    osub = p.add_subparsers(dest="order_action", metavar="ACTION", required=True)

    q = osub.add_parser("show", help="order, active payment order, timeline")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=Handler("cost_cmds", "cmd_order_show"))

    q = osub.add_parser("set", help="record what was ordered")
    q.add_argument("--number", required=True, help="order number")
    q.add_argument("--gpu", required=True, metavar="MODEL", help="GPU model ordered")
    q.add_argument("--lots", required=True, type=_lots, metavar="N", help="lots ordered")
    q.add_argument("--days", required=True, type=_days, metavar="{3,7,30}", help="package length")
    q.add_argument("--preparation", metavar="P", help="software preparation chosen (a preference)")
    q.add_argument("--rates", metavar="FILE", help="rates file for the total")
    q.set_defaults(func=Handler("cost_cmds", "cmd_order_set"))

    q = osub.add_parser("payment", help="record the active payment order (replaces the previous)")
    q.add_argument("--asset", required=True, help="asset, e.g. USDT (chosen with the network)")
    q.add_argument("--network", required=True, help="network, e.g. TRC20 (chosen with the asset)")
    q.add_argument("--amount", required=True, help='exact amount as issued, e.g. "12.50"')
    q.add_argument("--destination", required=True, help="destination address")
    q.add_argument("--expires", required=True, metavar="ISO8601", help="expiry, with UTC offset")
    q.set_defaults(func=Handler("cost_cmds", "cmd_order_payment"))

    q = osub.add_parser("event", help="add a timeline event")
    q.add_argument("state", choices=ORDER_STATES, metavar="STATE", help=", ".join(ORDER_STATES))
    q.add_argument("--source", choices=("you", "tracking"), default="you",
                   help="you, or tracking (the provider's tracked status)")
    q.add_argument("--note", default="", help="free text (never a password, key or seed phrase)")
    q.add_argument("--at", metavar="ISO8601", help="when (default: now)")
    q.add_argument("--amount", help="amount sent, compared digit for digit (payment-sent)")
    q.set_defaults(func=Handler("cost_cmds", "cmd_order_event"))

    q = osub.add_parser("deviation", help="compare the GPU seen with the order")
    q.add_argument("--gpu", metavar="MODEL", help="GPU model seen")
    q.add_argument("--count", type=_count, metavar="N", help="number of GPUs seen")
    q.add_argument("--rates", metavar="FILE", help="rates file (GPUs per lot)")
    q.set_defaults(func=Handler("cost_cmds", "cmd_order_deviation"))
