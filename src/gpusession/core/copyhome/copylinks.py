r"""Symbolic links in a copy that point outside it: never a silent VERIFIED (H-43).

rsync copies a link as a link: a server's session folder holding ``etc_link -> /etc``
arrives home as a link to the home machine's ``/etc``, and the manifest (which never
follows a link out of the folder) does not list it, so the pull said VERIFIED. Every
link under a copied folder is found here (without following any), and one whose target
resolves outside that folder -- absolute, ``../`` out, or broken -- makes the pull
NOT VERIFIED, named in its verdict (escaped: a name from the server may hold a newline
or ``ESC``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gpusession.core.files.textio import printable


@dataclass(frozen=True)
class CopyLink:
    """One symbolic link found in a copy: its path (relative), its target as written, whether it stays inside."""

    path: str
    target: str
    inside: bool


def links_in(folder: Path) -> list[CopyLink]:
    """Every symbolic link under ``folder`` (none followed), sorted by path; ``[]`` when it is absent."""
    root = Path(folder)
    if not root.is_dir() or root.is_symlink():
        return []
    real_root = os.path.realpath(root)
    found: list[CopyLink] = []
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = Path(here) / name
            if not p.is_symlink():
                continue
            found.append(link_at(str(p), p.relative_to(root).as_posix(), real_root))
    return sorted(found, key=lambda c: c.path)


def link_at(path: str, rel: str, real_root: str) -> CopyLink:
    """The :class:`CopyLink` of the link at ``path`` (``rel`` below the folder whose real path is ``real_root``).

    Inside: it resolves to that folder or below it, and to something that exists (a broken
    link or one out of the folder is outside, H-43). Never raises: an unreadable target is ``?``.
    """
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    real = os.path.realpath(path)
    inside = (real == real_root or real.startswith(real_root + os.sep)) and os.path.exists(real)
    return CopyLink(rel, target, inside)


def outside_reason(folders: dict[str, Path | None], *,
                   found: dict[str, list[CopyLink]] | None = None) -> str | None:
    """The verdict's words for links pointing outside the copied folders, else ``None``.

    Args:
        folders: ``{"session copy": path, "deliverables copy": path or None}``.
        found: the links of some of these folders, by the same key, already found by a
            walk of the caller's (:func:`gpusession.core.copyhome.pull_record.stat_tree`):
            a folder of a large session is walked once per pull, not once per question.

    Returns:
        ``"the session copy holds 1 link pointing outside it (etc_link -> /etc): remove
        it on the server and pull again"`` (names escaped, at most three named).
    """
    parts = []
    for what, folder in folders.items():
        known = (found or {}).get(what)
        links = known if known is not None else links_in(folder) if folder is not None else []
        out = [c for c in links if not c.inside] if folder is not None else []
        if out:
            named = ", ".join(f"{printable(c.path, keep='')} -> {printable(c.target, keep='')}"
                              for c in out[:3]) + (", …" if len(out) > 3 else "")
            parts.append(f"the {what} holds {len(out)} link(s) pointing outside it ({named}); "
                         "a link is never followed or trusted: remove it on the server and pull again")
    return "; ".join(parts) or None


__all__ = ["CopyLink", "link_at", "links_in", "outside_reason"]
