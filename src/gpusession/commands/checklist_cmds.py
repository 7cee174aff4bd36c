"""``checklist``, ``manifest``, ``verify-copy``, ``report`` (S1, S4, S5).

* ``gpusession checklist NAME [--json]`` -- items by stage with done/when/note/evidence;
  ``checklist NAME done|undone ITEM``, ``note ITEM TEXT``, ``add STAGE TEXT``,
  ``evidence [--destination DIR] [--reserve-hours H]``.
* ``gpusession manifest NAME --deliverables DIR [--out FILE] [--force]`` -- size and
  SHA-256 of every approved deliverable (S4); never overwrites silently.
* ``gpusession verify-copy MANIFEST DIR [--json]`` -- on your own computer after the copy
  home: missing / extra / changed / matching files; exit 0 only when the copy matches,
  3 when it differs, 2 on bad input.
* ``gpusession report NAME [--out FILE] [--force]`` -- one Markdown file for the approver.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gpusession.commands._common import keep_count, local_time, open_session, print_json
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.files.textio import one_line

#: Exit code of ``verify-copy`` when the copy differs from the manifest.
EXIT_COPY_DIFFERS = 3

# -- checklist ---------------------------------------------------------------------------
def _need(words: list[str], n: int, usage: str) -> None:
    if len(words) < n:
        raise BadInput(f"expected {usage}", field="arguments")


def cmd_checklist(args: argparse.Namespace) -> int:
    """Show the checklist by stage, or change one item (S1).

    ``done``/``undone`` tick or untick items, ``note`` sets an item's note, ``add`` adds an
    own item to a stage (1-8), ``evidence`` collects what the tool can check (free space at
    the destination, G§2; hours kept for retrieval, G§7) and shows it beside the items:
    evidence never ticks an item.

    Args:
        args: Parsed arguments: ``name``, ``action``, ``words``, ``json``,
            ``destination``, ``reserve_hours``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, missing or extra words for the action, a stage that
            is not a whole number 1-8, an unknown item id.
    """
    from gpusession.core.retrieval import checklist as cl

    s = open_session(args, args.name)
    words: list[str] = list(args.words)
    action = args.action
    if action in ("done", "undone"):
        _need(words, 1, f"checklist {s.name} {action} ITEM_ID")
        for item_id in words:
            item = cl.set_done(s, item_id, action == "done", note=getattr(args, "note", None))
            print(f"{item.state_words()}: {item.id}  {item.text}")
        return 0
    if getattr(args, "note", None) is not None:
        raise BadInput("--note goes with done or undone (`note ITEM TEXT` sets a note)", field="note")
    if action == "note":
        _need(words, 1, f"checklist {s.name} note ITEM_ID TEXT")
        item = cl.set_note(s, words[0], " ".join(words[1:]))
        print(f"note on {item.id}: {one_line(item.note) or '(cleared)'}")
        return 0
    if action == "add":
        _need(words, 2, f"checklist {s.name} add STAGE TEXT (stage 1-8)")
        try:
            stage = int(words[0])
        except ValueError:
            raise BadInput(f"expected a stage 1-8, got {shown(words[0])}", field="stage") from None
        item = cl.add_item(s, stage, " ".join(words[1:]))
        print(f"added {item.id} to stage {item.stage} ({item.stage_title}): {item.text}")
        return 0
    if words:
        raise BadInput(f"unexpected argument(s) {shown(' '.join(words))} for {action}", field="arguments")
    if action == "evidence":
        hours = None
        if args.reserve_hours is not None:  # the session limit's reserve: one for every command
            from gpusession.core.copyhome.limit import check_reserve, parse_hours

            hours = parse_hours(str(args.reserve_hours))  # `1_0` is no number of hours
            if not cl.hours_ok(hours):
                raise BadInput(f"expected hours from 0 to {cl.RESERVE_HOURS_MAX}, got "
                               f"{shown(hours)}", field="reserve-hours")
            check_reserve(hours * 3600, s.package.days, field="reserve-hours")  # before any write
        if args.destination:
            cl.set_setting(s, "destination", str(Path(args.destination).absolute()))
        if hours is not None:
            from gpusession.core.copyhome.limit import set_limit

            set_limit(s, reserve_s=hours * 3600)
        evidence = cl.collect_evidence(s)
        if args.json:
            print_json(evidence)
            return 0
        items = {i.id: i for i in cl.load_checklist(s)}
        for item_id, text in evidence.items():
            print(f"{item_id}  {items[item_id].text}")
            for line in text.splitlines():
                print(f"    evidence: {line}")
        print("(a probe's evidence never ticks an item: tick it yourself with `done ITEM_ID`; what "
              "gpusession recorded itself ticks its item, see `checklist NAME`)")
        return 0
    return _show(s, cl.load_checklist(s), as_json=args.json)


def _show(s: Any, items: list[Any], *, as_json: bool) -> int:
    for w in s.hidden.get("checklist.toml", ()):  # a secret pasted by hand: hidden, said
        print(f"warning: {w}", file=sys.stderr)
    if as_json:
        print_json(
            {
                "name": s.name,  # the session, under the key list/show/status use
                "done": sum(i.done for i in items),
                "total": len(items),
                "items": [
                    {
                        "id": i.id, "stage": i.stage, "stage_title": i.stage_title, "text": i.text,
                        "done": i.done, "at": i.at, "note": i.note, "evidence": i.evidence,
                        "custom": i.custom, "ticked_by": i.ticked_by,
                        "not_done_although_recorded": i.not_done_although_recorded,
                    }
                    for i in items
                ],
            }
        )
        return 0
    print(f"checklist of {s.name}: {sum(i.done for i in items)}/{len(items)} done")
    stage = None
    for i in items:
        if i.stage != stage:
            stage = i.stage
            print(f"\n{i.stage} {i.stage_title}")
        mark = ("[x] " if i.done else "[ ] ") + i.state_words()
        when = f"  ({local_time(i.at)})" if i.at else ""
        own = " (own)" if i.custom else ""
        print(f"  {mark}  {i.id}{own}  {i.text}{when}")
        if i.note:
            print(f"            note: {one_line(i.note)}")  # a line break shown as \\n: no forged line
        if i.evidence:
            for line in i.evidence.splitlines():
                print(f"            evidence: {line}")
    return 0


# -- manifest / verify-copy ----------------------------------------------------------------
def _shown(name: str) -> str:
    """A file name as printed: a newline or other control character escaped."""
    from gpusession.core.files.textio import printable

    return printable(name, keep="")


def cmd_manifest(args: argparse.Namespace) -> int:
    """Write ``manifest.csv`` (path, size in bytes, SHA-256) of the approved deliverables (S4).

    The default output is ``manifest.csv`` in the session folder, numbered
    (``manifest-2.csv``...) when it exists; ``--out FILE`` is refused if it exists unless
    ``--force``. The write is journalled.

    Args:
        args: Parsed arguments: ``name``, ``deliverables``, ``out``, ``force``,
            ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, ``--deliverables`` is not a folder or holds the
            session's own files, ``--out`` exists without ``--force``.
        OSError: The disk refused the write (the previous file is left intact).
    """
    from gpusession.core.copyhome.manifest import write_manifest

    s = open_session(args, args.name)
    from gpusession.commands.deliverables_cmd import approved_only

    folder, exclude, said = approved_only(s, args.deliverables)  # S9: the approved ones only
    if not folder.is_dir():
        raise BadInput("not a folder (expected the folder of approved deliverables)", path=folder)
    sess_dir = s.folder.resolve()
    if folder.resolve() == sess_dir or sess_dir.is_relative_to(folder.resolve()):
        raise BadInput(
            "holds the session's technical files; name a folder with only the approved "
            "deliverables (deliverables are kept apart from technical files)",
            path=folder,
        )
    also = bool(getattr(args, "also_in_deliverables", False))
    if args.out:
        res = write_manifest(folder, Path(args.out), force=args.force, also_in_deliverables=also,
                             exclude=exclude)
    else:
        res = write_manifest(folder, s.folder / "manifest.csv", force=args.force,
                             number_if_exists=True, also_in_deliverables=also, exclude=exclude)
    from gpusession.core.events.actions import ManifestWrittenRecord

    s.journal(ManifestWrittenRecord(
        path=str(res.path.absolute()), deliverables=str(folder.absolute()), files=len(res.entries),
        total_bytes=res.total_bytes, skipped=len(res.skipped),
        copy_in_deliverables=str(res.copy_path.absolute()) if res.copy_path else None))
    from gpusession.core.copyhome.manifest import record_manifest

    keep_count(s.folder, s)  # the count `status` says (S10), where it was never kept
    try:  # the checklist's g8.manifest reads it as done, by gpusession (S11)
        record_manifest(s.folder, res, folder)
    except BadInput as exc:  # the manifest stands; the checklist that does not read is named
        print(_shown(f"gpusession: note: the manifest is not recorded in the checklist: {exc}"), file=sys.stderr)
    if getattr(args, "json", False):  # the end line as data (docs/json/manifest.schema.json)
        print_json({"name": s.name, "manifest": str(res.path.absolute()),
                    "copy_in_deliverables": str(res.copy_path.absolute()) if res.copy_path else None,
                    "deliverables": str(folder.absolute()), "files": len(res.entries),
                    "total_bytes": res.total_bytes,
                    "skipped": [{"path": sk.path, "reason": sk.reason} for sk in res.skipped],
                    "not_handed_over": list(said)})
        return 0
    # every path is shown escaped: a folder name with ESC or a newline never reaches the terminal (H-44)
    print(_shown(f"wrote {res.path.absolute()}: {len(res.entries)} file(s), {res.total_bytes} bytes (SHA-256)"))
    if res.copy_path is not None:
        print(_shown(f"and its copy {res.copy_path.absolute()} (carried by a copy of the deliverables)"))
    for sk in res.skipped:
        print(f"  skipped {_shown(sk.path)}: {sk.reason}")
    for line in said:  # not approved: not handed over, and what remains to validate (seed 003 §8)
        print(_shown(line))
    # The real path: "verify-copy manifest.csv COPY_DIR" only worked from the
    # session folder. Home, `pull` copies session and deliverables and verifies both.
    import shlex  # a path with spaces or brackets must paste as one argument

    print(_shown("after the copy home, on your own computer: gpusession pull "
                 f"[USER@]HOST:{shlex.quote(str(s.folder.absolute()))} --deliverables "
                 f"{shlex.quote(str(folder.absolute()))}"))
    if res.copy_path is not None:
        print("or, after a plain copy of the deliverables: gpusession verify-copy "
              "COPY_DIR/manifest.csv COPY_DIR")
    else:
        print(_shown(f"or, with the manifest copied too: gpusession verify-copy "
                     f"{shlex.quote(str(res.path.absolute()))} COPY_DIR "
                     "(the manifest's path on this machine; use the path of its copy at home)"))
    return 0


def cmd_verify_copy(args: argparse.Namespace) -> int:
    """Compare a retrieved copy with its manifest by size and SHA-256 (S4).

    Prints matching, missing, changed, extra, renamed (same content under another name)
    and skipped files, then the representative files to open from the copy.

    Args:
        args: Parsed arguments: ``manifest`` (the CSV), ``copy`` (the folder), ``json``.

    Returns:
        0 when the copy matches the manifest, :data:`EXIT_COPY_DIFFERS` (3) when it
        differs.

    Raises:
        BadInput: ``copy`` is not a folder, the manifest is unreadable or malformed.
    """
    from gpusession.core.copyhome.manifest import verify_copy

    copy = Path(args.copy)
    if not copy.is_dir():
        raise BadInput("not a folder (expected the retrieved copy)", path=copy)
    check = verify_copy(Path(args.manifest), copy)
    from gpusession.core.copyhome.copylinks import links_in

    links = links_in(copy)  # counted, never followed (H-43)
    outside = [c for c in links if not c.inside]
    from gpusession.core.copyhome.pull import record_verify_copy

    recorded = record_verify_copy(Path(args.manifest), copy, verified=check.ok and not outside,
                                  files=len(check.matching))  # S11: the session's checklist knows it
    if recorded is not None:  # the count `status` says, kept there (S10): a copy home holds the server's
        keep_count(recorded)
    if args.json:
        print_json(
            {
                "matches": check.ok,
                "matching": len(check.matching),
                "missing": check.missing,
                "extra": check.extra,
                "changed": [
                    {"path": c.path, "expected_size_bytes": c.expected_size_bytes,
                     "actual_size_bytes": c.actual_size_bytes, "expected_sha256": c.expected_sha256,
                     "actual_sha256": c.actual_sha256}
                    for c in check.changed
                ],
                "renamed": [{"expected": a, "found": b} for a, b in check.renamed],
                "skipped": [{"path": sk.path, "reason": sk.reason} for sk in check.skipped],
                "representative": [str(copy / p) for p in check.representative],
                "links": len(links),
                "links_outside": [{"path": c.path, "target": c.target} for c in outside],
            }
        )
        return 0 if check.ok and not outside else EXIT_COPY_DIFFERS
    total = len(check.matching) + len(check.missing) + len(check.changed)
    print(f"{len(check.matching)}/{total} listed file(s) match (size and SHA-256)")
    for p in check.missing:
        print(f"  MISSING  {_shown(p)}")
    for c in check.changed:
        how = "hash differs" if c.actual_sha256 else f"size {c.actual_size_bytes} ≠ {c.expected_size_bytes} bytes"
        print(f"  CHANGED  {_shown(c.path)} ({how})")
    for p in check.extra:
        print(f"  EXTRA    {_shown(p)}")
    for a, b in check.renamed:
        print(f"  RENAMED? {_shown(a)} → {_shown(b)} (same content)")
    for sk in check.skipped:
        print(f"  SKIPPED  {_shown(sk.path)}: {_shown(sk.reason)}")
    if links:
        print(f"{len(links)} symbolic link(s) in the copy, {len(outside)} pointing outside it "
              "(never followed)")
        for link in outside:
            print(f"  LINK OUT {_shown(link.path)} -> {_shown(link.target)}")
    if recorded is not None:
        print(f"recorded in the checklist of session {_shown(recorded.name)} (item g8.verify-copy)")
    if check.ok and outside:  # as pull says it: a link out of the copy is never verified (H-43)
        print(f"listed files match the manifest, but the copy is NOT VERIFIED: {len(outside)} link(s) "
              "point outside it (remove them, or copy what they point to)")
    elif check.ok:
        print("copy matches the manifest")
    else:
        print(f"copy DIFFERS: {len(check.missing)} missing, {len(check.changed)} changed, "
              f"{len(check.extra)} extra")
    if check.representative:
        print("Open these from the copy (not from the remote machine):")
        for p in check.representative:
            print(f"  {_shown(str(copy / p))}")
    return 0 if check.ok and not outside else EXIT_COPY_DIFFERS


# -- report --------------------------------------------------------------------------------
def cmd_report(args: argparse.Namespace) -> int:
    """Write one Markdown report of the session for the person who approves the work.

    Charts (PNG) are written beside it (matplotlib); where they cannot be drawn a note
    says why. With ``--html`` the same text is also written as one self-contained page.

    Args:
        args: Parsed arguments: ``name``, ``out``, ``force``, ``html``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, ``--out`` exists without ``--force``.
        OSError: The disk refused the write.
    """
    from gpusession.core.files.textio import printable
    from gpusession.core.retrieval.report import write_report

    as_json = bool(getattr(args, "json", False))

    def answer(lines: list[str]) -> None:  # the answer first (D5), before the charts are drawn
        for line in lines:
            print(printable(line))
        sys.stdout.flush()

    s = open_session(args, args.name)
    res = write_report(s, out=Path(args.out) if args.out else None, force=args.force,
                       html=bool(getattr(args, "html", False)), keep=bool(getattr(args, "keep", False)),
                       charts=not getattr(args, "no_charts", False), on_answer=None if as_json else answer)
    if as_json:  # the end lines as data (docs/json/report.schema.json)
        print_json({"name": s.name, "path": str(res.path), "html": str(res.html) if res.html else None,
                    "charts": [str(p) for p in res.charts], "charts_note": res.charts_note,
                    "summary": [printable(line) for line in res.answer]})
        return 0
    print(f"wrote {res.path}")
    if res.html is not None:
        print(f"wrote {res.html}")
    for png in res.charts:
        print(f"  chart {png}")
    if res.charts_note:
        print(f"  {res.charts_note}")
    return 0
