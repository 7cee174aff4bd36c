"""The rates file and exact money helpers (K2, K7).

A rates file gives, per GPU model, the GPUs in one lot and the price of a *full* package
of 3, 7 or 30 days for one lot, as decimal strings in USD. gpusession ships only the
prices its source documents state (``gpusession/data/rates.toml``); the user adds or
overrides prices in up to three files of the same format, read highest first:
``--rates FILE`` (else ``<session>/rates.toml``), then the user's own
``$XDG_CONFIG_HOME/gpusession/rates.toml`` (:func:`user_rates_file`, written by
``gpusession rates set``), then the bundled file. They combine price by price
(:func:`merge_rates`): a card and duration priced in a higher file take that price, every
other price still comes from the lower files, so pricing an H100 never hides the bundled
A5000. A price that is in none of them stays absent and is reported as "not in the rates
file", never guessed (K7).

Money never passes through a binary float: prices are parsed with :mod:`decimal` and
converted to integer USD cents (K2). :mod:`gpusession.core.money.cost` re-exports everything
here; callers may import from either.
"""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import make_private_dir
from gpusession.core.files.secrets import shown
from gpusession.core.files.textio import printable
from gpusession.core.files.tomlio import read_toml, tomllib, write_toml
from gpusession.core.folder.package import PACKAGE_DAYS

RATES_FILENAME = "rates.toml"
#: Where a price can come from, highest first (K7): ``--rates FILE``, the session's
#: ``rates.toml``, the user's own file, the bundled one.
SOURCE_KINDS = ("given", "session", "user", "bundled")
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


#: The form factor words of a GPU name (an SXM card and a PCIe card of one model differ in
#: memory bandwidth, power and NVLink): ``SXM``…``SXM6`` are SXM, ``PCIe`` PCIe, ``NVL`` NVL.
_FORM_FACTORS = {"sxm": "SXM", "sxm2": "SXM", "sxm3": "SXM", "sxm4": "SXM", "sxm5": "SXM",
                 "sxm6": "SXM", "pcie": "PCIe", "nvl": "NVL"}


#: NVIDIA's PCI device ids whose form factor the name NVML gives may not say, from the
#: PCI ID Repository (pci-ids.ucw.cz, vendor 10de). An id not listed tells nothing.
_FORM_OF_PCI_ID = {
    0x20B0: "SXM", 0x20B2: "SXM", 0x20B5: "PCIe", 0x20F1: "PCIe",  # A100 SXM4 40/80GB, PCIe 80/40GB
    0x2330: "SXM", 0x2331: "PCIe", 0x2321: "NVL",  # H100 SXM5, H100 PCIe, H100 NVL
    0x2335: "SXM",  # H200 SXM 141GB
}


def form_factor(name: str, pci_device_id: int | None = None) -> str | None:
    """The form factor a GPU states: ``"SXM"``, ``"PCIe"``, ``"NVL"``, or ``None`` (D8, H-61).

    By its name first: ``"NVIDIA H100 PCIe"`` → ``"PCIe"``, ``"A100-SXM4-80GB"`` → ``"SXM"``;
    NVML names most SXM cards without it (``"NVIDIA H100 80GB HBM3"``), then the PCI
    device id tells (``0x2330`` → ``"SXM"``) when it is a known one; else ``None``: the
    card cannot tell.
    """
    found = {_FORM_FACTORS[w] for w in re.sub(r"[^a-z0-9]+", " ", name.casefold()).split()
             if w in _FORM_FACTORS}
    if len(found) == 1:
        return found.pop()
    return _FORM_OF_PCI_ID.get(pci_device_id) if pci_device_id is not None and not found else None


