"""The argument parsers of the commands, one module per handler module of :mod:`gpusession.commands`.

Why apart from the handlers: ``gpusession --help``, ``--version`` and ``COMMAND --help``
build these parsers only, so they import neither polars nor the core's readers (the
handlers' modules import those at their top). Each module's ``register(sub)`` adds its
subcommands with ``func`` a :class:`gpusession.commands.dispatch.Handler` (imported on
dispatch). A typed value is checked by the option's ``type`` function, which loads the
core's bound or secret mask only when it runs (a value was given, never for ``--help``).

The names below are core's tables as the parser offers them (choices and help words):
the modules that hold the tables import polars at their top (``core.validation``), the
order's record classes (``core.money.order``) or typing (``core.folder.package``,
``core.files.textio``). ``tests/cli/test_fast_help.py`` keeps each
equal to its table.
"""

from __future__ import annotations

#: ``core.folder.package.PACKAGE_DAYS``: a package's lengths in days (packages are whole, K1).
PACKAGE_DAYS = (3, 7, 30)
#: ``core.folder.package.LOTS_MAX``: the most lots a package holds.
LOTS_MAX = 10_000
#: ``core.files.textio.MAX_LINE_BYTES``: the longest line a strict reader takes.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The quality metrics' names, in the order of ``core.validation.metrics.METRICS`` (V6).
METRIC_NAMES = ("macro_f1", "accuracy")
#: ``core.validation.metrics.DEFAULT_METRIC``: the metric of a protocol that names none.
DEFAULT_METRIC = "macro_f1"
#: ``core.validation.model.OUTPUT_FORMATS``: the formats ``validate`` reads.
OUTPUT_FORMATS = ("jsonl", "csv")
#: ``core.validation.accept_rule.FORMATS``: a deliverable's formats, checked by its bytes (S9).
DELIVERABLE_FORMATS = ("png", "jpeg", "pdf", "svg", "json", "text")
#: ``core.money.rates.PRICE_WORDS``: what ``rates set --price`` takes, in words (K2).
PRICE_WORDS = ('a positive price in USD like "1234.56" (decimal point, at most 2 decimals, at most 9 digits '
               'before it)')
#: ``core.money.order.STATES``: the order's timeline states (S2).
ORDER_STATES = ("ordered", "payment-order-issued", "payment-sent", "payment-confirmed", "gpu-provisioned",
                "access-received", "deviation-noted", "closed")

#: The threshold of a one-off ``validate`` without ``--threshold`` (said in its help and
#: its verdict line); here, beside the names, so that its handler imports no parser module.
DEFAULT_THRESHOLD = 0.9


def shown(text: str) -> str:
    """``text`` as a refusal quotes it: :func:`gpusession.core.files.secrets.shown` (a secret masked).

    Why here: the detectors load only on a bad value's path, never for ``--help``.
    """
    from gpusession.core.files.secrets import shown as masked

    return masked(text)
