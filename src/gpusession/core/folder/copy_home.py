"""Whether a session folder is a copy home made by ``pull``, and where its deliverables copy lies (S4, S10).

``pull`` writes :data:`COPY_HOME_TOML` into the copy; :func:`gpusession.core.folder.approvals.deliverables_folder`
and the count's cache key (:mod:`gpusession.core.money.count_cache`) read it. Standard library and
the light file readers only: ``status --format tmux`` reads it every few seconds.
"""

from __future__ import annotations

from pathlib import Path

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import loads_toml, read_toml_text
from gpusession.core.files.textio import quoted

#: The file ``pull`` writes into a copy home: where the pulled deliverables lie (S4, S10).
COPY_HOME_TOML = "copy-home.toml"


def copy_home_deliverables(session_folder: Path) -> Path | None:
    """The pulled copy of the deliverables when ``session_folder`` is a copy home, else ``None``.

    Read from :data:`COPY_HOME_TOML`: ``deliverables_copy``, the folder's name beside the
    session folder (``TO/NAME-deliverables``); ``deliverables_from``, the server's folder
    it copied (for people). Source: S4, S10. Why: the copy's ``approvals.toml`` names the
    server's folder; at home that path is absent or another folder, so the decisions are
    checked against the pulled copy, never that path.

    Raises:
        BadInput: the file does not read, or ``deliverables_copy`` is not a plain folder name.
    """
    path = Path(session_folder) / COPY_HOME_TOML
    if not path.is_file():
        return None
    name = loads_toml(read_toml_text(path), path).get("deliverables_copy")
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\0" in name):
        got = quoted(name) if isinstance(name, str) else repr(name)
        raise BadInput(f"expected the name of the deliverables copy beside the session folder, got {got}",
                       path=path, field="deliverables_copy")
    return Path(session_folder).parent / name


__all__ = ["COPY_HOME_TOML", "copy_home_deliverables"]
