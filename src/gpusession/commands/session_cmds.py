"""``new``, ``list``, ``show``, ``package``: session folders from the shell."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpusession.commands._common import (
    local_time,
    open_session,
    print_json,
    root_of,
)
from gpusession.commands.deliverables_cmd import (
    apply_unit,
    check_unit_args,
    deliverables_line,
    list_deliverables,
)
from gpusession.commands.summary_table import format_summary
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.folder.journal import running_words
from gpusession.core.folder.package import (
    Package,
    check_gpu_model,
    check_lots,
    parse_start,
)
from gpusession.core.folder.root import remember_sessions_dir
from gpusession.core.folder.session import Session, list_sessions
from gpusession.core.money.window import package_warning, package_window
from gpusession.core.retrieval.session_facts import SessionFacts, session_facts
from gpusession.core.retrieval.status import Retrieval, list_facts


def cmd_new(args: argparse.Namespace) -> int:
    """Create ``NAME`` under the sessions root with its package (start: now by default).

    With ``--from PREVIOUS`` the new session takes over the previous one's unit,
    experiment definitions and protocol, plan and ``g8.decision`` note, and the files the
    definitions name inside its folder; never its results, order or payment (S11, seed
    003 §8). What was carried is printed in one list (``carried`` in ``--json``); options
    given (``--unit``, the package) are the new session's own.

    Args:
        args: Parsed arguments: ``name``, ``gpu``, ``lots``, ``days``, ``start``,
            ``from_session``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: An unsafe name, a session that already exists (nothing is changed), a
            bad GPU model, a start without an offset; ``--from`` naming the new session
            itself, a previous session not found or whose files do not read (nothing is
            created).
    """
    from gpusession.core.retrieval.next_session import apply_carry, read_carry

    start = parse_start(args.start) if args.start else utcnow()
    gpu = check_gpu_model(args.gpu) if args.gpu is not None else None
    pkg = Package(gpu_model=gpu, lots=args.lots, days=args.days, start=start)
    previous = getattr(args, "from_session", None)
    carry = None
    if previous is not None:
        if previous == args.name:
            raise BadInput(f"a session cannot start from itself: give the previous session, not {args.name}",
                           field="from")
        prev = open_session(args, previous)
        carry = read_carry(prev)  # every file of the previous session read before the new one is made
    # every unit check, on the unit the new session will have, before the folder is made
    check_unit_args(args, carry.unit if carry is not None else None)
    s = Session.create(root_of(args), args.name, package=pkg)
    remember_sessions_dir(s.folder.parent)  # `status` from any folder
    carried = None
    if carry is not None:
        carried, warnings = apply_carry(s, carry, prev.folder)
        for w in warnings:  # the new package does not cover the carried plan: said, never shrunk
            print(printable(f"warning: {w}"), file=sys.stderr)
    if getattr(args, "json", False):  # the end line as data (docs/json/new.schema.json)
        from gpusession.core.retrieval.json_contract import package_json

        unit = apply_unit(s, args, say=False)  # S8: the unit fixed before anything is counted
        print_json({"name": s.name, "folder": str(s.folder), "package": package_json(s.package),
                    "unit": unit, "started_from": previous, "carried": carried})
        return 0
    print(f"created session {s.name} in {s.folder}")
    if carried is not None:  # S11: what the next rental starts from, in one list
        print(printable(f"carried from {previous}:"))
        for line in carried:
            print(printable(f"  - {line}"))
    apply_unit(s, args)  # S8: the unit fixed before anything is counted
    if carry is not None and carry.experiments:
        print(f"next: gpusession run {s.name} --headless (the carried experiments; or open the TUI: "
              f"gpusession open {s.name})")
        return 0
    if getattr(args, "unit", None):  # S8, S9: deliverables of a unit are accepted by a rule or a person
        accept = ("--accept 'python3 check.py {output}' --expected-outputs expected.txt "
                  f"(or approve each file: gpusession approve {s.name} FILE… --by WHO)")
        program = "./render.sh {output} {batch}'"
    else:
        accept = "--corpus corpus/eval.jsonl --classes a,b --threshold 0.9"
        program = "./predict.sh {corpus} {output} {batch}'"
    print("next: define what to measure, then run it (or open the TUI: gpusession open "
          f"{s.name}):\n"
          f"  gpusession experiment {s.name} define --id ID --workload command --command '{program} "
          f"--varied batch --values 1,4,8 {accept}\n"
          f"  gpusession run {s.name} --headless")
    return 0


def _recount(s: Any) -> None:
    """Count the deliverables again and keep the count for ``status`` (a cache: never fatal)."""
    from gpusession.core.money.count import session_count

    try:
        session_count(s, cache=True)
    except (BadInput, OSError):
        pass  # show and cost count again, and say why when they cannot


def cmd_package(args: argparse.Namespace) -> int:
    """Change a session's package, and the plan kept with it; what is not given keeps its value.

    ``--plan`` (days per task, decimal strings, K2) is kept in ``session.toml``'s
    ``[plan]``; the line printed says which package covers it (K6, seed 003 §4); a plan
    longer than the one kept before, or one the package does not cover, is kept and
    warned about on stderr, never shrunk.

    Args:
        args: Parsed arguments: ``name``, ``gpu``, ``lots``, ``days``, ``start``,
            ``plan``, ``plan_names``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, bad lots, a bad GPU model, a start without an offset,
            a malformed ``--plan`` or ``--plan-names`` (nothing is written then).
    """
    from gpusession.core.money.kept_plan import keep_plan, make_plan, session_plan

    s = open_session(args, args.name)
    plan_text, names = getattr(args, "plan", None), getattr(args, "plan_names", None)
    if names is not None and plan_text is None:
        raise BadInput("--plan-names goes with --plan (one name per task)", field="plan-names")
    plan = make_plan(plan_text, names) if plan_text is not None else None  # refused before any write
    kept_plan = session_plan(s)  # a [plan] broken by hand: said before anything is written
    old = s.package
    if args.lots is not None:
        check_lots(args.lots)
    start_from = getattr(args, "start_from", None)
    if start_from and args.start:
        raise BadInput("give either --start or --start-from, not both", field="start-from")
    provisioned = _provisioned_at(s) if start_from else None
    new = Package(
        gpu_model=check_gpu_model(args.gpu) if args.gpu is not None else old.gpu_model,
        lots=args.lots if args.lots is not None else old.lots,
        days=args.days if args.days is not None else old.days,
        start=provisioned or (parse_start(args.start) if args.start else old.start),
    )
    limit_args = _limit_args(args)
    from gpusession.core.copyhome.limit import check_reserve, stored_reserve_s

    # the reserve against the new length, before any write: the one given, else the one kept
    kept = None if limit_args is not None else stored_reserve_s(s.data)
    if limit_args is not None and "reserve_s" in limit_args:
        check_reserve(limit_args["reserve_s"], new.days)
    elif kept is not None and new.days != old.days:
        check_reserve(kept, new.days, field="days", tail="; give --reserve with less, or --reserve auto")
    as_json = bool(getattr(args, "json", False))
    # S8: refused before the package changes once results are counted
    unit = apply_unit(s, args, say=not as_json)
    s.set_package(new)
    if (new.start, new.days) != (old.start, old.days):
        _recount(s)  # the period moved: status says the count the window now holds (seed 000 §5)
    past = None
    if plan is not None:
        for w in keep_plan(s, plan):  # K6: a longer plan is kept and said, never shrunk
            print(printable(f"warning: {w}"), file=sys.stderr)
        kept_plan = plan
    elif kept_plan is not None and kept_plan.covered_by(new) is False and new.days != old.days:
        print(printable(f"warning: {kept_plan.words(new)}"), file=sys.stderr)
    if limit_args is not None:
        from gpusession.core.copyhome.limit import set_limit

        set_limit(s, **limit_args)
        at = limit_args.get("at")
        if at is not None and at <= utcnow():  # said at once, not at the next run
            past = (f"this limit is already past ({local_time(at)}): `run` starts no run "
                    "until it is moved (--limit auto, or a later time)")
    if as_json:  # the end line as data (docs/json/package.schema.json)
        from gpusession.core.retrieval.json_contract import package_json

        limit = _limit(s)
        print_json({"name": s.name, "package": package_json(new), "unit": unit,
                    "plan": kept_plan.words(new) if kept_plan is not None else None,
                    "window_restarted_at": provisioned.isoformat() if provisioned else None,
                    "session_limit": limit.at.isoformat() if limit.at is not None else None,
                    "stop_by": limit.stop_by, "limit_already_past": past})
        return 0
    print(f"package of {s.name}: {_package_line(new)}")
    if kept_plan is not None:
        print(printable(kept_plan.words(new)))
    if provisioned is not None:
        print(f"package window restarted at the gpu-provisioned event ({local_time(provisioned)})")
    if limit_args is not None:
        print(printable(f"session limit: {_limit(s).words}"))
        if past is not None:
            print(f"note: {past}")
    return 0


def _limit_args(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--limit`` / ``--reserve`` as :func:`~gpusession.core.copyhome.limit.set_limit`'s arguments (D1).

    Raises:
        BadInput: both given, a limit that is not ISO 8601 with an offset, or a reserve
            that is not a duration (nothing is changed).
    """
    from gpusession.core.copyhome.limit import parse_reserve

    limit, reserve = getattr(args, "limit", None), getattr(args, "reserve", None)
    if limit is not None and reserve is not None:
        raise BadInput("give either --limit or --reserve, not both", field="limit")
    if limit is not None:
        return {"auto": True} if limit.strip() == "auto" else {"at": parse_start(limit, field="limit")}
    if reserve is not None:
        return {"auto": True} if reserve.strip() == "auto" else {"reserve_s": parse_reserve(reserve)}
    return None


