"""Kinds of deliverable behind one interface (S9, S10; :mod:`gpusession.core.records.kinds`).

The three kinds answer for themselves (defined, judged, counted, named); a fourth kind,
"files listed by the person", is defined and registered here only, and the count, its
words, the cost per deliverable and ``compare`` go through it with no other module changed.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import gpusession
from gpusession.core.events.runner import RowAppended
from gpusession.core.events.words import describe
from gpusession.core.folder.session import Session
from gpusession.core.folder.unit import set_unit
from gpusession.core.money.answer import session_answer
from gpusession.core.money.count import DeliverableCount, session_count
from gpusession.core.records import kinds
from gpusession.core.records.kinds import (
    ACCEPT_RULE,
    APPROVED,
    CORPUS,
    CountScope,
    DeliverableKind,
    KindCount,
    protocol_kind,
    register,
    registered,
    row_kind,
)
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval.compare import Comparison, SessionFigures, differences, work_terms

pytestmark = pytest.mark.calendar  # the count holds the package's period; the cost its price

#: The list a person keeps of the files they deliver, one path per line (relative to the session).
LISTED_FILE = "listed.txt"


@dataclass(frozen=True)
class ListedFiles:
    """A fourth kind of deliverable: the files a person lists in ``listed.txt``, distinct by SHA-256."""

    key: str = "listed"
    name: str = "files listed by the person"
    order: int = 15  # after a person's approvals, before an accept rule (S10)
    adjective: str = "listed"
    singular: str = "listed file"
    plural: str = "listed files"
    default_unit: tuple[str, str] = ("file", "files")
    defined_by: str = "listed.txt in the session folder, one path per line"
    judged_by: str = "the person who lists it"
    distinct_by: str = "SHA-256"
    source_words: str = "listed by the person in listed.txt, distinct by SHA-256"
    classification: bool = False

    def defines(self, protocol: Mapping[str, Any]) -> bool:
        return protocol.get("kind") == self.key

    def judged_row(self, quality_metric: str | None) -> bool:
        return quality_metric == self.key

    def unmeasured_words(self, noun: str, unit: str, declared: bool) -> str:
        return f"{noun}: none listed yet"

    def count(self, scope: CountScope) -> KindCount | None:
        path = Path(scope.session.folder) / LISTED_FILE
        if not path.exists():
            return None
        digests, missing = set(), []
        for line in path.read_text("utf-8").splitlines():
            listed = Path(scope.session.folder) / line.strip()
            if listed.is_file():
                digests.add(hashlib.sha256(listed.read_bytes()).hexdigest())
            elif line.strip():
                missing.append(f"{line.strip()}: listed, not found")
        return KindCount(len(digests), tuple(missing))


@pytest.fixture
def listed() -> Iterator[ListedFiles]:
    """The fourth kind, registered for one test."""
    kind = ListedFiles()
    register(kind)
    yield kind
    kinds.unregister(kind.key)


def _files(session: Session, contents: dict[str, bytes]) -> None:
    for name, data in contents.items():
        (session.folder / name).write_bytes(data)
    (session.folder / LISTED_FILE).write_text("\n".join([*contents, "gone.png"]) + "\n", "utf-8")


def test_s10_the_three_kinds_answer_for_themselves_in_the_counts_order() -> None:
    assert registered() == [APPROVED, ACCEPT_RULE, CORPUS]  # approvals, else a rule, else corpora (S10)
    for kind in registered():
        assert isinstance(kind, DeliverableKind)
        assert kind.singular and kind.plural and kind.defined_by and kind.judged_by and kind.distinct_by
    assert [k.key for k in registered()] == ["approved", "accept-rule", "corpora"]  # the stored names
    assert (CORPUS.singular, CORPUS.plural, ACCEPT_RULE.singular, APPROVED.plural) == (
        "corpus", "corpora", "output", "files")


def test_s9_an_experiments_protocol_names_its_kind() -> None:
    assert protocol_kind({"kind": "accept-rule", "accept": ["true"]}) is ACCEPT_RULE
    assert protocol_kind({"classes": ["a", "b"], "threshold": 0.9}) is CORPUS
    assert protocol_kind(None) is CORPUS and protocol_kind({}) is CORPUS
    # a kind no registered kind declares reads as a classification, checked where it is read
    assert protocol_kind({"kind": "shapes"}) is CORPUS
    assert ACCEPT_RULE.classification is False and CORPUS.classification is True


def test_s9_a_row_names_the_kind_that_judged_it() -> None:
    assert row_kind("accept-rule") is ACCEPT_RULE
    assert row_kind("macro_f1") is CORPUS and row_kind(None) is CORPUS
    row = ResultRow(experiment_id="e", variant_id="batch-4", phase="warm", run_index=1, elapsed_seconds=1.0,
                    quality_metric="accept-rule", corpus_accepted=True)
    assert "output accepted" in (describe(RowAppended(row=row, done=1, total=5)) or "")
    row = ResultRow(experiment_id="e", variant_id="batch-4", phase="warm", run_index=1, elapsed_seconds=1.0,
                    quality_metric="macro_f1", corpus_accepted=False)
    assert "corpus REJECTED" in (describe(RowAppended(row=row, done=1, total=5)) or "")


def test_s10_no_module_tells_a_kind_apart_by_its_stored_name() -> None:
    """No comparison with ``"accept-rule"`` or ``"corpora"`` outside the registry: it would pass a fourth kind by."""
    src = Path(gpusession.__file__).parent
    names = (ACCEPT_RULE.key, CORPUS.key)
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel == "core/records/kinds.py":  # the registry: each kind's key
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Constant) and side.value in names for side in (node.left, *node.comparators)):
                found.append(f"{rel}:{node.lineno}")
    assert found == []


def test_s10_a_kind_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered as 'accept-rule'"):
        register(ListedFiles(key="accept-rule"))
    assert registered() == [APPROVED, ACCEPT_RULE, CORPUS]


def test_s10_a_fourth_kind_counts_names_and_prices_through_the_registry(
        session: Session, listed: ListedFiles) -> None:
    """Files listed by the person: defined, counted and named by its own module only."""
    # two files with the same bytes count once; a listed file that is gone is named, not counted
    _files(session, {"a.png": b"one", "b.png": b"two", "c.png": b"two"})
    count = session_count(session)
    assert (count.n, count.source, count.kind) == (2, "listed", listed)
    assert count.words() == "2 listed files" and count.noun() == "listed file"
    assert count.source_words() == listed.source_words
    assert count.not_counted == ("gone.png: listed, not found",)
    assert count.to_json()["source"] == "listed" and count.to_json()["count"] == 2
    # the one answer divides by the kind's count, in the session's unit (A1, S8)
    answer = session_answer(session)
    assert answer.accepted == 2 and answer.in_unit
    line = answer.per_unit_line()
    assert line is not None and "÷ 2 listed files = " in line and line.endswith(" USD per file")
    # a declared unit names the count (S8)
    set_unit(session, "visual")
    assert session_count(session).words() == "2 listed visuals"
    # a row judged by the kind is named by it
    assert row_kind("listed") is listed


def test_s10_the_fourth_kind_gives_way_to_a_persons_approvals_and_takes_it_from_a_rule(
        session: Session, listed: ListedFiles) -> None:
    assert session_count(session).source == "corpora"  # nothing listed: the corpora (not measured)
    _files(session, {"a.png": b"one"})
    assert session_count(session).source == "listed"
    # an accept rule declared in the session comes after the list (order 15 < 20)
    session.data.setdefault("experiments", {})["render"] = {"protocol": {"kind": "accept-rule"}}
    assert session_count(session).source == "listed"


def _figures(name: str, count: DeliverableCount, session: Session) -> SessionFigures:
    return SessionFigures(name=name, folder=name, gpu_model="RTX A5000", days=7, lots=1, gpu_count=1,
                          package_total_usd_minor=5500, accepted=count.n, cost_per_accepted_usd_minor=1833,
                          cost_reason=None, work=work_terms(session, session.results.read(), count))


def test_s10_compare_never_ranks_two_kinds_even_with_one_unit_and_says_it_in_one_line(
        session: Session, listed: ListedFiles) -> None:
    """``3 accepted visuals`` of a rule and ``3 accepted visuals`` of corpora: one unit, two kinds."""
    set_unit(session, "visual")
    unit = session_count(session).unit
    rule = DeliverableCount(3, ACCEPT_RULE.key, unit)
    corpora = DeliverableCount(3, CORPUS.key, unit)
    assert rule.noun() == corpora.noun() == "accepted visual"  # the unit alone would rank them
    a, b = _figures("a", rule, session), _figures("b", corpora, session)
    diffs = differences([a, b])
    assert [d.key for d in diffs] == ["kind"]
    assert diffs[0].line() == "kind of deliverable differs: a: accept rule; b: classification corpus"
    for allowed in (False, True):
        comparison = Comparison((a, b), diffs, allow_different=allowed)
        assert not comparison.ranked and comparison.ranking() == []
        said = [line for line in comparison._said("give --allow-different") if line.startswith("Not ranked")]
        assert said == ["Not ranked: the sessions do not count the same deliverables (kind of deliverable "
                        "differs: a: accept rule; b: classification corpus); a cost per one is no cost per the "
                        "other, even with --allow-different."]
        assert comparison.to_json()["ranking"] is None
    # the same unit and the same kind (the fourth, registered here): ranked
    c = _figures("c", DeliverableCount(3, listed.key, unit), session)
    d = _figures("d", DeliverableCount(4, listed.key, unit), session)
    assert c.work["kind"] == ("files listed by the person",)
    same = Comparison((c, d), differences([c, d]))
    assert same.same_deliverables and same.ranked and [s.name for s in same.ranking()] == ["d", "c"]  # 55.00 USD ÷ 4 first
    # a session whose count does not read blocks nothing: it has no cost to rank
    e = SessionFigures(name="e", folder="e", gpu_model=None, days=None, lots=None, gpu_count=None,
                       package_total_usd_minor=None, accepted=None, cost_per_accepted_usd_minor=None,
                       cost_reason="unreadable", work=work_terms(session, session.results.read(), None))
    assert "kind" not in e.work and "kind" not in [x.key for x in differences([c, e])]
