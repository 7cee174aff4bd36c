"""The base of every run event: name, channel, protocol version, JSON round trip.

Why it exists: the worker, runner and journal events of :mod:`gpusession.core.events`
share one way to become JSON and to come back; :class:`GenericRecord` holds an event
no typed class knows, so reading never fails on content. Who calls it: the sibling
modules of :mod:`gpusession.core.events` (import from that package, not from here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

#: Version of the event protocol written as ``v`` (records of the first release have none
#: and read back with ``v = 0``).
PROTOCOL_VERSION = 1

Channel = Literal["worker", "runner", "journal"]


def _opt() -> Any:
    """A field left out of the JSON when it is ``None`` (it was written only when set)."""
    return field(default=None, metadata={"omit_none": True})


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        as_dict = getattr(value, "as_dict", None)
        return as_dict() if callable(as_dict) else dataclasses.asdict(value)
    return value


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event: its name (``EVENT``) and the protocol version ``v``."""

    EVENT: ClassVar[str] = ""
    CHANNEL: ClassVar[Channel] = "journal"
    v: int = PROTOCOL_VERSION

    @property
    def name(self) -> str:
        """The event's name as written in JSON (``"run_finished"``)."""
        return self.EVENT

    def to_json(self) -> dict[str, Any]:
        """``{"event": name, "v": version, ...fields}``; JSON-ready for plain fields."""
        out: dict[str, Any] = {"event": self.EVENT, "v": self.v}
        for f in dataclasses.fields(self):
            if f.name == "v":
                continue
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.name] = _plain(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Event:
        """Build the event from its JSON object (the inverse of :meth:`to_json`).

        Unknown keys are ignored; missing fields take their defaults (``None``: not
        recorded, C3); a missing or non-integer ``v`` reads as 0 (first release).

        Raises:
            TypeError: a field's value does not fit the event (a record of another
                release; :func:`gpusession.core.events.event_from_json` turns it into a
                :class:`GenericRecord`).
        """
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names and k != "v"}
        version = data.get("v", 0)
        return cls(v=version if isinstance(version, int) else 0, **kw)


@dataclass(frozen=True, kw_only=True)
class GenericRecord(Event):
    """Any event without its own type (other journal records, old or unknown ones).

    Attributes:
        event: the event's name as written.
        fields: every other key of the record (``at`` included).
    """

    event: str = ""
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The record's name as written (``event``)."""
        return self.event

    def to_json(self) -> dict[str, Any]:
        """The record as read: ``{"event", "v", ...fields}``."""
        out: dict[str, Any] = {"event": self.event, "v": self.v}
        out.update({k: v for k, v in self.fields.items() if k not in ("event", "v")})
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GenericRecord:
        """Keep every key of ``data``; never raises."""
        version = data.get("v", 0)
        return cls(
            v=version if isinstance(version, int) else 0,
            event=str(data.get("event", "")),
            fields={k: v for k, v in data.items() if k not in ("event", "v")},
        )

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the record, ``default`` when absent."""
        return self.fields.get(key, default)

