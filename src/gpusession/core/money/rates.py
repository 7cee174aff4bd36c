"""The rates file and exact money helpers (K2, K7).

A rates file gives, per GPU model, the GPUs in one lot and the price of a *full* package
of 3, 7 or 30 days for one lot, as decimal strings in USD. gpusession ships only the
prices its source documents state (``gpusession/data/rates.toml``); the user overrides
them with ``--rates FILE`` or ``<session>/rates.toml``. A price that is not in the file
stays absent and is reported as "not in the rates file", never guessed (K7).

Money never passes through a binary float: prices are parsed with :mod:`decimal` and
converted to integer USD cents (K2). :mod:`gpusession.core.money.cost` re-exports everything
here; callers may import from either.
"""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.files.tomlio import read_toml, tomllib
from gpusession.core.folder.package import PACKAGE_DAYS

RATES_FILENAME = "rates.toml"
NOT_IN_RATES = "not in the rates file"
CENT = Decimal("0.01")
#: ASCII digits only (``\d`` would take other scripts' digits), at most 9 before the point:
#: a package price × 10,000 lots stays exact in cents within a 64-bit integer (K2).
_PRICE_RE = re.compile(r"[0-9]{1,9}(\.[0-9]{1,2})?")


# -- money helpers -------------------------------------------------------------------
def usd_to_minor(amount: Decimal) -> int:
    """Exact USD amount → integer cents. Raises ``ValueError`` if not a whole cent."""
    cents = amount * 100
    if cents != cents.to_integral_value():
        raise ValueError(f"{amount} USD is not a whole number of cents")
    return int(cents)


def format_usd(minor: int | None) -> str:
    """Integer cents → ``"55.00 USD"``; ``None`` → the not-in-rates sentence."""
    if minor is None:
        return NOT_IN_RATES
    sign = "-" if minor < 0 else ""
    whole, cents = divmod(abs(minor), 100)
    return f"{sign}{whole}.{cents:02d} USD"


def round_half_up_cents(value: Decimal) -> int:
    """Round an exact cent amount (``Decimal``) half-up to an integer number of cents."""
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def normalize_model(name: str) -> str:
    """Model name for comparisons: case-folded, spaces collapsed, ``NVIDIA`` prefix dropped.

    NVML reports ``"NVIDIA RTX A5000"`` for what a provider sells as ``"RTX A5000"``.
    """
    words = name.replace("_", " ").split()
    if words and words[0].casefold() == "nvidia":
        words = words[1:]
    return " ".join(words).casefold()


def _model_words(name: str) -> list[str]:
    text = name.lower().replace("nvidia", " ").replace("geforce", " ")
    return re.sub(r"[^a-z0-9]+", " ", text).split()


#: Words of a GPU name that never tell two cards apart, so an order written without
#: them matches what NVML reports (S5, D8). Each was decided on real names:
#: - vendor and brand: ``NVIDIA``, ``GeForce``, ``Tesla``, ``Quadro``, ``RTX``, ``GTX``
#:   (``"RTX A5000"`` is sold as ``"A5000"``; ``"Quadro RTX 5000"`` and ``"RTX 5000 Ada"``
#:   still differ, by ``Ada``);
#: - form factor and memory kind: ``SXM``…``SXM6``, ``PCIe``, ``HBM2``…``HBM3e``
#:   (``"A100-SXM4-80GB"`` is the order ``"A100 80GB"``);
#: - filler: ``GPU``, ``Generation`` (NVML: ``"NVIDIA RTX 5000 Ada Generation"``).
#: Memory sizes (``80GB``, ``80G``, ``24 GB``) are dropped too: memory is compared on its
#: own, against the reading (:func:`gpusession.core.money.order.memory_deviation`).
#: Every other word counts: a trailing ``D``, ``Ti``, ``SUPER``, ``S``, ``Ada``, ``NVL``,
#: ``SFF``, ``Laptop`` or ``Max-Q`` is another card (``"L40"`` is not ``"L40S"``).
_NEUTRAL_WORDS = frozenset({
    "nvidia", "geforce", "tesla", "quadro", "rtx", "gtx",
    "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "sxm6", "pcie",
    "hbm", "hbm2", "hbm2e", "hbm3", "hbm3e", "gpu", "generation",
})
_MEMORY_WORD_RE = re.compile(r"[0-9]+(gb|gib|g)")
_MEMORY_UNITS = frozenset({"gb", "gib", "g"})


