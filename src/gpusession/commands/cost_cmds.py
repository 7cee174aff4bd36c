"""``cost`` and ``order``: the Cost and Order panes, headless (K1–K7, S2, S3, S5, S6).

Examples::

    gpusession cost --gpu "RTX A5000" --days 7 --lots 1 --accepted-results 18 --plan 0.25,1,1,0.5,0.5
    gpusession cost --session visuals-test-01
    gpusession order visuals-test-01 set --number A-1234 --gpu "RTX A5000" --lots 1 --days 7
    gpusession order visuals-test-01 payment --asset USDT --network TRC20 --amount 55.00 \
        --destination T... --expires 2026-11-30T12:00:00Z
    gpusession order visuals-test-01 event payment-sent --note "clicked I have paid"
    gpusession order visuals-test-01 event payment-confirmed --source tracking
    gpusession order visuals-test-01 deviation --gpu "NVIDIA RTX A5000" --count 1
"""

from __future__ import annotations

import argparse
import sys
from datetime import timezone
from pathlib import Path
from typing import Any

from gpusession.commands._common import open_session, print_json
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.files.textio import printable
from gpusession.core.folder.package import PACKAGE_DAYS, parse_start
from gpusession.core.money.cost import (
    cost_report,
    load_rates,
    parse_plan,
    plan_coverage,
)
from gpusession.core.money.count import cost_line
from gpusession.core.money.order import (
    load_order,
    new_payment_order,
    record_deviation,
    record_event,
    set_order,
)
from gpusession.core.money.order_text import order_lines, order_to_json
from gpusession.core.money.rates import set_price_hint
from gpusession.core.money.window import package_window

#: ``cost --json``'s contract version (C6): 2 since the package moved under ``package`` and
#: the count under ``accepted_count`` / ``accepted_corpora``, the keys ``show`` gives.
COST_SCHEMA_VERSION = 2


