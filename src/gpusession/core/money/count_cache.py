"""The count of deliverables as last counted, read back for ``status`` (S7, S10).

Split from :mod:`gpusession.core.money.count` (which counts, and so loads the approvals,
the unit and the secret detectors) so that ``status --format tmux``, run every few
seconds, says ``18 visuals`` with the standard library only: no hashing, no polars.
"""

from __future__ import annotations

import binascii
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_json, read_toml_lenient
from gpusession.core.files.seal import keyed_seal, keyed_seal_holds
from gpusession.core.folder.caches import checked_state
from gpusession.core.folder.copy_home import COPY_HOME_TOML, copy_home_deliverables
from gpusession.core.records.kinds import ACCEPT_RULE, APPROVED, CORPUS, declares, experiment_kinds

#: The cache beside ``session.toml``: the count, its words and what it was counted on.
CACHE_FILE = "count-cache.json"
#: The count's last source: the distinct accepted corpora (K4), the classification corpus's key.
CORPORA = CORPUS.key
#: The longest ``short`` / ``words`` a cache may hold: more is a hand edit, read as absent (H-48).
MAX_WORDS_CHARS = 200


def _cache_canon(doc: Mapping[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in doc.items() if k != "check"}, sort_keys=True,
                      ensure_ascii=False).encode("utf-8")


def cache_check(doc: Mapping[str, Any]) -> str:
    """The keyed seal a count cache keeps of its own fields, ``hmac-sha256:…`` (H-47, H-78).

    Why: a count edited by hand, up or down, beside a kept ``key`` would make ``status``
    say a count ``show`` would not; the writer seals the fields under the user's key
    (:func:`gpusession.core.files.seal.keyed_seal`), so a seal recomputed from the public
    code, or a cache of another user or machine, reads as absent and is counted anew.
    """
    return keyed_seal(_cache_canon(doc))


#: The protocol kind of an experiment whose outputs a person's rule accepts (S10's second source).
RULE_KIND = ACCEPT_RULE.key


def count_facts(session_doc: Mapping[str, Any] | None) -> str:
    """What the count reads of ``session.toml``, sealed: unit, experiments of a kind of their own, package window.

    The window (start, days) is the period the count holds (seed 000 §5). Source: S8, S10. Why: the count depends on these facts only, so a write of
    ``session.toml`` that changes none (an experiment defined, a limit set) keeps the count
    that ``status`` says, where its mtime once made it ``?``.
    """
    doc = session_doc if isinstance(session_doc, Mapping) else {}
    deliverable = doc.get("deliverable")
    # the experiments judged by a kind other than the classification corpus (an accept rule)
    rules = sorted(experiment_kinds(doc.get("experiments")))
    package = doc.get("package")
    window = ([package.get("start"), package.get("days")] if isinstance(package, Mapping) else None)
    canon = json.dumps({"deliverable": deliverable if isinstance(deliverable, Mapping) else None,
                        "rules": rules, "window": window}, sort_keys=True, ensure_ascii=False, default=str)
    return f"crc32:{binascii.crc32(canon.encode('utf-8')):08x}"


def cache_key(folder: Path, session_doc: Mapping[str, Any] | None = None) -> list[Any]:
    """What the count was made from: the files' size, mtime and ctime, and ``session.toml``'s facts.

    The facts are :func:`count_facts`; no file is hashed (the status speed goal). The files:
    ``approvals.toml``, the results CSV, ``copy-home.toml`` (present or not), then each decided
    file where the count reads it: in a copy home, in the pulled copy (S4, S10).

    The ctime too (H-47): an edit that keeps a file's size and puts its mtime back (``touch
    -d``, ``os.utime``) still moves its ctime, which no user call can set back.

    Args:
        folder: the session folder.
        session_doc: its parsed ``session.toml`` when the caller holds it (else read here,
            leniently).
    """
    if session_doc is None:
        session_doc = read_toml_lenient(folder / "session.toml")
    key: list[Any] = [["session.toml", count_facts(session_doc)]]
    paths = [folder / "approvals.toml", folder / "resultats-bruts.csv", folder / COPY_HOME_TOML]
    try:
        doc = read_toml_lenient(folder / "approvals.toml")  # bounded: nested too deep reads as absent (H-39)
        if doc is not None:
            # in a copy home, the pulled copy the decisions are checked against (S4), never the server's path
            pulled = copy_home_deliverables(folder) if "deliverables" in doc else None
            base = pulled or Path(str(doc.get("deliverables", "")))
            paths += [base / str(rel) for rel in sorted(doc.get("files", {}))]
    except (OSError, ValueError, TypeError, AttributeError, BadInput):
        pass
    for p in paths:
        try:
            st = os.stat(p)
            key.append([str(p), st.st_size, st.st_mtime_ns, st.st_ctime_ns])
        except OSError:
            key.append([str(p), None, None, None])
    return key