def form_factor_words(ordered: str, observed: str, *,
                      pci_device_id: int | None = None) -> tuple[str | None, str | None]:
    """The form factor of the card seen against the order: ``(difference, not_checked)`` (D8, S5).

    :func:`model_matches` leaves SXM/PCIe aside so that an order's spelling matches NVML's;
    this is where they are compared, by every reader of the order (host check, checklist
    evidence). Both ``None`` when the order states no form factor or the two agree.
    ``pci_device_id``: the card's PCI device id when NVML gave it (:func:`form_factor`).

    Returns:
        ``difference``: ``"form factor seen PCIe ('NVIDIA H100 PCIe'), ordered SXM"``, a
        deviation; ``not_checked``: ``"form factor not checked: …"`` when the name seen
        states none (an SXM card NVML names ``"NVIDIA H100 80GB HBM3"``), never a match
        and never a difference.
    """
    want = form_factor(ordered)
    if want is None:
        return None, None
    seen = form_factor(observed, pci_device_id)
    if seen is None:
        return None, (f"form factor not checked: the GPU's name {shown(observed)} does not say "
                      "SXM or PCIe" + ("" if pci_device_id is None else
                                       f", nor its PCI device id {pci_device_id:#06x}"))
    if seen != want:
        by = "" if form_factor(observed) else f", PCI device id {pci_device_id:#06x}"
        return f"form factor seen {seen} ({shown(observed)}{by}), ordered {want}", None
    return None, None


# -- rates (K7) ---------------------------------------------------------------------
@dataclass(frozen=True)
class RatesSource:
    """One rates file a price can come from (K7).

    Attributes:
        kind: one of :data:`SOURCE_KINDS` (``given`` is ``--rates FILE``).
        path: the file; ``None`` for the bundled one (inside the package).
    """

    kind: str
    path: Path | None = None

    def words(self) -> str:
        """The file in words: ``"bundled rates file"``, ``"your rates file PATH"``, or the path."""
        if self.kind == "bundled":
            return "bundled rates file"
        return {"user": "your rates file ", "session": "the session's rates file "}.get(self.kind, "") + str(self.path)


BUNDLED = RatesSource("bundled")


@dataclass(frozen=True)
class GpuRate:
    """One GPU model of the rates file.

    Attributes:
        gpu_model: the model as written in the rates file.
        gpus_per_lot: GPUs in one lot (B200: 2); the lot price covers them all (K1).
        package_price_usd: days (3/7/30) → price of a full package for one lot; a price
            the file does not state is absent, never invented (K7).
        source: where the prices come from, as the file says.
        price_sources: days → the file that price was read from (:func:`merge_rates`).
        card_source: the file that gave ``gpus_per_lot`` (the highest naming the card).
    """

    gpu_model: str
    gpus_per_lot: int
    package_price_usd: Mapping[int, Decimal]
    source: str | None = None
    price_sources: Mapping[int, RatesSource] = field(default_factory=dict)
    card_source: RatesSource | None = None

    def price_usd_minor(self, days: int) -> int | None:
        """Price of one lot for a ``days`` package, in cents; ``None`` when absent."""
        price = self.package_price_usd.get(days)
        return None if price is None else usd_to_minor(price)


@dataclass(frozen=True)
class Rates:
    """The rates table (K7).

    ``origin`` says which file(s) it came from, highest first; ``sources`` the files read,
    highest first (empty for a table built by hand).
    """

    gpus: Mapping[str, GpuRate]
    origin: str
    currency: str = "USD"
    sources: tuple[RatesSource, ...] = ()

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

    def price_origin(self, gpu_model: str, days: int) -> str:
        """Which file the ``days``-day price of ``gpu_model`` comes from, in words (K7).

        The file of that price; else the file naming the card; else :attr:`origin`.
        """
        rate = self.find(gpu_model)
        src = None if rate is None else rate.price_sources.get(days) or rate.card_source
        return self.origin if src is None else src.words()


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


def _parse_rates(doc: Mapping[str, Any], text: str, path: Path | None, origin: str,
                 src: RatesSource = BUNDLED) -> Rates:
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
        gpus[model] = GpuRate(model, per_lot, prices, source, dict.fromkeys(prices, src), src)
    return Rates(gpus=gpus, origin=origin, currency="USD", sources=(src,))


