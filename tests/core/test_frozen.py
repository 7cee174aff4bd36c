"""``@frozen`` behaves as ``@dataclass(frozen=True, slots=True)`` does for what we use."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import ClassVar

import pytest

from gpusession.core.files.frozen import FrozenInstanceError, field, field_names, frozen, replace


@frozen
class Point:
    """A value with a default, a factory and a class variable."""

    KIND: ClassVar[str] = "point"
    x: int
    y: int = 2
    tags: dict[str, int] = field(default_factory=dict)

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


@dataclass(frozen=True, slots=True)
class DcPoint:
    KIND: ClassVar[str] = "point"
    x: int
    y: int = 2
    tags: dict[str, int] = dc_field(default_factory=dict)


def test_init_defaults_factory_and_methods_as_a_dataclass() -> None:
    p = Point(1)
    assert (p.x, p.y, p.tags, p.norm1(), p.KIND) == (1, 2, {}, 3, "point")
    assert Point(1).tags is not Point(1).tags  # a fresh dict each time
    assert Point(x=3, y=4, tags={"a": 1}) == Point(3, 4, {"a": 1})
    assert field_names(Point) == ("x", "y", "tags") == Point.__match_args__
    for bad in ((), (1, 2, {}, 4)):
        with pytest.raises(TypeError):
            Point(*bad)
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]


def test_eq_hash_repr_as_a_dataclass() -> None:
    p, d = Point(1, 5), DcPoint(1, 5)
    assert repr(p).replace("Point", "DcPoint") == repr(d)
    assert p == Point(1, 5) and p != Point(1, 6) and p != d
    assert hash(Point(1, 5, ())) == hash(Point(1, 5, ()))  # type: ignore[arg-type]
    assert len({Point(1, 5, ()), Point(1, 5, ())}) == 1  # type: ignore[arg-type]


def test_frozen_slots_pickle_copy_replace() -> None:
    p = Point(1)
    with pytest.raises(FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y  # type: ignore[misc]
    assert not hasattr(p, "__dict__")
    assert pickle.loads(pickle.dumps(p)) == p and copy.deepcopy(p) == p and copy.copy(p) == p
    assert replace(p, y=7) == Point(1, 7) and p.y == 2
    with pytest.raises(TypeError):
        replace(p, z=1)
    with pytest.raises(TypeError):
        field_names(DcPoint(1))


def test_a_field_without_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError):
        @frozen
        class Bad:
            a: int = 1
            b: int
