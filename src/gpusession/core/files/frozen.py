"""``@frozen``: a frozen value class with slots, for the few classes ``status --format tmux`` loads.

Our own code where start-up time is the point: :mod:`dataclasses` imports :mod:`inspect`
(with ``ast``, ``dis``, ``tokenize``), about 10 ms of the tmux line's 5× budget.

A class decorated with :func:`frozen` behaves as ``@dataclass(frozen=True, slots=True)``
does for what this project uses: ``__init__`` from the annotations in order (a class
attribute is the default, :func:`field` gives a default factory), ``__eq__`` and
``__hash__`` on the fields, ``__repr__`` ``Name(a=1, b='x')``, ``__match_args__``, and an
instance refuses ``setattr``/``delattr`` with :class:`FrozenInstanceError`. It is not a
dataclass: :func:`dataclasses.replace`, ``asdict`` and ``fields`` do not take it; use
:func:`replace` and :func:`field_names` here. Other code keeps :mod:`dataclasses`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # typing_extensions for the type checker only (textual depends on it)
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kw: object) -> Callable[[Any], Any]:
        """The decorator as seen at run time (a no-op; ``typing`` has it from 3.11 only)."""
        return lambda f: f

T = TypeVar("T")
C = TypeVar("C", bound=type)


#: A field without a default; a factory's argument not given (never a value of a field).
_NO_DEFAULT: Any = object()
_UNSET: Any = object()


class FrozenInstanceError(AttributeError):
    """A field of a :func:`frozen` instance was set or deleted."""


class _Factory:
    """A default made afresh for each instance (``field(default_factory=dict)``)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A field's default made by calling ``default_factory()`` for each instance.

    Args:
        default_factory: a callable of no argument (``dict``, ``list``).

    Returns:
        A marker to assign as the field's default in the class body (typed as the value,
        as :func:`dataclasses.field` is, so the annotation checks).
    """
    return _Factory(default_factory)  # type: ignore[return-value]


def field_names(cls_or_instance: object) -> tuple[str, ...]:
    """The field names of a :func:`frozen` class or instance, in ``__init__`` order.

    Raises:
        TypeError: not a :func:`frozen` class or instance.
    """
    names = getattr(cls_or_instance, "__frozen_fields__", None)
    if names is None:
        raise TypeError(f"{cls_or_instance!r} is not a @frozen class or instance")
    return tuple(names)


def replace(obj: T, **changes: Any) -> T:
    """A copy of the :func:`frozen` instance ``obj`` with ``changes`` (field name → value).

    Raises:
        TypeError: ``obj`` is not a :func:`frozen` instance, or a change names no field.
    """
    names = field_names(obj)
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {', '.join(sorted(unknown))}")
    return type(obj)(**{n: changes[n] if n in changes else getattr(obj, n) for n in names})


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen(cls: C) -> C:
    """Make ``cls`` a frozen value class with slots (see the module docstring).

    Fields are the class's own annotations (``ClassVar`` ones left out), after those of a
    :func:`frozen` base. Returns a new class (slots need one), as
    ``@dataclass(slots=True)`` does; methods must not use ``super()`` without arguments.

    Raises:
        TypeError: a field without a default follows one with a default.
    """
    own = [n for n, a in cls.__dict__.get("__annotations__", {}).items() if not _is_classvar(a)]
    base_names = [n for b in reversed(cls.__mro__[1:]) for n in getattr(b, "__frozen_fields__", ())]
    names = list(dict.fromkeys([*base_names, *own]))
    defaults: dict[str, Any] = {}
    for b in reversed(cls.__mro__[1:]):
        defaults.update(getattr(b, "__frozen_defaults__", {}))
    ns = dict(cls.__dict__)
    for n in own:
        if n in ns:
            defaults[n] = ns.pop(n)
    ns.pop("__dict__", None)
    ns.pop("__weakref__", None)
    params, body = [], []
    glb: dict[str, Any] = {"_set": object.__setattr__, "_UNSET": _UNSET}
    seen_default = False
    for n in names:
        d = defaults.get(n, _NO_DEFAULT)
        if d is _NO_DEFAULT:
            if seen_default:
                raise TypeError(f"{cls.__name__}: field {n!r} without a default follows one with a default")
            params.append(n)
            body.append(f"  _set(self, {n!r}, {n})")
        elif isinstance(d, _Factory):
            seen_default = True
            glb[f"_f_{n}"] = d.make
            params.append(f"{n}=_UNSET")
            body.append(f"  _set(self, {n!r}, _f_{n}() if {n} is _UNSET else {n})")
        else:
            seen_default = True
            glb[f"_d_{n}"] = d
            params.append(f"{n}=_d_{n}")
            body.append(f"  _set(self, {n!r}, {n})")
    if "__post_init__" in ns or any("__post_init__" in vars(b) for b in cls.__mro__[1:-1]):
        body.append("  self.__post_init__()")
    src = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(src, glb)  # the generated __init__, as dataclasses writes its own
    init = glb["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    fields = tuple(names)

    def values(self: object) -> tuple[Any, ...]:
        return tuple([getattr(self, n) for n in fields])

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(values(self))

    def __repr__(self: object) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in fields)
        return f"{type(self).__qualname__}({inner})"

    def __reduce__(self: object) -> tuple[Any, ...]:  # pickle and copy: through __init__
        return (type(self), values(self))

    ns.update(__slots__=tuple(own), __init__=init, __frozen_fields__=fields,
              __frozen_defaults__=defaults, __match_args__=fields, __setattr__=_frozen_setattr,
              __delattr__=_frozen_delattr, __reduce__=__reduce__)
    for name, fn in (("__eq__", __eq__), ("__hash__", __hash__), ("__repr__", __repr__)):
        if name not in cls.__dict__ or (name == "__hash__" and cls.__dict__[name] is None):
            fn.__qualname__ = f"{cls.__qualname__}.{name}"
            ns[name] = fn
    new = type(cls)(cls.__name__, cls.__bases__, ns)
    return new
