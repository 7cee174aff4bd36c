"""One list of events: each typed event named once, at its class, and reachable everywhere.

The package face (:mod:`gpusession.core.events`), the reader and the writer all go through
:mod:`gpusession.core.events.registry`, which reads the classes off their modules: a new
record class cannot be left out of a list, because there is none to forget.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

import gpusession.core.events as events
from gpusession.core.events import registry
from gpusession.core.events.base import Event
from gpusession.core.events.records import Record
from gpusession.core.folder import journal

PACKAGE = Path(events.__file__).parent


def _subclasses(base: type) -> set[type]:
    """Every subclass of ``base`` defined in a module of ``gpusession.core.events``."""
    for info in pkgutil.iter_modules([str(PACKAGE)]):  # load every module: all classes exist
        importlib.import_module(f"gpusession.core.events.{info.name}")
    out: set[type] = set()
    stack = list(base.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("gpusession.core.events.") and not cls.__name__.startswith("_"):
            out.add(cls)
    return out


RECORDS = sorted(_subclasses(Record), key=lambda c: c.__name__)
EVENTS = sorted(_subclasses(Event), key=lambda c: c.__name__)


def test_every_record_class_is_a_public_name_and_in_the_journal_registry() -> None:
    assert len(RECORDS) >= 37  # the journal's typed records, bases included
    names = set(events.__all__)
    journal_types = events.event_types("journal")
    for cls in RECORDS:
        assert cls.__name__ in names, cls
        assert getattr(events, cls.__name__) is cls
        own = cls.__dict__.get("EVENT", "")
        if own:
            assert journal_types[own] is cls, cls
    assert "HostCheckedRecord" in names and journal_types["host_checked"].__name__ == "HostCheckedRecord"


def test_every_worker_and_runner_event_is_a_public_name_and_in_its_channel() -> None:
    for cls in EVENTS:
        assert getattr(events, cls.__name__) is cls, cls
        own = cls.__dict__.get("EVENT", "")
        if own:
            assert events.event_types(cls.CHANNEL)[own] is cls, cls


def test_the_face_and_the_registry_name_no_event_class() -> None:
    # the one list is the classes themselves: a name written here would be a second list
    classes = {cls.__name__ for cls in EVENTS} - {"Event", "GenericRecord"}
    for module in ("__init__.py", "registry.py"):
        tree = ast.parse((PACKAGE / module).read_text())
        written = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        written |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        written |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not written & classes, (module, sorted(written & classes))


def test_two_types_of_one_channel_with_one_event_name_are_refused() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Twin(Record):
        EVENT: ClassVar[str] = "run_started"

    with pytest.raises(TypeError, match="'run_started' named by RunStartedRecord and Twin"):
        registry._by_channel({**registry.PUBLIC_TYPES, "Twin": Twin})


def test_the_writer_refuses_a_record_type_the_reader_would_not_type(tmp_path: Path) -> None:
    @dataclass(frozen=True, kw_only=True)
    class Stray(Record):
        EVENT: ClassVar[str] = "stray_written"

    path = tmp_path / "journal.jsonl"
    with pytest.raises(TypeError, match="Stray .'stray_written'. is not a journal record type"):
        journal.append(path, Stray())
    with pytest.raises(TypeError, match="is not a journal record type"):
        journal.append(path, events.WorkerHello(pid=1))  # a worker event, not a record
    assert not path.exists()
    journal.append(path, events.RunStartedRecord(run_key="e/v/warm/0"))
    journal.append(path, journal.record("free_form", {"x": 1}))
    assert [type(r).__name__ for r in journal.read_records(path)] == ["RunStartedRecord", "GenericRecord"]


def test_an_unknown_name_is_no_attribute_and_submodules_still_import() -> None:
    with pytest.raises(AttributeError):
        events.NoSuchRecord  # noqa: B018
    assert events.registry is registry
    assert "describe" in dir(events) and "RunFinishedRecord" in dir(events)
