r"""The unit, the accept rule and a person's decisions from the shell (S8, S9, S10).

Examples::

    gpusession new visuals --gpu "RTX A5000" --lots 1 --days 3 --unit visual --expected-count 18
    gpusession experiment visuals define --id render --workload command \\
        --command 'python3 render.py {output}' --values 1 \\
        --expected-outputs expected.txt --deliverable-format png --accept 'python3 check.py {output}'
    gpusession approve visuals out/visual-01.png out/visual-02.png --by "Ana" --criteria "readable"
    gpusession reject visuals out/visual-03.png --by "Ana" --why "text cut at the edge"
    gpusession deliverables visuals

The options of ``new``, ``package`` and ``experiment define`` are added by
:mod:`gpusession.commands.parsers.deliverables_cmd` (``add_unit_args``,
``add_accept_args``) and applied here by :func:`apply_unit` and :func:`apply_accept`, so
those commands change in one line each.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpusession.commands._common import open_session, print_json
from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.records.kinds import CORPUS


def check_unit_args(args: argparse.Namespace, before: Any = None) -> None:
    """Make every check of ``--unit`` / ``--unit-plural`` / ``--expected-count`` before anything is written (S8).

    Args:
        args: ``unit``, ``unit_plural``, ``expected_count``.
        before: the unit they apply to (a :class:`gpusession.core.folder.unit.Unit`:
            the one ``new --from`` carries); ``None``: a session that declares none yet.

    Raises:
        BadInput: not a short noun, or a plural or count without a unit
            (:func:`gpusession.core.folder.unit.planned_unit`).
    """
    from gpusession.core.folder.unit import DEFAULT_UNIT, planned_unit

    unit, plural, count = (getattr(args, k, None) for k in ("unit", "unit_plural", "expected_count"))
    if unit is None and plural is None and count is None:
        return
    planned_unit(before if before is not None else DEFAULT_UNIT, unit, plural=plural, expected_count=count)


def deliverables_json(session: Any, frame: Any = None) -> dict[str, Any] | None:
    """``show --json``'s ``deliverables``: the count, its source and the unit (S8, S10).

    ``None`` when it does not read (``deliverables NAME`` says why).
    """
    from gpusession.core.money.count import session_count

    try:
        return session_count(session, frame).to_json()
    except BadInput:
        return None


def deliverables_problem(session: Any, frame: Any = None) -> str | None:
    """Why the count does not read, in one line naming the file (``show``'s accepted line); ``None`` when it does.

    ``show`` goes on without the count (:func:`deliverables_json` gives ``None``), yet
    says why instead of the corpora words, which would read as a count (H-39).
    """
    from gpusession.core.money.count import session_count

    try:
        session_count(session, frame)
    except BadInput as exc:
        return str(exc)
    return None


def deliverables_line(data: dict[str, Any] | None) -> str | None:
    """``show``'s line for a session in its own unit or whose count left something out.

    ``None`` for a plain classification session with nothing left out of its count
    (seed 000 §5): its corpora line says it.
    """
    if data is None or (data["source"] == CORPUS.key and not data["declared"] and not data.get("not_counted")):
        return None
    tail = f"; {data['to_decide']} still to decide" if data.get("to_decide") else ""
    return f"{data['words']} ({data['source_words']}){tail}"


def list_deliverables(root: Path, name: str) -> dict[str, Any] | None:
    """``list``'s count in the session's unit, as last counted (no hashing), ``? visuals`` before; ``None`` otherwise.

    The same as ``status`` says (:func:`gpusession.core.money.count_cache.status_count`, S10).
    """
    from gpusession.core.money.count_cache import status_count

    return status_count(root / name)


def approved_only(session: Any, given: str | None) -> tuple[Path, set[Path], list[str]]:
    """The manifest's folder, the files it leaves out, and what it says about them (S9).

    Without decisions: ``given`` as it is, nothing left out. With decisions on that
    folder: every file not approved (or changed since its approval) is left out, and
    listed in words under "still to decide" / "not handed over".

    Raises:
        BadInput: no ``--deliverables`` and no decision recorded.
    """
    import os

    from gpusession.core.folder.approvals import deliverables_folder, file_states
    from gpusession.core.money.count import session_count

    recorded = deliverables_folder(session)
    if given is None and recorded is None:
        raise BadInput("give --deliverables DIR (no approval recorded yet: `gpusession approve NAME FILE… "
                       "--by WHO`)", field="deliverables")
    folder = Path(given) if given is not None else recorded
    assert folder is not None
    if recorded is None or os.path.abspath(folder) != os.path.abspath(recorded):
        return folder, set(), []
    states = file_states(session)
    session_count(session, cache=True)
    left = [st for st in states if st.state != "approved"]
    exclude = {(folder / st.path).absolute() for st in left}
    said = [f"approved and listed: {sum(1 for st in states if st.state == 'approved')} file(s)"]
    todo = [st for st in left if st.state == "to-decide"]
    if todo:
        said.append(f"still to decide ({len(todo)}, not listed):")
        said += [f"  {st.path}" for st in todo]
    other = [st for st in left if st.state in ("rejected", "changed", "refused")]
    if other:
        said.append(f"not handed over ({len(other)}):")
        said += [f"  {st.words()}" for st in other]
    if len(said) > 1:
        said.append("gpusession pull copies the listed files only and names these as left on the server; "
                    "a copy of the whole folder holds them too: verify-copy counts them as extra")
    return folder, exclude, said


def apply_unit(session: Any, args: argparse.Namespace, *, say: bool = True) -> dict[str, Any] | None:
    """Fix the unit the options give and say it (S8); nothing when none is given.

    Args:
        session: the open session.
        args: ``unit``, ``unit_plural``, ``expected_count``, ``force_unit``.
        say: print the line (``False`` under ``--json``: the returned data says it).

    Returns:
        ``{"singular", "plural", "expected_count", "changed"}``, ``None`` when no unit
        option was given.

    Raises:
        BadInput: a bad noun; a change once results are counted without ``--force-unit``.
    """
    from gpusession.core.folder.unit import set_unit

    unit, plural, count = (getattr(args, k, None) for k in ("unit", "unit_plural", "expected_count"))
    if unit is None and plural is None and count is None:
        return None
    new, changed = set_unit(session, unit, plural=plural, expected_count=count,
                            force_note=getattr(args, "force_unit", None))
    expected = f", {new.words(new.expected_count)} expected" if new.expected_count else ""
    if say:
        print(printable(f"unit of {session.name}: {new.singular} (plural {new.plural}){expected}"
                        + ("" if changed else " (unchanged)")))
    return {"singular": new.singular, "plural": new.plural, "expected_count": new.expected_count,
            "changed": bool(changed)}


def apply_accept(exp: Any, args: argparse.Namespace, folder: Path) -> Any:
    """``exp`` with its accept protocol when the options give one (S9), else ``exp`` itself.

    Raises:
        BadInput: an accept option with ``--classes``/``--threshold``/``--tolerance`` or a
            metric other than the default (the two kinds never mix), a rule whose
            placeholders could run as code, an expected-outputs file that does not read.
    """
    from dataclasses import replace

    from gpusession.core.experiment.form import decimal_number, resolve_corpus, settle_path
    from gpusession.core.experiment.placeholders import check_command
    from gpusession.core.validation.accept_rule import accept_protocol, read_expected_names
    from gpusession.core.validation.metrics import DEFAULT_METRIC

    accept, names, fmt, timeout = (getattr(args, k, None) for k in
                                   ("accept", "expected_outputs", "deliverable_format", "accept_timeout"))
    if accept is None and names is None and fmt is None:
        if timeout is not None:
            raise BadInput("--accept-timeout goes with --accept", field="accept-timeout")
        return exp
    classification = {k: v for k, v in (("classes", args.classes), ("threshold", args.threshold),
                                          ("tolerance", args.tolerance)) if v is not None}
    if getattr(args, "metric", DEFAULT_METRIC) not in (None, DEFAULT_METRIC):
        classification["metric"] = args.metric
    stored_names = None
    if names is not None:
        stored_names, _moved = settle_path(names, folder, Path.cwd())
        read_expected_names(resolve_corpus(folder, stored_names))  # refused now, not at the first run
    seconds = decimal_number(timeout, "accept-timeout", "duration") if timeout is not None else None
    if seconds is not None and not 0 < seconds <= 86_400:
        raise BadInput(f"expected seconds between 0 and 86400, got {timeout}", field="accept-timeout")
    protocol = accept_protocol(accept=accept, expected_outputs=stored_names, deliverable_format=fmt,
                               timeout_s=seconds, classification=classification, check_argv=check_command)
    return replace(exp, protocol=protocol)


def protocol_words(protocol: Any) -> str:
    """The acceptance a protocol applies, in words (V5, S9).

    The floor of a classification protocol (:func:`gpusession.core.experiment.form.acceptance_words`),
    or an accept rule and its checks: never a macro-F1 floor nobody chose.
    """
    from gpusession.core.experiment.form import acceptance_words
    from gpusession.core.validation.accept_rule import rule_of

    try:
        rule = rule_of(protocol)
    except BadInput as exc:  # a hand-broken table: said, never a floor
        return f"accept rule unreadable: {exc.message}"
    if rule is None:
        return acceptance_words(protocol)
    head = (f"accepted by your rule `{rule.command_words()}`" if rule.argv
            else "accepted by the checks that follow, no rule")
    return "; ".join([head, *rule.check_words()])


def accept_words(protocol: Any) -> str | None:
    """What accepts each output, in words, for ``define`` (S9).

    ``None`` for a classification protocol.
    """
    from gpusession.core.validation.accept_rule import rule_of

    try:
        rule = rule_of(protocol)
    except BadInput:
        return None
    if rule is None:
        return None
    parts = rule.check_words()
    if rule.argv:
        parts.append(f"then `{rule.command_words()}` (exit 0 accepted, 1 rejected; {rule.timeout_s:g} s at most)")
    return ", ".join(parts) or "no check (give --accept, --expected-outputs or --deliverable-format)"


def cmd_decide(args: argparse.Namespace) -> int:
    """``approve`` / ``reject``: one decision per file, then the count (S9, S10).

    Returns:
        Exit code 0.

    Raises:
        BadInput: no such session, a file outside the deliverables folder, a link, free
            text refused (a secret), a rejection without a reason.
    """
    from gpusession.core.folder.approvals import decide
    from gpusession.core.money.count import session_count

    s = open_session(args, args.name)
    text = getattr(args, "criteria", None) if args.decision == "approved" else getattr(args, "why", None)
    made = decide(s, [Path(p) for p in args.paths], decision=args.decision, by=args.by, text=text,
                  deliverables=Path(args.deliverables) if args.deliverables else None)
    count = session_count(s, cache=True)
    repeats = {r.path: r for r in count.same_bytes}
    for d in made:
        line = f"{d.decision} {d.path} (sha256 {d.sha256[:12]}…) by {d.by}"
        if d.path in repeats:  # S10: the same bytes count once, said at the approval
            line += f"; same bytes as {repeats[d.path].same_as}: counted once"
        print(printable(line, keep=""))  # a name from disk: one line (H-44)
    paths = {d.path for d in made}
    for c in count.conflicts:
        if paths & set(c.paths()):  # S9: this decision meets another on the same bytes
            print(printable(c.words(), keep=""))
    print(printable(f"{s.name}: {count.words()}" + (f"; {count.to_decide} still to decide" if count.to_decide else "")))
    return 0


def cmd_deliverables(args: argparse.Namespace) -> int:
    """List every deliverable with its decision, and the count (S9, S10).

    Returns:
        Exit code 0.
    """
    from gpusession.core.folder.approvals import deliverables_folder, file_states
    from gpusession.core.money.count import session_count

    s = open_session(args, args.name)
    states = file_states(s)
    count = session_count(s)
    repeats = {r.path: r for r in count.same_bytes}
    in_conflict = {p for c in count.conflicts for p in c.paths()}
    if args.json:
        # version 2: `deliverables` is the count, as in show and cost; the folder has its own key.
        # Each file says whether it repeats an approved file's bytes or is in a conflict; the
        # count's object lists both as facts (same_bytes, conflicts).
        folder = deliverables_folder(s)
        print_json({"schema_version": 2, "name": s.name,
                    "deliverables_folder": str(folder) if folder else None,
                    "files": [{"path": st.path, "state": st.state,
                               "by": st.decision.by if st.decision else None,
                               "at": st.decision.at if st.decision else None,
                               "text": st.decision.text if st.decision else None,
                               "sha256": st.sha256 or (st.decision.sha256 if st.decision else None),
                               "same_bytes_as": repeats[st.path].same_as if st.path in repeats else None,
                               "conflict": st.path in in_conflict}
                              for st in states],
                    "deliverables": count.to_json()})
        return 0
    if not states:
        print(f"no decision recorded yet in {s.name}: gpusession approve {s.name} FILE… --by WHO")
    for group, title in (("approved", "approved"), ("rejected", "rejected"),
                         ("changed", "changed after approval (not counted)"), ("missing", "no longer there"),
                         ("refused", "there but never read (not counted)"),
                         ("to-decide", "still to decide")):
        mine = [st for st in states if st.state == group]
        if mine:
            print(f"{title} ({len(mine)}):")
            for st in mine:
                tail = (f"; same bytes as {repeats[st.path].same_as}: counted once" if st.path in repeats
                        else "; in conflict (below)" if st.path in in_conflict else "")
                print(printable(f"  {st.words()}{tail}", keep=""))  # a name from disk: one line (H-44)
    for c in count.conflicts:  # S9: for the person to settle, never settled by gpusession
        print(printable(c.words(), keep=""))
    repeated = f"; {len(count.same_bytes)} approved file(s) repeat the bytes of another" if count.same_bytes else ""
    print(printable(f"count: {count.with_source()}{repeated}"))
    return 0


__all__ = ["apply_accept", "apply_unit", "check_unit_args"]
