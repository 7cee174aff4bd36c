"""Which sessions folder a command uses, and which session ``status`` reads when none is named (S6, S12).

Why it exists: one rule for every command (``--sessions-dir``, else ``$GPUSESSION_HOME``,
else ``./sessions`` when it exists, else the folder used last), so ``show NAME`` from
``/tmp`` finds what ``status`` finds, and tmux's ``status-right`` works whatever folder
the pane is in. Light on purpose: ``status --format tmux`` loads it every few seconds, so
it imports the standard library, the file names and the state-file test only (no session,
no TOML), and looks at folders with ``stat`` calls alone.

Who calls it: :mod:`gpusession.commands._common` (``root_of``, ``session_root``),
:mod:`gpusession.commands.status_cmd`, and the commands that open a session
(``remember_sessions_dir``: ``show``, ``run``, ``new``, the TUI).
"""

from __future__ import annotations

import os
from pathlib import Path

from gpusession.core.files.errors import shown_field
from gpusession.core.files.names import ENV_HOME, SESSION_TOML
from gpusession.core.folder.caches import is_state_file

#: The small file remembering the sessions folder of the session used last.
LAST_SESSIONS_DIR = "last-sessions-dir"


def state_file() -> Path:
    """``$XDG_STATE_HOME/gpusession/last-sessions-dir`` (default ``~/.local/state/…``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "gpusession" / LAST_SESSIONS_DIR


def remember_sessions_dir(root: Path) -> None:
    """Remember ``root`` as the sessions folder used last, for ``status`` from anywhere.

    Called by the commands that open or create a session (``show``, ``run``, ``new``,
    the TUI…). One line, the absolute path, written only when it changes (replaced
    whole, never half-written). A failure to write is ignored: it is a convenience.

    Args:
        root: the sessions folder (the parent of session folders).
    """
    try:
        target = state_file()
        text = f"{Path(root).absolute()}\n"
        try:
            if target.read_text(encoding="utf-8") == text:
                return
        except (OSError, UnicodeDecodeError):
            pass
        _private_dirs(target.parent)
        tmp = target.with_name(f".{LAST_SESSIONS_DIR}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fd, 0o600)  # whatever the umask: another user reads no path of yours
            fh.write(text)
        os.replace(tmp, target)
    except OSError:
        pass


def _private_dirs(folder: Path) -> None:
    """Create ``folder`` and each missing parent mode 0700, whatever the umask (``umask 000``)."""
    missing = []
    p = folder
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue
        os.chmod(d, 0o700)  # set explicitly: under umask 000 mkdir's mode would leave it 0777


def remembered_sessions_dir() -> Path | None:
    """The sessions folder :func:`remember_sessions_dir` wrote, if it still is a folder."""
    try:
        text = state_file().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    path = Path(text)
    return path if text and path.is_absolute() and path.is_dir() else None


def elsewhere_words(name: str, root: Path) -> str:
    """Where session ``name`` is when the folder read lacks it: the folder used last (S12, H-67).

    Why: from a folder with its own ``./sessions``, ``show NAME`` reads that folder, and a
    session kept in the sessions folder used last was said "no session" with no word of
    where it is. Only ``stat`` calls.

    Returns:
        ``"; there is one in /srv/sessions (the sessions folder used last): use
        --sessions-dir /srv/sessions"``, or ``""`` when that folder is ``root``, holds no
        such session, or none is remembered.
    """
    last = remembered_sessions_dir()
    if last is None:
        return ""
    try:
        folder = last / name
        if (os.path.samefile(last, root) if os.path.isdir(root) else False) or folder.is_symlink() \
                or not (folder / SESSION_TOML).is_file():
            return ""
    except (OSError, ValueError):  # a name the file system refuses: nothing found
        return ""
    where = shown_field(str(last))  # masked as every path of a refusal (H-46)
    return f"; there is one in {where} (the sessions folder used last): use --sessions-dir {where}"


def status_root(cli_value: str | Path | None = None) -> Path:
    """The sessions folder ``status`` reads: the usual choice, then the one used last.

    ``--sessions-dir``, else ``$GPUSESSION_HOME``, else ``./sessions`` when it exists,
    else the folder remembered by :func:`remember_sessions_dir` (so tmux's ``status-right``
    works whatever folder the pane is in), else ``./sessions`` (the error names it).
    """
    return chosen_sessions_root(cli_value)[0]


def chosen_sessions_root(cli_value: str | Path | None = None) -> tuple[Path, str]:
    """The sessions folder every command uses, and why it was chosen (words for an error).

    One rule for all commands, as :func:`status_root` says; the words let "no session
    'x' in …" say where the folder came from and how to name another.

    Returns:
        ``(folder, words)``, e.g. ``(Path('/tmp/sessions'), './sessions of the current
        folder')``. The folder may not exist (``new`` creates it).
    """
    if cli_value:
        return Path(cli_value), "--sessions-dir"
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env), f"${ENV_HOME}"
    here = Path.cwd() / "sessions"
    if here.is_dir():
        return here, "./sessions of the current folder"
    last = remembered_sessions_dir()
    if last is not None:
        return last, "the sessions folder used last"
    return here, "./sessions of the current folder"


def most_recent_session(root: Path) -> str | None:
    """The session folder under ``root`` used most recently (newest file at its top), cheaply.

    Only ``stat`` calls: nothing is opened (the TUI's choice, :func:`gpusession.core.folder.session.most_recent`, opens
    every session). The state files ``status`` itself writes
    (:data:`gpusession.core.folder.caches.STATE_FILES`) are no sign of use: a ``status``
    of an older session never makes it the most recent.
    """
    best: tuple[float, str] | None = None
    try:
        entries = list(os.scandir(root))
    except OSError:
        return None
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False) or not os.path.isfile(os.path.join(entry.path, SESSION_TOML)):
            continue
        try:
            mtime = max(
                (e.stat().st_mtime for e in os.scandir(entry.path)
                 if e.is_file() and not is_state_file(e.name)),  # status's own state: no use of the session
                default=entry.stat().st_mtime,
            )
        except OSError:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, entry.name)
    return best[1] if best else None