def cmd_cost(args: argparse.Namespace) -> int:
    """Print the package cost and the cost per distinct accepted deliverable (K1-K7, S6).

    Price = full package price (3, 7 or 30 days) × lots, never pro-rated (K1), in exact
    cents (K2); the cost per deliverable only with a counted number of distinct accepted
    corpora (K3, K4); no pace projected onto a package (K5); a plan (``--plan``, durations
    in days) picks the smallest package that covers it (K6); prices come from the rates
    file and are never guessed (K7). With ``--session`` the package, the accepted count,
    the plan kept with the package (``package NAME --plan``; ``--plan`` here prices
    another for this call only) and the package window (S6) come from the session, through the one core assembly
    :func:`gpusession.core.money.answer.session_answer`; arguments given override them.

    Args:
        args: Parsed arguments: ``gpu``, ``days``, ``lots``, ``accepted_results``,
            ``plan``, ``rates``, ``session``, ``json``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session; ``--gpu``, ``--days`` or ``--lots`` missing and not in
            the session; a GPU model not in the rates file; an unreadable rates file; a
            malformed ``--plan``.
    """
    if args.name is not None and args.session is not None and args.name != args.session:
        raise BadInput(f"two sessions given: {shown(args.name)} and --session {shown(args.session)}; "
                       "give one", field="session")
    args.session = args.session or args.name  # `cost NAME` as most commands take it
    gpu, days, lots, accepted = args.gpu, args.days, args.lots, args.accepted_results
    count = None
    left_out: tuple[str, ...] = ()  # deliverables left out of the count, in words
    accepted_source = "given with --accepted-results" if accepted is not None else None
    rates_path = Path(args.rates) if args.rates else None
    rates = None
    notes: list[str] = []
    window_json = None
    window = None
    priced: Any = None  # the session priced, for --json
    corpora: int | None = None  # its distinct accepted corpora (K4), under show's key
    package_times: dict[str, Any] = {"start": None, "end": None}
    facts = None
    if args.session:
        from gpusession.core.retrieval.session_facts import session_facts

        s = open_session(args, args.session)
        priced = s
        # the session's one record (A1, S10): the count, its source and the cost the report and show say
        facts = session_facts(s, rates_path, frame=_results(s), cache=accepted is None)
        answer = facts.answer
        if accepted is None:
            answer.checked()  # a rates file, approvals.toml or results that do not read: exit 2
        elif answer.inputs is None:
            raise answer.errors[0]
        assert answer.inputs is not None
        rates, pkg = answer.inputs.rates, answer.inputs.package
        corpora = facts.accepted_corpora
        from gpusession.core.retrieval.json_contract import package_json

        package_times = {k: v for k, v in package_json(pkg).items() if k in ("start", "end")}
        order = load_order(s).order
        gpu = gpu or pkg.gpu_model or (order.gpu_model if order else None)
        days = days or pkg.days or (order.days if order else None)
        lots = lots or pkg.lots or (order.lots if order else None)
        if accepted is None:  # S10: one source, with the unit; not measured while nothing is validated (K3)
            count = answer.count if answer.in_unit else None
            left_out = answer.count.not_counted if answer.count is not None else ()
            accepted = answer.accepted
            accepted_source = answer.source_words(s.name)
        window = package_window(pkg)
        notes.append(f"Package window: {window.window_line()}")
        window_json = window.to_json()
    plan = parse_plan(args.plan) if args.plan is not None else None
    plan_source = "given with --plan" if plan is not None else None
    if args.session:  # K6: the plan kept with the package, unless --plan prices another for this call
        from gpusession.core.money.kept_plan import session_plan

        kept = session_plan(s)
        if plan is None and kept is not None:
            plan = list(kept.durations_days)
            plan_source = f"the plan kept with the package of session {s.name}"
        elif plan is not None:
            plan_source = (f"given with --plan for this call; the plan kept with session {s.name} is "
                           f"{kept.text()}" if kept is not None else f"given with --plan; session {s.name} "
                           f"keeps no plan (gpusession package {s.name} --plan …)")
    if days is None and plan is not None:
        # K6: without --days, the plan picks the smallest covering package.
        coverage = plan_coverage(plan)
        days = coverage.package_days or PACKAGE_DAYS[-1]
        notes.insert(0, f"--days not given: priced as the {days}-day package, the smallest that "
                        f"covers the {format(coverage.total_days.normalize(), 'f')}-day plan"
                     + ("" if coverage.package_days else " (per package; see the combination below)"))
    missing = [n for n, v in (("--gpu", gpu), ("--days", days), ("--lots", lots)) if v is None]
    if missing:
        where = " (not set in the session either)" if args.session else ""
        raise BadInput(f"missing {', '.join(missing)}{where}; e.g. gpusession cost NAME (a session), or "
                       "gpusession cost --gpu \"RTX A5000\" --days 7 --lots 1", field=missing[0].lstrip("-"))
    if rates is None:
        rates = load_rates(rates_path)
    rate = rates.find(gpu)
    if rate is None:
        known = ", ".join(rates.models()) or "none"
        raise BadInput(f"GPU model {shown(gpu)} is not in the rates files ({rates.origin}; known: "
                       f"{known}); prices are never guessed: {set_price_hint(gpu, days)}", field="gpu")
    if days not in rate.package_price_usd:  # K7: said with the file to edit, never guessed
        notes.append(f"To price it: {set_price_hint(rate.gpu_model, days)}")
    report = cost_report(rates, gpu, days, lots, accepted=accepted, plan=plan,
                         accepted_source=accepted_source, notes=notes, window=window,
                         plan_source=plan_source)
    unit_line = cost_line(report.total.total_usd_minor, count) if count is not None else None
    if args.json:
        # C6: the keys of show, list and status for the same facts (docs/json/cost.schema.json)
        data = {"schema_version": COST_SCHEMA_VERSION,
                "name": priced.name if priced is not None else None, **report.to_json()}
        data["package"].update(package_times)  # the session's window; null for figures on the line
        data["accepted_corpora"] = corpora
        data["window"] = window_json
        from gpusession.commands.deliverables_cmd import deliverables_json

        # the count in its unit, the object show gives (null for figures given on the line)
        data["deliverables"] = (count.to_json() if count is not None
                                else deliverables_json(priced) if priced is not None else None)
        data["per_unit_line"] = unit_line
        data["not_counted"] = list(left_out)
        # the session's record (count, unit, source, cost per deliverable, verdicts, keep); null for figures on the line
        data["answer"] = facts.to_json() if facts is not None and args.accepted_results is None else None
        print_json(data)
    else:
        if unit_line is not None:  # S10: "55.00 USD ÷ 18 approved visuals = 3.06 USD per visual"
            print(unit_line)
            for words in count.said() if count is not None else ():  # S9 conflicts to settle, S10 repeats
                print(printable(f"  {words}", keep=""))
        for words in left_out:  # outside the period, changed after approval, a stray report
            print(printable(f"  not counted: {words}", keep=""))  # a name from disk: one line (H-44)
        print("\n".join(report.lines()))
    return 0


def _results(session: Any) -> Any:
    """The session's results rows, ``None`` when they do not read (the count says why, exit 2)."""
    try:
        return session.results.read()
    except BadInput:
        return None


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def cmd_order_show(args: argparse.Namespace) -> int:
    """Print the order, the active payment order and the status timeline (S2, S3).

    Args:
        args: Parsed arguments: ``name``, ``json``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, an unreadable ``order.toml``.
    """
    session = open_session(args, args.name)
    state = load_order(session)
    for w in state.hidden:  # a secret pasted into order.toml by hand: hidden, said
        print(f"warning: {w}", file=sys.stderr)
    if args.json:  # docs/json/order-show.schema.json
        print_json({"name": session.name, **order_to_json(state)})
    else:
        print("\n".join(order_lines(state)))
    return 0


