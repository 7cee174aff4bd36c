"""``rates``: the package prices in force and where each comes from; ``rates set`` (K7).

Examples::

    gpusession rates
    gpusession rates --session visuals-test-01 --json
    gpusession rates set "H100 SXM" --days 7 --price 1234.56
    gpusession rates set "B200" --days 7 --price 2400.00 --gpus-per-lot 2

The prices are those :func:`gpusession.core.money.rates.load_rates` combines (``--rates
FILE`` or the session's ``rates.toml``, then the user's own file, then the bundled one);
``rates set`` edits only the user's own file, so a price set once serves every session
from any folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpusession.commands._common import open_session, print_json
from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.folder.package import PACKAGE_DAYS
from gpusession.core.money.rates import (
    Rates,
    RatesSource,
    format_usd,
    load_rates,
    rates_files,
    set_user_price,
    usd_to_minor,
    user_rates_file,
)

#: ``rates --json``'s contract version (C6, docs/json/rates.schema.json).
RATES_SCHEMA_VERSION = 1


def _source_json(src: RatesSource | None) -> dict[str, Any]:
    if src is None:
        return {"source": None, "path": None}
    return {"source": src.kind, "path": None if src.path is None else str(src.path)}


def rates_json(rates: Rates, files: list[RatesSource], name: str | None) -> dict[str, Any]:
    """``rates --json`` (docs/json/rates.schema.json): every card and price with its source.

    Prices are decimal strings and integer cents (K2); a length without a price is absent
    from ``prices`` and listed under ``missing_days`` (K7).
    """
    user = user_rates_file()
    gpus = []
    for model, rate in rates.gpus.items():
        prices = [{"days": d, "price_usd": format(rate.package_price_usd[d], "f"),
                   "price_usd_minor": usd_to_minor(rate.package_price_usd[d]),
                   **_source_json(rate.price_sources.get(d))}
                  for d in PACKAGE_DAYS if d in rate.package_price_usd]
        gpus.append({"gpu_model": model, "gpus_per_lot": rate.gpus_per_lot,
                     "gpus_per_lot_source": _source_json(rate.card_source)["source"],
                     "note": rate.source, "prices": prices,
                     "missing_days": [d for d in PACKAGE_DAYS if d not in rate.package_price_usd]})
    read = [{"source": s.kind, "path": str(s.path)} for s in files]
    return {"schema_version": RATES_SCHEMA_VERSION, "name": name, "user_file": str(user),
            "files": [*read, {"source": "bundled", "path": None}], "gpus": gpus}


def rates_lines(doc: dict[str, Any]) -> list[str]:
    """The text of ``rates``, from the same document as ``--json`` (A1)."""
    out = ["Files read, highest first (a price in a higher file wins for its card and length):"]
    for f in doc["files"]:
        out.append(f"  {f['source']:<8} {f['path'] or 'gpusession/data/rates.toml (in the package)'}")
    if not any(f["source"] == "user" for f in doc["files"]):
        out.append(f"  (your own rates file {doc['user_file']} does not exist yet: gpusession rates set …)")
    for g in doc["gpus"]:
        out.append(f"{g['gpu_model']} — {g['gpus_per_lot']} GPU(s) per lot ({g['gpus_per_lot_source']})")
        for p in g["prices"]:
            out.append(f"  {p['days']:>2} days: {format_usd(p['price_usd_minor'])} ({p['source']})")
        if g["missing_days"]:
            days = ", ".join(str(d) for d in g["missing_days"])
            out.append(f"  {days} days: not in the rates files (never guessed; "
                       f"gpusession rates set \"{g['gpu_model']}\" --days N --price USD)")
    return [printable(line, keep="") for line in out]


def cmd_rates(args: argparse.Namespace) -> int:
    """Print the prices in force, each with the file it comes from (K7).

    Args:
        args: Parsed arguments: ``session``, ``rates``, ``json``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: no such session; a rates file that does not read (file, line, field).
    """
    folder = open_session(args, args.session).folder if args.session else None
    rates_path = Path(args.rates) if args.rates else None
    rates = load_rates(rates_path, session_folder=folder)
    doc = rates_json(rates, rates_files(rates_path, session_folder=folder), args.session)
    if args.json:
        print_json(doc)
    else:
        print("\n".join(rates_lines(doc)))
    return 0


def cmd_rates_set(args: argparse.Namespace) -> int:
    """Add or change one price in the user's own rates file (K7, K2, S7).

    Args:
        args: Parsed arguments: ``gpu_model``, ``days``, ``price`` (a ``Decimal``),
            ``gpus_per_lot``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: the user's rates file does not parse (file and line); a model name that
            is not one printable line. Nothing is written then.
    """
    path = user_rates_file()
    if args.rates_action != "set":  # pragma: no cover - argparse dispatches here only for set
        raise BadInput("expected gpusession rates set MODEL --days N --price USD", field="rates")
    done = set_user_price(path, args.gpu_model, args.days, args.price, args.gpus_per_lot)
    was = "new" if done.previous_usd is None else f"was {format_usd(usd_to_minor(done.previous_usd))}"
    print(printable(f"{done.gpu_model}, {done.days} days: {format_usd(usd_to_minor(done.price_usd))} for one lot "
                    f"of {done.gpus_per_lot} GPU(s) ({was}); GPUs per lot: {done.per_lot_from}", keep=""))
    if done.per_lot_was is not None:
        print(printable(f"note: {done.gpu_model} had {done.per_lot_was} GPU(s) per lot; its other prices in "
                        "your rates file now read as prices of the new lot", keep=""))
    print(printable(f"Written to {done.path}; read by every session after its own rates.toml "
                    "(gpusession rates lists the prices in force)", keep=""))
    return 0