def user_rates_file() -> Path:
    """The user's own rates file: ``$XDG_CONFIG_HOME/gpusession/rates.toml`` (K7).

    ``$XDG_CONFIG_HOME`` unset, empty or relative (the XDG spec says to ignore a relative
    one) → ``~/.config``. The file need not exist; ``gpusession rates set`` creates it.
    """
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "gpusession" / RATES_FILENAME


def read_rates_file(path: Path, src: RatesSource) -> Rates:
    """One rates file, parsed and checked (K7).

    Raises:
        BadInput: unreadable file, TOML syntax error, a malformed price…, with file and line.
    """
    doc = read_toml(path)
    return _parse_rates(doc, path.read_text(encoding="utf-8"), path, src.words(), src)


def bundled_rates() -> Rates:
    """The bundled ``gpusession/data/rates.toml``: only the prices the seeds state (K7)."""
    res = importlib.resources.files("gpusession") / "data" / RATES_FILENAME
    text = res.read_text(encoding="utf-8")
    return _parse_rates(tomllib.loads(text), text, None, "bundled rates file")


def merge_rates(tables: Sequence[Rates]) -> Rates:
    """Combine rates tables, highest first, price by price (K7).

    A card (compared by :func:`normalize_model`) takes its name as written,
    ``gpus_per_lot`` and ``source`` from the highest table naming it; each of its 3/7/30-day
    prices from the highest table that states it. A lower table's prices for that card are
    left out when it gives another lot size (its price buys a different lot). Nothing is
    derived: a price none of them states stays absent.

    Args:
        tables: parsed rates files, the one that wins first.

    Returns:
        One table; ``origin`` names the files read, highest first, joined by ``", then "``.
    """
    gpus: dict[str, GpuRate] = {}
    name_of: dict[str, str] = {}
    for table in tables:
        for name, rate in table.gpus.items():
            key = normalize_model(name)
            if key not in name_of:
                name_of[key] = name
                gpus[name] = rate
                continue
            kept = gpus[name_of[key]]
            if kept.gpus_per_lot != rate.gpus_per_lot:
                continue
            prices, sources = dict(kept.package_price_usd), dict(kept.price_sources)
            for days, price in rate.package_price_usd.items():
                if days not in prices:
                    prices[days] = price
                    sources[days] = rate.price_sources.get(days, BUNDLED)
            gpus[name_of[key]] = replace(kept, package_price_usd=prices, price_sources=sources,
                                         source=kept.source or rate.source)
    origin = ", then ".join(t.origin for t in tables)
    return Rates(gpus=gpus, origin=origin, currency="USD",
                 sources=tuple(src for t in tables for src in t.sources))


def rates_files(path: Path | None = None, *, session_folder: Path | None = None) -> list[RatesSource]:
    """The rates files above the bundled one, highest first, that exist (K7).

    ``path`` (``--rates FILE``) is read whether it exists or not (missing: said by the read);
    else ``<session_folder>/rates.toml`` when anything of that name exists (a FIFO or a
    folder there is refused by the read, never passed over); then :func:`user_rates_file`
    when anything of that name exists.
    """
    found: list[RatesSource] = []
    if path is not None:
        found.append(RatesSource("given", Path(path)))
    elif session_folder is not None:
        candidate = Path(session_folder) / RATES_FILENAME
        if os.path.lexists(candidate):
            found.append(RatesSource("session", candidate))
    user = user_rates_file()
    if os.path.lexists(user):
        found.append(RatesSource("user", user))
    return found