def cmd_order_set(args: argparse.Namespace) -> int:
    """Record what was ordered: number, GPU model, lots, days, preparation (S2).

    The total is price per lot × lots (K1); warnings (e.g. a price not in the rates file,
    so no total) go to stderr; nothing is refused for them.

    Args:
        args: Parsed arguments: ``name``, ``number``, ``gpu``, ``lots``, ``days``,
            ``preparation``, ``rates``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, an empty number or model, bad lots or days, a secret
            in a field (nothing is written), an unreadable rates file.
    """
    s = open_session(args, args.name)
    rates = load_rates(Path(args.rates), session_folder=s.folder) if args.rates else None
    state, warnings = set_order(s, number=args.number, gpu_model=args.gpu, lots=args.lots,
                                days=args.days, preparation=args.preparation, rates=rates)
    _warn(warnings)
    print("\n".join(order_lines(state)[:3]))
    return 0


def cmd_order_payment(args: argparse.Namespace) -> int:
    """Record the active payment order, replacing the previous one (S3).

    Asset and network are recorded together, the amount exactly as issued (a decimal
    string, never a float, K2), with the destination and the expiry.

    Args:
        args: Parsed arguments: ``name``, ``asset``, ``network``, ``amount``,
            ``destination``, ``expires`` (ISO 8601 with a UTC offset), ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, asset or network missing, an amount that is not an
            exact decimal with a point, no destination, an expiry without an offset or
            already past, a secret in a field (nothing is written).
    """
    s = open_session(args, args.name)
    expires = parse_start(args.expires, field="expires")
    state, warnings = new_payment_order(s, asset=args.asset, network=args.network,
                                        amount=args.amount, destination=args.destination,
                                        expires_at=expires)
    _warn(warnings)
    print("\n".join(order_lines(state)))
    return 0


def cmd_order_event(args: argparse.Namespace) -> int:
    """Add one event to the order timeline (S2).

    "I have paid" (source ``you``) never stands for "payment confirmed" (source
    ``tracking``, the provider's tracked status). When the event is ``gpu-provisioned`` and
    the package start differs from it by a minute or more, says how to move the package
    start (S6).

    Args:
        args: Parsed arguments: ``name``, ``state``, ``source``, ``note``, ``at``
            (ISO 8601, default now), ``amount`` (compared digit for digit with the payment
            order, S3), ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, an unknown state or source, a source refused for that
            state, a secret in the note, a bad amount, a time without an offset.
    """
    s = open_session(args, args.name)
    at = parse_start(args.at, field="at") if args.at else None
    warnings = record_event(s, args.state, source=args.source, note=args.note, at=at,
                            amount=args.amount)
    _warn(warnings)
    from gpusession.core.money.order_text import order_status_line

    print(f"recorded {args.state} ({'provider tracking' if args.source == 'tracking' else 'you'})")
    print(f"Status: {order_status_line(load_order(s))}")
    if args.state == "gpu-provisioned":
        _hint_package_start(s, at)
    return 0


def _hint_package_start(s: Any, at: Any) -> None:
    """S6: the package window counts from provisioning; offer to restart it there."""
    from gpusession.core.money.window import local_str, session_window_origin

    origin = session_window_origin(s, load_order(s))
    if origin.offer and origin.provisioned_at is not None:
        when = origin.provisioned_at
        print(f"Package start is {local_str(s.package.start)} ({origin.words()}); the GPU was "
              f"provisioned at {local_str(when)}. To count the package from then: "
              f"gpusession package {s.name} --start-from gpu-provisioned (the same as "
              f"gpusession package {s.name} --start {when.astimezone(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')})")


def cmd_order_deviation(args: argparse.Namespace) -> int:
    """Compare the GPU model and count seen on the machine with the order (S5).

    A deviation is recorded against the order number; none is recorded when they match.

    Args:
        args: Parsed arguments: ``name``, ``gpu`` (model seen), ``count`` (GPUs seen),
            ``rates`` (GPUs per lot), ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: Neither ``--gpu`` nor ``--count``; no such session; neither an order nor
            a package GPU model to compare with; an unreadable rates file.
    """
    if args.gpu is None and args.count is None:
        raise BadInput("give --gpu MODEL and/or --count N (what the machine shows)", field="gpu")
    s = open_session(args, args.name)
    rates = load_rates(Path(args.rates), session_folder=s.folder) if args.rates else None
    msg = record_deviation(s, args.gpu, args.count, rates=rates)
    if msg is None:
        print("no deviation: the GPU seen matches the order")
    else:
        print(f"recorded: {msg}")
    return 0
