"""Copy home only the files the manifest lists, and name those left on the server (S4, S9; seed 003 §8).

Why: a deliverables folder also holds what a person rejected, or changed after approving
it; ``gpusession manifest`` lists the approved files only, so a copy of the whole folder
could never match it. A pull with a manifest therefore hands rsync the manifest's paths
(``--files-from``, NUL-separated, ``--ignore-missing-args`` so that a listed file gone
from the server is reported MISSING by the check, not as a failed transfer), and lists
the server's folder (``rsync --list-only``, nothing copied) to name in one line what it
left there.

Who calls it: :func:`gpusession.core.copyhome.pull.pull` (the rsync calls themselves
live there, with the pull's ssh and options). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from gpusession.core.copyhome.manifest import MANIFEST_IN_DELIVERABLES, ManifestEntry

#: The list of paths handed to rsync, in the pull's work folder (removed with it).
FILES_FROM = "files-from.bin"
#: How many names the one line about files left on the server shows before "and N more".
SHOWN_NAMES = 5

#: One line of ``rsync --list-only`` (``LC_ALL=C``): mode, size, date, time, then the name.
_LIST_LINE = re.compile(rb"^([-dlpscb][-rwxsStTl]{9}\S*)\s+[\d,.]+\s+\d{4}/\d\d/\d\d\s+\d\d:\d\d:\d\d\s(.+)$")
#: rsync writes a byte it will not print as ``\#ooo`` (octal); ``\`` before ``#`` as ``\#134``.
_ESCAPED = re.compile(rb"\\#([0-7]{3})")


def write_files_from(entries: Iterable[ManifestEntry], work: Path) -> Path:
    """Write the manifest's paths for ``rsync --files-from --from0`` into ``work``.

    The manifest's own copy at the top of the folder (``manifest.csv``, written by
    ``manifest --also-in-deliverables``) is asked for too, so the copy home carries it
    as a plain copy would; it is never a deliverable (:func:`verify_copy` leaves it out).

    Args:
        entries: the manifest's entries (paths relative to the deliverables folder, ``/``).
        work: a folder of the pull's own (created when absent).

    Returns:
        The list file: each path NUL-terminated, so a name holding a newline stays whole.
    """
    names = dict.fromkeys([*(e.path for e in entries), MANIFEST_IN_DELIVERABLES])
    work.mkdir(parents=True, exist_ok=True)
    listing = work / FILES_FROM
    listing.write_bytes(b"".join(n.encode("utf-8", "surrogateescape") + b"\0" for n in names))
    return listing


def files_from_options(listing: Path) -> tuple[str, ...]:
    """The rsync options that copy only the files of ``listing`` (:func:`write_files_from`)."""
    return (f"--files-from={listing}", "--from0", "--ignore-missing-args")


def parse_list_only(output: bytes) -> list[str]:
    r"""The files (and links) of an ``rsync -r --list-only FOLDER/`` listing, relative to the folder.

    Folders, devices and the folder itself (``.``) are left out; a name rsync escaped
    (``new\#012line.txt``, ``\#303\#251.png``) is read back to its bytes, then UTF-8.

    Args:
        output: rsync's stdout under ``LC_ALL=C``.

    Returns:
        The names, sorted; a link's name without its `` -> target``.
    """
    names: list[str] = []
    for raw in output.split(b"\n"):
        m = _LIST_LINE.match(raw.rstrip(b"\r"))
        if m is None or m.group(1)[:1] not in (b"-", b"l"):
            continue
        name = m.group(2)
        if m.group(1)[:1] == b"l":
            name = name.split(b" -> ", 1)[0]
        data = _ESCAPED.sub(lambda e: bytes([int(e.group(1), 8)]), name)
        names.append(data.decode("utf-8", "surrogateescape"))
    return sorted(names)


def left_on_server(server_files: Iterable[str], listed: Iterable[str]) -> list[str]:
    """The server's files the manifest does not list: left there by a pull (S9).

    The manifest's own copy at the top of the folder is no deliverable and is not named.

    Args:
        server_files: the folder's files on the server (:func:`parse_list_only`).
        listed: the manifest's paths.

    Returns:
        The names, sorted.
    """
    wanted = set(listed)
    return sorted(n for n in server_files if n not in wanted and n != MANIFEST_IN_DELIVERABLES)


def left_words(left: list[str], *, shown: int = SHOWN_NAMES) -> str:
    """One line naming what a pull left on the server: the first ``shown`` names, then "and N more".

    Args:
        left: the names (:func:`left_on_server`), not empty.
        shown: how many names the line gives.

    Returns:
        ``2 files not approved were left on the server: a.png, b.png``.
    """
    n = len(left)
    names = ", ".join(left[:shown]) + (f" and {n - shown} more" if n > shown else "")
    if n == 1:
        return f"1 file not approved was left on the server: {names}"
    return f"{n} files not approved were left on the server: {names}"


__all__ = [
    "FILES_FROM",
    "SHOWN_NAMES",
    "files_from_options",
    "left_on_server",
    "left_words",
    "parse_list_only",
    "write_files_from",
]
