"""The rule every command applies to a session's name, light enough for ``gpusession status``.

Why it exists: ``status`` (tmux calls it every few seconds) cannot import the session
module (it loads polars), yet must refuse the names every other command refuses, in the
same words: a name longer than the file system allows, or holding a path separator
(``c1/``, ``../c1``), is refused before any path is built from it. Who calls it:
:func:`gpusession.core.folder.session.validate_name` (every command that opens or creates
a session, ``check-host``) and :func:`gpusession.commands.status_cmd.cmd_status`.

The secret check comes first (no refusal may quote a secret-looking name), but the
detectors (:mod:`gpusession.core.files.secrets`) are imported only for a name that could
hold one (:func:`gpusession.core.files.secretgate.may_hold_secret`), so ``status --format
tmux`` (every few seconds) reads a name at the cost of a few string tests.
"""

from __future__ import annotations

import re

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secretgate import may_hold_secret

#: The longest session name (characters): its folder name must fit every file system.
NAME_MAX = 100
#: The characters of a session name: ASCII letters, digits, ``.``, ``_``, ``-``.
NAME_RE = re.compile(r"[A-Za-z0-9._-]+")


def check_name_secret(name: str) -> None:
    """The first check of a session name: no secret, no format character (never quoted).

    Raises:
        BadInput: as :func:`gpusession.core.files.secrets.check_identifier`, field ``name``.
    """
    if may_hold_secret(name):  # else no detector can refuse it: they are not even imported
        from gpusession.core.files.secrets import check_identifier

        check_identifier(name, field="name", what="the session name")


def check_name(name: str) -> str:
    r"""Refuse a session name that is not a safe slug; the checks common to every command.

    Args:
        name: the session name as typed (its folder's name).

    Returns:
        ``name`` unchanged.

    Raises:
        BadInput: a secret or an invisible character (never quoted), empty, longer than
            :data:`NAME_MAX` characters, holding ``/`` or ``\\``, ``..`` or being ``.``,
            or starting with ``-``; one line, field ``name``, the name shown by ``repr``
            (its controls escaped).
    """
    # first: no later refusal (nor a path naming the folder) may quote a secret
    check_name_secret(name)
    if not name:
        raise BadInput("session name is empty; use ASCII letters (A-Z, a-z), digits, '.', '_' or '-'",
                       field="name")
    if len(name) > NAME_MAX:
        raise BadInput(f"session name is {len(name)} characters long; at most {NAME_MAX}", field="name")
    if "/" in name or "\\" in name:
        raise BadInput(f"session name {name!r} contains a path separator", field="name")
    if ".." in name or name == ".":
        raise BadInput(f"session name {name!r} contains '..' or is '.'", field="name")
    if name.startswith("-"):
        raise BadInput(f"session name {name!r} starts with '-'", field="name")
    return name


def check_characters(name: str) -> None:
    """Refuse a character outside :data:`NAME_RE` (after :func:`check_name`'s checks).

    Raises:
        BadInput: naming the characters (``repr``: controls escaped) and the allowed ones.
    """
    if not NAME_RE.fullmatch(name):  # fullmatch: "$" would let a final newline through
        bad = sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9._-]", c)})
        raise BadInput(
            f"session name {name!r} contains {''.join(bad)!r}; use ASCII letters (A-Z, a-z), digits, "
            "'.', '_' or '-'",
            field="name",
        )


__all__ = ["NAME_MAX", "NAME_RE", "check_characters", "check_name", "check_name_secret"]
