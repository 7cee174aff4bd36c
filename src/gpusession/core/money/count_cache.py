"""The count of deliverables as last counted, read back for ``status`` (S7, S10).

Split from :mod:`gpusession.core.money.count` (which counts, and so loads the approvals,
the unit and the secret detectors) so that ``status --format tmux``, run every few
seconds, says ``18 visuals`` with the standard library only: no hashing, no polars.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_json, read_toml_lenient

#: The cache beside ``session.toml``: the count, its words and what it was counted on.
CACHE_FILE = "count-cache.json"
#: The count's last source: the distinct accepted corpora (K4).
CORPORA = "corpora"


def cache_key(folder: Path) -> list[Any]:
    """Size and mtime of what the count depends on; no hashing (the status speed goal)."""
    key: list[Any] = []
    paths = [folder / "approvals.toml", folder / "resultats-bruts.csv", folder / "session.toml"]
    try:
        doc = read_toml_lenient(folder / "approvals.toml")  # bounded: nested too deep reads as absent (H-39)
        if doc is not None:
            base = Path(str(doc.get("deliverables", "")))
            paths += [base / str(rel) for rel in sorted(doc.get("files", {}))]
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    for p in paths:
        try:
            st = os.stat(p)
            key.append([str(p), st.st_size, st.st_mtime_ns])
        except OSError:
            key.append([str(p), None, None])
    return key


def cached_words(folder: Path, *, stale_ok: bool = False) -> dict[str, Any] | None:
    """The cached count when it still describes the files (size and mtime), else ``None``.

    Standard library only: ``status`` calls it every few seconds.

    Args:
        folder: the session folder.
        stale_ok: also return a cache the files no longer match, with ``stale = True``.
    """
    try:
        doc = loads_json((Path(folder) / CACHE_FILE).read_text("utf-8"), Path(folder) / CACHE_FILE)
    except (OSError, ValueError, BadInput):  # a cache nested past the parser reads as absent (H-39)
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("short"), str) or not isinstance(doc.get("words"), str):
        return None
    doc["stale"] = doc.get("key") != cache_key(Path(folder))
    if doc["stale"] and not stale_ok:
        return None
    return doc


def shown_in_status(doc: dict[str, Any] | None) -> bool:
    """Whether ``status`` says the cached count instead of the accepted corpora (S8, S10)."""
    return doc is not None and (doc.get("source") != CORPORA or bool(doc.get("declared")))


__all__ = ["CACHE_FILE", "CORPORA", "cache_key", "cached_words", "shown_in_status"]
