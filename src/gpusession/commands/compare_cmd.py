"""``compare`` and ``export``: sessions side by side (D6), a session's warm runs for hyperfine.

Examples::

    gpusession compare l40s-3d a5000-7d
    gpusession compare ~/copies/l40s-3d ~/copies/a5000-7d --allow-different --json
    gpusession export a5000-7d --format hyperfine-json --output a5000.json
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from gpusession.commands._common import open_session, print_json, root_of
from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import refuse_special
from gpusession.core.folder.session import Session
from gpusession.core.retrieval.json_contract import json_text as _json_text

#: Exit status of ``compare`` when the sessions did not run the same work and no
#: ``--allow-different`` was given: the table is printed, the ranking refused (D6).
NOT_RANKED_EXIT = 3


def open_any(args: argparse.Namespace, given: str) -> Session:
    """A session by name in the sessions folder, or by its folder (a pulled home copy).

    A folder (the argument holds a path separator, or names an existing folder that is
    not a session name under the root) is opened without recovery: a copy is read, never
    changed.

    Raises:
        BadInput: no such session or folder, or an unreadable session file.
    """
    path = Path(given).expanduser()
    looks_like_path = os.sep in given or "/" in given or given.startswith(("~", "."))
    if not looks_like_path and (root_of(args) / given).is_dir():
        return open_session(args, given)
    if looks_like_path or path.is_dir():
        path = path.resolve()
        if not (path / "session.toml").is_file():
            raise BadInput("not a session folder (no session.toml)", path=path)
        return Session.open(path.parent, path.name, recover=False)
    return open_session(args, given)


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the sessions side by side and rank them when they ran the same work (D6).

    Args:
        args: Parsed arguments: ``sessions``, ``allow_different``, ``rates``, ``json``.

    Returns:
        0 with a ranking (the same work, or ``--allow-different``); 3
        (:data:`NOT_RANKED_EXIT`) when the work differs: the table and what differs are
        printed, the ranking refused.

    Raises:
        BadInput: fewer than two sessions, no such session, an unreadable file.
    """
    from gpusession.core.retrieval.compare import compare_sessions

    if len(args.sessions) < 2:
        raise BadInput("give two or more sessions to compare (names or folders)", field="sessions")
    _page_path(args)  # a bad --html/--out pair is refused before anything is read
    sessions = [open_any(args, s) for s in args.sessions]
    comparison = compare_sessions(sessions, allow_different=args.allow_different,
                                  rates_path=Path(args.rates) if args.rates else None)
    if args.json:
        print_json(comparison.to_json())
    else:
        print("\n".join(comparison.lines()))
    page_path = _page_path(args)
    if page_path is not None:
        page = write_compare_page(comparison, page_path, sessions)
        if not args.json:
            print(f"wrote {page}")
    return 0 if comparison.ranked else NOT_RANKED_EXIT


def _page_path(args: argparse.Namespace) -> Path | None:
    """The HTML page ``compare`` writes: ``--html --out FILE`` (or the older ``--html FILE``).

    Raises:
        BadInput: ``--html`` without a file, ``--out`` without ``--html``, or both forms
            naming different files.
    """
    html, out = getattr(args, "html", None), getattr(args, "out", None)
    if html is None:
        if out:
            raise BadInput("--out names the comparison's HTML page: give --html --out FILE", field="--out")
        return None
    if html is True:
        if not out:
            raise BadInput("say where to write the page: --html --out FILE", field="--html")
        return Path(out)
    if out and Path(out) != Path(html):
        raise BadInput("--html FILE and --out FILE name two pages; give --html --out FILE", field="--out")
    return Path(str(html))


