"""The kinds of deliverable behind one interface, and their registry (S9, S10; V1, K4).

A session delivers one of several kinds of work, and each kind answers for itself: how
it is defined, how one output is judged, how the outputs are counted (distinct by what),
and how it is named in the singular and plural. Three are registered here:

- the **classification corpus** (:data:`CORPUS`): defined by classes, a metric and a
  threshold; judged by its IDs, format and quality rule (V1); counted as distinct
  accepted corpora (K4);
- the **accept rule** (:data:`ACCEPT_RULE`): defined by a person's program, expected
  names and a format; judged by them (S9); counted as distinct files by SHA-256;
- the **approved files** (:data:`APPROVED`): a person's decision on each file, kept
  with the file's SHA-256 (S9); counted as distinct approved bytes.

Callers ask the registry (:func:`protocol_kind`, :func:`row_kind`, :func:`kind_named`,
:func:`registered`) and never test a kind's stored name themselves; the names stored on
disk (``kind = "accept-rule"`` in ``session.toml``, the ``quality_metric`` cell of a rule's
row, the count's ``source``) are the kinds' :attr:`DeliverableKind.key`.

The count (S10) asks each registered kind in :attr:`DeliverableKind.order`; the first
that counts in the session is the count's one source (never a sum of two). The three
kinds above count from the approvals, the accept reports and the results rows, which
live in rooms above this one: their counters are bound by
:mod:`gpusession.core.money.count` (:func:`bind_count`), the one module that counts. A
new kind implements :class:`DeliverableKind` whole in its own module and is
:func:`register` -ed; nothing else changes.

Why here: the run's event words, the experiment form and the count all ask which kind
an experiment or a row is, so the registry stands low (``records``) and loads the
standard library only, its value classes ``@frozen`` (``status`` reads it every few
seconds, without :mod:`dataclasses`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from gpusession.core.files.frozen import frozen


@frozen
class KindCount:
    """What a kind counted in a session (S10), before the unit is said.

    Attributes:
        n: distinct accepted deliverables; ``None`` when not measured (nothing judged).
        not_counted: decided or judged but not counted, one line each (a file changed
            after its approval, a report left out, a run outside the package's period).
        to_decide: files still waiting for a person's decision.
        same_bytes: approved files repeating bytes approved before (counted once), as
            :class:`gpusession.core.folder.approvals.SameBytes`.
        conflicts: bytes approved under one name and rejected under another, as
            :class:`gpusession.core.folder.approvals.Conflict`.
    """

    n: int | None
    not_counted: tuple[str, ...] = ()
    to_decide: int = 0
    same_bytes: tuple[Any, ...] = ()
    conflicts: tuple[Any, ...] = ()


class CountScope(Protocol):
    """What a kind counts from: one session, each source read at most once (S10).

    Made by :func:`gpusession.core.money.count.session_count`; a kind reads only what it
    needs (the approved files never read the results rows).
    """

    @property
    def session(self) -> Any:
        """The open session (``folder``, ``data``, ``validation_dir``, ``results``)."""

    def rows(self) -> Any:
        """The results rows (a polars frame), read once."""

    def period(self) -> Any:
        """The package's period (:class:`gpusession.core.money.period.Period`; seed 000 §5)."""

    def states(self) -> list[Any]:
        """The deliverables folder's files and their decisions (``FileState``), walked once."""


@runtime_checkable
class DeliverableKind(Protocol):
    """A kind of deliverable: defined, judged, counted and named by itself (S9, S10).

    Each member is read-only; a frozen value class implements it (:class:`BuiltinKind`).
    """

    @property
    def key(self) -> str:
        """The stored name: the count's ``source``; where the kind has them, a protocol's ``kind`` and a row's ``quality_metric``."""

    @property
    def name(self) -> str:
        """The kind in a few words (``accept rule``), said where kinds are compared."""

    @property
    def order(self) -> int:
        """The count's precedence (S10): the kind of lowest order that counts is the source."""

    @property
    def adjective(self) -> str:
        """What an accepted deliverable of the kind is: ``approved``, ``accepted``."""

    @property
    def singular(self) -> str:
        """One judged output: ``corpus``, ``output``, ``file``."""

    @property
    def plural(self) -> str:
        """Several judged outputs: ``corpora``, ``outputs``, ``files``."""

    @property
    def default_unit(self) -> tuple[str, str]:
        """The count's unit where the session declares none (S8): ``(singular, plural)``."""

    @property
    def defined_by(self) -> str:
        """How the kind is defined, in words (V5, S9)."""

    @property
    def judged_by(self) -> str:
        """How one output is judged, in words (V1, S9)."""

    @property
    def distinct_by(self) -> str:
        """What makes two outputs one in the count, in words (K4, S10)."""

    @property
    def source_words(self) -> str:
        """Where a count of this kind comes from, said beside the figure (S10)."""

    @property
    def classification(self) -> bool:
        """Whether the kind is defined by classes, a metric and a threshold (V5)."""

    def defines(self, protocol: Mapping[str, Any]) -> bool:
        """Whether an experiment's ``protocol`` table declares this kind (V5)."""

    def judged_row(self, quality_metric: str | None) -> bool:
        """Whether a results row whose ``quality_metric`` cell holds this was judged by this kind."""

    def unmeasured_words(self, noun: str, unit: str, declared: bool) -> str:
        """The count in words while nothing is measured (C3: never a 0).

        Args:
            noun: the counted deliverable (``accepted visual``).
            unit: the session's unit, singular (``visual``).
            declared: the session declared its unit (S8).
        """

    def count(self, scope: CountScope) -> KindCount | None:
        """The session's count of this kind, ``None`` when the kind does not count there (S10)."""


#: The counters bound to the registered kinds that count from rooms above this one.
_COUNTERS: dict[str, Callable[[CountScope], KindCount | None]] = {}


@frozen
class BuiltinKind:
    """One of the three kinds registered here (:class:`DeliverableKind`).

    Attributes:
        protocol_kind: the value of ``kind`` in an experiment's protocol table that
            declares it; ``None`` for a classification protocol (no ``kind``) and for a
            kind no experiment declares (approved files: a person decides).
        row_marker: the ``quality_metric`` cell of a row this kind judged; ``None``
            where the cell holds the metric (a classification corpus) or no row is judged.
        asks_approval: with a declared unit and nothing measured, the count says ``no
            approved visual yet`` (the guide's words), else ``…: not measured yet``.
    """

    key: str
    name: str
    order: int
    adjective: str
    singular: str
    plural: str
    default_unit: tuple[str, str]
    defined_by: str
    judged_by: str
    distinct_by: str
    source_words: str
    classification: bool = False
    protocol_kind: str | None = None
    row_marker: str | None = None
    asks_approval: bool = True

    def defines(self, protocol: Mapping[str, Any]) -> bool:
        """Whether ``protocol`` declares this kind: its ``kind``, or none for a classification."""
        if self.classification:
            return protocol.get("kind") is None
        return self.protocol_kind is not None and protocol.get("kind") == self.protocol_kind

    def judged_row(self, quality_metric: str | None) -> bool:
        """Whether a row with this ``quality_metric`` cell was judged by this kind."""
        return self.row_marker is not None and quality_metric == self.row_marker

    def unmeasured_words(self, noun: str, unit: str, declared: bool) -> str:
        """``no approved visual yet`` or ``accepted deliverable: not measured yet`` (C3)."""
        if declared and self.asks_approval:
            return f"no approved {unit} yet"
        return f"{noun}: not measured yet"

    def count(self, scope: CountScope) -> KindCount | None:
        """The count by the counter :func:`bind_count` bound to this kind (S10).

        Raises:
            LookupError: no counter is bound (:mod:`gpusession.core.money.count` not loaded).
        """
        try:
            counter = _COUNTERS[self.key]
        except KeyError:
            raise LookupError(f"no counter is bound to the kind {self.key!r}: "
                              "gpusession.core.money.count binds them") from None
        return counter(scope)


#: The stored name of the accept rule: its protocol's ``kind``, its rows' ``quality_metric``, its count's ``source``.
_RULE_KEY = "accept-rule"

#: Distinct accepted corpora (K4): the count where nothing else counts.
CORPUS = BuiltinKind(
    key="corpora", name="classification corpus", order=90, adjective="accepted",
    singular="corpus", plural="corpora", default_unit=("accepted corpus", "accepted corpora"),
    defined_by="expected IDs, classes, a metric and a threshold fixed before the first run (V5)",
    judged_by="its IDs, format and quality rule, each reported (V1)",
    distinct_by="corpus revision (a corpus run again counts once, K4)",
    source_words="distinct accepted corpora", classification=True)
#: Outputs a person's program accepts (S9).
ACCEPT_RULE = BuiltinKind(
    key=_RULE_KEY, name="accept rule", order=20, adjective="accepted",
    singular="output", plural="outputs", default_unit=("deliverable", "deliverables"),
    defined_by="a person's program, expected names and a format fixed before the first run (V5, S9)",
    judged_by="the expected names, the format, then the program's exit status (S9)",
    distinct_by="SHA-256 of each file of an accepted output",
    source_words="accepted by the experiment's rule, distinct files by SHA-256",
    protocol_kind=_RULE_KEY, row_marker=_RULE_KEY, asks_approval=False)
#: Files a named person approved, with each file's SHA-256 (S9).
APPROVED = BuiltinKind(
    key="approved", name="approved files", order=10, adjective="approved",
    singular="file", plural="files", default_unit=("deliverable", "deliverables"),
    defined_by="a deliverables folder whose files a named person decides (approvals.toml)",
    judged_by="a person's decision, kept with who, when, why and the file's SHA-256 (S9)",
    distinct_by="SHA-256 (a file changed after its approval is not counted)",
    source_words="approved by a person, distinct by SHA-256 (approvals.toml)")

#: The registered kinds by key.
_KINDS: dict[str, DeliverableKind] = {}


def register(kind: DeliverableKind) -> DeliverableKind:
    """Add a kind to the registry; returns it.

    Raises:
        ValueError: another kind already holds its key.
    """
    if kind.key in _KINDS and _KINDS[kind.key] is not kind:
        raise ValueError(f"a kind of deliverable is already registered as {kind.key!r}")
    _KINDS[kind.key] = kind
    return kind


def unregister(key: str) -> None:
    """Remove a kind (a test's own kind, when the test ends); an unknown key is a no-op."""
    _KINDS.pop(key, None)


def bind_count(key: str, counter: Callable[[CountScope], KindCount | None]) -> None:
    """Bind the counter of a :class:`BuiltinKind` whose sources live in a room above (S10)."""
    _COUNTERS[key] = counter


def registered() -> list[DeliverableKind]:
    """The registered kinds in the count's order (S10): the first that counts is the source."""
    return sorted(_KINDS.values(), key=lambda k: (k.order, k.key))


def kind_named(key: str) -> DeliverableKind:
    """The registered kind stored as ``key`` (a count's ``source``).

    Raises:
        KeyError: no kind is registered under ``key``.
    """
    return _KINDS[key]


def protocol_kind(protocol: Mapping[str, Any] | None) -> DeliverableKind:
    """The kind an experiment's ``protocol`` table declares (V5, S9).

    No protocol, or a ``kind`` no registered kind declares, reads as the classification
    corpus: its ``classes`` and ``threshold`` are checked where they are read, naming them.
    """
    if isinstance(protocol, Mapping):
        for kind in registered():
            if not kind.classification and kind.defines(protocol):
                return kind
    return CORPUS


def row_kind(quality_metric: str | None) -> DeliverableKind:
    """The kind that judged a results row, from its ``quality_metric`` cell (C1: the seed's column).

    A cell no kind marks holds a metric (``macro_f1``): a classification corpus.
    """
    for kind in registered():
        if kind.judged_row(quality_metric):
            return kind
    return CORPUS


def experiment_kinds(experiments: Any) -> dict[str, DeliverableKind]:
    """Each experiment's kind other than the classification corpus, by id (S10).

    Args:
        experiments: the ``[experiments]`` table of ``session.toml`` (any value: a table
            of another type holds none).
    """
    if not isinstance(experiments, Mapping):
        return {}
    out: dict[str, DeliverableKind] = {}
    for name, exp in experiments.items():
        protocol = exp.get("protocol") if isinstance(exp, Mapping) else None
        if isinstance(protocol, Mapping) and not (kind := protocol_kind(protocol)).classification:
            out[str(name)] = kind
    return out


def declares(session_doc: Mapping[str, Any] | None, kind: DeliverableKind) -> bool:
    """Whether an experiment of ``session.toml`` is judged by ``kind`` (S10)."""
    doc = session_doc if isinstance(session_doc, Mapping) else {}
    return any(k is kind for k in experiment_kinds(doc.get("experiments")).values())


def kinds_words(kinds: Iterable[DeliverableKind]) -> str:
    """``accept rule, approved files``: the kinds by name, in the count's order."""
    by_key = {k.key: k for k in kinds}
    return ", ".join(k.name for k in sorted(by_key.values(), key=lambda k: (k.order, k.key)))


for _kind in (APPROVED, ACCEPT_RULE, CORPUS):
    register(_kind)


__all__ = ["ACCEPT_RULE", "APPROVED", "CORPUS", "BuiltinKind", "CountScope", "DeliverableKind", "KindCount",
           "bind_count", "declares", "experiment_kinds", "kind_named", "kinds_words", "protocol_kind",
           "register", "registered", "row_kind", "unregister"]