def model_identity(name: str) -> str:
    """The part of a GPU name that tells the card, as one comparable string (S5, D8).

    Case-folded words of letters and digits, less the words of :data:`_NEUTRAL_WORDS` and
    memory sizes, joined without spaces, so ``"RTX 4090D"`` is ``"RTX 4090 D"``.

    Args:
        name: a model as ordered or as NVML names it (``"NVIDIA H100 80GB HBM3"``).

    Returns:
        e.g. ``"h100"``, ``"4090d"``, ``"5000ada"``; ``""`` when nothing is left.
    """
    words = re.sub(r"[^a-z0-9]+", " ", name.casefold()).split()
    kept: list[str] = []
    for i, w in enumerate(words):
        unit_follows = i + 1 < len(words) and words[i + 1] in _MEMORY_UNITS
        if w in _NEUTRAL_WORDS or _MEMORY_WORD_RE.fullmatch(w) or (w.isdigit() and unit_follows):
            continue
        if w in _MEMORY_UNITS and i > 0 and words[i - 1].isdigit():
            continue  # the unit of "24 GB"
        kept.append(w)
    return "".join(kept)


def model_matches(ordered: str, observed: str) -> bool:
    """True when the ordered model and the observed name are the same card (S5, D8).

    Compared by :func:`model_identity`: vendor and brand words, form factor and memory
    sizes aside, every word counts. ``"H100-SXM5-80G"`` matches ``"NVIDIA H100 80GB
    HBM3"``, ``"RTX 4090 24 GB"`` matches ``"NVIDIA GeForce RTX 4090"``; ``"RTX 4090"``
    does not match ``"NVIDIA GeForce RTX 4090 D"``, nor ``"H100"`` ``"NVIDIA H200"``. Used
    by both the order comparison and the checklist's order-match evidence, so they agree.
    """
    want = model_identity(ordered)
    return bool(want) and want == model_identity(observed)


# -- rates (K7) ---------------------------------------------------------------------
@dataclass(frozen=True)
class GpuRate:
    """One GPU model of the rates file.

    Attributes:
        gpu_model: the model as written in the rates file.
        gpus_per_lot: GPUs in one lot (B200: 2); the lot price covers them all (K1).
        package_price_usd: days (3/7/30) → price of a full package for one lot; a price
            the file does not state is absent, never invented (K7).
        source: where the prices come from, as the file says.
    """

    gpu_model: str
    gpus_per_lot: int
    package_price_usd: Mapping[int, Decimal]
    source: str | None = None

    def price_usd_minor(self, days: int) -> int | None:
        """Price of one lot for a ``days`` package, in cents; ``None`` when absent."""
        price = self.package_price_usd.get(days)
        return None if price is None else usd_to_minor(price)


@dataclass(frozen=True)
class Rates:
    """The rates table (K7). ``origin`` says which file it came from."""

    gpus: Mapping[str, GpuRate]
    origin: str
    currency: str = "USD"

    def find(self, gpu_model: str) -> GpuRate | None:
        """The rate of ``gpu_model`` (compared by :func:`normalize_model`), or ``None``."""
        key = normalize_model(gpu_model)
        for name, rate in self.gpus.items():
            if normalize_model(name) == key:
                return rate
        return None

    def models(self) -> list[str]:
        """The GPU models of the rates file, as written, in file order (K7)."""
        return list(self.gpus)


def _line_of(text: str, model: str, key: str | None) -> int | None:
    """Best-effort 1-based line of ``key`` within the tables of ``model`` (for errors)."""
    lines = text.splitlines()
    in_model = False
    header = re.compile(r"^\s*\[\s*gpu\s*\.\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)")
    for i, raw in enumerate(lines, start=1):
        m = header.match(raw)
        if m:
            name = m.group(1).strip("\"'")
            in_model = name == model
            if in_model and key is None:
                return i
            continue
        if raw.lstrip().startswith("["):
            in_model = False
            continue
        if in_model and key is not None and re.match(rf"^\s*\"?{re.escape(key)}\"?\s*=", raw):
            return i
    return None