def _provisioned_at(s: Session) -> Any:
    """The time of the order's latest ``gpu-provisioned`` event (S6).

    Raises:
        BadInput: no such event recorded yet (nothing is changed).
    """
    from gpusession.core.money.order import load_order
    from gpusession.core.money.window import session_window_origin

    origin = session_window_origin(s, load_order(s))
    if origin.provisioned_at is None:
        raise BadInput("no gpu-provisioned event in the order yet; record it first: gpusession order "
                       f"{s.name} event gpu-provisioned --source tracking", field="start-from")
    return origin.provisioned_at


def _package_line(p: Package) -> str:
    gpu = p.gpu_model or "GPU not set"
    lots = f"{p.lots} lot(s)" if p.lots else "lots not set"
    days = f"{p.days} days" if p.days else "days not set"
    # the time left in the words of `status`, `show` and `list` ("starts in …" before the start)
    return f"{gpu}, {lots}, {days}, ends {local_time(p.end)}, {package_window(p).time_left_words()}"


def session_json(s: Session, retrieval: Retrieval | None = None, facts: SessionFacts | None = None, *,
                 answer: bool = True) -> dict[str, Any]:
    """Everything ``show --json`` prints: the ``session.toml`` content plus computed figures.

    The count, the cost, the verdicts and the copy home are the session's one record
    (:class:`SessionFacts`, A1), under ``answer`` and under the keys ``list`` and
    ``status`` give (``accepted_corpora``, ``deliverables``, ``copy_home_verified``).

    Args:
        s: The open session.
        retrieval: the copy-home state when the caller has read it already (read once).
        facts: the session's record when the caller has built it (built here otherwise).
        answer: include ``answer`` (the text ``show`` leaves it out: its incidents and
            energy are worked out only when read).

    Returns:
        ``name``, ``folder``, ``created_at``, ``package`` (with ``end``, S6),
        ``plan`` (the plan kept with the package and which package covers it, K6;
        ``None`` when none), ``time_left_s``, ``result_rows`` (rows of the results CSV),
        ``accepted_corpora`` (K4), ``summary`` (one dict per experiment, variant and
        phase, R6), ``copy_home_verified`` and ``warning`` (the end-of-package warning or
        ``None``), ``session_toml`` (the rest of the file) and ``answer``
        (:meth:`SessionFacts.to_json`: count, unit, source, cost per deliverable, verdicts,
        keep, risks, incidents, energy; a figure not measured is ``null`` with its reason).

    Raises:
        BadInput: An unreadable results CSV, a ``[plan]`` broken by hand.
    """
    from gpusession.core.money.kept_plan import session_plan
    from gpusession.core.retrieval.json_contract import package_json, time_left_s

    frame = s.results.read()
    facts = facts or session_facts(s, frame=frame)  # the one record (A1): count, cost, verdicts
    pkg = s.package
    plan = session_plan(s)
    summary = list(facts.summary)
    verified = (retrieval or facts.retrieval).verified
    count = facts.answer.count
    return {
        "name": s.name,
        "folder": str(s.folder),
        "created_at": s.data.get("created_at"),
        "package": package_json(pkg),  # the keys of `list` and `status` (docs/json/show.schema.json)
        "plan": plan.to_json(pkg) if plan is not None else None,  # K6: which package covers it
        "time_left_s": time_left_s(pkg),
        "repeated_rows": [r.words() for r in s.results.repeated],  # copied by hand: counted once
        "missing_rows": [m.words() for m in s.results.missing],  # ended in the journal, row deleted
        "result_rows": frame.height,  # result rows: loads, runs and incidents (the text says so)
        "accepted_corpora": facts.accepted_corpora,
        "deliverables": count.to_json() if count is not None else None,  # S8, S10: the count in the unit, its source
        "summary": [r.to_json() for r in summary],
        "copy_home_verified": verified,
        "warning": _warning_text(s, verified),
        "limit": (limit := _limit(s)).to_json(),
        # the keys `status --json` and `package --json` give the same facts under
        "session_limit": limit.at.isoformat() if limit.at is not None else None,
        "stop_by": limit.stop_by,
        "stopped": stopped_experiments(s),
        # experiments cut short (resume words); status's unfinished_runs counts runs with no end yet
        "unfinished": unfinished_experiments(s),
        "session_toml": {k: v for k, v in s.data.items() if k not in ("package", "plan")},
        "derived": derived_comparisons(s, summary),
        "corpus_kept": _corpus_kept(s),
        **({"answer": facts.to_json()} if answer else {}),
    }


