"""Event name → type, per channel: the one list of typed events, read off their modules.

Why it exists: each event type is named once, where its class is defined; this module
reads the classes off :data:`EVENT_MODULES` (every public subclass of
:class:`~gpusession.core.events.base.Event` defined there) instead of listing them, so
a new record cannot slip out of one list and stay in another. Three channels share event
names (``run_finished`` is a worker event and a journal record with other fields), so the
lookup takes the channel.

Who calls it: the package face :mod:`gpusession.core.events` (its public names),
the reader :mod:`gpusession.core.events.reading` (journal lines),
:mod:`gpusession.bench.process` (worker lines, through the face) and the writer
:func:`gpusession.core.folder.journal.append` (:func:`check_writable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from gpusession.core.events import actions, deliverable_records, records, runner, worker
from gpusession.core.events.base import Channel, Event, GenericRecord

#: The modules that define the typed events (journal records, runner and worker events).
EVENT_MODULES: tuple[ModuleType, ...] = (records, actions, deliverable_records, runner, worker)


def _defined_types(modules: tuple[ModuleType, ...]) -> dict[str, type[Event]]:
    """Each public :class:`Event` subclass defined in ``modules``, by class name."""
    out: dict[str, type[Event]] = {}
    for module in modules:
        for name, value in vars(module).items():
            if (not name.startswith("_") and isinstance(value, type) and issubclass(value, Event)
                    and value.__module__ == module.__name__):
                out[name] = value
    return out


def _by_channel(types: Mapping[str, type[Event]]) -> dict[Channel, dict[str, type[Event]]]:
    """Channel → event name → type, for each type with its own ``EVENT``.

    Raises:
        TypeError: two types of one channel share an event name (a programming error).
    """
    out: dict[Channel, dict[str, type[Event]]] = {"worker": {}, "runner": {}, "journal": {}}
    for cls in types.values():
        name = cls.__dict__.get("EVENT", "")  # a base (Record, ExperimentEndedRecord) names none
        if not name:
            continue
        seen = out[cls.CHANNEL].setdefault(name, cls)
        if seen is not cls:
            raise TypeError(f"{cls.CHANNEL} event {name!r} named by {seen.__name__} and {cls.__name__}")
    return out


#: Every public event type (bases included) by class name: the face's event names.
PUBLIC_TYPES: dict[str, type[Event]] = _defined_types(EVENT_MODULES)

_TYPES = _by_channel(PUBLIC_TYPES)


def event_types(channel: Channel) -> dict[str, type[Event]]:
    """The typed events of ``channel`` by name (a copy)."""
    return dict(_TYPES[channel])


def event_from_json(data: Mapping[str, Any], channel: Channel = "journal") -> Event:
    """The typed event for one JSON object of ``channel``.

    An unknown name, or a known one whose fields do not fit (a record of another
    release), gives a :class:`GenericRecord` with every field: never an exception.
    """
    cls = _TYPES[channel].get(str(data.get("event", "")))
    if cls is None:
        return GenericRecord.from_json(data)
    try:
        return cls.from_json(data)
    except (TypeError, ValueError):
        return GenericRecord.from_json(data)


def check_writable(record: Event) -> None:
    """Refuse a typed record the reader would not type back (S7: the journal reads as written).

    A :class:`GenericRecord` (a free-form record) is always writable.

    Raises:
        TypeError: ``record`` is not the journal channel's registered type for its
            event name (a record class defined outside :data:`EVENT_MODULES`, or a
            worker or runner event).
    """
    if isinstance(record, GenericRecord):
        return
    registered = _TYPES["journal"].get(record.name)
    if registered is not type(record):
        raise TypeError(f"{type(record).__name__} ({record.name!r}) is not a journal record type "
                        f"of gpusession.core.events.registry")