def load_rates(path: Path | None = None, *, session_folder: Path | None = None) -> Rates:
    """Load the rates in force (K7), combined price by price (:func:`merge_rates`).

    Precedence, highest first: an explicit ``path`` (``--rates FILE``), else
    ``<session_folder>/rates.toml`` when anything of that name exists (a FIFO or a folder
    there is refused in one line, so the lower prices never stand in silently for the ones
    you set); then the user's own file (:func:`user_rates_file`); then the bundled
    ``gpusession/data/rates.toml``.

    Raises:
        BadInput: unreadable file, TOML syntax error, a bare-number or malformed price,
            a package length other than 3/7/30, a missing ``gpus_per_lot``; with the file,
            line (where known) and field.
    """
    tables = [read_rates_file(src.path, src) for src in rates_files(path, session_folder=session_folder)
              if src.path is not None]
    tables.append(bundled_rates())
    return tables[0] if len(tables) == 1 else merge_rates(tables)


# -- the user's own file (K7): `gpusession rates set` ---------------------------------
#: A package price as ``rates set --price`` takes it: the file's price form, and above zero.
PRICE_WORDS = 'a positive price in USD like "1234.56" (decimal point, at most 2 decimals, at most 9 digits before it)'
#: The longest GPU model name ``rates set`` writes: a card's name, not a note.
MODEL_CHARS_MAX = 100


def parse_price(text: str) -> Decimal:
    """A package price typed by the user → exact ``Decimal`` USD (K2).

    Raises:
        ValueError: not :data:`PRICE_WORDS` (``"12,50"``, ``"1e3"``, ``"0"``, ``"1.234"``).
    """
    t = text.strip()
    if not _PRICE_RE.fullmatch(t) or Decimal(t) <= 0:
        raise ValueError(f"expected {PRICE_WORDS}, got {shown(text)}")
    return Decimal(t)


@dataclass(frozen=True)
class PriceSet:
    """What ``rates set`` changed in the user's rates file (K7).

    Attributes:
        path: the file written.
        gpu_model: the card as written in the file (an existing entry keeps its spelling).
        days: the package length, 3, 7 or 30.
        price_usd: the new price of one lot for that package.
        previous_usd: the price the file held before; ``None`` when it held none.
        gpus_per_lot: the lot size now in the file.
        per_lot_from: where ``gpus_per_lot`` came from, in words (``"--gpus-per-lot"``,
            ``"your rates file"``, ``"bundled rates file"``, ``"default: 1"``).
        per_lot_was: the lot size the file held before when it changed; else ``None``.
    """

    path: Path
    gpu_model: str
    days: int
    price_usd: Decimal
    previous_usd: Decimal | None
    gpus_per_lot: int
    per_lot_from: str
    per_lot_was: int | None = None


