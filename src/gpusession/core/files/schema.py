"""The types of the hand-editable session files, checked before any value is used.

A person may open ``session.toml``, ``order.toml`` or ``checklist.toml`` in an editor and
write ``events = 5`` or ``lots = "one"``. Every reader used to trust the shapes it had
written itself, so such an edit ended in a traceback. Here each file's shape is written
down once (:data:`SESSION`, :data:`ORDER`, :data:`CHECKLIST`) and :func:`check_types`
walks a parsed document against it: a value of the wrong kind is a one-line
``file: key: expected …, got …`` :class:`~gpusession.core.files.errors.BadInput` (exit 2 on the
CLI; said in the pane in the TUI). Ranges and meanings (a state name, days 3/7/30) stay
with each reader; this module checks kinds only.

Who calls it: :class:`gpusession.core.folder.session.Session` when it opens or reads a file of
its folder, so every command and every pane sees the same error. Keys the schema does not
list are left alone (forward compatible); a table of named entries (checklist items,
experiments) gives the shape of every entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime, time
from pathlib import Path
from typing import Any, Union

from gpusession.core.files.bounds import number_past_bound
from gpusession.core.files.errors import BadInput
from gpusession.core.files.frozen import field, frozen


@frozen
class Kind:
    """A scalar kind: its words in an error and the test of a value."""

    words: str
    accepts: Callable[[Any], bool]
    #: The bound of a number of this kind (:data:`gpusession.core.files.bounds.BOUNDS`,
    #: H-41): a number of the right type past it is refused in the bound's words.
    bound: str | None = None


@frozen
class Table:
    """A TOML table: the spec of each known key; ``entries`` is the spec of every other key.

    ``entries=None`` leaves unknown keys alone (any type: forward compatible).
    """

    keys: Mapping[str, Spec] = field(default_factory=dict)
    entries: Spec | None = None
    words: str = "a table"
    #: The specs of some keys as the table's other values decide them (an experiment's
    #: ``values`` by its ``varied``); ``None``: ``keys`` alone.
    keys_by: Callable[[Mapping[str, Any]], Mapping[str, Spec]] | None = None


@frozen
class ListOf:
    """A TOML array whose every item has the spec ``item``."""

    item: Spec
    words: str = "a list"


Spec = Union[Kind, Table, ListOf]


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


TEXT = Kind("text (in quotes)", lambda v: isinstance(v, str))
#: Numbers are bounded by what they can mean (H-41): a whole number within 64 bits, a
#: number finite and under 10^15, seconds under a year.
WHOLE = Kind("a whole number", _whole, bound="whole")
NUMBER = Kind("a number", _number, bound="count")
COUNT = Kind("a whole number", _whole, bound="count")
#: How many of something a run does (runs, warm-up iterations, GPUs, nodes): never below 0.
HOW_MANY = Kind("a whole number ≥ 0", lambda v: _whole(v) and v >= 0, bound="count")
SECONDS = Kind("a number of seconds", _number, bound="duration")
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
#: A varied value (A3): a whole number (batch, context), a precision word, or a
#: parameter's plain value (a number, true/false, text); the experiment's check says more.
VARIED_VALUE = Kind("a whole number, a number, true/false or text",
                    lambda v: isinstance(v, (int, float, bool, str)), bound="count")


def _values_by_varied(table: Mapping[str, Any]) -> Mapping[str, Spec]:
    """An experiment's ``values`` as its ``varied`` says (A3).

    Whole numbers for batch and context (the default), text for precision, a
    parameter's plain values otherwise.
    """
    varied = table.get("varied", "batch")
    if varied in ("batch", "context"):
        return {"values": ListOf(WHOLE, "a list of whole numbers")}
    if varied == "precision":
        return {"values": ListOf(TEXT, "a list of precisions (text)")}
    return {}
#: A TOML date-time, or text the reader parses as ISO 8601.
DATETIME = Kind("a date-time such as 2026-11-29T14:00:00Z",
                lambda v: isinstance(v, (datetime, str)))
#: A TOML date-time only (the reader does not parse text).
DATETIME_VALUE = Kind("a date-time such as 2026-11-29T14:00:00Z (without quotes)",
                      lambda v: isinstance(v, datetime))
AMOUNT = Kind('the exact amount as text like "12.50" (a TOML number loses digits)',
              lambda v: isinstance(v, str))
ANY_TABLE = Table()

# -- the session files -------------------------------------------------------------------
PACKAGE = Table({"gpu_model": TEXT, "lots": WHOLE, "days": WHOLE, "start": DATETIME})
PROTOCOL = Table({
    "classes": ListOf(TEXT, "a list of class names"), "metric": TEXT, "threshold": NUMBER,
    "tolerance": NUMBER, "reference_value": NUMBER, "max_degradation": NUMBER,
    "output_format": TEXT,
})
EXPERIMENT = Table({
    "workload": TEXT, "corpus": TEXT, "varied": TEXT,
    "values": ListOf(VARIED_VALUE, "a list of values"), "precision": TEXT, "params_via_env": BOOL,
    "context_limit": WHOLE, "batch": WHOLE, "device": TEXT, "input_order": TEXT, "seed": WHOLE,
    "scope": TEXT, "warmup_iterations": HOW_MANY, "runs_per_variant": HOW_MANY, "order": TEXT,
    "order_seed": WHOLE, "cold_runs_per_variant": HOW_MANY, "protocol": PROTOCOL,
    "params": Table({"command": ListOf(TEXT, "a list of arguments (text)")}),
    "run_timeout_s": SECONDS, "environment": ANY_TABLE,
    "gpus": HOW_MANY, "nodes": HOW_MANY, "rendezvous": TEXT,
}, keys_by=_values_by_varied)
#: ``session.toml``: identity, package, experiments, the environment seen.
SESSION = Table({
    "schema": WHOLE, "name": TEXT, "created_at": DATETIME_VALUE, "package": PACKAGE,
    "experiments": Table(entries=EXPERIMENT, words="[experiments.<id>] tables"),
    "environment": ANY_TABLE, "demo": ANY_TABLE,
    "limit": Table({"at": DATETIME, "reserve_s": SECONDS}),  # the session limit (D1)
    # the plan kept with the package (K6): days per task as decimal strings, names per task
    "plan": Table({"durations_days": ListOf(TEXT, "a list of durations as decimal strings"),
                   "names": ListOf(TEXT, "a list of task names (text)")}),
    "started_from": Table({"session": TEXT, "carried": ListOf(TEXT), "note": TEXT}),  # new --from (S11)
    # the unit of the deliverables (S8): a count is under 10^15 (H-41)
    "deliverable": Table({"unit": TEXT, "unit_plural": TEXT, "expected_count": COUNT}),
})
PAYMENT = Table({
    "asset": TEXT, "network": TEXT, "amount": AMOUNT, "destination": TEXT,
    "expires_at": DATETIME, "issued_at": DATETIME, "replaced_at": DATETIME,
})
#: ``order.toml``: the order, the active payment order, its history, the timeline (S2, S3).
ORDER = Table({
    "schema": WHOLE,
    "order": Table({
        "number": TEXT, "gpu_model": TEXT, "lots": WHOLE, "days": WHOLE, "preparation": TEXT,
        "gpus_per_lot": WHOLE, "total_usd_minor": WHOLE,
    }),
    "payment": PAYMENT,
    "payment_history": ListOf(PAYMENT, "a list of tables ([[payment_history]])"),
    "events": ListOf(Table({
        "at": DATETIME, "state": TEXT, "source": TEXT, "note": TEXT, "order_number": TEXT,
    }), "a list of tables ([[events]])"),
})
#: ``checklist.toml``: per item done/at/note/evidence, own items, settings (S1).
CHECKLIST = Table({
    "schema": WHOLE,
    "items": Table(entries=Table({
        "done": BOOL, "at": DATETIME_VALUE, "note": TEXT, "evidence": TEXT, "custom": BOOL,
        "stage": WHOLE, "text": TEXT, "not_done_although_recorded": BOOL,  # the person over a fact (S11)
    }), words='[items."<id>"] tables'),
    "settings": Table({"retrieval_reserve_hours": NUMBER, "destination": TEXT}),
    "retrieval": Table({  # written by `gpusession pull`
        "verified": BOOL, "at": DATETIME_VALUE, "source": TEXT, "note": TEXT, "manifest": TEXT,
        "reason": TEXT, "session_files": WHOLE, "session_bytes": WHOLE,
        "deliverables_files": WHOLE, "deliverables_bytes": WHOLE, "left_on_server": WHOLE, "seal": TEXT,
        "manifest_file": TEXT, "manifest_sha256": TEXT,  # the manifest checked, re-derived when read (H-78)
    }),
    "verify_copy": Table({  # written by `gpusession verify-copy` of the session's manifest (S11)
        "verified": BOOL, "at": DATETIME_VALUE, "manifest": TEXT, "copy": TEXT, "files": WHOLE, "seal": TEXT,
        "manifest_sha256": TEXT,  # the manifest's SHA-256 at the check, re-derived when read (H-78)
    }),
    "manifest": Table({  # written by `gpusession manifest`: the newest manifest of the session (S11)
        "path": TEXT, "at": DATETIME_VALUE, "deliverables": TEXT, "files": WHOLE, "total_bytes": WHOLE,
        "seal": TEXT,
    }),
})


#: Each hand-editable file's shape by its name: the reader checks it when it opens the
#: file, and the writer (:func:`gpusession.core.files.tomlio.write_toml`) before it writes
#: one, so nothing gpusession stores is refused by its own reader (H-41).
SCHEMAS: dict[str, Spec] = {"session.toml": SESSION, "checklist.toml": CHECKLIST, "order.toml": ORDER}


def kind_of(value: Any) -> str:
    """What ``value`` is, in words (``"a list"``, ``"text"``); never the value itself."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):  # a 400-digit number is said by its size, never printed
        return f"the number {value}" if abs(value) < 10**15 else (
            f"a number of about {int(value.bit_length() * 0.30103) + 1:,} digits")
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return "text"
    if isinstance(value, datetime):
        return "a date-time"
    if isinstance(value, date):
        return "a date without a time"
    if isinstance(value, time):
        return "a time without a date"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__  # pragma: no cover - TOML has no other kind


