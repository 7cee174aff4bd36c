"""Typed run events: worker → runner, runner → CLI/TUI, and the journal's records.

Why it exists: the three protocols of a run were ``dict[str, Any]`` built and read by
hand in four places; here each event kind is one frozen dataclass with ``to_json()`` /
``from_json()`` and a protocol version ``v``, and :func:`describe` is the one place where
a runner event becomes words (used by ``gpusession run --headless`` and the Run pane).

Who calls it: the worker (:mod:`gpusession.bench.worker`, sends ``Worker*`` events as
JSON lines), :mod:`gpusession.bench.process` (reads them back), the runner
(:mod:`gpusession.bench.runner`, emits runner events and writes ``*Record`` journal
records), :mod:`gpusession.core.folder.journal` and :mod:`gpusession.core.folder.recovery` (read the
records back). No textual, no torch.

Three channels share event names (``run_finished`` is a worker event and a journal
record with other fields), so :func:`event_from_json` takes the channel. An event name a
channel does not know — a record of the first release, or of a newer one — becomes a
:class:`GenericRecord` holding every field: reading never fails on content.

Units are in field names (``elapsed_s``, ``peak_reserved_bytes``); ``None`` means not
measured (C3, M4), never 0.

The package, by job: :mod:`~gpusession.core.events.base` (``Event``, JSON round trip),
:mod:`~gpusession.core.events.worker`, :mod:`~gpusession.core.events.runner` and
:mod:`~gpusession.core.events.records` (the three channels),
:mod:`~gpusession.core.events.registry` (JSON → type),
:mod:`~gpusession.core.events.reading` (the one reader of ``journal.jsonl``: typed records,
unreadable lines as notes) and :mod:`~gpusession.core.events.words` (:func:`describe`).
Import from ``gpusession.core.events``: the submodules are its layout, not its interface.

Each event type is named once, where its class is defined: the face serves every public
event class of :data:`~gpusession.core.events.registry.EVENT_MODULES` through the registry
(no list of them here), and the few helpers below by name. The names load on first use
(:func:`__getattr__`): ``gpusession status`` reads the journal through
:mod:`~gpusession.core.events.reading` without paying for the record classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the checker's view; at run time the names come from __getattr__
    from gpusession.core.events.actions import *  # noqa: F403 - every record class, named at its class
    from gpusession.core.events.base import PROTOCOL_VERSION as PROTOCOL_VERSION
    from gpusession.core.events.base import Channel as Channel
    from gpusession.core.events.base import Event as Event
    from gpusession.core.events.base import GenericRecord as GenericRecord
    from gpusession.core.events.deliverable_records import *  # noqa: F403
    from gpusession.core.events.reading import JournalRead as JournalRead
    from gpusession.core.events.reading import Unreadable as Unreadable
    from gpusession.core.events.reading import read_journal as read_journal
    from gpusession.core.events.reading import read_records as read_records
    from gpusession.core.events.records import *  # noqa: F403
    from gpusession.core.events.registry import event_from_json as event_from_json
    from gpusession.core.events.registry import event_types as event_types
    from gpusession.core.events.runner import *  # noqa: F403
    from gpusession.core.events.words import corpus_verdict as corpus_verdict
    from gpusession.core.events.words import describe as describe
    from gpusession.core.events.worker import *  # noqa: F403

#: The public names that are not event classes, and the submodule each lives in.
_HELPERS = {
    "PROTOCOL_VERSION": "base", "Channel": "base", "Event": "base", "GenericRecord": "base",
    "JournalRead": "reading", "Unreadable": "reading", "read_journal": "reading",
    "read_records": "reading", "event_from_json": "registry", "event_types": "registry",
    "corpus_verdict": "words", "describe": "words",
}


def _public() -> dict[str, Any]:
    """Every public name of the package and its value (imports the event modules)."""
    from gpusession.core.events import base, reading, registry, words

    modules = {"base": base, "reading": reading, "registry": registry, "words": words}
    out: dict[str, Any] = {name: getattr(modules[where], name) for name, where in _HELPERS.items()}
    out.update(registry.PUBLIC_TYPES)
    return out


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its submodule on first use (PEP 562).

    ``__all__`` is read here too: the event classes are known once their modules load.
    """
    if name == "__all__":
        return sorted(_public())
    if name not in _HELPERS and not name[:1].isupper():  # a submodule being imported, a dunder
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    public = _public()
    if name not in public:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals().update(public)
    return public[name]


def __dir__() -> list[str]:
    """The public names (PEP 562), event classes included."""
    return sorted(_public())
