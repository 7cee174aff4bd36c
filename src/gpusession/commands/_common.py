"""Helpers shared by the subcommand modules."""

from __future__ import annotations

import sys
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.core.files.errors import BadInput, shown_field
from gpusession.core.files.textio import json_safe
from gpusession.core.folder.root import chosen_sessions_root, elsewhere_words, remember_sessions_dir
from gpusession.core.folder.session import Session, validate_name
from gpusession.core.money.window import local_str, short_timedelta

if TYPE_CHECKING:  # annotations only: `gpusession NAME` reads its words without argparse (cli.open_words)
    import argparse


def root_of(args: argparse.Namespace) -> Path:
    """The sessions root, by the rule ``status`` uses (one rule for every command).

    ``--sessions-dir``, else ``$GPUSESSION_HOME``, else ``./sessions`` when it exists,
    else the folder used last (:func:`chosen_sessions_root`), so ``show NAME`` finds
    from ``/tmp`` what ``status`` finds.

    Raises:
        BadInput: the root exists and is not a folder (``--sessions-dir /etc/passwd``):
            "not a folder", exit 2, rather than "no sessions in …".
    """
    return _root_and_why(args)[0]


def _root_and_why(args: argparse.Namespace) -> tuple[Path, str]:
    root, why = chosen_sessions_root(getattr(args, "sessions_dir", None))
    if root.exists() and not root.is_dir():
        raise BadInput("not a folder; the sessions root (--sessions-dir or GPUSESSION_HOME) "
                       "must be the folder that holds the session folders", path=root)
    return root, why


def session_root(args: argparse.Namespace, name: str) -> Path:
    """The sessions folder holding session ``name``, by the one rule (:func:`root_of`).

    Raises:
        BadInput: an unsafe name, or no such session: "no session 'x' in DIR (the
            sessions folder from ./sessions of the current folder; name another with
            --sessions-dir DIR or $GPUSESSION_HOME)".
    """
    root, why = _root_and_why(args)
    validate_name(name)
    folder = root / name
    if not folder.is_dir() and not folder.is_symlink():
        # a folder that is not there is said as such, not as a folder searched
        fallback = why.startswith("./sessions")  # nothing given, nothing remembered
        shown_root = shown_field(str(root))  # masked as BadInput's path (H-46)
        where = (f"in {shown_root} ({_found_as(why)}" if root.is_dir()
                 else f"here: the sessions folder {shown_root} does not exist ({_chosen_as(why)}"
                      + (", as no command here has used one yet" if fallback else ""))
        elsewhere = elsewhere_words(name, root)  # the folder used last holds it (H-67)
        if elsewhere:
            raise BadInput(f"no session {name!r} {where}){elsewhere}")
        raise BadInput(f"no session {name!r} {where}; name another with --sessions-dir DIR or "
                       "$GPUSESSION_HOME)")
    return root


def _names_the_folder(why: str) -> bool:
    """Whether ``why`` is itself a name of the folder (``the sessions folder used last``).

    Such words are said as they are; the others (``--sessions-dir``, ``$GPUSESSION_HOME``,
    ``./sessions of the current folder``) say where the folder came from.
    """
    return why.startswith("the ")


def _found_as(why: str) -> str:
    """``the sessions folder from --sessions-dir``; ``the sessions folder used last`` as is.

    One name of the folder in the sentence, never "the sessions folder from the sessions
    folder used last" (S12: a name not found says which folder was read and why).
    """
    return why if _names_the_folder(why) else f"the sessions folder from {why}"


def _chosen_as(why: str) -> str:
    """``chosen from --sessions-dir``; ``chosen as the sessions folder used last`` (S12)."""
    return f"chosen as {why}" if _names_the_folder(why) else f"chosen from {why}"


