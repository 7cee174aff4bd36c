"""``gpusession agent NAME --experiment ID``: another node's side of a run over several nodes.

Thin: the loop is :class:`gpusession.bench.agent.Agent`. The session is opened without
recovery (the run lock is the runner's, on another node) and nothing in it is written.
Exit 0 when the run ended with its end record and this node's torchrun exited 0 in
every group joined; 1 when one did not (the runner's record says why), or when the run
did not finish (its runner was killed or died: recovery recorded it, or its run lock is
gone with no end recorded); 2 bad input; 128 + the signal's number when Ctrl-C, SIGTERM
or SIGHUP ended it (its torchrun group first).
"""

from __future__ import annotations

import argparse
import signal
from typing import Any


def register(sub: Any) -> None:
    """Add ``agent`` to the CLI.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser.
    """
    p = sub.add_parser(
        "agent",
        help="on another node: join every torchrun group of an experiment run over several nodes",
        description=(
            "Run on each node other than the one where `gpusession run` runs, for an experiment "
            "defined with --nodes N --rendezvous HOST:PORT. The nodes must see the session folder "
            "and the corpus at the same paths (a shared file system). The agent waits for each "
            "worker group the runner starts (its spec file in runs/EXPERIMENT/), starts this node's "
            "torchrun agent for it (--nnodes N, the experiment's GPUs per node, the c10d "
            "rendezvous), and ends when the run is over: ended, or stopped without finishing (its "
            "runner killed: the session reopened on the runner's node, or its run lock gone). "
            "Start it before or after the run; "
            "this node's ranks never write to the session: the runner's node records every run."
        ),
        epilog="Exit codes: 0 the run ended and this node's torchrun exited 0 in every group, 1 it "
        "did not in one (the runner's record says why) or the run did not finish, 2 bad input, "
        "129/130/143 ended by SIGHUP/Ctrl-C/SIGTERM.",
    )
    p.add_argument("name", metavar="NAME", help="the session (the same folder as on the runner's node)")
    p.add_argument("--experiment", required=True, metavar="ID", help="the experiment, defined with --nodes N")
    p.set_defaults(func=cmd_agent)


def cmd_agent(args: argparse.Namespace) -> int:
    """Join the experiment's groups until its run has ended; see the module doc for exit codes.

    Raises:
        BadInput: no such session or experiment, or an experiment on one node.
    """
    from gpusession.bench.agent import Agent
    from gpusession.commands._common import root_of
    from gpusession.core.folder.experiments import get_experiment
    from gpusession.core.folder.processes import ending_signals, signal_handlers
    from gpusession.core.folder.session import Session

    session = Session.open(root_of(args), args.name, recover=False)
    agent = Agent(session.folder, get_experiment(session, args.experiment))

    def on_signal(signum: int, frame: Any) -> None:
        agent.interrupt(signal.Signals(signum).name)

    with signal_handlers({sig: on_signal for sig in (signal.SIGINT, *ending_signals())}):
        outcome = agent.run()
    if outcome.interrupted is not None:
        return 128 + int(signal.Signals[outcome.interrupted])
    if outcome.run_end != "ended":
        return 1  # its runner stopped mid-run: the run did not finish (said in the agent's last line)
    return 0 if all(code == 0 for _, code in outcome.groups) else 1