def set_user_price(path: Path, gpu_model: str, days: int, price_usd: Decimal,
                   gpus_per_lot: int | None = None) -> PriceSet:
    """Add or change one price in the rates file ``path`` (the user's own, K7), atomically.

    The file is read and checked whole first (a file that does not parse is named with its
    line, and nothing is written); the card is found by :func:`normalize_model`, so
    ``"h100 sxm"`` changes ``"H100 SXM"``. The lot size: ``gpus_per_lot`` when given, else
    the file's, else the bundled file's for that card, else 1 (said in
    :attr:`PriceSet.per_lot_from`). Every other key and price of the file is kept; the file
    is rewritten by ``tomli-w`` (so its comments are not kept) through
    :func:`gpusession.core.files.tomlio.write_toml` (temporary file, fsync, replace), the
    folder locked from the read to the replace so that two at once both keep their price.

    Args:
        path: the rates file (created with its folder, mode 0700, when missing).
        gpu_model: the card as the provider names it (one printable line).
        days: 3, 7 or 30.
        price_usd: USD for one lot for ``days`` (from :func:`parse_price`).
        gpus_per_lot: GPUs in one lot, ≥ 1.

    Raises:
        BadInput: the file does not parse (file, line, field); a model name that is empty,
            not one printable line or longer than :data:`MODEL_CHARS_MAX`; days not 3/7/30;
            a price or lot size out of range. Nothing is written then.
        OSError: the disk refused; the previous file is intact.
    """
    path = Path(path)
    name = gpu_model.strip()
    if not name or not name.isprintable() or len(name) > MODEL_CHARS_MAX:
        raise BadInput(f"expected a GPU model name of 1 to {MODEL_CHARS_MAX} printable characters on one "
                       f"line, got {shown(gpu_model)}", field="gpu_model")
    if days not in PACKAGE_DAYS:
        raise BadInput(f"expected a package of 3, 7 or 30 days, got {shown(days)}", field="days")
    if not isinstance(price_usd, Decimal) or price_usd <= 0 or not _PRICE_RE.fullmatch(format(price_usd, "f")):
        raise BadInput(f"expected {PRICE_WORDS}, got {shown(str(price_usd))}", field="price")
    if gpus_per_lot is not None and gpus_per_lot < 1:
        raise BadInput(f"expected gpus_per_lot = a whole number ≥ 1, got {shown(gpus_per_lot)}",
                       field="gpus_per_lot")
    make_private_dir(path.parent, parents=True)
    with _folder_lock(path.parent):  # two `rates set` at once: each keeps the other's price
        return _set_price(path, name, days, price_usd, gpus_per_lot)


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """``flock`` the folder itself while its rates file is read, changed and replaced.

    The file is replaced by a rename, so a lock on it would not hold; the folder's does,
    and leaves no lock file behind. Where ``fcntl`` is missing (Windows) nothing is locked.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _set_price(path: Path, name: str, days: int, price_usd: Decimal, gpus_per_lot: int | None) -> PriceSet:
    """The read, change and atomic write of :func:`set_user_price`, under its lock."""
    doc: dict[str, Any] = {"currency": "USD"}
    if os.path.lexists(path):
        doc = read_toml(path)
        _parse_rates(doc, path.read_text(encoding="utf-8"), path, str(path))  # whole file checked first
    table = doc.setdefault("gpu", {})
    key = next((m for m in table if normalize_model(m) == normalize_model(name)), name)
    entry = dict(table.get(key, {}))
    was = entry.get("gpus_per_lot")
    bundled = bundled_rates().find(name)
    if gpus_per_lot is not None:
        per_lot, per_lot_from = gpus_per_lot, "--gpus-per-lot"
    elif was is not None:
        per_lot, per_lot_from = int(was), "your rates file"
    elif bundled is not None:
        per_lot, per_lot_from = bundled.gpus_per_lot, "bundled rates file"
    else:
        per_lot, per_lot_from = 1, "default: 1 (--gpus-per-lot N to change)"
    prices = dict(entry.get("package_price_usd", {}))
    previous = prices.get(str(days))
    prices[str(days)] = format(price_usd.quantize(CENT), "f")
    entry["gpus_per_lot"] = per_lot
    entry["package_price_usd"] = dict(sorted(prices.items(), key=lambda kv: int(kv[0])))
    table[key] = entry
    _parse_rates(doc, "", path, str(path))  # A4: never a file its own reader refuses
    write_toml(path, doc)
    return PriceSet(path, key, days, price_usd.quantize(CENT),
                    None if previous is None else Decimal(str(previous)), per_lot, per_lot_from,
                    int(was) if was is not None and int(was) != per_lot else None)


def set_price_hint(gpu: str, days: int, *, with_file: bool = True) -> str:
    """How to add a missing price (K7): the ``rates set`` command and the file it edits.

    A name ``rates set`` would refuse (too long, not one printable line) reads ``MODEL``.
    Why: a price is never guessed, so every "not in the rates file" names the way to add it.
    """
    name = printable(gpu, keep="") if gpu.isprintable() and len(gpu) <= MODEL_CHARS_MAX else "MODEL"
    command = f"gpusession rates set \"{name}\" --days {days} --price USD"
    return f"{command} (writes your rates file {user_rates_file()})" if with_file else command