def write_compare_page(comparison: Any, path: Path, sessions: list[Any]) -> Path:
    """Write ``compare --html``: one self-contained page, mode 0600, never over a file (D6).

    Raises:
        BadInput: ``path`` exists (nothing replaced), is a link, or lies in one of the
            compared session folders (session data is never written by a comparison).
    """
    from gpusession.core.files.tomlio import write_atomic_bytes
    from gpusession.core.retrieval.compare import cost_chart_svg
    from gpusession.core.retrieval.report_html import markdown_to_html

    target = path.absolute()
    if os.path.lexists(target):
        raise BadInput("exists; a comparison never replaces a file: choose another --out path", path=target)
    for s in sessions:
        if target.is_relative_to(Path(s.folder).absolute()):
            raise BadInput(f"is inside session {s.name}'s folder; write the comparison elsewhere",
                           path=target)
    from gpusession.core.retrieval.plotting import CHARTS_HINT

    svg = cost_chart_svg(comparison)
    markdown = comparison.markdown()
    if svg is None:  # matplotlib cannot be had here: say how to get the chart, in one line
        markdown = markdown.replace("![cost per accepted deliverable](compare-cost.png)", CHARTS_HINT)
    page = markdown_to_html(markdown, title="gpusession: sessions compared",
                            charts={"cost": svg} if svg else None)
    write_atomic_bytes(target, page.encode("utf-8"))
    return target


def cmd_export(args: argparse.Namespace) -> int:
    """Write a session's warm runs in hyperfine's JSON layout (R6, D5).

    Args:
        args: Parsed arguments: ``name``, ``format``, ``output``, ``force``.

    Returns:
        0 once written (what was left out, such as a variant without a measured warm run,
        is said on stderr).

    Raises:
        BadInput: no such session; ``--out`` exists without ``--force``, lies in the
            session folder, or is a folder or a link; nothing measured warm.
    """
    import sys

    from gpusession.core.retrieval.export import (
        exported_experiment,
        hyperfine_csv,
        hyperfine_markdown,
        hyperfine_results,
    )

    session = open_any(args, args.name)
    exp_id, said = exported_experiment(session, getattr(args, "experiment", None))
    if said:
        print(f"gpusession: {said}", file=sys.stderr)
    doc, left_out = hyperfine_results(session, exp_id)
    text = {"csv": hyperfine_csv, "markdown": hyperfine_markdown}.get(
        args.format, lambda d: _json_text(d, indent=2) + "\n")(doc)
    for line in left_out:
        print(f"gpusession: {line}", file=sys.stderr)
    if not args.output:
        sys.stdout.write(text)
        return 0
    target = _output_target(Path(args.output), session, force=args.force)
    from gpusession.core.files.tomlio import write_atomic_bytes

    write_atomic_bytes(target, text.encode("utf-8"))
    layout = {"csv": "CSV", "markdown": "Markdown"}.get(args.format, "JSON")
    print(f"wrote {len(doc['results'])} variant(s) of experiment {exp_id} in hyperfine's {layout} layout to {target}")
    return 0


def _output_target(path: Path, session: Session, *, force: bool) -> Path:
    """Where ``export`` may write: never over session data, never over a file without ``force``.

    Raises:
        BadInput: a link, a folder, a path inside the session folder, or an existing file
            without ``force``.
    """
    if path.is_symlink():
        raise BadInput("is a symbolic link; give a plain file to write (nothing was written)", path=path,
                       field="--out")
    if path.is_dir():
        raise BadInput("is a folder; give a file to write", path=path, field="--out")
    refuse_special(path, writing=True)  # a device, a FIFO or a socket: never replaced, --force or not (H-55)
    resolved = path.resolve()
    if resolved.is_relative_to(session.folder.resolve()):
        raise BadInput("is inside the session folder, whose files are never overwritten; write "
                       "the export elsewhere", path=path, field="--out")
    if path.exists() and not force:
        raise BadInput("exists; give --force to replace it (nothing was written)", path=path,
                       field="--out")
    return path


__all__ = ["NOT_RANKED_EXIT", "cmd_compare", "cmd_export", "open_any"]
