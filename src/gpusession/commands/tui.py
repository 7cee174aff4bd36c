"""``gpusession [NAME]`` / ``gpusession open NAME``: the TUI.

With no session yet, a person at a terminal is offered to create one (name, GPU, lots,
days); a script (stdin not a terminal) gets one line saying how, and exit code 1.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from gpusession.commands._common import root_of, session_root
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.folder.package import PACKAGE_DAYS, Package
from gpusession.core.folder.session import Session, most_recent

if TYPE_CHECKING:  # annotations only: `gpusession NAME` reads its words without argparse (cli.open_words)
    import argparse


def _ask(prompt: str, default: str) -> str:
    answer = input(f"{prompt} [{default}]: ").strip()
    return answer or default


def offer_new_session(root: Any) -> Session | None:
    """Ask, at a terminal, for a new session's name and package, and create it.

    Args:
        root: The sessions root folder.

    Returns:
        The new session (package start: now), or ``None`` if the person declined.

    Raises:
        BadInput: An unsafe or existing name, lots that are not a whole number ≥ 1,
            days not 3, 7 or 30.
        EOFError: stdin closed while asking.
    """
    print(f"No session in {root} yet.")
    if _ask("Create one now? (y/n)", "y").lower() not in ("y", "yes"):
        return None
    name = _ask("Session name (the test's fixed name)", f"session-{utcnow():%Y%m%d}")
    gpu = _ask("GPU model as ordered", "RTX A5000")
    lots_text = _ask("Lots", "1")
    days_text = _ask("Package days (3, 7 or 30)", "7")
    try:
        lots = int(lots_text)
    except ValueError:
        raise BadInput(f"expected a whole number of lots ≥ 1, got {shown(lots_text)}", field="lots") from None
    if days_text not in {str(d) for d in PACKAGE_DAYS}:
        raise BadInput(f"expected 3, 7 or 30 days, got {shown(days_text)}", field="days")
    pkg = Package(gpu_model=gpu, lots=lots, days=int(days_text), start=utcnow())
    session = Session.create(root, name, package=pkg)
    print(f"created session {session.name} in {session.folder} (package start: now; "
          f"change it with `gpusession package {session.name} --start ISO8601`)")
    return session


def cmd_open(args: argparse.Namespace) -> int:
    """Open the TUI on session ``NAME``, or on the most recently changed session.

    With no session yet, a person at a terminal is offered to create one; a script
    (stdin or stdout not a terminal) gets one line on stderr saying how.

    Args:
        args: Parsed arguments: ``name`` (optional), ``sessions_dir``.

    Returns:
        The TUI's exit code; 1 when there is no session and none was created.

    Raises:
        BadInput: No such session, an unreadable ``session.toml``, or an answer to the
            new-session questions that is not usable.
    """
    root = root_of(args)
    name = args.name or most_recent(root)
    if name is None:
        session = None
        if sys.stdin.isatty() and sys.stdout.isatty():
            try:
                session = offer_new_session(root)
            except EOFError:
                session = None
        if session is None:
            print(
                f"no session in {root} yet. Create one with `gpusession new NAME --gpu MODEL "
                "--lots N --days 7`, or try `gpusession demo`.",
                file=sys.stderr,
            )
            return 1
    else:  # a bad order/checklist/results file is said in its pane
        if args.name:  # a name not found says which folder was read, and why that one
            session_root(args, name)
        session = Session.open(root, name, check_files=False)
    from gpusession.core.folder.root import remember_sessions_dir
    from gpusession.ui.app import run_app

    remember_sessions_dir(session.folder.parent)  # `status` from any folder

    return run_app(session)
