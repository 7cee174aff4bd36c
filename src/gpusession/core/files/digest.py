"""The one SHA-256 of a file's bytes, read in chunks (memory stays flat).

Who calls it: manifests (:mod:`gpusession.core.copyhome.manifest`, S4), the corpus revision of a
validated run (:mod:`gpusession.bench.run_validation`, ``gpusession validate``) and the
demo corpus and model files (:mod:`gpusession.bench.workloads.bbc_corpus`,
:mod:`gpusession.bench.workloads.bbc_news`). Standard library only: a worker process
may import it without polars.
"""

from __future__ import annotations

import hashlib
import os
import stat
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


def sha256_plain(path: Path, *, inside: Path | None = None, chunk_bytes: int = CHUNK_BYTES) -> str | None:
    """SHA-256 of ``path`` when it is a regular file (inside ``inside``), else ``None``; never waits.

    Source: H-52. Why: an output may hold a FIFO (opening it waits for a writer), a link
    to ``/dev/zero`` (it never ends) or a link out of the folder (``/etc/hostname``):
    none is a deliverable, and none may hang a run or be counted. Every link on the way
    is resolved and the result checked inside ``inside``; the file itself is opened
    without following a link and without waiting (``O_NOFOLLOW | O_NONBLOCK``), and
    checked to be a regular file (``fstat``) before a byte is read.

    Args:
        path: the file.
        inside: the folder it must lie in once every link is resolved (``None``: any).
        chunk_bytes: bytes read per step.

    Returns:
        The digest, or ``None`` for anything else (named by the caller, never counted).
    """
    if inside is not None:
        real, root = os.path.realpath(path), os.path.realpath(inside)
        if not real.startswith(root.rstrip(os.sep) + os.sep):
            return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # a link (ELOOP), gone, unreadable
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.sha256()
        while block := fh.read(chunk_bytes):
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