def _parse_rates(doc: Mapping[str, Any], text: str, path: Path | None, origin: str) -> Rates:
    def bad(msg: str, model: str, key: str | None, fld: str) -> BadInput:
        return BadInput(msg, path=path, line=_line_of(text, model, key), field=fld)

    currency = doc.get("currency", "USD")
    if currency != "USD":
        raise BadInput(f"expected currency = \"USD\", got {shown(currency)}", path=path, field="currency")
    table = doc.get("gpu", {})
    if not isinstance(table, dict):
        raise BadInput('expected tables [gpu."MODEL"]', path=path, field="gpu")
    gpus: dict[str, GpuRate] = {}
    for model, entry in table.items():
        fld = f'gpu."{model}"'
        if not isinstance(entry, dict):
            raise bad("expected a table", model, None, fld)
        per_lot = entry.get("gpus_per_lot")
        if not isinstance(per_lot, int) or isinstance(per_lot, bool) or per_lot < 1:
            raise bad(
                f"expected gpus_per_lot = a whole number ≥ 1, got {shown(per_lot)}",
                model, "gpus_per_lot" if per_lot is not None else None, f"{fld}.gpus_per_lot",
            )
        prices_raw = entry.get("package_price_usd", {})
        if not isinstance(prices_raw, dict):
            raise bad("expected a table of days = \"price\"", model, "package_price_usd",
                      f"{fld}.package_price_usd")
        prices: dict[int, Decimal] = {}
        for days_key, price in prices_raw.items():
            pfld = f"{fld}.package_price_usd.{days_key}"
            if days_key not in {str(d) for d in PACKAGE_DAYS}:
                raise bad(f"expected package length 3, 7 or 30, got {shown(days_key)}", model,
                          days_key, pfld)
            if isinstance(price, float):
                raise bad(f"write the price as a quoted decimal string, e.g. \"{price:.2f}\" "
                          "(a bare number would pass through a binary float, K2)",
                          model, days_key, pfld)
            if isinstance(price, int) and not isinstance(price, bool) and price >= 0:
                price = str(price)
            if not isinstance(price, str) or not _PRICE_RE.fullmatch(price.strip()):
                raise bad(f"expected a price in USD like \"55.00\" (decimal point, at most 2 "
                          f"decimals, at most 9 digits before the point), got {shown(price)}", model, days_key, pfld)
            prices[int(days_key)] = Decimal(price.strip())
        source = entry.get("source")
        if source is not None and not isinstance(source, str):
            raise bad("expected text (in quotes) saying where the prices come from", model,
                      "source", f"{fld}.source")
        gpus[model] = GpuRate(model, per_lot, prices, source)
    return Rates(gpus=gpus, origin=origin, currency="USD")


def load_rates(path: Path | None = None, *, session_folder: Path | None = None) -> Rates:
    """Load the rates table (K7).

    Precedence: an explicit ``path`` (``--rates FILE``), else ``<session_folder>/rates.toml``
    when anything of that name exists (a FIFO or a folder there is refused in one line,
    so the bundled prices never stand in silently for the ones you set), else the bundled
    ``gpusession/data/rates.toml``.

    Raises:
        BadInput: unreadable file, TOML syntax error, a bare-number or malformed price,
            a package length other than 3/7/30, a missing ``gpus_per_lot``; with the file,
            line (where known) and field.
    """
    if path is None and session_folder is not None:
        candidate = Path(session_folder) / RATES_FILENAME
        if os.path.lexists(candidate):  # a FIFO, a folder or a link is refused, never passed over
            path = candidate
    if path is not None:
        path = Path(path)
        doc = read_toml(path)
        return _parse_rates(doc, path.read_text(encoding="utf-8"), path, str(path))
    res = importlib.resources.files("gpusession") / "data" / RATES_FILENAME
    text = res.read_text(encoding="utf-8")
    return _parse_rates(tomllib.loads(text), text, None, "bundled rates file")