def _corpus_kept(s: Session) -> dict[str, str]:
    """Experiment id → what was kept of its corpus for audit, in words (V5, V8)."""
    from gpusession.core.folder.corpus_pin import kept_words
    from gpusession.core.folder.experiments import load_experiments

    try:
        ids = [e.id for e in load_experiments(s)]
    except BadInput:  # an unreadable definition is said by the summary's own reading
        return {}
    return {i: w for i in ids if (w := kept_words(s, i)) is not None}


def derived_comparisons(s: Session, summary: list[Any]) -> list[dict[str, Any]]:
    """Each derived experiment beside its origin, in words (D4, D5): ``show`` and ``show --json``.

    Args:
        s: the open session.
        summary: its summary table (:func:`session_summary`).

    Returns:
        One dict per derived experiment whose origin is still defined: ``id``,
        ``derived_from``, ``changed_key``, ``differs`` (``derived from kw: precision fp16
        (was fp32)``) and ``lines`` (warm median and verdict per variant, before → after,
        and the fastest accepted variant of each). Empty when the experiments do not read
        (``experiment list`` says why).
    """
    from gpusession.core.experiment.derive import comparison_lines, derived_words
    from gpusession.core.folder.experiments import load_experiments

    try:
        exps = load_experiments(s)
    except BadInput:
        return []
    by_id = {e.id: e for e in exps}
    return [{"id": e.id, "derived_from": e.derived_from, "changed_key": e.changed_key,
             "differs": derived_words(e, by_id),
             "lines": comparison_lines(by_id[e.derived_from], e, summary)}
            for e in exps if e.derived_from is not None and e.derived_from in by_id]


