"""The per-field bound of a hand-editable file's text: the notes' 4 KiB (H-48).

A leaf of ``core.files``: the shared readers (:mod:`gpusession.core.files.nesting`) apply
it to every document they parse, and the secret checks
(:mod:`gpusession.core.files.secrets`) hold the writer to the same figures; both import
it from here, so neither imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput

#: The longest free text accepted in one field (a note, a parameter): 4 KiB of UTF-8 --
#: the writer's bound (:func:`gpusession.core.files.secrets.check_free_text`) and the reader's.
TEXT_MAX_BYTES = 4096
#: Tables a program fills with what it observed (the run's environment, a probe's
#: evidence): their text may be longer than a note, so only :data:`OBSERVED_MAX_BYTES`
#: applies there.
OBSERVED_KEYS = frozenset({"environment", "evidence"})
OBSERVED_MAX_BYTES = 64 * 1024


def check_field_lengths(doc: Any, path: Path | str | None, *,
                        limit_bytes: int = TEXT_MAX_BYTES) -> None:
    """Refuse a document with a text field past the notes' bound (H-48: the read boundary).

    What the writer refuses a hand edit can still put in. Every string of ``doc``
    (values, list items and table keys, at any depth; iterative: no recursion) is held to
    ``limit_bytes`` of UTF-8, or :data:`OBSERVED_MAX_BYTES` under a key of
    :data:`OBSERVED_KEYS`; the first one past it is named, never shown.

    Raises:
        BadInput: ``FILE: FIELD: N bytes of text; at most 4,096 bytes (4 KiB) per field;
            the file was not used (shorten it by hand)``.
    """
    stack: list[tuple[Any, str, bool]] = [(doc, "", False)]
    while stack:
        value, where, observed = stack.pop()
        if isinstance(value, str):
            limit = max(limit_bytes, OBSERVED_MAX_BYTES) if observed else limit_bytes
            if len(value) * 4 <= limit:  # cheap: a text this short cannot pass the bound
                continue
            size = len(value.encode("utf-8", errors="surrogatepass"))
            if size > limit:
                raise BadInput(f"{size:,} bytes of text; at most {limit:,} bytes ({limit // 1024} KiB) "
                               "per field; the file was not used (shorten it by hand)",
                               path=path, field=where or None)
        elif isinstance(value, dict):
            children: list[tuple[Any, str, bool]] = []
            for k, v in value.items():
                k = str(k)
                here = f"{where}.{k}" if where else k
                children.append((v, here, observed or k in OBSERVED_KEYS))
                children.append((k, here, observed))  # a table's key is text too
            stack.extend(reversed(children))  # the first offender in file order is named
        elif isinstance(value, (list, tuple)):
            stack.extend(reversed([(v, f"{where}[{i}]", observed) for i, v in enumerate(value)]))


__all__ = ["OBSERVED_KEYS", "OBSERVED_MAX_BYTES", "TEXT_MAX_BYTES", "check_field_lengths"]
