"""``check-host``: is this the GPU I paid for? Checked against the order, kept as evidence (D8).

Examples::

    gpusession check-host visuals-test-01
    gpusession check-host visuals-test-01 --no-probe --json
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpusession.commands._common import open_session, print_json
from gpusession.core.files.errors import GpusessionError
from gpusession.core.files.textio import printable
from gpusession.core.folder.session import Session

#: Exit status when the GPU found differs from the order (model, count or memory).
DEVIATION_EXIT = 3
#: Exit status when no GPU is visible: nothing was checked.
NO_GPU_EXIT = 1


def check_locked(session: Session, *, probe: bool, nvml: Any | None = None) -> Any:
    """Check this host under the session's run lock: never beside a measurement (D8).

    Args:
        session: the open session.
        probe: run the probe worker; else keep this host's earlier probe, if any.
        nvml: a pynvml-like module (tests); default the real bindings.

    Returns:
        The :class:`gpusession.core.money.host_check.HostCheck` recorded, or the
        :class:`gpusession.core.gpu.hostfacts.HostFacts` read when NVML sees no GPU
        (nothing recorded then).

    Raises:
        Failure: a run holds the session's run lock (nothing probed).
        BadInput: ``host-check.toml`` does not read (nothing probed, the file left as it is).
    """
    from gpusession.bench.hostprobe import run_probe
    from gpusession.core.folder import journal
    from gpusession.core.gpu.hostfacts import ProbeResult, read_host_facts
    from gpusession.core.money.host_check import checks_before_writing, record_host_check

    journal.take_lock(session.folder, session.name)
    try:
        facts = read_host_facts(nvml)
        if not facts.sees_gpu:
            return facts
        earlier = checks_before_writing(session).get(facts.host.key)  # before the probe
        result: ProbeResult | None = None
        if probe:
            result = run_probe()
        else:
            result = earlier.probe if earlier else None
        return record_host_check(session, facts, result)
    finally:
        journal.release_lock(session.folder)


def check_on_first_open(session: Session, *, nvml: Any | None = None, probe: bool = True,
                        host: Any | None = None) -> list[str]:
    """The host check of ``run``'s first open on a server, under the run lock (D8).

    Nothing is read when this host and boot was checked already (with a probe, when
    ``probe``), when the session was checked only on other machines (a copy), or when NVML
    sees no GPU (nothing recorded then). Why it never raises: the check is evidence
    beside the measurement; a check that fails (a damaged ``host-check.toml``, a file
    that refuses a value, a lock taken meanwhile) is said in one warning line and the
    run goes on.

    Args:
        session: the open session.
        nvml: a pynvml-like module (tests); default the real bindings.
        probe: run the probe worker too (``run``: before measuring).
        host: this machine (tests); default :func:`gpusession.core.gpu.hostfacts.this_host`.

    Returns:
        The lines to print: ``[]`` when nothing was checked, one ``warning:`` line when
        the check failed.
    """
    from gpusession.core.money.host_check import check_lines

    try:
        check = _first_open_check(session, nvml=nvml, probe=probe, host=host)
    except Exception as exc:  # noqa: BLE001 - evidence never stops a measurement
        why = str(exc) if isinstance(exc, (GpusessionError, OSError)) else f"{type(exc).__name__}: {exc}"
        return [f"warning: the GPU was not checked against the order: {why}; the run goes on"]
    if check is None:
        return []
    head = "first open on this host: the GPU found, checked against the order"
    return [head, *("  " + line for line in check_lines(check)),
            f"  kept in {session.folder / 'host-check.toml'}"]


def _first_open_check(session: Session, *, nvml: Any | None, probe: bool,
                      host: Any | None) -> Any:
    """The check of :func:`check_on_first_open`, or ``None`` when none is due.

    Raises:
        GpusessionError, OSError: the check failed (a file that does not read or refuses
            a value, the run lock taken).
    """
    from gpusession.bench.hostprobe import run_probe
    from gpusession.core.folder import journal
    from gpusession.core.gpu.hostfacts import read_host_facts, this_host
    from gpusession.core.money.host_check import check_on_open, due_on_open

    host = host or this_host()
    if not due_on_open(session, host, probe=probe) or not read_host_facts(nvml, host=host).sees_gpu:
        return None  # checked here already, a copy elsewhere, or no GPU: the lock is not taken
    journal.take_lock(session.folder, session.name)
    try:
        return check_on_open(session, nvml=nvml, host=host, probe=run_probe if probe else None)
    finally:
        journal.release_lock(session.folder)


def cmd_check_host(args: argparse.Namespace) -> int:
    """Check the GPU of this machine against the session's order and record it (D8, S5).

    Returns:
        0 when it matches, :data:`DEVIATION_EXIT` on an order deviation,
        :data:`NO_GPU_EXIT` when no GPU is visible.

    Raises:
        BadInput: ``host-check.toml`` does not read (exit 2; the file left as it is).
    """
    from gpusession.core.gpu.hostfacts import HostFacts
    from gpusession.core.money.host_check import check_lines

    session = open_session(args, args.name)
    check = check_locked(session, probe=not args.no_probe)
    if isinstance(check, HostFacts):
        line = (f"no GPU visible ({check.nvml_reason or 'NVML counts no GPU'}): nothing checked, "
                "nothing recorded")
        if args.json:
            print_json({"name": session.name, "checked": False, "reason": line})
        else:
            print(f"check-host: {printable(line)}", file=sys.stderr)
        return NO_GPU_EXIT
    if args.json:
        print_json({"name": session.name, "checked": True, "host": check.facts.host.key, "order_number": check.order_number,
                    "deviation": check.deviation, "order_words": check.order_words,
                    "facts": check.facts, "probe": check.probe})
    else:
        for line in check_lines(check):
            print(printable(line))
        print(f"kept in {session.folder / 'host-check.toml'}")
    return DEVIATION_EXIT if check.deviation else 0