def _limit(s: Session) -> Any:
    """The session limit now (D1, D2)."""
    from gpusession.core.copyhome.limit import session_limit

    return session_limit(s)


def unfinished_experiments(s: Session) -> dict[str, str]:
    """Experiments whose newest run was cut short (cancelled, killed, hung up), with what to do (S7).

    A run the runner stopped on purpose is in :func:`stopped_experiments` instead.

    Returns:
        ``{experiment id → "2 of 10 runs done, the run was cancelled; `gpusession run S
        --experiment ID --resume` measures the rest"}``.
    """
    facts = s.journal_facts()
    return {exp_id: f"{words}; `gpusession run {s.name} --experiment {exp_id} --resume` measures the rest"
            for exp_id, words in facts.unfinished_words.items()
            if exp_id not in facts.stopped}


def stopped_experiments(s: Session) -> dict[str, str]:
    """Experiments whose newest run the runner stopped on purpose, with why (D1, D3).

    Args:
        s: the open session (its journal is read).

    Returns:
        ``{experiment id → "stopped after the first result: 300 IDs missing — fix and run
        again (validation report: …)"}``; an experiment run again since is not in it.
    """
    return dict(s.journal_facts().stopped)


def _origin(s: Session) -> Any:
    """Which event the window counts from; ``None`` when order.toml is unreadable."""
    from gpusession.core.money.order import load_order
    from gpusession.core.money.window import session_window_origin

    try:
        return session_window_origin(s, load_order(s))
    except BadInput:
        return None


