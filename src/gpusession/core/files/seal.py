"""Seals of what gpusession vouches for (H-58) and of the caches it keeps for itself (H-47, H-78).

Two kinds, for two threats:

* A record the copy home must read (``checklist.toml``'s ``[verify_copy]`` and
  ``[retrieval]``) is sealed with a CRC-32 of its canonical JSON (:func:`seal_of`): any
  machine recomputes it, so it tells an edit, never a forger; the reader re-derives
  what it can (the manifest named must exist with the SHA-256 the record keeps, H-78).
* A cache only this user's gpusession reads (``count-cache.json``, ``summary.json``'s
  check, ``journal-state.json``, ``status-files.json``) is sealed with HMAC-SHA256 under
  a per-user secret (:func:`keyed_seal`): 32 random bytes kept 0600 in
  ``$XDG_STATE_HOME/gpusession/seal.key`` (default ``~/.local/state``), made at first use
  in a folder made 0700. A cache written by another user, copied from another machine or
  edited by hand (its seal recomputed from the public code included) reads as absent and
  is counted anew. Where the key cannot be kept (a read-only home), the process seals
  with a key of its own: its caches are then trusted by nobody after it (counted anew).

Standard library only (``hmac``/``hashlib``: ``status`` runs every few seconds from tmux).
"""

from __future__ import annotations

import binascii
import hmac
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
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


#: The file under ``$XDG_STATE_HOME/gpusession/`` that keeps this user's sealing key.
KEY_FILE = "seal.key"
#: The key's length (bytes).
KEY_BYTES = 32
#: The keys this process sealed with, by key file (:func:`user_key`): read or made once each.
_KEYS: dict[str, bytes] = {}


def key_path() -> Path:
    """``$XDG_STATE_HOME/gpusession/seal.key`` (default ``~/.local/state/gpusession/seal.key``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "gpusession" / KEY_FILE


def _private_folder(folder: Path) -> bool:
    """Make ``folder`` (and missing parents) 0700 where absent; whether it is this user's and nobody else's."""
    missing = []
    p = folder
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
            os.chmod(d, 0o700)  # whatever the umask
        except FileExistsError:
            continue
        except OSError:
            return False
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _read_key(path: Path) -> bytes | None:
    """The key at ``path`` when it is this user's plain file, 0600 or stricter, of :data:`KEY_BYTES`; else ``None``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 \
                or st.st_size != KEY_BYTES:
            return None
        data = os.read(fd, KEY_BYTES + 1)
        return data if len(data) == KEY_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _make_key(path: Path) -> bytes | None:
    """A new key written at ``path`` (0600, never over another: a race reads the winner's); ``None`` when refused."""
    import secrets  # its random module only where a key is made: not on status's every call

    key = secrets.token_bytes(KEY_BYTES)
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return None
    try:
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            return _read_key(path)
        return key
    except OSError:
        return None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def user_key() -> bytes:
    """This user's sealing key: read from :func:`key_path`, made there when absent (H-78).

    A key file that is not this user's plain 0600 file of :data:`KEY_BYTES` bytes (a
    link, another owner, readable by others) is never used: it is replaced by a new key;
    a folder that is not this user's alone, or a disk that refuses, gives a key of this
    process only (its caches are counted anew by the next process). Read once per process
    and key file (a test's ``$XDG_STATE_HOME`` is its own).
    """
    path = key_path()
    known = _KEYS.get(str(path))
    if known is not None:
        return known
    key = None
    if _private_folder(path.parent):
        key = _read_key(path)
        if key is None:
            if os.path.lexists(path):
                try:
                    os.unlink(path)  # unfit (a link, another owner's mode): a new key replaces it
                except OSError:
                    pass
            key = _make_key(path)
    _KEYS[str(path)] = key if key is not None else os.urandom(KEY_BYTES)  # this process's own
    return _KEYS[str(path)]


def keyed_seal(canon: bytes) -> str:
    """``hmac-sha256:<64 hex>`` of ``canon`` under :func:`user_key` (H-78).

    Source: H-47, H-78. Why: an unkeyed checksum of a cache (a CRC-32) was recomputed
    from the public code, and ``status`` then said a count ``show`` did not.
    """
    return "hmac-sha256:" + hmac.new(user_key(), canon, "sha256").hexdigest()


def keyed_seal_holds(seal: object, canon: bytes) -> bool:
    """Whether ``seal`` is :func:`keyed_seal` of ``canon`` (compared in constant time)."""
    return isinstance(seal, str) and hmac.compare_digest(seal, keyed_seal(canon))


__all__ = ["KEY_BYTES", "KEY_FILE", "SEAL_KEY", "is_sealed", "key_path", "keyed_seal", "keyed_seal_holds", "seal_of",
           "sealed", "user_key"]