def _session_doc(folder: Path) -> Mapping[str, Any] | None:
    """``session.toml`` as the count reads it: the checked tables ``status`` kept, else parsed leniently.

    Why: ``list`` and ``deliverables`` asked for each session's count parsed a
    500-experiment ``session.toml`` every time; while the file is the one ``status``
    checked (:func:`gpusession.core.folder.caches.checked_state`), its kept tables say the
    same facts (unit, rule experiments, window).
    """
    state = checked_state(folder)
    return state["session"] if state is not None else read_toml_lenient(folder / "session.toml")


def _stat_entry(path: str) -> list[Any]:
    """``[path, size, mtime_ns, ctime_ns]`` as :func:`cache_key` records a file (``None`` s when absent)."""
    try:
        st = os.stat(path)
    except OSError:
        return [path, None, None, None]
    return [path, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def key_holds(folder: Path, key: Any, session_doc: Mapping[str, Any] | None = None) -> bool:
    """Whether ``key`` (a cache's) is what :func:`cache_key` would say now, without parsing ``approvals.toml``.

    Source: S10, H-47. Why: ``status`` parsed ``approvals.toml`` (3,000 approvals) on
    every call to list the decided files. While ``approvals.toml``'s size, mtime and
    ctime are the key's, the decided files are those the key lists (the cache holds
    them), so each is ``stat``-ed where the key names it: one ``stat`` per decided file,
    no parse; a changed ``approvals.toml`` makes the key differ (a count made anew).

    Args:
        folder: the session folder.
        key: the ``key`` a count cache holds (any value: a hand edit is sealed away anyway).
        session_doc: its parsed ``session.toml`` when the caller holds it (else read here).
    """
    if session_doc is None:
        session_doc = _session_doc(folder)
    fixed = [str(folder / "approvals.toml"), str(folder / "resultats-bruts.csv"), str(folder / COPY_HOME_TOML)]
    if (not isinstance(key, list) or len(key) < 4 or key[0] != ["session.toml", count_facts(session_doc)]
            or not all(isinstance(e, list) and len(e) == 4 and isinstance(e[0], str) for e in key[1:])
            or [e[0] for e in key[1:4]] != fixed):
        return False
    return all(_stat_entry(entry[0]) == entry for entry in key[1:])


def cached_words(folder: Path, *, stale_ok: bool = False,
                 session_doc: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The cached count when it still describes the files (size and mtime), else ``None``.

    Standard library only: ``status`` calls it every few seconds.

    Args:
        folder: the session folder.
        stale_ok: also return a cache the files no longer match, with ``stale = True``.
        session_doc: its parsed ``session.toml`` when the caller holds it.
    """
    try:
        doc = loads_json((Path(folder) / CACHE_FILE).read_text("utf-8"), Path(folder) / CACHE_FILE)
    except (OSError, ValueError, BadInput):  # a cache nested past the parser reads as absent (H-39)
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("short"), str) or not isinstance(doc.get("words"), str):
        return None
    if max(len(doc["short"]), len(doc["words"])) > MAX_WORDS_CHARS or not keyed_seal_holds(doc.get("check"), _cache_canon(doc)):
        return None  # edited by hand (or written before the check): counted anew (H-47, H-48)
    doc["stale"] = not key_holds(Path(folder), doc.get("key"), session_doc)
    if doc["stale"] and not stale_ok:
        return None
    return doc


def shown_in_status(doc: dict[str, Any] | None) -> bool:
    """Whether ``status`` says the cached count instead of the accepted corpora (S8, S10).

    So it does for a unit of its own, another source, or accepted corpora the period left
    out (seed 000 §5).
    """
    return doc is not None and (doc.get("source") != CORPORA or bool(doc.get("declared"))
                                or bool(doc.get("left_out")))


def declared_unit(session_doc: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``("visual", "visuals")`` when ``session.toml``'s ``[deliverable]`` declares a unit, else ``None``.

    Source: S8, S10. Why: ``status`` and ``list`` say the unit without loading
    :mod:`gpusession.core.folder.unit` (its checks and the journal records); the same
    reading as :func:`gpusession.core.folder.unit.unit_of`, a value of another kind
    reading as no unit (``show`` names it).
    """
    table = session_doc.get("deliverable") if session_doc is not None else None
    unit = table.get("unit") if isinstance(table, Mapping) else None
    if not isinstance(unit, str) or not unit:
        return None
    assert isinstance(table, Mapping)
    plural = table.get("unit_plural")
    return unit, plural if isinstance(plural, str) and plural else f"{unit}s"


def source_now(folder: Path, session_doc: Mapping[str, Any] | None) -> str:
    """The kind that counts the session now, as :func:`gpusession.core.money.count.session_count` picks it (S10).

    ``approved`` while ``approvals.toml`` exists, else ``rule`` while an experiment is
    judged by an accept rule, else the accepted corpora: one ``stat`` and the facts of
    ``session.toml`` already read, no count. Why: a session whose count was never kept
    here (a copy home, a cache sealed by another user) or was kept before its first
    approval said "1 accepted corpus" in ``status`` where ``show`` said "1 approved
    deliverable".
    """
    if os.path.exists(Path(folder) / "approvals.toml"):
        return APPROVED.key
    return RULE_KIND if declares(session_doc, ACCEPT_RULE) else CORPORA


def _unit_of_source(source: str, declared: tuple[str, str] | None) -> tuple[str, str]:
    """The unit the count of ``source`` is said in: the declared one, else the kind's default (S8)."""
    if declared is not None:
        return declared
    return APPROVED.default_unit if source == APPROVED.key else (
        ACCEPT_RULE.default_unit if source == RULE_KIND else DEFAULT_UNIT)


def status_count(folder: Path, session_doc: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """What ``status`` and ``list`` say for the count of deliverables; ``None``: the accepted corpora (S8, S10).

    Source: S10 (one source for the count). Why: a session with its own unit said "0
    accepted corpora" until something cached its count while ``show`` said "18 accepted
    visuals". The count as last cached (:func:`cached_words`, ``stale`` when the files
    changed since); else, for a session that declares a unit or counts approved files or
    a rule's outputs (:func:`source_now`), ``? visuals``: not counted yet, never the
    corpora's words nor a 0 that ``show`` would not say. A cache of another source than
    the one that counts now is never said (its words would be another unit's). No hashing.

    Args:
        folder: the session folder.
        session_doc: its parsed ``session.toml`` when the caller has read it (else read
            here, leniently).

    Returns:
        The cache's fields less its key, with ``unit`` and ``unit_plural``; ``None`` for a
        session that counts accepted corpora.
    """
    folder = Path(folder)
    if session_doc is None:
        session_doc = _session_doc(folder)
    declared = declared_unit(session_doc)
    source = source_now(folder, session_doc)
    unit = _unit_of_source(source, declared)
    doc = cached_words(folder, stale_ok=True, session_doc=session_doc)
    if doc is not None and doc.get("source") != source:
        doc = None  # counted from another source: its words are not what `show` says now
    if shown_in_status(doc):
        assert doc is not None
        out = {k: v for k, v in doc.items() if k != "key"}
        if not isinstance(out.get("unit"), str) or not isinstance(out.get("unit_plural"), str):
            out["unit"], out["unit_plural"] = unit  # a cache written before it said them
        if not out.get("stale"):
            return out
        # the files changed since the count: a figure `show` would no longer say is never
        # said (H-47); the unit stays, the count is a question until counted anew
        plural = str(out["unit_plural"])
        return {**out, "count": None, "short": f"? {plural}",
                "words": f"? {plural} (files changed since the last count: "
                         f"`gpusession cost {folder.name}` counts them)"}
    if declared is None and source == CORPORA:
        return None
    return {"count": None, "source": None, "short": f"? {unit[1]}",  # null while not counted (the JSON schema)
            "words": f"? {unit[1]} (not counted yet: `gpusession cost {folder.name}` counts them)",
            "declared": declared is not None, "unit": unit[0], "unit_plural": unit[1], "stale": False}


#: The unit of a session that declares none (:data:`gpusession.core.folder.unit.DEFAULT_UNIT`).
DEFAULT_UNIT = ("accepted corpus", "accepted corpora")


__all__ = ["CACHE_FILE", "CORPORA", "DEFAULT_UNIT", "cache_key", "cached_words", "declared_unit", "key_holds",
           "shown_in_status", "source_now", "status_count"]