def _warning_text(s: Session, copy_home_verified: bool) -> str | None:
    """The end-of-package warning now, ``None`` when there is none."""
    warning = package_warning(package_window(s.package), copy_home_verified)
    return warning.text if warning is not None else None


def cmd_list(args: argparse.Namespace) -> int:
    """List the sessions under the root, most recent first: name, GPU, window, runs, accepted.

    A session that does not open is listed with the reason, never hidden.

    Args:
        args: Parsed arguments: ``json``, ``sessions_dir``.

    Returns:
        Exit code 0 (also when there is no session yet: it says how to create one).
    """
    root = root_of(args)
    rows = list_sessions(root, list_facts)  # from the state status keeps: O(1) per unchanged session
    if args.json:
        from gpusession.core.retrieval.json_contract import package_json, time_left_s

        print_json(
            [
                {  # the keys of `show` and `status` for the same facts (docs/json/list.schema.json)
                    "name": r.name,
                    "package": {**package_json(r.package), "gpu_model": r.gpu_model},
                    "time_left_s": time_left_s(r.package),
                    # the ROWS column: result rows (loads, runs, incidents); null, never 0, for a
                    # session that does not read (C3: not measured is never a measured zero)
                    "result_rows": None if r.error else r.runs,
                    "accepted_corpora": None if r.error else r.accepted_corpora,
                    "deliverables": list_deliverables(root, r.name),  # S8: the count in its unit
                    "error": r.error,
                }
                for r in rows
            ],
            key="sessions",
        )
        return 0
    if not rows:
        print(f"no sessions in {printable(str(root), keep='')}; create one with: gpusession new NAME")  # H-46
        return 0
    # The time left in the words of `status` and `show` (one function: a package that
    # starts later says "starts in …", never a time left counted from now).
    windows = {r.name: _list_window(r.package) for r in rows if not r.error}
    width = max([30, *map(len, windows.values())])
    print(f"{'NAME':<24} {'GPU':<14} {'PACKAGE':<{width}} {'ROWS':>5} {'ACCEPTED':>8}")
    for r in rows:
        if r.link_target is not None:
            print(f"{r.name:<24} (link, not opened): a symbolic link to {r.link_target}")
            continue
        if r.error:
            print(f"{r.name:<24} unreadable: {r.error}")
            continue
        unit = list_deliverables(root, r.name)  # S8: "18 visuals" where the session has its unit
        print(f"{r.name:<24} {(r.gpu_model or '-'):<14} {windows[r.name]:<{width}} {r.runs:>5} "
              f"{(unit['short'] if unit else r.accepted_corpora):>8}")
    return 0


def _list_window(p: Package) -> str:
    """``7d, 3d 02h 10m left`` / ``3d, starts in 2d 00h; 3d 00h 00m once started`` (S6)."""
    return f"{p.days}d, {package_window(p).time_left_words()}" if p.days else "not set"


def _host_check_lines(s: Session) -> list[str]:
    """``GPU check`` lines: each host's comparison with the order and its probe (D8)."""
    from gpusession.core.money.host_check import load_host_checks, probe_words

    try:
        checks = load_host_checks(s)
    except BadInput as exc:
        return [f"GPU check unreadable: {exc}"]
    if not checks:
        return [f"GPU check not done yet (`gpusession check-host {s.name}` on the server)"]
    out = []
    for c in checks.values():
        at = c.facts.checked_at.isoformat(timespec="minutes")
        out.append(f"GPU check {c.order_words} (host {c.facts.host.hostname}, {at})")
        out += [f"          {w.strip()}" for w in probe_words(c.probe)]
    return out