def open_session(args: argparse.Namespace, name: str) -> Session:
    """Open session ``name`` under the root chosen by the arguments.

    What the open recovered after a crash (a cut CSV row moved aside, a run in flight
    recorded as an incident) is said on stderr, so no command shows fewer rows silently.

    Args:
        args: the parsed arguments (``--sessions-dir``).
        name: the session's name.

    Returns:
        The open session.
    """
    session = Session.open(session_root(args, name), name)
    remember_sessions_dir(session.folder.parent)  # `status` from any folder
    for sentence in session.recovered:
        print(f"gpusession: {name}: recovered after an interruption: {sentence}", file=sys.stderr)
    for warning in session.hidden.get("session.toml", ()):  # a pasted secret
        print(f"warning: {warning}", file=sys.stderr)
    return session


def keep_count(folder: Path, session: Session | None = None) -> bool:
    """Count the deliverables and keep the count for ``status`` when it would say ``? charts`` (S10, A5).

    Source: S10, A5. Why: ``verify-copy`` or ``pull`` into a copy home left ``status``
    saying "? charts (not counted yet)" until ``cost``: the copy's count cache is the
    server's (sealed under its user's key, its files' change times new), read as absent.
    Only when :func:`gpusession.core.money.count_cache.status_count` says the count is not
    known (not counted yet, or files changed since): a kept count that holds, or a
    session counting accepted corpora (``status`` counts them itself), costs one read of
    the cache. A cache only: a session that does not open is left as it is.

    Args:
        folder: the session folder.
        session: the session when the caller has it open (else opened here without
            recovery: a copy home is never written but for its caches).

    Returns:
        Whether the deliverables were counted.
    """
    from gpusession.core.money.count_cache import status_count

    folder = Path(folder)
    try:
        said = status_count(folder)
    except (OSError, BadInput, ValueError):
        return False
    if said is None or (said.get("source") is not None and not said.get("stale")):
        return False
    from gpusession.core.money.count import session_count

    try:
        session_count(session or Session.open(folder.parent, folder.name, recover=False, check_files=False),
                      cache=True)
    except (BadInput, OSError):
        return False  # `show` and `cost` count again, and say why when they cannot
    return True


def _default(o: Any) -> Any:
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    if isinstance(o, timedelta):
        return o.total_seconds()
    if isinstance(o, Decimal):
        return str(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def print_json(data: Any, key: str | None = None) -> None:
    """Print ``data`` as indented JSON (datetimes ISO 8601, Decimals as strings).

    Every document carries ``schema_version`` (the one contract, ``docs/json/``): a dict
    gets it first; a list is wrapped as ``{"schema_version": 1, key: [...]}``.
    """
    from gpusession.core.retrieval.json_contract import versioned

    if isinstance(data, list):
        data = {key or "items": data}
    data = versioned(data) if isinstance(data, dict) else data
    from gpusession.core.retrieval.json_contract import json_text

    text = json_text(_masked(data), default=_default, indent=2)
    sys.stdout.write(json_safe(text))
    sys.stdout.write("\n")


def _masked(value: Any, key: str = "") -> Any:
    """``value`` with every secret in its texts (keys too) hidden, item by item (H-46).

    A string under a digest key (``sha256``, ``*_revision``, ``digests``) keeps its hex
    digits, as :func:`gpusession.core.files.secrets.mask_record` keeps them (H-60): a
    SHA-256 is what the person checks a file by, never a private key; a 64-hex value
    under any other key is still hidden.
    """
    if isinstance(value, str):
        from gpusession.core.files.secretgate import may_hold_secret

        if not may_hold_secret(value):
            return value
        from gpusession.core.files.secrets import is_digest_key, mask_text

        return mask_text(value, digest=is_digest_key(key))[0]
    if isinstance(value, dict):
        return {_masked(k): _masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(v, key) for v in value]
    return value




def format_timedelta(td: timedelta | None) -> str:
    """``2d 03h 15m`` / ``3h 05m`` (or ``ended … ago``); ``not set`` for ``None`` (S6)."""
    return short_timedelta(td)


def local_time(dt: datetime | None) -> str:
    """An aware datetime shown in the user's local time zone, with its offset (S6)."""
    return local_str(dt)