def _words(spec: Spec) -> str:
    return spec.words


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def check_types(doc: Any, spec: Spec, *, path: Path | str | None, where: str = "") -> None:
    """Check that ``doc`` has the kinds ``spec`` says, at every depth.

    Args:
        doc: a parsed TOML value (the whole document, or a part at ``where``).
        spec: its :class:`Kind`, :class:`Table` or :class:`ListOf`.
        path: the file, named in the error.
        where: the field path of ``doc`` (``"events[2]"``); ``""`` for a whole document.

    Raises:
        BadInput: ``file: key: expected <kind>, got <kind>`` for the first value of the
            wrong kind (``events: expected a list of tables ([[events]]), got the number
            5``); the value itself is never shown, only its kind.
    """
    def bad(at: str) -> BadInput:
        return BadInput(f"expected {_words(spec)}, got {kind_of(doc)}", path=path,
                        field=at or None)

    if isinstance(spec, Kind):
        if not spec.accepts(doc):
            raise bad(where)
        if spec.bound is not None and (past := number_past_bound(doc, spec.bound)):
            raise BadInput(past, path=path, field=where or None)
        return
    if isinstance(spec, ListOf):
        if not isinstance(doc, list):
            raise bad(where)
        for i, item in enumerate(doc):
            check_types(item, spec.item, path=path, where=f"{where}[{i}]")
        return
    if not isinstance(doc, Mapping):
        raise bad(where)
    keys = {**spec.keys, **(spec.keys_by(doc) if spec.keys_by is not None else {})}
    for key, value in doc.items():
        sub = keys.get(str(key), spec.entries)
        if sub is not None:
            check_types(value, sub, path=path, where=_join(where, str(key)))


__all__ = [
    "AMOUNT", "ANY_TABLE", "BOOL", "CHECKLIST", "COUNT", "HOW_MANY", "DATETIME", "DATETIME_VALUE", "EXPERIMENT",
    "Kind", "ListOf", "NUMBER", "ORDER", "PACKAGE", "SCHEMAS", "SECONDS", "SESSION", "Spec", "TEXT", "Table", "WHOLE",
    "check_types", "kind_of",
]