def cmd_show(args: argparse.Namespace) -> int:
    """Print one session: package, window, runs, accepted corpora and the summary table.

    The package window is start, end and time left (S6); accepted corpora are counted
    once however many rows repeat them (K4). The summary gives per experiment, variant and phase the number of runs, median and
    min-max seconds and failures (R3, R6); empty cells mean not measured, never 0 (C3).

    Args:
        args: Parsed arguments: ``name``, ``json``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, an unreadable ``session.toml`` or results CSV.
    """
    s = open_session(args, args.name)
    facts = session_facts(s, frame=s.results.read())  # what a person is told, once (A1)
    retrieval = facts.retrieval
    data = session_json(s, retrieval, facts, answer=bool(args.json))
    if args.json:
        print_json(data)
        return 0
    pkg = s.package
    # Values read from files a person may edit are shown with control characters
    # escaped (the package's GPU model is already refused with one when read).
    print(printable(f"session   {s.name}  ({s.folder})"))
    print(f"created   {local_time(data['created_at'])}")
    started = s.data.get("started_from")
    if isinstance(started, dict) and isinstance(started.get("session"), str):  # S11: new --from
        print(printable(f"from      session {started['session']}: its unit, experiment definitions, plan and "
                        "decision note (never its results, order or payment)"))
        from gpusession.core.retrieval.next_session import carried_note

        note = carried_note(s)
        if note is not None:  # the note carried into g8.decision, said where the person looks
            print(printable(f"note      {note.words()}"))
    print(f"GPU       {printable(pkg.gpu_model or 'not set')}")
    print(f"lots      {pkg.lots if pkg.lots is not None else 'not set'}")
    print(f"days      {pkg.days if pkg.days is not None else 'not set'}")
    if data["plan"] is not None:  # K6: the plan kept beside the package, and what covers it
        print(printable(f"plan      {data['plan']['words'].removeprefix('plan ')} "
                        f"(days per task {','.join(data['plan']['durations_days'])})"))
    origin = _origin(s)
    print(f"start     {local_time(pkg.start)}" + (f" ({origin.words()})" if origin else ""))
    print(f"end       {local_time(pkg.end)}")
    # the words (and rounding) of `status` and the TUI header
    print(f"time left {package_window(pkg).time_left_words().removesuffix(' left')}")
    offer = origin.offer_line(s.name) if origin else None
    if offer:
        print(f"          {offer}")
    print(f"copy home {retrieval.words.removeprefix('copy home ')}")
    for line in _host_check_lines(s):  # D8: the GPU found against the order, per host
        print(printable(line))
    if data["warning"] is not None:  # 24 h, 2 h before the end; "package ended"
        print(f"WARNING   {data['warning']}")
    limit = _limit(s)
    print(printable(f"limit     {'PAST THE LIMIT: ' if limit.passed() else ''}{limit.words}"))
    if limit.note:
        print(printable(f"          {limit.note}"))
    print(f"results   {data['result_rows']} rows in resultats-bruts.csv (loads, runs and incidents)")
    for words in (*data["repeated_rows"], *data["missing_rows"]):
        print(printable(f"          {words}"))
    if busy := running_words(s.folder):  # a detached run, followed
        print(f"running   {busy}")
    for exp_id, words in data["stopped"].items():  # D1, D3: the newest run of each stopped on purpose
        print(printable(f"stopped   {exp_id}: {words}"))
    for exp_id, words in data["unfinished"].items():  # cut short: what measures the rest
        print(printable(f"cut short {exp_id}: {words}"))
    for exp_id, words in data["corpus_kept"].items():  # what the runs were validated against
        print(printable(f"corpus    {exp_id}: {words}"))
    n_acc = data['accepted_corpora']
    if (in_unit := deliverables_line(data["deliverables"])) is not None:  # S8, S10: in the session's unit
        print(printable(f"accepted  {in_unit}"))
        for words in data["deliverables"]["not_counted"]:  # the period, a change after approval
            print(printable(f"          not counted: {words}", keep=""))
    elif data["deliverables"] is None and (why := facts.answer.count_problem) is not None:
        print(printable(f"accepted  not counted: {why}"))  # one line naming the file (H-39)
    else:
        print(f"accepted  {n_acc} distinct accepted {'corpus' if n_acc == 1 else 'corpora'}")
    print(printable(f"cost      {facts.cost_words()}"))  # the record's figure (K3, S10), one formula
    if data["summary"]:
        print()
        print(printable(format_summary(data["summary"])))
    for kept in facts.keep:  # D5, D7: the record's variant to keep, as the report's summary says it
        print(printable(f"keep      {kept.words()}"))
    for d in data["derived"]:  # one change, replayed: before and after in words (D4)
        print()
        print(printable(f"{d['id']} {d['differs']}"))
        for line in d["lines"]:
            print(printable(f"  {line}"))
    return 0


__all__ = ["session_json", "BadInput"]
