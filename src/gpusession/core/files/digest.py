"""The one SHA-256 of a file's bytes, read in chunks (memory stays flat).

Who calls it: manifests (:mod:`gpusession.core.retrieval.manifest`, S4), the corpus revision of a
validated run (:mod:`gpusession.bench.run_validation`, ``gpusession validate``) and the
demo corpus and model files (:mod:`gpusession.bench.workloads.bbc_corpus`,
:mod:`gpusession.bench.workloads.bbc_news`). Standard library only: a worker process
may import it without polars.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK_BYTES = 1024 * 1024


def sha256_file(path: Path, chunk_bytes: int = CHUNK_BYTES) -> str:
    """SHA-256 of a file's bytes.

    Args:
        path: The file to hash.
        chunk_bytes: Bytes read per step (1 MiB by default); the digest does not
            depend on it.

    Returns:
        The digest as 64 lower-case hex digits.

    Raises:
        OSError: The file cannot be opened or read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk_bytes)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data: bytes | bytearray | memoryview) -> str:
    """SHA-256 of bytes already read (a run's output as validated).

    Why: the digest of exactly what was checked, without reading the file a second
    time; hashlib walks the buffer in place, so a 1 GB output costs no extra memory.

    Returns:
        The digest as 64 lower-case hex digits.
    """
    return hashlib.sha256(data).hexdigest()
