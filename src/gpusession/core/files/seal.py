"""The seal of a record gpusession vouches for, in a file a person may edit (H-58, A4).

Why: ``checklist.toml``'s ``[verify_copy]`` and ``[retrieval]`` tables say the copy home
was verified; a hand-made table said it for a manifest that did not exist, and
``status`` and the report believed it. The writer seals what it records (a CRC-32 of the
record's canonical JSON, as the count caches are sealed, H-47); a reader vouches only for
a record whose seal holds, and says any other as the person's own entry. The threat is an
edit, not a forger, so a CRC (standard library, no OpenSSL start-up) does.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping
from typing import Any

#: The key a sealed record keeps its seal under.
SEAL_KEY = "seal"


def seal_of(record: Mapping[str, Any]) -> str:
    """``crc32:…`` of the record's fields but the seal (``None`` values left out, as TOML drops them)."""
    canon = json.dumps({k: v for k, v in record.items() if k != SEAL_KEY and v is not None},
                       sort_keys=True, ensure_ascii=False, default=str)
    return f"crc32:{binascii.crc32(canon.encode('utf-8')):08x}"


def sealed(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record, ``None`` values left out, with its seal."""
    out = {k: v for k, v in record.items() if v is not None and k != SEAL_KEY}
    out[SEAL_KEY] = seal_of(out)
    return out


def is_sealed(table: object) -> bool:
    """Whether ``table`` is a record gpusession wrote and nobody changed since."""
    return isinstance(table, Mapping) and table.get(SEAL_KEY) == seal_of(table)


__all__ = ["SEAL_KEY", "is_sealed", "seal_of", "sealed"]
