"""Reading a gpusession TOML file, with its schema and required keys checked (S7, H-10).

Split from :mod:`gpusession.core.files.tomlio` (which also writes, and so loads ``tomli_w``
and ``tempfile``) so that ``gpusession status``, run by tmux every few seconds, reads
the session files with exactly the checks and the one-line errors of every other
command without paying for the writer. :mod:`gpusession.core.files.tomlio`
re-exports :func:`read_toml`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_toml, read_toml_text
from gpusession.core.files.textio import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: The ``schema`` every TOML file gpusession writes carries; a newer one is refused.
SCHEMA_VERSION = 1

_LINE_RE = re.compile(r"line (\d+)")


def read_toml(path: Path, *, required: Iterable[str] = (), field_bound: bool = True) -> dict[str, Any]:
    """Read a gpusession TOML file and check its schema and required keys.

    Args:
        path: the file.
        required: top-level keys that must be present (dotted ``a.b`` for nested).
        field_bound: hold every text field to the notes' bound (H-48,
            :func:`gpusession.core.files.nesting.check_field_lengths`); ``False`` only for
            an archive a program wrote (a validation report quotes the corpus).

    Returns:
        The parsed document.

    Raises:
        BadInput: larger than 1 MiB (H-48), nested past 64 levels (H-39), a text field
            past the notes' bound (H-48: the file, the field and the bound named), unreadable,
            not a plain file (a FIFO, a device, a folder: refused
            without waiting, :func:`gpusession.core.files.textio.not_plain`), not UTF-8, a
            syntax error (with its line), a missing or newer ``schema`` (refused:
            written by a newer gpusession), a missing key.
    """
    path = Path(path)
    # A byte-order mark (some Windows editors add one) is not TOML; read_text ignores it
    # rather than let it be reported as a syntax error on line 1. A FIFO, a device or a
    # folder is refused before anything is read: never waited on.
    # Past the size bound (H-48) it is refused before a byte is parsed: one byte more
    # than the bound is read, never the whole file.
    try:
        text = read_toml_text(path)
    except (OSError, UnicodeDecodeError):
        text = read_text(path, must="TOML files must be UTF-8").text  # the one-line error
    try:
        doc = loads_toml(text, path, field_bound=field_bound)  # depth- (H-39) and field-bounded (H-48)
    except tomllib.TOMLDecodeError as exc:
        lineno = getattr(exc, "lineno", None)
        if lineno is None:
            m = _LINE_RE.search(str(exc))
            lineno = int(m.group(1)) if m else None
        msg = getattr(exc, "msg", None) or str(exc).split(" (at ")[0]
        raise BadInput(f"TOML syntax error: {msg}", path=path, line=lineno) from None
    schema = doc.get("schema")
    if schema is None:
        raise BadInput("missing key; expected schema = 1", path=path, field="schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise BadInput(f"expected an integer, got {schema!r}", path=path, field="schema")
    if schema > SCHEMA_VERSION:
        raise BadInput(
            f"schema {schema} was written by a newer gpusession (this one reads schema "
            f"{SCHEMA_VERSION}); upgrade gpusession, nothing was changed",
            path=path,
            field="schema",
        )
    if schema < 1:
        raise BadInput(f"expected schema = 1, got {schema}", path=path, field="schema")
    for key in required:
        node: Any = doc
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise BadInput("missing required key", path=path, field=key)
            node = node[part]
    return doc


__all__ = ["SCHEMA_VERSION", "read_toml"]
